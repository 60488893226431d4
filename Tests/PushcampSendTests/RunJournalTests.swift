import Foundation
import PushcampAPNs
import PushcampJournal
import PushcampSend
import PushcampTestSupport
import Testing

/// The executor's journal writer on the in-memory store, whose `failingAfter` shows which commit
/// carried what.
@Suite("Run journal writer")
struct RunJournalTests {
    static func request(_ seq: Int) -> APNsRequest {
        APNsRequest(
            tag: seq,
            deviceToken: TemporaryProject.token(seq),
            apnsID: "00000000-0000-0000-0000-00000000000\(seq % 10)",
            topic: "com.example.app",
            pushType: "alert",
            priority: nil,
            expiration: nil,
            collapseID: nil,
            payload: Array(#"{"aps":{}}"#.utf8)
        )
    }

    /// An in-memory store whose commits after the first `failingAfter` fail, a run in it, and its
    /// writer. Answers alone wait a minute for company, so a dispatch joins answers queued before it.
    static func journal(failingAfter records: Int) async throws -> (MemoryJournal, RunRecord, RunJournal) {
        let store = MemoryJournal(failingAfter: records)
        let run = try await store.createRun(campaign: "welcome", revision: "r1", now: 0)
        return (store, run, RunJournal(store: store, run: run, gatherWindow: 60))
    }

    static func firstDeliveries(_ seqs: Range<Int>) -> [FirstDelivery] {
        seqs.map { FirstDelivery(seq: $0, token: TemporaryProject.token($0)) }
    }

    /// A dispatch's commit carries only what must precede the send; first deliveries queued before
    /// it follow in a commit of their own, so the connection does not wait for them.
    @Test func dispatchCommitsAheadOfQueuedDeliveries() async throws {
        // The second commit fails: whatever it carried is missing from the store afterwards.
        let (store, run, journal) = try await Self.journal(failingAfter: 1)
        async let writer: Void = journal.write()
        journal.settle([], firstDeliveries: Self.firstDeliveries(0..<4))
        try await journal.dispatch((4..<8).map(Self.request))

        #expect(try await store.dispatched(of: run.id) == [4...7])
        await #expect(throws: JournalError.self) { try await journal.close(status: .interrupted, planned: nil) }
        await writer
        #expect(try await store.delivered(of: run.id) == [])
        #expect(journal.error != nil)
    }

    /// With nobody waiting, answers and statistics go in one commit, as before: a third commit (the
    /// close is the second) would fail here, and `close` would say so.
    @Test func answersAloneCommitOnce() async throws {
        let (store, run, journal) = try await Self.journal(failingAfter: 2)
        async let writer: Void = journal.write()
        journal.settle([], firstDeliveries: Self.firstDeliveries(0..<4))
        journal.saveStats(RunStats())
        try await journal.close(status: .finished, planned: 4)
        await writer
        #expect(try await store.delivered(of: run.id) == [0...3])
        #expect(try await store.stats(of: run.id) != nil)
    }

    /// A recipient a resume found with a row (taken for sending, never sent) keeps that row: its
    /// first delivery updates the row, with the token the resume read, instead of joining a range.
    @Test func aFirstDeliveryOfAnUnsentRowUpdatesTheRow() async throws {
        let store = MemoryJournal()
        let run = try await store.createRun(campaign: "welcome", revision: "r1", now: 0)
        let token = TemporaryProject.token(2)
        try await store.record(
            JournalBatch(updates: [RecipientUpdate(seq: 2, token: token, state: .planned)], dispatched: [0...1]),
            run: run.id,
            now: 1
        )
        let resume = try await ResumePoint(journal: store, run: run.id)
        #expect(resume.unsentTokens == [2: token])
        let journal = RunJournal(store: store, run: run, resume: resume, gatherWindow: 60)
        journal.settle([], firstDeliveries: Self.firstDeliveries(0..<3))
        try await journal.close(status: .finished, planned: 3)

        #expect(try await store.delivered(of: run.id) == [0...1])
        var rows: [RecipientRecord] = []
        try await store.forEachRecipient(of: run.id) { rows.append($0) }
        #expect(rows.map(\.seq) == [2])
        #expect(rows.first?.token == token)
        #expect(rows.first?.state == .delivered(attempt: 1))
    }
}
