import PushcampAudience
import PushcampModel

/// Tokens APNs called dead for the campaign's topic (Unregistered, ExpiredToken, BadDeviceToken),
/// read from the journal before planning. The planner passes over them, counting them as
/// suppressed, unless the recipient's registration time is newer than the moment the token was
/// known dead: the app registered it again since.
///
/// Memory: 16 bytes per dead token (a 64-bit stable hash of the token and a time), whatever the
/// audience size.
public struct Suppression: Sendable {
    /// Token hash → milliseconds since 1970 from which the token counts as dead.
    private var deadSince: [UInt64: Int64] = [:]
    /// The audience attribute holding a recipient's registration time.
    public var registeredAtAttribute: String

    public init(registeredAtAttribute: String = "registered_at") {
        self.registeredAtAttribute = registeredAtAttribute
    }

    public var count: Int { deadSince.count }

    /// Adds a dead token: dead since APNs' timestamp (the last time it knew the token valid) when
    /// APNs gave one, else since Pushcamp was told (`seenAt`, seconds since 1970).
    public mutating func add(token: String, apnsTimestamp: Int64?, seenAt: Double) {
        let since = apnsTimestamp ?? Self.milliseconds(seconds: seenAt) ?? Int64.max
        let key = StableHash.hash(token)
        deadSince[key] = max(deadSince[key] ?? since, since)
    }

    /// What the journal's dead tokens make of a recipient.
    enum Verdict: Equatable {
        /// The token is not known dead, or was registered again since.
        case send
        /// The token is dead and the row has no registration time, or an older one.
        case suppress
        /// The token is dead and the row's registration time cannot be read (`nan`, `inf`, a number
        /// outside years 0000–9999, text that is not a timestamp): this recipient is refused with the
        /// cell quoted, so the data can be fixed; the run goes on.
        case unreadableRegistration(String)
    }

    func verdict(for recipient: Recipient) -> Verdict {
        guard !deadSince.isEmpty, let since = deadSince[StableHash.hash(recipient.token)] else { return .send }
        guard let value = recipient.attributes[registeredAtAttribute], value != .string("") else {
            return .suppress
        }
        guard let registered = Self.milliseconds(value) else { return .unreadableRegistration(value.text) }
        return registered <= since ? .suppress : .send
    }

    /// A registration time as milliseconds since 1970: a timestamp (`2026-11-21T09:30:00Z`, as
    /// campaign files take them) or a number of seconds since 1970. Nil for anything else.
    static func milliseconds(_ value: AttributeValue) -> Int64? {
        switch value {
        case .integer(let seconds): return milliseconds(seconds: Double(seconds))
        case .number(let seconds): return milliseconds(seconds: seconds)
        case .string(let text):
            if let seconds = Double(text) { return milliseconds(seconds: seconds) }
            guard case .success(let timestamp) = Timestamp.parse(text) else { return nil }
            return timestamp.secondsSince1970 * 1000
        default: return nil
        }
    }

    /// Seconds since 1970 as milliseconds, when finite and within years 0000–9999.
    static func milliseconds(seconds: Double) -> Int64? {
        guard seconds.isFinite, abs(seconds) <= 253_402_300_799 else { return nil }
        return Int64((seconds * 1000).rounded(.down))
    }
}
