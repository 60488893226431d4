import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCM
import PushcampFCMCore
import PushcampSimulator
import PushcampTestSupport
import Synchronization
import Testing

/// FCM messages through the same connection pool as APNs pushes, against the simulator on loopback:
/// SETTINGS and the stream limit honoured, each message once, the access token from the token
/// endpoint, a revoked token replaced once, refused credentials stopping the send.
@Suite("FCM through the connection pool on loopback")
struct FCMPoolLoopbackTests {
    static func token(_ index: Int) -> String {
        "d\(index)Yx0Sd8pQ0mB1kz7Jf3a:APA91bHk2J4x5Qw8e9r0t1y2u3i4o5p6a7s8d9f0g1h2j3k4l5z6x7c8v9b0n1m2"
    }

    static func request(_ index: Int) -> APNsRequest {
        APNsRequest(
            tag: index,
            registrationToken: token(index),
            path: "/v1/projects/pushcamp-sim/messages:send",
            body: Array(
                #"{"message":{"token":"\#(token(index))","notification":{"title":"Hi \#(index)"},"android":{"ttl":"60s"}}}"#
                    .utf8
            )
        )
    }

    /// Sends `count` messages through a pool with `tokens`.
    static func send(
        _ count: Int,
        port: Int,
        caFile: String,
        tokens: AccessTokens,
        connections: Int = 2
    ) async throws -> (outcomes: [APNsOutcome], events: [TransportEvent]) {
        let pool = try APNsConnectionPool(
            configuration: APNsClientConfiguration(
                host: "127.0.0.1",
                port: port,
                authentication: .bearer(tokens),
                caFile: caFile,
                connections: connections
            )
        )
        let (events, sink) = AsyncStream.makeStream(of: TransportEvent.self)
        let result = await withTaskGroup(of: ([APNsOutcome], [TransportEvent]).self) { group in
            group.addTask {
                await pool.run { sink.yield($0) }
                sink.finish()
                return ([], [])
            }
            group.addTask {
                var outcomes: [APNsOutcome] = []
                var seen: [TransportEvent] = []
                _ = pool.submit((0..<count).map(Self.request))
                for await event in events {
                    seen.append(event)
                    switch event {
                    case .outcomes(let batch):
                        outcomes += batch
                        if outcomes.count >= count { return (outcomes, seen) }
                    case .connectFailed(_, let error) where error.code == .credentials:
                        return (outcomes, seen)
                    default: continue
                    }
                }
                return (outcomes, seen)
            }
            let result = await group.next() ?? ([], [])
            pool.shutdown()
            group.cancelAll()
            return result
        }
        return result
    }

    static func start(
        _ change: (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> (APNsSimulator, Int, String, TemporaryProject) {
        let account = try FCMSimulation.generateAccount(tokenURI: "https://127.0.0.1/token")
        let (simulator, port, credentials) = try await LoopbackTests.certificateSimulator { configuration in
            configuration.fcm = FCMSimulation(account: account)
            configuration.maxConcurrentStreams = 40
            change(&configuration)
        }
        let project = try TemporaryProject(projectFile: nil)
        return (simulator, port, try project.write("ca.pem", credentials.caCertificatePEM), project)
    }

    static func accessTokens(_ account: ServiceAccount, caFile: String) throws -> AccessTokens {
        AccessTokens(account: account, endpoint: try TokenEndpoint(uri: account.tokenURI, caFile: caFile))
    }

    @Test func everyMessageGoesOnceWithinTheServersLimitOnOneAccessToken() async throws {
        let (simulator, port, caFile, project) = try await Self.start()
        defer { project.remove() }
        let fcm = try #require(simulator.fcm)
        let tokens = try Self.accessTokens(fcm.account, caFile: caFile)
        let (outcomes, _) = try await Self.send(600, port: port, caFile: caFile, tokens: tokens)
        await simulator.stop()
        #expect(outcomes.count == 600)
        #expect(outcomes.allSatisfy { $0.status == 200 && $0.fcmError == nil })
        let deliveries = simulator.recorder.deliveries()
        #expect(deliveries.count == 600)
        #expect(deliveries.values.allSatisfy { $0 == 1 })
        #expect(simulator.recorder.limitViolations == 0)
        #expect(simulator.recorder.maxOpenStreams > 1 && simulator.recorder.maxOpenStreams <= 40)
        #expect(fcm.accessTokensIssued == 1)
    }

    /// Google stops taking the token mid-send (after 300 messages): the 401s retire it, one fresh
    /// token is fetched, the refused messages go again with it, and each message is delivered once.
    @Test func aRevokedTokenIsReplacedOnceAndEveryMessageStillGoesOnce() async throws {
        let (simulator, port, caFile, project) = try await Self.start { $0.fcm?.revokeAfter = 300 }
        defer { project.remove() }
        let fcm = try #require(simulator.fcm)
        let tokens = try Self.accessTokens(fcm.account, caFile: caFile)
        let (outcomes, events) = try await Self.send(600, port: port, caFile: caFile, tokens: tokens)
        await simulator.stop()
        #expect(outcomes.count == 600)
        #expect(
            outcomes.allSatisfy { $0.status == 200 },
            "\(outcomes.filter { $0.status != 200 }.prefix(3).map(\.fcmError))"
        )
        #expect(simulator.recorder.deliveries().values.allSatisfy { $0 == 1 })
        #expect(simulator.recorder.deliveries().count == 600)
        #expect(fcm.accessTokensIssued == 2)
        let refused = events.filter { if case .accessTokenRefused = $0 { return true } else { return false } }.count
        #expect(refused >= 1)
        #expect(simulator.recorder.summary()["401 UNAUTHENTICATED"] == refused)
    }

    /// A key the token endpoint refuses stops the send with a credentials error before any message.
    @Test func refusedCredentialsStopBeforeAnyMessage() async throws {
        let (simulator, port, caFile, project) = try await Self.start()
        defer { project.remove() }
        var stranger = try FCMSimulation.generateAccount(tokenURI: try #require(simulator.fcm).account.tokenURI)
        stranger.clientEmail = try #require(simulator.fcm).account.clientEmail
        let tokens = try Self.accessTokens(stranger, caFile: caFile)
        let (outcomes, events) = try await Self.send(10, port: port, caFile: caFile, tokens: tokens)
        await simulator.stop()
        #expect(outcomes.isEmpty)
        let failure = events.compactMap { event -> APNsClientError? in
            if case .connectFailed(_, let error) = event { return error }
            return nil
        }.first
        #expect(failure?.code == .credentials)
        #expect(failure?.message.contains("invalid_grant") == true, "\(String(describing: failure))")
        #expect(simulator.recorder.records.filter(\.isFCM).isEmpty)
    }
}
