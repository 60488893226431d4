import CoreMetrics
import Metrics
import Prometheus
import PushcampJournal
import PushcampSend

/// What `serve` measures, through swift-metrics into a Prometheus registry of its own (no global
/// bootstrap, so tests and several servers in one process keep theirs apart). Names follow the
/// Prometheus conventions; docs/metrics.md lists them with example alert rules.
public struct ServeMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        self.factory = factory
    }

    /// The registry in Prometheus' text format.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    // MARK: scheduler

    func ticked(at now: Double) {
        Gauge(label: "pushcamp_scheduler_last_tick_timestamp_seconds", factory: factory).record(now)
    }

    func nextSlot(_ campaign: String, at slot: Int64?) {
        Gauge(
            label: "pushcamp_scheduler_next_slot_timestamp_seconds",
            dimensions: [("campaign", campaign)],
            factory: factory
        ).record(Double(slot ?? 0))
    }

    func slotFired(_ campaign: String) {
        Counter(label: "pushcamp_scheduler_slots_fired_total", dimensions: [("campaign", campaign)], factory: factory)
            .increment()
    }

    func slotsSkipped(_ campaign: String, reason: String, count: Int) {
        Counter(
            label: "pushcamp_scheduler_slots_skipped_total",
            dimensions: [("campaign", campaign), ("reason", reason)],
            factory: factory
        ).increment(by: Int64(count))
    }

    /// An unfinished slot run closed at start instead of resumed (`expired`, `superseded`).
    func runClosed(_ campaign: String, reason: String) {
        Counter(
            label: "pushcamp_scheduler_runs_closed_total",
            dimensions: [("campaign", campaign), ("reason", reason)],
            factory: factory
        ).increment()
    }

    func campaigns(scheduled: Int, invalid: Int) {
        Gauge(label: "pushcamp_campaigns_scheduled", factory: factory).record(scheduled)
        Gauge(label: "pushcamp_campaigns_invalid", factory: factory).record(invalid)
    }

    // MARK: sends

    /// A running send's progress since its last call: counters move by the difference.
    func progressed(_ campaign: String, from old: SendProgress?, to new: SendProgress) {
        pushes(campaign, delivered: new.delivered - (old?.delivered ?? 0), failed: new.failed - (old?.failed ?? 0))
        pending(campaign, max(0, new.planned - new.delivered - new.failed))
    }

    private func pushes(_ campaign: String, delivered: Int, failed: Int) {
        if delivered > 0 {
            Counter(
                label: "pushcamp_pushes_total",
                dimensions: [("campaign", campaign), ("outcome", "delivered")],
                factory: factory
            ).increment(by: Int64(delivered))
        }
        if failed > 0 {
            Counter(
                label: "pushcamp_pushes_total",
                dimensions: [("campaign", campaign), ("outcome", "failed")],
                factory: factory
            ).increment(by: Int64(failed))
        }
    }

    func pending(_ campaign: String, _ count: Int) {
        Gauge(label: "pushcamp_run_pending_recipients", dimensions: [("campaign", campaign)], factory: factory)
            .record(count)
    }

    /// A send ended: the answers since its last progress, its failures by APNs reason, retries by
    /// cause, and the run's end.
    func ended(_ campaign: String, report: SendReport, lastProgress: SendProgress?) {
        pushes(
            campaign,
            delivered: report.delivered - (lastProgress?.delivered ?? 0),
            failed: report.failed - (lastProgress?.failed ?? 0)
        )
        for (reason, count) in report.failures where count > 0 {
            Counter(
                label: "pushcamp_apns_failures_total",
                dimensions: [("campaign", campaign), ("reason", reason)],
                factory: factory
            ).increment(by: Int64(count))
        }
        for (cause, count) in report.retries where count > 0 {
            Counter(
                label: "pushcamp_retries_total",
                dimensions: [("campaign", campaign), ("cause", cause)],
                factory: factory
            ).increment(by: Int64(count))
        }
        for (status, count) in report.statuses where count > 0 {
            Counter(
                label: "pushcamp_apns_answers_total",
                dimensions: [("campaign", campaign), ("status", String(status))],
                factory: factory
            ).increment(by: Int64(count))
        }
        let latency = Timer(
            label: "pushcamp_apns_request_duration_seconds",
            dimensions: [("campaign", campaign)],
            preferredDisplayUnit: .seconds,
            factory: factory
        )
        for bucket in report.latency.buckets {
            for _ in 0..<bucket.count { latency.recordMicroseconds(bucket.microseconds) }
        }
        Counter(label: "pushcamp_connections_opened_total", dimensions: [("campaign", campaign)], factory: factory)
            .increment(by: Int64(report.connectionsOpened))
        for (cause, count) in report.disconnects where count > 0 {
            Counter(
                label: "pushcamp_connections_closed_total",
                dimensions: [("campaign", campaign), ("cause", cause)],
                factory: factory
            ).increment(by: Int64(count))
        }
        Counter(label: "pushcamp_provider_tokens_minted_total", dimensions: [("campaign", campaign)], factory: factory)
            .increment(by: Int64(report.providerTokensRenewed))
        Gauge(label: "pushcamp_stream_limit_highest", dimensions: [("campaign", campaign)], factory: factory)
            .record(report.highestStreamLimit)
        Counter(
            label: "pushcamp_runs_total",
            dimensions: [("campaign", campaign), ("end", Self.end(of: report))],
            factory: factory
        ).increment()
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
        }
    }

    // MARK: App Store

    func appStoreReceived(type: String, outcome: String) {
        Counter(
            label: "pushcamp_appstore_notifications_total",
            dimensions: [("type", type), ("outcome", outcome)],
            factory: factory
        ).increment()
    }

    func appStoreRefused(_ reason: String) {
        Counter(label: "pushcamp_appstore_refused_total", dimensions: [("reason", reason)], factory: factory)
            .increment()
    }

    func appStoreStoreFailed() {
        Counter(label: "pushcamp_appstore_store_failures_total", factory: factory).increment()
    }

    /// A trigger firing settled: `sent` (its run reached a recipient), `no_recipient`, `skipped`.
    func triggerFired(_ campaign: String, outcome: String) {
        Counter(
            label: "pushcamp_trigger_firings_total",
            dimensions: [("campaign", campaign), ("outcome", outcome)],
            factory: factory
        ).increment()
    }

    func runRefused(_ campaign: String) {
        Counter(label: "pushcamp_runs_refused_total", dimensions: [("campaign", campaign)], factory: factory)
            .increment()
    }
}
