import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate chain shaped like Apple's (a root, an intermediate with Apple's WWDR extension, a
/// leaf with the App Store receipt-signing extension), made fresh for a test, and a signer of App
/// Store payloads with it. Each way to get it wrong is a parameter.
public struct AppStoreTestChain: Sendable {
    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey

    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]

    /// `leafValid` is when the leaf is valid (the others a year either side of now).
    public init(
        intermediateOID: Bool = true,
        leafOID: Bool = true,
        leafValid: ClosedRange<Date> = Date().addingTimeInterval(
            -86_400 * 30
        )...Date().addingTimeInterval(86_400 * 365),
        now: Date = Date()
    ) throws {
        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("Test Root CA - G3") }
        root = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(rootKey.publicKey),
            notValidBefore: now.addingTimeInterval(-86_400 * 365),
            notValidAfter: now.addingTimeInterval(86_400 * 3650),
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(rootKey)
        )
        let intermediateKey = P256.Signing.PrivateKey()
        let intermediateName = try DistinguishedName { CommonName("Test WWDR") }
        intermediate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(intermediateKey.publicKey),
            notValidBefore: now.addingTimeInterval(-86_400 * 365),
            notValidAfter: now.addingTimeInterval(86_400 * 3650),
            issuer: rootName,
            subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
                if intermediateOID {
                    Certificate.Extension(oid: Self.intermediateOID, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(rootKey)
        )
        leafKey = P256.Signing.PrivateKey()
        leaf = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(leafKey.publicKey),
            notValidBefore: leafValid.lowerBound,
            notValidAfter: leafValid.upperBound,
            issuer: intermediateName,
            subject: try DistinguishedName { CommonName("Test App Store signing") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if leafOID { Certificate.Extension(oid: Self.leafOID, critical: false, value: [0x05, 0x00]) }
            },
            issuerPrivateKey: .init(intermediateKey)
        )
    }

    public var rootPEM: String { (try? root.serializeAsPEM().pemString) ?? "" }

    /// A notification payload for `bundle`, signed at `signedDate`.
    public static func notification(
        uuid: String = UUID().uuidString.lowercased(),
        type: String = "DID_FAIL_TO_RENEW",
        subtype: String? = "GRACE_PERIOD",
        bundle: String = "com.example.shop",
        appAppleID: Int = 1_234_567_890,
        environment: String = "Production",
        signedDate: Date = Date()
    ) -> [String: Any] {
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0",
            "signedDate": Int64(signedDate.timeIntervalSince1970 * 1000),
            "data": ["bundleId": bundle, "appAppleId": appAppleID, "environment": environment, "status": 4],
        ]
        if let subtype { payload["subtype"] = subtype }
        return payload
    }

    /// A notification about subscription `original` whose `data` carries a signed transaction
    /// (product, expiry, app account token) and renewal info (auto-renew), signed with this chain.
    public func subscriptionNotification(
        type: String,
        subtype: String? = nil,
        original: String,
        product: String = "com.example.shop.premium",
        appAccountToken: String? = nil,
        signedDate: Date,
        status: Int? = nil
    ) throws -> [String: Any] {
        var payload = Self.notification(type: type, subtype: subtype, signedDate: signedDate)
        var data = payload["data"] as? [String: Any] ?? [:]
        data["status"] = status
        var transaction: [String: Any] = [
            "originalTransactionId": original, "transactionId": original + "-1", "productId": product,
            "expiresDate": Int64((signedDate.timeIntervalSince1970 + 30 * 86_400) * 1000),
            "signedDate": Int64(signedDate.timeIntervalSince1970 * 1000), "environment": "Production",
        ]
        transaction["appAccountToken"] = appAccountToken
        data["signedTransactionInfo"] = try sign(transaction)
        data["signedRenewalInfo"] = try sign([
            "originalTransactionId": original, "autoRenewStatus": type == "EXPIRED" ? 0 : 1,
            "signedDate": Int64(signedDate.timeIntervalSince1970 * 1000),
        ])
        payload["data"] = data
        return payload
    }

    /// `payload` as a compact JWS: ES256 with the leaf's key and `x5c` of leaf, intermediate, root
    /// (or `chain`), or with another `alg` in the header (signed the same way).
    public func sign(_ payload: [String: Any], alg: String = "ES256", chain: [Certificate]? = nil) throws -> String {
        let certificates = try (chain ?? [leaf, intermediate, root]).map { certificate in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": certificates])
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let input = Self.base64URL(header) + "." + Self.base64URL(body)
        let signature = try leafKey.signature(for: Data(input.utf8))
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// `{"signedPayload": jws}`, as Apple POSTs it.
    public static func body(_ jws: String) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: ["signedPayload": jws])) ?? Data())
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
