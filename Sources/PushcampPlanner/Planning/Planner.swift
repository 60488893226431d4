import Foundation
import PushcampAPNsCore
import PushcampAudience
import PushcampFCMCore
import PushcampModel
import PushcampTemplates

/// Stage two of the pipeline: `LoadedCampaign → stream of PlannedPush + PlanSummary`.
///
/// Deterministic and streaming: a recipient's holdout and variant come from a stable hash of the
/// campaign id and the token, its `apns-id` is a UUIDv5 of the campaign, revision and token, and
/// recipients are handed on one at a time in audience order.
///
/// Bucketing: `h = StableHash.hash(key, prefixedBy: campaignID)`, where the key is the recipient's
/// `audience.user_key` value when the campaign names one and the row has it (one person's devices,
/// iPhone and Android phone alike, get the same arm), else its token. The recipient is held out when
/// `(h & 0xFFFFFFFF) % 10000 < holdout in basis points`; otherwise its variant is the one whose
/// cumulative weight range holds `(h >> 32) % totalWeight`, in the campaign's order.
public struct Planner: Sendable {
    public var campaign: LoadedCampaign
    /// When the send starts, if known: turns relative expirations into absolute ones.
    public var sendTime: Timestamp?
    public var sendTimeSource: String?
    public var sampleLimit: Int
    /// Dead tokens and capped recipients to pass over (from the journal); none when nil.
    public var history: DeliveryHistory?
    /// Only pushes due at this moment (recipient-local schedules, quiet hours): a send plans the
    /// audience again for each moment instead of holding pushes due later in memory. Recipients due
    /// at other moments are passed over before rendering.
    public var onlyDue: Int64?
    /// When planning starts (seconds since 1970), on the clock the planner was given: what a
    /// recurring schedule's next slot, and expirations without a send time, are measured from.
    public var now: Int64
    /// The audience's duplicate candidates, found by an earlier pass (`AudienceStream`): a second
    /// plan of the same audience need not read it a third time.
    public var duplicateCandidates: Set<UInt64>?
    /// Only counts: renders nothing but the pushes the summary keeps (samples, and the copy of each
    /// variant and locale), the only ones handed to `run`'s body. The summary's totals then count
    /// a push pre-flight would refuse for its own recipient as planned.
    public var countsOnly = false
    /// Asked every few thousand rows; true stops the plan (`CancellationError`).
    public var stops: (@Sendable () -> Bool)?

    public init(
        campaign: LoadedCampaign,
        sendTime: Timestamp? = nil,
        sendTimeSource: String? = nil,
        sampleLimit: Int = 3,
        clock: any WallClock = SystemWallClock()
    ) {
        self.campaign = campaign
        let now = Int64(clock.now())
        self.now = now
        // A recurring schedule is planned at its next slot: what `serve` will send next.
        let nextSlot = campaign.schedule.flatMap { schedule in
            schedule.isRecurring ? schedule.nextSlot(after: now).map(Timestamp.init) : nil
        }
        self.sendTime = sendTime ?? campaign.scheduledAt ?? nextSlot
        self.sendTimeSource =
            sendTime != nil
            ? sendTimeSource
            : (campaign.scheduledAt != nil ? "schedule.at" : nextSlot != nil ? "the schedule's next slot" : nil)
        self.sampleLimit = sampleLimit
    }

    /// Reads the audience's tokens once to find its duplicate candidates, for every later plan of
    /// this planner (and its copies).
    public mutating func findDuplicateCandidates() throws {
        duplicateCandidates = try campaign.audience.duplicateCandidates()
    }

    /// Expands the campaign, calling `body` with each push that passes pre-flight, and summarizes.
    public func run(_ body: (PlannedPush) throws -> Void = { _ in }) throws -> PlanSummary {
        try run(skipping: { _ in false }, body: body)
    }

