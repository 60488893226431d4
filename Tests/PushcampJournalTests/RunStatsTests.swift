import Foundation
import PushcampJournal
import Testing

@Suite("Run statistics")
struct RunStatsTests {
    @Test func latencyPercentilesAreAccurateToThreeDigits() {
        var histogram = LatencyHistogram()
        for millisecond in 1...100 { histogram.record(nanoseconds: Int64(millisecond) * 1_000_000) }
        #expect(histogram.count == 100)
        let p50 = histogram.percentile(0.5)!
        let p99 = histogram.percentile(0.99)!
        #expect(abs(p50 - 0.050) / 0.050 < 0.001)
        #expect(abs(p99 - 0.099) / 0.099 < 0.001)
        #expect(abs(histogram.maximum! - 0.1) / 0.1 < 0.001)
        #expect(histogram.counts(between: [0, 10_500, 50_500, 1_000_000]) == [10, 40, 50])
        #expect(LatencyHistogram().percentile(0.5) == nil)
    }

    @Test func statsSurviveTheJournalAndAddUpAcrossResumes() throws {
        var first = RunStats()
        for microseconds in [800, 1_200, 15_000] { first.latency.record(nanoseconds: Int64(microseconds) * 1000) }
        first.retries = ["TooManyRequests": 2]
        first.seconds = 1.5
        first.connectionsOpened = 2
        first.disconnects = ["GOAWAY": 1]
        let decoded = try RunStats.decode(first.encoded())
        #expect(decoded == first)

        // Everything a report reads back: readouts, the plan's funnel, what was sent, names to escape.
        var full = first
        full.seconds = 2.25
        var variantLatency = LatencyHistogram()
        variantLatency.record(nanoseconds: 3_000_000)
        full.variants = [
            "a \"quoted\" name": Readout(delivered: 3, failed: ["BadDeviceToken": 1], latency: variantLatency),
            "b": Readout(delivered: 0, failed: [:], latency: LatencyHistogram()),
        ]
        full.locales = ["fr-CA": Readout(delivered: 2, failed: ["Unregistered": 2]), "é": Readout(delivered: 1)]
        full.platforms = [
            "ios": Readout(delivered: 3, failed: ["BadDeviceToken": 1], latency: variantLatency),
            "android": Readout(delivered: 2, failed: ["fcm/UNREGISTERED": 1]),
        ]
        var plan = PlanFunnel()
        (plan.read, plan.invalid, plan.duplicates, plan.filteredOut, plan.excluded) = (100, 1, 2, 3, 4)
        (plan.noSubscription, plan.suppressed, plan.capped, plan.heldOut, plan.refused) = (5, 6, 7, 8, 9)
        (plan.planned, plan.holdoutBasisPoints) = (55, 1_000)
        plan.variants = ["a": 30, "b": 25]
        plan.locales = ["en": 55]
        plan.platforms = ["ios": 40, "android": 15]
        plan.assignmentUnit = "person (user_id)"
        full.plan = plan
        full.sent = SentFacts(
            app: "shop",
            topic: "com.example.shop",
            environment: "sandbox",
            endpoint: "https://api.sandbox.push.apple.com/\\",
            rate: "2000/s",
            connections: 4,
            description: "Spring sale \"20%\" — every store"
        )
        let text = full.encoded()
        #expect(try RunStats.decode(text) == full)
        let object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(
            object.keys.sorted() == [
                "connections_opened", "disconnects", "latency", "locales", "plan", "platforms", "retries", "seconds",
                "sent", "variants",
            ]
        )
        #expect(text.hasPrefix(#"{"connections_opened":2,"disconnects":{"GOAWAY":1},"latency":[["#))

        var second = RunStats()
        second.latency.record(nanoseconds: 2_000_000)
        second.retries = ["TooManyRequests": 1, "timeout": 4]
        second.seconds = 0.5
        let total = first.adding(second)
        #expect(total.latency.count == 4)
        #expect(total.retries == ["TooManyRequests": 3, "timeout": 4])
        #expect(total.totalRetries == 7)
        #expect(total.seconds == 2.0)

        #expect(throws: JournalError.self) { try RunStats.decode("{\"latency\": 3}") }
    }

