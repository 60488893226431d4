import CNghttp2
import Foundation
import NIOCore
import NIOSSL
import NIOTLS
import PushcampAPNsCore
import PushcampFCMCore

/// One APNs connection: sits behind NIOSSL and drives an `NGHTTP2Session` with the rules of
/// `ConnectionStateMachine`.
///
/// Writes are batched: what nghttp2 produced goes out once per read batch, per wake-up and per timer
/// tick, never once per request. Outcomes are reported to the transport's event sink once per read batch.
package final class APNsConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    /// Fired into the pipeline to end the connection gracefully: finish open streams, then GOAWAY.
    struct Drain: Sendable {}

    struct Configuration: Sendable {
        var id: Int
        var authority: String
        var queue: RequestQueue
        var tokens: ProviderTokens?
        /// FCM's access tokens (then `tokens` is nil).
        var bearer: (any BearerAuthorization)? = nil
        var events: TransportEventSink
        var requestTimeout: TimeAmount
        var idleTimeout: TimeAmount
        var pingTimeout: TimeAmount
        var settingsTimeout: TimeAmount
        /// The pool's count of open streams.
        var streams: StreamCounter
    }

    private let configuration: Configuration
    private let ready: EventLoopPromise<Void>
    private var machine: ConnectionStateMachine
    private var session: NGHTTP2Session?
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var wake: RequestQueue.Wake = {}
    private var outcomes: [APNsOutcome] = []
    private var requeue: [APNsRequest] = []
    private var timedOut: Set<Int32> = []
    private var closeReason: String?

    init(configuration: Configuration, ready: EventLoopPromise<Void>) {
        self.configuration = configuration
        self.ready = ready
        self.machine = ConnectionStateMachine(
            authentication: configuration.tokens == nil && configuration.bearer == nil ? .certificate : .providerToken,
            now: .now(),
            idleTimeout: configuration.idleTimeout,
            pingTimeout: configuration.pingTimeout,
            settingsTimeout: configuration.settingsTimeout
        )
    }

    /// Carries out what the state machine decided.
    private func apply(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .reportStreamLimit(let limit):
            configuration.events(.streamLimit(connection: configuration.id, limit: limit))
        case .drain(let reason):
            configuration.queue.forget(connection: configuration.id)
            if closeReason == nil { closeReason = reason }
        }
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        wake = { eventLoop.execute { bound.value.service() } }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case TLSUserEvent.handshakeCompleted(let negotiated):
            guard negotiated == "h2" else {
                fail("the server did not agree to HTTP/2 (ALPN answered \(negotiated ?? "nothing"))")
                return
            }
            start(context: context)
        case is Drain:
            machine.drain()
            configuration.queue.forget(connection: configuration.id)
            closeReason = closeReason ?? "shut down"
            service()
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func start(context: ChannelHandlerContext) {
        do {
            session = try NGHTTP2Session(authority: configuration.authority)
        } catch {
            fail(error.message)
            return
        }
        scheduleTick(on: context.eventLoop)
        ready.succeed()
        configuration.events(.connected(connection: configuration.id))
        service()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        do {
            try session.receive(unwrapInboundIn(data))
        } catch {
            fail(error.message)
            return
        }
        handle(session.takeEvents())
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        service()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        configuration.queue.forget(connection: configuration.id)
        let now = NIODeadline.now()
        let abandoned = session?.abandonStreams() ?? []
        configuration.streams.add(-abandoned.count)
        for stream in abandoned {
            outcomes.append(
                APNsOutcome(
                    request: stream.request,
                    result: .connectionLost,
                    latency: now - stream.started,
                    connection: configuration.id
                )
            )
        }
        deliver()
        session = nil
        ready.fail(APNsClientError(.connect, closeReason ?? "the connection closed during set-up"))
        configuration.events(
            .disconnected(connection: configuration.id, reason: closeReason ?? "closed by the server")
        )
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // During set-up the pool explains the error itself (a TLS failure, a reset), so it gets
        // it as it is; once ready this changes nothing.
        ready.fail(error)
        fail(ConnectFailure.reason(error))
    }

    // MARK: the work

    /// Takes what the stream budget allows, writes what nghttp2 has, hands over outcomes.
    private func service() {
        guard let session, let context else { return }
        // With a bearer token from elsewhere, requests wait while none is fit to send with: the pool's
        // keeper fetches one, and the tick finds it.
        let bearerToken = configuration.bearer?.current()
        if machine.phase == .active, configuration.bearer == nil || bearerToken != nil {
            let budget = machine.budget
            if budget > 0 {
                let now = NIODeadline.now()
                var requests = configuration.queue.take(budget, connection: configuration.id, wake: wake)
                let token = requests.isEmpty ? nil : bearerToken ?? configuration.tokens?.current()
                // Taken from the end, each request moves into its stream without a copy.
                requests.reverseByMoving()
                while let request = requests.popLast() {
                    do {
                        // Moved in: a refusal hands the request back, so nothing here copies it.
                        _ = try session.submit(request, token: token, now: now)
                        machine.streamOpened(now: now)
                        configuration.streams.add(1)
                    } catch {
                        // nghttp2 refused it: this one and the rest go back to the queue.
                        requeue.append(error.request)
                        requeue.append(contentsOf: requests.reversed())
                        fail(error.error.message)
                        break
                    }
                }
            }
        }
        if machine.finished, closeReason != nil {
            session.goAway()
        }
        do {
            if let bytes = try session.drainOutput(allocator: context.channel.allocator) {
                context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
            }
        } catch {
            fail(error.message)
        }
        handle(session.takeEvents())
        deliver()
        if machine.finished, closeReason != nil {
            context.close(promise: nil)
        }
    }

    private func handle(_ events: [NGHTTP2Session.Event]) {
        guard !events.isEmpty else { return }
        let now = NIODeadline.now()
        for event in events {
            switch event {
            case .connection(.settings(let limit)):
                apply(machine.settingsReceived(maxConcurrentStreams: limit))
            case .connection(.goaway(let lastStreamID, let errorCode, let debugData)):
                machine.drain()
                configuration.queue.forget(connection: configuration.id)
                closeReason = Self.describeGoaway(lastStreamID: lastStreamID, errorCode: errorCode, debug: debugData)
            case .connection(.pingAcknowledged):
                machine.pingAcknowledged(now: now)
            case .notSent(let stream):
                apply(machine.streamClosed(status: nil, reason: nil, now: now))
                configuration.streams.add(-1)
                requeue.append(stream.request)
            case .streamClosed(let stream, let errorCode):
                closed(stream, errorCode: errorCode, now: now)
            }
        }
    }

    private func closed(_ stream: NGHTTP2Session.Stream, errorCode: UInt32, now: NIODeadline) {
        let latency = now - stream.started
        configuration.streams.add(-1)
        guard let status = stream.status else {
            apply(machine.streamClosed(status: nil, reason: nil, now: now))
            if errorCode == NGHTTP2Bytes.refusedStream {
                // Above GOAWAY's last stream id, or refused outright: never processed, so send it again.
                requeue.append(stream.request)
            } else {
                let timedOut = errorCode == NGHTTP2_CANCEL.rawValue
                outcomes.append(
                    APNsOutcome(
                        request: stream.request,
                        result: timedOut ? .timedOut : .connectionLost,
                        latency: latency,
                        connection: configuration.id
                    )
                )
            }
            return
        }
        if stream.request.isFCM {
            closedFCM(stream, status: status, latency: latency, now: now)
            return
        }
        var reason: APNsReason?
        var timestamp: Int64?
        if status != 200 {
            (reason, timestamp) = Self.parseError(stream.body)
        }
        apply(machine.streamClosed(status: status, reason: reason, now: now))
        if reason == .expiredProviderToken, let tokens = configuration.tokens {
            switch tokens.expired(generation: stream.tokenGeneration) {
            case .mint, .alreadyReplaced:
                let minted = tokens.current().generation != stream.tokenGeneration
                configuration.events(.providerTokenRenewed(minted: minted))
                var retry = stream.request
                retry.attempt += 1
                requeue.append(retry)
                return
            case .clockSkew:
                break  // reported as is: the executor stops the run and names the clock.
            }
        }
        if reason == .tooManyProviderTokenUpdates, let tokens = configuration.tokens {
            switch tokens.refused(generation: stream.tokenGeneration) {
            case .reverted, .alreadyReplaced:
                configuration.events(.providerTokenReverted)
                var retry = stream.request
                retry.attempt += 1
                requeue.append(retry)
                return
            case .stands:
                break  // reported as is: the executor stops the run.
            }
        }
        outcomes.append(
            APNsOutcome(
                request: stream.request,
                result: .response(status: status, reason: reason, timestamp: timestamp),
                latency: latency,
                connection: configuration.id
            )
        )
    }

    /// An FCM request's answer: its error body read; a 401 for the access token it was sent with
    /// goes again once a fresh token is at hand, unless the fresh one was refused too.
    private func closedFCM(_ stream: NGHTTP2Session.Stream, status: Int, latency: TimeAmount, now: NIODeadline) {
        apply(machine.streamClosed(status: status, reason: nil, now: now))
        let error = status == 200 ? nil : FCMError.parse(stream.body)
        if let bearer = configuration.bearer {
            if status == 200 {
                bearer.accepted(generation: stream.tokenGeneration)
            } else if status == 401, error?.reason ?? .unauthenticated == .unauthenticated,
                bearer.retryRefused(generation: stream.tokenGeneration)
            {
                configuration.events(.accessTokenRefused)
                var retry = stream.request
                retry.attempt += 1
                requeue.append(retry)
                return
            }
        }
        var outcome = APNsOutcome(
            request: stream.request,
            result: .response(status: status, reason: nil, timestamp: nil),
            latency: latency,
            connection: configuration.id
        )
        outcome.fcmError = error
        outcome.retryAfter = stream.retryAfter
        outcomes.append(outcome)
    }

    private func deliver() {
        if !requeue.isEmpty {
            configuration.queue.requeue(requeue)
            configuration.events(.requeued(count: requeue.count))
            requeue.removeAll(keepingCapacity: true)
        }
        if !outcomes.isEmpty {
            configuration.events(.outcomes(outcomes))
            outcomes.removeAll(keepingCapacity: true)
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
        guard let session, let context else { return }
        let now = NIODeadline.now()
        if !timedOut.isEmpty { timedOut = timedOut.filter { session.streams[$0] != nil } }
        for (streamID, stream) in session.streams
        where now - stream.started >= configuration.requestTimeout && !timedOut.contains(streamID) {
            timedOut.insert(streamID)
            session.reset(streamID: streamID)
        }
        switch machine.tick(now: now) {
        case .none: break
        case .ping: session.ping()
        case .close(let reason):
            fail(reason)
            return
        }
        scheduleTick(on: context.eventLoop)
        service()
    }

    private func fail(_ reason: String) {
        closeReason = closeReason ?? reason
        ready.fail(APNsClientError(.connect, reason))
        context?.close(promise: nil)
    }

    // MARK: parsing

    package static func parseError(_ body: [UInt8]) -> (APNsReason?, Int64?) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return (nil, nil)
        }
        let reason = (object["reason"] as? String).map(APNsReason.init)
        // Milliseconds since 1970, as APNs sends for 410; anything outside years 1970–9999 is ignored.
        var timestamp: Int64?
        if let number = object["timestamp"] as? NSNumber, number.doubleValue.isFinite,
            (0...253_402_300_799_000).contains(number.doubleValue)
        {
            timestamp = Int64(number.doubleValue)
        }
        return (reason, timestamp)
    }

    static func describeGoaway(lastStreamID: Int32, errorCode: UInt32, debug: [UInt8]) -> String {
        let (reason, _) = parseError(debug)
        let code = String(cString: nghttp2_http2_strerror(errorCode))
        return "GOAWAY (\(code)\(reason.map { ", reason \($0)" } ?? ""))"
    }
}
