import Synchronization

/// `body`'s result, or nil when it has not finished within `timeout`. The deadline holds even when
/// `body` does not honour cancellation (a query on a connection whose packets vanish waits for
/// TCP to give up, minutes later): `body` runs in a task of its own, cancelled and left to end
/// by itself when time runs out. Whatever it was doing may still complete afterwards, so a
/// caller treats nil as "may or may not have happened" (a journal write answers 503, or is
/// redone under a fence). Cancelling the caller ends the wait at once, with `CancellationError`.
public func withDeadline<T: Sendable>(
    _ timeout: Duration,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T? {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(
                continuation,
                work: Task { race.finish(await Result { try await body() }) },
                timer: Task {
                    try? await Task.sleep(for: timeout)
                    race.finish(.success(nil))
                }
            )
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// The first of `body`'s end, the timer and the caller's cancellation resumes the caller; the
/// others find it resumed and do nothing. Both tasks are cancelled then.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T?, any Error>?
        var tasks: [Task<Void, Never>] = []
        /// What ended it before `start` (a cancellation arriving first).
        var early: Result<T?, any Error>?
        var done = false
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<T?, any Error>, work: Task<Void, Never>, timer: Task<Void, Never>) {
        let early: Result<T?, any Error>? = state.withLock { state in
            state.tasks = [work, timer]
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early {
            work.cancel()
            timer.cancel()
            continuation.resume(with: early)
        }
    }

    func finish(_ result: Result<T?, any Error>) {
        let (continuation, tasks): (CheckedContinuation<T?, any Error>?, [Task<Void, Never>]) = state.withLock {
            state in
            guard !state.done else { return (nil, []) }
            state.done = true
            guard let continuation = state.continuation else {
                state.early = result
                return (nil, [])
            }
            state.continuation = nil
            return (continuation, state.tasks)
        }
        for task in tasks { task.cancel() }
        continuation?.resume(with: result)
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
    late: @autoclosure () -> String,
    _ body: @escaping @Sendable () async throws(JournalError) -> T
) async throws(JournalError) -> T {
    let answer: T?
    do {
        answer = try await withDeadline(timeout) { () async throws -> T in try await body() }
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
