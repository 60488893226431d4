/// One attribute of a recipient (a CSV cell, a JSON value, a SQLite column) or a campaign variable.
/// An absent attribute (an empty CSV cell, a missing or null JSON key, a NULL column) is `nil`
/// wherever attributes are looked up, never a value of this type.
public enum AttributeValue: Hashable, Sendable {
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)
    case list([AttributeValue])
    case object(AttributeObject)

    /// The text a template prints for this value.
    public var text: String {
        switch self {
        case .string(let value): return value
        case .integer(let value): return String(value)
        case .number(let value): return JSONWriter.format(value)
        case .bool(let value): return value ? "true" : "false"
        case .list(let items): return items.map(\.text).joined(separator: ", ")
        case .object: return "[object]"
        }
    }

    /// Truthiness for filters and template sections: `false`, `0`, `""`, `"false"`, `"no"`, `"0"` and
    /// empty lists are false; everything else is true.
    public var isTruthy: Bool {
        switch self {
        case .string(let value):
            // Only words of at most 5 letters can be false: lower-case those, without allocating
            // (this runs per recipient for filters like `opted_in`).
            guard value.utf8.count <= 5 else { return true }
            var word: UInt64 = 0
            for byte in value.utf8 {
                let lower = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
                word = word << 8 | UInt64(lower)
            }
            return !Self.falseWords.contains(word)
        case .integer(let value): return value != 0
        case .number(let value): return value != 0
        case .bool(let value): return value
        case .list(let items): return !items.isEmpty
        case .object: return true
        }
    }

    /// "", "false", "no", "0", "off", each packed big-endian into a word as `isTruthy` packs its text.
    static let falseWords: [UInt64] = ["", "false", "no", "0", "off"].map { word in
        word.utf8.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The value as a number, when it is one or is text that reads as one.
    public var numericValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        case .string(let value): return Double(value.trimmingSpaces)
        case .bool, .list, .object: return nil
        }
    }
}

/// A JSON object attribute, keeping its keys in their original order.
public struct AttributeObject: Hashable, Sendable {
    public var keys: [String]
    public var values: [AttributeValue]

    public init(keys: [String], values: [AttributeValue]) {
        self.keys = keys
        self.values = values
    }

    public subscript(key: String) -> AttributeValue? {
        keys.firstIndex(of: key).map { values[$0] }
    }
}
