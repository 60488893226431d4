import NIOCore
import PushcampAPNsCore
import PushcampFCMCore

/// One HTTP/2 request to APNs, as the transport sends it: `POST /3/device/<token>`.
///
/// The transport knows nothing of campaigns; `tag` lets the sender find its own record again.
///
/// What goes on the wire is fixed when the request is made and kept in one shared, immutable
/// object: a request crosses the planner, the journal, the queue, nghttp2's stream table and the
/// outcome, and each of those copies costs one reference count, not one per field. That object
/// holds the `apns-id` text, the payload, the topic, the push type, the collapse id and the device
/// token's text in its own storage: one allocation per request, made on the planner's thread and freed on the connection's
/// (each allocation crossing threads costs the allocator a lock). The topic and the collapse id are
/// the same for every request of a run: kept as `String`s, each request would count references to
/// them on the planner's thread while the connection's thread dropped them, one cache line pulled
/// back and forth between the two cores per request and field.
public struct APNsRequest: Sendable {
    public var tag: Int
    /// How many times this request was handed to a connection before (0 for the first send).
    public var attempt: Int = 0
    /// How many of those attempts were lost with their connection (no answer, APNs may have it).
    public var losses: Int = 0
    /// The sender's own grouping of requests, carried to the outcome (Pushcamp: the variant and
    /// locale the push was planned for, to count outcomes per variant and locale).
    public var group: UInt32 = 0
    /// The sender's 64-bit digest of the device token, carried to the outcome (Pushcamp: the token's
    /// `StableHash`, computed while planning, which the journal keeps for each first delivery): the
    /// answer's side then needs neither the token's text nor a hash of it. 0 when unused.
    public var deviceTokenHash: UInt64 = 0
    private let storage: Storage

    /// The fields, ahead of the bytes: the `apns-id` text, the payload, the topic, the push type,
    /// the collapse id, then the device token (also kept as a `String` for the journal and reports;
    /// the bytes are what `:path` is written from, without touching the string's reference count).
    private struct Header {
        /// An FCM HTTP v1 request: `:path` is `topic`'s bytes, the body names the token.
        let fcm: Bool
        let deviceToken: String
        let priority: Int?
        let expiration: Int64?
        let apnsIDCount: Int
        let payloadCount: Int
        let topicCount: Int
        let pushTypeCount: Int
        /// -1: no collapse id.
        let collapseIDCount: Int
        let deviceTokenCount: Int

        // Where each part lies in the bytes.
        var apnsIDRange: Range<Int> { 0..<apnsIDCount }
        var payloadRange: Range<Int> { apnsIDRange.upperBound..<apnsIDRange.upperBound + payloadCount }
        var topicRange: Range<Int> { payloadRange.upperBound..<payloadRange.upperBound + topicCount }
        var pushTypeRange: Range<Int> { topicRange.upperBound..<topicRange.upperBound + pushTypeCount }
        var collapseIDRange: Range<Int> {
            pushTypeRange.upperBound..<pushTypeRange.upperBound + max(0, collapseIDCount)
        }
        var deviceTokenRange: Range<Int> {
            collapseIDRange.upperBound..<collapseIDRange.upperBound + deviceTokenCount
        }
    }

    private final class Fields: ManagedBuffer<Header, UInt8> {}

    /// The standard library keeps `ManagedBuffer` from being `Sendable`; `Fields` is never written
    /// after `init`, so sharing it across threads is safe.
    private struct Storage: @unchecked Sendable {
        let fields: Fields
    }

    private var fields: Fields { storage.fields }

    /// Reads one field in place. `fields.header.x` copies the whole header first (a reference count
    /// taken and dropped for each of its strings) to return one field, on every read.
    @inline(__always)
    private func field<T>(_ read: (UnsafeMutablePointer<Header>) -> T) -> T {
        fields.withUnsafeMutablePointerToHeader(read)
    }

    /// Lays the request out in one allocation: the header, `apnsIDCount` bytes `writeAPNsID` fills,
    /// then the payload.
    private init(
        tag: Int,
        deviceToken: String,
        topic: String,
        pushType: String,
        priority: Int?,
        expiration: Int64?,
        collapseID: String?,
        payload: [UInt8],
        apnsIDCount: Int,
        fcm: Bool = false,
        writeAPNsID: (UnsafeMutableBufferPointer<UInt8>) -> Void
    ) {
        self.tag = tag
        let header = Header(
            fcm: fcm,
            deviceToken: deviceToken,
            priority: priority,
            expiration: expiration,
            apnsIDCount: apnsIDCount,
            payloadCount: payload.count,
            topicCount: topic.utf8.count,
            pushTypeCount: pushType.utf8.count,
            collapseIDCount: collapseID?.utf8.count ?? -1,
            deviceTokenCount: deviceToken.utf8.count
        )
        let buffer = Fields.create(minimumCapacity: header.deviceTokenRange.upperBound) { _ in header }
        buffer.withUnsafeMutablePointerToElements { bytes in
            writeAPNsID(UnsafeMutableBufferPointer(start: bytes, count: apnsIDCount))
            (bytes + apnsIDCount).initialize(from: payload, count: payload.count)
            func write(_ text: String, at start: Int) {
                _ = UnsafeMutableBufferPointer(start: bytes + start, count: text.utf8.count).initialize(from: text.utf8)
            }
            write(topic, at: header.topicRange.lowerBound)
            write(pushType, at: header.pushTypeRange.lowerBound)
            if let collapseID { write(collapseID, at: header.collapseIDRange.lowerBound) }
            write(deviceToken, at: header.deviceTokenRange.lowerBound)
        }
        storage = Storage(fields: unsafeDowncast(buffer, to: Fields.self))
    }

