import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner

/// Sends a broadcast campaign: one request, journaled like any run. The campaign's lease keeps a
/// second process from sending it at the same time; a finished campaign is refused as any is; the
/// request is recorded in flight before it goes, so a run killed before APNs' answer was recorded
/// is never sent again when resumed (APNs may have it): it ends `unknown-not-resent`.
public enum BroadcastRun {
    /// What the send did.
    public struct Outcome: Sendable {
        public var run: RunID
        public var message: BroadcastMessage
        /// APNs' status, when it answered.
        public var status: Int?
        /// The reason of a refusal, or `unknown-not-resent`.
        public var reason: String?
        /// Seconds from sending to the answer.
        public var latency: Double?
        /// A note for people (a resumed run, a request whose fate was unknown).
        public var note: String?

        public var delivered: Bool { status == 200 }
    }

    /// The channel's recorded id and the request, for `campaign` at `now`.
    public static func message(
        _ campaign: LoadedCampaign,
        journal: any Journal,
        now: Double,
        run: RunID? = nil
    ) async throws(JournalError) -> (BroadcastMessage?, [Diagnostic]) {
        guard let target = campaign.broadcast else { return (nil, []) }
        let recorded = try await journal.channels().first { $0.name == target.channel.name }
        let namespace = UUIDv5.runNamespace(campaign: campaign.id, revision: campaign.revision)
        let requestID = UUIDv5.make(namespace: namespace, name: "broadcast-\(run?.rawValue ?? 0)").description
        return BroadcastMessage.make(campaign, channelID: recorded?.channelID, now: now, requestID: requestID)
    }

    /// Sends `campaign` (a broadcast campaign) once, recording into `options.journal`.
    public static func send(
        _ campaign: LoadedCampaign,
        options: SendRun.Options,
        paths: ProjectPaths,
        variables: [String: String],
        willSend: @Sendable (RunID, BroadcastMessage) -> Void = { _, _ in }
    ) async throws(RunRefusal) -> Outcome {
        let now = Date().timeIntervalSince1970
        // Checked before anything is claimed or recorded: a broadcast that cannot go is refused
        // with nothing in the journal (a slot is then recorded as skipped, not taken over).
        let (checked, diagnostics): (BroadcastMessage?, [Diagnostic])
        do {
            (checked, diagnostics) = try await message(campaign, journal: options.journal, now: now)
        } catch {
            throw RunRefusal(.journal, "the journal: \(error.message); nothing was sent")
        }
        if diagnostics.hasErrors {
            throw RunRefusal(
                .refused,
                diagnostics.filter { $0.severity == .error }.map(\.description).joined(separator: "\n")
                    + "\nnothing was sent"
            )
        }
        if let target = campaign.broadcast, checked?.channelID == nil {
            throw RunRefusal(
                .refused,
                "\(target.location): error: channel '\(target.channel.name)' is not created yet: run `pushcamp channels apply` first; nothing was sent"
            )
        }
        let opened = try await OpenedRun.open(campaign, options: options, now: now)
        let store = options.journal
        let run = opened.journal.run
        let lease = opened.lease
        defer { Task { await lease.release() } }
        do {
            return try await send(
                campaign,
                run: run,
                store: store,
                lease: lease.lease,
                note: opened.note,
                paths: paths,
                variables: variables,
                tokenCache: options.tokenCache,
                willSend: willSend
            )
        } catch let refusal as RunRefusal {
            throw refusal
        } catch let error as JournalError {
            throw RunRefusal(.journal, "the journal: \(error.message)")
        } catch {
            throw RunRefusal(.journal, "\(error)")
        }
    }

