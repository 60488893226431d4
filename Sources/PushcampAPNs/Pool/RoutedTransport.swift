/// Two transports behind one, for a campaign reaching iPhones and Android phones: APNs requests go to
/// one pool, FCM requests (`isFCM`) to the other, and the executor sees one stream of events, one
/// throttle and one count of open streams. The FCM pool's connections are renumbered from
/// `fcmConnectionBase`, so each connection keeps its own stream limit in the executor.
public final class RoutedTransport: PushTransport {
    public let apns: any PushTransport
    public let fcm: any PushTransport
    public static let fcmConnectionBase = 1_000

    public init(apns: any PushTransport, fcm: any PushTransport) {
        self.apns = apns
        self.fcm = fcm
    }

    public var taskExecutor: (any TaskExecutor)? { apns.taskExecutor ?? fcm.taskExecutor }

    public var openStreams: Int { apns.openStreams + fcm.openStreams }

    public func run(reporting events: @escaping TransportEventSink) async {
        // Structured: both pools are children of this group (each runs until shut down), and this
        // ends when both have; the executor cancels it by cancelling its own task.
        await withDiscardingTaskGroup { group in
            group.addTask { await self.apns.run(reporting: events) }
            group.addTask { await self.fcm.run(reporting: { events(Self.renumbered($0)) }) }
        }
    }

    public func submit(_ requests: consuming [APNsRequest]) -> [APNsRequest] {
        var toAPNs: [APNsRequest] = []
        var toFCM: [APNsRequest] = []
        for request in requests {
            if request.isFCM { toFCM.append(request) } else { toAPNs.append(request) }
        }
        var refused: [APNsRequest] = []
        if !toAPNs.isEmpty { refused += apns.submit(toAPNs) }
        if !toFCM.isEmpty { refused += fcm.submit(toFCM) }
        return refused
    }

    public func shutdown() {
        apns.shutdown()
        fcm.shutdown()
    }

    static func renumbered(_ event: TransportEvent) -> TransportEvent {
        switch event {
        case .connected(let connection): return .connected(connection: connection + fcmConnectionBase)
        case .connectFailed(let connection, let error):
            return .connectFailed(connection: connection + fcmConnectionBase, error: error)
        case .disconnected(let connection, let reason):
            return .disconnected(connection: connection + fcmConnectionBase, reason: reason)
        case .streamLimit(let connection, let limit):
            return .streamLimit(connection: connection + fcmConnectionBase, limit: limit)
        case .outcomes(var outcomes):
            for index in outcomes.indices { outcomes[index].connection += fcmConnectionBase }
            return .outcomes(outcomes)
        default:
            return event
        }
    }
}
