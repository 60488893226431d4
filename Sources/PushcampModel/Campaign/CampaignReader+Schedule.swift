import Yams

extension CampaignReader {
    static let scheduleKeys = [
        "at", "cron", "every", "timezone", "from", "until", "catch_up", "overlap", "zone_attribute", "fallback",
        "invalid_zone", "on_passed",
    ]
    static let recipientZoneKeys = ["zone_attribute", "fallback", "invalid_zone"]

    /// `schedule:` — exactly one of `at`, `cron` or `every`, with the keys that suit it.
    static func readSchedule(_ node: Node, _ reader: YAMLReader) -> ScheduleSpec? {
        guard let map = reader.mapping(node, in: "schedule", allowed: scheduleKeys) else { return nil }
        let rules = ["at", "cron", "every"].filter { map[$0] != nil }
        guard rules.count == 1, let ruleKey = rules.first else {
            if rules.isEmpty {
                reader.error(
                    "'schedule' needs one of 'at' (once), 'cron' (a cron expression) or 'every' (a period)",
                    at: node
                )
            } else {
                reader.error(
                    "'schedule' takes one of 'at', 'cron' or 'every', found \(rules.map { "'\($0)'" }.joined(separator: " and "))",
                    at: map.keyNode(rules[1])
                )
            }
            return nil
        }
        var failed = false
        var zone = Zone.utc
        var recipient = false
        if let zoneNode = map["timezone"] {
            if let text = reader.scalar(zoneNode, "schedule.timezone"), text == "recipient" {
                recipient = true
            } else if let named = reader.parsed(zoneNode, "schedule.timezone", Zone.parse) {
                zone = named
            } else {
                failed = true
            }
        }
        for key in recipientZoneKeys + ["on_passed"] where map[key] != nil && !recipient {
            reader.error(
                "'schedule.\(key)' is for a schedule at each recipient's local time ('timezone: recipient')",
                at: map.keyNode(key)
            )
            failed = true
        }
        if recipient {
            guard ruleKey == "at" else {
                reader.error(
                    "'timezone: recipient' takes a local 'at' (like \"2027-03-20T09:00\"); a recurring schedule runs in one zone",
                    at: map["timezone"]
                )
                return nil
            }
            for key in ["from", "until"] where map[key] != nil {
                reader.error(
                    "'schedule.\(key)' bounds a recurring schedule ('cron' or 'every'), not 'at'",
                    at: map.keyNode(key)
                )
                failed = true
            }
            let zones = readRecipientZones(map, context: "schedule", inheriting: RecipientZones(), reader)
            let onPassed = map["on_passed"].flatMap { node in
                reader.parsed(node, "schedule.on_passed") { text in
                    LocalDelivery.OnPassed(rawValue: text).map { .success($0) }
                        ?? .failure(
                            ValueError("'\(text)' is not an on_passed policy; write next_day, send_now or skip")
                        )
                }
            }
            let time = map["at"].flatMap { node in
                reader.parsed(node, "schedule.at") { text in
                    switch LocalDateTime.parse(text) {
                    case .success(let time): return .success(time)
                    case .failure:
                        return .failure(
                            ValueError(
                                "'\(text)' must be a local time without a zone, like \"2027-03-20T09:00\": each recipient gets it on their own clock"
                            )
                        )
                    }
                }
            }
            guard let time, let zones, !failed, !reader.diagnostics.hasErrors else { return nil }
            return ScheduleSpec(
                rule: .local(LocalDelivery(time: time, zones: zones, onPassed: onPassed ?? .nextDay)),
                catchUp: map["catch_up"].map { readCatchUp($0, reader) } ?? CatchUp(),
                overlap: .skip
            )
        }
        let from = map["from"].flatMap { reader.parsed($0, "schedule.from", Timestamp.parse) }
        let until = map["until"].flatMap { reader.parsed($0, "schedule.until", Timestamp.parse) }
        if (map["from"] != nil && from == nil) || (map["until"] != nil && until == nil) { failed = true }
        if let from, let until, until <= from {
            reader.error("'schedule.until' (\(until)) must come after 'schedule.from' (\(from))", at: map["until"])
            failed = true
        }
        let rule: ScheduleSpec.Rule?
        let ruleNode = map[ruleKey]!
        switch ruleKey {
        case "at":
            for key in ["from", "until"] where map[key] != nil {
                reader.error(
                    "'schedule.\(key)' bounds a recurring schedule ('cron' or 'every'), not 'at'",
                    at: map.keyNode(key)
                )
                failed = true
            }
            rule = readAt(ruleNode, zone: zone, zoneGiven: map["timezone"] != nil, reader).map { .at($0) }
        case "cron":
            rule = reader.parsed(ruleNode, "schedule.cron", CronExpression.parse).map { .cron($0) }
        default:
            if map["timezone"] != nil {
                reader.error(
                    "'schedule.timezone' has no effect on 'every' (a period is the same in every zone); start it at a local time with 'from'",
                    at: map.keyNode("timezone")
                )
                failed = true
            }
            rule = reader.parsed(ruleNode, "schedule.every", TimeSpan.parse).flatMap { span in
                guard span.seconds >= 1 else {
                    reader.error("'schedule.every' must be at least 1s", at: ruleNode)
                    return nil
                }
                return .every(span)
            }
        }
        let catchUp = map["catch_up"].map { readCatchUp($0, reader) } ?? CatchUp()
        let overlap = map["overlap"].flatMap { node in
            reader.parsed(node, "schedule.overlap") { text in
                Overlap(rawValue: text).map { .success($0) }
                    ?? .failure(ValueError("'\(text)' is not an overlap policy; write skip or queue"))
            }
        }
        if map["overlap"] != nil && overlap == nil { failed = true }
        guard let rule, !failed else { return nil }
        return ScheduleSpec(
            rule: rule,
            zone: zone,
            from: from,
            until: until,
            catchUp: catchUp,
            overlap: overlap ?? .skip
        )
    }

