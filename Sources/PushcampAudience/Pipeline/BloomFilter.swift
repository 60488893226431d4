import PushcampModel

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
