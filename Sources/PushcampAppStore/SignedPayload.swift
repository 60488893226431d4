import Foundation

/// A compact JWS as Apple signs App Store payloads: `header.payload.signature`, base64url, with
/// `alg` and `x5c` (leaf, intermediate, root, base64 DER) in the header. Parsed, not trusted:
/// `SignedPayloadVerifier` decides whether to believe it.
struct SignedPayload {
    var algorithm: String
    var certificates: [[UInt8]]
    /// The payload's JSON bytes.
    var payload: Data
    /// `header.payload`, what the signature covers.
    var signingInput: Data
    var signature: Data

    init(_ text: String) throws(AppStoreRefusal) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw AppStoreRefusal(.malformed, "the signed payload is not a compact JWS (three dot-separated parts)")
        }
        guard let headerBytes = Self.base64URL(parts[0]), let payload = Self.base64URL(parts[1]),
            let signature = Self.base64URL(parts[2])
        else { throw AppStoreRefusal(.malformed, "the signed payload is not base64url") }
        guard let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any] else {
            throw AppStoreRefusal(.malformed, "the JWS header is not a JSON object")
        }
        guard let algorithm = header["alg"] as? String else {
            throw AppStoreRefusal(.algorithm, "the JWS header has no alg")
        }
        let chain = (header["x5c"] as? [Any]) ?? []
        var certificates: [[UInt8]] = []
        for entry in chain {
            guard let text = entry as? String, let der = Data(base64Encoded: text) else {
                throw AppStoreRefusal(.chain, "an x5c entry is not base64 DER")
            }
            certificates.append(Array(der))
        }
        self.algorithm = algorithm
        self.certificates = certificates
        self.payload = payload
        self.signingInput = Data((parts[0] + "." + parts[1]).utf8)
        self.signature = signature
    }

    static func base64URL(_ text: Substring) -> Data? {
        guard
            text.utf8.allSatisfy({ byte in
                (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                    || byte == 0x2D || byte == 0x5F
            })
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// Why a notification is not believed (answered 400, counted by `code`), or cannot be stored.
public struct AppStoreRefusal: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable, CaseIterable {
        case tooLarge = "too-large"
        case malformed
        case algorithm
        case chain
        case signature
        case signedDate = "signed-date"
        case missingField = "missing-field"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
