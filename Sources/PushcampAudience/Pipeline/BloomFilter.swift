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

/// A fixed-size, blocked Bloom filter over 64-bit hashes. Its size never grows with the audience, which
/// keeps memory flat: it only says "maybe seen", and the audience pipeline confirms maybes exactly.
/// Every probe of one hash falls in the same 64-byte block, so an insertion costs one cache miss, not six.
struct BloomFilter: ~Copyable {
    let blockCount: UInt64
    let hashCount: UInt64
    let words: UnsafeMutablePointer<UInt64>

    /// 2^27 bits (16 MiB) and 6 probes: at 10 million tokens under 0.5% of tokens are false maybes.
    init(log2Bits: Int = 27, hashCount: Int = 6) {
        blockCount = 1 << UInt64(log2Bits - 9)
        self.hashCount = UInt64(hashCount)
        let wordCount = Int(blockCount * 8)
        words = .allocate(capacity: wordCount)
        words.initialize(repeating: 0, count: wordCount)
    }

    deinit { words.deallocate() }

    /// Adds the hash; returns whether every bit was already set (a possible earlier insertion).
    mutating func insert(_ hash: UInt64) -> Bool {
        // The high bits pick the 512-bit block; the low 32 bits, double hashed, pick bits inside it.
        let block = words + Int((hash >> 32) & (blockCount - 1)) * 8
        let low = hash & 0xFFFF_FFFF
        let step = (low >> 16) | 1
        var present = true
        for probe in 0..<hashCount {
            let bit = (low &+ probe &* step) & 511
            let mask: UInt64 = 1 << (bit & 63)
            let word = Int(bit >> 6)
            if block[word] & mask == 0 {
                present = false
                block[word] |= mask
            }
        }
        return present
    }
}