    public init(
        tag: Int,
        deviceToken: String,
        apnsID: String,
        topic: String,
        pushType: String,
        priority: Int?,
        expiration: Int64?,
        collapseID: String?,
        payload: [UInt8]
    ) {
        let id = Array(apnsID.utf8)
        self.init(
            tag: tag,
            deviceToken: deviceToken,
            topic: topic,
            pushType: pushType,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            payload: payload,
            apnsIDCount: id.count
        ) { _ = $0.initialize(from: id) }
    }

    /// A request whose `apns-id` is the UUID with these bytes (big-endian halves), written straight
    /// into the request's storage in its 8-4-4-4-12 form.
    public init(
        tag: Int,
        deviceToken: String,
        uuid: (high: UInt64, low: UInt64),
        topic: String,
        pushType: String,
        priority: Int?,
        expiration: Int64?,
        collapseID: String?,
        payload: [UInt8]
    ) {
        self.init(
            tag: tag,
            deviceToken: deviceToken,
            topic: topic,
            pushType: pushType,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            payload: payload,
            apnsIDCount: UUIDText.count
        ) { UUIDText.write(high: uuid.high, low: uuid.low, into: $0) }
    }

    /// An FCM HTTP v1 request (`POST path`, its JSON body naming `registrationToken`): the same pool,
    /// streams and outcomes as APNs' pushes, in FCM's dialect.
    public init(tag: Int, registrationToken: String, path: String, body: [UInt8]) {
        self.init(
            tag: tag,
            deviceToken: registrationToken,
            topic: path,
            pushType: "",
            priority: nil,
            expiration: nil,
            collapseID: nil,
            payload: body,
            apnsIDCount: 0,
            fcm: true
        ) { _ in }
    }

    /// An FCM HTTP v1 request.
    public var isFCM: Bool { field { $0.pointee.fcm } }

    /// The device token in hexadecimal (an FCM request's registration token).
    public var deviceToken: String { field { $0.pointee.deviceToken } }
    public var apnsID: String { withAPNsID { String(decoding: $0, as: UTF8.self) } }
    public var topic: String { withTopic { String(decoding: $0, as: UTF8.self) } }
    public var pushType: String { withPushType { String(decoding: $0, as: UTF8.self) } }
    public var priority: Int? { field { $0.pointee.priority } }
    /// `apns-expiration`, UNIX seconds; nil leaves the header out.
    public var expiration: Int64? { field { $0.pointee.expiration } }
    public var collapseID: String? { withCollapseID { $0.map { String(decoding: $0, as: UTF8.self) } } }
    public var payload: [UInt8] { withPayload { Array($0) } }
    public var payloadCount: Int { field { $0.pointee.payloadCount } }

    /// Calls `body` with the part of the request's bytes that `range` names, without copying them.
    @inline(__always)
    private func withBytes<R>(
        _ range: (UnsafeMutablePointer<Header>) -> Range<Int>,
        _ body: (UnsafeBufferPointer<UInt8>) throws -> R
    ) rethrows -> R {
        try fields.withUnsafeMutablePointers { header, bytes in
            let range = range(header)
            return try body(UnsafeBufferPointer(start: bytes + range.lowerBound, count: range.count))
        }
    }

    /// Calls `body` with the `apns-id` text's bytes, without copying them.
    public func withAPNsID<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withBytes({ $0.pointee.apnsIDRange }, body)
    }

    /// Calls `body` with the payload's bytes, without copying them.
    public func withPayload<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withBytes({ $0.pointee.payloadRange }, body)
    }

    /// Calls `body` with the device token's text as UTF-8 bytes, without copying them.
    public func withDeviceToken<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withBytes({ $0.pointee.deviceTokenRange }, body)
    }

    /// Calls `body` with the topic's UTF-8 bytes (an FCM request's path), without copying them.
    public func withTopic<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withBytes({ $0.pointee.topicRange }, body)
    }

    /// Calls `body` with the push type's UTF-8 bytes, without copying them.
    public func withPushType<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withBytes({ $0.pointee.pushTypeRange }, body)
    }

    /// Calls `body` with the collapse id's UTF-8 bytes (nil when there is none), without copying them.
    public func withCollapseID<R>(_ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        let present = field { $0.pointee.collapseIDCount >= 0 }
        return try withBytes({ $0.pointee.collapseIDRange }, { try body(present ? $0 : nil) })
    }
}

/// What became of one request.
public struct APNsOutcome: Sendable {
    public enum Result: Sendable, Equatable {
        /// APNs answered: 200, or an error status with its reason (and, for 410, a timestamp in ms).
        case response(status: Int, reason: APNsReason?, timestamp: Int64?)
        /// The connection ended while the request was in flight: APNs may or may not have it.
        case connectionLost
        /// No answer before the request's deadline; the stream was reset.
        case timedOut
    }

    public var request: APNsRequest
    public var result: Result
    /// An FCM request's error body, read (`result` then has the status and no APNs reason).
    public var fcmError: FCMError? = nil
    /// The answer's `retry-after`, in seconds, when it had one.
    public var retryAfter: Int? = nil
    /// From handing the request to nghttp2 to its end.
    public var latency: TimeAmount
    /// Which pool connection carried it.
    public var connection: Int

    public init(request: APNsRequest, result: Result, latency: TimeAmount, connection: Int) {
        self.request = request
        self.result = result
        self.latency = latency
        self.connection = connection
    }

    public var status: Int? {
        if case .response(let status, _, _) = result { return status }
        return nil
    }

    public var reason: APNsReason? {
        if case .response(_, let reason, _) = result { return reason }
        return nil
    }
}
