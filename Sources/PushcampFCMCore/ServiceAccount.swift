import Crypto
import CryptoExtras
import Foundation

/// A Google service account's JSON key file, as Firebase's console downloads it: what Pushcamp needs to
/// mint OAuth 2.0 access tokens for FCM HTTP v1 (`reference/FCM.md`, section 2).
///
/// Parsing never echoes a value: a problem names the key (`private_key`) and what is wrong with it.
public struct ServiceAccount: Sendable {
    /// `project_id`: the Firebase project messages are sent in, unless the app names another.
    public var projectID: String
    /// `client_email`: the assertion's issuer.
    public var clientEmail: String
    /// `private_key_id`: the assertion's `kid`.
    public var privateKeyID: String
    /// `token_uri`: where the assertion is exchanged for an access token.
    public var tokenURI: String
    public var privateKey: _RSA.Signing.PrivateKey

    public init(
        projectID: String,
        clientEmail: String,
        privateKeyID: String,
        tokenURI: String,
        privateKey: _RSA.Signing.PrivateKey
    ) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }

    public struct Problem: Error, Sendable, CustomStringConvertible, Equatable {
        /// The key at fault, when one is.
        public var key: String?
        public var description: String

        public init(key: String?, _ description: String) {
            self.key = key
            self.description = description
        }
    }

    /// Google's token endpoint, the `token_uri` of every key file Google issues.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// Reads a key file's bytes.
    public init(json bytes: [UInt8]) throws(Problem) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw Problem(key: nil, "is not a JSON object: a service-account key file is one JSON object")
        }
        func string(_ key: String) throws(Problem) -> String {
            guard let value = object[key] else {
                throw Problem(key: key, "has no '\(key)': download the key again from the Firebase console")
            }
            guard let text = value as? String, !text.isEmpty else {
                throw Problem(key: key, "'\(key)' must be a non-empty string")
            }
            return text
        }
        if let type = object["type"] {
            guard type as? String == "service_account" else {
                throw Problem(
                    key: "type",
                    "'type' is not 'service_account': this is another kind of Google credential (a user's or an "
                        + "external account's); FCM needs a service account's key"
                )
            }
        }
        let pem = try string("private_key")
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw Problem(key: "private_key", "'private_key' is not an RSA private key in PEM form")
        }
        guard key.keySizeInBits >= 2048 else {
            throw Problem(key: "private_key", "'private_key' is shorter than 2048 bits: Google issues 2048-bit keys")
        }
        let tokenURI = object["token_uri"] == nil ? Self.googleTokenURI : try string("token_uri")
        guard tokenURI.hasPrefix("https://") else {
            throw Problem(key: "token_uri", "'token_uri' must be an https:// address")
        }
        self.init(
            projectID: try string("project_id"),
            clientEmail: try string("client_email"),
            privateKeyID: try string("private_key_id"),
            tokenURI: tokenURI,
            privateKey: key
        )
    }

    /// The key file's JSON, as Google lays it out (the fields Pushcamp reads; the simulator writes one
    /// pointing at itself).
    public var json: String {
        let fields: [(String, String)] = [
            ("type", "service_account"), ("project_id", projectID), ("private_key_id", privateKeyID),
            ("private_key", privateKey.pkcs8PEMRepresentation), ("client_email", clientEmail),
            ("token_uri", tokenURI),
        ]
        return "{\n"
            + fields.map { "  \(AccessTokenAssertion.json($0.0)): \(AccessTokenAssertion.json($0.1))" }.joined(
                separator: ",\n"
            ) + "\n}\n"
    }

    /// A short, stable name for the key: the first 8 bytes of the SHA-256 of its public key, in hex. Names
    /// the access tokens minted with it, so another key (a rotated one) never reuses them.
    public var fingerprint: String {
        SHA256.hash(data: privateKey.publicKey.derRepresentation).prefix(8).map { String(format: "%02x", $0) }
            .joined()
    }
}
