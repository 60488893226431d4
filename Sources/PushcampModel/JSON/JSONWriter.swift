/// Appends JSON to a byte buffer: the one JSON encoder Pushcamp uses for payloads and for its own
/// machine-readable output, so escaping and number formatting are the same everywhere and output is
/// byte-for-byte stable.
public struct JSONWriter {
    public var bytes: [UInt8]

    public init(capacity: Int = 1024) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    public mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string literal, quotes included.
    public mutating func string(_ text: String) {
        bytes.append(0x22)
        Self.appendEscaped(text, to: &bytes)
        bytes.append(0x22)
    }

    public mutating func number(_ value: Double) { raw(Self.format(value)) }
    public mutating func integer(_ value: Int64) { raw(String(value)) }
    public mutating func integer(_ value: Int) { raw(String(value)) }
    public mutating func bool(_ value: Bool) { raw(value ? "true" : "false") }
    public mutating func null() { raw("null") }

    public mutating func value(_ value: AttributeValue) {
        switch value {
        case .string(let text): string(text)
        case .integer(let number): integer(number)
        case .number(let number): self.number(number)
        case .bool(let flag): bool(flag)
        case .list(let items):
            bytes.append(0x5B)
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(0x2C) }
                self.value(item)
            }
            bytes.append(0x5D)
        case .object(let object):
            bytes.append(0x7B)
            for index in object.keys.indices {
                if index > 0 { bytes.append(0x2C) }
                string(object.keys[index])
                bytes.append(0x3A)
                self.value(object.values[index])
            }
            bytes.append(0x7D)
        }
    }

    /// Escapes `text` for the inside of a JSON string: quotes, backslashes and control characters;
    /// everything else, non-ASCII included, is copied as UTF-8, a run of plain bytes at a time (every
    /// rendered payload goes through here: byte by byte, it was the planner's largest cost).
    @inlinable
    public static func appendEscaped(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendEscaped($0, to: &bytes) }
    }

    /// `appendEscaped` over UTF-8 bytes.
    @usableFromInline
    static func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        var plain = 0
        for index in utf8.indices {
            let byte = utf8[index]
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
            if plain < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plain..<index])) }
            plain = index + 1
            switch byte {
            case 0x22, 0x5C: bytes += [0x5C, byte]
            case 0x0A: bytes += [0x5C, 0x6E]
            case 0x0D: bytes += [0x5C, 0x72]
            case 0x09: bytes += [0x5C, 0x74]
            default:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes += [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        if plain < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plain...])) }
    }

    /// Numbers as JSON writes them: integers without a fraction, others in Swift's shortest form.
    public static func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
