import PushcampJournal
import PushcampModel

extension PlanFunnel {
    /// The funnel of a plan that went through the whole audience.
    package init(_ summary: PlanSummary) {
        self.init()
        read = summary.audience.read
        invalid = summary.audience.invalidTotal
        duplicates = summary.audience.duplicates
        filteredOut = summary.audience.filteredOut
        excluded = summary.audience.excluded
        noSubscription = summary.unsubscribed
        suppressed = summary.suppressed
        capped = summary.capped
        heldOut = summary.heldOut
        refused = summary.failed
        // A resumed pass's settled recipients were planned (and sent) by the passes before.
        planned = summary.planned + summary.skipped
        holdoutBasisPoints = summary.holdout.basisPoints
        assignmentUnit = summary.assignmentUnit
        readout = summary.readout
        variants = Dictionary(summary.variants.map { ($0.name, $0.planned) }, uniquingKeysWith: +)
            .merging(summary.skippedVariants, uniquingKeysWith: +)
        locales = Dictionary(summary.locales.map { ($0.locale, $0.planned) }, uniquingKeysWith: +)
            .merging(summary.skippedLocales, uniquingKeysWith: +)
        platforms = Dictionary(
            summary.platforms.merging(summary.skippedPlatforms, uniquingKeysWith: +).map {
                ($0.key.rawValue, $0.value)
            },
            uniquingKeysWith: +
        )
        samples = summary.samples.map { summary.sample($0) }
        description = summary.description
        copies = summary.copies.map { push in
            var copy = summary.sample(push)
            copy.token = ""
            return copy
        }
    }
}

extension PlanSummary {
    /// `push` as a run keeps it: its headers as `plan` prints them, its payload.
    public func sample(_ push: PlannedPush) -> PlanSample {
        PlanSample(
            token: push.token,
            variant: push.variant,
            locale: push.locale,
            headers: headers(of: push).map { PlanSample.Header(name: $0.0, value: $0.1) },
            payload: String(decoding: push.payload, as: UTF8.self)
        )
    }
}
