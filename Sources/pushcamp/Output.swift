import Foundation

/// Writes a line to standard error.
func printError(_ line: String) {
    FileHandle.standardError.write(Array((line + "\n").utf8).withUnsafeBufferPointer { Data(buffer: $0) })
}
