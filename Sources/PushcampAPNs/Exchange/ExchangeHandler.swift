import NIOCore
import NIOTLS
import PushcampAPNsCore
import Synchronization

/// Drives an `NGHTTP2Exchange` behind NIOSSL, by the rules of `ConnectionStateMachine`.
/// Confined to its channel's event loop.
final class ExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A request waiting for a stream, or on one.
    struct Submission {
        var fields: [(name: String, value: String)]
        var body: [UInt8]
        var promise: EventLoopPromise<APNsExchange.Response>
    }

    /// Timeouts and authentication, from the client's configuration.
    struct Rules: Sendable {
        var requestTimeout: TimeAmount
        var idleTimeout: TimeAmount
        var pingTimeout: TimeAmount
        var settingsTimeout: TimeAmount
        var authentication: ConnectionStateMachine.Authentication

        init(_ configuration: APNsClientConfiguration) {
            requestTimeout = configuration.requestTimeout
            idleTimeout = configuration.idleTimeout
            pingTimeout = configuration.pingTimeout
            settingsTimeout = configuration.settingsTimeout
            switch configuration.authentication {
            case .providerToken, .inRequest, .bearer: authentication = .providerToken
            case .certificate: authentication = .certificate
            }
        }
    }

    /// The connection's "takes no more requests", shared with `ExchangeConnection`.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }

    private struct Open {
        var submission: Submission
        var started: NIODeadline
        var timedOut = false
    }

    private let rules: Rules
    private let ready: EventLoopPromise<Void>
    private let closing: Flag
    private var machine: ConnectionStateMachine
    private var codec: NGHTTP2Exchange?
    private var context: ChannelHandlerContext?
    private var waiting = CircularBuffer<(submission: Submission, since: NIODeadline)>()
    private var open: [Int32: Open] = [:]
    private var timer: Scheduled<Void>?
    private var closeReason: String?
    /// Whether the connection did work: answered a request, or went away (GOAWAY) with requests
    /// it still processes. One that did moves its other requests on (`.notSent`); one that never
    /// did refuses them (`.notProcessed`, counted: a server that takes nothing ends them).
    private var progressed = false

    /// The code for a request this connection gives back unprocessed.
    private var giveBack: APNsClientError.Code { progressed ? .notSent : .notProcessed }

    init(rules: Rules, ready: EventLoopPromise<Void>, closing: Flag) {
        self.rules = rules
        self.ready = ready
        self.closing = closing
        machine = ConnectionStateMachine(
            authentication: rules.authentication,
            now: .now(),
            idleTimeout: rules.idleTimeout,
            pingTimeout: rules.pingTimeout,
            settingsTimeout: rules.settingsTimeout
        )
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case TLSUserEvent.handshakeCompleted(let negotiated) = event else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        guard negotiated == "h2" else {
            fail("the server did not agree to HTTP/2 (ALPN answered \(negotiated ?? "nothing"))")
            return
        }
        do {
            codec = try NGHTTP2Exchange()
        } catch {
            fail(error.message)
            return
        }
        scheduleTick(on: context.eventLoop)
        ready.succeed()
        service()
    }

    /// Takes a request: it goes as soon as the stream budget allows, or comes back unprocessed
    /// (`giveBack`) when this connection takes no more.
    func submit(_ submission: Submission) {
        guard codec != nil, machine.phase == .active else {
            submission.promise.fail(
                APNsClientError(giveBack, "the connection is closing (\(closeReason ?? "shut down"))")
            )
            return
        }
        waiting.append((submission, .now()))
        service()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let codec else { return }
        do {
            try codec.receive(unwrapInboundIn(data))
        } catch {
            fail(error.message)
            return
        }
        handle(codec.takeEvents())
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        service()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        closing.set()
        let reason = closeReason ?? "the connection closed"
        ready.fail(APNsClientError(.connect, reason))
        for (_, stream) in open {
            stream.submission.promise.fail(
                APNsClientError(.unanswered, "\(reason) before the answer; the server may have the request")
            )
        }
        open.removeAll()
        refuseWaiting(reason)
        codec = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        fail(ConnectFailure.reason(error))
    }

    // MARK: the work

    /// Opens the streams the budget allows, writes what nghttp2 has, and closes a connection that
    /// drained.
    private func service() {
        guard let codec, let context else { return }
        let now = NIODeadline.now()
        while machine.budget > 0, let (submission, _) = waiting.popFirst() {
            do {
                let id = try codec.submit(submission.fields, body: submission.body)
                open[id] = Open(submission: submission, started: now)
                machine.streamOpened(now: now)
            } catch {
                submission.promise.fail(APNsClientError(giveBack, error.message))
            }
        }
        flush()
        handle(codec.takeEvents())
        if machine.finished {
            closing.set()
            context.close(promise: nil)
        }
    }

    private func handle(_ events: [NGHTTP2Exchange.Event]) {
        guard !events.isEmpty else { return }
        let now = NIODeadline.now()
        for event in events {
            switch event {
            case .connection(.settings(let limit)):
                _ = machine.settingsReceived(maxConcurrentStreams: limit)
            case .connection(.goaway(let lastStreamID, let errorCode, let debugData)):
                if open.keys.contains(where: { $0 <= lastStreamID }) { progressed = true }
                drain(
                    APNsConnectionHandler.describeGoaway(
                        lastStreamID: lastStreamID,
                        errorCode: errorCode,
                        debug: debugData
                    )
                )
            case .connection(.pingAcknowledged):
                machine.pingAcknowledged(now: now)
            case .closed(let id, let response, let errorCode):
                guard let stream = open.removeValue(forKey: id) else { continue }
                if response != nil { progressed = true }
                if case .drain(let reason) = machine.streamClosed(
                    status: response?.status,
                    reason: response?.reason,
                    now: now
                ) {
                    drain(reason)
                }
                stream.submission.promise.completeWith(
                    outcome(response, errorCode: errorCode, timedOut: stream.timedOut)
                )
            case .notSent(let id):
                guard let stream = open.removeValue(forKey: id) else { continue }
                _ = machine.streamClosed(status: nil, reason: nil, now: now)
                stream.submission.promise.fail(APNsClientError(giveBack, "the request was not sent"))
            }
        }
    }

    /// A stream's end as the caller sees it: the response, or why there is none and whether the
    /// server may have processed the request.
    private func outcome(
        _ response: APNsExchange.Response?,
        errorCode: UInt32,
        timedOut: Bool
    ) -> Result<APNsExchange.Response, any Error> {
        if let response { return .success(response) }
        if errorCode == NGHTTP2Bytes.refusedStream {
            // Above the GOAWAY's last stream id, or refused outright: never processed.
            return .failure(APNsClientError(giveBack, "the server refused the request (REFUSED_STREAM)"))
        }
        if timedOut {
            return .failure(
                APNsClientError(.unanswered, "no answer within \(rules.requestTimeout.nanoseconds / 1_000_000_000) s")
            )
        }
        return .failure(
            APNsClientError(
                .unanswered,
                "the server reset the request (HTTP/2 error \(errorCode)) without an answer"
            )
        )
    }

    /// No new streams: GOAWAY, refused credentials, or a dead connection. Requests still waiting
    /// go back to the exchange, for a new connection.
    private func drain(_ reason: String) {
        machine.drain()
        closing.set()
        if closeReason == nil { closeReason = reason }
        refuseWaiting(reason)
    }

    private func refuseWaiting(_ reason: String) {
        while let (submission, _) = waiting.popFirst() {
            submission.promise.fail(APNsClientError(giveBack, "not sent: \(reason)"))
        }
    }

    private func scheduleTick(on eventLoop: any EventLoop) {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        timer = eventLoop.scheduleTask(in: .milliseconds(250)) {
            bound.value.tick()
        }
    }

    /// Deadlines, PING, idle checks; four times a second.
    private func tick() {
        guard let codec, let context else { return }
        let now = NIODeadline.now()
        for (id, stream) in open where !stream.timedOut && now - stream.started >= rules.requestTimeout {
            open[id]?.timedOut = true
            codec.cancel(id)
        }
        // A request the server allowed no stream for (a limit of 0) is not left waiting forever.
        while let first = waiting.first, now - first.since >= rules.requestTimeout {
            waiting.removeFirst().submission.promise.fail(
                APNsClientError(.connect, "the server allowed no stream within \(rules.requestTimeout)")
            )
        }
        switch machine.tick(now: now) {
        case .none: break
        case .ping: codec.ping()
        case .close(let reason):
            fail(reason)
            return
        }
        scheduleTick(on: context.eventLoop)
        service()
    }

    private func flush() {
        guard let codec, let context else { return }
        do {
            if let output = try codec.drainOutput(allocator: context.channel.allocator) {
                context.writeAndFlush(wrapOutboundOut(output), promise: nil)
            }
        } catch {
            fail(error.message)
        }
    }

    private func fail(_ reason: String) {
        closing.set()
        if closeReason == nil { closeReason = reason }
        ready.fail(APNsClientError(.connect, reason))
        context?.close(promise: nil)
    }
}
