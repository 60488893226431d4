import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampSimulator
import PushcampTestSupport
import Synchronization
import Testing

/// The broadcast API's client (`APNsExchange`) keeps the pool's discipline, against the real
/// simulator on loopback (issue 43): a GOAWAY stops new streams on its connection and a request
/// the server did not process goes on a new one; a request on a dropped connection is
/// `.unanswered`, never silently sent again.
@Suite("The broadcast API's client on loopback")
struct ExchangeLoopbackTests {
    /// A simulator taking client certificates, configured by `change`, and an exchange to it.
    static func exchange(
        _ change: (inout SimulatorConfiguration) -> Void
    ) async throws -> (APNsSimulator, APNsExchange, TemporaryProject) {
        let (simulator, port, credentials) = try await LoopbackTests.certificateSimulator(change)
        let project = try TemporaryProject(projectFile: nil)
        let caFile = try project.write("ca.pem", credentials.caCertificatePEM)
        let client = try project.write("client.pem", try credentials.clientCertificatePEM(topic: "com.example.shop"))
        var clientConfiguration = APNsClientConfiguration(
            host: "127.0.0.1",
            port: port,
            authentication: .certificate(path: client, password: nil),
            caFile: caFile,
            connections: 1
        )
        clientConfiguration.requestTimeout = .seconds(5)
        return (simulator, try APNsExchange(configuration: clientConfiguration), project)
    }

    static let list = APNsExchange.Request(method: "GET", path: "/1/apps/com.example.shop/all-channels")

    /// With a GOAWAY after every request, each request goes on a connection of its own and is
    /// answered: one at a time, and eight at once.
    @Test func aGoawayAfterEveryRequestCostsAConnectionNeverARequest() async throws {
        let (simulator, exchange, project) = try await Self.exchange { $0.goawayAfter = 1 }
        defer { project.remove() }
        for _ in 0..<5 {
            let response = try await exchange.send(Self.list)
            #expect(response.status == 200)
        }
        #expect(simulator.recorder.goaways == 5)
        #expect(simulator.recorder.connections >= 5)
        let statuses = await withTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    do {
                        return String(try await exchange.send(Self.list).status)
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: "200", count: 8), "\(statuses)")
        #expect(simulator.recorder.records.count == 13)
        await exchange.close()
        await simulator.stop()
    }

    /// A connection dropped with the request on it: `.unanswered` (the server may have it); the
    /// next request goes on a new connection.
    @Test func aRequestOnADroppedConnectionIsUnanswered() async throws {
        let (simulator, exchange, project) = try await Self.exchange { $0.dropAfter = 2 }
        defer { project.remove() }
        #expect(try await exchange.send(Self.list).status == 200)
        do {
            _ = try await exchange.send(Self.list)
            Issue.record("a request on a dropped connection was answered")
        } catch {
            #expect(error.code == .unanswered, "\(error)")
        }
        #expect(try await exchange.send(Self.list).status == 200)
        #expect(simulator.recorder.drops == 1)
        await exchange.close()
        await simulator.stop()
    }
}
