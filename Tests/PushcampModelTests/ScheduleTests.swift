import Foundation
import PushcampModel
import Testing

@Suite("Schedules: zones, cron, slots")
struct ScheduleTests {
    func instant(_ text: String) -> Int64 {
        guard case .success(let timestamp) = Timestamp.parse(text) else {
            Issue.record("bad timestamp \(text)")
            return 0
        }
        return timestamp.secondsSince1970
    }

    func local(_ text: String) -> LocalDateTime {
        guard case .success(let value) = LocalDateTime.parse(text) else {
            Issue.record("bad local time \(text)")
            return LocalDateTime(year: 1970, month: 1, day: 1)
        }
        return value
    }

    /// The DST table of issue #15: a gap moves the time forward by the gap, an overlap takes the
    /// first occurrence, and the day never changes.
    @Test(arguments: [
        ("America/New_York", "2026-03-08T02:30", "2026-03-08T03:30:00-04:00"),  // spring forward, 1 h gap
        ("America/New_York", "2026-11-01T01:30", "2026-11-01T01:30:00-04:00"),  // fall back: the EDT one
        ("Africa/Cairo", "2026-04-24T00:30", "2026-04-24T01:30:00+03:00"),  // gap at midnight
        ("Australia/Lord_Howe", "2026-10-04T02:15", "2026-10-04T02:45:00+11:00"),  // 30-minute gap
        ("Europe/Paris", "2026-03-29T02:30", "2026-03-29T03:30:00+02:00"),
        ("Europe/Paris", "2026-10-25T02:30", "2026-10-25T02:30:00+02:00"),
        ("Europe/Paris", "2026-07-01T09:00", "2026-07-01T09:00:00+02:00"),
        ("UTC", "2026-07-01T09:00", "2026-07-01T09:00:00Z"),
    ])
    func localTimesBecomeInstantsByTheDSTRule(zone: String, wall: String, expected: String) throws {
        let zone = try #require(Zone.named(zone))
        #expect(zone.instant(of: local(wall)) == instant(expected))
    }

    @Test func unknownZonesAreRefusedWithASuggestion() {
        guard case .failure(let error) = Zone.parse("Europe/Pariss") else {
            Issue.record("Europe/Pariss accepted")
            return
        }
        #expect(error.message.contains("did you mean 'Europe/Paris'?"))
        // Abbreviations mean different things on different systems.
        #expect(Zone.named("EST") == nil)
        #expect(Zone.named("CET") == nil)
    }

