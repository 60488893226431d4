import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import ServiceLifecycle

/// Sends a broadcast campaign: one request, journaled like any run, retried as carefully as a
/// device push. The campaign's lease keeps a second process from sending it at the same time (it
/// is renewed while the request waits to go again); a finished campaign is refused as any is.
///
/// The request is recorded in flight before each attempt. An answer of 429 or 5xx, an answer that
/// never came (the connection was lost with the request on it) and a connection that could not be
/// made send it again after a back-off (`ExchangeRetry`: the campaign's `retry:`, the server's
/// `retry-after`), recorded as waiting, never past the message's expiration. A run resumed with
/// the request in flight sends it again unless `retry.resend_unknown: false`. Every attempt that
/// may have reached APNs before is counted and listed as a possible duplicate: harmless for a
/// Live Activity, whose device orders updates by `aps.timestamp` and ignores one it has shown.
public enum BroadcastRun {
    /// What the send did.
    public struct Outcome: Sendable {
        public var run: RunID
        public var message: BroadcastMessage
        /// APNs' status, when it answered.
        public var status: Int?
        /// The reason of a final failure (APNs' reason, `connection-lost`, `cannot-connect`…), or
        /// `unknown-not-resent`.
        public var reason: String?
        /// Why no more attempts went, for a failure.
        public var detail: String?
        /// Seconds from sending to the last answer.
        public var latency: Double?
        /// Requests sent by this process (1 unless retried).
        public var attempts = 0
        /// Attempts that may have reached APNs before an attempt of the same request.
        public var possibleDuplicates = 0
        /// A note for people (a resumed run, a request whose fate was unknown).
        public var note: String?
        /// The send stopped before the request settled (a lost lease, a shutdown): the run is left
        /// unfinished, for whoever resumes it.
        public var stopped: String?

        public var delivered: Bool { status == 200 }

        /// `run N of CAMPAIGN: broadcast to channel NAME (ID): ANSWER`, what `send` says of it.
        public func line(campaign: String) -> String {
            "run \(run) of \(campaign): broadcast to channel \(message.channel.name) (\(message.channelID ?? "")): \(answer)"
        }

        /// The outcome in words: `200 …`, or the status and reason and why it was not sent again,
        /// with the attempts and possible duplicates when there were several.
        public var answer: String {
            var text =
                delivered
                ? "200: APNs took it for every device on the channel"
                : "\(status.map(String.init) ?? "no answer") \(reason ?? "")" + (detail.map { " (\($0))" } ?? "")
            if attempts > 1, detail == nil { text += "; \(attempts) attempts" }
            if possibleDuplicates > 0 {
                text +=
                    ", \(possibleDuplicates) possible duplicate\(possibleDuplicates == 1 ? "" : "s") (sent again with no answer to the one before)"
            }
            return text
        }
    }

    /// Sends `campaign` (a broadcast campaign) once, recording into `options.journal`; back-offs
    /// wait on `clock`.
    public static func send(
        _ campaign: LoadedCampaign,
        options: SendRun.Options,
        paths: ProjectPaths,
        variables: [String: String],
        clock: any WallClock = SystemWallClock(),
        willSend: @Sendable (RunID, BroadcastMessage) -> Void = { _, _ in }
    ) async throws(RunRefusal) -> Outcome {
        // Checked before anything is claimed or recorded: a broadcast that cannot go is refused
        // with nothing in the journal (a slot is then recorded as skipped, not taken over).
        _ = try await checked(campaign, journal: options.journal, now: clock.now(), run: nil)
        let opened = try await OpenedRun.open(campaign, options: options, now: clock.now(), clock: clock)
        let lease = opened.lease
        let sender = Sender(
            campaign: campaign,
            run: opened.journal.run,
            store: options.journal,
            lease: lease,
            clock: clock
        )
        let result: Result<Outcome, RunRefusal> = await withTaskGroup(of: Void.self) { group in
            // The lease is renewed beside the send, in this group, until the send returns.
            group.addTask { await lease.keepRenewed() }
            defer { group.cancelAll() }
            do {
                return .success(
                    try await sender.send(
                        note: opened.note,
                        paths: paths,
                        variables: variables,
                        tokenCache: options.tokenCache,
                        willSend: willSend
                    )
                )
            } catch let refusal as RunRefusal {
                return .failure(refusal)
            } catch let error as JournalError {
                return .failure(RunRefusal(.journal, "the journal: \(error.message)"))
            } catch {
                return .failure(RunRefusal(.journal, "\(error)"))
            }
        }
        await lease.release()
        return try result.get()
    }

