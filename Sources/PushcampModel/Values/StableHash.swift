/// A stable 64-bit hash (FNV-1a with a SplitMix64 finalizer): the same on every machine and in every
/// process, unlike `Hasher`, so plans are reproducible. Used for duplicate detection here and for
/// A/B and holdout buckets in the planner.
public enum StableHash {
    static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    static let prime: UInt64 = 0x0000_0100_0000_01B3

    @inlinable
    public static func hash(_ text: String, seed: UInt64 = 0xCBF2_9CE4_8422_2325) -> UInt64 {
        mix(fold(text, into: seed))
    }

    /// The same hash as of `String(text)`, without making the string.
    @inlinable
    public static func hash(_ text: Substring) -> UInt64 {
        mix(fold(text, into: 0xCBF2_9CE4_8422_2325))
    }

    /// The hash of `prefix`, a 0 byte, then `text`: for keying one value by another (a campaign and a token).
    @inlinable
    public static func hash(_ text: String, prefixedBy prefix: String) -> UInt64 {
        mix(fold(text, into: fold(prefix, into: 0xCBF2_9CE4_8422_2325) &* 0x0000_0100_0000_01B3))
    }

    /// FNV-1a over the text's UTF-8, in place when the string is contiguous (native strings are).
    @inlinable
    static func fold<Text: StringProtocol>(_ text: Text, into seed: UInt64) -> UInt64 {
        @inline(__always)
        func fold<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
            var hash = seed
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01B3
            }
            return hash
        }
        return text.utf8.withContiguousStorageIfAvailable { fold($0) } ?? fold(text.utf8)
    }

    @inlinable
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
