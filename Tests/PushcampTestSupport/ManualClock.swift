import PushcampAPNsCore
import Synchronization

/// A clock tests move by hand: `sleep(until:)` returns when `advance` passes the deadline.
public final class ManualClock: WallClock {
    private struct State {
        var now: Double
        var sleepers: [(deadline: Double, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    public init(_ start: Double) {
        state = Mutex(State(now: start))
    }

    public func now() -> Double { state.withLock { $0.now } }

    public func advance(_ seconds: Double) {
        let due = state.withLock { state in
            state.now += seconds
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    public func sleep(until deadline: Double) async throws {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if deadline > state.now { state.sleepers.append((deadline, continuation)) }
                return state.now
            }
            if deadline <= now { continuation.resume() }
        }
        try Task.checkCancellation()
    }
}
