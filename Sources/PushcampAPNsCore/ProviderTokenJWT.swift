import Crypto
import Foundation

/// APNs provider tokens as JSON Web Tokens: `{"alg":"ES256","kid":…}.{"iss":…,"iat":…}` signed with
/// ECDSA P-256 / SHA-256. The client mints them, the simulator checks them the way APNs does.
public enum ProviderTokenJWT {
    /// A token for `teamID` and `keyID`, issued at `issuedAt` (seconds since 1970).
    public static func make(teamID: String, keyID: String, issuedAt: Int64, key: P256.Signing.PrivateKey) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
        let input = header + "." + claims
        // Signing a digest with a fresh nonce cannot fail for a valid key.
        let signature = try! key.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// The `iat` of `token` when it is an ES256 token signed by `publicKey`'s private half, for
    /// `teamID` and `keyID` (any, when nil): what APNs checks, and what a cached token must pass.
    public static func issuedAt(
        _ token: String,
        publicKey: P256.Signing.PublicKey,
        teamID: String?,
        keyID: String?
    ) -> Int64? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]),
            let claimsBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: Data(claimsBytes)) as? [String: Any],
            header["alg"] as? String == "ES256",
            let kid = header["kid"] as? String, keyID == nil || kid == keyID,
            let iss = claims["iss"] as? String, teamID == nil || iss == teamID,
            let number = claims["iat"] as? NSNumber,
            // A number too large for seconds since 1970 is no token of ours.
            let iat = Int64(exactly: number.doubleValue.rounded(.towardZero)), abs(iat) < 1 << 40,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8))
        else { return nil }
        return iat
    }

    /// A short, stable name for a key: the first 8 bytes of the SHA-256 of its public key, in hex.
    /// Names the cached token of one key so that another key (a wrong one) never touches it.
    public static func fingerprint(of key: P256.Signing.PublicKey) -> String {
        SHA256.hash(data: key.x963Representation).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}

/// Base64 with the URL alphabet and no padding, as JWTs use.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { Array($0) }
    }
}

/// An Apple `.p8` signing key (PKCS#8 PEM, P-256): APNs keys and App Store Connect (In-App
/// Purchase) keys alike.
public enum SigningKeyFile {
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public static func read(_ path: String) throws(Problem) -> P256.Signing.PrivateKey {
        let pem: String
        do {
            // A .p8 key is a few hundred bytes.
            pem = String(decoding: try InputFile.read(path, limit: 64 << 10), as: UTF8.self)
        } catch {
            throw Problem(description: "key file \(path) \(error.description)")
        }
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw Problem(
                description: "\(path) is not an ES256 (P-256) private key in PEM form, as Apple's .p8 files are"
            )
        }
    }
}
