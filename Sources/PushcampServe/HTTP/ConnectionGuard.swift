import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Keeps `serve`'s HTTP server answering when clients hold connections open: a request must arrive
/// whole within `requestTimeout` of its first byte (a header or a body trickled a byte at a time
/// is cut off),
/// and beyond `softLimit` open connections each new one closes the connection idle the longest, so
/// idle keep-alives and clients that connect and send nothing cannot crowd out a health check.
/// (Hummingbird's idle timeout closes a connection that sends nothing at all; the server stops
/// accepting at a hard limit below the descriptor limit, so `accept` never fails for want of
/// descriptors.)
final class ConnectionGuard: Sendable {
    let softLimit: Int
    let requestTimeout: TimeAmount

    private struct Open {
        var channel: any Channel
        var busy = false
        var lastActive: NIODeadline
    }

    private struct State {
        var open: [ObjectIdentifier: Open] = [:]
        var evicted = 0
    }

    private let state = Mutex(State())

    init(softLimit: Int, requestTimeout: TimeAmount) {
        self.softLimit = softLimit
        self.requestTimeout = requestTimeout
    }

    /// Connections closed to make room for new ones.
    var evicted: Int { state.withLock { $0.evicted } }

    /// A handler for one new connection.
    func handler() -> ConnectionGuardHandler {
        ConnectionGuardHandler(guard: self)
    }

    fileprivate func opened(_ channel: any Channel) {
        let victim: (any Channel)? = state.withLock { state in
            state.open[ObjectIdentifier(channel)] = Open(channel: channel, lastActive: .now())
            guard state.open.count > softLimit else { return nil }
            let idle = state.open.filter { !$0.value.busy && $0.key != ObjectIdentifier(channel) }
            guard let oldest = idle.min(by: { $0.value.lastActive < $1.value.lastActive }) else { return nil }
            state.open[oldest.key] = nil
            state.evicted += 1
            return oldest.value.channel
        }
        victim?.close(promise: nil)
    }

    fileprivate func closed(_ channel: any Channel) {
        state.withLock { _ = $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    fileprivate func busy(_ channel: any Channel, _ busy: Bool) {
        state.withLock { state in
            state.open[ObjectIdentifier(channel)]?.busy = busy
            state.open[ObjectIdentifier(channel)]?.lastActive = .now()
        }
    }
}

/// One connection's part of `ConnectionGuard`: it registers the connection, marks it busy from a
/// request's head to its response's end, and, with the `RequestClock` it puts in front of the
/// HTTP decoder, closes it when a request does not arrive whole in time.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let owner: ConnectionGuard
    private var clock: RequestClock?
    private var registered = false

    init(guard owner: ConnectionGuard) {
        self.owner = owner
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The deadline starts at a request's first byte, before the decoder has a head to give:
        // a header trickled a byte at a time never becomes one.
        let clock = RequestClock(timeout: owner.requestTimeout)
        self.clock = clock
        try? context.pipeline.syncOperations.addHandler(clock, position: .first)
        if context.channel.isActive { register(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        register(context)
        context.fireChannelActive()
    }

    private func register(_ context: ChannelHandlerContext) {
        guard !registered else { return }
        registered = true
        owner.opened(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        clock?.stop()
        if registered { owner.closed(context.channel) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        clock?.stop()
        owner.closed(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            owner.busy(context.channel, true)
        case .body:
            break
        case .end:
            clock?.requestEnded()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { owner.busy(context.channel, false) }
        context.write(data, promise: promise)
    }
}

/// The first handler of a `serve` connection, on its raw bytes: a request's first byte starts
/// the deadline, its end (told by `ConnectionGuardHandler`) stops it, and a request not whole by
/// then closes the connection. Confined to the channel's event loop.
final class RequestClock: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if deadline == nil {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        }
        context.fireChannelRead(data)
    }

    /// The request arrived whole: the next byte starts the next one's deadline.
    func requestEnded() {
        stop()
    }

    func stop() {
        deadline?.cancel()
        deadline = nil
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }
}