    /// The request for `campaign` at `now`, or a refusal naming every problem.
    static func checked(
        _ campaign: LoadedCampaign,
        journal: any Journal,
        now: Double,
        run: RunID?
    ) async throws(RunRefusal) -> BroadcastMessage {
        let (built, diagnostics): (BroadcastMessage?, [Diagnostic])
        do {
            (built, diagnostics) = try await BroadcastMessage.planned(campaign, journal: journal, now: now, run: run)
        } catch {
            throw RunRefusal(.journal, "the journal: \(error.message); nothing was sent")
        }
        guard let built, !diagnostics.hasErrors else {
            throw RunRefusal(
                .refused,
                diagnostics.filter { $0.severity == .error }.map(\.description).joined(separator: "\n")
                    + "\nnothing was sent"
            )
        }
        guard built.channelID != nil else {
            throw RunRefusal(
                .refused,
                "\(campaign.broadcast!.location): error: channel '\(built.channel.name)' is not created yet: run `pushcamp channels apply` first; nothing was sent"
            )
        }
        return built
    }

    /// One broadcast run's sending: its attempts, each recorded before it goes.
    private struct Sender {
        var campaign: LoadedCampaign
        var run: RunRecord
        var store: any Journal
        var lease: SendLease
        var clock: any WallClock

        func send(
            note: String?,
            paths: ProjectPaths,
            variables: [String: String],
            tokenCache: String?,
            willSend: @Sendable (RunID, BroadcastMessage) -> Void
        ) async throws -> Outcome {
            let message = try await checked(campaign, journal: store, now: clock.now(), run: run.id)
            let channelID = message.channelID!
            var outcome = Outcome(run: run.id, message: message, note: note)
            var attempt = 1
            var duplicate = false
            var startAt: Double?
            // A resumed run: where the request was when its sender stopped.
            if let earlier = try await store.recipients(of: run.id, after: -1, limit: 1).first {
                switch earlier.state {
                case .delivered, .failed:
                    try await record(close: RunClose(status: .finished, planned: 1))
                    outcome.note = "run \(run.id) was done"
                    return outcome
                case .inFlight(let previous), .unknown(let previous):
                    guard campaign.retry.resendUnknown else {
                        let reason = ExecutorStateMachine.notResent
                        try await settle(.failed(status: nil, reason: reason, apnsTimestamp: nil), channelID, message)
                        outcome.reason = reason
                        outcome.note =
                            "run \(run.id) was stopped with the broadcast in flight: APNs may have it, and retry.resend_unknown is false, so it is not sent again"
                        return outcome
                    }
                    attempt = previous + 1
                    duplicate = true
                case .waiting(let until, let previous):
                    attempt = previous
                    startAt = until
                case .planned:
                    break
                }
            }
            let exchange: APNsExchange
            do {
                exchange = try await SendRun.exchange(
                    app: campaign.broadcast!.app,
                    endpoint: message.endpoint,
                    paths: paths,
                    variables: variables,
                    tokenCache: tokenCache,
                    journal: store
                )
                if startAt == nil { try await exchange.connect() }
            } catch {
                // Connected before anything is recorded: a send that cannot connect is not in flight.
                try await store.setStatus(.interrupted, of: run.id, now: clock.now())
                throw RunRefusal(.credentials, "\(campaign.path): error: \(error.message); nothing was sent")
            }
            if startAt == nil && attempt == 1 { try await store.setPlanned(1, of: run.id) }
            do {
                outcome = try await attempts(
                    from: attempt,
                    at: startAt,
                    duplicate: duplicate,
                    exchange: exchange,
                    message: message,
                    outcome: outcome,
                    willSend: willSend
                )
            } catch {
                await exchange.close()
                throw error
            }
            await exchange.close()
            return outcome
        }