    /// `run`, passing over recipients whose seq `skip` names before rendering them (a resumed run's
    /// settled ones); the summary counts them as `skipped`, not planned.
    public func run(skipping skip: (Int) -> Bool, body: (PlannedPush) throws -> Void) throws -> PlanSummary {
        var state = PlanState(campaign: campaign, sendTime: sendTime, sampleLimit: sampleLimit, now: now)
        state.onlyDue = onlyDue
        state.countsOnly = countsOnly
        var seq = 0
        let counts = try campaign.audience.forEachRecipient(candidates: duplicateCandidates) { recipient in
            defer { seq += 1 }
            if seq & 4095 == 0, let stops, stops() { throw CancellationError() }
            // Before the resume check, so a resumed trigger run still knows which firings it reached.
            if let subscriptions = history?.subscriptions {
                guard let key = subscriptions.key(of: recipient) else {
                    state.unsubscribed += 1
                    return
                }
                if subscriptions.recordsJoins { state.joined.insert(key) }
            }
            if skip(seq) {
                state.skipped += 1
                let (variant, locale) = state.assignment(of: recipient)
                if let variant { state.skippedVariants[campaign.variants[variant].name, default: 0] += 1 }
                if let locale { state.skippedLocales[locale, default: 0] += 1 }
                state.skippedPlatforms[recipient.platform, default: 0] += 1
                return
            }
            if let history {
                switch history.suppression.verdict(for: recipient) {
                case .send: break
                case .suppress:
                    state.suppressed += 1
                    return
                case .unreadableRegistration(let cell):
                    let attribute = history.suppression.registeredAtAttribute
                    state.refuse(
                        recipient,
                        problems: [
                            (
                                .registrationTimeUnreadable,
                                "\(attribute) '\(cell.excerpt())' is not a time (a timestamp or seconds since 1970, years 0000-9999), and APNs called this token dead"
                            )
                        ]
                    )
                    return
                }
                if let cap = history.frequencyCap, cap.holdsBack(recipient.token) {
                    state.capped += 1
                    return
                }
            }
            if let push = state.plan(recipient, seq: seq) { try body(push) }
        }
        var summary = state.summary(audience: counts, sendTimeSource: sendTimeSource)
        summary.subscriptionsMatched = history?.subscriptions?.count
        return summary
    }
}

/// The mutable side of a planning run: caches, counters and samples.
struct PlanState {
    let campaign: LoadedCampaign
    let sendTime: Timestamp?
    let sampleLimit: Int
    let runNamespace: [UInt8]
    let totalWeight: UInt64
    let staticIssues: [[StaticRules.Issue]]
    /// The send time, or the moment planning started when none is known: what expirations and
    /// FCM's checks are measured against.
    let reference: Timestamp
    /// When planning started.
    let now: Int64
    let expiration: PlannedExpiration?
    let localeAttribute: String?
    let defaultLocale: String
    /// The campaign's variants, each behind one reference: choosing a variant per recipient copies
    /// a pointer, not the variant's templates and tables.
    let variants: [VariantReference]
    /// The variants' weights, in order.
    let weights: [UInt64]
    /// The collapse id when its template has no tags (most campaigns): the same text for everyone.
    let constantCollapseID: String?
    /// What Android recipients get, and its expiration as planned.
    let android: AndroidTarget?
    let androidExpiration: PlannedExpiration?
    /// The attribute naming a person, whose value assigns arms instead of the token.
    let userKey: String?

    final class VariantReference: Sendable {
        let variant: LoadedCampaign.Variant
        let renderer: PayloadTemplate.Renderer
        init(_ variant: LoadedCampaign.Variant) {
            self.variant = variant
            renderer = variant.payload.renderer
        }
    }

