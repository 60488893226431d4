import Foundation
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampSimulator

extension Rehearsal {
    /// A broadcast campaign rehearsed: its one request sent to an in-process simulator, on a
    /// channel created there for the rehearsal, recorded in the rehearsal journal.
    public struct BroadcastResult: Sendable {
        public var outcome: BroadcastRun.Outcome
        public var recorder: SimulatorRecorder
    }

    /// Rehearses a broadcast campaign: a throwaway simulator and credentials, the campaign's
    /// channel created on it (its id recorded in the rehearsal journal, replacing an earlier
    /// rehearsal's), then the broadcast sent as `send` sends it. Throws `RunRefusal`, or the
    /// channel's creation failure.
    public func broadcast(paths: ProjectPaths) async throws -> BroadcastResult {
        guard let target = campaign.broadcast else { throw RunRefusal(.refused, "not a broadcast campaign") }
        let credentials = try SimulatorCredentials.generate()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushcamp-rehearsal-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (caFile, keyFile) = try credentials.write(to: directory)
        let (teamID, keyID) = ("REHEARSAL1", "REHEARSAL1")
        var configuration = SimulatorConfiguration(
            credentials: credentials,
            teamID: teamID,
            keyID: keyID,
            bundleID: target.app.topic
        )
        adjust(&configuration)
        let simulator = try APNsSimulator(configuration: configuration)
        let port = try await simulator.start()
        // Stopped before returning, whatever happened: awaited, not left to a task of its own.
        do {
            let result = try await broadcast(
                target,
                to: simulator,
                port: port,
                credentials: (caFile, keyFile, teamID, keyID),
                paths: paths
            )
            await simulator.stop()
            return result
        } catch {
            await simulator.stop()
            throw error
        }
    }

    /// The broadcast campaign `target` belongs to, sent to `simulator` listening on `port`.
    private func broadcast(
        _ target: BroadcastTarget,
        to simulator: APNsSimulator,
        port: Int,
        credentials: (caFile: String, keyFile: String, teamID: String, keyID: String),
        paths: ProjectPaths
    ) async throws -> BroadcastResult {
        let (caFile, keyFile, teamID, keyID) = credentials
        // The campaign as it would go, pointed at the simulator with its credentials.
        var rehearsed = campaign
        var app = target.app
        app.endpoint = "https://127.0.0.1:\(port)"
        app.broadcastEndpointOverride = nil
        app.channelsEndpointOverride = nil
        app.caFile = try ConfigString.parse(caFile).get()
        app.credentials = .token(teamID: teamID, keyID: keyID, keyFile: try ConfigString.parse(keyFile).get())
        rehearsed.app = app
        rehearsed.broadcast?.app = app

        let client = try await ChannelClient.make(
            app: app,
            environment: target.channel.environment,
            paths: paths,
            variables: [:],
            tokenCache: nil,
            journal: journal
        )
        let id = try await client.create(storage: target.channel.storage)
        await client.close()
        let now = clientClock.now()
        _ = try await journal.retireChannel(named: target.channel.name, channelID: nil, now: now)
        _ = try await journal.recordChannel(
            ChannelRecord(
                name: target.channel.name,
                bundleID: target.app.topic,
                environment: target.channel.environment.rawValue,
                channelID: id,
                storagePolicy: target.channel.storage.policy,
                createdAt: now
            )
        )
        var options = SendRun.Options(journal: journal)
        options.kind = .rehearsal
        let outcome = try await BroadcastRun.send(rehearsed, options: options, paths: paths, variables: [:])
        return BroadcastResult(outcome: outcome, recorder: simulator.recorder)
    }
}
