import PushcampAudience
import PushcampModel

extension Planner {
    /// Where the plan put one recipient: what engagement with a run is matched against.
    public struct Assignment: Sendable, Hashable {
        /// Its place in the plan (`PlannedPush.seq`).
        public var seq: Int
        public var apnsID: APNsID
        /// Its variant; nil when the holdout kept it back.
        public var variant: String?
        /// The locale it was (or, held out, would have been) sent, when the campaign is localized.
        public var locale: String?
        /// The person it belongs to (`person(_:)` of its `audience.user_key` value); nil when the
        /// campaign names no user key or the recipient has no value for it.
        public var person: Int64?

        /// How a person is known to the journal: a 64-bit hash of their user key's value (as the
        /// plan's assignment key spells it).
        public static func person(_ value: String) -> Int64 {
            Int64(bitPattern: StableHash.hash("user:" + value))
        }
    }

    /// Every recipient of the audience, held-out ones included, in plan order, with its assignment:
    /// the same seq, `apns-id`, variant and locale as `run` gives it for the same files. Reads the
    /// audience once and renders nothing. Recipients the run passed over for the journal's history
    /// (dead tokens, caps, suppression) are here too: the caller matches them against what the run
    /// recorded.
    public func forEachAssignment(_ body: (Recipient, Assignment) throws -> Void) throws {
        var state = PlanState(campaign: campaign, sendTime: sendTime, sampleLimit: 0, now: now)
        var seq = 0
        _ = try campaign.audience.forEachRecipient { recipient in
            defer { seq += 1 }
            let (variant, locale) = state.assignment(of: recipient)
            let (key, byPerson) = state.assignmentKey(recipient)
            try body(
                recipient,
                Assignment(
                    seq: seq,
                    apnsID: UUIDv5.make(namespace: state.runNamespace, name: recipient.token),
                    variant: variant.map { campaign.variants[$0].name },
                    locale: locale,
                    person: byPerson ? Int64(bitPattern: StableHash.hash(key)) : nil
                )
            )
        }
    }
}
