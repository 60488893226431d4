import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampSimulator
import ServiceLifecycle

/// `pushcamp rehearse`: the real send, against an in-process simulator with throwaway credentials.
///
/// Nothing leaves the machine: the simulator listens on 127.0.0.1, trusts a key made on the spot and
/// checks every request as APNs would; the campaign's own connections, rate and retries apply. The
/// run goes through the same factory as `send` (`SendRun`) and is recorded in a journal of its own
/// (`.pushcamp/rehearsal.sqlite` for the CLI), so `runs`, `report`, `cancel` and resume work after
/// it, while the project's journal — dead tokens, frequency caps — is only read, never written.
public struct Rehearsal: Sendable {
    public var campaign: LoadedCampaign
    /// Token behaviours for the simulator (unlisted tokens are delivered).
    public var tokens: [String: TokenBehaviour] = [:]
    public var adjust: @Sendable (inout SimulatorConfiguration) -> Void = { _ in }
    /// The clock provider tokens are minted by (tests give it a skew).
    public var clientClock: any WallClock = SystemWallClock()
    /// Where the rehearsal is recorded (a memory journal keeps nothing).
    public var journal: any Journal = MemoryJournal()
    /// The project's journal, read for dead tokens and frequency caps as a real send would.
    public var projectJournal: (any Journal)?
    public var stallTimeout: Double = 60

    public init(campaign: LoadedCampaign) {
        self.campaign = campaign
    }

    /// The Firebase project an Android app without a `project_id` rehearses in.
    static let fcmProject = "rehearsal"

    public struct Result: Sendable {
        public var report: SendReport
        public var recorder: SimulatorRecorder
    }

    /// A rehearsal ready to run: the simulator listening, the run opened.
    public struct Prepared: Sendable {
        public let simulator: APNsSimulator
        public let send: SendRun
        let directory: String

        /// The services to run in a `ServiceGroup`, in start order: the simulator, then the send.
        public var services: [any Service] { [simulator, send] }

        /// What the rehearsal's text report ends with: what the simulator saw, and where the run is kept.
        public var trailer: String {
            """
            simulator: \(simulator.recorder.connections) connection(s), at most \(simulator.recorder.maxOpenStreams) streams open at once
            recorded as rehearsal run \(send.run.id): `pushcamp runs --rehearsal`, `pushcamp report --rehearsal`

            """
        }

        /// Removes the throwaway credentials.
        public func cleanUp() {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Starts the simulator and opens the run. Throws `RunRefusal` when the run cannot start.
    public func prepare(progress: @escaping @Sendable (SendProgress) -> Void = { _ in }) async throws -> Prepared {
        let credentials = try SimulatorCredentials.generate()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushcamp-rehearsal-\(UUID().uuidString)").path
        let (caFile, _) = try credentials.write(to: directory)

        let teamID: String
        let keyID: String
        if case .token(let team, let key, _)? = campaign.app?.credentials {
            (teamID, keyID) = (team, key)
        } else {
            (teamID, keyID) = ("REHEARSAL1", "REHEARSAL1")
        }
        var configuration = SimulatorConfiguration(
            credentials: credentials,
            teamID: teamID,
            keyID: keyID,
            bundleID: campaign.app?.topic ?? "com.example.rehearsal"
        )
        configuration.tokens = tokens
        // An Android app rehearses against the simulator's FCM, with a throwaway service account.
        if let android = campaign.android {
            configuration.fcm = FCMSimulation(
                account: try FCMSimulation.generateAccount(
                    projectID: android.app.projectID ?? Self.fcmProject,
                    tokenURI: "https://127.0.0.1/token"
                )
            )
        }
        // An app that authenticates with a certificate rehearses with one: a throwaway client
        // certificate from the simulator's CA, over the same TLS set-up as the real send.
        let authentication: APNsClientConfiguration.Authentication
        if case .certificate? = campaign.app?.credentials, let app = campaign.app {
            let file = (directory as NSString).appendingPathComponent("client.pem")
            try credentials.clientCertificatePEM(topic: app.topic).write(
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
        let simulator = try APNsSimulator(configuration: configuration)
        let port = try await simulator.start()
        let endpoint = "https://127.0.0.1:\(port) (rehearsal simulator)"
        let loop = APNsConnectionPool.nextEventLoop()
        let apns = try APNsConnectionPool(
            configuration: APNsClientConfiguration(
                host: "127.0.0.1",
                port: port,
                authentication: authentication,
                caFile: caFile,
                connections: campaign.connections
            ),
            group: loop
        )
        var pool: any PushTransport = apns
        if let account = simulator.fcm?.account {
            let fcm = try SendRun.fcmPool(
                account: account,
                endpoint: "https://127.0.0.1:\(port)",
                caFile: caFile,
                connections: campaign.connections,
                clock: clientClock,
                group: loop
            )
            pool = campaign.app == nil ? fcm.pool : RoutedTransport(apns: apns, fcm: fcm.pool)
        }
        var options = SendRun.Options(journal: journal)
        options.kind = .rehearsal
        options.history = projectJournal
        options.stallTimeout = stallTimeout
        let send: SendRun
        do {
            send = try await SendRun.prepare(
                campaign,
                options: options,
                transport: .given(pool, endpoint: endpoint),
                progress: progress
            )
        } catch {
            await simulator.stop()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        return Prepared(simulator: simulator, send: send, directory: directory)
    }

    /// Starts the simulator, sends, stops it.
    public func run(progress: @escaping @Sendable (SendProgress) -> Void = { _ in }) async throws -> Result {
        let prepared = try await prepare(progress: progress)
        defer { prepared.cleanUp() }
        let report = await prepared.send.send()
        await prepared.simulator.stop()
        return Result(report: report, recorder: prepared.simulator.recorder)
    }
}
