import Foundation

/// Small, whole-file reads (campaigns, templates, projects) with errors that read well.
public enum FileBytes {
    public struct ReadError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public static func read(_ url: URL) throws(ReadError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ReadError(description: "no such file")
        }
        if isDirectory.boolValue { throw ReadError(description: "is a directory, not a file") }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ReadError(description: "cannot read file (permission denied?)")
        }
        return [UInt8](data)
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
