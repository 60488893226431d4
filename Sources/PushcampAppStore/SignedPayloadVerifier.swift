import Crypto
import Foundation
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Verifies Apple's signed App Store payloads as strictly as Apple's libraries, and more:
///
/// - `alg` must be ES256, and `x5c` exactly three certificates;
/// - the chain (leaf, then the header's intermediate) must lead to one of `roots` — Apple Root CA
///   - G3 in production, compiled in — never to the root the header carries; RFC 5280 path
///   validation runs at the payload's `signedDate`; the intermediate must carry Apple's WWDR
///   extension (1.2.840.113635.100.6.2.1) and the leaf the App Store receipt-signing one
///   (1.2.840.113635.100.6.11.1);
/// - the signature is checked with the leaf's P-256 key;
/// - `signedDate` is neither in the future (beyond `skew`) nor older than `maxAge` (Apple retries
///   for about 157 hours, so 7 days by default).
///
/// Nothing in the payload (its `environment` included) can turn a check off. Chains that passed
/// are cached by their bytes with the window in which they are valid, so a typical notification
/// costs one signature check.
public final class SignedPayloadVerifier: Sendable {
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]

    let roots: [Certificate]
    public let maxAge: TimeInterval
    public let skew: TimeInterval
    private struct Verified {
        var key: P256.Signing.PublicKey
        var root: Certificate
        var validFrom: Date
        var validUntil: Date
    }
    private let cache = Mutex<[[UInt8]: Verified]>([:])

    public init(roots: [Certificate], maxAge: TimeInterval = 7 * 86_400, skew: TimeInterval = 300) {
        self.roots = roots
        self.maxAge = maxAge
        self.skew = skew
    }

    /// The payload's JSON object, its `signedDate` and the root of `roots` its chain led to, once
    /// every check passed. `checkAge` false for the transaction and renewal inside a notification:
    /// they keep the date they were signed, which may be older than the notification.
    public func verify(
        _ jws: String,
        now: Date,
        checkAge: Bool = true
    ) async throws(AppStoreRefusal) -> (object: [String: Any], signedDate: Date?, root: Certificate) {
        let signed = try SignedPayload(jws)
        guard signed.algorithm == "ES256" else {
            throw AppStoreRefusal(.algorithm, "alg is \(signed.algorithm.prefix(20)); Apple signs with ES256 only")
        }
        guard signed.certificates.count == 3 else {
            throw AppStoreRefusal(.chain, "x5c holds \(signed.certificates.count) certificates; Apple sends exactly 3")
        }
        guard let object = try? JSONSerialization.jsonObject(with: signed.payload) as? [String: Any] else {
            throw AppStoreRefusal(.malformed, "the JWS payload is not a JSON object")
        }
        // Without a signedDate (Apple always sends one) the chain is checked now, and the
        // notification can only be quarantined (NotificationIntake), never accepted.
        var signedDate: Date?
        if let value = object["signedDate"] {
            guard let milliseconds = (value as? NSNumber)?.doubleValue, milliseconds.isFinite,
                abs(milliseconds) < 1e15
            else { throw AppStoreRefusal(.signedDate, "signedDate is not a time in milliseconds") }
            let date = Date(timeIntervalSince1970: milliseconds / 1000)
            if date.timeIntervalSince(now) > skew {
                throw AppStoreRefusal(.signedDate, "signedDate \(date) is in the future")
            }
            if checkAge, now.timeIntervalSince(date) > maxAge {
                throw AppStoreRefusal(
                    .signedDate,
                    "signedDate \(date) is more than \(Int(maxAge / 3600)) hours old; recover older ones with the App Store Server API's notification history"
                )
            }
            signedDate = date
        }
        let (key, root) = try await key(for: signed.certificates, at: signedDate ?? now)
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signed.signature),
            key.isValidSignature(signature, for: signed.signingInput)
        else { throw AppStoreRefusal(.signature, "the signature does not match the leaf certificate's key") }
        return (object, signedDate, root)
    }

    /// The leaf's key and the trusted root, once its chain is valid at `time` (from the cache when
    /// it was before).
    private func key(
        for chain: [[UInt8]],
        at time: Date
    ) async throws(AppStoreRefusal) -> (key: P256.Signing.PublicKey, root: Certificate) {
        let cacheKey = chain[0] + chain[1]
        if let hit = cache.withLock({ $0[cacheKey] }), time >= hit.validFrom, time <= hit.validUntil {
            return (hit.key, hit.root)
        }
        let leaf: Certificate
        let intermediate: Certificate
        do {
            leaf = try Certificate(derEncoded: chain[0])
            intermediate = try Certificate(derEncoded: chain[1])
        } catch {
            throw AppStoreRefusal(.chain, "an x5c certificate cannot be read: \(error)")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            AppleChainPolicy()
        }
        var failure = ""
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate])) {
            diagnostic in
            if failure.count < 300 { failure += " \(diagnostic)".prefix(300) }
        }
        guard case .validCertificate(let validated) = result, let root = validated.last else {
            throw AppStoreRefusal(
                .chain,
                "the certificate chain does not lead to a trusted Apple root with Apple's extensions at signedDate"
            )
        }
        guard let key = P256.Signing.PublicKey(leaf.publicKey) else {
            throw AppStoreRefusal(.chain, "the leaf certificate's key is not P-256")
        }
        let verified = Verified(
            key: key,
            root: root,
            validFrom: validated.map(\.notValidBefore).max() ?? time,
            validUntil: validated.map(\.notValidAfter).min() ?? time
        )
        cache.withLock { cache in
            if cache.count > 1000 { cache.removeAll() }
            cache[cacheKey] = verified
        }
        return (key, root)
    }
}

/// Apple's extensions: the WWDR intermediate's and the App Store receipt-signing leaf's.
struct AppleChainPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        SignedPayloadVerifier.intermediateOID, SignedPayloadVerifier.leafOID,
    ]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "the chain has \(chain.count) certificates; Apple's has 3")
        }
        guard chain[0].extensions[oid: SignedPayloadVerifier.leafOID] != nil else {
            return .failsToMeetPolicy(reason: "the leaf lacks Apple's App Store receipt-signing extension")
        }
        guard chain[1].extensions[oid: SignedPayloadVerifier.intermediateOID] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks Apple's WWDR extension")
        }
        return .meetsPolicy
    }
}
