import Crypto
import CryptoExtras
import Foundation
import PushcampAPNsCore
import PushcampFCMCore
import PushcampModel

/// Google's side of FCM HTTP v1, as rules over state and without sockets: the OAuth 2.0 token endpoint
/// and `messages:send`, answered as `reference/FCM.md` says Google answers, error bodies included.
///
/// State: the access tokens issued (each with its expiry), the project's one-minute quota bucket, and
/// how often each device token was tried (for the `flaky` and `throttled` behaviours).
public struct FCMBackend: Sendable {
    public var settings: FCMSimulation
    /// Access token → when it expires (seconds since 1970).
    private var issued: [String: Double] = [:]
    /// The quota's minute: when it started and how many messages it has counted. The minute is not
    /// aligned to the clock: it starts with the first message after the previous one ended.
    private var quotaWindow: (start: Double, count: Int)?
    private var attempts: [String: Int] = [:]
    /// Access tokens issued so far.
    public private(set) var accessTokensIssued = 0
    /// Messages delivered so far (dry runs aside).
    private var delivered = 0

    public init(settings: FCMSimulation) {
        self.settings = settings
    }

    /// The service account's key was deleted (`deleteKeyAfter`): no assertion of it buys a token.
    public private(set) var keyDeleted = false

    /// Forgets every access token issued, as Google does when a key is deleted or a token revoked:
    /// sends with them get 401 until a new one is fetched.
    public mutating func revokeAccessTokens() {
        issued.removeAll()
    }

    /// The path of the token endpoint.
    public static let tokenPath = "/token"