    /// `at:` — an instant with its offset, or a wall time read in `timezone`.
    private static func readAt(_ node: Node, zone: Zone, zoneGiven: Bool, _ reader: YAMLReader) -> Timestamp? {
        guard let text = reader.scalar(node, "schedule.at") else { return nil }
        let local = LocalDateTime.parse(text)
        if zoneGiven, case .failure(let problem) = local, case .failure = Timestamp.parse(text) {
            // With a zone named, the value is a wall time: its own problem is the one to say.
            reader.error("'schedule.at': \(problem.message)", at: node)
            return nil
        }
        if case .success(let local) = local {
            guard zoneGiven else {
                reader.error(
                    "'schedule.at': '\(text.excerpt())' has no zone; add Z (UTC) or an offset like +01:00, or name "
                        + "the zone with 'schedule.timezone'",
                    at: node
                )
                return nil
            }
            return Timestamp(secondsSince1970: zone.instant(of: local))
        }
        guard let instant = reader.parsed(node, "schedule.at", Timestamp.parse) else { return nil }
        if zoneGiven {
            reader.error(
                "'schedule.at': '\(text.excerpt())' carries its own offset, so 'schedule.timezone' would be ignored; "
                    + "write a local time like 2027-03-20T09:00 with the zone, or drop 'timezone'",
                at: node
            )
            return nil
        }
        return instant
    }

    /// `zone_attribute`, `fallback` and `invalid_zone` of `map` (in `context`), over `inherited`.
    static func readRecipientZones(
        _ map: YAMLReader.Mapping,
        context: String,
        inheriting inherited: RecipientZones,
        _ reader: YAMLReader
    ) -> RecipientZones? {
        var zones = inherited
        var failed = false
        if let node = map["zone_attribute"] {
            if let attribute = reader.string(node, "\(context).zone_attribute") {
                zones.attribute = attribute
            } else {
                failed = true
            }
        }
        if let node = map["fallback"] {
            if let fallback = reader.parsed(node, "\(context).fallback", Zone.parse) {
                zones.fallback = fallback
            } else {
                failed = true
            }
        }
        if let node = map["invalid_zone"] {
            let invalid = reader.parsed(node, "\(context).invalid_zone") { text in
                RecipientZones.Invalid(rawValue: text).map { .success($0) }
                    ?? .failure(ValueError("'\(text)' is not a policy; write refuse or fallback"))
            }
            if let invalid { zones.invalid = invalid } else { failed = true }
        }
        return failed ? nil : zones
    }

    static let quietHoursKeys = ["from", "to", "timezone", "action"] + recipientZoneKeys

    /// `quiet_hours:` — a window on each recipient's clock (the schedule's zones by default) or in one zone.
    static func readQuietHours(_ node: Node, schedule: ScheduleSpec?, _ reader: YAMLReader) -> QuietHours? {
        guard let map = reader.mapping(node, in: "quiet_hours", allowed: quietHoursKeys, required: ["from", "to"])
        else { return nil }
        let from = map["from"].flatMap { reader.parsed($0, "quiet_hours.from", QuietHours.parseClock) }
        let to = map["to"].flatMap { reader.parsed($0, "quiet_hours.to", QuietHours.parseClock) }
        if let from, let to, from == to {
            reader.error(
                "'quiet_hours' from \(map["from"].map(reader.describe) ?? "") to the same time is empty",
                at: map["to"]
            )
        }
        let action = map["action"].flatMap { node in
            reader.parsed(node, "quiet_hours.action") { text in
                QuietHours.Action(rawValue: text).map { .success($0) }
                    ?? .failure(ValueError("'\(text)' is not a quiet-hours action; write defer or drop"))
            }
        }
        var clock: QuietHours.Clock?
        let zoneText = map["timezone"].flatMap { reader.scalar($0, "quiet_hours.timezone") } ?? "recipient"
        if zoneText == "recipient" {
            let inherited = schedule?.local?.zones ?? RecipientZones()
            clock = readRecipientZones(map, context: "quiet_hours", inheriting: inherited, reader).map {
                .recipient($0)
            }
        } else {
            for key in recipientZoneKeys where map[key] != nil {
                reader.error(
                    "'quiet_hours.\(key)' is for quiet hours on each recipient's clock ('timezone: recipient')",
                    at: map.keyNode(key)
                )
            }
            clock = map["timezone"].flatMap { reader.parsed($0, "quiet_hours.timezone", Zone.parse) }.map { .zone($0) }
        }
        guard let from, let to, from != to, let clock else { return nil }
        return QuietHours(from: from, to: to, clock: clock, action: action ?? .defer)
    }

    private static func readCatchUp(_ node: Node, _ reader: YAMLReader) -> CatchUp {
        guard let map = reader.mapping(node, in: "schedule.catch_up", allowed: ["within", "mode"]) else {
            return CatchUp()
        }
        var catchUp = CatchUp()
        if let within = map["within"].flatMap({ reader.parsed($0, "schedule.catch_up.within", TimeSpan.parse) }) {
            catchUp.within = within
        }
        if let mode = map["mode"].flatMap({ node in
            reader.parsed(node, "schedule.catch_up.mode") { text in
                CatchUp.Mode(rawValue: text).map { .success($0) }
                    ?? .failure(ValueError("'\(text)' is not a catch-up mode; write latest, all or skip"))
            }
        }) {
            catchUp.mode = mode
        }
        return catchUp
    }
}
