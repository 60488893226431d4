import NIOCore
import NIOHPACK
import NIOHTTP2
import PushcampAPNsCore
import PushcampFCMCore

/// One client connection of the simulator, at the HTTP/2 frame level (swift-nio-http2, no multiplexer).
///
/// Every connection starts at one stream (announced in the initial SETTINGS); the first request with an
/// accepted provider token raises it to `maxConcurrentStreams` with a new SETTINGS frame.
final class SimulatorConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Pending {
        var headers: [(name: String, value: String)]
        var body: [UInt8] = []
    }

    private let id: Int
    /// The client's address, for the record.
    private var peer = ""
    private let configuration: SimulatorConfiguration
    private let recorder: SimulatorRecorder
    private let channels: SimulatorChannels
    private let fcm: SimulatorFCM?
    private var streams: [HTTP2StreamID: Pending] = [:]
    private var open = 0
    private var requests = 0
    private var raised = false
    private var goawaySent = false
    /// After our GOAWAY, streams above this id are not processed (the client sends them again elsewhere).
    private var goawayLastStreamID: HTTP2StreamID?
    /// Limits announced and not yet acknowledged, oldest first; the client is bound by `acknowledged`.
    private var announced: [UInt32] = [1]
    private var acknowledged: UInt32?
    /// Request body bytes read since the connection's flow-control window was last given back. With
    /// frames handled directly (no stream multiplexer), nothing else sends WINDOW_UPDATE: without
    /// this the client stalls after 64 KB of bodies on a connection.
    private var unacknowledgedBytes = 0

    /// The connection presented a client certificate signed by the simulator's CA: certificate auth,
    /// so requests need no provider token.
    private let certificateAuthenticated: Bool

    init(
        id: Int,
        configuration: SimulatorConfiguration,
        recorder: SimulatorRecorder,
        channels: SimulatorChannels,
        fcm: SimulatorFCM?,
        certificateAuthenticated: Bool
    ) {
        self.id = id
        self.configuration = configuration
        self.recorder = recorder
        self.channels = channels
        self.fcm = fcm
        self.certificateAuthenticated = certificateAuthenticated
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // Added once ALPN chose h2, after the channel became active.
        peer = context.channel.remoteAddress?.ipAddress ?? ""
        recorder.connectionOpened(withCertificate: certificateAuthenticated)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.ack):
            if !announced.isEmpty { acknowledged = announced.removeFirst() }
        case .headers(let headers):
            guard streams[frame.streamID] == nil else { return }  // trailers: none expected from APNs clients
            if let last = goawayLastStreamID, frame.streamID > last { return }
            open += 1
            requests += 1
            recorder.opened(streams: open, limit: acknowledged)
            streams[frame.streamID] = Pending(headers: headers.headers.map { ($0.name, $0.value) })
            if let dropAfter = configuration.dropAfter, requests == dropAfter {
                recorder.dropped()
                context.close(promise: nil)
                return
            }
            if let goawayAfter = configuration.goawayAfter, requests == goawayAfter {
                sendGoaway(context: context, lastStreamID: frame.streamID)
            }
            if let lower = configuration.lowerLimit, requests == lower.after {
                announce(lower.to, context: context)
            }
            if headers.endStream { complete(frame.streamID, context: context) }
        case .data(let data):
            replenishWindow(consumed: data.data.readableBytes + (data.paddingBytes ?? 0), context: context)
            guard case .byteBuffer(let buffer) = data.data, streams[frame.streamID] != nil else { return }
            streams[frame.streamID]!.body.append(contentsOf: buffer.readableBytesView)
            if data.endStream { complete(frame.streamID, context: context) }
        case .rstStream:
            if streams.removeValue(forKey: frame.streamID) != nil { open -= 1 }
        default:
            break
        }
    }

    /// Gives the connection window back once half the default (65,535 bytes) has been read, as
    /// HTTP/2 servers do; streams need none, each carries one small body.
    private func replenishWindow(consumed: Int, context: ChannelHandlerContext) {
        unacknowledgedBytes += consumed
        guard unacknowledgedBytes >= 32_768 else { return }
        let update = HTTP2Frame.FramePayload.windowUpdate(windowSizeIncrement: unacknowledgedBytes)
        unacknowledgedBytes = 0
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: update)), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Frames that raced our GOAWAY (streams above its last id, NIO's own GOAWAY for them) are no
        // reason to drop the connection: APNs still answers every stream it accepted, then closes.
        if goawaySent, error is NIOHTTP2Errors.NoSuchStream || error is NIOHTTP2Errors.RaisedGoawayLastStreamID {
            return
        }
        // A request whose headers HTTP/2 forbids (a CR or LF in a value, a bad pseudo-header) is a
        // stream error: NIO has reset that stream. APNs resets the request and keeps the connection.
        if Self.isStreamError(error) {
            recorder.reset()
            return
        }
        context.close(promise: nil)
    }

    static func isStreamError(_ error: any Error) -> Bool {
        error is NIOHTTP2Errors.InvalidHTTP2HeaderFieldValue || error is NIOHTTP2Errors.InvalidHTTP2HeaderFieldName
            || error is NIOHTTP2Errors.ForbiddenHeaderField || error is NIOHTTP2Errors.MissingPseudoHeader
            || error is NIOHTTP2Errors.DuplicatePseudoHeader || error is NIOHTTP2Errors.PseudoHeaderAfterRegularHeader
            || error is NIOHTTP2Errors.UnsupportedPseudoHeader || error is NIOHTTP2Errors.InvalidPseudoHeaders
            || error is NIOHTTP2Errors.InvalidPseudoHeaderValue || error is NIOHTTP2Errors.ContentLengthViolated
    }

    private func announce(_ limit: UInt32, context: ChannelHandlerContext) {
        announced.append(limit)
        let settings = HTTP2Frame.FramePayload.settings(
            .settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: Int(limit))])
        )
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: settings)), promise: nil)
    }

    private func sendGoaway(context: ChannelHandlerContext, lastStreamID: HTTP2StreamID) {
        goawaySent = true
        goawayLastStreamID = lastStreamID
        recorder.goawaySent()
        var debug = context.channel.allocator.buffer(capacity: 32)
        debug.writeString(#"{"reason":"Shutdown"}"#)
        let goaway = HTTP2Frame.FramePayload.goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: debug)
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: goaway)), promise: nil)
    }

    /// The request is whole: decide the answer, then send it (after the configured latency).
    private func complete(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let pending = streams[streamID] else { return }
        let request = RequestRules.Request(headers: pending.headers, body: pending.body)
        let path = request.value(":path") ?? ""
        let now = SystemWallClock().now()
        let decided: (answer: BroadcastRules.Answer, timestamp: Int64?, record: SimulatorRecorder.Record)?
        if let fcm, path == FCMBackend.tokenPath || FCMBackend.sendProject(path: path) != nil {
            decided = answerFCM(request, fcm: fcm, now: now)
        } else {
            decided = answerAPNs(request, body: pending.body, now: now)
        }
        guard let (answer, timestamp, record) = decided else {
            // A fault: the connection goes, the request unanswered (and not processed).
            recorder.dropped()
            context.close(promise: nil)
            return
        }
        if ![401, 403].contains(answer.status), !raised, answer.reason != .tooManyProviderTokenUpdates {
            raised = true
            announce(configuration.maxConcurrentStreams, context: context)
        }
        recorder.record(record)
        if configuration.latency > .zero {
            let (answer, timestamp) = (answer, timestamp)
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: configuration.latency) {
                let (handler, context) = bound.value
                handler.respond(streamID, answer: answer, timestamp: timestamp, context: context)
                context.flush()
            }
        } else {
            respond(streamID, answer: answer, timestamp: timestamp, context: context)
        }
    }

    /// An APNs request's answer (a device push or the broadcast API); nil when a fault drops the connection.
    private func answerAPNs(
        _ request: RequestRules.Request,
        body: [UInt8],
        now: Double
    ) -> (BroadcastRules.Answer, Int64?, SimulatorRecorder.Record)? {
        let route = BroadcastRules.Route(path: request.value(":path") ?? "")
        var answer: BroadcastRules.Answer
        var timestamp: Int64? = nil
        if route.isBroadcastAPI {
            guard
                let answered = channels.answer(
                    request,
                    route: route,
                    authentication: authenticationProblem(request),
                    now: now
                )
            else { return nil }
            answer = answered
        } else {
            let (status, reason, time) = decide(request)
            answer = BroadcastRules.Answer(status: status, reason: reason)
            answer.headers["apns-id"] = request.value("apns-id") ?? "00000000-0000-4000-8000-000000000000"
            timestamp = time
        }
        let record = SimulatorRecorder.Record(
            token: (request.deviceToken ?? "").lowercased(),
            apnsID: request.value("apns-id"),
            topic: request.value("apns-topic"),
            pushType: request.value("apns-push-type"),
            priority: request.value("apns-priority"),
            expiration: request.value("apns-expiration"),
            collapseID: request.value("apns-collapse-id"),
            payloadSize: body.count,
            status: answer.status,
            reason: answer.reason,
            connection: id,
            peer: peer,
            time: now,
            method: request.value(":method") ?? "",
            path: route == .device ? "/3/device/" : request.value(":path") ?? "",
            channelID: request.value("apns-channel-id") ?? answer.headers["apns-channel-id"],
            payload: route.isBroadcastAPI ? body : []
        )
        return (answer, timestamp, record)
    }

    /// An FCM request's answer: the token endpoint or `messages:send`.
    private func answerFCM(
        _ request: RequestRules.Request,
        fcm: SimulatorFCM,
        now: Double
    ) -> (BroadcastRules.Answer, Int64?, SimulatorRecorder.Record) {
        let path = request.value(":path") ?? ""
        var record = SimulatorRecorder.Record(
            token: "",
            payloadSize: request.body.count,
            status: 0,
            connection: id,
            peer: peer,
            time: now,
            method: request.value(":method") ?? "",
            path: path
        )
        let answer: BroadcastRules.Answer
        if let project = FCMBackend.sendProject(path: path) {
            let sent: FCMBackend.Sent
            (answer, sent) = fcm.send(request, project: project, tokens: configuration.tokens, now: now)
            record.token = sent.token ?? ""
            record.fcmReason = sent.reason
            record.validateOnly = sent.validateOnly
            record.payload = request.body
        } else {
            answer = fcm.token(method: record.method, body: request.body, now: now)
        }
        record.status = answer.status
        return (answer, nil, record)
    }

    /// Why the request's credentials are refused, if they are.
    private func authenticationProblem(_ request: RequestRules.Request) -> APNsReason? {
        guard !certificateAuthenticated, let verifier = configuration.verifier else { return nil }
        return verifier.check(request.value("authorization"))
    }

    private func decide(_ request: RequestRules.Request) -> (Int, APNsReason?, Int64?) {
        if let reason = configuration.rules.check(request) { return (reason.status, reason, nil) }
        if let reason = authenticationProblem(request) { return (reason.status, reason, nil) }
        let token = request.deviceToken!.lowercased()
        switch configuration.tokens[token] ?? .ok {
        case .ok: break
        case .unregistered(let timestamp): return (410, .unregistered, timestamp)
        case .bad: return (400, .badDeviceToken, nil)
        case .wrongTopic: return (400, .deviceTokenNotForTopic, nil)
        case .flaky(let failures):
            if recorder.attempt(token) < failures { return (503, .serviceUnavailable, nil) }
        case .throttled(let times):
            if recorder.attempt(token) < times { return (429, .tooManyRequests, nil) }
        case .reason(let reason):
            return (reason.status, reason, reason.status == 410 ? 1_700_000_000_000 : nil)
        case .fcm:
            break
        }
        if configuration.errorRate > 0, Double.random(in: 0..<1) < configuration.errorRate {
            return (500, .internalServerError, nil)
        }
        return (200, nil, nil)
    }

    private func respond(
        _ streamID: HTTP2StreamID,
        answer: BroadcastRules.Answer,
        timestamp: Int64?,
        context: ChannelHandlerContext
    ) {
        guard streams.removeValue(forKey: streamID) != nil else { return }
        open -= 1
        var headers = HPACKHeaders([(":status", String(answer.status))])
        for (name, value) in answer.headers.sorted(by: { $0.key < $1.key }) { headers.add(name: name, value: value) }
        var text = answer.body
        if let reason = answer.reason {
            headers.add(name: "content-type", value: "application/json")
            text = #"{"reason":"\#(reason)""# + (timestamp.map { #","timestamp":\#($0)"# } ?? "") + "}"
        }
        if let text {
            var body = context.channel.allocator.buffer(capacity: text.utf8.count)
            body.writeString(text)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))),
                promise: nil
            )
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))
                ),
                promise: nil
            )
        } else {
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))
                ),
                promise: nil
            )
        }
        if goawaySent, open == 0 {
            // After GOAWAY, the last answer closes the connection once it is written.
            let channel = context.channel
            context.writeAndFlush(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(.init(), ack: false)))
            )
            .whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
