import PushcampAudience
import PushcampModel

/// The recipients a frequency cap holds back: those already delivered `max` notifications within
/// the cap's window, counted from the journal's deliveries (every campaign of the project).
///
/// Counting sorts the 64-bit token hashes of the window's deliveries (8 bytes each, freed once
/// counted); what stays is one hash per capped token.
public struct FrequencyCap: Sendable {
    public var spec: FrequencyCapSpec
    /// Hashes of the tokens at or over the cap.
    private var capped: Set<UInt64>

    /// Counts the deliveries `forEachDelivery` yields: the `StableHash` of each delivered token, once
    /// per delivery.
    public init(
        _ spec: FrequencyCapSpec,
        counting forEachDelivery: ((UInt64) throws -> Void) throws -> Void
    ) rethrows {
        var hashes: [UInt64] = []
        try forEachDelivery { hashes.append($0) }
        self.init(spec, deliveryHashes: &hashes)
    }

    init(_ spec: FrequencyCapSpec, deliveryHashes hashes: inout [UInt64]) {
        self.spec = spec
        hashes.sort()
        var capped: Set<UInt64> = []
        var start = 0
        while start < hashes.count {
            var end = start + 1
            while end < hashes.count && hashes[end] == hashes[start] { end += 1 }
            if end - start >= spec.max { capped.insert(hashes[start]) }
            start = end
        }
        self.capped = capped
    }

    /// Tokens at or over the cap.
    public var count: Int { capped.count }

    /// Whether `token` has had its `max` deliveries within the window.
    func holdsBack(_ token: String) -> Bool {
        !capped.isEmpty && capped.contains(StableHash.hash(token))
    }
}

/// What the journal knows of earlier sends that changes a plan: dead tokens to pass over and,
/// when the campaign has a frequency cap, recipients that had enough.
public struct DeliveryHistory: Sendable {
    public var suppression: Suppression
    public var frequencyCap: FrequencyCap?
    /// The subscriptions the audience is joined to; everyone passes when nil.
    public var subscriptions: SubscriptionMatch?

    public init(suppression: Suppression, frequencyCap: FrequencyCap? = nil, subscriptions: SubscriptionMatch? = nil) {
        self.suppression = suppression
        self.frequencyCap = frequencyCap
        self.subscriptions = subscriptions
    }
}
