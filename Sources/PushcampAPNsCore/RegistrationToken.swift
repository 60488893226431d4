/// The shape of an FCM registration token. Google documents no format; the bounds below hold for every
/// token FCM has issued: 32 to 4096 characters of letters, digits, `-`, `_`, `:` and `.`, and never
/// hexadecimal alone (that is an APNs device token).
public enum RegistrationToken {
    /// Why `token` cannot be an FCM registration token, or nil when it has the shape of one.
    public static func problem(_ token: String) -> String? {
        let count = token.utf8.count
        guard count >= 32 else { return "is shorter than any FCM registration token (32 characters)" }
        guard count <= 4096 else { return "is longer than 4096 characters" }
        // Runs once or twice per Android recipient: over the string's own bytes when it has them.
        let verdict =
            token.utf8.withContiguousStorageIfAvailable(scan) ?? Array(token.utf8).withUnsafeBufferPointer(scan)
        switch verdict {
        case .fine: return nil
        case .hexOnly: return "is hexadecimal only: an APNs device token, not an FCM registration token"
        case .foreign: return "has a character FCM registration tokens never have"
        }
    }

    private enum Verdict { case fine, hexOnly, foreign }

    /// Per byte: 1 a hex digit, 2 another character tokens have, 0 one they never have.
    private static let classes: [UInt8] = (0...255).map { byte -> UInt8 in
        switch byte {
        case 0x30...0x39, 0x41...0x46, 0x61...0x66: return 1
        case 0x47...0x5A, 0x67...0x7A, 0x2D, 0x5F, 0x3A, 0x2E: return 2
        default: return 0
        }
    }

    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Verdict {
        // The OR of every byte's class: 0 seen makes the AND fail; 2 seen sets bit 1.
        var all: UInt8 = 3
        var any: UInt8 = 0
        classes.withUnsafeBufferPointer { classes in
            for byte in bytes {
                let kind = classes[Int(byte)]
                all &= kind == 0 ? 0 : 3
                any |= kind
            }
        }
        if all == 0 { return .foreign }
        return any & 2 == 0 ? .hexOnly : .fine
    }

    /// Whether `token` is hexadecimal alone: the shape of an APNs device token, never of an FCM one.
    public static func isHexadecimal(_ token: String) -> Bool {
        !token.utf8.isEmpty
            && token.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
            }
    }
}
