import Crypto
import Foundation
import PushcampAPNsCore
import PushcampAppStore
import PushcampTestSupport
import Testing
import X509

/// Every way a payload can be wrong, with a chain made for the test.
@Suite("App Store payloads: refusals")
struct RefusalTests {
    static let shop = AppStoreApp(
        name: "shop-ios",
        bundleID: "com.example.shop",
        appAppleID: 1_234_567_890,
        environments: ["production", "sandbox"]
    )

    func outcome(
        _ jws: String,
        roots: [Certificate],
        now: Date = Date()
    ) async -> Result<NotificationIntake.Outcome, AppStoreRefusal> {
        let intake = NotificationIntake(apps: [Self.shop], verifier: SignedPayloadVerifier(roots: roots))
        do {
            return .success(try await intake.receive(AppStoreTestChain.body(jws), now: now))
        } catch {
            return .failure(error)
        }
    }

    func refusal(_ jws: String, roots: [Certificate], now: Date = Date()) async -> AppStoreRefusal.Code? {
        if case .failure(let refusal) = await outcome(jws, roots: roots, now: now) { return refusal.code }
        return nil
    }

    @Test func aWellMadeNotificationIsAcceptedEachTime() async throws {
        let chain = try AppStoreTestChain()
        let verifier = SignedPayloadVerifier(roots: [chain.root])
        let intake = NotificationIntake(apps: [Self.shop], verifier: verifier)
        for _ in 0..<3 {
            let outcome = try await intake.receive(
                AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification())),
                now: Date()
            )
            guard case .accepted(let notification, "shop-ios") = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(notification.type == "DID_FAIL_TO_RENEW" && notification.subtype == "GRACE_PERIOD")
            #expect(notification.status == 4)
        }
    }

    /// Issue #27, case 6: a test root listed under one app (`trusted_roots` of a QA app) vouches
    /// for that app only. Whoever holds the test key cannot forge the production app's
    /// notifications, nor get one for an unconfigured app kept in quarantine.
    @Test func aRootTrustedForOneAppIsTrustedForNoOther() async throws {
        let test = try AppStoreTestChain()
        let apple = try AppStoreTestChain()  // stands for Apple's root: trusted for every app
        let qa = AppStoreApp(
            name: "qa",
            bundleID: "com.example.shop.qa",
            appAppleID: 1_234_567_890,
            environments: ["production", "sandbox"],
            trustedRoots: [test.root]
        )
        let intake = NotificationIntake(
            apps: [Self.shop, qa],
            verifier: SignedPayloadVerifier(roots: [apple.root, test.root])
        )
        func receive(_ chain: AppStoreTestChain, bundle: String) async throws -> Result<String, AppStoreRefusal> {
            let body = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification(bundle: bundle)))
            do {
                switch try await intake.receive(body, now: Date()) {
                case .accepted(_, let app): return .success("accepted for \(app)")
                case .quarantined: return .success("quarantined")
                }
            } catch {
                return .failure(error)
            }
        }
        #expect(try await receive(test, bundle: "com.example.shop.qa") == .success("accepted for qa"))
        #expect(try await receive(apple, bundle: "com.example.shop.qa") == .success("accepted for qa"))
        #expect(try await receive(apple, bundle: "com.example.shop") == .success("accepted for shop-ios"))
        #expect(try await receive(apple, bundle: "com.example.other") == .success("quarantined"))
        guard case .failure(let forged) = try await receive(test, bundle: "com.example.shop") else {
            Issue.record("the QA app's root vouched for the production app")
            return
        }
        #expect(forged.code == .chain)
        #expect(forged.description.contains("trusted only for app qa"), "\(forged)")
        guard case .failure(let unconfigured) = try await receive(test, bundle: "com.example.other") else {
            Issue.record("the QA app's root got an unconfigured app's notification kept")
            return
        }
        #expect(unconfigured.code == .chain)
    }

    @Test func chainsThatAreNotApplesAreRefused() async throws {
        let chain = try AppStoreTestChain()
        let payload = AppStoreTestChain.notification()
        let other = try AppStoreTestChain()
        // Another root: the header's root is never trusted.
        #expect(await refusal(try chain.sign(payload), roots: [other.root]) == .chain)
        // Without Apple's extensions.
        let noIntermediateOID = try AppStoreTestChain(intermediateOID: false)
        #expect(await refusal(try noIntermediateOID.sign(payload), roots: [noIntermediateOID.root]) == .chain)
        let noLeafOID = try AppStoreTestChain(leafOID: false)
        #expect(await refusal(try noLeafOID.sign(payload), roots: [noLeafOID.root]) == .chain)
        // Two certificates, four certificates.
        #expect(
            await refusal(try chain.sign(payload, chain: [chain.leaf, chain.intermediate]), roots: [chain.root])
                == .chain
        )
        #expect(
            await refusal(
                try chain.sign(payload, chain: [chain.leaf, chain.intermediate, chain.root, chain.root]),
                roots: [chain.root]
            ) == .chain
        )
        // A leaf that had expired when the payload was signed.
        let expired = try AppStoreTestChain(
            leafValid: Date().addingTimeInterval(-86_400 * 60)...Date().addingTimeInterval(-86_400 * 30)
        )
        #expect(await refusal(try expired.sign(payload), roots: [expired.root]) == .chain)
    }

    @Test(arguments: ["none", "HS256", "ES384", "RS256"])
    func onlyES256IsAccepted(alg: String) async throws {
        let chain = try AppStoreTestChain()
        #expect(
            await refusal(try chain.sign(AppStoreTestChain.notification(), alg: alg), roots: [chain.root]) == .algorithm
        )
    }

    @Test func datesOutsideTheWindowAreRefused() async throws {
        let chain = try AppStoreTestChain()
        let future = AppStoreTestChain.notification(signedDate: Date().addingTimeInterval(3600))
        #expect(await refusal(try chain.sign(future), roots: [chain.root]) == .signedDate)
        let stale = AppStoreTestChain.notification(signedDate: Date().addingTimeInterval(-8 * 86_400))
        #expect(await refusal(try chain.sign(stale), roots: [chain.root]) == .signedDate)
        // Five minutes of clock skew are allowed.
        let skewed = AppStoreTestChain.notification(signedDate: Date().addingTimeInterval(120))
        #expect(await refusal(try chain.sign(skewed), roots: [chain.root]) == nil)
    }

    @Test func garbageAndOversizedBodiesAreRefused() async throws {
        let chain = try AppStoreTestChain()
        let intake = NotificationIntake(apps: [Self.shop], verifier: SignedPayloadVerifier(roots: [chain.root]))
        for (body, code) in [
            (Array("not json".utf8), AppStoreRefusal.Code.malformed),
            (Array("{\"signedPayload\": 5}".utf8), .malformed),
            (AppStoreTestChain.body("a.b"), .malformed),
            (AppStoreTestChain.body("!!.??.##"), .malformed),
            ([UInt8](repeating: 0x20, count: NotificationIntake.bodyLimit + 1), .tooLarge),
        ] {
            do {
                _ = try await intake.receive(body, now: Date())
                Issue.record("accepted \(body.prefix(20))")
            } catch {
                #expect(error.code == code, "\(error)")
            }
        }
        // Signed, but missing the fields every notification has.
        var payload = AppStoreTestChain.notification()
        payload["notificationUUID"] = nil
        #expect(await refusal(try chain.sign(payload), roots: [chain.root]) == .missingField)
    }

    @Test func configurationMistakesAreQuarantinedNotRefused() async throws {
        let chain = try AppStoreTestChain()
        for (payload, reason) in [
            (
                AppStoreTestChain.notification(bundle: "com.example.other"),
                "bundle id com.example.other is not configured"
            ),
            (AppStoreTestChain.notification(appAppleID: 42), "app id 42 is not app shop-ios's app_apple_id"),
            (AppStoreTestChain.notification(environment: "Xcode"), "environment xcode is not among"),
        ] {
            guard case .success(.quarantined(_, let why)) = await outcome(try chain.sign(payload), roots: [chain.root])
            else {
                Issue.record("not quarantined: \(payload)")
                continue
            }
            #expect(why.contains(reason), "\(why)")
        }
    }
}

