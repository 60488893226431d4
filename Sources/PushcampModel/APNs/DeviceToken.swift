/// Device token checks: hexadecimal, an even number of digits, a sane length. Apple's tokens are 32
/// bytes today and Apple warns they may grow, so 32 to 100 bytes are accepted.
public enum DeviceToken {
    public static let minimumBytes = 32
    public static let maximumBytes = 100

    public enum Problem: String, Error, Sendable, Hashable, CaseIterable {
        case empty = "empty token"
        case notHex = "not hexadecimal"
        case oddLength = "odd number of hex digits"
        case tooShort = "too short"
        case tooLong = "too long"

        public var explanation: String {
            switch self {
            case .empty: return "the token is empty"
            case .notHex: return "a device token is hexadecimal (0-9, a-f)"
            case .oddLength: return "a device token has an even number of hex digits"
            case .tooShort: return "a device token has at least \(DeviceToken.minimumBytes * 2) hex digits"
            case .tooLong: return "a device token has at most \(DeviceToken.maximumBytes * 2) hex digits"
            }
        }
    }

    /// The token in lowercase, or why it is not one. Surrounding spaces are ignored.
    @inlinable
    public static func normalize(_ raw: String) -> Result<String, Problem> {
        var utf8 = Substring(raw).utf8
        while utf8.first == 0x20 || utf8.first == 0x09 { utf8.removeFirst() }
        while utf8.last == 0x20 || utf8.last == 0x09 || utf8.last == 0x0D { utf8.removeLast() }
        if utf8.isEmpty { return .failure(.empty) }
        var needsLowering = false
        for byte in utf8 {
            switch byte {
            case 0x30...0x39, 0x61...0x66: continue
            case 0x41...0x46: needsLowering = true
            default: return .failure(.notHex)
            }
        }
        let count = utf8.count
        if count % 2 != 0 { return .failure(.oddLength) }
        if count < minimumBytes * 2 { return .failure(.tooShort) }
        if count > maximumBytes * 2 { return .failure(.tooLong) }
        if !needsLowering, utf8.count == raw.utf8.count { return .success(raw) }
        return .success(String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x46 ? $0 + 0x20 : $0 }, as: UTF8.self))
    }
}
