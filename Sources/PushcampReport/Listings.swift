import Foundation
import PushcampJournal
import PushcampModel

/// `pushcamp runs`: the journal's runs, newest first, with their recipients' counts and, for runs
/// cut into slices, their slices and (while running) each worker's rate. Text and JSON.
public struct RunListing: Sendable {
    public struct Row: Sendable {
        public var run: RunRecord
        public var counts: RecipientCounts
        public var slices: RunReport.Slices?
        /// How many the run sends to, once known: counted ahead of the send in its first seconds
        /// (from the first second for a test, whose assignment was kept before its first push),
        /// exact once its plan was read to the end. Nil while unknown.
        public var planned: Int?
        /// Final failures by reason (APNs' or FCM's), most first.
        public var failures: [(reason: String, count: Int)] = []
        /// Final answers per minute (wider buckets for a long run), from the run's statistics.
        public var answers: AnswerSeries

        public init(
            run: RunRecord,
            counts: RecipientCounts,
            slices: RunReport.Slices? = nil,
            planned: Int? = nil,
            failures: [(reason: String, count: Int)] = [],
            answers: AnswerSeries = AnswerSeries()
        ) {
            self.run = run
            self.counts = counts
            self.slices = slices
            self.planned = planned ?? run.planned
            self.failures = failures
            self.answers = answers
        }

        /// The run's answers over its last `Charts.sparkBuckets` buckets as a small bar chart
        /// (inline SVG, sized by the page's style sheet); empty before its first answer.
        public var chart: String { Charts.sparkline(answers.counts, width: answers.width) }

        /// "Unregistered 10, BadDeviceToken 2": why the run's failures failed.
        public var failureText: String { RunListing.failureText(failures) }

        /// Recipients with an answer: delivered or failed.
        public var answered: Int { counts.delivered + counts.failed }

        /// Answered of planned, 0 to 100, rounded down (100 only when every one has an answer).
        public var percent: Int? {
            planned.map { $0 > 0 ? min(100, answered * 100 / $0) : 100 }
        }

        /// Answers per second since the run started, while it is being sent.
        public var perSecond: Double? {
            let seconds = run.updatedAt - run.startedAt
            guard run.status == .running, seconds >= 1, answered > 0 else { return nil }
            return Double(answered) / seconds
        }

        /// Seconds until every planned recipient has an answer at the rate so far.
        public var etaSeconds: Int? {
            guard let planned, let perSecond else { return nil }
            return Int((Double(max(0, planned - answered)) / perSecond).rounded(.up))
        }

        /// "43 of 600" (planned known), "43 of ?" (not yet).
        public var progress: String {
            "\(answered) of " + (planned.map(String.init) ?? "?")
        }
    }

    public var rows: [Row]

    public init(rows: [Row]) {
        self.rows = rows
    }

    /// The newest `limit` runs of `journal`, a running run's liveness checked.
    public static func read(from journal: any Journal, limit: Int) async throws -> RunListing {
        var rows: [Row] = []
        for run in try await journal.runs(limit: limit) {
            let checked = await run.livenessChecked(journal)
            let stats = try await journal.stats(of: run.id)
            rows.append(
                Row(
                    run: checked,
                    counts: try await journal.keptCounts(of: run.id, stats: stats),
                    // Each worker's rate, for runs being sent: that reads every slice's statistics.
                    slices: try await RunReport.slices(of: run.id, in: journal, workers: checked.status == .running),
                    planned: try await total(of: run, stats: stats, in: journal),
                    failures: Self.failures(in: stats),
                    answers: stats?.answers ?? AnswerSeries()
                )
            )
        }
        return RunListing(rows: rows)
    }

    /// The total of a run: its plan's, or the count its send made ahead of the wire (from the
    /// first seconds); else from the assignment a test kept before its first push (everyone
    /// assigned to a variant); nil when none is known yet.
    static func total(of run: RunRecord, stats: RunStats?, in journal: any Journal) async throws -> Int? {
        if let total = run.total(stats: stats) { return total }
        guard let tally = try await journal.assignmentHeader(of: run.id)?.tally else { return nil }
        return tally.filter { $0.variant != nil }.reduce(0) { $0 + $1.recipients }
    }