@Suite("Get Notification History: pages and back-off, decided without a network")
struct NotificationHistoryPagerTests {
    static func page(_ payloads: [String], more: String?) -> Data {
        var object: [String: Any] = [
            "notificationHistory": payloads.map { ["signedPayload": $0] }, "hasMore": more != nil,
        ]
        if let more { object["paginationToken"] = more }
        return try! JSONSerialization.data(withJSONObject: object)
    }

    @Test func pagesFollowTheTokenAndRateLimitsWaitThenRetryTheSamePage() {
        var pager = NotificationHistoryPager(maxAttempts: 4)
        #expect(pager.start() == .fetch(paginationToken: nil))
        var answer = pager.answered(status: 200, retryAfter: nil, body: Self.page(["a", "b"], more: "t1"))
        #expect(answer.payloads == ["a", "b"] && answer.next == .fetch(paginationToken: "t1"))
        // Apple's Retry-After is honoured; without one, 1 s doubling.
        #expect(pager.answered(status: 429, retryAfter: 7, body: Data()).next == .wait(seconds: 7, then: "t1"))
        #expect(pager.answered(status: 503, retryAfter: nil, body: Data()).next == .wait(seconds: 2, then: "t1"))
        #expect(pager.unanswered("connection refused") == .wait(seconds: 4, then: "t1"))
        answer = pager.answered(status: 200, retryAfter: nil, body: Self.page(["c"], more: nil))
        #expect(answer.payloads == ["c"] && answer.next == .finished)
        #expect(pager.pages == 2 && pager.waits == 3)
    }

