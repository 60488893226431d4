import Foundation

/// `body`, run on a thread of its own, awaited: a test that drives processes and waits for them
/// (seconds to a minute of sleeping and polling) then holds none of the cooperative pool's threads
/// (as many as the machine has cores), which the suite's async tests need meanwhile.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
