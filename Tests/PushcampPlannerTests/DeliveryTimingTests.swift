import Foundation
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

@Suite("Recipient-local time and quiet hours in the plan")
struct DeliveryTimingTests {
    static let zones = ["America/New_York", "Europe/Paris", "Asia/Tokyo", "", "Mars/Olympus"]

    /// A campaign over five recipients, one per zone of `zones` (the fourth has none).
    func plan(_ keys: String, sendTime: String, expiration: String? = nil) throws -> (PlanSummary, [PlannedPush]) {
        let project = try TemporaryProject()
        defer { project.remove() }
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: Self.zones.count, columns: ["tz"]) { [Self.zones[$0]] }
        )
        try project.write(
            "campaigns/c.yaml",
            """
            campaign: local
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: { aps: { alert: hi } }
            \(expiration.map { "  expiration: \($0)" } ?? "")
            \(keys)
            """
        )
        let campaign = try load(project)
        var pushes: [PlannedPush] = []
        let time = try Timestamp.parse(sendTime).get()
        let summary = try Planner(campaign: campaign, sendTime: time, sendTimeSource: "test").run { pushes.append($0) }
        return (summary, pushes)
    }

    func instant(_ text: String) throws -> Int64 { try Timestamp.parse(text).get().secondsSince1970 }

    @Test func eachRecipientIsDueAtTheWallTimeOnTheirOwnClock() throws {
        let (summary, pushes) = try plan(
            """
            schedule: { at: "2027-03-20T09:00", timezone: recipient, zone_attribute: tz, fallback: America/Chicago }
            """,
            sendTime: "2027-03-19T10:00:00Z"
        )
        // New York is on summer time since 14 March, Paris not until 28 March.
        #expect(
            pushes.map(\.due) == [
                try instant("2027-03-20T09:00:00-04:00"), try instant("2027-03-20T09:00:00+01:00"),
                try instant("2027-03-20T09:00:00+09:00"), try instant("2027-03-20T09:00:00-05:00"),
            ]
        )
        // The unreadable zone is refused with its row; the empty one fell back to Chicago.
        #expect(summary.failures[.invalidTimeZone]?.count == 1)
        #expect(summary.failures[.invalidTimeZone]?.examples.first?.location.line == 6)
        let timing = try #require(summary.timing)
        #expect(timing.fellBack == 1)
        #expect(timing.hours.map(\.count) == [1, 1, 1, 1])
        #expect(timing.first == (try instant("2027-03-20T00:00:00Z")))
    }

    @Test(arguments: [
        ("next_day", ["2027-03-21T09:00:00+09:00"], 0),
        ("send_now", ["2027-03-20T05:00:00Z"], 0),
        ("skip", [], 1),
    ])
    func aTimeAlreadyPassedFollowsOnPassed(policy: String, tokyo: [String], skipped: Int) throws {
        // At 05:00Z it is 14:00 in Tokyo: its 09:00 has passed; New York's and Paris's have not.
        let (summary, pushes) = try plan(
            """
            schedule: { at: "2027-03-20T09:00", timezone: recipient, zone_attribute: tz, on_passed: \(policy), invalid_zone: fallback }
            """,
            sendTime: "2027-03-20T05:00:00Z"
        )
        let tokyoDue = pushes.filter { $0.row == 4 }.map(\.due)
        #expect(tokyoDue == (try tokyo.map { Optional(try instant($0)) }))
        #expect(summary.timing?.dropped[.onPassed] ?? 0 == skipped)
        // invalid_zone: fallback sends Mars in UTC (the default fallback): its 09:00Z is still ahead.
        #expect(pushes.first { $0.row == 6 }?.due == (try instant("2027-03-20T09:00:00Z")))
        #expect(summary.timing?.fellBack == 2)
    }

    @Test func quietHoursDeferAcrossMidnightOrDropPastTheExpiration() throws {
        // 23:30Z: New York 19:30 (awake), Paris 00:30 (quiet until 08:00), Tokyo 08:30 (awake),
        // no zone → the fixed fallback UTC 23:30 (quiet until 08:00 UTC).
        let quiet = """
            quiet_hours: { from: "21:00", to: "08:00", zone_attribute: tz, invalid_zone: fallback }
            """
        let (summary, pushes) = try plan(quiet, sendTime: "2027-03-19T23:30:00Z")
        let due = Dictionary(uniqueKeysWithValues: pushes.map { ($0.row, $0.due) })
        #expect(due[2] == (try instant("2027-03-19T23:30:00Z")))
        #expect(due[3] == (try instant("2027-03-20T08:00:00+01:00")))
        #expect(due[4] == (try instant("2027-03-19T23:30:00Z")))
        #expect(due[5] == (try instant("2027-03-20T08:00:00Z")))
        #expect(summary.timing?.deferred == 3)  // Paris, no zone, Mars (fallback UTC)

        // With a 2-hour expiration, a 7.5-hour deferral would deliver an expired push: dropped.
        let (expiring, kept) = try plan(quiet, sendTime: "2027-03-19T23:30:00Z", expiration: "2h")
        #expect(expiring.timing?.dropped[.quietHoursExpired] == 3)
        #expect(kept.map(\.row) == [2, 4])
        // The relative expiration of a push counts from its moment.
        #expect(
            kept.first?.expirationHeader(sendTime: try Timestamp.parse("2027-03-19T23:30:00Z").get())
                == (try instant("2027-03-20T01:30:00Z"))
        )

        let (dropping, _) = try plan(
            "quiet_hours: { from: \"21:00\", to: \"08:00\", zone_attribute: tz, invalid_zone: fallback, action: drop }",
            sendTime: "2027-03-19T23:30:00Z"
        )
        #expect(dropping.timing?.dropped[.quietHours] == 3)
    }

    @Test func quietHoursEndingInASpringForwardGapEndAfterIt() throws {
        // Paris skips 02:00–03:00 on 28 March 2027; quiet hours until 02:30 end at 03:30 CEST.
        let (_, pushes) = try plan(
            "quiet_hours: { from: \"21:00\", to: \"02:30\", timezone: Europe/Paris }",
            sendTime: "2027-03-27T23:00:00Z"
        )
        #expect(Set(pushes.map(\.due)) == [try instant("2027-03-28T03:30:00+02:00")])
    }

    /// Issue #27, case 8: the DST table for quiet hours on the nights clocks fall back, checked
    /// against Python's zoneinfo. A push in the repeated hour's second pass, inside a window that
    /// ends in that hour, waits for the window's end in that pass, never lands inside the window.
    @Test(arguments: [
        // New York, 22:00–01:30: 01:15 EST (second pass) ends at 01:30 EST; 01:15 EDT at 01:30 EDT.
        ("America/New_York", "22:00", "01:30", "2026-11-01T06:15:00Z", "2026-11-01T01:30:00-05:00"),
        ("America/New_York", "22:00", "01:30", "2026-11-01T05:15:00Z", "2026-11-01T01:30:00-04:00"),
        // London, 22:00–01:30: 01:15 GMT (second pass) ends at 01:30 GMT; 01:15 BST at 01:30 BST.
        ("Europe/London", "22:00", "01:30", "2026-10-25T01:15:00Z", "2026-10-25T01:30:00+00:00"),
        ("Europe/London", "22:00", "01:30", "2026-10-25T00:15:00Z", "2026-10-25T01:30:00+01:00"),
        // Lord Howe falls back half an hour (02:00 +11 → 01:30 +10:30), 22:00–01:45.
        ("Australia/Lord_Howe", "22:00", "01:45", "2026-04-04T15:10:00Z", "2026-04-05T01:45:00+10:30"),
        ("Australia/Lord_Howe", "22:00", "01:45", "2026-04-04T14:40:00Z", "2026-04-05T01:45:00+11:00"),
        // Earlier in the night, the window ends at the first 01:30 (EDT) as on any other night.
        ("America/New_York", "22:00", "01:30", "2026-11-01T03:00:00Z", "2026-11-01T01:30:00-04:00"),
    ])
    func quietHoursOnAFallBackNightEndInThePassTheyHold(
        zone: String,
        from: String,
        to: String,
        sendTime: String,
        expected: String
    ) throws {
        let (summary, pushes) = try plan(
            "quiet_hours: { from: \"\(from)\", to: \"\(to)\", timezone: \(zone) }",
            sendTime: sendTime
        )
        #expect(summary.timing?.deferred == pushes.count)
        #expect(Set(pushes.map(\.due)) == [try instant(expected)], "\(zone) \(sendTime)")
    }
}
