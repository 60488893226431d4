/// A JSON document built in code, with object keys kept in the order written: for Pushcamp's own
/// machine-readable output, whose shape must stay stable.
public indirect enum JSONValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral
{
    case string(String)
    case integer(Int)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(String, JSONValue)])
    /// JSON that is already encoded (a payload).
    case encoded([UInt8])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    public static func optional(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }

    public func encode(into writer: inout JSONWriter) {
        switch self {
        case .string(let text): writer.string(text)
        case .integer(let number): writer.integer(number)
        case .number(let number): writer.number(number)
        case .bool(let flag): writer.bool(flag)
        case .null: writer.null()
        case .encoded(let bytes): writer.bytes += bytes
        case .array(let items):
            writer.raw("[")
            for (index, item) in items.enumerated() {
                if index > 0 { writer.raw(",") }
                item.encode(into: &writer)
            }
            writer.raw("]")
        case .object(let members):
            writer.raw("{")
            for (index, member) in members.enumerated() {
                if index > 0 { writer.raw(",") }
                writer.string(member.0)
                writer.raw(":")
                member.1.encode(into: &writer)
            }
            writer.raw("}")
        }
    }

    /// The document as compact JSON text.
    public var text: String {
        var writer = JSONWriter()
        encode(into: &writer)
        return writer.string
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.text == rhs.text }
    public func hash(into hasher: inout Hasher) { hasher.combine(text) }
}
