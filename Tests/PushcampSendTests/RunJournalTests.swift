import Foundation
import PushcampAPNs
import PushcampJournal
import PushcampSend
import Testing

/// The executor's journal writer on the in-memory store, whose `failingAfter` shows which commit
/// carried what.
@Suite("Run journal writer")
struct RunJournalTests {
    static func request(_ seq: Int) -> APNsRequest {
        APNsRequest(
            tag: seq,
            deviceToken: String(repeating: "ab", count: 32),
            apnsID: "00000000-0000-0000-0000-00000000000\(seq % 10)",
            topic: "com.example.app",
            pushType: "alert",
            priority: nil,
            expiration: nil,
            collapseID: nil,
            payload: Array(#"{"aps":{}}"#.utf8)
        )
    }

    /// A dispatch's commit carries only what must precede the send; first deliveries queued before
    /// it follow in a commit of their own, so the connection does not wait for them.
    @Test func dispatchCommitsAheadOfQueuedDeliveries() async throws {
        // The second commit fails: whatever it carried is missing from the store afterwards.
        let store = MemoryJournal(failingAfter: 1)
        let run = try store.createRun(campaign: "welcome", revision: "r1", now: 0)
        // Answers alone wait a minute for company, so the dispatch below joins them.
        let journal = RunJournal(store: store, run: run, gatherWindow: 60)
        journal.settle(
            [],
            firstDeliveries: (0..<4).map { FirstDelivery(seq: $0, token: String(repeating: "ab", count: 32)) }
        )
        try await journal.dispatch((4..<8).map(Self.request))

        #expect(try store.dispatched(of: run.id) == [4...7])
        #expect(try store.delivered(of: run.id) == [])
        #expect(throws: JournalError.self) { try journal.close(status: .interrupted, planned: nil) }
        #expect(journal.error != nil)
    }

    /// With nobody waiting, answers and statistics go in one commit, as before: a second commit would
    /// fail here, and `close` would say so.
    @Test func answersAloneCommitOnce() async throws {
        let store = MemoryJournal(failingAfter: 1)
        let run = try store.createRun(campaign: "welcome", revision: "r1", now: 0)
        let journal = RunJournal(store: store, run: run, gatherWindow: 60)
        journal.settle(
            [],
            firstDeliveries: (0..<4).map { FirstDelivery(seq: $0, token: String(repeating: "ab", count: 32)) }
        )
        journal.saveStats(RunStats())
        try journal.close(status: .finished, planned: 4)
        #expect(try store.delivered(of: run.id) == [0...3])
        #expect(try store.stats(of: run.id) != nil)
    }

    /// A recipient a resume found with a row (taken for sending, never sent) keeps that row: its
    /// first delivery updates the row, with the token the resume read, instead of joining a range.
    @Test func aFirstDeliveryOfAnUnsentRowUpdatesTheRow() async throws {
        let store = MemoryJournal()
        let run = try store.createRun(campaign: "welcome", revision: "r1", now: 0)
        let token = String(repeating: "cd", count: 32)
        try store.record(
            JournalBatch(updates: [RecipientUpdate(seq: 2, token: token, state: .planned)], dispatched: [0...1]),
            run: run.id,
            now: 1
        )
        let resume = try ResumePoint(journal: store, run: run.id)
        #expect(resume.unsentTokens == [2: token])
        let journal = RunJournal(store: store, run: run, resume: resume, gatherWindow: 60)
        journal.settle(
            [],
            firstDeliveries: [0, 1, 2].map { FirstDelivery(seq: $0, token: token) }
        )
        try journal.close(status: .finished, planned: 3)

        #expect(try store.delivered(of: run.id) == [0...1])
        var rows: [RecipientRecord] = []
        try store.forEachRecipient(of: run.id) { rows.append($0) }
        #expect(rows.map(\.seq) == [2])
        #expect(rows.first?.token == token)
        #expect(rows.first?.state == .delivered(attempt: 1))
    }
}
