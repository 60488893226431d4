/// Final answers (delivered and failed) over time, in buckets of `width` seconds aligned to the
/// epoch: the sends-per-minute chart of a run, kept with its statistics so a listing of runs draws
/// it without reading their recipients. Bounded: past `limit` buckets, neighbours are merged two by
/// two (the width doubles), so a run sent over days costs what one sent over minutes does.
public struct AnswerSeries: Sendable, Equatable {
    /// Seconds per bucket: 60, or 60 × a power of two.
    public private(set) var width: Int64 = 60
    /// The first bucket's index (its start over `width`); nil while empty.
    public private(set) var first: Int64?
    public private(set) var counts: [Int] = []

    public static let limit = 240
    static let baseWidth: Int64 = 60

    public init() {}

    /// A stored series, checked: nil when its width, start or length could not have been written.
    public init?(width: Int64, first: Int64?, counts: [Int]) {
        guard width >= Self.baseWidth, width % Self.baseWidth == 0, (width / Self.baseWidth).nonzeroBitCount == 1,
            counts.count <= Self.limit, counts.allSatisfy({ $0 >= 0 }), (first == nil) == counts.isEmpty,
            first.map({ $0 >= 0 && $0 <= Int64.max / width }) ?? true
        else { return nil }
        self.width = width
        self.first = first
        self.counts = counts
    }

    public var isEmpty: Bool { counts.isEmpty }

    /// When the first bucket starts, seconds since 1970.
    public var start: Int64? { first.map { $0 * width } }

    /// Adds `count` answers at `time` (seconds since 1970).
    public mutating func record(_ count: Int, at time: Double) {
        guard count > 0, time.isFinite, time >= 0, time < 1e15 else { return }
        add(count, bucket: Int64(time) / Self.baseWidth, of: Self.baseWidth)
    }

    /// This series and `other` (another send of the same run) in one.
    public func adding(_ other: AnswerSeries) -> AnswerSeries {
        var sum = self
        guard let otherFirst = other.first else {
            while sum.width < other.width { sum.coarsen() }
            return sum
        }
        for (offset, count) in other.counts.enumerated() where count > 0 {
            sum.add(count, bucket: otherFirst + Int64(offset), of: other.width)
        }
        return sum
    }

    /// Adds `count` answers in bucket `bucket` of a series `bucketWidth` seconds wide (this one's
    /// width or a narrower one).
    private mutating func add(_ count: Int, bucket: Int64, of bucketWidth: Int64) {
        while width < bucketWidth { coarsen() }
        var index = bucket / (width / bucketWidth)
        guard var start = first else {
            first = index
            counts = [count]
            return
        }
        // Widen until the bucket and every bucket kept fit in `limit`.
        while max(index, start + Int64(counts.count) - 1) - min(index, start) >= Int64(Self.limit) {
            coarsen()
            index /= 2
            start = first ?? index
        }
        if index < start {
            counts.insert(contentsOf: repeatElement(0, count: Int(start - index)), at: 0)
            first = index
            start = index
        }
        let offset = Int(index - start)
        if offset >= counts.count { counts.append(contentsOf: repeatElement(0, count: offset - counts.count + 1)) }
        counts[offset] += count
    }

    /// Doubles the width, merging each aligned pair of buckets.
    private mutating func coarsen() {
        guard let start = first else {
            width *= 2
            return
        }
        let newFirst = start / 2
        var merged = [Int](repeating: 0, count: Int((start + Int64(counts.count) - 1) / 2 - newFirst + 1))
        for (offset, count) in counts.enumerated() {
            merged[Int((start + Int64(offset)) / 2 - newFirst)] += count
        }
        width *= 2
        first = newFirst
        counts = merged
    }
}
