/// `body`'s result, or nil when it has not finished within `timeout`: it is then cancelled, and
/// this returns once it has ended (PostgreSQL's client ends a cancelled wait at once; SQLite's
/// queue ends within its lock wait).
public func withDeadline<T: Sendable>(
    _ timeout: Duration,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
}
