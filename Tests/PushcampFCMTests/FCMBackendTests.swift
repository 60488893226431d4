import Foundation
import PushcampFCMCore
import PushcampSimulator
import Testing

/// The simulator's FCM side against the digest (`reference/FCM.md`), without sockets: the token
/// endpoint, authentication, every error reason with its body, the quota's minute, the dry run.
@Suite("The simulator's FCM rules")
struct FCMBackendTests {
    static let account = ServiceAccountTests.account
    static let token = FCMMessageRulesTests.token
    static let now = 1_800_000_000.0

    /// A backend with one access token issued at `now`.
    static func backend(_ change: (inout FCMSimulation) -> Void = { _ in }) -> (FCMBackend, String) {
        var settings = FCMSimulation(account: account)
        change(&settings)
        var backend = FCMBackend(settings: settings)
        let assertion = AccessTokenAssertion.make(account: account, issuedAt: Int64(now))
        let answer = backend.token(
            method: "POST",
            body: AccessTokenAssertion.requestBody(assertion: assertion),
            now: now
        ) {
            "ya29.test"
        }
        #expect(answer.status == 200)
        return (backend, "ya29.test")
    }

    static func request(
        _ message: String = #""notification":{"title":"Hi"}"#,
        token: String = token,
        authorization: String? = "Bearer ya29.test",
        validateOnly: Bool = false
    ) -> RequestRules.Request {
        var headers: [(name: String, value: String)] = [
            (":method", "POST"), (":path", "/v1/projects/pushcamp-sim/messages:send"),
        ]
        if let authorization { headers.append(("authorization", authorization)) }
        return RequestRules.Request(
            headers: headers,
            body: Array(#"{"validate_only":\#(validateOnly),"message":{"token":"\#(token)",\#(message)}}"#.utf8)
        )
    }

    static func send(
        _ backend: inout FCMBackend,
        _ request: RequestRules.Request = request(),
        tokens: [String: TokenBehaviour] = [:],
        at time: Double = now,
        random: Double = 0.99
    ) -> (status: Int, error: FCMError?, body: String, retryAfter: String?, sent: FCMBackend.Sent) {
        let (answer, sent) = backend.send(request, project: "pushcamp-sim", tokens: tokens, now: time, random: random)
        let body = answer.body ?? ""
        return (answer.status, FCMError.parse(Array(body.utf8)), body, answer.headers["retry-after"], sent)
    }

    @Test func theTokenEndpointIssuesAnHourLongBearerToken() throws {
        var backend = FCMBackend(settings: FCMSimulation(account: Self.account))
        let assertion = AccessTokenAssertion.make(account: Self.account, issuedAt: Int64(Self.now))
        let answer = backend.token(
            method: "POST",
            body: AccessTokenAssertion.requestBody(assertion: assertion),
            now: Self.now
        ) {
            "ya29.one"
        }
        #expect(answer.status == 200)
        #expect(answer.body == #"{"access_token":"ya29.one","expires_in":3600,"token_type":"Bearer"}"#)
        #expect(backend.accessTokensIssued == 1)
    }

    @Test func theTokenEndpointRefusesAsGoogleDoes() throws {
        var backend = FCMBackend(settings: FCMSimulation(account: Self.account))
        func answer(_ body: String) -> String {
            backend.token(method: "POST", body: Array(body.utf8), now: Self.now) { "x" }.body ?? ""
        }
        #expect(
            answer("grant_type=password")
                == #"{"error":"unsupported_grant_type","error_description":"Invalid grant_type: password"}"#
        )
        #expect(
            answer("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer").contains(
                "Missing required parameter: assertion"
            )
        )
        let other = try FCMSimulation.generateAccount(tokenURI: Self.account.tokenURI)
        let foreign = AccessTokenAssertion.make(account: other, issuedAt: Int64(Self.now))
        #expect(String(decoding: AccessTokenAssertion.requestBody(assertion: foreign), as: UTF8.self).isEmpty == false)
        #expect(
            answer(String(decoding: AccessTokenAssertion.requestBody(assertion: foreign), as: UTF8.self))
                == #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#
        )
        let narrow = AccessTokenAssertion.make(
            account: Self.account,
            scope: "https://www.googleapis.com/auth/userinfo.email",
            issuedAt: Int64(Self.now)
        )
        #expect(
            answer(String(decoding: AccessTokenAssertion.requestBody(assertion: narrow), as: UTF8.self)).contains(
                "invalid_scope"
            )
        )
        #expect(backend.accessTokensIssued == 0)
    }

    /// No token, an unknown one and an expired one: 401 UNAUTHENTICATED without an FcmError detail.
    @Test func aSendWithoutAValidAccessTokenIs401() throws {
        var (backend, _) = Self.backend { $0.accessTokenLifetime = 60 }
        var result = Self.send(&backend, Self.request(authorization: nil))
        #expect(result.status == 401)
        #expect(result.error?.reason == .unauthenticated)
        #expect(result.error?.errorCode == nil)
        #expect(result.error?.message.hasPrefix("Request is missing required authentication credential.") == true)
        result = Self.send(&backend, Self.request(authorization: "Bearer ya29.other"))
        #expect(result.error?.message.hasPrefix("Request had invalid authentication credentials.") == true)
        #expect(Self.send(&backend, at: Self.now + 59).status == 200)
        result = Self.send(&backend, at: Self.now + 60)
        #expect(result.status == 401)
        #expect(result.error?.reaction(payloadKnownValid: true) == .refreshAccessToken)
    }

    @Test func anotherProjectIsPermissionDenied() throws {
        var (backend, _) = Self.backend()
        let (answer, _) = backend.send(
            Self.request(),
            project: "someone-else",
            tokens: [:],
            now: Self.now,
            random: 0.99
        )
        let error = try #require(FCMError.parse(Array((answer.body ?? "").utf8)))
        #expect(answer.status == 403)
        #expect(error.status == "PERMISSION_DENIED")
        #expect(error.reaction(payloadKnownValid: true) == .credentials)
    }

    @Test func aDeliveredMessageIsNamed() throws {
        var (backend, _) = Self.backend()
        let result = Self.send(&backend)
        #expect(result.status == 200)
        #expect(result.body.hasPrefix(#"{"name":"projects/pushcamp-sim/messages/0:"#))
        #expect(result.sent.token == Self.token)
        #expect(!result.sent.validateOnly)
        #expect(result.sent.reason == nil)
    }

    /// The tokens file's words, for FCM tokens: each reason with its status, body and reaction.
    @Test(arguments: [
        (TokenBehaviour.unregistered(timestamp: 0), 404, FCMReason.unregistered, FCMReason.Reaction.dropToken),
        (.bad, 400, .invalidArgument, .dropToken),
        (.wrongTopic, 403, .senderIDMismatch, .neverRetry),
        (.fcm(.thirdPartyAuthError), 401, .thirdPartyAuthError, .neverRetry),
        (.fcm(.internalError), 500, .internalError, .serverError),
        (.fcm(.unspecifiedError), 500, .unspecifiedError, .neverRetry),
    ])
    func aTokenRuleAnswersWithItsReason(
        behaviour: TokenBehaviour,
        status: Int,
        reason: FCMReason,
        reaction: FCMReason.Reaction
    ) throws {
        var (backend, _) = Self.backend()
        let result = Self.send(&backend, tokens: [Self.token.lowercased(): behaviour])
        #expect(result.status == status)
        let error = try #require(result.error)
        #expect(error.reason == reason)
        #expect(error.errorCode == reason.description)
        #expect(error.reaction(payloadKnownValid: true) == reaction)
        #expect(result.sent.reason == reason)
    }

    @Test func flakyAndThrottledTokensFailThenSucceedWithRetryAfter() throws {
        var (backend, _) = Self.backend { $0.retryAfter = 2 }
        let tokens: [String: TokenBehaviour] = [Self.token.lowercased(): .flaky(failures: 2)]
        var result = Self.send(&backend, tokens: tokens)
        #expect(result.status == 503)
        #expect(result.error?.reason == .unavailable)
        #expect(result.retryAfter == "2")
        #expect(Self.send(&backend, tokens: tokens).status == 503)
        #expect(Self.send(&backend, tokens: tokens).status == 200)
        let other = Self.token + "x"
        result = Self.send(&backend, Self.request(token: other), tokens: [other.lowercased(): .throttled(times: 1)])
        #expect(result.status == 429)
        #expect(result.error?.reason == .quotaExceeded)
        #expect(result.error?.reaction(payloadKnownValid: true) == .slowRun)
    }

    /// The project's quota counts messages in a minute that starts with the first one, not on the
    /// clock's minute; over it, 429 QUOTA_EXCEEDED with the seconds left in that minute.
    @Test func theProjectQuotaIsAMinuteThatStartsWithTheFirstMessage() throws {
        var (backend, _) = Self.backend { $0.quotaPerMinute = 3 }
        let start = Self.now + 0.5
        for offset in [0.0, 1, 2] { #expect(Self.send(&backend, at: start + offset).status == 200) }
        let over = Self.send(&backend, at: start + 20)
        #expect(over.status == 429)
        #expect(over.error?.reason == .quotaExceeded)
        #expect(over.error?.status == "RESOURCE_EXHAUSTED")
        #expect(over.retryAfter == "40")
        #expect(Self.send(&backend, at: start + 59.9).status == 429)
        #expect(Self.send(&backend, at: start + 60).status == 200)
    }

    /// A dry run checks the message and what the token is, and delivers nothing.
    @Test func aDryRunChecksAndDeliversNothing() throws {
        var (backend, _) = Self.backend { $0.quotaPerMinute = 1 }
        var result = Self.send(&backend, Self.request(validateOnly: true))
        #expect(result.status == 200)
        #expect(result.body == #"{"name":"projects/pushcamp-sim/messages/fake_message_id"}"#)
        #expect(result.sent.validateOnly)
        result = Self.send(
            &backend,
            Self.request(validateOnly: true),
            tokens: [Self.token.lowercased(): .unregistered(timestamp: 0)]
        )
        #expect(result.error?.reason == .unregistered)
        result = Self.send(&backend, Self.request(#""data":{"n":1}"#, validateOnly: true))
        #expect(result.error?.reason == .invalidArgument)
        // Dry runs took nothing from the quota; a flaky token's outage is not a dry run's business.
        result = Self.send(
            &backend,
            Self.request(validateOnly: true),
            tokens: [Self.token.lowercased(): .flaky(failures: 1)]
        )
        #expect(result.status == 200)
        #expect(Self.send(&backend).status == 200)
    }

    /// Revoked tokens (as when a key is deleted) are refused until a new one is fetched.
    @Test func tokensAreRevokedAfterTheMessagesSaid() throws {
        var (backend, _) = Self.backend { $0.revokeAfter = 2 }
        #expect(Self.send(&backend).status == 200)
        #expect(Self.send(&backend).status == 200)
        let refused = Self.send(&backend)
        #expect(refused.status == 401)
        #expect(refused.error?.message.hasPrefix("Request had invalid authentication credentials.") == true)
    }

    /// A deleted key: its tokens refused, and the token endpoint refuses its assertions as Google
    /// does (`invalid_grant`).
    @Test func aDeletedKeyBuysNoMoreTokens() throws {
        var (backend, _) = Self.backend { $0.deleteKeyAfter = 1 }
        #expect(Self.send(&backend).status == 200)
        #expect(Self.send(&backend).status == 401)
        let assertion = AccessTokenAssertion.make(account: Self.account, issuedAt: Int64(Self.now))
        let answer = backend.token(
            method: "POST",
            body: AccessTokenAssertion.requestBody(assertion: assertion),
            now: Self.now
        ) { "ya29.fresh" }
        #expect(answer.status == 400)
        #expect(answer.body?.contains("invalid_grant") == true)
    }

    @Test func anErrorRateAnswersInternal() throws {
        var (backend, _) = Self.backend { $0.errorRate = 0.5 }
        #expect(Self.send(&backend, random: 0.4).error?.reason == .internalError)
        #expect(Self.send(&backend, random: 0.6).status == 200)
    }

    @Test func onlyTheSendPathIsFCMs() {
        #expect(FCMBackend.sendProject(path: "/v1/projects/p-1/messages:send") == "p-1")
        for path in [
            "/v1/projects//messages:send", "/v1/projects/p/messages", "/v1/projects/p/messages:send/x", "/3/device/ab",
        ] {
            #expect(FCMBackend.sendProject(path: path) == nil, "\(path)")
        }
    }
}
