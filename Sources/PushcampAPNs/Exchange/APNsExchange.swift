import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import PushcampAPNsCore
import Synchronization

/// One HTTP/2 connection to an APNs host for requests one at a time: the broadcast API's channel
/// management (`/1/apps/…`) and broadcast sends (`/4/broadcasts/apps/…`). A broadcast reaches every
/// device on a channel with one request, so these are few; the pool and its state machine are for
/// the millions of device pushes.
///
/// The connection opens at the first request and is kept for the next; one that closed is opened
/// again. Provider tokens come from the same `ProviderTokens` as the app's pushes.
public final class APNsExchange: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// Header fields beyond the pseudo-headers and `authorization`.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(method: String, path: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        public func value(_ name: String) -> String? { headers.first { $0.name == name }?.value }

        /// The `reason` of an error answer.
        public var reason: APNsReason? { APNsConnectionHandler.parseError(body).0 }
    }

    private let configuration: APNsClientConfiguration
    private let tlsContext: NIOSSLContext
    private let eventLoop: any EventLoop
    private let connection = Mutex<(any Channel)?>(nil)

    public init(
        configuration: APNsClientConfiguration,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(APNsClientError) {
        self.configuration = configuration
        tlsContext = try configuration.makeTLSContext()
        eventLoop = group.next()
    }

    /// `host[:port]`, as requests name it.
    public var authority: String {
        configuration.port == 443 ? configuration.host : "\(configuration.host):\(configuration.port)"
    }

    /// Sends `request` and waits for its answer (at most the configuration's request timeout).
    public func send(_ request: Request) async throws(APNsClientError) -> Response {
        let channel = try await connected()
        var fields: [(name: String, value: String)] = [
            (":method", request.method), (":scheme", "https"), (":authority", authority), (":path", request.path),
        ]
        if case .providerToken(let tokens) = configuration.authentication {
            fields.append(("authorization", tokens.current().bearer))
        }
        fields += request.headers
        if !request.body.isEmpty { fields.append(("content-length", String(request.body.count))) }
        let promise = eventLoop.makePromise(of: Response.self)
        let timeout = configuration.requestTimeout
        let body = request.body
        let header = fields
        channel.eventLoop.execute {
            guard let handler = try? channel.pipeline.syncOperations.handler(type: ExchangeHandler.self) else {
                promise.fail(APNsClientError(.connect, "the connection closed"))
                return
            }
            handler.submit(header, body: body, timeout: timeout, promise: promise)
        }
        do {
            return try await promise.futureResult.get()
        } catch let error as APNsClientError {
            throw error
        } catch {
            throw APNsClientError(.connect, "\(error)")
        }
    }

    /// Opens the connection now (TLS and HTTP/2), rather than with the first request.
    public func connect() async throws(APNsClientError) {
        _ = try await connected()
    }

    /// Closes the connection, if open.
    public func close() async {
        let channel = connection.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await channel?.close()
    }

    private func connected() async throws(APNsClientError) -> any Channel {
        if let channel = connection.withLock({ $0 }), channel.isActive { return channel }
        let ready = eventLoop.makePromise(of: Void.self)
        let bootstrap = configuration.bootstrap(on: eventLoop, tlsContext: tlsContext) { ExchangeHandler(ready: ready) }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: configuration.host, port: configuration.port).get()
            try await ready.futureResult.get()
        } catch let error as APNsClientError {
            ready.fail(error)
            throw error
        } catch {
            ready.fail(error)
            throw APNsClientError(.connect, ConnectFailure.explain(error, connectTimeout: configuration.connectTimeout))
        }
        let previous = connection.withLock { current in
            defer { current = channel }
            return current
        }
        previous?.close(promise: nil)
        return channel
    }
}

/// Drives an `NGHTTP2Exchange` behind NIOSSL.
private final class ExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let ready: EventLoopPromise<Void>
    private var codec: NGHTTP2Exchange?
    private var context: ChannelHandlerContext?

    init(ready: EventLoopPromise<Void>) {
        self.ready = ready
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
            fail(
                APNsClientError(
                    .connect,
                    "the server did not agree to HTTP/2 (ALPN answered \(negotiated ?? "nothing"))"
                )
            )
            return
        }
        do {
            codec = try NGHTTP2Exchange()
            flush()
            ready.succeed()
        } catch {
            fail(error)
        }
    }

    /// Called on the channel's event loop.
    func submit(
        _ fields: [(name: String, value: String)],
        body: [UInt8],
        timeout: TimeAmount,
        promise: EventLoopPromise<Response>
    ) {
        guard let codec, let context else {
            promise.fail(APNsClientError(.connect, "the connection closed"))
            return
        }
        do {
            let id = try codec.submit(fields, body: body) { promise.completeWith($0.mapError { $0 as any Error }) }
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let timer = context.eventLoop.scheduleTask(in: timeout) {
                bound.value.codec?.cancel(
                    id,
                    APNsClientError(.connect, "no answer within \(timeout.nanoseconds / 1_000_000_000) s")
                )
                bound.value.flush()
            }
            promise.futureResult.whenComplete { _ in timer.cancel() }
            flush()
        } catch {
            promise.fail(error)
        }
    }

    typealias Response = APNsExchange.Response

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let codec else { return }
        do {
            try codec.receive(unwrapInboundIn(data))
        } catch {
            fail(error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let error = APNsClientError(.connect, "the connection closed before the answer")
        ready.fail(error)
        codec?.failAll(error)
        codec = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        fail(APNsClientError(.connect, ConnectFailure.reason(error)))
    }

    private func flush() {
        guard let codec, let context else { return }
        do {
            if let output = try codec.drainOutput(allocator: context.channel.allocator) {
                context.writeAndFlush(wrapOutboundOut(output), promise: nil)
            }
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: APNsClientError) {
        ready.fail(error)
        codec?.failAll(error)
        codec = nil
        context?.close(promise: nil)
    }
}