    /// "Unregistered 10, BadDeviceToken 2".
    public static func failureText(_ failures: [(reason: String, count: Int)]) -> String {
        failures.map { "\($0.reason) \($0.count)" }.joined(separator: ", ")
    }

    /// Final failures by reason from a run's statistics (every platform's answers), most first.
    public static func failures(in stats: RunStats?) -> [(reason: String, count: Int)] {
        var byReason: [String: Int] = [:]
        for readout in (stats?.platforms ?? [:]).values { byReason.merge(readout.failed, uniquingKeysWith: +) }
        return byReason.map { ($0.key, $0.value) }.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
    }

    public func text() -> String {
        guard !rows.isEmpty else { return "no runs yet\n" }
        var lines = [
            [
                "RUN", "CAMPAIGN", "STATUS", "STARTED", "SENT", "DELIVERED", "FAILED", "PENDING", "PLANNED", "DONE",
                "SLICES",
            ]
        ]
        for row in rows {
            let (run, counts) = (row.run, row.counts)
            lines.append([
                "\(run.id)",
                run.campaign + (run.replay.map { " (replay of \($0.run))" } ?? "")
                    + (run.slot.map { " (slot \(Timestamps.text(Double($0))))" } ?? ""),
                run.status.rawValue,
                Timestamps.text(run.startedAt),
                "\(counts.total - counts.planned)", "\(counts.delivered)", "\(counts.failed)",
                "\(counts.waiting + counts.unknown + counts.inFlight)", row.planned.map { "\($0)" } ?? "-",
                row.percent.map { "\($0)%" } ?? "-",
                row.slices.map { "\($0.done)/\($0.total)" + ($0.leased > 0 ? " (\($0.leased) held)" : "") } ?? "-",
            ])
        }
        // Names left-aligned, numbers right-aligned.
        var table = TextColumns.render(lines, rightAlignedFrom: 4)
        // Who sends the runs cut into slices, and how fast.
        for row in rows where !(row.slices?.workers.isEmpty ?? true) {
            table +=
                "run \(row.run.id): "
                + (row.slices?.workers ?? []).map { worker in
                    "\(worker.owner) \(worker.slices) slice\(worker.slices == 1 ? "" : "s") "
                        + String(format: "%.0f/s", worker.perSecond)
                }.joined(separator: " · ") + "\n"
        }
        return table
    }

    public func json() -> String {
        JSONValue.array(
            rows.map { row in
                let (run, counts) = (row.run, row.counts)
                return .members([
                    ("run", .integer(Int(run.id.rawValue))), ("campaign", .string(run.campaign)),
                    ("revision", .string(run.revision)), ("status", .string(run.status.rawValue)),
                    ("started_at", .string(Timestamps.iso(run.startedAt))),
                    ("updated_at", .string(Timestamps.iso(run.updatedAt))),
                    ("sent", .integer(counts.total - counts.planned)), ("delivered", .integer(counts.delivered)),
                    ("failed", .integer(counts.failed)),
                    (
                        "failed_by_reason",
                        .object(row.failures.map { ($0.reason, JSONValue.integer($0.count)) })
                    ),
                    ("waiting", .integer(counts.waiting)),
                    ("in_flight", .integer(counts.inFlight + counts.unknown)),
                    ("possible_duplicates", .integer(run.possibleDuplicates)),
                    ("planned", row.planned.map { .integer($0) }),
                    ("percent", row.percent.map { .integer($0) }),
                    ("per_second", row.perSecond.map { .number(RunReport.rounded($0)) }),
                    ("eta_seconds", row.etaSeconds.map { .integer($0) }),
                    (
                        "answers_over_time",
                        row.answers.start.map { start in
                            .members([
                                ("start", .string(Timestamps.iso(Double(start)))),
                                ("bucket_seconds", .integer(Int(row.answers.width))),
                                ("counts", .array(row.answers.counts.map { .integer($0) })),
                            ])
                        } ?? .null
                    ),
                    (
                        "slices",
                        row.slices.map { slices in
                            .members([
                                ("total", .integer(slices.total)), ("done", .integer(slices.done)),
                                ("held", .integer(slices.leased)), ("free", .integer(slices.free)),
                                (
                                    "workers",
                                    .array(
                                        slices.workers.map {
                                            .members([
                                                ("owner", .string($0.owner)), ("slices", .integer($0.slices)),
                                                ("per_second", .number(RunReport.rounded($0.perSecond))),
                                            ])
                                        }
                                    )
                                ),
                            ])
                        } ?? .null
                    ),
                    ("slot", run.slot.map { .string(Timestamps.iso(Double($0))) }),
                    ("replay_of", run.replay.map { .integer(Int($0.run.rawValue)) }),
                    ("replay_reasons", run.replay.map { .array($0.reasons.map { .string($0) }) }),
                ])
            }
        ).text
    }
}

