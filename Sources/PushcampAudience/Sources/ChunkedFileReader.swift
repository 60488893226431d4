import PushcampAPNsCore
import PushcampModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file in large chunks into a buffer the parsers scan in place; bytes before `start` have
/// been consumed. Memory stays at one chunk plus the longest record.
struct ChunkedFileReader: ~Copyable {
    static let chunkSize = 1 << 20

    let descriptor: Int32
    var buffer: [UInt8]
    var start = 0
    var end = 0
    var atEOF = false

    /// Opens `path`; a file that cannot be opened is an error naming it as `kind` says (an
    /// audience file, an events file).
    init(
        path: String,
        displayName: String,
        kind: String = "audience file",
        at location: SourceLocation
    )
        throws(AudienceError)
    {
        do {
            self.descriptor = try InputFile.open(path)
        } catch {
            throw AudienceError("\(kind) '\(displayName)' \(error.description)", at: location)
        }
        self.buffer = [UInt8](repeating: 0, count: Self.chunkSize)
    }

    deinit { close(descriptor) }

    /// Moves unconsumed bytes to the front and reads more; false at end of file.
    mutating func fill(displayName: String) throws(AudienceError) -> Bool {
        if atEOF { return false }
        if start > 0 {
            let remaining = end - start
            if remaining > 0 {
                buffer.withUnsafeMutableBufferPointer { pointer in
                    _ = memmove(pointer.baseAddress!, pointer.baseAddress! + start, remaining)
                }
            }
            end = remaining
            start = 0
        }
        if end == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
        let count = buffer.withUnsafeMutableBufferPointer { pointer in
            read(descriptor, pointer.baseAddress! + end, pointer.count - end)
        }
        if count < 0 {
            throw AudienceError(
                "cannot read '\(displayName)': \(String(cString: strerror(errno)))",
                at: SourceLocation(path: displayName)
            )
        }
        if count == 0 {
            atEOF = true
            return false
        }
        end += count
        return true
    }
}
