import PushcampJournal
import PushcampModel

/// What `pushcamp channels apply` would do: the channels pushcamp.yaml declares against those the
/// journal records and, when asked, those APNs holds. Pure: the caller reads the three sides.
public struct ChannelPlan: Sendable {
    /// Where channels live: one app's bundle id in one environment (Apple's cap counts per place).
    public struct Place: Hashable, Sendable, Comparable {
        public var bundleID: String
        public var environment: APNsEnvironment

        public init(bundleID: String, environment: APNsEnvironment) {
            self.bundleID = bundleID
            self.environment = environment
        }

        public static func < (lhs: Place, rhs: Place) -> Bool {
            (lhs.bundleID, lhs.environment.rawValue) < (rhs.bundleID, rhs.environment.rawValue)
        }
    }

    public enum Action: String, Sendable {
        /// Declared, not created yet.
        case create
        /// Declared and created.
        case keep
        /// Declared and recorded, but APNs no longer has it (deleted elsewhere, or the capability
        /// was turned off): created again, and the new id recorded.
        case recreate
        /// Recorded, no longer declared: deleted at APNs and retired in the journal.
        case delete
    }

    public struct Entry: Sendable {
        public var name: String
        public var place: Place
        public var storage: ChannelStorage
        public var action: Action
        /// The recorded channel, when there is one.
        public var recorded: ChannelRecord?
        /// The declaration, when there is one.
        public var declared: ChannelSpec?
        /// Why a kept channel differs from its declaration (it cannot be changed in place).
        public var drift: String?
    }

    public var entries: [Entry]
    /// Channel ids APNs holds that the journal does not record, per place (empty when APNs was
    /// not asked).
    public var orphans: [Place: [String]]
    /// How many channels APNs holds per place now (nil: not asked) and after apply.
    public var counts: [(place: Place, now: Int?, after: Int)]

    public var changes: Int { entries.filter { $0.action != .keep }.count }

    /// `declared`: each declaration with its app's bundle id; `apple`: the ids APNs lists per
    /// place, or nil when it was not asked (an offline plan assumes recorded channels exist).
    public static func make(
        declared: [(spec: ChannelSpec, bundleID: String)],
        recorded: [ChannelRecord],
        apple: [Place: [String]]?
    ) -> ChannelPlan {
        var entries: [Entry] = []
        var byName: [String: ChannelRecord] = [:]
        for record in recorded { byName[record.name] = record }
        let declaredNames = Set(declared.map(\.spec.name))
        for (spec, bundleID) in declared {
            let place = Place(bundleID: bundleID, environment: spec.environment)
            guard let record = byName[spec.name] else {
                entries.append(
                    Entry(name: spec.name, place: place, storage: spec.storage, action: .create, declared: spec)
                )
                continue
            }
            let recordedPlace = Self.place(of: record)
            let exists = apple.map { $0[recordedPlace, default: []].contains(record.channelID) } ?? true
            var drift: String?
            if recordedPlace != place {
                drift =
                    "created for \(record.bundleID) in \(record.environment), declared for \(bundleID) in \(spec.environment.rawValue)"
            } else if record.storagePolicy != spec.storage.policy {
                drift =
                    "created with storage \(ChannelStorage(policy: record.storagePolicy)?.rawValue ?? "\(record.storagePolicy)"), declared with storage \(spec.storage.rawValue)"
            }
            entries.append(
                Entry(
                    name: spec.name,
                    place: place,
                    storage: spec.storage,
                    action: exists ? .keep : .recreate,
                    recorded: record,
                    declared: spec,
                    drift: exists ? drift : nil
                )
            )
        }
        for record in recorded where !declaredNames.contains(record.name) {
            entries.append(
                Entry(
                    name: record.name,
                    place: Self.place(of: record),
                    storage: ChannelStorage(policy: record.storagePolicy) ?? .latest,
                    action: .delete,
                    recorded: record
                )
            )
        }
        var orphans: [Place: [String]] = [:]
        if let apple {
            let known = Set(recorded.map(\.channelID))
            for (place, ids) in apple {
                let unknown = ids.filter { !known.contains($0) }
                if !unknown.isEmpty { orphans[place] = unknown }
            }
        }
        var places = Set(entries.map(\.place))
        if let apple { places.formUnion(apple.keys) }
        let counts = places.sorted().map { place in
            let now = apple?[place]?.count
            let base = now ?? recorded.filter { Self.place(of: $0) == place }.count
            let added = entries.filter { $0.place == place && ($0.action == .create || $0.action == .recreate) }.count
            let removed = entries.filter { $0.place == place && $0.action == .delete }.count
            return (place, now, max(0, base + added - removed))
        }
        return ChannelPlan(entries: entries, orphans: orphans, counts: counts)
    }

    /// Where a recorded channel lives.
    public static func place(of record: ChannelRecord) -> Place {
        Place(bundleID: record.bundleID, environment: APNsEnvironment(rawValue: record.environment) ?? .production)
    }
}
