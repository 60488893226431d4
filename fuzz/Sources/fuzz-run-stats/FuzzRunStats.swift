import FuzzSupport
import PushcampJournal

/// A run's stored statistics, as a damaged or edited journal may hold them: read, or a
/// damaged-journal error, never a trap (and the report's figures computed from what was read).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: bytes(start, count), as: UTF8.self)
    do {
        let stats = try RunStats.decode(text)
        _ = stats.latency.percentile(0.99)
        _ = stats.latency.maximum
        _ = stats.totalRetries
        _ = stats.adding(stats)
    } catch {
        precondition(error.message.contains("run_stats"))
    }
    return 0
}
