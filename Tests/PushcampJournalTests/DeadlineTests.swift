import PushcampJournal
import Synchronization
import Testing

@Suite("withDeadline: a journal call's answer, its error, or nil at the deadline")
struct DeadlineTests {
    /// A wait that ignores cancellation until `open()`: a query on a link whose packets vanish.
    final class Gate: Sendable {
        private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])
        private let opened = Mutex(false)

        func wait() async {
            await withCheckedContinuation { continuation in
                let resumeNow = opened.withLock { opened in
                    if opened { return true }
                    waiting.withLock { $0.append(continuation) }
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }

        func open() {
            opened.withLock { $0 = true }
            for continuation in waiting.withLock({ $0 }) { continuation.resume() }
        }
    }

    struct Failure: Error, Equatable {}

    @Test func anAnswerInTimeAndAnErrorInTimeComeBackAsTheyAre() async throws {
        #expect(try await withDeadline(.seconds(60)) { 42 } == 42)
        await #expect(throws: Failure()) {
            try await withDeadline(.seconds(60)) { () async throws -> Int in throw Failure() }
        }
    }

    /// The deadline holds although the call goes on: nil, while the call is still waiting.
    @Test func theDeadlineHoldsWhenTheCallIgnoresCancellation() async throws {
        let gate = Gate()
        let ended = Mutex(false)
        let answer = try await withDeadline(.milliseconds(50)) { () async -> Int in
            await gate.wait()
            ended.withLock { $0 = true }
            return 1
        }
        #expect(answer == nil)
        #expect(!ended.withLock { $0 })
        gate.open()
    }

    @Test func cancellingTheCallerEndsTheWaitAtOnce() async throws {
        let gate = Gate()
        let waiting = Task {
            try await withDeadline(.seconds(600)) { () async -> Int in
                await gate.wait()
                return 1
            }
        }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        gate.open()
    }

    @Test func aLateJournalCallIsCannotOpenSayingSo() async throws {
        let gate = Gate()
        do {
            _ = try await withDeadline(.milliseconds(50), late: "no answer within 0.05 s") {
                () async throws(JournalError) -> Int in
                await gate.wait()
                return 1
            }
            Issue.record("no error")
        } catch {
            #expect(error.code == .cannotOpen && error.message == "no answer within 0.05 s")
        }
        gate.open()
    }
}
