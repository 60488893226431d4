import PushcampJournal
import PushcampModel

extension RunReport {
    /// One variant's or locale's line of the readout.
    public struct ReadoutRow: Sendable, Hashable {
        public var name: String
        /// How people read it: the name, or a platform's title (`iOS`, `Android`).
        public var label: String
        /// Planned by the run's plan (nil when the plan's funnel was not kept: a resumed pass).
        public var planned: Int?
        public var delivered: Int
        public var failed: Int
        /// Failures by reason, most first.
        public var reasons: [(reason: String, count: Int)]
        public var p50: Double?
        public var p99: Double?

        public static func == (lhs: ReadoutRow, rhs: ReadoutRow) -> Bool {
            lhs.name == rhs.name && lhs.planned == rhs.planned && lhs.delivered == rhs.delivered
                && lhs.failed == rhs.failed
        }

        public func hash(into hasher: inout Hasher) { hasher.combine(name) }

        /// Delivered among the answered, 0 to 1.
        public var deliveryRate: Double? {
            delivered + failed > 0 ? Double(delivered) / Double(delivered + failed) : nil
        }

        /// "410 Unregistered 3, 400 BadDeviceToken 1" — the first `limit` reasons.
        public func reasonsText(limit: Int = 3) -> String {
            guard !reasons.isEmpty else { return "" }
            let shown = reasons.prefix(limit).map { "\($0.reason) \($0.count)" }
            return shown.joined(separator: ", ") + (reasons.count > limit ? ", …" : "")
        }
    }

    /// The A/B readout: per variant, when the campaign has variants (a campaign without them has
    /// one, `default`, and no readout).
    public var variantRows: [ReadoutRow] {
        let planned = stats.plan?.variants ?? [:]
        guard !planned.isEmpty || Set(stats.variants.keys).subtracting(["default"]).count > 0 else { return [] }
        return rows(stats.variants, planned: planned, ordered: false)
    }

    /// Per platform, when the run reached Android phones (named `ios` and `android`; `Platform.title`
    /// says them to people).
    public var platformRows: [ReadoutRow] {
        guard showsPlatforms else { return [] }
        let title = { (name: String) in Platform(rawValue: name)?.title ?? name }
        return rows(stats.platforms, planned: stats.plan?.platforms ?? [:], ordered: false, label: title).sorted {
            (Platform(rawValue: $0.name) ?? .android) < (Platform(rawValue: $1.name) ?? .android)
        }
    }

    /// Per locale, when the campaign is localized.
    public var localeRows: [ReadoutRow] {
        rows(stats.locales, planned: stats.plan?.locales ?? [:], ordered: true)
    }

    private func rows(
        _ readouts: [String: Readout],
        planned: [String: Int],
        ordered: Bool,
        label: (String) -> String = { $0 }
    ) -> [ReadoutRow] {
        let names = Set(readouts.keys).union(planned.keys)
        let rows = names.map { name -> ReadoutRow in
            let readout = readouts[name] ?? Readout()
            let latency = readout.latency
            return ReadoutRow(
                name: name,
                label: label(name),
                planned: stats.plan == nil ? nil : planned[name] ?? 0,
                delivered: readout.delivered,
                failed: readout.failedTotal,
                reasons: readout.failed.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                    .map { ($0.key, $0.value) },
                p50: latency?.percentile(0.5),
                p99: latency?.percentile(0.99)
            )
        }
        // Variants in name order (control first when so named); locales most planned first.
        return rows.sorted { lhs, rhs in
            if ordered {
                let (left, right) = (lhs.planned ?? lhs.delivered, rhs.planned ?? rhs.delivered)
                if left != right { return left > right }
            }
            return lhs.name < rhs.name
        }
    }

    /// The plan's funnel as (label, count), in the order `plan` prints it.
    public var funnelRows: [(label: String, count: Int)] {
        guard let plan = stats.plan else { return [] }
        var rows: [(String, Int)] = [
            ("read", plan.read), ("invalid tokens", plan.invalid), ("duplicates", plan.duplicates),
            ("filtered out", plan.filteredOut), ("excluded", plan.excluded),
        ]
        if plan.noSubscription > 0 { rows.append(("no subscription", plan.noSubscription)) }
        rows += [
            ("suppressed", plan.suppressed), ("capped", plan.capped),
            ("held out", plan.heldOut), ("refused", plan.refused), ("planned", plan.planned),
        ]
        return rows
    }

    /// "app shop-ios · topic com.example.shop · production · api.push.apple.com:443 · throttle 2000/s over 4 connections"
    public var sentLine: String? {
        guard let sent = stats.sent else { return nil }
        return "app \(sent.app) · topic \(sent.topic) · \(sent.environment) · \(sent.endpoint) · "
            + "throttle \(sent.rate) over \(sent.connections) connection\(sent.connections == 1 ? "" : "s")"
    }

    /// " (assigned per person (user_id))" when variants and the holdout were assigned per person;
    /// empty when per device (or not known).
    public var assignmentNote: String {
        guard let unit = stats.plan?.assignmentUnit, unit != "device" else { return "" }
        return " (assigned per \(unit))"
    }

    /// The holdout, when the plan had one: "10% (1,920 held out)".
    public var holdoutText: String? {
        guard let plan = stats.plan, plan.holdoutBasisPoints > 0 else { return nil }
        let percent = Double(plan.holdoutBasisPoints) / 100
        let share = percent == percent.rounded() ? String(Int(percent)) : String(percent)
        return "\(share)% (\(plan.heldOut) held out)"
    }
}
