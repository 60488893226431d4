import PushcampAPNsCore
import Synchronization

/// A clock tests move by hand: `sleep(until:)` returns when `advance` passes the deadline, or
/// throws `CancellationError` at once when its task is cancelled (as `Task.sleep` does).
public final class ManualClock: WallClock {
    private struct Sleeper {
        var id: Int
        var deadline: Double
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now: Double
        var sleepers: [Sleeper] = []
        var nextID = 0
        /// Sleepers cancelled before they were registered.
        var cancelled: Set<Int> = []
    }

    private let state: Mutex<State>

    public init(_ start: Double) {
        state = Mutex(State(now: start))
    }

    public func now() -> Double { state.withLock { $0.now } }

    /// The earliest deadline anyone sleeps until, if anyone sleeps.
    public var nextDeadline: Double? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    public func advance(_ seconds: Double) {
        advance(to: now() + seconds)
    }

    /// Moves the time to `time` (never backwards) and wakes the sleepers whose deadline passed.
    public func advance(to time: Double) {
        let due = state.withLock { state in
            state.now = max(state.now, time)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    public func sleep(until deadline: Double) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if deadline <= state.now || state.cancelled.remove(id) != nil { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume()
        }
        try Task.checkCancellation()
    }
}
