import Crypto
import Foundation
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampModel
import PushcampPlanner
import PushcampRehearsal
import PushcampSend
import PushcampSimulator
import PushcampTestSupport
import SwiftASN1
import Synchronization
import Testing
import X509

/// End to end on 127.0.0.1: the real pool (nghttp2 + NIOSSL) against the simulator (swift-nio-http2).
@Suite("Send against the simulator", .serialized)
struct LoopbackTests {
    static func campaign(
        rows: Int,
        extra: String = "",
        throttle: String = "{ rate: 100000/s, connections: 2 }",
        message: String = "",
        projectFile: String = TemporaryProject.defaultProjectFile
    ) throws -> (TemporaryProject, LoadedCampaign) {
        let project = try TemporaryProject(projectFile: projectFile)
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: rows, columns: ["name"]) { ["Name\($0)"] }
        )
        try project.write(
            "campaigns/c.yaml",
            """
            campaign: loopback
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: { aps: { alert: { title: "Hi {{name}}" } } }
            \(message.isEmpty ? "" : "  " + message)
            throttle: \(throttle)
            \(extra)
            """
        )
        let result = CampaignLoader(workingDirectory: project.root).load("campaigns/c.yaml")
        return (project, try #require(result.campaign, "\(result.diagnostics)"))
    }

    static func rehearse(
        rows: Int,
        extra: String = "",
        tokens: [Int: TokenBehaviour] = [:],
        adjust: @escaping @Sendable (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> Rehearsal.Result {
        let (project, campaign) = try campaign(rows: rows, extra: extra)
        defer { project.remove() }
        var rehearsal = Rehearsal(campaign: campaign)
        for (index, behaviour) in tokens { rehearsal.tokens[TemporaryProject.token(index)] = behaviour }
        rehearsal.adjust = adjust
        return try await rehearsal.run()
    }

    @Test func everyPushOnceAndTheStreamLimitRespected() async throws {
        let result = try await Self.rehearse(rows: 3000) { $0.maxConcurrentStreams = 40 }
        #expect(result.report.delivered == 3000)
        #expect(result.report.exitCode == 0, "stopped: \(result.report.stopDetail ?? "")")
        #expect(result.recorder.deliveries().count == 3000)
        #expect(result.recorder.deliveries().values.allSatisfy { $0 == 1 })
        #expect(result.recorder.maxOpenStreams == 40)
        #expect(result.recorder.limitViolations == 0)
        #expect(result.report.highestStreamLimit == 40)
    }

    @Test func aLoweredLimitIsFollowed() async throws {
        let result = try await Self.rehearse(rows: 3000) {
            $0.maxConcurrentStreams = 50
            $0.lowerLimit = (after: 300, to: 3)
        }
        #expect(result.report.delivered == 3000)
        #expect(result.recorder.limitViolations == 0)
    }

    @Test func goawayMidRunDeliversEachNotificationExactlyOnce() async throws {
        let result = try await Self.rehearse(rows: 3000) {
            $0.maxConcurrentStreams = 100
            $0.goawayAfter = 700
        }
        #expect(result.report.delivered == 3000)
        // Each connection answers its first 700 and the streams already open when its GOAWAY goes out
        // (at most 100 more): at least three connections must have ended that way.
        #expect(result.recorder.goaways >= 3)
        let deliveries = result.recorder.deliveries()
        #expect(deliveries.count == 3000)
        #expect(deliveries.values.allSatisfy { $0 == 1 })
        #expect(result.report.disconnects.keys.contains { $0.hasPrefix("GOAWAY (NO_ERROR, reason Shutdown)") })
    }

    @Test func goawayWithAnswersStillPendingLosesNothing() async throws {
        // Answers 5 ms late: when GOAWAY goes out, accepted streams are still waiting for theirs.
        let result = try await Self.rehearse(rows: 600) {
            $0.maxConcurrentStreams = 20
            $0.goawayAfter = 25
            $0.latency = .milliseconds(5)
        }
        #expect(result.report.delivered == 600)
        #expect(result.report.retries["connection-lost"] == nil)
        #expect(result.recorder.goaways >= 20)
        let deliveries = result.recorder.deliveries()
        #expect(deliveries.count == 600)
        #expect(deliveries.values.allSatisfy { $0 == 1 })
    }

    @Test func droppedConnectionsAreResentAndCounted() async throws {
        let result = try await Self.rehearse(rows: 2000) {
            $0.maxConcurrentStreams = 100
            $0.dropAfter = 500
            $0.latency = .milliseconds(2)
        }
        #expect(result.report.delivered == 2000)
        #expect(result.recorder.drops >= 2)
        #expect(result.report.retries["connection-lost", default: 0] > 0)
        #expect(Set(result.recorder.deliveries().keys).count == 2000)
    }

    /// Issue #12's target: a server dropping each connection every 300 requests, on 10 connections,
    /// still ends with every token delivered (exactly once, or counted as a possible duplicate).
    @Test func aDropEvery300RequestsOnTenConnectionsLosesNobody() async throws {
        let (project, campaign) = try Self.campaign(rows: 10_000, throttle: "{ rate: 100000/s, connections: 10 }")
        defer { project.remove() }
        var rehearsal = Rehearsal(campaign: campaign)
        rehearsal.adjust = {
            $0.maxConcurrentStreams = 1000
            $0.dropAfter = 300
        }
        let result = try await rehearsal.run()
        #expect(result.report.exitCode == 0, "\(result.report.text())")
        #expect(result.report.delivered == 10_000)
        #expect(result.recorder.drops >= 20)
        let deliveries = result.recorder.deliveries()
        #expect(deliveries.count == 10_000)
        let twice = deliveries.values.reduce(0) { $0 + $1 - 1 }
        #expect(twice <= result.report.retries["connection-lost", default: 0], "\(twice) delivered twice")
    }

    @Test func tooManyRequestsIsRetriedNoSoonerThanTheDelay() async throws {
        let started = ContinuousClock.now
        let result = try await Self.rehearse(
            rows: 20,
            extra: "retry: { TooManyRequests: 1s }",
            tokens: [3: .throttled(times: 1)]
        )
        #expect(result.report.delivered == 20)
        #expect(result.report.retries["TooManyRequests"] == 1)
        #expect(ContinuousClock.now - started >= .seconds(1))
    }

    @Test func serverErrorsAreRetriedWithBackoffAndPermanentFailuresNever() async throws {
        let result = try await Self.rehearse(
            rows: 30,
            extra: "retry: { ServiceUnavailable: 1s }",
            tokens: [1: .flaky(failures: 2), 2: .unregistered(timestamp: 1_700_000_000_000), 3: .bad, 4: .wrongTopic]
        )
        #expect(result.report.delivered == 27)
        #expect(result.report.failures == ["Unregistered": 1, "BadDeviceToken": 1, "DeviceTokenNotForTopic": 1])
        #expect(result.report.retries["ServiceUnavailable"] == 2)
        #expect(result.report.exitCode == 4)
        let attempts = Dictionary(grouping: result.recorder.records, by: \.token).mapValues(\.count)
        #expect(attempts[TemporaryProject.token(1)] == 3)
        for index in 2...4 { #expect(attempts[TemporaryProject.token(index)] == 1) }
        #expect(
            result.report.deadTokens.map(\.token).sorted()
                == [TemporaryProject.token(2), TemporaryProject.token(3)].sorted()
        )
        #expect(result.report.deadTokens.first { $0.reason == "Unregistered" }?.timestamp == 1_700_000_000_000)
    }

    @Test func wrongCredentialsStopTheRunQuickly() async throws {
        let result = try await Self.rehearse(rows: 5000) { configuration in
            configuration.verifier = ProviderTokenVerifier(
                publicKey: P256.Signing.PrivateKey().publicKey,
                teamID: nil,
                keyID: nil,
                clock: SystemWallClock()
            )
        }
        guard case .credentials(let message)? = result.report.stop else {
            Issue.record("expected a credentials stop, got \(String(describing: result.report.stop))")
            return
        }
        #expect(message.contains("InvalidProviderToken"))
        #expect(result.report.exitCode == 2)
        #expect(result.recorder.records.count <= 8)  // one stream per connection until a token is accepted
    }

    @Test func expiredProviderTokenIsAnsweredWithOneNewToken() async throws {
        let (project, campaign) = try Self.campaign(rows: 500)
        defer { project.remove() }
        var rehearsal = Rehearsal(campaign: campaign)
        // The first token is minted 55 minutes in the past, so APNs (the simulator) calls it expired.
        rehearsal.clientClock = SkewedClock(firstReadings: 1, skew: -3700)
        let result = try await rehearsal.run()
        #expect(result.report.delivered == 500)
        #expect(result.report.providerTokensRenewed == 1)
        #expect(result.recorder.records.filter { $0.reason == .expiredProviderToken }.count >= 1)
        #expect(result.recorder.records.filter { $0.reason == .tooManyProviderTokenUpdates }.isEmpty)
    }

    @Test func headersAsTheSimulatorExpects() async throws {
        let result = try await Self.rehearse(rows: 5, extra: "")
        let record = try #require(result.recorder.records.first)
        #expect(record.topic == "com.example.shop")
        #expect(record.pushType == "alert")
        #expect(record.priority == "10")
        #expect(record.status == 200)
    }

    @Test func certificateAuthRehearsesWithAClientCertificate() async throws {
        let (project, campaign) = try Self.campaign(
            rows: 400,
            projectFile: """
                apps:
                  shop:
                    topic: com.example.shop
                    certificate: certs/push.p12
                """
        )
        defer { project.remove() }
        let result = try await Rehearsal(campaign: campaign).run()
        #expect(result.report.delivered == 400)
        #expect(result.report.exitCode == 0)
        #expect(result.recorder.connections == 2)
        #expect(result.recorder.certificateConnections == 2)
        // No provider token went with any request: the certificate was the credential.
        #expect(result.recorder.records.allSatisfy { $0.status == 200 })
    }

    @Test func aCertificateFromAnotherAuthorityCannotConnect() async throws {
        let (simulator, port, credentials) = try await Self.certificateSimulator()
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let caFile = try project.write("ca.pem", credentials.caCertificatePEM)
        let foreign = try project.write(
            "foreign.pem",
            try SimulatorCredentials.generate().clientCertificatePEM(topic: "com.example.shop")
        )
        let pool = try APNsConnectionPool(
            configuration: APNsClientConfiguration(
                host: "127.0.0.1",
                port: port,
                authentication: .certificate(path: foreign, password: nil),
                caFile: caFile,
                connections: 1
            )
        )
        // TLS 1.3 finishes the client's side of the handshake before the server checks its
        // certificate, so the refusal shows as a failed connect or as a connection that ends at once.
        let (events, sink) = AsyncStream.makeStream(of: TransportEvent.self)
        let ending = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                await pool.run { sink.yield($0) }
                sink.finish()
                return nil
            }
            group.addTask {
                for await event in events {
                    switch event {
                    case .connectFailed(_, let error): return error.message
                    case .disconnected(_, let reason): return reason
                    default: continue
                    }
                }
                return nil
            }
            let first = await group.next() ?? nil
            pool.shutdown()
            group.cancelAll()
            return first
        }
        await simulator.stop()
        #expect(ending != nil)
        #expect(simulator.recorder.records.isEmpty)
    }
}

