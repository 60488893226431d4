import Foundation
import PushcampAPNsCore

/// Small, whole-file reads (campaigns, templates, projects) with errors that read well.
public enum FileBytes {
    public struct ReadError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The most bytes a campaign, template, strings or project file may have.
    public static let limit = 16 << 20

    /// A regular file's bytes (at most `limit`); a FIFO, a device or a folder is an error, not a hang.
    public static func read(_ url: URL) throws(ReadError) -> [UInt8] {
        do {
            return try InputFile.read(url.path, limit: limit)
        } catch {
            throw ReadError(description: error.description == "does not exist" ? "no such file" : error.description)
        }
    }

    /// 1-based line and column (in bytes) of the first byte that breaks UTF-8.
    public static func firstInvalidUTF8(in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            let length: Int
            switch byte {
            case 0x00...0x7F: length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return (line, index - lineStart + 1)
            }
            if index + length > bytes.count { return (line, index - lineStart + 1) }
            let slice = bytes[index..<(index + length)]
            if length > 1, String(validating: slice, as: UTF8.self) == nil {
                return (line, index - lineStart + 1)
            }
            if byte == 0x0A {
                line += 1
                lineStart = index + 1
            }
            index += length
        }
        return (line, index - lineStart + 1)
    }
}