        /// Sends the request until it settles, starting with attempt `first` (at `startAt`, when
        /// it waits), `duplicate` when APNs may have had an attempt before it.
        private func attempts(
            from first: Int,
            at startAt: Double?,
            duplicate: Bool,
            exchange: APNsExchange,
            message: BroadcastMessage,
            outcome: Outcome,
            willSend: @Sendable (RunID, BroadcastMessage) -> Void
        ) async throws -> Outcome {
            var outcome = outcome
            let channelID = message.channelID!
            var retry = ExchangeRetry(
                policy: RetryPolicy(campaign.retry),
                deadline: message.expiration > 0 ? Double(message.expiration) : nil,
                attempts: first - 1
            )
            var stats = RunStats()
            var attempt = first
            var duplicate = duplicate
            var startAt = startAt
            while true {
                if let startAt {
                    // A graceful shutdown (serve's SIGTERM) ends the wait, not a request on the wire:
                    // the broadcast is recorded waiting, and goes at its time when resumed.
                    let clock = self.clock
                    do {
                        try await cancelWhenGracefulShutdown { try await clock.sleep(until: startAt) }
                    } catch {
                        return try await stop(outcome, "the send was stopped while the broadcast waited to go again")
                    }
                }
                if let problem = lease.problem() { return try await stop(outcome, problem) }
                try await store.record(
                    JournalBatch(
                        updates: [RecipientUpdate(seq: 0, token: channelID, state: .inFlight(attempt: attempt))],
                        possibleDuplicates: duplicate ? 1 : 0,
                        duplicates: duplicate ? [PossibleDuplicate(seq: 0, token: channelID)] : [],
                        lease: lease.lease
                    ),
                    run: run.id,
                    now: clock.now()
                )
                if duplicate { outcome.possibleDuplicates += 1 }
                if outcome.attempts == 0 { willSend(run.id, message) }
                outcome.attempts += 1
                let started = ContinuousClock.now
                let answer: Result<APNsExchange.Response, APNsClientError>
                do {
                    answer = .success(
                        try await exchange.send(
                            APNsExchange.Request(
                                method: "POST",
                                path: message.path,
                                headers: message.headers,
                                body: message.payload
                            )
                        )
                    )
                } catch {
                    answer = .failure(error)
                }
                let tried: ExchangeRetry.Attempt
                switch answer {
                case .success(let response):
                    outcome.latency = (ContinuousClock.now - started) / .seconds(1)
                    stats.latency.record(nanoseconds: Int64(outcome.latency! * 1e9))
                    outcome.status = response.status
                    if response.status == 200 {
                        outcome.reason = nil
                        try await settle(.delivered(attempt: attempt), channelID, message, stats: stats)
                        return outcome
                    }
                    outcome.reason = response.reason.map { "\($0)" } ?? "HTTP \(response.status)"
                    tried = .answered(
                        status: response.status,
                        reason: response.reason,
                        retryAfter: response.retryAfter(now: clock.now())
                    )
                case .failure(let error) where error.code == .shutdown:
                    return try await stop(outcome, "the send was stopped with the broadcast in flight")
                case .failure(let error):
                    outcome.status = nil
                    outcome.reason = error.code == .unanswered ? "connection-lost" : "cannot-connect"
                    tried = error.code == .unanswered ? .unanswered(timedOut: false) : .notSent
                }
                switch retry.decide(tried, now: clock.now(), random: Double.random(in: 0..<1)) {
                case .retry(let after, let cause, let maybeDuplicate):
                    stats.retries[cause, default: 0] += 1
                    let until = clock.now() + after
                    // Waiting, not in flight: a run resumed meanwhile sends it at `until`, not as
                    // a possible duplicate (unless this attempt may have reached APNs).
                    try await store.record(
                        JournalBatch(
                            updates: [
                                RecipientUpdate(
                                    seq: 0,
                                    token: channelID,
                                    state: maybeDuplicate
                                        ? .unknown(attempt: attempt) : .waiting(until: until, attempt: attempt + 1)
                                )
                            ],
                            lease: lease.lease
                        ),
                        run: run.id,
                        now: clock.now()
                    )
                    attempt += 1
                    duplicate = maybeDuplicate
                    startAt = until
                case .fail(let reason, let detail):
                    outcome.reason = reason
                    outcome.detail = detail
                    let state = RecipientState.failed(status: outcome.status, reason: reason, apnsTimestamp: nil)
                    try await settle(state, channelID, message, stats: stats)
                    return outcome
                }
            }
        }

        /// Stops without settling: the run stays unfinished (interrupted), for a resume or the
        /// node that takes it over.
        private func stop(_ outcome: Outcome, _ why: String) async throws -> Outcome {
            var outcome = outcome
            outcome.stopped = why
            if lease.problem() == nil { try? await store.setStatus(.interrupted, of: run.id, now: clock.now()) }
            return outcome
        }

        private func record(close: RunClose) async throws {
            try await store.record(JournalBatch(lease: lease.lease, close: close), run: run.id, now: clock.now())
        }

        /// Records the request's final state and closes the run, in one transaction.
        private func settle(
            _ state: RecipientState,
            _ channelID: String,
            _ message: BroadcastMessage,
            stats: RunStats = RunStats()
        ) async throws {
            var stats = stats
            stats.connectionsOpened = stats.latency.count > 0 ? 1 : 0
            stats.sent = SentFacts(
                app: campaign.appLabel,
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
                    lease: lease.lease,
                    close: RunClose(status: .finished, planned: 1)
                ),
                run: run.id,
                now: clock.now()
            )
        }
    }
}
