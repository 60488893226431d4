import CryptoExtras
import Foundation
import PushcampAPNsCore
import PushcampFCMCore
import PushcampSimulator
import Testing

/// Service-account key files and the assertion Google exchanges for an access token
/// (`reference/FCM.md`, section 2).
@Suite("Service accounts and the OAuth 2.0 assertion")
struct ServiceAccountTests {
    static let account = try! FCMSimulation.generateAccount(tokenURI: "https://127.0.0.1:8443/token")

    @Test func aKeyFileReadsBackAsTheAccountItWasWrittenFrom() throws {
        let read = try ServiceAccount(json: Array(Self.account.json.utf8))
        #expect(read.projectID == "pushcamp-sim")
        #expect(read.clientEmail == Self.account.clientEmail)
        #expect(read.privateKeyID == Self.account.privateKeyID)
        #expect(read.tokenURI == "https://127.0.0.1:8443/token")
        #expect(read.fingerprint == Self.account.fingerprint)
        #expect(read.privateKeyID.count == 40)
    }

    /// Each problem names the key at fault and never prints a value: a key file holds a private key.
    @Test(arguments: [
        ("private_key", "has no 'private_key'"),
        ("client_email", "has no 'client_email'"),
        ("project_id", "has no 'project_id'"),
        ("private_key_id", "has no 'private_key_id'"),
    ])
    func aMissingFieldIsNamed(field: String, expected: String) throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(Self.account.json.utf8)) as? [String: Any]
        )
        object[field] = nil
        let bytes = Array(try JSONSerialization.data(withJSONObject: object))
        let problem = try #require(throws: ServiceAccount.Problem.self) { try ServiceAccount(json: bytes) }
        #expect(problem.key == field)
        #expect(problem.description.hasPrefix(expected), "\(problem)")
        #expect(!problem.description.contains(Self.account.clientEmail))
    }

    @Test func aKeyThatIsNotRSAOrNotAServiceAccountIsRefusedWithoutEchoingIt() throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(Self.account.json.utf8)) as? [String: Any]
        )
        object["private_key"] = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXZhbHVl\n-----END PRIVATE KEY-----\n"
        var problem = try #require(throws: ServiceAccount.Problem.self) {
            try ServiceAccount(json: Array(try JSONSerialization.data(withJSONObject: object)))
        }
        #expect(problem.description == "'private_key' is not an RSA private key in PEM form")
        object["private_key"] = Self.account.privateKey.pkcs8PEMRepresentation
        object["type"] = "authorized_user"
        problem = try #require(throws: ServiceAccount.Problem.self) {
            try ServiceAccount(json: Array(try JSONSerialization.data(withJSONObject: object)))
        }
        #expect(problem.key == "type")
        problem = try #require(throws: ServiceAccount.Problem.self) {
            try ServiceAccount(json: Array("not json".utf8))
        }
        #expect(problem.key == nil)
    }

    @Test func aKeyFileWithoutTokenURIUsesGoogles() throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(Self.account.json.utf8)) as? [String: Any]
        )
        object["token_uri"] = nil
        let read = try ServiceAccount(json: Array(try JSONSerialization.data(withJSONObject: object)))
        #expect(read.tokenURI == "https://oauth2.googleapis.com/token")
    }

    /// The claims Google lists: iss, scope, aud, iat, exp (an hour at most); RS256 with the key's id.
    @Test func theAssertionCarriesGooglesClaimsAndChecks() throws {
        let assertion = AccessTokenAssertion.make(account: Self.account, issuedAt: 1_800_000_000)
        let headerBytes = try #require(Base64URL.decode(assertion.split(separator: ".")[0]))
        let header = try JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: String]
        #expect(header == ["alg": "RS256", "typ": "JWT", "kid": Self.account.privateKeyID])
        let claims = try AccessTokenAssertion.check(
            assertion,
            publicKey: Self.account.privateKey.publicKey,
            audience: Self.account.tokenURI,
            now: 1_800_000_100
        )
        #expect(claims.issuer == Self.account.clientEmail)
        #expect(claims.scopes == ["https://www.googleapis.com/auth/firebase.messaging"])
        #expect(claims.issuedAt == 1_800_000_000)
        #expect(claims.expires == 1_800_003_600)
        #expect(claims.keyID == Self.account.privateKeyID)
    }

    @Test func anAssertionIsRefusedAsGoogleRefusesIt() throws {
        let assertion = AccessTokenAssertion.make(account: Self.account, issuedAt: 1_800_000_000)
        let other = try FCMSimulation.generateAccount(tokenURI: Self.account.tokenURI)
        func refusal(_ text: String, key: _RSA.Signing.PublicKey, audience: String, now: Int64) -> String? {
            do {
                _ = try AccessTokenAssertion.check(text, publicKey: key, audience: audience, now: now)
                return nil
            } catch {
                return "\(error.error): \(error.description)"
            }
        }
        let key = Self.account.privateKey.publicKey
        #expect(
            refusal(assertion, key: other.privateKey.publicKey, audience: Self.account.tokenURI, now: 1_800_000_000)
                == "invalid_grant: Invalid JWT Signature."
        )
        #expect(
            refusal(assertion, key: key, audience: "https://elsewhere/token", now: 1_800_000_000)?
                .hasPrefix("invalid_grant: Invalid JWT: the audience") == true
        )
        // Expired an hour later; issued more than a minute ahead of the server's clock.
        #expect(
            refusal(assertion, key: key, audience: Self.account.tokenURI, now: 1_800_003_600)?
                .contains("short-lived") == true
        )
        #expect(
            refusal(assertion, key: key, audience: Self.account.tokenURI, now: 1_799_999_900)?
                .contains("short-lived") == true
        )
        #expect(
            refusal("a.b", key: key, audience: Self.account.tokenURI, now: 1_800_000_000)?
                .hasPrefix("invalid_grant") == true
        )
    }

    @Test func theTokenRequestIsAFormWithTheJWTBearerGrant() {
        let body = String(decoding: AccessTokenAssertion.requestBody(assertion: "x.y.z"), as: UTF8.self)
        #expect(body == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=x.y.z")
    }
}