    var writer = JSONWriter(capacity: 4096)
    /// Reused from recipient to recipient.
    var context = RenderContext(attributes: .empty, variables: .empty, strings: [:])
    /// Resolved string tables per variant and raw locale value; bounded.
    var localeCache: [[String?: (locale: String, strings: [String: MustacheTemplate])]]
    var variantCounts: [Int]
    var localeCounts: [String: Int] = [:]
    var heldOut = 0
    var skipped = 0
    var skippedVariants: [String: Int] = [:]
    var skippedLocales: [String: Int] = [:]
    var skippedPlatforms: [Platform: Int] = [:]
    var suppressed = 0
    var capped = 0
    var unsubscribed = 0
    var joined: Set<String> = []
    var planned = 0
    var failed = 0
    var sizes = SizeStatistics()
    var androidSizes = SizeStatistics()
    /// Planned pushes to Android (the rest went to iOS): counted without hashing, once per push.
    var androidPlanned = 0
    /// Recipients assigned by their person (`user_key`) rather than their token.
    var assignedByPerson = 0
    /// The variants whose first Android message went through all of FCM's rules.
    var checkedAndroidVariants: Set<Int> = []
    var failures: [PreflightReason: PlanSummary.FailureStat] = [:]
    /// The first pushes of each variant and platform (at `variant * 2 + platform`), for samples.
    var sampleCandidates: [[PlannedPush]]
    /// The first push of each variant and locale: the copy each was sent, for the report.
    var copies: [CopyKey: PlannedPush] = [:]
    var copiedUnlocalized: [Bool]
    static let copyLimit = 200

    struct CopyKey: Hashable {
        var variant: Int
        var locale: String?
        var platform: Platform = .ios
    }
    /// Each recipient's moment (recipient-local schedules, quiet hours); nil when everyone goes at once.
    var timing: DeliveryTiming?
    var timingSummary = PlanSummary.Timing()
    var onlyDue: Int64?
    /// See `Planner.countsOnly`.
    var countsOnly = false

    init(campaign: LoadedCampaign, sendTime: Timestamp?, sampleLimit: Int, now: Int64) {
        self.campaign = campaign
        self.now = now
        self.sendTime = sendTime
        self.sampleLimit = sampleLimit
        runNamespace = UUIDv5.runNamespace(campaign: campaign.id, revision: campaign.revision)
        totalWeight = UInt64(campaign.variants.reduce(0) { $0 + $1.weight })
        var issues = campaign.variants.map { StaticRules.check(campaign, variant: $0) }
        // Without a send time (plan without --at or schedule.at), an absolute expiration is checked against now.
        let reference = sendTime ?? Timestamp(secondsSince1970: now)
        self.reference = reference
        if let problem = StaticRules.expirationProblem(campaign.expiration, reference: reference) {
            for index in issues.indices {
                issues[index].append(
                    .init(reason: .expirationPassed, message: problem, location: campaign.messageLocation)
                )
            }
        }
        // An APNs payload's checks are about iOS recipients; a campaign without an iOS app has none.
        staticIssues = campaign.app != nil ? issues : issues.map { _ in [] }
        switch campaign.expiration {
        case nil: expiration = nil
        case .immediately?: expiration = .immediately
        case .at(let timestamp)?: expiration = .at(timestamp)
        case .after(let span)?: expiration = sendTime.map { .at($0 + span) } ?? .afterSend(span)
        }
        android = campaign.android
        switch campaign.android?.expiration {
        case nil: androidExpiration = nil
        case .immediately?: androidExpiration = .immediately
        case .at(let timestamp)?: androidExpiration = .at(timestamp)
        case .after(let span)?: androidExpiration = sendTime.map { .at($0 + span) } ?? .afterSend(span)
        }
        userKey = campaign.userKey
        localeAttribute = campaign.locale?.attribute
        variants = campaign.variants.map(VariantReference.init)
        weights = campaign.variants.map { UInt64($0.weight) }
        constantCollapseID = Self.constantCollapseID(campaign.collapseID)
        defaultLocale = campaign.locale?.defaultLocale ?? "en"
        localeCache = Array(repeating: [:], count: campaign.variants.count)
        variantCounts = Array(repeating: 0, count: campaign.variants.count)
        sampleCandidates = Array(repeating: [], count: campaign.variants.count * 2)
        copiedUnlocalized = Array(repeating: false, count: campaign.variants.count * 2)
        timing = DeliveryTiming(campaign: campaign, start: reference.secondsSince1970)
    }

