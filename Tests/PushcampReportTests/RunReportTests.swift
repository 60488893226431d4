import Foundation
import PushcampJournal
import PushcampReport
import Testing

@Suite("Run reports")
struct RunReportTests {
    /// A run of 10 recipients: 0-5 delivered first time (two commits, a second apart), 6 delivered on
    /// its second attempt, 7 and 8 failed, 9 in flight when the run stopped; 12 planned.
    static func journal() async throws -> (MemoryJournal, RunID) {
        let journal = MemoryJournal()
        let run = try await journal.createRun(campaign: "spring", revision: "abc", now: 1_000)
        try await journal.record(JournalBatch(dispatched: [0...9]), run: run.id, now: 1_000.1)
        try await journal.record(
            JournalBatch(delivered: [DeliveredRange(first: 0, tokens: ["t0", "t1", "t2", "t3"])]),
            run: run.id,
            now: 1_000.4
        )
        var stats = RunStats()
        for milliseconds in [2, 3, 3, 4, 5, 8, 9, 12, 40, 250] {
            stats.latency.record(nanoseconds: Int64(milliseconds) * 1_000_000)
        }
        stats.retries = ["TooManyRequests": 1]
        stats.seconds = 2.5
        stats.connectionsOpened = 2
        stats.disconnects = ["GOAWAY NO_ERROR": 1]
        try await journal.record(
            JournalBatch(
                updates: [
                    RecipientUpdate(seq: 6, token: "t6", state: .delivered(attempt: 2)),
                    RecipientUpdate(
                        seq: 7,
                        token: String(repeating: "a7", count: 32),
                        state: .failed(status: 410, reason: "Unregistered", apnsTimestamp: 5)
                    ),
                    RecipientUpdate(
                        seq: 8,
                        token: String(repeating: "a8", count: 32),
                        state: .failed(status: 400, reason: "BadDeviceToken", apnsTimestamp: nil)
                    ),
                ],
                delivered: [DeliveredRange(first: 4, tokens: ["t4", "t5"])],
                possibleDuplicates: 1,
                stats: stats
            ),
            run: run.id,
            now: 1_001.6
        )
        try await journal.setPlanned(12, of: run.id)
        try await journal.setStatus(.interrupted, of: run.id, now: 1_003)
        return (journal, run.id)
    }