    @Test func cronSlotsOnWeekdaysInAZone() throws {
        let cron = try CronExpression.parse("0 9 * * MON-FRI").get()
        let paris = try #require(Zone.named("Europe/Paris"))
        // Friday 2027-03-19 10:00 Paris → next is Monday 2027-03-22 09:00 (UTC+1).
        var slots: [Int64] = []
        var cursor = instant("2027-03-19T09:00:00Z")
        for _ in 0..<3 {
            let next = try #require(cron.next(after: cursor, in: paris))
            slots.append(next)
            cursor = next
        }
        #expect(
            slots == [
                instant("2027-03-22T09:00:00+01:00"), instant("2027-03-23T09:00:00+01:00"),
                instant("2027-03-24T09:00:00+01:00"),
            ]
        )
        // Across the spring change (2027-03-28): the Monday after is 09:00 summer time.
        #expect(cron.next(after: instant("2027-03-26T12:00:00Z"), in: paris) == instant("2027-03-29T09:00:00+02:00"))
    }

    @Test func cronInAGapFiresOnceMovedForwardAndInARepeatedHourOnce() throws {
        let newYork = try #require(Zone.named("America/New_York"))
        let halfPastTwo = try CronExpression.parse("30 2 * * *").get()
        // 2026-03-08 has no 02:30: the slot is 03:30 EDT, the same day.
        #expect(
            halfPastTwo.next(after: instant("2026-03-08T00:00:00-05:00"), in: newYork)
                == instant("2026-03-08T03:30:00-04:00")
        )
        // Every 30 minutes through the fall-back night: 01:00 and 01:30 fire once each (EDT).
        let halfHourly = try CronExpression.parse("*/30 0-2 * * *").get()
        var slots: [Int64] = []
        var cursor = instant("2026-11-01T00:00:00-04:00")
        while let next = halfHourly.next(after: cursor, in: newYork), next < instant("2026-11-01T03:00:00-05:00") {
            slots.append(next)
            cursor = next
        }
        #expect(
            slots == [
                instant("2026-11-01T00:30:00-04:00"), instant("2026-11-01T01:00:00-04:00"),
                instant("2026-11-01T01:30:00-04:00"), instant("2026-11-01T02:00:00-05:00"),
                instant("2026-11-01T02:30:00-05:00"),
            ]
        )
        // Cairo's midnight gap: 00:15 moves to 01:15 the same day, not a day later.
        let cairo = try #require(Zone.named("Africa/Cairo"))
        let quarterPast = try CronExpression.parse("15 0 * * *").get()
        #expect(
            quarterPast.next(after: instant("2026-04-23T12:00:00Z"), in: cairo)
                == instant("2026-04-24T01:15:00+03:00")
        )
    }

    @Test func cronFieldsListsStepsNamesAndTheDayRule() throws {
        let cron = try CronExpression.parse("0,30 8-18/2 1,15 * SUN").get()
        // Day of month and day of week both restricted: either matches (2027-03-07 is a Sunday).
        #expect(cron.next(after: instant("2027-03-06T23:00:00Z"), in: .utc) == instant("2027-03-07T08:00:00Z"))
        #expect(cron.next(after: instant("2027-03-07T08:00:00Z"), in: .utc) == instant("2027-03-07T08:30:00Z"))
        #expect(cron.next(after: instant("2027-03-07T18:30:00Z"), in: .utc) == instant("2027-03-14T08:00:00Z"))
        let daily = try CronExpression.parse("@daily").get()
        #expect(daily.next(after: instant("2027-03-07T18:30:00Z"), in: .utc) == instant("2027-03-08T00:00:00Z"))
        let leap = try CronExpression.parse("0 12 29 FEB *").get()
        #expect(leap.next(after: instant("2025-01-01T00:00:00Z"), in: .utc) == instant("2028-02-29T12:00:00Z"))
    }

    @Test(arguments: [
        ("0 9 * *", "has 4 fields; a cron expression has five"),
        ("61 9 * * *", "minute '61' is out of range 0-59"),
        ("0 24 * * *", "hour '24' is out of range 0-23"),
        ("0 9 * * MON-FRX", "day of week 'FRX' is not a number from 0 to 7 or a name (SUN…SAT)"),
        ("0 9 0 * *", "day of month '0' is out of range 1-31"),
        ("*/0 9 * * *", "the step after '/' must be 1 to 59"),
        ("0 9 5-1 * *", "a range goes from low to high"),
        ("0 0 30 2 *", "never fires: no month it names has day 30"),
        ("@sometimes", "is not a cron shorthand"),
    ])
    func badCronExpressionsSayWhatIsWrong(text: String, message: String) {
        guard case .failure(let error) = CronExpression.parse(text) else {
            Issue.record("'\(text)' accepted")
            return
        }
        #expect(error.message.contains(message), "\(error.message)")
    }

    @Test func everySlotsCountFromTheirStartAndStopAtUntil() throws {
        let schedule = ScheduleSpec(
            rule: .every(TimeSpan(seconds: 6 * 3600)),
            from: Timestamp(secondsSince1970: instant("2027-03-01T00:00:00Z")),
            until: Timestamp(secondsSince1970: instant("2027-03-01T18:00:00Z"))
        )
        #expect(
            schedule.slots(after: instant("2027-02-01T00:00:00Z"), through: instant("2027-04-01T00:00:00Z"))
                == [
                    instant("2027-03-01T00:00:00Z"), instant("2027-03-01T06:00:00Z"), instant("2027-03-01T12:00:00Z"),
                    instant("2027-03-01T18:00:00Z"),
                ]
        )
        // Without `from`, slots are aligned to 1970-01-01T00:00Z: the same whenever serve starts.
        let aligned = ScheduleSpec(rule: .every(TimeSpan(seconds: 3600)))
        #expect(aligned.nextSlot(after: instant("2027-03-01T10:20:00Z")) == instant("2027-03-01T11:00:00Z"))
        #expect(aligned.nextSlot(after: instant("2027-03-01T11:00:00Z")) == instant("2027-03-01T12:00:00Z"))
    }

    func diagnostics(_ schedule: String) -> [String] {
        let yaml = """
            campaign: spring
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: templates/p.yaml
            schedule: \(schedule)
            """
        let (document, parse) = YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml")
        guard let document else { return parse.map(\.description) }
        return CampaignReader.read(document).1.map(\.description)
    }

    func schedule(_ text: String) -> ScheduleSpec? {
        let yaml = """
            campaign: spring
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: templates/p.yaml
            schedule: \(text)
            """
        let (document, _) = YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml")
        return document.flatMap { CampaignReader.read($0).0?.schedule }
    }

    @Test func scheduleFormsAreRead() throws {
        let once = try #require(schedule("{ at: 2027-03-20T09:00:00Z }"))
        #expect(once.at?.secondsSince1970 == instant("2027-03-20T09:00:00Z"))
        #expect(once.catchUp == CatchUp(within: TimeSpan(seconds: 3600), mode: .latest))
        #expect(once.overlap == .skip)
        let local = try #require(schedule("{ at: \"2027-03-20T09:00\", timezone: Europe/Paris }"))
        #expect(local.at?.secondsSince1970 == instant("2027-03-20T09:00:00+01:00"))
        let cron = try #require(
            schedule(
                "{ cron: \"0 9 * * MON-FRI\", timezone: Europe/Paris, catch_up: { within: 15m, mode: all }, overlap: queue }"
            )
        )
        #expect(cron.zone.identifier == "Europe/Paris")
        #expect(cron.catchUp == CatchUp(within: TimeSpan(seconds: 900), mode: .all))
        #expect(cron.overlap == .queue)
        #expect(cron.description == "cron \"0 9 * * MON-FRI\" in Europe/Paris")
        let every = try #require(schedule("{ every: 2s, until: 2027-04-01T00:00:00Z }"))
        #expect(every.rule == .every(TimeSpan(seconds: 2)))
    }

    @Test func scheduleMistakesAreLocated() {
        #expect(
            diagnostics("{ cron: \"0 25 * * *\", timezone: Europe/Pariss }") == [
                "campaigns/c.yaml:7:43: error: 'schedule.timezone': 'Europe/Pariss' is not a time zone; did you mean 'Europe/Paris'?; write an IANA zone name such as Europe/Paris or America/New_York, or UTC",
                "campaigns/c.yaml:7:19: error: 'schedule.cron': hour '25' is out of range 0-23",
            ]
        )
        #expect(
            diagnostics("{ at: 2027-03-20T09:00:00Z, every: 1h }") == [
                "campaigns/c.yaml:7:39: error: 'schedule' takes one of 'at', 'cron' or 'every', found 'at' and 'every'"
            ]
        )
        #expect(
            diagnostics("{ at: \"2027-03-20T09:00\" }") == [
                "campaigns/c.yaml:7:17: error: 'schedule.at': '2027-03-20T09:00' has no zone; add Z (UTC) or an offset like +01:00, or name the zone with 'schedule.timezone'"
            ]
        )
        // Issue 43: year 0001 made a negative apns-expiration; said at the key, as a wall time too.
        #expect(
            diagnostics("{ at: 0001-01-01T00:00:00Z }") == [
                "campaigns/c.yaml:7:17: error: 'schedule.at': '0001-01-01T00:00:00Z' is in the year 1; times run from 1970 (APNs counts seconds since then) to 9999"
            ]
        )
        #expect(
            diagnostics("{ at: \"0001-01-01T09:00\", timezone: Europe/Paris }") == [
                "campaigns/c.yaml:7:17: error: 'schedule.at': '0001-01-01T09:00' is in the year 1; times run from 1970 (APNs counts seconds since then) to 9999"
            ]
        )
        #expect(
            diagnostics("{ every: 6h, from: 2027-03-02T00:00:00Z, until: 2027-03-01T00:00:00Z, overlap: wait }") == [
                "campaigns/c.yaml:7:59: error: 'schedule.until' (2027-03-01T00:00:00Z) must come after 'schedule.from' (2027-03-02T00:00:00Z)",
                "campaigns/c.yaml:7:90: error: 'schedule.overlap': 'wait' is not an overlap policy; write skip or queue",
            ]
        )
        #expect(
            diagnostics("{ every: 1h, catch_up: { mode: sometimes } }") == [
                "campaigns/c.yaml:7:42: error: 'schedule.catch_up.mode': 'sometimes' is not a catch-up mode; write latest, all or skip"
            ]
        )
        #expect(
            diagnostics("{ at: 2027-03-20T09:00:00Z, timezone: recipient }").first?.contains(
                "must be a local time without a zone, like \"2027-03-20T09:00\""
            ) == true
        )
        #expect(
            diagnostics("{ cron: \"0 9 * * *\", timezone: recipient }").first?.contains("takes a local 'at'") == true
        )
        #expect(
            diagnostics("{ every: 1h, fallback: UTC }") == [
                "campaigns/c.yaml:7:24: error: 'schedule.fallback' is for a schedule at each recipient's local time ('timezone: recipient')"
            ]
        )
    }

    @Test func recipientLocalSchedulesAndQuietHoursAreRead() throws {
        let yaml = """
            campaign: spring
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: templates/p.yaml
            schedule: { at: "2027-03-20T09:00", timezone: recipient, zone_attribute: tz, fallback: America/New_York, on_passed: skip, invalid_zone: fallback }
            quiet_hours: { from: "21:00", to: "08:00" }
            """
        let (document, _) = YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml")
        let campaign = try #require(document.flatMap { CampaignReader.read($0).0 })
        let local = try #require(campaign.schedule?.local)
        #expect(local.time == LocalDateTime(year: 2027, month: 3, day: 20, hour: 9))
        #expect(
            local.zones
                == RecipientZones(attribute: "tz", fallback: Zone.named("America/New_York")!, invalid: .fallback)
        )
        #expect(local.onPassed == .skip)
        // The run starts when UTC+14 reaches 09:00.
        #expect(campaign.schedule?.once == instant("2027-03-19T19:00:00Z"))
        // Quiet hours on the recipient's clock take the schedule's zones.
        let quiet = try #require(campaign.quietHours)
        #expect(quiet == QuietHours(from: 21 * 60, to: 8 * 60, clock: .recipient(local.zones), action: .defer))
        #expect(quiet.contains(minuteOfDay: 23 * 60) && quiet.contains(minuteOfDay: 7 * 60 + 59))
        #expect(!quiet.contains(minuteOfDay: 8 * 60) && !quiet.contains(minuteOfDay: 20 * 60 + 59))

        let broken = yaml.replacingOccurrences(
            of: "quiet_hours: { from: \"21:00\", to: \"08:00\" }",
            with: "quiet_hours: { from: \"25:00\", to: \"08:00\", timezone: Europe/Paris, fallback: UTC, action: mute }"
        )
        let (brokenDocument, _) = YAMLDocument.parse(Array(broken.utf8), path: "campaigns/c.yaml")
        let messages = try #require(brokenDocument.map { CampaignReader.read($0).1.map(\.message) })
        #expect(messages.contains("'quiet_hours.from': '25:00' is not a time of day; write it like 21:00 or 08:30"))
        #expect(messages.contains("'quiet_hours.action': 'mute' is not a quiet-hours action; write defer or drop"))
        #expect(
            messages.contains(
                "'quiet_hours.fallback' is for quiet hours on each recipient's clock ('timezone: recipient')"
            )
        )
    }
}
