import Foundation

/// Waits until `condition` holds, asking again every `interval` seconds, for at most `timeout`
/// seconds; whether it came to hold. This is how tests wait on what another process does (a line it
/// logs, a row it writes, a file it creates): for the outcome, never for a fixed time.
@discardableResult
public func eventually(
    within timeout: Double,
    every interval: Double = 0.05,
    _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        guard Date() < deadline else { return false }
        // The one poll interval of the process-level tests.
        Thread.sleep(forTimeInterval: interval)
    }
}