    /// The answer to `POST /token` with a form body: an access token for a valid assertion.
    public mutating func token(
        method: String,
        body: [UInt8],
        now: Double,
        newToken: () -> String
    )
        -> BroadcastRules
        .Answer
    {
        guard method == "POST" else {
            return oauthError(405, "invalid_request", "The token endpoint takes POST.")
        }
        let form = Self.form(body)
        guard form["grant_type"] == AccessTokenAssertion.grantType else {
            return oauthError(400, "unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"] else {
            return oauthError(400, "invalid_request", "Missing required parameter: assertion")
        }
        let claims: AccessTokenAssertion.Claims
        do {
            claims = try AccessTokenAssertion.check(
                assertion,
                publicKey: settings.account.privateKey.publicKey,
                audience: settings.account.tokenURI,
                now: Int64(now)
            )
        } catch {
            return oauthError(400, error.error, error.description)
        }
        guard claims.issuer == settings.account.clientEmail, !keyDeleted else {
            return oauthError(400, "invalid_grant", "Invalid JWT Signature.")
        }
        guard
            claims.scopes.contains(AccessTokenAssertion.messagingScope)
                || claims.scopes.contains(AccessTokenAssertion.cloudPlatformScope)
        else {
            return oauthError(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        let token = newToken()
        issued[token] = now + Double(settings.accessTokenLifetime)
        accessTokensIssued += 1
        issued = issued.filter { $0.value > now }
        return json(
            200,
            #"{"access_token":"\#(token)","expires_in":\#(settings.accessTokenLifetime),"token_type":"Bearer"}"#
        )
    }

    /// The project a `/v1/projects/{project}/messages:send` path names; nil for any other path.
    public static func sendProject(path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "v1", parts[2] == "projects", !parts[3].isEmpty,
            parts[4] == "messages:send"
        else { return nil }
        return String(parts[3])
    }

    /// What a send request was, for the record.
    public struct Sent: Sendable, Equatable {
        public var token: String?
        public var validateOnly: Bool
        public var reason: FCMReason?
    }

    /// The answer to a `messages:send` request, and what it was.
    public mutating func send(
        _ request: RequestRules.Request,
        project: String,
        tokens: [String: TokenBehaviour],
        now: Double,
        random: Double
    ) -> (BroadcastRules.Answer, Sent) {
        var sent = Sent(token: nil, validateOnly: false, reason: nil)
        func refuse(_ error: FCMError, retryAfter: Int? = nil) -> (BroadcastRules.Answer, Sent) {
            sent.reason = error.reason
            var answer = BroadcastRules.Answer(
                status: error.code,
                headers: ["content-type": "application/json; charset=UTF-8"],
                body: String(decoding: error.json, as: UTF8.self)
            )
            if let retryAfter { answer.headers["retry-after"] = String(retryAfter) }
            return (answer, sent)
        }
        guard request.value(":method") == "POST" else {
            return refuse(FCMError(.notFound, message: "Method not found."))
        }
        switch authenticate(request.value("authorization"), now: now) {
        case .missing:
            return refuse(FCMError(.unauthenticated, message: Self.missingCredentials))
        case .invalid:
            return refuse(FCMError(.unauthenticated, message: Self.invalidCredentials))
        case .valid:
            break
        }
        guard project == settings.account.projectID else {
            return refuse(
                FCMError(
                    .permissionDenied,
                    message: "Permission 'cloudmessaging.messages.create' denied on resource "
                        + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist)."
                )
            )
        }
        if let error = FCMMessageRules.check(request.body) { return refuse(error) }
        let object = (try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]) ?? [:]
        let message = object["message"] as? [String: Any] ?? [:]
        sent.validateOnly = (object["validate_only"] ?? object["validateOnly"]) as? Bool ?? false
        let token = message["token"] as? String
        sent.token = token
        let behaviour = token.flatMap { tokens[$0.lowercased()] } ?? .ok
        // What a token is, a dry run reports too (Google's Admin SDKs: a dry run tells whether a
        // registration was deleted); what happens to a send now (quota, an outage) it does not.
        switch behaviour {
        case .unregistered: return refuse(FCMError(.unregistered, message: "Requested entity was not found."))
        case .bad: return refuse(FCMError.invalidToken)
        case .wrongTopic: return refuse(FCMError(.senderIDMismatch, message: "SenderId mismatch"))
        case .fcm(let reason)
        where reason == .thirdPartyAuthError || reason == .senderIDMismatch
            || reason == .unregistered || reason == .invalidArgument || reason == .unspecifiedError:
            return refuse(Self.error(reason))
        default: break
        }
        if sent.validateOnly {
            return (json(200, #"{"name":"projects/\#(project)/messages/fake_message_id"}"#), sent)
        }
        if let limit = settings.quotaPerMinute {
            var window: (start: Double, count: Int) = quotaWindow.flatMap { now - $0.start < 60 ? $0 : nil } ?? (now, 0)
            if window.count >= limit {
                quotaWindow = window
                return refuse(
                    Self.error(.quotaExceeded),
                    retryAfter: max(1, Int((window.start + 60 - now).rounded(.up)))
                )
            }
            window.count += 1
            quotaWindow = window
        }
        if let token {
            let previous = attempts[token, default: 0]
            attempts[token] = previous + 1
            switch behaviour {
            case .flaky(let failures) where previous < failures:
                return refuse(Self.error(.unavailable), retryAfter: settings.retryAfter)
            case .throttled(let times) where previous < times:
                return refuse(Self.error(.quotaExceeded), retryAfter: settings.retryAfter)
            case .fcm(let reason):
                return refuse(
                    Self.error(reason),
                    retryAfter: reason.reaction == .serverError ? settings.retryAfter : nil
                )
            default: break
            }
        }
        if settings.errorRate > 0, random < settings.errorRate {
            return refuse(Self.error(.internalError), retryAfter: settings.retryAfter)
        }
        delivered += 1
        if delivered == settings.revokeAfter { revokeAccessTokens() }
        if delivered == settings.deleteKeyAfter {
            keyDeleted = true
            revokeAccessTokens()
        }
        let id = String(UInt64(now * 1000) &* 2_654_435_761 &+ UInt64(accessTokensIssued), radix: 10)
        return (json(200, #"{"name":"projects/\#(project)/messages/0:\#(id)"}"#), sent)
    }

    enum Authentication { case missing, invalid, valid }

    private func authenticate(_ header: String?, now: Double) -> Authentication {
        guard let header else { return .missing }
        guard header.hasPrefix("Bearer "), let expires = issued[String(header.dropFirst("Bearer ".count))],
            expires > now
        else { return .invalid }
        return .valid
    }

    static let missingCredentials =
        "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or "
        + "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
    static let invalidCredentials =
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
        + "valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."

    /// The error FCM answers `reason` with, with Google's wording where it is known.
    public static func error(_ reason: FCMReason) -> FCMError {
        switch reason {
        case .unregistered: return FCMError(reason, message: "Requested entity was not found.")
        case .quotaExceeded:
            return FCMError(
                reason,
                message: "Quota exceeded for quota metric 'Send requests' of service fcm.googleapis.com."
            )
        case .unavailable: return FCMError(reason, message: "The service is currently unavailable.")
        case .internalError: return FCMError(reason, message: "Internal error encountered.")
        case .senderIDMismatch: return FCMError(reason, message: "SenderId mismatch")
        case .thirdPartyAuthError: return FCMError(reason, message: "Auth error from APNS or Web Push Service")
        case .invalidArgument: return FCMError(reason, message: "Request contains an invalid argument.")
        default: return FCMError(reason, message: "\(reason)")
        }
    }

    private func json(_ status: Int, _ text: String) -> BroadcastRules.Answer {
        BroadcastRules.Answer(status: status, headers: ["content-type": "application/json; charset=UTF-8"], body: text)
    }

    private func oauthError(_ status: Int, _ error: String, _ description: String) -> BroadcastRules.Answer {
        json(status, #"{"error":\#(Self.quoted(error)),"error_description":\#(Self.quoted(description))}"#)
    }

    static func quoted(_ text: String) -> String { JSONValue.string(text).text }

    /// An `application/x-www-form-urlencoded` body's fields (`+` is a space, `%XX` a byte).
    static func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}

/// How the simulator plays FCM: its project and service account, and what it does wrong on purpose.
public struct FCMSimulation: Sendable {
    /// The service account whose assertions the token endpoint accepts; its `token_uri` is the simulator's
    /// own, and its project the one `messages:send` accepts.
    public var account: ServiceAccount
    /// How long an access token lives, in seconds (Google's: an hour).
    public var accessTokenLifetime = 3600
    /// The project's quota in messages per minute; nil: unlimited (Google's default is 600,000).
    public var quotaPerMinute: Int?
    /// Share of well-formed sends answered 500 INTERNAL.
    public var errorRate: Double = 0
    /// `retry-after` (seconds) on 503, 500 and a device's 429; nil sends none.
    public var retryAfter: Int?
    /// After this many messages delivered, every access token issued so far is revoked (as when a key
    /// is deleted): later sends with them get 401.
    public var revokeAfter: Int?
    /// After this many messages delivered, the service account's key is deleted: every access token
    /// is revoked and the token endpoint refuses the key's assertions (`invalid_grant`).
    public var deleteKeyAfter: Int?

    public init(account: ServiceAccount) {
        self.account = account
    }

    /// The project id the simulator uses unless told otherwise.
    public static let defaultProjectID = "pushcamp-sim"

    /// A new service account for the simulator at `tokenURI`, with a fresh 2048-bit key.
    public static func generateAccount(projectID: String = defaultProjectID, tokenURI: String) throws -> ServiceAccount
    {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        return ServiceAccount(
            projectID: projectID,
            clientEmail: "pushcamp-sim@\(projectID).iam.gserviceaccount.com",
            privateKeyID: String(ServiceAccountKeyID.make(key)),
            tokenURI: tokenURI,
            privateKey: key
        )
    }
}

/// A key id for a generated key: 40 hex digits, as Google's are, derived from the public key.
enum ServiceAccountKeyID {
    static func make(_ key: _RSA.Signing.PrivateKey) -> String {
        SHA256.hash(data: key.publicKey.derRepresentation).prefix(20).map { String(format: "%02x", $0) }.joined()
    }
}
