import Foundation
import PushcampModel

/// What every fuzz target checks: problems come back as diagnostics that say where, never as a trap.
public func requireLocated(_ diagnostics: [Diagnostic], _ what: String) {
    for diagnostic in diagnostics {
        precondition(diagnostic.location != nil, "\(what): a diagnostic without a location: \(diagnostic)")
        precondition(!diagnostic.message.isEmpty, "\(what): an empty diagnostic")
    }
}

/// The input as a file (audiences are read from files): one per process, rewritten per input.
public func writeInput(_ bytes: UnsafeRawBufferPointer, suffix: String) -> String {
    let path = NSTemporaryDirectory() + "pushcamp-fuzz-\(getpid())\(suffix)"
    FileManager.default.createFile(atPath: path, contents: Data(bytes))
    return path
}

public func bytes(_ start: UnsafeRawPointer, _ count: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: start, count: count)
}
