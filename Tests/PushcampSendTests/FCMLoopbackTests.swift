import Foundation
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCM
import PushcampFCMCore
import PushcampSimulator
import PushcampTestSupport
import Testing

/// The simulator's FCM side over real HTTP/2 and TLS on loopback, spoken to by the exchange client
/// with requests that carry their own `authorization`: the token endpoint, then `messages:send`.
@Suite("The simulator's FCM side on loopback")
struct FCMLoopbackTests {
    static let token = "cYx0Sd8pQ0mB1kz7Jf3aPq:APA91bHk2J4x5Qw8e9r0t1y2u3i4o5p6a7s8d9f0g1h2j3k4l5z6x7c8v9b0n1m2"

    static func start(
        _ change: (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> (APNsSimulator, APNsExchange, TemporaryProject) {
        let account = try FCMSimulation.generateAccount(tokenURI: "https://127.0.0.1/token")
        let (simulator, port, credentials) = try await LoopbackTests.certificateSimulator { configuration in
            configuration.fcm = FCMSimulation(account: account)
            change(&configuration)
        }
        let project = try TemporaryProject(projectFile: nil)
        var configuration = APNsClientConfiguration(
            host: "127.0.0.1",
            port: port,
            authentication: .inRequest,
            caFile: try project.write("ca.pem", credentials.caCertificatePEM),
            connections: 1
        )
        configuration.requestTimeout = .seconds(5)
        return (simulator, try APNsExchange(configuration: configuration), project)
    }

    static func accessToken(_ exchange: APNsExchange, account: ServiceAccount) async throws -> String {
        let assertion = AccessTokenAssertion.make(account: account, issuedAt: Int64(SystemWallClock().now()))
        let response = try await exchange.send(
            APNsExchange.Request(
                method: "POST",
                path: "/token",
                headers: [("content-type", "application/x-www-form-urlencoded")],
                body: AccessTokenAssertion.requestBody(assertion: assertion)
            )
        )
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try #require(object?["access_token"] as? String)
    }

    static func send(
        _ exchange: APNsExchange,
        accessToken: String?,
        token: String = token,
        validateOnly: Bool = false
    ) async throws -> APNsExchange.Response {
        var headers: [(name: String, value: String)] = [("content-type", "application/json; UTF-8")]
        if let accessToken { headers.append(("authorization", "Bearer \(accessToken)")) }
        return try await exchange.send(
            APNsExchange.Request(
                method: "POST",
                path: "/v1/projects/pushcamp-sim/messages:send",
                headers: headers,
                body: Array(
                    #"{"validate_only":\#(validateOnly),"message":{"token":"\#(token)","notification":{"title":"Hi"},"android":{"ttl":"60s"}}}"#
                        .utf8
                )
            )
        )
    }

    /// The service account's `token_uri` is where the simulator listens; an assertion for it gets an
    /// access token, and sends with that token are delivered, recorded with their FCM token.
    @Test func anAssertionBuysAnAccessTokenThatSends() async throws {
        let (simulator, exchange, project) = try await Self.start()
        defer { project.remove() }
        let fcm = try #require(simulator.fcm)
        #expect(fcm.account.tokenURI == "https://127.0.0.1:\(simulator.port ?? 0)/token")
        #expect(try await Self.send(exchange, accessToken: nil).status == 401)
        let accessToken = try await Self.accessToken(exchange, account: fcm.account)
        #expect(fcm.accessTokensIssued == 1)
        for _ in 0..<3 {
            let response = try await Self.send(exchange, accessToken: accessToken)
            #expect(response.status == 200)
            #expect(response.value("content-type") == "application/json; charset=UTF-8")
        }
        let dry = try await Self.send(exchange, accessToken: accessToken, validateOnly: true)
        #expect(String(decoding: dry.body, as: UTF8.self).hasSuffix("/messages/fake_message_id\"}"))
        #expect(simulator.recorder.deliveries() == [Self.token: 3])
        #expect(simulator.recorder.summary()["401 UNAUTHENTICATED"] == 1)
        let sends = simulator.recorder.records.filter(\.isFCM)
        #expect(sends.count == 5)
        #expect(sends.filter(\.validateOnly).count == 1)
        await exchange.close()
        await simulator.stop()
    }

    /// A dead token is 404 with Google's body; the exchange parses it into FCM's reason.
    @Test func aDeadTokenIsAnsweredWithGooglesBody() async throws {
        let dead = Self.token + "dead"
        let (simulator, exchange, project) = try await Self.start {
            $0.tokens = [dead.lowercased(): .unregistered(timestamp: 0)]
        }
        defer { project.remove() }
        let accessToken = try await Self.accessToken(exchange, account: try #require(simulator.fcm).account)
        let response = try await Self.send(exchange, accessToken: accessToken, token: dead)
        #expect(response.status == 404)
        let error = try #require(FCMError.parse(response.body))
        #expect(error.reason == .unregistered)
        #expect(error.status == "NOT_FOUND")
        #expect(simulator.recorder.records.last?.fcmReason == .unregistered)
        await exchange.close()
        await simulator.stop()
    }
}

/// The token endpoint's client against the simulator: a token for the account it knows, Google's
/// OAuth error for a key it does not.
@Suite("The token endpoint's client on loopback")
struct TokenEndpointLoopbackTests {
    @Test func theSimulatorIssuesTokensToItsAccountOnly() async throws {
        let (simulator, exchange, project) = try await FCMLoopbackTests.start()
        defer { project.remove() }
        await exchange.close()
        let account = try #require(simulator.fcm).account
        let endpoint = try TokenEndpoint(
            uri: account.tokenURI,
            caFile: project.root.appendingPathComponent("ca.pem").path
        )
        let issued = try await endpoint.issue(for: account, now: SystemWallClock().now())
        #expect(issued.token.hasPrefix("ya29.sim-"))
        #expect(issued.lifetime == 3600)
        var stranger = try FCMSimulation.generateAccount(tokenURI: account.tokenURI)
        stranger.clientEmail = account.clientEmail
        let error = try await #require(throws: FCMClientError.self) {
            try await endpoint.issue(for: stranger, now: SystemWallClock().now())
        }
        #expect(error.code == .credentials)
        #expect(
            error.message
                == "the token endpoint \(account.tokenURI) refused the service account: invalid_grant (Invalid JWT Signature.)"
        )
        await endpoint.close()
        await simulator.stop()
    }
}
