import PushcampAPNsCore
import PushcampModel

/// One request, fully decided: the device, every header, the exact body. An Android push's
/// `payload` is its whole `messages:send` body without the ttl (`FCMMessage.body(token:)`), which
/// goes in as the request leaves; its APNs headers are unused.
public struct PlannedPush: Sendable, Hashable {
    public var token: String
    /// Which provider it goes to.
    public var platform: Platform = .ios
    public var apnsID: APNsID
    public var variant: String
    /// The locale whose strings the recipient gets (after fallback), when the campaign is localized.
    public var locale: String?
    public var pushType: PushType
    public var priority: Int
    public var topic: String
    /// nil: no `apns-expiration` header (APNs then applies its own default).
    public var expiration: PlannedExpiration?
    public var collapseID: String?
    public var payload: [UInt8]
    /// The recipient's row in its source.
    public var row: Int
    /// The recipient's place in the filtered audience (held-out and failed recipients count too): it
    /// names the recipient in the run's journal, and is the same each time the same files are planned.
    public var seq: Int
    /// When it is due (seconds since 1970), for recipient-local schedules and quiet hours; nil: at once.
    public var due: Int64? = nil

    public init(
        token: String,
        apnsID: APNsID,
        variant: String,
        locale: String?,
        pushType: PushType,
        priority: Int,
        topic: String,
        expiration: PlannedExpiration?,
        collapseID: String?,
        payload: [UInt8],
        row: Int,
        seq: Int,
        due: Int64? = nil
    ) {
        self.token = token
        self.apnsID = apnsID
        self.variant = variant
        self.locale = locale
        self.pushType = pushType
        self.priority = priority
        self.topic = topic
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
        self.row = row
        self.seq = seq
        self.due = due
    }

    /// An Android push's `messages:send` body at `sendTime`: the ttl as the time left then.
    public func fcmBody(sendTime: Timestamp, validateOnly: Bool = false) -> [UInt8] {
        FCMMessage.settingTTL(FCMMessage.ttl(expiration, sendTime: sendTime), validateOnly: validateOnly, in: payload)
    }

    /// `apns-expiration` once the send time is known.
    public func expirationHeader(sendTime: Timestamp) -> Int64? {
        switch expiration {
        case nil: return nil
        case .immediately: return 0
        case .at(let timestamp): return timestamp.secondsSince1970
        case .afterSend(let span): return (sendTime + span).secondsSince1970
        }
    }
}

/// `apns-expiration` as planned: absolute when the send time is known to the plan, else relative to it.
public enum PlannedExpiration: Sendable, Hashable {
    case immediately
    case at(Timestamp)
    case afterSend(TimeSpan)
}

/// An `apns-id`: a UUID, printed in the canonical lowercase 8-4-4-4-12 form APNs asks for.
public struct APNsID: Sendable, Hashable, CustomStringConvertible {
    public var bytes: (UInt64, UInt64)

    public init(bytes: [UInt8]) {
        precondition(bytes.count >= 16)
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        self.bytes = (high, low)
    }

    init(high: UInt64, low: UInt64) {
        bytes = (high, low)
    }

    public var byteArray: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: bytes.0 >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: bytes.1 >> (56 - 8 * UInt64($0))) }
    }

    /// The 8-4-4-4-12 form in lowercase hex, written straight into the string's storage.
    public var description: String {
        String(unsafeUninitializedCapacity: UUIDText.count) { text in
            UUIDText.write(high: bytes.0, low: bytes.1, into: text)
            return UUIDText.count
        }
    }

    public static func == (lhs: APNsID, rhs: APNsID) -> Bool { lhs.bytes == rhs.bytes }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.0)
        hasher.combine(bytes.1)
    }
}
