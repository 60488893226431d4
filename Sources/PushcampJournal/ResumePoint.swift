/// What an unfinished run still has to do, read back from its journal.
///
/// The plan is deterministic (the revision guard makes sure it is the same plan), so a resume plans
/// again and asks, seq by seq: settled (skip it), waiting to retry (keep its due time), in flight
/// when the run stopped (send once more, a possible duplicate), not sent (send it).
public struct ResumePoint: Sendable {
    public enum Pending: Sendable, Hashable {
        /// A retry due at `until` (seconds since 1970); `attempts` requests were made.
        case waiting(until: Double, attempts: Int)
        /// Sent `attempts` times with no answer recorded: APNs may have it.
        case unknown(attempts: Int)
        /// Taken for sending but never written to a connection (the run stopped first).
        case unsent
    }

    /// Recipients with a final outcome.
    public private(set) var settled = SeqSet()
    public private(set) var pending: [Int: Pending] = [:]
    /// The device tokens of the `unsent` ones: their rows stay, so an answer updates the row.
    public private(set) var unsentTokens: [Int: String] = [:]
    public private(set) var delivered = 0
    public private(set) var failed = 0
    /// What the sends before measured: the resumed send adds its own to them.
    public private(set) var stats = RunStats()

    public init() {}

    /// Reads `run` back without loading every row at once: memory is a bit per recipient plus the
    /// pending ones.
    public init(journal: any JournalStore, run: RunID) async throws {
        try await self.init(journal: journal, run: run, within: nil)
        stats = try await journal.stats(of: run) ?? RunStats()
    }

    /// What is left of one slice of `run`: only its seqs are read back (settled, pending, counted).
    public init(journal: any JournalStore, slice: RunSlice) async throws {
        try await self.init(journal: journal, run: slice.run, within: slice.seqs)
    }

    /// Within `seqs` (a slice's), only the journal's rows and ranges of those seqs are read.
    private init(journal: any JournalStore, run: RunID, within slice: ClosedRange<Int>?) async throws {
        let seqs = slice ?? 0...Int.max
        for whole in try await journal.delivered(of: run, within: slice) where whole.overlaps(seqs) {
            let range = whole.clamped(to: seqs)
            for seq in range { settled.insert(seq) }
            delivered += range.count
        }
        try await journal.forEachRecipient(of: run, within: slice) { row in
            guard seqs.contains(row.seq) else { return }
            switch row.state {
            case .delivered:
                settled.insert(row.seq)
                delivered += 1
            case .failed:
                settled.insert(row.seq)
                failed += 1
            case .waiting(let until, let attempts):
                pending[row.seq] = .waiting(until: until, attempts: attempts)
            case .inFlight(let attempts), .unknown(let attempts):
                pending[row.seq] = .unknown(attempts: attempts)
            case .planned:
                pending[row.seq] = .unsent
                unsentTokens[row.seq] = row.token
            }
        }
        // Dispatched first attempts with neither an answer nor a row were in flight when it stopped.
        for whole in try await journal.dispatched(of: run, within: slice) where whole.overlaps(seqs) {
            for seq in whole.clamped(to: seqs) where !settled.contains(seq) && pending[seq] == nil {
                pending[seq] = .unknown(attempts: 1)
            }
        }
    }

    /// Recipients that will be sent again although APNs may have their first request.
    public var possibleDuplicates: Int {
        pending.values.reduce(0) { count, state in
            if case .unknown = state { return count + 1 }
            return count
        }
    }
}

/// A set of plan positions: one bit each, so a million settled recipients cost 125 KB.
public struct SeqSet: Sendable, Hashable {
    private var words: [UInt64] = []
    public private(set) var count = 0

    public init() {}

    public func contains(_ seq: Int) -> Bool {
        let word = seq >> 6
        guard seq >= 0, word < words.count else { return false }
        return words[word] & (1 << UInt64(seq & 63)) != 0
    }

    public mutating func insert(_ seq: Int) {
        precondition(seq >= 0, "plan positions are not negative")
        let word = seq >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        let bit: UInt64 = 1 << UInt64(seq & 63)
        if words[word] & bit == 0 {
            words[word] |= bit
            count += 1
        }
    }
}
