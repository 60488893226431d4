import NIOCore
import PushcampAPNsCore

/// One HTTP/2 request to APNs, as the transport sends it: `POST /3/device/<token>`.
///
/// The transport knows nothing of campaigns; `tag` lets the sender find its own record again.
///
/// What goes on the wire is fixed when the request is made and kept in one shared, immutable
/// object: a request crosses the planner, the journal, the queue, nghttp2's stream table and the
/// outcome, and each of those copies costs one reference count, not one per field.
public struct APNsRequest: Sendable {
    public var tag: Int
    /// How many times this request was handed to a connection before (0 for the first send).
    public var attempt: Int = 0
    /// How many of those attempts were lost with their connection (no answer, APNs may have it).
    public var losses: Int = 0
    /// The sender's own grouping of requests, carried to the outcome (Pushcamp: the variant and
    /// locale the push was planned for, to count outcomes per variant and locale).
    public var group: UInt32 = 0
    private let fields: Fields

    private final class Fields: Sendable {
        let deviceToken: String
        let apnsID: String
        let topic: String
        let pushType: String
        let priority: Int?
        let expiration: Int64?
        let collapseID: String?
        let payload: [UInt8]

        init(
            deviceToken: String,
            apnsID: String,
            topic: String,
            pushType: String,
            priority: Int?,
            expiration: Int64?,
            collapseID: String?,
            payload: [UInt8]
        ) {
            self.deviceToken = deviceToken
            self.apnsID = apnsID
            self.topic = topic
            self.pushType = pushType
            self.priority = priority
            self.expiration = expiration
            self.collapseID = collapseID
            self.payload = payload
        }
    }

    /// The device token in hexadecimal.
    public var deviceToken: String { fields.deviceToken }
    public var apnsID: String { fields.apnsID }
    public var topic: String { fields.topic }
    public var pushType: String { fields.pushType }
    public var priority: Int? { fields.priority }
    /// `apns-expiration`, UNIX seconds; nil leaves the header out.
    public var expiration: Int64? { fields.expiration }
    public var collapseID: String? { fields.collapseID }
    public var payload: [UInt8] { fields.payload }

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
        self.tag = tag
        fields = Fields(
            deviceToken: deviceToken,
            apnsID: apnsID,
            topic: topic,
            pushType: pushType,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            payload: payload
        )
    }

    /// Calls `body` with the payload's bytes, without copying them.
    public func withPayload<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try fields.payload.withUnsafeBufferPointer(body)
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