    @Test(arguments: [false, true])
    func storesKeepTheLatestStatsAndCountAnswersPerSecond(sqlite: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stats-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store: any JournalStore =
            sqlite ? try SQLiteJournal(path: directory.appendingPathComponent("j.sqlite").path) : MemoryJournal()
        let run = try await store.createRun(campaign: "c", revision: "r", now: 1000)
        #expect(try await store.stats(of: run.id) == nil)
        var stats = RunStats()
        stats.seconds = 1
        try await store.record(JournalBatch(stats: stats), run: run.id, now: 1000.2)
        stats.seconds = 2
        stats.latency.record(nanoseconds: 5_000_000)
        try await store.record(
            JournalBatch(delivered: [DeliveredRange(first: 0, tokens: ["a", "b", "c"])], stats: stats),
            run: run.id,
            now: 1000.5
        )
        try await store.record(
            JournalBatch(
                updates: [
                    RecipientUpdate(
                        seq: 3,
                        token: "d",
                        state: .failed(status: 410, reason: "Unregistered", apnsTimestamp: 1)
                    ),
                    RecipientUpdate(seq: 4, token: "e", state: .delivered(attempt: 2)),
                    RecipientUpdate(seq: 5, token: "f", state: .waiting(until: 2000, attempt: 1)),
                ],
                delivered: [DeliveredRange(first: 6, tokens: ["g"])]
            ),
            run: run.id,
            now: 1002.9
        )
        #expect(try await store.stats(of: run.id) == stats)
        // Saving stats marks the run as updated: a killed run's last update is near its last send.
        #expect(try await store.run(run.id)?.updatedAt == 1000.5)
        #expect(
            try await store.answersPerSecond(of: run.id) == [
                AnswersInSecond(second: 1000, delivered: 3, failed: 0),
                // e was delivered on its second send.
                AnswersInSecond(second: 1002, delivered: 2, failed: 1, retried: 1),
            ]
        )
        // A resume picks the stats up.
        #expect(try await ResumePoint(journal: store, run: run.id).stats == stats)
    }
}

@Suite("Answers over time")
struct AnswerSeriesTests {
    @Test func answersFallInMinutesAlignedToTheClockAndSurviveTheJournal() throws {
        var series = AnswerSeries()
        series.record(5, at: 1_700_000_010)  // minute 28,333,333
        series.record(0, at: 1_700_000_500)  // nothing: no bucket
        series.record(3, at: 1_700_000_039.9)
        series.record(2, at: 1_700_000_190)  // two minutes on
        #expect(series.width == 60 && series.start == 1_699_999_980)
        #expect(series.counts == [8, 0, 0, 2])
        // Earlier answers (a slice sent on another machine) go in front.
        series.record(1, at: 1_699_999_900)
        #expect(series.start == 1_699_999_860 && series.counts == [1, 0, 8, 0, 0, 2])
        var stats = RunStats()
        stats.answers = series
        #expect(try RunStats.decode(stats.encoded()).answers == series)
    }

    @Test func aLongRunWidensItsBucketsAndStaysBounded() {
        var series = AnswerSeries()
        // Ten days of a run at one answer a second, a batch a minute.
        let start = 1_700_000_040.0
        for minute in 0..<(10 * 1440) { series.record(60, at: start + Double(minute) * 60) }
        #expect(series.counts.count <= AnswerSeries.limit)
        #expect(series.counts.reduce(0, +) == 10 * 1440 * 60)
        // 14,400 minutes over at most 240 buckets: 64 minutes each (a power of two times a minute).
        #expect(series.width == 64 * 60, "\(series.width)")
        #expect(series.start! <= Int64(start) && series.start! + series.width > Int64(start))
    }

    @Test func twoSendsOfARunAddUpAtTheCoarserWidth() {
        var first = AnswerSeries()
        first.record(10, at: 1_700_000_000)
        first.record(10, at: 1_700_000_060)
        var later = AnswerSeries()
        // Resumed two days later for four hours: together more minutes than a series keeps.
        for minute in 0..<240 { later.record(1, at: 1_700_172_800 + Double(minute) * 60) }
        let sum = first.adding(later)
        #expect(sum.counts.reduce(0, +) == 260 && sum.counts.count <= AnswerSeries.limit)
        #expect(sum.width >= later.width && sum.width > 60)
        #expect(first.adding(AnswerSeries()) == first && AnswerSeries().adding(first) == first)
    }
}

@Suite("Run statistics from a damaged journal")
struct DamagedRunStatsTests {
    @Test(arguments: [
        #"{"latency":[[1000,18446744073709551615]],"retries":{},"seconds":1,"connections_opened":1,"disconnects":{}}"#,
        #"{"latency":[],"retries":{"TooManyRequests":-5},"seconds":1,"connections_opened":1,"disconnects":{}}"#,
        #"{"latency":[],"retries":{},"seconds":1e300,"connections_opened":1,"disconnects":{}}"#,
        #"{"latency":[],"retries":{},"seconds":-1,"connections_opened":1,"disconnects":{}}"#,
        #"{"latency":[],"retries":{},"seconds":1,"connections_opened":-9223372036854775808,"disconnects":{}}"#,
        #"{"latency":[],"retries":{},"seconds":1,"connections_opened":1,"disconnects":{"GOAWAY":9223372036854775807}}"#,
        #"{"latency":[],"retries":{},"seconds":1,"connections_opened":1,"disconnects":{},"answers":{"width":90,"first":1,"counts":[1]}}"#,
        #"{"latency":[],"retries":{},"seconds":1,"connections_opened":1,"disconnects":{},"answers":{"width":60,"first":1,"counts":[-1]}}"#,
        #"{"latency":[],"retries":{},"seconds":1,"connections_opened":1,"disconnects":{},"answers":{"width":60,"counts":[1]}}"#,
    ])
    func outOfRangeNumbersAreReportedNotTrappedOn(_ text: String) {
        do {
            _ = try RunStats.decode(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.message.contains("out of range"), "\(error.message)")
            #expect(error.message.contains("table run_stats"))
        }
    }
}
