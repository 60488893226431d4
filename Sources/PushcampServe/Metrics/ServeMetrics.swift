import Prometheus
import PushcampAPNs
import PushcampBuildInfo
import PushcampJournal
import PushcampModel
import PushcampSend
import Synchronization

/// What `serve` measures, in a swift-prometheus registry of its own (no global bootstrap, so tests
/// and several servers in one process keep theirs apart). Names follow the Prometheus conventions;
/// every metric has a `# HELP` line (`help`), and docs/metrics.md lists them with example alert
/// rules. The process's own metrics (`process_…`) are read when the registry is scraped.
public struct ServeMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let process: ProcessMetrics
    /// The process's provider tokens, counted when scraped.
    let mints: MintCount

    static let latencyBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// `version`, `commit`, `built` and `packaged` label `pushcamp_build_info`.
    public init(
        version: String = BuildInfo.version,
        commit: String = BuildInfo.commit,
        built: String = BuildInfo.built,
        packaged: Bool = BuildInfo.packaged,
        providerTokens: ProviderTokenOwners = .shared
    ) {
        registry = PrometheusCollectorRegistry()
        process = ProcessMetrics(registry: registry)
        mints = MintCount(providerTokens)
        gauge(
            "pushcamp_build_info",
            [("version", version), ("commit", commit), ("built", built), ("packaged", packaged ? "true" : "false")]
        )
        .set(Int64(1))
    }

    /// The registry in Prometheus' text format, the process's metrics read now.
    public func exposition() -> [UInt8] {
        process.update()
        countMintedTokens()
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    // MARK: the registry, with each metric's help

    func counter(_ name: String, _ labels: [(String, String)] = []) -> Counter {
        registry.makeCounter(descriptor: Self.descriptor(name), labels: labels)
    }

    func gauge(_ name: String, _ labels: [(String, String)] = []) -> Gauge {
        registry.makeGauge(descriptor: Self.descriptor(name), labels: labels)
    }

    /// The metric `name` with its help text.
    static func descriptor(_ name: String) -> MetricNameDescriptor {
        guard let text = help[name] else { preconditionFailure("metric \(name) has no help text") }
        return MetricNameDescriptor(metricName: name, unitName: "", helpText: text)
    }

    /// One line per metric, as `# HELP` prints it (docs/metrics.md says more).
    static let help: [String: String] = [
        "pushcamp_build_info": "The pushcamp build serving: its version, git commit, build time and kind (always 1).",
        "pushcamp_scheduler_last_tick_timestamp_seconds":
            "When the scheduler last looked at the clock and the campaign folders.",
        "pushcamp_scheduler_next_slot_timestamp_seconds": "The campaign's next slot; 0 when its schedule ended.",
        "pushcamp_scheduler_slots_fired_total": "Slots fired: a run created or resumed.",
        "pushcamp_scheduler_slots_skipped_total": "Slots skipped, by reason.",
        "pushcamp_scheduler_slots_failed_total":
            "Slots fired whose run finally failed (a broadcast refused, or never answered however often it went), by reason.",
        "pushcamp_scheduler_runs_closed_total":
            "Unfinished slot runs closed at start instead of resumed: expired or superseded.",
        "pushcamp_campaigns_scheduled": "Campaign files in the watched folders with a valid schedule.",
        "pushcamp_campaigns_invalid": "Campaign files in the watched folders that do not validate.",
        "pushcamp_credentials_problems":
            "Apps of scheduled or triggered campaigns whose credentials cannot be used (serve is not ready).",
        "pushcamp_pushes_total": "Pushes with a final answer, delivered or failed, per platform (ios, android).",
        "pushcamp_run_pending_recipients": "Recipients of the running run planned so far without a final answer.",
        "pushcamp_runs_total": "Sends that ended, by how they ended.",
        "pushcamp_runs_refused_total": "Slot and trigger sends refused before they started.",
        "pushcamp_apns_answers_total":
            "Provider answers by platform and HTTP status, retries included (FCM's too, platform=\"android\").",
        "pushcamp_apns_failures_total": "Final failures by platform and reason (APNs' or FCM's).",
        "pushcamp_retries_total": "Sends beyond a push's first, by cause.",
        "pushcamp_apns_request_duration_seconds":
            "Request latency per platform, from writing the request to its answer.",
        "pushcamp_connections_opened_total": "HTTP/2 connections opened to APNs.",
        "pushcamp_connections_closed_total": "HTTP/2 connections to APNs that ended, by cause.",
        "pushcamp_provider_tokens_minted_total":
            "Provider tokens this process minted, per key: the first and every renewal (a token adopted from the journal or the machine's cache is not counted).",
        "pushcamp_stream_limit_highest": "The highest stream limit APNs allowed one connection in the last run.",
        "pushcamp_appstore_notifications_total": "Verified App Store notifications by type and what became of them.",
        "pushcamp_appstore_refused_total": "App Store notification bodies answered 400 and not kept, by reason.",
        "pushcamp_appstore_store_failures_total":
            "App Store notifications answered 503 because they could not be stored.",
        "pushcamp_appstore_store_failing":
            "1 while the last App Store notification could not be stored (serve is not ready), else 0.",
        "pushcamp_trigger_firings_total": "Trigger firings settled, by outcome.",
        "pushcamp_broadcasts_total":
            "Broadcast requests serve settled, by channel and outcome (delivered, or APNs' reason).",
        "pushcamp_journal_reachable": "1 while the journal answered the scheduler's last look (every second), else 0.",
        "pushcamp_journal_probe_duration_seconds": "How long the journal took to answer the scheduler's look.",
        "pushcamp_journal_errors_total": "Looks at the journal that failed (unreachable, or an error).",
        "pushcamp_leases_held": "Campaigns this node is sending, each under its lease in the journal.",
        "pushcamp_takeovers_total":
            "Runs this node took over because nobody held them (their sender died or lost its lease).",
        "process_cpu_seconds_total": "User and system CPU time spent, in seconds.",
        "process_resident_memory_bytes": "Resident memory size, in bytes.",
        "process_virtual_memory_bytes": "Virtual memory size, in bytes.",
        "process_open_fds": "Open file descriptors.",
        "process_max_fds": "The limit on open file descriptors.",
        "process_start_time_seconds": "When the process started, in seconds since 1970.",
    ]

    /// Brings `pushcamp_provider_tokens_minted_total` up to what the process minted so far.
    private func countMintedTokens() {
        for (teamID, keyID, delta) in mints.since() {
            counter("pushcamp_provider_tokens_minted_total", [("team_id", teamID), ("key_id", keyID)])
                .increment(by: Int64(delta))
        }
    }

    // MARK: the journal and leases

    /// The journal answered the scheduler's look in `seconds`.
    func journalAnswered(in seconds: Double) {
        gauge("pushcamp_journal_reachable").set(Int64(1))
        registry.makeDurationHistogram(
            descriptor: Self.descriptor("pushcamp_journal_probe_duration_seconds"),
            buckets: Self.latencyBuckets
        ).record(.nanoseconds(Int64(seconds * 1e9)))
    }

    /// The journal did not answer the scheduler's look.
    func journalFailed() {
        gauge("pushcamp_journal_reachable").set(Int64(0))
        counter("pushcamp_journal_errors_total").increment()
    }

    func leasesHeld(_ count: Int) {
        gauge("pushcamp_leases_held").set(Int64(count))
    }

    func tookOver(_ campaign: String) {
        counter("pushcamp_takeovers_total", [("campaign", campaign)]).increment()
    }

    // MARK: scheduler

    func ticked(at now: Double) {
        gauge("pushcamp_scheduler_last_tick_timestamp_seconds").set(now)
    }

    func nextSlot(_ campaign: String, at slot: Int64?) {
        gauge("pushcamp_scheduler_next_slot_timestamp_seconds", [("campaign", campaign)]).set(Double(slot ?? 0))
    }

    func slotFired(_ campaign: String) {
        counter("pushcamp_scheduler_slots_fired_total", [("campaign", campaign)]).increment()
    }

    func slotsSkipped(_ campaign: String, reason: String, count: Int) {
        counter("pushcamp_scheduler_slots_skipped_total", [("campaign", campaign), ("reason", reason)])
            .increment(by: Int64(count))
    }

    /// An unfinished slot run closed at start instead of resumed (`expired`, `superseded`).
    func slotFailed(_ campaign: String, reason: String) {
        counter("pushcamp_scheduler_slots_failed_total", [("campaign", campaign), ("reason", reason)]).increment()
    }

    func runClosed(_ campaign: String, reason: String) {
        counter("pushcamp_scheduler_runs_closed_total", [("campaign", campaign), ("reason", reason)]).increment()
    }

    func campaigns(scheduled: Int, invalid: Int) {
        gauge("pushcamp_campaigns_scheduled").set(Int64(scheduled))
        gauge("pushcamp_campaigns_invalid").set(Int64(invalid))
    }

    func credentialsProblems(_ count: Int) {
        gauge("pushcamp_credentials_problems").set(Int64(count))
    }

    // MARK: sends

    /// A running send's progress since its last call: counters move by the difference.
    /// This node may not send slices of a run of `campaign` (another revision, its credentials).
    func slicesRefused(_ campaign: String) {
        counter("pushcamp_slices_refused_total", [("campaign", campaign)]).increment()
    }

    func progressed(_ campaign: String, from old: SendProgress?, to new: SendProgress) {
        pushes(campaign, now: new.platforms, before: old?.platforms ?? [:])
        pending(campaign, max(0, new.planned - new.delivered - new.failed))
    }

    /// Counts the final answers per platform in `now` beyond those in `before`.
    private func pushes(
        _ campaign: String,
        now: [Platform: (delivered: Int, failed: Int)],
        before: [Platform: (delivered: Int, failed: Int)]
    ) {
        for (platform, answers) in now {
            let counted = before[platform] ?? (0, 0)
            for (outcome, count) in [
                ("delivered", answers.delivered - counted.delivered), ("failed", answers.failed - counted.failed),
            ] where count > 0 {
                counter(
                    "pushcamp_pushes_total",
                    [("campaign", campaign), ("outcome", outcome), ("platform", platform.rawValue)]
                )
                .increment(by: Int64(count))
            }
        }
    }

    func pending(_ campaign: String, _ count: Int) {
        gauge("pushcamp_run_pending_recipients", [("campaign", campaign)]).set(Int64(count))
    }

    /// A send ended: the answers since its last progress, its final failures by reason, answers by
    /// status and latencies (each per platform), retries by cause, and the run's end.
    func ended(_ campaign: String, report: SendReport, lastProgress: SendProgress?) {
        let platforms = report.platforms()
        pushes(
            campaign,
            now: platforms.mapValues { ($0.delivered, $0.failedTotal) },
            before: lastProgress?.platforms ?? [:]
        )
        for (platform, readout) in platforms {
            let labels = [("campaign", campaign), ("platform", platform.rawValue)]
            for (reason, count) in readout.failed where count > 0 {
                counter("pushcamp_apns_failures_total", labels + [("reason", reason)]).increment(by: Int64(count))
            }
            let latency = registry.makeDurationHistogram(
                descriptor: Self.descriptor("pushcamp_apns_request_duration_seconds"),
                labels: labels,
                buckets: Self.latencyBuckets
            )
            for bucket in readout.latency?.buckets ?? [] {
                for _ in 0..<bucket.count { latency.record(.microseconds(bucket.microseconds)) }
            }
        }
        for (cause, count) in report.retries where count > 0 {
            counter("pushcamp_retries_total", [("campaign", campaign), ("cause", cause)]).increment(by: Int64(count))
        }
        for (answer, count) in report.statuses where count > 0 {
            counter(
                "pushcamp_apns_answers_total",
                [("campaign", campaign), ("platform", answer.platform.rawValue), ("status", String(answer.status))]
            )
            .increment(by: Int64(count))
        }
        counter("pushcamp_connections_opened_total", [("campaign", campaign)])
            .increment(by: Int64(report.connectionsOpened))
        for (cause, count) in report.disconnects where count > 0 {
            counter("pushcamp_connections_closed_total", [("campaign", campaign), ("cause", cause)])
                .increment(by: Int64(count))
        }
        gauge("pushcamp_stream_limit_highest", [("campaign", campaign)]).set(Int64(report.highestStreamLimit))
        counter("pushcamp_runs_total", [("campaign", campaign), ("end", Self.end(of: report))]).increment()
        pending(campaign, 0)
    }

    /// How a run ended, as a label value.
    static func end(of report: SendReport) -> String {
        switch report.stop {
        case nil: return "finished"
        case .interrupted?: return "interrupted"
        case .credentials?: return "credentials"
        case .cannotConnect?: return "cannot-connect"
        case .planFailed?: return "plan-failed"
        case .cancelled?: return "cancelled"
        case .journal?: return "journal"
        case .stalled?: return "stalled"
        case .leaseLost?: return "lease-lost"
        }
    }

    // MARK: App Store

    func appStoreReceived(type: String, outcome: String) {
        counter("pushcamp_appstore_notifications_total", [("type", type), ("outcome", outcome)]).increment()
        gauge("pushcamp_appstore_store_failing").set(Int64(0))
    }

    func appStoreRefused(_ reason: String) {
        counter("pushcamp_appstore_refused_total", [("reason", reason)]).increment()
    }

    func appStoreStoreFailed() {
        counter("pushcamp_appstore_store_failures_total").increment()
        gauge("pushcamp_appstore_store_failing").set(Int64(1))
    }

    /// A trigger firing settled: `sent` (its run reached a recipient), `no_recipient`, `skipped`.
    func triggerFired(_ campaign: String, outcome: String) {
        counter("pushcamp_trigger_firings_total", [("campaign", campaign), ("outcome", outcome)]).increment()
    }

    /// A broadcast campaign's request settled: `delivered`, APNs' reason, or `unknown-not-resent`.
    func broadcastSettled(_ campaign: String, channel: String, outcome: String) {
        counter("pushcamp_broadcasts_total", [("campaign", campaign), ("channel", channel), ("outcome", outcome)])
            .increment()
    }

    func runRefused(_ campaign: String) {
        counter("pushcamp_runs_refused_total", [("campaign", campaign)]).increment()
    }
}

/// The provider tokens the process minted per key, and how many of them the metric counted.
final class MintCount: Sendable {
    private let owners: ProviderTokenOwners
    private let counted = Mutex<[String: Int]>([:])

    init(_ owners: ProviderTokenOwners) {
        self.owners = owners
    }

    /// The keys with tokens minted since the last call, and how many.
    func since() -> [(teamID: String, keyID: String, count: Int)] {
        owners.minted().compactMap { key in
            let name = "\(key.teamID)/\(key.keyID)"
            let delta = counted.withLock { counted in
                defer { counted[name] = key.count }
                return key.count - counted[name, default: 0]
            }
            return delta > 0 ? (key.teamID, key.keyID, delta) : nil
        }
    }
}
