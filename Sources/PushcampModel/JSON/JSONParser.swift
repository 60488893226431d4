/// A small, strict JSON parser over UTF-8 bytes, for JSON Lines audiences. Values become
/// `AttributeValue`s; `null` is an absent value (`nil`), and is dropped inside objects and lists.
public struct JSONParser {
    public struct ParseError: Error, Sendable, Hashable {
        public var message: String
        /// 0-based byte offset of the problem.
        public var offset: Int
    }

    let bytes: [UInt8]
    var index = 0
    /// Objects and lists open around the value being parsed.
    var depth = 0

    /// The deepest nesting of objects and lists a value may have (audience rows are shallow; a
    /// hostile row must not exhaust the stack).
    public static let maximumDepth = 64

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses one complete JSON text (surrounding white space allowed).
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> AttributeValue? {
        var parser = JSONParser(bytes)
        parser.skipSpace()
        let value = try parser.parseValue()
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    func error(_ message: String) -> ParseError { ParseError(message: message, offset: index) }

    mutating func skipSpace() {
        while index < bytes.count,
            bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D
        {
            index += 1
        }
    }

    public mutating func parseValue() throws(ParseError) -> AttributeValue? {
        guard index < bytes.count else { throw error("unexpected end of JSON") }
        switch bytes[index] {
        case 0x7B, 0x5B:
            guard depth < Self.maximumDepth else {
                throw error("objects and lists nest more than \(Self.maximumDepth) deep")
            }
            depth += 1
            defer { depth -= 1 }
            return bytes[index] == 0x7B ? try parseObject() : try parseArray()
        case 0x22: return .string(try parseString())
        case 0x74:
            try literal("true")
            return .bool(true)
        case 0x66:
            try literal("false")
            return .bool(false)
        case 0x6E:
            try literal("null")
            return nil
        case 0x2D, 0x30...0x39: return try parseNumber()
        default: throw error("unexpected character '\(Unicode.Scalar(bytes[index]))'")
        }
    }

    mutating func literal(_ word: StaticString) throws(ParseError) {
        let expected = word.withUTF8Buffer { Array($0) }
        guard index + expected.count <= bytes.count, Array(bytes[index..<(index + expected.count)]) == expected else {
            throw error("invalid literal")
        }
        index += expected.count
    }

    mutating func parseObject() throws(ParseError) -> AttributeValue {
        index += 1
        var keys: [String] = []
        var values: [AttributeValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == 0x7D {
            index += 1
            return .object(AttributeObject(keys: keys, values: values))
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == 0x22 else { throw error("expected a quoted key") }
            let key = try parseString()
            skipSpace()
            guard index < bytes.count, bytes[index] == 0x3A else { throw error("expected ':' after key \"\(key)\"") }
            index += 1
            skipSpace()
            let value = try parseValue()
            if let value {
                if let existing = keys.firstIndex(of: key) {
                    values[existing] = value
                } else {
                    keys.append(key)
                    values.append(value)
                }
            }
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of JSON inside an object") }
            if bytes[index] == 0x2C {
                index += 1
                continue
            }
            guard bytes[index] == 0x7D else { throw error("expected ',' or '}' in an object") }
            index += 1
            return .object(AttributeObject(keys: keys, values: values))
        }
    }

    mutating func parseArray() throws(ParseError) -> AttributeValue {
        index += 1
        var items: [AttributeValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == 0x5D {
            index += 1
            return .list(items)
        }
        while true {
            skipSpace()
            if let value = try parseValue() { items.append(value) }
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of JSON inside a list") }
            if bytes[index] == 0x2C {
                index += 1
                continue
            }
            guard bytes[index] == 0x5D else { throw error("expected ',' or ']' in a list") }
            index += 1
            return .list(items)
        }
    }

    mutating func parseNumber() throws(ParseError) -> AttributeValue {
        let start = index
        var isInteger = true
        if bytes[index] == 0x2D { index += 1 }
        // Digits, then any fraction or exponent characters; Double() judges the whole.
        scan: while index < bytes.count {
            switch bytes[index] {
            case 0x30...0x39: break
            case 0x2E, 0x65, 0x45, 0x2B, 0x2D: isInteger = false
            default: break scan
            }
            index += 1
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let number = Double(text), number.isFinite else {
            index = start
            throw error("'\(text)' is not a number")
        }
        return .number(number)
    }

    mutating func parseString() throws(ParseError) -> String {
        index += 1
        let start = index
        var needsDecoding = false
        while index < bytes.count, bytes[index] != 0x22 {
            if bytes[index] == 0x5C {
                needsDecoding = true
                index += 1
                if index == bytes.count { break }  // a backslash ends the input: the string is never closed
            } else if bytes[index] < 0x20 {
                throw error("control character inside a string")
            }
            index += 1
        }
        guard index < bytes.count else { throw error("string is never closed") }
        let raw = bytes[start..<index]
        index += 1
        guard let plain = String(validating: raw, as: UTF8.self) else {
            throw ParseError(message: "string is not valid UTF-8", offset: start)
        }
        guard needsDecoding else { return plain }
        return try decodeEscapes(raw, start: start)
    }

    func decodeEscapes(_ raw: ArraySlice<UInt8>, start: Int) throws(ParseError) -> String {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        func flushUTF8() {
            if !utf8.isEmpty {
                scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
                utf8 = []
            }
        }
        var i = raw.startIndex
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= raw.endIndex else { return nil }
            return UInt32(String(decoding: raw[at..<(at + 4)], as: UTF8.self), radix: 16)
        }
        while i < raw.endIndex {
            let byte = raw[i]
            guard byte == 0x5C else {
                utf8.append(byte)
                i += 1
                continue
            }
            flushUTF8()
            guard i + 1 < raw.endIndex else { throw ParseError(message: "bad escape", offset: i) }
            let escape = raw[i + 1]
            i += 2
            switch escape {
            case 0x22: scalars.append("\"")
            case 0x5C: scalars.append("\\")
            case 0x2F: scalars.append("/")
            case 0x62: scalars.append("\u{08}")
            case 0x66: scalars.append("\u{0C}")
            case 0x6E: scalars.append("\n")
            case 0x72: scalars.append("\r")
            case 0x74: scalars.append("\t")
            case 0x75:
                guard var code = hex4(i) else { throw ParseError(message: "bad \\u escape", offset: i) }
                i += 4
                if (0xD800...0xDBFF).contains(code), i + 1 < raw.endIndex, raw[i] == 0x5C, raw[i + 1] == 0x75,
                    let low = hex4(i + 2), (0xDC00...0xDFFF).contains(low)
                {
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                guard let scalar = Unicode.Scalar(code) else { throw ParseError(message: "bad \\u escape", offset: i) }
                scalars.append(scalar)
            default:
                throw ParseError(message: "bad escape '\\\(Unicode.Scalar(escape))'", offset: i - 2)
            }
        }
        flushUTF8()
        return String(scalars)
    }
}