/// `pushcamp appstore notifications`: what `serve` received, newest first.
public struct NotificationListing: Sendable {
    public var records: [AppStoreNotificationRecord]

    public init(records: [AppStoreNotificationRecord]) {
        self.records = records
    }

    public func text() -> String {
        guard !records.isEmpty else { return "no App Store notifications received\n" }
        var lines = [["RECEIVED", "TYPE", "UUID", "SIGNED", "APP", "KEPT"]]
        for record in records {
            lines.append([
                Timestamps.text(record.receivedAt),
                (record.type + (record.subtype.map { "/\($0)" } ?? "")).escapingControlCharacters,
                record.uuid.escapingControlCharacters,
                record.signedDate.map(Timestamps.text) ?? "-",
                (record.app ?? record.bundleID ?? "-").escapingControlCharacters,
                record.disposition == .stored
                    ? "stored" : "quarantined: \((record.reason ?? "").escapingControlCharacters)",
            ])
        }
        return TextColumns.render(lines)
    }

    public func json() -> String {
        JSONValue.array(
            records.map { record in
                .members([
                    ("uuid", .string(record.uuid)), ("type", .string(record.type)),
                    ("received_at", .string(Timestamps.iso(record.receivedAt))),
                    ("kept", .string(record.disposition.rawValue)), ("subtype", record.subtype.map { .string($0) }),
                    ("signed_date", record.signedDate.map { .string(Timestamps.iso($0)) }),
                    ("environment", record.environment.map { .string($0) }),
                    ("bundle_id", record.bundleID.map { .string($0) }), ("app", record.app.map { .string($0) }),
                    ("reason", record.reason.map { .string($0) }),
                    ("original_transaction_id", record.originalTransactionID.map { .string($0) }),
                    ("product_id", record.productID.map { .string($0) }),
                ])
            }
        ).text
    }
}

/// `pushcamp appstore subscriptions`: subscription state as App Store notifications set it.
public struct SubscriptionListing: Sendable {
    public var states: [SubscriptionState]
    /// The status asked for, if any (for the empty list's sentence).
    public var status: String?

    public init(states: [SubscriptionState], status: String?) {
        self.states = states
        self.status = status
    }

    public func text() -> String {
        guard !states.isEmpty else {
            return "no subscriptions\(status.map { " in status \($0)" } ?? "") known from App Store notifications\n"
        }
        return states.map { state in
            var line = "\(state.originalTransactionID)  \(state.status ?? "-")  \(state.productID ?? "-")"
            if let renew = state.autoRenew { line += "  auto-renew \(renew ? "on" : "off")" }
            if let expires = state.expiresAt { line += "  expires \(Timestamps.text(expires))" }
            if let grace = state.gracePeriodExpiresAt { line += "  grace until \(Timestamps.text(grace))" }
            if let token = state.appAccountToken { line += "  account \(token)" }
            line +=
                "  (\(state.lastType)\(state.lastSubtype.map { "/\($0)" } ?? ""), \(Timestamps.text(state.signedDate)))"
            return line.escapingControlCharacters + "\n"
        }.joined()
    }