    @Test func endlessLimitsRepeatedTokensAndRefusalsStopWithAReason() {
        var pager = NotificationHistoryPager(maxAttempts: 3)
        _ = pager.answered(status: 429, retryAfter: nil, body: Data())
        _ = pager.answered(status: 429, retryAfter: nil, body: Data())
        guard case .failed(let message) = pager.answered(status: 429, retryAfter: nil, body: Data()).next else {
            Issue.record("a third 429 in a row should stop")
            return
        }
        #expect(message.contains("429 3 times in a row"))

        var looping = NotificationHistoryPager()
        _ = looping.answered(status: 200, retryAfter: nil, body: Self.page([], more: "same"))
        #expect(
            looping.answered(status: 200, retryAfter: nil, body: Self.page([], more: "same")).next
                == .failed("the App Store Server API said hasMore but gave no new paginationToken")
        )
        var refused = NotificationHistoryPager()
        let body = try! JSONSerialization.data(withJSONObject: [
            "errorCode": 4_000_006, "errorMessage": "Invalid request.",
        ])
        #expect(
            refused.answered(status: 400, retryAfter: nil, body: body).next
                == .failed("the App Store Server API answered 400: Invalid request.")
        )
        guard case .failed(let unauthorized) = refused.answered(status: 401, retryAfter: nil, body: Data()).next else {
            Issue.record("401 should stop")
            return
        }
        #expect(unauthorized.contains("check api.issuer_id, api.key_id and api.key_file"))
    }

    @Test func theBearerTokenCarriesWhatAppleAsksFor() throws {
        let key = P256.Signing.PrivateKey()
        let api = AppStoreServerAPI(
            issuerID: "issuer",
            keyID: "2X9R4HXF34",
            key: key,
            bundleID: "com.example.shop",
            baseURL: "https://api.storekit.itunes.apple.com/"
        )
        let token = api.token(issuedAt: 1_000)
        #expect(
            ProviderTokenJWT.issuedAt(token, publicKey: key.publicKey, teamID: "issuer", keyID: "2X9R4HXF34") == 1_000
        )
        let claims = try #require(
            Base64URL.decode(token.split(separator: ".")[1]).flatMap {
                try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]
            }
        )
        #expect(claims["aud"] as? String == "appstoreconnect-v1" && claims["bid"] as? String == "com.example.shop")
        #expect((claims["exp"] as? Int) == 2_200)
        #expect(
            api.historyURL(paginationToken: "a b")?.absoluteString
                == "https://api.storekit.itunes.apple.com/inApps/v1/notifications/history?paginationToken=a%20b"
        )
        let body = NotificationHistoryQuery(
            start: Date(timeIntervalSince1970: 1),
            end: Date(timeIntervalSince1970: 2),
            onlyFailures: false
        ).body
        #expect(String(decoding: body, as: UTF8.self) == #"{"endDate":2000,"startDate":1000}"#)
    }
}