extension LoopbackTests {
    /// A simulator on loopback that takes client certificates for com.example.shop, configured by
    /// `change`, started.
    static func certificateSimulator(
        _ change: (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> (APNsSimulator, port: Int, SimulatorCredentials) {
        let credentials = try SimulatorCredentials.generate()
        var configuration = SimulatorConfiguration(
            credentials: credentials,
            teamID: nil,
            keyID: nil,
            bundleID: "com.example.shop"
        )
        configuration.acceptsClientCertificates = true
        change(&configuration)
        let simulator = try APNsSimulator(configuration: configuration)
        return (simulator, try await simulator.start(), credentials)
    }

    /// A request whose header HTTP/2 forbids (CR LF in apns-collapse-id: what pre-flight refuses,
    /// sent here on purpose) is reset alone: the simulator keeps the connection, as APNs does.
    /// `sim --host`: an address other than loopback, parsed strictly and named by the certificate.
    @Test func theSimulatorsCertificateNamesTheAddressItListensOn() throws {
        #expect(IPv4Address("10.232.7.1")?.bytes == [10, 232, 7, 1])
        for bad in ["", "10.0.0", "10.0.0.256", "10.0.0.1.2", "a.b.c.d", "10..0.1", "+1.0.0.1", "١.0.0.1"] {
            #expect(IPv4Address(bad) == nil, "\(bad)")
        }
        let credentials = try SimulatorCredentials.generate(addresses: [try #require(IPv4Address("10.232.7.1"))])
        let certificate = try Certificate(pemEncoded: credentials.serverCertificatePEM)
        let names = try #require(try certificate.extensions.subjectAlternativeNames)
        #expect(names.contains(.ipAddress(ASN1OctetString(contentBytes: [10, 232, 7, 1]))))
        #expect(names.contains(.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))))
    }

    @Test func aForbiddenHeaderResetsOnlyItsRequest() async throws {
        let (simulator, port, credentials) = try await Self.certificateSimulator()
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let caFile = try project.write("ca.pem", credentials.caCertificatePEM)
        let client = try project.write("client.pem", try credentials.clientCertificatePEM(topic: "com.example.shop"))
        let pool = try APNsConnectionPool(
            configuration: APNsClientConfiguration(
                host: "127.0.0.1",
                port: port,
                authentication: .certificate(path: client, password: nil),
                caFile: caFile,
                connections: 1
            )
        )
        func request(_ index: Int, collapseID: String) -> APNsRequest {
            APNsRequest(
                tag: index,
                deviceToken: TemporaryProject.token(index),
                apnsID: "5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5\(index)",
                topic: "com.example.shop",
                pushType: "alert",
                priority: 10,
                expiration: nil,
                collapseID: collapseID,
                payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
            )
        }
        let (events, sink) = AsyncStream.makeStream(of: TransportEvent.self)
        let outcomes = await withTaskGroup(of: [APNsOutcome].self) { group in
            group.addTask {
                await pool.run { sink.yield($0) }
                sink.finish()
                return []
            }
            group.addTask {
                var outcomes: [APNsOutcome] = []
                var submitted = false
                for await event in events {
                    switch event {
                    case .connected where !submitted:
                        submitted = true
                        _ = pool.submit([request(1, collapseID: "ok")])
                    case .outcomes(let batch):
                        outcomes += batch
                        if outcomes.count == 1 {
                            _ = pool.submit([
                                request(2, collapseID: "a\r\napns-priority: 5"), request(3, collapseID: "fine"),
                            ])
                        }
                        if outcomes.count >= 3 { return outcomes }
                    default: continue
                    }
                }
                return outcomes
            }
            let result = await group.next() ?? []
            pool.shutdown()
            group.cancelAll()
            return result
        }
        await simulator.stop()
        #expect(outcomes.count == 3)
        let delivered = outcomes.filter { $0.status == 200 }.map(\.request.tag).sorted()
        #expect(delivered == [1, 3], "\(outcomes.map { ($0.request.tag, $0.result) })")
        #expect(simulator.recorder.resets == 1)
        #expect(simulator.recorder.connections == 1)
    }
}

/// The system clock, off by `skew` seconds for its first readings.
final class SkewedClock: WallClock {
    private let readings = Mutex(0)
    let firstReadings: Int
    let skew: Double
    init(firstReadings: Int, skew: Double) {
        self.firstReadings = firstReadings
        self.skew = skew
    }
    func now() -> Double {
        let count = readings.withLock { value in
            defer { value += 1 }
            return value
        }
        return SystemWallClock().now() + (count < firstReadings ? skew : 0)
    }
}