    private static func send(
        _ campaign: LoadedCampaign,
        run: RunRecord,
        store: any Journal,
        lease: Lease,
        note: String?,
        paths: ProjectPaths,
        variables: [String: String],
        tokenCache: String?,
        willSend: @Sendable (RunID, BroadcastMessage) -> Void
    ) async throws -> Outcome {
        let now = Date().timeIntervalSince1970
        let (built, diagnostics) = try await message(campaign, journal: store, now: now, run: run.id)
        guard var message = built, !diagnostics.hasErrors else {
            throw RunRefusal(
                .refused,
                diagnostics.filter { $0.severity == .error }.map(\.description).joined(separator: "\n")
                    + "\nnothing was sent"
            )
        }
        guard let channelID = message.channelID else {
            throw RunRefusal(
                .refused,
                "\(campaign.broadcast!.location): error: channel '\(message.channel.name)' is not created yet: run `pushcamp channels apply` first; nothing was sent"
            )
        }
        // A run resumed after a crash: the request may have reached APNs already.
        if let earlier = try await store.recipients(of: run.id, after: -1, limit: 1).first {
            switch earlier.state {
            case .inFlight, .unknown:
                try await settle(
                    run,
                    store: store,
                    lease: lease,
                    state: .failed(status: nil, reason: ExecutorStateMachine.notResent, apnsTimestamp: nil),
                    channelID: channelID,
                    campaign: campaign,
                    message: message,
                    latency: nil
                )
                return Outcome(
                    run: run.id,
                    message: message,
                    status: nil,
                    reason: ExecutorStateMachine.notResent,
                    note:
                        "run \(run.id) was stopped with the broadcast in flight: APNs may have it, so it is not sent again"
                )
            case .delivered, .failed:
                try await store.record(
                    JournalBatch(lease: lease, close: RunClose(status: .finished, planned: 1)),
                    run: run.id,
                    now: now
                )
                return Outcome(run: run.id, message: message, status: nil, reason: nil, note: "run \(run.id) was done")
            case .planned, .waiting:
                break
            }
        }
        let exchange: APNsExchange
        do {
            exchange = try await SendRun.exchange(
                app: campaign.app,
                endpoint: message.endpoint,
                paths: paths,
                variables: variables,
                tokenCache: tokenCache,
                journal: store
            )
            // Connected before anything is recorded: a send that cannot connect is not in flight.
            try await exchange.connect()
        } catch {
            try await store.setStatus(.interrupted, of: run.id, now: Date().timeIntervalSince1970)
            throw RunRefusal(.credentials, "\(campaign.path): error: \(error.message); nothing was sent")
        }
        defer { Task { await exchange.close() } }
        message.channelID = channelID
        try await store.setPlanned(1, of: run.id)
        try await store.record(
            JournalBatch(
                updates: [RecipientUpdate(seq: 0, token: channelID, state: .inFlight(attempt: 1))],
                lease: lease
            ),
            run: run.id,
            now: Date().timeIntervalSince1970
        )
        willSend(run.id, message)
        let started = ContinuousClock.now
        let state: RecipientState
        var status: Int?
        var reason: String?
        do {
            let response = try await exchange.send(
                APNsExchange.Request(
                    method: "POST",
                    path: message.path,
                    headers: message.headers,
                    body: message.payload
                )
            )
            status = response.status
            if response.status == 200 {
                state = .delivered(attempt: 1)
            } else {
                reason = response.reason.map { "\($0)" } ?? "HTTP \(response.status)"
                state = .failed(status: response.status, reason: reason!, apnsTimestamp: nil)
            }
        } catch {
            // Sent, no answer: APNs may have it. Not sent again.
            reason = ExecutorStateMachine.notResent
            state = .failed(status: nil, reason: reason!, apnsTimestamp: nil)
        }
        let latency = (ContinuousClock.now - started) / .seconds(1)
        try await settle(
            run,
            store: store,
            lease: lease,
            state: state,
            channelID: channelID,
            campaign: campaign,
            message: message,
            latency: latency
        )
        return Outcome(run: run.id, message: message, status: status, reason: reason, latency: latency, note: note)
    }

    /// Records the request's final state and closes the run, in one transaction.
    private static func settle(
        _ run: RunRecord,
        store: any Journal,
        lease: Lease,
        state: RecipientState,
        channelID: String,
        campaign: LoadedCampaign,
        message: BroadcastMessage,
        latency: Double?
    ) async throws {
        var stats = RunStats()
        if let latency {
            stats.latency.record(nanoseconds: Int64(latency * 1e9))
            stats.connectionsOpened = 1
        }
        stats.sent = SentFacts(
            app: campaign.app.name,
            topic: "channel \(message.channel.name)",
            environment: message.channel.environment.rawValue,
            endpoint: message.endpoint,
            rate: "1 request",
            connections: 1
        )
        try await store.record(
            JournalBatch(
                updates: [RecipientUpdate(seq: 0, token: channelID, state: state)],
                stats: stats,
                lease: lease,
                close: RunClose(status: .finished, planned: 1)
            ),
            run: run.id,
            now: Date().timeIntervalSince1970
        )
    }
}