    @Test func everyRecipientIsAccountedForByStatusAndReason() async throws {
        let (journal, id) = try await Self.journal()
        let report = try #require(try await RunReport.load(id, from: journal))
        #expect(report.delivered == 7)
        #expect(report.failed == 2)
        #expect(report.recipients == 12)
        let byLabel = Dictionary(uniqueKeysWithValues: report.outcomes.map { ($0.label, $0.count) })
        #expect(byLabel["delivered"] == 7)
        #expect(byLabel["410 Unregistered"] == 1)
        #expect(byLabel["400 BadDeviceToken"] == 1)
        #expect(byLabel["no answer (in flight at stop)"] == 1)
        #expect(byLabel["not sent"] == 2)
        #expect(
            report.perSecond == [
                AnswersInSecond(second: 1_000, delivered: 4, failed: 0),
                AnswersInSecond(second: 1_001, delivered: 3, failed: 2, retried: 1),
            ]
        )
        #expect(report.peak?.second == 1_001)
        #expect(abs(report.averagePerSecond - 9 / 2.5) < 1e-9)
        #expect(report.wallSeconds == 3)
        let latency = try #require(report.latency)
        #expect(latency.count == 10)
        #expect(abs(latency.p50 - 0.005) < 0.0001)
        #expect(abs(latency.max - 0.25) / 0.25 < 0.001)
        // Ten bins a decade, each answer in one: 2–2.5 ms: 2; 2.5–3.2: 3, 3; 4–5: 4; 5–6.3: 5; 8–10: 8, 9;
        // 10–12.5: 12; 40–50: 40; 250–320: 250.
        #expect(
            report.latencyDistribution.map(\.count) == [
                1, 2, 0, 1, 1, 0, 2, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1,
            ]
        )
        #expect(report.latencyDistribution.first?.from == 2_000 && report.latencyDistribution.last?.to == 320_000)
        #expect(try await RunReport.load(RunID(99), from: journal) == nil)
    }

    @Test func theJSONShapeIsStable() async throws {
        let (journal, id) = try await Self.journal()
        let json = try #require(try await RunReport.load(id, from: journal)).json()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(
            Array(object.keys).sorted() == [
                "assignment_unit", "campaign", "connections", "copy", "delivered", "description", "failed", "file",
                "latency", "locales",
                "outcomes", "plan", "planned", "platforms", "possible_duplicate_recipients", "possible_duplicates",
                "readout",
                "recipients", "rehearsal", "replay_of", "retries", "revision", "run", "sending_seconds", "sent",
                "slices", "started_at", "status", "throughput", "timeline", "updated_at", "variants", "wall_seconds",
            ]
        )
        #expect(
            json.hasPrefix(
                #"{"run":1,"rehearsal":false,"campaign":"spring","revision":"abc","status":"interrupted","file":null,"#
            )
        )
        #expect(json.contains(#"{"kind":"failed","status":410,"reason":"Unregistered","count":1,"platform":"ios"}"#))
        #expect(json.contains(#""retries":{"total":1,"by_cause":{"TooManyRequests":1}}"#))
        #expect(json.contains(#""per_second":[{"at":"1970-01-01T00:16:40Z","delivered":4,"failed":0,"retried":0},"#))
        #expect(json.contains(#""possible_duplicates":1,"possible_duplicate_recipients":[],"slices":null,"#))
    }

    /// A run that reached iPhones and Android phones: each failure names its platform (told by the
    /// token the journal kept), and a readout per platform counts what each provider answered.
    @Test func aMixedRunIsReadOutPerPlatform() async throws {
        let journal = MemoryJournal()
        let run = try await journal.createRun(campaign: "mixed", revision: "abc", now: 1_000)
        let apnsToken = String(repeating: "0f", count: 32)
        let fcmToken = "fcm-device:APA91b" + String(repeating: "x", count: 40)
        var stats = RunStats()
        stats.platforms = [
            "ios": Readout(delivered: 3, failed: ["Unregistered": 1]),
            "android": Readout(delivered: 2, failed: ["fcm/UNREGISTERED": 1]),
        ]
        var funnel = PlanFunnel()
        funnel.planned = 7
        funnel.platforms = ["ios": 4, "android": 3]
        stats.plan = funnel
        try await journal.record(
            JournalBatch(
                updates: [
                    RecipientUpdate(
                        seq: 5,
                        token: apnsToken,
                        state: .failed(status: 410, reason: "Unregistered", apnsTimestamp: 5)
                    ),
                    RecipientUpdate(
                        seq: 6,
                        token: fcmToken,
                        state: .failed(status: 404, reason: "fcm/UNREGISTERED", apnsTimestamp: nil)
                    ),
                ],
                delivered: [DeliveredRange(first: 0, tokens: ["a", "b", "c", "d", "e"])],
                stats: stats
            ),
            run: run.id,
            now: 1_001
        )
        try await journal.setPlanned(7, of: run.id)
        let report = try #require(try await RunReport.load(run.id, from: journal))
        #expect(report.showsPlatforms)
        let labels = report.failures.map { report.label(of: $0) }.sorted()
        #expect(labels == ["Android 404 fcm/UNREGISTERED", "iOS 410 Unregistered"])
        let rows = report.platformRows
        #expect(rows.map(\.name) == ["ios", "android"])
        #expect(rows.map(\.planned) == [4, 3])
        #expect(rows.map(\.delivered) == [3, 2])
        #expect(rows.map(\.failed) == [1, 1])

        let text = report.text()
        #expect(text.contains("  Android 404 fcm/UNREGISTERED"), "\(text)")
        #expect(text.contains("Platforms\n"), "\(text)")
        #expect(text.contains("  Android                  3          2       1    66.7%"), "\(text)")
        #expect(report.markdown().contains("| Android | 3 | 2 | 1 | 66.7% |"), "\(report.markdown())")
        #expect(report.html().contains("By platform"))
        let json = report.json()
        #expect(json.contains(#""reason":"fcm/UNREGISTERED","count":1,"platform":"android"}"#), "\(json)")
        #expect(json.contains(#""platforms":[{"name":"ios","planned":4,"delivered":3,"failed":1,"#), "\(json)")

        // A run that reached only iPhones says nothing of platforms.
        let (plain, id) = try await Self.journal()
        let iosOnly = try #require(try await RunReport.load(id, from: plain))
        #expect(!iosOnly.showsPlatforms && iosOnly.platformRows.isEmpty)
        #expect(!iosOnly.text().contains("Platforms"))
    }

    /// A run cut into slices: two workers each sent a slice, one slice is still free; the
    /// recipient sent again after a worker died is named, in every format that may carry tokens.
    @Test func aSlicedRunSaysWhereItsSlicesStandAndNamesItsPossibleDuplicates() async throws {
        let journal = MemoryJournal()
        let run = try await journal.createRun(campaign: "spring", revision: "abc", now: 1_000)
        let pushes = (0..<9).map {
            SnapshotPush(seq: $0, token: "t\($0)", payload: Array("{}".utf8), variant: "", locale: nil, collapseID: nil)
        }
        try await journal.appendSnapshot(pushes, run: run.id, lease: nil)
        try await journal.sealSnapshot(run: run.id, slices: [0...2, 3...5, 6...8], planned: 9, lease: nil)
        for (owner, seconds) in [("host-a/11/x", 2.0), ("host-b/22/y", 1.0)] {
            let (slice, lease) = try #require(try await journal.claimSlice(of: run.id, owner: owner, duration: 600))
            let first = slice.seqs.lowerBound
            var stats = RunStats()
            for _ in slice.seqs { stats.latency.record(nanoseconds: 5_000_000) }
            stats.seconds = seconds
            try await journal.record(
                JournalBatch(
                    updates: [RecipientUpdate(seq: first, token: "t\(first)", state: .delivered(attempt: 2))],
                    dispatched: [first + 1...slice.seqs.upperBound],
                    delivered: [DeliveredRange(first: first + 1, tokens: ["t\(first + 1)", "t\(first + 2)"])],
                    possibleDuplicates: 1,
                    duplicates: [PossibleDuplicate(seq: first, token: "t\(first)")],
                    lease: lease
                ),
                run: run.id,
                now: 1_001
            )
            #expect(try await journal.closeSlice(slice, status: .finished, stats: stats, lease: lease) == .running)
        }
        let report = try #require(try await RunReport.load(run.id, from: journal))
        #expect(report.duplicates.map(\.token) == ["t0", "t3"])
        let slices = try #require(report.slices)
        #expect(slices.total == 3 && slices.done == 2 && slices.free == 1)
        #expect(slices.workers.map(\.owner) == ["host-a/11/x", "host-b/22/y"])
        #expect(slices.workers.map(\.answers) == [3, 3] && slices.workers.map(\.perSecond) == [1.5, 3])

        let text = report.text()
        #expect(text.contains("\n  seq 0  t0\n  seq 3  t3\n"), "\(text)")
        #expect(text.contains("Slices 3: 2 done · 0 held · 1 free, sent by 2 workers\n"), "\(text)")
        #expect(text.contains("  host-b/22/y  1 slice · 3 answers · 3/s while sending\n"), "\(text)")
        let json = report.json()
        #expect(json.contains(#""possible_duplicate_recipients":[{"seq":0,"token":"t0"},{"seq":3,"token":"t3"}]"#))
        #expect(json.contains(#""slices":{"total":3,"done":2,"held":0,"free":1,"workers":[{"owner":"host-a/11/x","#))
        // Markdown goes into pull requests: counts, never tokens.
        let markdown = report.markdown()
        #expect(markdown.contains("| slices | 3: 2 done, 0 held, 1 free; 2 workers |") && !markdown.contains("t3"))
    }

    @Test func textMarkdownAndHTMLSayTheSame() async throws {
        let (journal, id) = try await Self.journal()
        let report = try #require(try await RunReport.load(id, from: journal))
        let text = report.text()
        #expect(text.hasPrefix("Run 1 of spring: interrupted\n"))
        #expect(text.contains("\n  410 Unregistered                         1    8.33%\n"), "\(text)")
        #expect(text.contains("  total                                   12  (the whole plan)\n"), "\(text)")
        #expect(text.contains("Retries 1: TooManyRequests 1\n"))
        #expect(text.contains("Latency (10 answers): p50 5.00 ms"))
        #expect(text.contains("\n  ▇█  (a mark a second)\n"), "\(text)")
        let markdown = report.markdown()
        #expect(markdown.contains("| 400 BadDeviceToken | 1 | 8.33% |"))
        let html = report.html()
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.components(separatedBy: "<svg ").count == 4)
        // Self-contained: no scripts, nothing loaded; the only URLs are the three charts' SVG namespace.
        #expect(!html.contains("<script") && !html.contains("src=") && !html.contains("href="))
        #expect(html.components(separatedBy: "http").count - 1 == 3)
        #expect(html.contains(">400 BadDeviceToken</text>"))
        #expect(html.contains(">3.2 ms</text>") && html.contains(">answers per second</text>"))
        // Interrupted with answers missing: not a green badge.
        #expect(html.contains("<span class=\"status warn\">interrupted · send again to resume</span>"))
    }

    @Test func htmlEscapesWhatTheJournalHolds() async throws {
        let journal = MemoryJournal()
        let run = try await journal.createRun(
            campaign: "c",
            revision: "<r&>",
            now: 0,
            file: "/a/\"b\".yaml",
            replay: nil
        )
        try await journal.record(
            JournalBatch(updates: [
                RecipientUpdate(seq: 0, token: "t", state: .failed(status: nil, reason: "<img>", apnsTimestamp: nil))
            ]),
            run: run.id,
            now: 1
        )
        let html = try #require(try await RunReport.load(run.id, from: journal)).html()
        #expect(!html.contains("<img>") && !html.contains("<r&>"))
        #expect(html.contains("&lt;img&gt;") && html.contains("&lt;r&amp;&gt;") && html.contains("&quot;b&quot;"))
        #expect(html.contains("No answers measured."))
    }
}

@Suite("Report charts")
struct ChartTests {
    @Test func axesUseRoundSteps() async throws {
        let (journal, id) = try await RunReportTests.journal()
        var report = try #require(try await RunReport.load(id, from: journal))
        // 22,368 answers in the busiest second: gridlines every 5k up to 25k.
        report.perSecond = [
            AnswersInSecond(second: 10, delivered: 19_000), AnswersInSecond(second: 11, delivered: 22_368),
            AnswersInSecond(second: 13, delivered: 7_000),
        ]
        let html = report.html()
        for label in ["0", "5k", "10k", "15k", "20k", "25k"] { #expect(html.contains(">\(label)</text>"), "\(label)") }
        #expect(!html.contains(">30k</text>") && !html.contains(">50k</text>"))
        // A second without answers is a zero point; two points a second average them.
        #expect(report.series(width: 600).points == [19_000, 22_368, 0, 7_000])
        #expect(report.series(width: 2).points == [20_684, 3_500])
    }
}
