/// A UUID's 8-4-4-4-12 form in lowercase hex, as `apns-id` carries it.
public enum UUIDText {
    /// The form's length in bytes.
    public static let count = 36

    /// Writes the 36 characters of the UUID whose bytes are `high` then `low` (big-endian) at the
    /// start of `text`, which must hold at least `count` bytes.
    @inlinable
    public static func write(high: UInt64, low: UInt64, into text: UnsafeMutableBufferPointer<UInt8>) {
        precondition(text.count >= count)
        var at = 0
        for index in 0..<16 {
            if index == 4 || index == 6 || index == 8 || index == 10 {
                text[at] = 0x2D
                at += 1
            }
            let word = index < 8 ? high : low
            let byte = UInt8(truncatingIfNeeded: word >> (56 - 8 * UInt64(index % 8)))
            text[at] = hexDigit(byte >> 4)
            text[at + 1] = hexDigit(byte & 0x0F)
            at += 2
        }
    }

    @inlinable
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x57 + nibble
    }
}
