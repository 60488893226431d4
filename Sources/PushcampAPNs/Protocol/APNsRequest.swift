import NIOCore
import PushcampAPNsCore

/// One HTTP/2 request to APNs, as the transport sends it: `POST /3/device/<token>`.
///
/// The transport knows nothing of campaigns; `tag` lets the sender find its own record again.
public struct APNsRequest: Sendable {
    public var tag: Int
    /// The device token in hexadecimal.
    public var deviceToken: String
    public var apnsID: String
    public var topic: String
    public var pushType: String
    public var priority: Int?
    /// `apns-expiration`, UNIX seconds; nil leaves the header out.
    public var expiration: Int64?
    public var collapseID: String?
    public var payload: [UInt8]
    /// How many times this request was handed to a connection before (0 for the first send).
    public var attempt: Int = 0
    /// How many of those attempts were lost with their connection (no answer, APNs may have it).
    public var losses: Int = 0

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
