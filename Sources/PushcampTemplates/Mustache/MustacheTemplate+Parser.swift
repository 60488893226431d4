import PushcampModel

extension MustacheTemplate {
    /// A problem in a template's text, with the 0-based offset (in Unicode scalars) where it is.
    public struct ParseError: Error, Sendable, Hashable {
        public var message: String
        public var offset: Int

        public init(message: String, offset: Int) {
            self.message = message
            self.offset = offset
        }
    }

    public init(_ text: String) throws(ParseError) {
        let scalars = Array(text.unicodeScalars)
        var index = 0
        let parts = try Self.parseParts(scalars, &index, closing: nil, depth: 0)
        self.parts = parts
        self.text = text
    }

    private static let open: [Unicode.Scalar] = ["{", "{"]

    /// The deepest `{{#section}}` nesting a template may have.
    public static let maximumSectionDepth = 32

    private static func parseParts(
        _ s: [Unicode.Scalar],
        _ index: inout Int,
        closing: Name?,
        depth: Int
    ) throws(ParseError) -> [Part] {
        var parts: [Part] = []
        var text: [UInt8] = []
        func flush() {
            if !text.isEmpty {
                parts.append(.text(text))
                text = []
            }
        }
        while index < s.count {
            guard s[index] == "{", index + 1 < s.count, s[index + 1] == "{" else {
                var scalarText = ""
                scalarText.unicodeScalars.append(s[index])
                JSONWriter.appendEscaped(scalarText, to: &text)
                index += 1
                continue
            }
            let tagStart = index
            let triple = index + 2 < s.count && s[index + 2] == "{"
            var cursor = index + (triple ? 3 : 2)
            let close: [Unicode.Scalar] = triple ? ["}", "}", "}"] : ["}", "}"]
            var end: Int?
            while cursor + close.count <= s.count {
                if Array(s[cursor..<(cursor + close.count)]) == close {
                    end = cursor
                    break
                }
                cursor += 1
            }
            guard let end else {
                throw ParseError(
                    message:
                        "tag '\(triple ? "{{{" : "{{")' is never closed with '\(String(String.UnicodeScalarView(close)))'",
                    offset: tagStart
                )
            }
            var content = String(String.UnicodeScalarView(s[(index + (triple ? 3 : 2))..<end]))
            index = end + close.count
            content = trim(content)
            var sigil: Character? = triple ? "&" : nil
            if !triple, let first = content.first, "#^/!>&={".contains(first) {
                sigil = first
                content = trim(String(content.dropFirst()))
            }
            switch sigil {
            case "!":
                continue
            case "=":
                throw ParseError(message: "changing delimiters ({{= =}}) is not supported", offset: tagStart)
            case ">":
                guard isValidName(content), !content.contains(".") || content.count > 1 else {
                    throw ParseError(message: "'{{> \(content)}}' must name a localized string key", offset: tagStart)
                }
                flush()
                parts.append(.localized(content, offset: tagStart))
            case "#", "^":
                let name = try parseName(content, tagStart)
                guard depth < maximumSectionDepth else {
                    throw ParseError(message: "sections nest more than \(maximumSectionDepth) deep", offset: tagStart)
                }
                flush()
                let inner = try parseParts(s, &index, closing: name, depth: depth + 1)
                parts.append(.section(name, inner, inverted: sigil == "^"))
            case "/":
                let name = try parseName(content, tagStart)
                guard let closing else {
                    throw ParseError(
                        message: "'{{/\(content)}}' closes a section that was never opened",
                        offset: tagStart
                    )
                }
                guard name.parts == closing.parts else {
                    throw ParseError(
                        message: "'{{/\(content)}}' does not match the open section '{{#\(closing.text)}}'",
                        offset: tagStart
                    )
                }
                flush()
                return parts
            default:
                if sigil == "{" {
                    throw ParseError(message: "unbalanced braces in tag", offset: tagStart)
                }
                flush()
                parts.append(.variable(try parseName(content, tagStart)))
            }
        }
        if let closing {
            throw ParseError(
                message: "section '{{#\(closing.text)}}' is never closed with '{{/\(closing.text)}}'",
                offset: closing.offset
            )
        }
        flush()
        return parts
    }

    private static func parseName(_ content: String, _ offset: Int) throws(ParseError) -> Name {
        if content == "." { return Name(parts: [], offset: offset) }
        guard !content.isEmpty else { throw ParseError(message: "empty tag '{{}}'", offset: offset) }
        guard isValidName(content) else {
            throw ParseError(
                message: "'\(content)' is not a name; names are letters, digits, '_', '-' and '.' between parts",
                offset: offset
            )
        }
        let parts = content.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !parts.contains(where: \.isEmpty) else {
            throw ParseError(message: "'\(content)' has an empty part between dots", offset: offset)
        }
        return Name(parts: parts, offset: offset)
    }

    private static func isValidName(_ text: String) -> Bool {
        !text.isEmpty
            && text.unicodeScalars.allSatisfy {
                $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" || $0 == "."
            }
    }

    private static func trim(_ text: String) -> String {
        var scalars = Substring(text)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
