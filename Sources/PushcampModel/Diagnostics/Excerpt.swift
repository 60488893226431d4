/// Quoting input in output: text from files, audiences and the network can hold anything —
/// secrets, terminal escape sequences, carriage returns that forge lines — so what Pushcamp prints
/// of it is escaped, and what it quotes in messages is short.
extension String {
    /// The text with control characters (C0, DEL, C1, and the line and paragraph separators)
    /// written as `\n`, `\r`, `\t` or `\u{1B}`: safe to print on a terminal, one line.
    public var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: \.isControlForOutput) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            guard scalar.isControlForOutput else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return out
    }

    /// At most `limit` characters of the text, control characters escaped, "…" when cut: what a
    /// message may quote of a value read from a file.
    public func excerpt(_ limit: Int = 40) -> String {
        let head = count > limit ? String(prefix(limit)) + "…" : self
        return head.escapingControlCharacters
    }
}

extension Unicode.Scalar {
    var isControlForOutput: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029
    }
}

/// Text from input placed in Markdown (plans and reports pasted into pull requests).
public enum Markdown {
    /// For a table cell or running text: one line, no raw HTML, no table breaks.
    public static func text(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "|": out += "\\|"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "\\": out += "\\\\"
            case "\n", "\r", "\r\n": out += " "
            default: out.append(character)
            }
        }
        return out.escapingControlCharacters
    }

    /// For a code span: backticks cannot close it early (they become ˋ), and `|` cannot break the table.
    public static func code(_ value: String) -> String {
        "`" + value.replacingBackticks.escapingControlCharacters.replacingPipes + "`"
    }
}

extension String {
    fileprivate var replacingBackticks: String { String(map { $0 == "`" ? "ˋ" : $0 }) }
    fileprivate var replacingPipes: String {
        var out = ""
        for character in self { out += character == "|" ? "\\|" : String(character) }
        return out
    }
}
