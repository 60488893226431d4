/// A stable 64-bit hash (FNV-1a with a SplitMix64 finalizer): the same on every machine and in every
/// process, unlike `Hasher`, so plans are reproducible. Used for duplicate detection here and for
/// A/B and holdout buckets in the planner.
public enum StableHash {
    @inlinable
    public static func hash(_ text: String, seed: UInt64 = 0xCBF2_9CE4_8422_2325) -> UInt64 {
        var hash = seed
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return mix(hash)
    }

    /// The hash of `prefix`, a 0 byte, then `text`: for keying one value by another (a campaign and a token).
    @inlinable
    public static func hash(_ text: String, prefixedBy prefix: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in prefix.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        hash &*= 0x0000_0100_0000_01B3
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return mix(hash)
    }

    @inlinable
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A fixed-size Bloom filter over 64-bit hashes. Its size never grows with the audience, which keeps
/// memory flat: it only says "maybe seen", and the audience pipeline confirms maybes exactly.
struct BloomFilter: ~Copyable {
    let bitCount: UInt64
    let hashCount: UInt64
    let words: UnsafeMutablePointer<UInt64>

    /// 2^27 bits (16 MiB) and 6 probes: at 10 million tokens about 0.2% of tokens are false maybes.
    init(log2Bits: Int = 27, hashCount: Int = 6) {
        bitCount = 1 << UInt64(log2Bits)
        self.hashCount = UInt64(hashCount)
        let wordCount = Int(bitCount / 64)
        words = .allocate(capacity: wordCount)
        words.initialize(repeating: 0, count: wordCount)
    }

    deinit { words.deallocate() }

    /// Adds the hash; returns whether every bit was already set (a possible earlier insertion).
    mutating func insert(_ hash: UInt64) -> Bool {
        let low = hash & 0xFFFF_FFFF
        let high = (hash >> 32) | 1
        var present = true
        for probe in 0..<hashCount {
            let bit = (low &+ probe &* high) & (bitCount - 1)
            let word = Int(bit >> 6)
            let mask: UInt64 = 1 << (bit & 63)
            if words[word] & mask == 0 {
                present = false
                words[word] |= mask
            }
        }
        return present
    }
}