    /// What assigns the recipient its holdout and arm: its person when `user_key` names one, else its
    /// token.
    func assignmentKey(_ recipient: Recipient) -> (key: String, byPerson: Bool) {
        if let userKey, let person = recipient.attributes[userKey]?.text, !person.isEmpty {
            return ("user:" + person, true)
        }
        return (recipient.token, false)
    }

    mutating func plan(_ recipient: Recipient, seq: Int) -> PlannedPush? {
        let (key, byPerson) = assignmentKey(recipient)
        if byPerson { assignedByPerson += 1 }
        let hash = StableHash.hash(key, prefixedBy: campaign.id)
        if isHeldOut(hash) {
            heldOut += 1
            return nil
        }
        var due: Int64?
        var pushExpiration = expiration
        var timingVerdict: DeliveryTiming.Verdict?
        if timing != nil {
            let verdict = timing!.verdict(for: recipient)
            switch verdict {
            case .due(let time, _, _, let expiresAt):
                if let onlyDue, time != onlyDue { return nil }
                due = time
                if let expiresAt { pushExpiration = .at(Timestamp(secondsSince1970: expiresAt)) }
            case .dropped(let reason, let fellBack):
                timingSummary.dropped[reason, default: 0] += 1
                if fellBack { timingSummary.fellBack += 1 }
                return nil
            case .invalidZone(let message):
                refuse(recipient, problems: [(.invalidTimeZone, message)])
                return nil
            }
            timingVerdict = verdict
        }
        let variantIndex = chooseVariant(hash >> 32)
        let chosen = variants[variantIndex]

        let (localeName, strings) = locale(of: recipient, variant: variantIndex)
        if countsOnly, !keeps(variant: variantIndex, locale: localeName, platform: recipient.platform) {
            countPlanned(variant: variantIndex, locale: localeName, platform: recipient.platform, timing: timingVerdict)
            return nil
        }

        context.reset(attributes: recipient.attributes, variables: chosen.variant.variables, strings: strings)
        if recipient.platform == .android, let android {
            return planAndroid(
                recipient,
                seq: seq,
                target: android,
                variant: variantIndex,
                locale: localeName,
                due: due,
                timing: timingVerdict
            )
        }
        writer.bytes.removeAll(keepingCapacity: true)
        var problems: [(PreflightReason, String)] = staticIssues[variantIndex].map { ($0.reason, $0.message) }
        do throws(RenderError) {
            try chosen.renderer.render(into: &writer, context: &context)
        } catch {
            problems.append((Self.reason(for: error), "\(error)"))
        }
        var collapseID: String?
        if let constant = constantCollapseID {
            // The same for every recipient: checked once (static rules), no string made per push.
            collapseID = constant
        } else if let template = campaign.collapseID, !template.isConstant {
            // (A constant one that is not valid is refused by the static rules, once per variant.)
            do throws(RenderError) {
                let text = try template.renderText(context: &context)
                if StaticRules.hasHeaderControlCharacters(text) {
                    problems.append(
                        (
                            .headerControlCharacters,
                            "apns-collapse-id '\(text.excerpt())' holds control characters; no header may"
                        )
                    )
                }
                if text.utf8.count > 64 {
                    problems.append(
                        (.collapseIDTooLong, "apns-collapse-id is \(text.utf8.count) bytes; APNs takes at most 64")
                    )
                }
                collapseID = text
            } catch {
                problems.append((Self.reason(for: error), "collapse_id: \(error)"))
            }
        }
        let rendered = problems.allSatisfy { ![.missingVariable, .missingString, .renderBudget].contains($0.0) }
        if rendered {
            let size = writer.bytes.count
            sizes.record(size)
            if size > campaign.pushType.payloadLimit {
                problems.append(
                    (
                        .payloadTooLarge,
                        "payload is \(size) bytes; APNs takes at most \(campaign.pushType.payloadLimit) for \(campaign.pushType.rawValue)"
                    )
                )
            }
        }
        guard problems.isEmpty else {
            refuse(recipient, problems: problems)
            return nil
        }

        let push = PlannedPush(
            token: recipient.token,
            apnsID: UUIDv5.make(namespace: runNamespace, name: recipient.token),
            variant: chosen.variant.name,
            locale: localeName,
            pushType: campaign.pushType,
            priority: campaign.priority,
            topic: campaign.topic,
            expiration: pushExpiration,
            collapseID: collapseID,
            // A copy of exactly the payload's size: handing over the writer's own buffer would leave
            // a 4 KB buffer with every push in flight and make the writer allocate a new one.
            payload: writer.bytes.withUnsafeBufferPointer { Array($0) },
            row: recipient.row,
            seq: seq,
            due: due
        )
        count(push, variant: variantIndex, timing: timingVerdict)
        return push
    }

