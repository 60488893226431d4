import Foundation
import PushcampModel

/// Writes a line to standard error; on a terminal, its `error:` and `warning:` in colour.
func printError(_ line: String) {
    let styled = Styling.standardError ? TerminalStyle.diagnostics(line) : line
    FileHandle.standardError.write(Array((styled + "\n").utf8).withUnsafeBufferPointer { Data(buffer: $0) })
}

/// Prints a document for people (a plan, a report, a status) to standard output; on a terminal,
/// its headings in bold and its diagnostics' severities in colour.
func printDocument(_ text: String) {
    print(Styling.standardOutput ? TerminalStyle.diagnostics(TerminalStyle.headings(text)) : text, terminator: "")
}

/// Whether each stream is styled (TerminalStyle.enabled), decided once.
enum Styling {
    static let standardError = TerminalStyle.enabled(
        isTerminal: isatty(STDERR_FILENO) == 1,
        environment: ProcessInfo.processInfo.environment
    )
    static let standardOutput = TerminalStyle.enabled(
        isTerminal: isatty(STDOUT_FILENO) == 1,
        environment: ProcessInfo.processInfo.environment
    )
}

/// Rows as aligned columns, two spaces apart: cells left-aligned, except columns from
/// `rightAlignedFrom` on (numbers); the last column is not padded. One line per row.
func columns(_ lines: [[String]], rightAlignedFrom: Int = .max) -> String {
    guard let first = lines.first else { return "" }
    let widths = (0..<first.count).map { column in lines.map { $0[column].count }.max() ?? 0 }
    return lines.map { line in
        line.enumerated().map { column, cell in
            if column >= rightAlignedFrom { return String(repeating: " ", count: widths[column] - cell.count) + cell }
            return column < widths.count - 1
                ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0) : cell
        }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }.joined(separator: "\n") + "\n"
}

extension JSONValue {
    /// A dictionary-and-array value (as the list commands build them) in Pushcamp's one JSON
    /// style: object keys sorted, compact, no escaped slashes; absent values (nil, NSNull) as null.
    static func from(_ value: Any?) -> JSONValue {
        switch value {
        case nil, is NSNull: return .null
        case let object as [String: Any]:
            return .object(object.keys.sorted().map { ($0, from(object[$0])) })
        case let array as [Any]: return .array(array.map { from($0) })
        case let text as String: return .string(text)
        case let flag as Bool: return .bool(flag)
        case let number as Int: return .integer(number)
        case let number as Int64: return .integer(Int(number))
        case let number as Double: return .number(number)
        default:
            return value.map { .string("\($0)") } ?? .null
        }
    }
}

/// One CSV field as RFC 4180 wants it: quoted (quotes doubled) when it holds a comma, a quote or a
/// line break.
func csvField(_ text: String) -> String {
    guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
    return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
