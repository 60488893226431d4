import PushcampAPNsCore

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
        /// An Android row whose token is not shaped as an FCM registration token.
        case notRegistrationToken = "not an FCM registration token"
        /// A row whose platform column names neither a platform nor one of the campaign's apps.
        case unknownPlatform = "unknown platform"
        /// Xcode's description of the token's `Data` (`<3f1d6f0c 4a8e…>`) instead of its hex.
        case xcodeDescription = "Xcode's description of a token"
        /// An FCM registration token (an Android device's) where an APNs device token is read.
        case registrationToken = "an FCM registration token"

        public var explanation: String {
            switch self {
            case .empty: return "the token is empty"
            case .notHex: return "a device token is hexadecimal (0-9, a-f)"
            case .oddLength: return "a device token has an even number of hex digits"
            case .tooShort: return "a device token has at least \(DeviceToken.minimumBytes * 2) hex digits"
            case .tooLong: return "a device token has at most \(DeviceToken.maximumBytes * 2) hex digits"
            case .notRegistrationToken:
                return
                    "an FCM registration token has 32 to 4096 letters, digits, '-', '_', ':' or '.', not hexadecimal alone"
            case .unknownPlatform:
                return "the platform column names neither a platform (ios, android) nor one of the campaign's apps"
            case .xcodeDescription:
                return "this is how Xcode prints a token's Data (<3f1d6f0c …>); the token is the same bytes in hex "
                    + "without brackets or spaces: deviceToken.map { String(format: \"%02x\", $0) }.joined()"
            case .registrationToken:
                return "this is an FCM registration token (an Android device's): the row needs a platform column "
                    + "saying android (audience.platform names it) and the campaign an Android app"
            }
        }
    }

    /// What examples of invalid tokens show. The cell can be anything — an API key in a column
    /// named `token`, a line of a key file — so only a token that looks like one (hexadecimal, the
    /// wrong length) shows its first 8 digits; anything else shows its length alone.
    public static func masked(_ raw: String) -> String {
        if raw.isEmpty { return "(empty)" }
        guard raw.utf8.allSatisfy({ isHexDigit($0) }) else { return "(\(raw.count) characters, not shown)" }
        return raw.count <= 8 ? raw : "\(raw.prefix(8))… (\(raw.count) characters)"
    }

    /// Whether a cell read as a token opens or closes a PEM block (`-----BEGIN PRIVATE KEY-----`):
    /// the file is a key or a certificate, not an audience, and is refused before any of it is
    /// printed.
    public static func isPEMBoundary(_ raw: String) -> Bool {
        raw.hasPrefix("-----BEGIN ") || raw.hasPrefix("-----END ")
    }

    /// Why a cell with other characters than hex digits is not a device token: Xcode's description
    /// of the token's bytes, an Android device's FCM registration token, or simply not hexadecimal.
    static func unreadable(_ raw: String) -> Problem {
        let trimmed = raw.trimmingWhitespace()
        if trimmed.hasPrefix("<"), trimmed.hasSuffix(">") {
            let inside = trimmed.dropFirst().dropLast().utf8.filter { $0 != 0x20 }
            if !inside.isEmpty, inside.allSatisfy(isHexDigit) { return .xcodeDescription }
        }
        // FCM's tokens are an instance id, a colon and a long key (`cR6r…:APA91b…`, 140 and more).
        let fcmShaped = trimmed.utf8.count >= 100 && trimmed.contains(":") && RegistrationToken.problem(trimmed) == nil
        return fcmShaped ? .registrationToken : .notHex
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// The token in lowercase, or why it is not one. Surrounding spaces are ignored.
    public static func normalize(_ raw: String) -> Result<String, Problem> {
        // Native strings are contiguous UTF-8: check them in place (this runs once per recipient).
        if let result = raw.utf8.withContiguousStorageIfAvailable({ normalize(raw, bytes: $0) }) {
            return result
        }
        return Array(raw.utf8).withUnsafeBufferPointer { normalize(raw, bytes: $0) }
    }

    private static func normalize(_ raw: String, bytes: UnsafeBufferPointer<UInt8>) -> Result<String, Problem> {
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 || bytes[end - 1] == 0x0D { end -= 1 }
        if start == end { return .failure(.empty) }
        var needsLowering = false
        for index in start..<end {
            switch bytes[index] {
            case 0x30...0x39, 0x61...0x66: continue
            case 0x41...0x46: needsLowering = true
            default: return .failure(unreadable(raw))
            }
        }
        let count = end - start
        if count % 2 != 0 { return .failure(.oddLength) }
        if count < minimumBytes * 2 { return .failure(.tooShort) }
        if count > maximumBytes * 2 { return .failure(.tooLong) }
        if !needsLowering, count == bytes.count { return .success(raw) }
        return .success(
            String(unsafeUninitializedCapacity: count) { buffer in
                for index in 0..<count {
                    let byte = bytes[start + index]
                    buffer[index] = byte >= 0x41 && byte <= 0x46 ? byte + 0x20 : byte
                }
                return count
            }
        )
    }
}