    /// Counts a planned push: its variant, locale, platform and moment; keeps samples and copies.
    mutating func count(_ push: PlannedPush, variant variantIndex: Int, timing timingVerdict: DeliveryTiming.Verdict?) {
        countPlanned(variant: variantIndex, locale: push.locale, platform: push.platform, timing: timingVerdict)
        let slot = variantIndex * 2 + (push.platform == .ios ? 0 : 1)
        if sampleCandidates[slot].count < sampleLimit { sampleCandidates[slot].append(push) }
        // A flag per variant when it is not localized: no hashing per push on the send path.
        if let localeName = push.locale {
            let key = CopyKey(variant: variantIndex, locale: localeName, platform: push.platform)
            if copies.count < Self.copyLimit, copies[key] == nil { copies[key] = push }
        } else if !copiedUnlocalized[slot] {
            copiedUnlocalized[slot] = true
            copies[CopyKey(variant: variantIndex, locale: nil, platform: push.platform)] = push
        }
    }

    /// Counts a planned push by its variant, locale, platform and moment.
    mutating func countPlanned(
        variant variantIndex: Int,
        locale localeName: String?,
        platform: Platform,
        timing timingVerdict: DeliveryTiming.Verdict?
    ) {
        planned += 1
        if platform == .android { androidPlanned += 1 }
        if case .due(let time, let deferred, let fellBack, _)? = timingVerdict {
            timingSummary.record(due: time, deferred: deferred, fellBack: fellBack)
        }
        variantCounts[variantIndex] += 1
        if let localeName { localeCounts[localeName, default: 0] += 1 }
    }

    /// Whether a push of this variant, locale and platform would be kept as a sample or a copy:
    /// the only pushes a plan that `countsOnly` renders.
    func keeps(variant variantIndex: Int, locale localeName: String?, platform: Platform) -> Bool {
        let slot = variantIndex * 2 + (platform == .ios ? 0 : 1)
        if sampleCandidates[slot].count < sampleLimit { return true }
        guard let localeName else { return !copiedUnlocalized[slot] }
        return copies.count < Self.copyLimit
            && copies[CopyKey(variant: variantIndex, locale: localeName, platform: platform)] == nil
    }

