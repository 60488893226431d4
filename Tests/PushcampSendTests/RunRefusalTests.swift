import PushcampJournal
import PushcampPlanner
import PushcampSend
import PushcampTestSupport
import Testing

/// Why a slot's send does not start, as a code `serve` branches on (never the message): another
/// process sends the campaign, the slot is recorded already, or its unfinished run was given up.
@Suite("Run refusals")
struct RunRefusalTests {
    static func refusal(_ body: () async throws -> SendRun) async -> RunRefusal? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error as? RunRefusal
        }
    }

    @Test func aSlotsSendIsRefusedWithACodeServeBranchesOn() async throws {
        let setup = try ExecutorDriverTests.setup(rows: 3)
        defer { setup.project.remove() }
        let slot: Int64 = 1_800_000_000
        let transport = InMemoryTransport(clock: setup.clock)
        let slotOptions: (inout SendRun.Options) -> Void = { $0.kind = .slot(slot) }
        var first: SendRun? = try await ExecutorDriverTests.prepare(setup, transport: transport, configure: slotOptions)
        let run = try #require(first?.run.id)

        // The campaign's lease is held by the first send: busy (exit 5).
        let busy = await Self.refusal {
            try await ExecutorDriverTests.prepare(setup, transport: transport, configure: slotOptions)
        }
        #expect(busy?.code == .busy && busy?.exitCode == 5, "\(String(describing: busy))")
        await first?.lease?.release()
        first = nil

        // Finished: the slot is recorded, nothing to fire.
        try await SQLiteJournal(path: setup.journalPath).setStatus(.finished, of: run, now: 1_800_000_100)
        let recorded = await Self.refusal {
            try await ExecutorDriverTests.prepare(setup, transport: transport, configure: slotOptions)
        }
        #expect(recorded?.code == .recorded, "\(String(describing: recorded))")

        // Unfinished, but the campaign changed since: the run is given up, and so is the slot.
        try await SQLiteJournal(path: setup.journalPath).setStatus(.interrupted, of: run, now: 1_800_000_200)
        var changed = setup
        changed.campaign.revision = "another"
        let givenUp = await Self.refusal {
            try await ExecutorDriverTests.prepare(changed, transport: transport, configure: slotOptions)
        }
        #expect(givenUp?.code == .givenUp, "\(String(describing: givenUp))")
        #expect(try await SQLiteJournal(path: setup.journalPath).run(run)?.status == .superseded)

        // The exit statuses the CLI documents.
        #expect(RunRefusal.Code.refused.exitCode == 1 && RunRefusal.Code.credentials.exitCode == 2)
    }

    /// Issue 43: while the run of an earlier slot is unfinished (its sender stopped, or lost the
    /// journal past its lease), a newer slot is refused `behind` it, under the campaign's lease,
    /// so no node starts the newer slot in front of a run it should finish; the earlier slot
    /// itself still resumes.
    @Test func aNewerSlotIsRefusedBehindAnUnfinishedEarlierSlotRun() async throws {
        let setup = try ExecutorDriverTests.setup(rows: 3)
        defer { setup.project.remove() }
        let slot: Int64 = 1_800_000_000
        let transport = InMemoryTransport(clock: setup.clock)
        var first: SendRun? = try await ExecutorDriverTests.prepare(setup, transport: transport) {
            $0.kind = .slot(slot)
        }
        let run = try #require(first?.run.id)
        await first?.lease?.release()
        first = nil
        try await SQLiteJournal(path: setup.journalPath).setStatus(.interrupted, of: run, now: 1_800_000_010)

        let behind = await Self.refusal {
            try await ExecutorDriverTests.prepare(setup, transport: transport) { $0.kind = .slot(slot + 60) }
        }
        #expect(behind?.code == .behind, "\(String(describing: behind))")
        // Nothing was recorded for the newer slot: it is decided once the earlier run is over.
        #expect(
            try await SQLiteJournal(path: setup.journalPath).slot(campaign: setup.campaign.id, at: slot + 60) == nil
        )
        let resumed = try await ExecutorDriverTests.prepare(setup, transport: transport) { $0.kind = .slot(slot) }
        #expect(resumed.run.id == run)
        await resumed.lease?.release()
    }
}
