import Crypto
import CryptoExtras
import Foundation
import PushcampAPNsCore

/// The JWT a service account signs to ask for an OAuth 2.0 access token (`reference/FCM.md`, section 2):
/// `{"alg":"RS256","typ":"JWT","kid":…}.{"iss":…,"scope":…,"aud":…,"iat":…,"exp":…}`, signed with RSA
/// PKCS #1 v1.5 and SHA-256. The client mints it; the simulator's token endpoint checks it as Google does.
public enum AccessTokenAssertion {
    /// The scope FCM HTTP v1 needs.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The broader scope Google also accepts for sending.
    public static let cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
    /// Google refuses an assertion that lives longer than an hour.
    public static let maximumLifetime: Int64 = 3600

    /// The `grant_type` of the token request.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// An assertion for `account`, issued at `issuedAt` (seconds since 1970), valid for the maximum hour.
    public static func make(account: ServiceAccount, scope: String = messagingScope, issuedAt: Int64) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"RS256","typ":"JWT","kid":\#(json(account.privateKeyID))}"#.utf8))
        let claims = Base64URL.encode(
            Array(
                (#"{"iss":\#(json(account.clientEmail)),"scope":\#(json(scope)),"aud":\#(json(account.tokenURI)),"#
                    + #""iat":\#(issuedAt),"exp":\#(issuedAt + maximumLifetime)}"#).utf8
            )
        )
        let input = header + "." + claims
        // PKCS #1 v1.5 is what RS256 means; signing with a valid key cannot fail.
        let signature = try! account.privateKey.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// The form body of the token request.
    public static func requestBody(assertion: String) -> [UInt8] {
        Array("grant_type=\(grantType.formEncoded)&assertion=\(assertion)".utf8)
    }

    /// What a checked assertion claims.
    public struct Claims: Sendable, Equatable {
        public var issuer: String
        public var keyID: String?
        public var scopes: [String]
        public var audience: String
        public var issuedAt: Int64
        public var expires: Int64
    }

    /// Why Google's token endpoint refuses an assertion: the OAuth 2.0 `error` and its description.
    public struct Refusal: Error, Sendable, Equatable {
        public var error: String
        public var description: String

        public init(_ error: String, _ description: String) {
            self.error = error
            self.description = description
        }
    }

    /// Checks `assertion` as the token endpoint at `audience` does: RS256, signed by `publicKey`, for that
    /// audience, issued no later than a minute ahead of `now`, not expired, living at most an hour.
    public static func check(
        _ assertion: String,
        publicKey: _RSA.Signing.PublicKey,
        audience: String,
        now: Int64
    ) throws(Refusal) -> Claims {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]),
            let claimsBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: Data(claimsBytes)) as? [String: Any]
        else { throw Refusal("invalid_grant", "Invalid JWT: the assertion is not a signed JWT.") }
        guard header["alg"] as? String == "RS256" else {
            throw Refusal("invalid_grant", "Invalid JWT: the signing algorithm must be RS256.")
        }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signatureBytes)
        guard
            publicKey.isValidSignature(
                signature,
                for: Array((parts[0] + "." + parts[1]).utf8),
                padding: .insecurePKCS1v1_5
            )
        else { throw Refusal("invalid_grant", "Invalid JWT Signature.") }
        guard let issuer = claims["iss"] as? String, !issuer.isEmpty else {
            throw Refusal("invalid_grant", "Invalid JWT: no issuer ('iss').")
        }
        guard claims["aud"] as? String == audience else {
            throw Refusal("invalid_grant", "Invalid JWT: the audience ('aud') is not this token endpoint.")
        }
        guard let iat = seconds(claims["iat"]), let exp = seconds(claims["exp"]) else {
            throw Refusal("invalid_grant", "Invalid JWT: 'iat' and 'exp' must be numbers of seconds.")
        }
        guard iat <= now + 60, exp > now else {
            throw Refusal(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                    + "Check your iat and exp values in the JWT claim."
            )
        }
        guard exp > iat, exp - iat <= maximumLifetime else {
            throw Refusal(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
            )
        }
        let scopes = (claims["scope"] as? String)?.split(separator: " ").map(String.init) ?? []
        guard !scopes.isEmpty else {
            throw Refusal("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        return Claims(
            issuer: issuer,
            keyID: header["kid"] as? String,
            scopes: scopes,
            audience: audience,
            issuedAt: iat,
            expires: exp
        )
    }

    private static func seconds(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber, number.doubleValue.isFinite, abs(number.doubleValue) < 1e12 else {
            return nil
        }
        return Int64(number.doubleValue.rounded(.towardZero))
    }

    /// `text` as a JSON string literal.
    static func json(_ text: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}

extension String {
    /// `application/x-www-form-urlencoded`: letters, digits and `-._~` as they are, the rest %-escaped.
    var formEncoded: String {
        var result = ""
        for byte in utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E:
                result.unicodeScalars.append(UnicodeScalar(byte))
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }
}