    /// Plans an Android recipient: its `FCMMessage` rendered from the same context, checked by FCM's
    /// own rules before anything is sent.
    mutating func planAndroid(
        _ recipient: Recipient,
        seq: Int,
        target: AndroidTarget,
        variant variantIndex: Int,
        locale localeName: String?,
        due: Int64?,
        timing timingVerdict: DeliveryTiming.Verdict?
    ) -> PlannedPush? {
        var message: FCMMessage
        do throws(AndroidRenderError) {
            message = try target.render(context: &context)
        } catch {
            refuse(recipient, problems: [(Self.reason(for: error.error), "\(error.field): \(error.error)")])
            return nil
        }
        message.expiration = androidExpiration
        if let due, case .afterSend(let span)? = androidExpiration {
            message.expiration = .at(Timestamp(secondsSince1970: due) + span)
        }
        let body = message.body(token: recipient.token)
        // The first message of each variant through every rule FCM has (parsing it as the simulator
        // does); the others through those what a recipient changes can break.
        let problem: FCMError?
        if checkedAndroidVariants.insert(variantIndex).inserted {
            let at = sendTime ?? due.map(Timestamp.init(secondsSince1970:)) ?? reference
            problem = message.problem(token: recipient.token, sendTime: at)
        } else {
            problem = message.recipientProblem(body: body, token: recipient.token)
        }
        if let problem {
            let field = problem.fieldViolations.first?.field
            let reason: PreflightReason =
                problem.message.hasPrefix("Message is too big")
                ? .fcmPayloadTooLarge : problem.message.contains("reserved") ? .fcmReservedKey : .fcmInvalidMessage
            refuse(
                recipient,
                problems: [(reason, (field.map { "\($0): " } ?? "") + problem.message)]
            )
            return nil
        }
        androidSizes.record(body.count)
        var push = PlannedPush(
            token: recipient.token,
            apnsID: UUIDv5.make(namespace: runNamespace, name: recipient.token),
            variant: variants[variantIndex].variant.name,
            locale: localeName,
            pushType: .alert,
            priority: message.priority == .normal ? 5 : 10,
            topic: "",
            expiration: message.expiration,
            collapseID: nil,
            payload: body,
            row: recipient.row,
            seq: seq,
            due: due
        )
        push.platform = .android
        count(push, variant: variantIndex, timing: timingVerdict)
        return push
    }

    /// The collapse id's text when the template has no tags and the text passes the header checks;
    /// otherwise nil, and each recipient's is rendered and checked (and refused, with a reason).
    static func constantCollapseID(_ template: MustacheTemplate?) -> String? {
        guard let template, template.isConstant else { return nil }
        var context = RenderContext(attributes: .empty, variables: .empty, strings: [:])
        guard let text = try? template.renderText(context: &context), !StaticRules.hasHeaderControlCharacters(text),
            text.utf8.count <= 64
        else { return nil }
        return text
    }

    /// Counts a recipient pre-flight refuses, once per reason, keeping the first located examples.
    mutating func refuse(_ recipient: Recipient, problems: [(PreflightReason, String)]) {
        failed += 1
        let location = SourceLocation(path: campaign.audience.source.name, line: recipient.row)
        var seen: Set<PreflightReason> = []
        for (reason, detail) in problems where seen.insert(reason).inserted {
            failures[reason, default: PlanSummary.FailureStat()].count += 1
            if failures[reason]!.examples.count < PlanSummary.failureExampleLimit {
                failures[reason]!.examples.append(.init(location: location, token: recipient.token, detail: detail))
            }
        }
    }

    /// The holdout keeps a recipient back when the low 32 bits of its hash fall under the share.
    func isHeldOut(_ hash: UInt64) -> Bool {
        (hash & 0xFFFF_FFFF) % 10_000 < UInt64(campaign.holdout.basisPoints)
    }

    /// The locale a recipient of variant `index` gets (after fallback) and its strings; nil and none
    /// when the variant is not localized.
    mutating func locale(
        of recipient: Recipient,
        variant index: Int
    ) -> (locale: String?, strings: [String: MustacheTemplate]) {
        guard let table = variants[index].variant.strings else { return (nil, [:]) }
        let raw = localeAttribute.flatMap { recipient.attributes[$0]?.text }
        if let cached = localeCache[index][raw] { return cached }
        let resolved = table.resolve(raw)
        if localeCache[index].count < 4096 { localeCache[index][raw] = resolved }
        return resolved
    }

    /// Where the plan puts `recipient`, rendering nothing: held out (variant nil, with the locale the
    /// first variant would give it), or its variant and locale.
    mutating func assignment(of recipient: Recipient) -> (variant: Int?, locale: String?) {
        let hash = StableHash.hash(assignmentKey(recipient).key, prefixedBy: campaign.id)
        let variant = isHeldOut(hash) ? nil : chooseVariant(hash >> 32)
        return (variant, locale(of: recipient, variant: variant ?? 0).locale)
    }