    public func json() -> String {
        JSONValue.array(
            states.map { state in
                .members([
                    ("original_transaction_id", .string(state.originalTransactionID)),
                    ("last_type", .string(state.lastType)), ("signed_date", .string(Timestamps.iso(state.signedDate))),
                    ("notification", .string(state.notification)), ("status", state.status.map { .string($0) }),
                    ("app", state.app.map { .string($0) }), ("product_id", state.productID.map { .string($0) }),
                    ("auto_renew", state.autoRenew.map { .bool($0) }),
                    ("expires_at", state.expiresAt.map { .string(Timestamps.iso($0)) }),
                    ("grace_period_expires_at", state.gracePeriodExpiresAt.map { .string(Timestamps.iso($0)) }),
                    ("app_account_token", state.appAccountToken.map { .string($0) }),
                    ("last_subtype", state.lastSubtype.map { .string($0) }),
                ])
            }
        ).text
    }
}

/// `pushcamp appstore triggers`: which notification fired which campaign, newest first.
public struct FiringListing: Sendable {
    public var firings: [TriggerFiring]
    /// The campaign asked for, if any (for the empty list's sentence).
    public var campaign: String?

    public init(firings: [TriggerFiring], campaign: String?) {
        self.firings = firings
        self.campaign = campaign
    }

    public func text() -> String {
        guard !firings.isEmpty else { return "no trigger firings\(campaign.map { " of \($0)" } ?? "") yet\n" }
        var lines = [["RECORDED", "CAMPAIGN", "NOTIFICATION", "DUE", "STATUS"]]
        for firing in firings {
            var status = firing.status.rawValue
            if let run = firing.run { status += " (run \(run))" }
            if let detail = firing.detail { status += ": \(detail)" }
            lines.append(
                [
                    Timestamps.text(firing.recordedAt), firing.campaign, firing.notification,
                    Timestamps.text(firing.dueAt), status,
                ].map(\.escapingControlCharacters)
            )
        }
        return TextColumns.render(lines)
    }

    public func json() -> String {
        JSONValue.array(
            firings.map { firing in
                .members([
                    ("campaign", .string(firing.campaign)), ("notification", .string(firing.notification)),
                    ("status", .string(firing.status.rawValue)), ("due_at", .string(Timestamps.iso(firing.dueAt))),
                    ("recorded_at", .string(Timestamps.iso(firing.recordedAt))),
                    ("subscription_key", firing.subscriptionKey.map { .string($0) }),
                    ("run", firing.run.map { .integer(Int($0.rawValue)) }),
                    ("detail", firing.detail.map { .string($0) }),
                ])
            }
        ).text
    }
}

/// `pushcamp tokens invalid`: the dead tokens remembered, oldest first, as CSV or JSON.
public struct InvalidTokenListing: Sendable {
    public var tokens: [InvalidToken]

    public init(tokens: [InvalidToken]) {
        self.tokens = tokens
    }

    public func csv() -> String {
        var out = "topic,token,reason,apns_timestamp,apns_time,seen_at\n"
        for token in tokens {
            let fields = [
                token.topic, token.token, token.reason, token.apnsTimestamp.map(String.init) ?? "",
                token.apnsTimestamp.map { Timestamps.iso(Double($0) / 1000) } ?? "", Timestamps.iso(token.seenAt),
            ]
            out += fields.map(csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    public func json() -> String {
        JSONValue.array(
            tokens.map { token in
                .members([
                    ("topic", .string(token.topic)), ("token", .string(token.token)), ("reason", .string(token.reason)),
                    ("seen_at", .string(Timestamps.iso(token.seenAt))),
                    ("apns_timestamp", token.apnsTimestamp.map { .integer(Int($0)) } ?? .null),
                    ("apns_time", token.apnsTimestamp.map { .string(Timestamps.iso(Double($0) / 1000)) } ?? .null),
                ])
            }
        ).text
    }
}
