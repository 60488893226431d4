#if canImport(Glibc)
import Glibc

private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { Glibc.open(path, flags) }
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    Glibc.read(descriptor, buffer, count)
}
#elseif canImport(Darwin)
import Darwin

private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { Darwin.open(path, flags) }
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    Darwin.read(descriptor, buffer, count)
}
#endif

/// Files a campaign or project names — audiences, templates, keys, certificates — read as input
/// Pushcamp does not trust: only regular files (symbolic links followed), opened without blocking
/// (a FIFO never hangs a read), and whole-file reads bounded in size (`/dev/zero` cannot fill memory).
public enum InputFile {
    public struct Problem: Error, Sendable, CustomStringConvertible {
        /// Says what is wrong with the file, without its path: "is a named pipe (FIFO), not a regular file".
        public var description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    /// Why `path` cannot be used as an input file, or nil when it is a regular file.
    public static func check(_ path: String) -> Problem? {
        var info = stat()
        guard stat(path, &info) == 0 else { return openProblem(errno) }
        return kindProblem(info.st_mode)
    }

    /// Opens a regular file for reading; the caller closes the descriptor.
    public static func open(_ path: String) throws(Problem) -> Int32 {
        let descriptor = systemOpen(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw openProblem(errno) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let problem = openProblem(errno)
            close(descriptor)
            throw problem
        }
        if let problem = kindProblem(info.st_mode) {
            close(descriptor)
            throw problem
        }
        return descriptor
    }

    /// A regular file's bytes, when it holds at most `limit` of them.
    public static func read(_ path: String, limit: Int) throws(Problem) -> [UInt8] {
        let descriptor = try open(path)
        defer { close(descriptor) }
        var info = stat()
        if fstat(descriptor, &info) == 0, Int(info.st_size) > limit {
            throw Problem("is \(info.st_size) bytes; at most \(limit) are read")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Problem("cannot be read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > limit { throw Problem("is more than \(limit) bytes; at most \(limit) are read") }
        }
    }

    static func kindProblem(_ mode: mode_t) -> Problem? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return Problem("is a directory, not a file")
        case S_IFIFO: return Problem("is a named pipe (FIFO), not a regular file")
        case S_IFCHR, S_IFBLK: return Problem("is a device, not a regular file")
        case S_IFSOCK: return Problem("is a socket, not a regular file")
        default: return Problem("is not a regular file")
        }
    }

    static func openProblem(_ code: Int32) -> Problem {
        switch code {
        case ENOENT: return Problem("does not exist")
        case EACCES, EPERM: return Problem("cannot be read: permission denied")
        case ENOTDIR: return Problem("does not exist (a part of its path is not a folder)")
        default: return Problem("cannot be opened: \(String(cString: strerror(code)))")
        }
    }
}
