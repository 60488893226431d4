import PushcampAPNsCore
import Synchronization

/// `body`'s result, or nil when it has not finished within `timeout` (on `clock`). The deadline
/// holds even when `body` does not honour cancellation (a query on a connection whose packets
/// vanish waits for TCP to give up, minutes later): `body` runs in a task of its own, cancelled and
/// left to end by itself when time runs out. Whatever it was doing may still complete afterwards,
/// so a caller treats nil as "may or may not have happened" (a journal write answers 503, or is
/// redone under a fence). Cancelling the caller ends the wait at once, with `CancellationError`.
public func withDeadline<T: Sendable>(
    _ timeout: Duration,
    clock: any WallClock = SystemWallClock(),
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T? {
    let outcome = DeadlineOutcome<T>()
    // Unstructured on purpose: a child of the group below would hold the caller until `body`
    // ended, which is what the deadline is for not waiting on.
    let work = Task { outcome.finish(await Result { try await body() }) }
    defer { work.cancel() }
    return try await withThrowingTaskGroup(of: DeadlineArrival<T>.self) { group in
        group.addTask { .answer(try await outcome.value()) }  // body's answer, or its error
        group.addTask {  // the deadline
            try await clock.sleep(for: timeout.inSeconds)
            return .deadline
        }
        defer { group.cancelAll() }
        switch try await group.next() {
        case .answer(let answer)?:
            return answer
        case .deadline?, nil:
            // An answer that came as the deadline fell (both ready on a busy machine) counts.
            return try outcome.ready?.get()
        }
    }
}

/// Which of `withDeadline`'s children ended first.
private enum DeadlineArrival<T: Sendable>: Sendable {
    case answer(T?)
    case deadline
}

/// `body`'s result, awaited by one waiter that a cancellation releases at once.
private final class DeadlineOutcome<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T?, any Error>?
        var waiter: CheckedContinuation<T?, any Error>?
        var cancelled = false
    }

    private let state = Mutex(State())

    func finish(_ result: Result<T?, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T?, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    /// The result, when `body` has ended.
    var ready: Result<T?, any Error>? { state.withLock { $0.result } }

    func value() async throws -> T? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<T?, any Error>? in
                    if let result = state.result { return result }
                    if state.cancelled { return .failure(CancellationError()) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<T?, any Error>? in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

extension Result where Failure == any Error {
    /// The result of an async throwing `body`.
    init(_ body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// A journal call within `timeout`: its answer, or its own error, or `.cannotOpen` saying `late`
/// when it has not answered in time (where a caller must answer sooner than the journal's own
/// timeout: the App Store receiver, the readiness probe).
public func withDeadline<T: Sendable>(
    _ timeout: Duration,
    clock: any WallClock = SystemWallClock(),
    late: @autoclosure () -> String,
    _ body: @escaping @Sendable () async throws(JournalError) -> T
) async throws(JournalError) -> T {
    let answer: T?
    do {
        answer = try await withDeadline(timeout, clock: clock) { () async throws -> T in try await body() }
    } catch let error as JournalError {
        throw error
    } catch is CancellationError {
        throw JournalError(.failed, "not written: the task was cancelled (shutting down)")
    } catch {
        throw JournalError(.failed, "\(error)")
    }
    guard let answer else { throw JournalError(.cannotOpen, late()) }
    return answer
}