    func chooseVariant(_ value: UInt64) -> Int {
        guard weights.count > 1, totalWeight > 0 else { return 0 }
        var point = value % totalWeight
        for (index, weight) in weights.enumerated() {
            if point < weight { return index }
            point -= weight
        }
        return weights.count - 1
    }

    static func reason(for error: RenderError) -> PreflightReason {
        switch error {
        case .missingVariable: return .missingVariable
        case .missingString, .tooDeep: return .missingString
        case .overBudget: return .renderBudget
        }
    }

    func summary(audience: AudienceCounts, sendTimeSource: String?) -> PlanSummary {
        var summary = PlanSummary(
            campaign: campaign.id,
            description: campaign.description,
            revision: campaign.revision,
            app: campaign.appLabel,
            destination: campaign.app?.destination,
            pushType: campaign.pushType,
            priority: campaign.priority,
            topic: campaign.topic,
            expiration: campaign.expiration,
            collapseID: campaign.collapseID?.text,
            filter: campaign.filterText,
            source: campaign.audience.source.name,
            audience: audience,
            holdout: campaign.holdout,
            rate: campaign.rate,
            rateIsDefault: campaign.rateIsDefault,
            connections: campaign.connections,
            sendTime: sendTime,
            sendTimeSource: sendTimeSource,
            frequencyCap: campaign.frequencyCap
        )
        summary.heldOut = heldOut
        summary.skipped = skipped
        summary.skippedVariants = skippedVariants
        summary.skippedLocales = skippedLocales
        summary.skippedPlatforms = skippedPlatforms
        summary.suppressed = suppressed
        summary.capped = capped
        summary.unsubscribed = unsubscribed
        summary.joinedSubscriptions = joined
        summary.planned = planned
        summary.failed = failed
        if campaign.hasVariants {
            summary.variants = campaign.variants.enumerated().map {
                ($0.element.name, $0.element.weight, variantCounts[$0.offset])
            }
        }
        summary.locales = localeCounts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map {
            ($0.key, $0.value)
        }
        summary.payloadSizes = sizes
        summary.androidPayloadSizes = androidSizes
        if planned > androidPlanned { summary.platforms[.ios] = planned - androidPlanned }
        if androidPlanned > 0 { summary.platforms[.android] = androidPlanned }
        summary.android = campaign.android.map { ($0.app.name, $0.app.destinationText, $0.app.projectID) }
        summary.assignmentUnit = userKey.map { "person (\($0))" } ?? "device"
        summary.readout = campaign.readout
        if timing != nil { summary.timing = timingSummary }
        summary.subscriptions = campaign.subscriptions
        summary.trigger = campaign.trigger
        summary.schedule = campaign.schedule
        summary.quietHours = campaign.quietHours
        if let schedule = campaign.schedule, schedule.isRecurring {
            summary.nextSlots = schedule.slots(after: now, through: .max, limit: 5)
        }
        summary.failures = failures
        // Samples: round-robin over variants, first pushes first, so every variant is shown.
        var samples: [PlannedPush] = []
        var round = 0
        while samples.count < sampleLimit, sampleCandidates.contains(where: { $0.count > round }) {
            for candidates in sampleCandidates where candidates.count > round && samples.count < sampleLimit {
                samples.append(candidates[round])
            }
            round += 1
        }
        summary.samples = samples
        summary.copies = copies.sorted { lhs, rhs in
            if lhs.key.variant != rhs.key.variant { return lhs.key.variant < rhs.key.variant }
            if lhs.key.platform != rhs.key.platform { return lhs.key.platform < rhs.key.platform }
            return (lhs.key.locale ?? "") < (rhs.key.locale ?? "")
        }
        .map(\.value)
        return summary
    }
}
