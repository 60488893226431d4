import Foundation

/// Colour for a terminal (ANSI): `error:` in bold red, `warning:` in bold yellow, `note:` in bold
/// cyan wherever a diagnostic line says them, and headings (lines that start in the first column)
/// in bold. Only when the stream is a terminal and NO_COLOR is not set (https://no-color.org): what
/// goes to a file or a pipe is never styled.
public enum TerminalStyle {
    /// Whether a stream is to be styled: a terminal, NO_COLOR unset or empty, TERM not `dumb`.
    public static func enabled(isTerminal: Bool, environment: [String: String]) -> Bool {
        isTerminal && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }

    static let severities: [(word: String, code: String)] = [
        ("error:", "1;31"), ("warning:", "1;33"), ("note:", "1;36"),
    ]

    /// `text` with the severity of each diagnostic line coloured: the first `error:`, `warning:` or
    /// `note:` at the start of a line or after `: ` (`path:line:col: error: …`).
    public static func diagnostics(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            for (word, code) in severities {
                if line.hasPrefix(word) { return paint(word, code) + line.dropFirst(word.count) }
                if let range = line.range(of: ": " + word) {
                    return line[..<range.lowerBound] + ": " + paint(word, code) + line[range.upperBound...]
                }
            }
            return String(line)
        }.joined(separator: "\n")
    }

    /// `text` with its headings in bold: the non-empty lines that start in the first column.
    public static func headings(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let first = line.first, first != " " else { return String(line) }
            return paint(String(line), "1")
        }.joined(separator: "\n")
    }

    static func paint(_ text: String, _ code: String) -> String { "\u{1B}[\(code)m\(text)\u{1B}[0m" }
}
