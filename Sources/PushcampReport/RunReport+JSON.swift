import Foundation
import PushcampJournal
import PushcampModel

extension RunReport {
    /// The report as JSON for dashboards and scripts; keys and their order are stable
    /// (docs/report-json.md). Times are ISO 8601 UTC, durations and latencies seconds.
    public func json() -> String {
        let outcomesJSON = outcomes.map { outcome -> JSONValue in
            .object([
                ("kind", .string(outcome.kind.rawValue)), ("status", outcome.status.map { .integer($0) } ?? .null),
                ("reason", .optional(outcome.reason)), ("count", .integer(outcome.count)),
                ("platform", .optional(outcome.platform?.rawValue)),
            ])
        }
        let latencyJSON: JSONValue =
            latency.map { latency in
                .object([
                    ("count", .integer(Int(latency.count))), ("p50", .number(latency.p50)),
                    ("p90", .number(latency.p90)),
                    ("p99", .number(latency.p99)), ("p99_9", .number(latency.p999)), ("max", .number(latency.max)),
                    (
                        "distribution",
                        .array(
                            latencyDistribution.map {
                                .object([
                                    ("from", .number(Double($0.from) / 1_000_000)),
                                    ("to", .number(Double($0.to) / 1_000_000)), ("count", .integer(Int($0.count))),
                                ])
                            }
                        )
                    ),
                ])
            } ?? .null
        func readout(_ rows: [ReadoutRow], latency: Bool) -> JSONValue {
            .array(
                rows.map { row in
                    var fields: [(String, JSONValue)] = [
                        ("name", .string(row.name)), ("planned", row.planned.map { .integer($0) } ?? .null),
                        ("delivered", .integer(row.delivered)), ("failed", .integer(row.failed)),
                        ("failed_by_reason", .object(row.reasons.map { ($0.reason, .integer($0.count)) })),
                    ]
                    if latency {
                        fields.append(("p50", row.p50.map { .number($0) } ?? .null))
                        fields.append(("p99", row.p99.map { .number($0) } ?? .null))
                    }
                    return .object(fields)
                }
            )
        }
        let sentJSON: JSONValue =
            stats.sent.map { sent in
                .object([
                    ("app", .string(sent.app)), ("topic", .string(sent.topic)),
                    ("environment", .string(sent.environment)), ("endpoint", .string(sent.endpoint)),
                    ("rate", .string(sent.rate)), ("connections", .integer(sent.connections)),
                ])
            } ?? .null
        let planJSON: JSONValue =
            stats.plan.map { plan in
                .object(
                    funnelRows.map { ($0.label.replacingOccurrences(of: " ", with: "_"), .integer($0.count)) }
                        + [("holdout_percent", .number(Double(plan.holdoutBasisPoints) / 100))]
                )
            } ?? .null
        let duplicatesJSON: JSONValue = .array(
            duplicates.map { .object([("seq", .integer($0.seq)), ("token", .string($0.token))]) }
        )
        let slicesJSON: JSONValue = slices.map(Self.json) ?? .null
        let document: JSONValue = .object([
            ("run", .integer(Int(run.id.rawValue))), ("rehearsal", .bool(rehearsal)),
            ("campaign", .string(run.campaign)),
            ("revision", .string(run.revision)), ("status", .string(run.status.rawValue)),
            ("file", .optional(fileDisplay ?? run.file)), ("description", .optional(campaignDescription)),
            ("copy", copyJSON), ("timeline", timelineJSON), ("sent", sentJSON), ("plan", planJSON),
            (
                "replay_of",
                run.replay.map {
                    .object([
                        ("run", .integer(Int($0.run.rawValue))), ("reasons", .array($0.reasons.map { .string($0) })),
                    ])
                } ?? .null
            ),
            ("started_at", .string(Timestamps.iso(run.startedAt))),
            ("updated_at", .string(Timestamps.iso(run.updatedAt))),
            ("wall_seconds", .number(Self.rounded(wallSeconds))),
            ("sending_seconds", .number(Self.rounded(stats.seconds))),
            ("planned", run.total(stats: stats).map { .integer($0) } ?? .null), ("recipients", .integer(recipients)),
            ("delivered", .integer(delivered)), ("failed", .integer(failed)), ("outcomes", .array(outcomesJSON)),
            ("variants", readout(variantRows, latency: true)),
            ("assignment_unit", .optional(stats.plan?.assignmentUnit)),
            ("locales", readout(localeRows, latency: false)),
            ("platforms", readout(platformRows, latency: true)),
            ("readout", self.readout?.json ?? .null),
            (
                "retries",
                .object([
                    ("total", .integer(stats.totalRetries)),
                    ("by_cause", .object(sortedRetries.map { ($0.cause, .integer($0.count)) })),
                ])
            ),
            ("possible_duplicates", .integer(run.possibleDuplicates)),
            ("possible_duplicate_recipients", duplicatesJSON), ("slices", slicesJSON),
            ("latency", latencyJSON),
            (
                "throughput",
                .object([
                    ("average_per_second", .number(Self.rounded(averagePerSecond))),
                    ("peak_per_second", .integer(peak.map { $0.delivered + $0.failed } ?? 0)),
                    (
                        "per_second",
                        .array(
                            perSecond.map {
                                .object([
                                    ("at", .string(Timestamps.iso(Double($0.second)))),
                                    ("delivered", .integer($0.delivered)), ("failed", .integer($0.failed)),
                                    ("retried", .integer($0.retried)),
                                ])
                            }
                        )
                    ),
                ])
            ),
            (
                "connections",
                .object([
                    ("opened", .integer(stats.connectionsOpened)),
                    (
                        "ended",
                        .object(stats.disconnects.sorted { $0.key < $1.key }.map { ($0.key, .integer($0.value)) })
                    ),
                ])
            ),
        ])
        return document.text + "\n"
    }

    /// A sliced run's `slices` object.
    static func json(_ slices: Slices) -> JSONValue {
        let workers: [JSONValue] = slices.workers.map { worker in
            .object([
                ("owner", .string(worker.owner)), ("slices", .integer(worker.slices)),
                ("answers", .integer(Int(worker.answers))),
                ("sending_seconds", .number(rounded(worker.seconds))),
                ("per_second", .number(rounded(worker.perSecond))),
            ])
        }
        return .object([
            ("total", .integer(slices.total)), ("done", .integer(slices.done)),
            ("held", .integer(slices.leased)), ("free", .integer(slices.free)), ("workers", .array(workers)),
        ])
    }

    /// To the microsecond: enough for seconds and rates, and stable output.
    public static func rounded(_ value: Double) -> Double { (value * 1_000_000).rounded() / 1_000_000 }
}
