import Foundation
import PushcampAPNs
import PushcampModel
import PushcampPlanner
import PushcampSimulator

/// `pushcamp rehearse`: the real send, against an in-process simulator with throwaway credentials.
///
/// Nothing leaves the machine: the simulator listens on 127.0.0.1, trusts a key made on the spot and
/// checks every request as APNs would; the campaign's own connections, rate and retries apply.
public struct Rehearsal {
    public var campaign: LoadedCampaign
    /// Token behaviours for the simulator (unlisted tokens are delivered).
    public var tokens: [String: TokenBehaviour] = [:]
    public var adjust: @Sendable (inout SimulatorConfiguration) -> Void = { _ in }
    /// The clock provider tokens are minted by (tests give it a skew).
    public var clientClock: any WallClock = SystemWallClock()

    public init(campaign: LoadedCampaign) {
        self.campaign = campaign
    }

    public struct Result: Sendable {
        public var report: SendReport
        public var recorder: SimulatorRecorder
    }

    /// Starts the simulator, sends, stops it. `started` gets the executor (for Ctrl-C).
    public func run(
        started: @Sendable (Executor) -> Void = { _ in },
        progress: @escaping @Sendable (SendProgress) -> Void = { _ in }
    ) async throws -> Result {
        let credentials = try SimulatorCredentials.generate()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushcamp-rehearsal-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (caFile, _) = try credentials.write(to: directory)

        let teamID: String
        let keyID: String
        if case .token(let team, let key, _) = campaign.app.credentials {
            (teamID, keyID) = (team, key)
        } else {
            (teamID, keyID) = ("REHEARSAL1", "REHEARSAL1")
        }
        var configuration = SimulatorConfiguration(
            credentials: credentials,
            teamID: teamID,
            keyID: keyID,
            bundleID: campaign.app.topic
        )
        configuration.tokens = tokens
        // An app that authenticates with a certificate rehearses with one: a throwaway client
        // certificate from the simulator's CA, over the same TLS set-up as the real send.
        let authentication: APNsClientConfiguration.Authentication
        if case .certificate = campaign.app.credentials {
            let file = (directory as NSString).appendingPathComponent("client.pem")
            try credentials.clientCertificatePEM(topic: campaign.app.topic).write(
                toFile: file,
                atomically: true,
                encoding: .utf8
            )
            configuration.acceptsClientCertificates = true
            authentication = .certificate(path: file, password: nil)
        } else {
            authentication = .providerToken(
                ProviderTokens(teamID: teamID, keyID: keyID, key: credentials.signingKey, clock: clientClock)
            )
        }
        adjust(&configuration)
        let simulator = APNsSimulator(configuration: configuration)
        let port = try await simulator.start()
        let endpoint = "https://127.0.0.1:\(port) (rehearsal simulator)"
        let pool = try APNsConnectionPool(
            configuration: APNsClientConfiguration(
                host: "127.0.0.1",
                port: port,
                authentication: authentication,
                caFile: caFile,
                connections: campaign.connections
            )
        )
        let executor = SendPipeline.executor(campaign: campaign, transport: pool, endpoint: endpoint)
        started(executor)
        let report = await executor.run(progress: progress)
        await simulator.stop()
        return Result(report: report, recorder: simulator.recorder)
    }
}
