import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PushcampAppStore

/// The App Store Server API's transport on SwiftNIO: one HTTP/1.1 request per connection, TLS with
/// the system's trust roots (plain http only where the configuration allows it, a local stub).
/// Not Foundation's URLSession, which on Linux needs libcurl: the packaged binary runs on a machine
/// without it.
public struct AppStoreAPIClient: AppStoreAPITransport {
    public var timeout: TimeAmount
    /// The largest answer read; a page of notification history is far smaller.
    public var maximumBody: Int

    public init(timeout: TimeAmount = .seconds(30), maximumBody: Int = 16 << 20) {
        self.timeout = timeout
        self.maximumBody = maximumBody
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public func post(
        _ url: URL,
        headers: [String: String],
        body: Data
    ) async throws -> (status: Int, headers: [String: String], body: Data) {
        guard let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = url.host,
            !host.isEmpty
        else { throw Failure(description: "not an http(s) URL with a host") }
        let secure = scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        let tls = secure ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        // A host name is checked against the certificate and sent as SNI; an address is not a name.
        let serverName = (try? SocketAddress(ipAddress: host, port: port)) == nil ? host : nil
        let group = MultiThreadedEventLoopGroup.singleton
        let answer = group.next().makePromise(of: Answer.self)
        let limit = maximumBody
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                do {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls, serverHostname: serverName)
                        )
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(AnswerReader(answer: answer, limit: limit))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: host, port: port)
            .get()
        let deadline = channel.eventLoop.scheduleTask(in: timeout) {
            answer.fail(Failure(description: "no answer within \(timeout.nanoseconds / 1_000_000_000) s"))
            channel.close(promise: nil)
        }
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: target)
        head.headers.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head.headers.add(name: name, value: value) }
        head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        defer {
            deadline.cancel()
            channel.close(promise: nil)
        }
        let received = try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            answer.fail(CancellationError())
            channel.close(promise: nil)
        }
        return (received.status, received.headers, received.body)
    }

    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    /// Collects one response: its head, its body up to `limit`, then its end.
    final class AnswerReader: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart

        let answer: EventLoopPromise<Answer>
        let limit: Int
        var head: HTTPResponseHead?
        var body = ByteBuffer()

        init(answer: EventLoopPromise<Answer>, limit: Int) {
            self.answer = answer
            self.limit = limit
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
            case .body(var part):
                guard body.readableBytes + part.readableBytes <= limit else {
                    answer.fail(Failure(description: "the answer is larger than \(limit) bytes"))
                    context.close(promise: nil)
                    return
                }
                body.writeBuffer(&part)
            case .end:
                guard let head else { return }
                var fields: [String: String] = [:]
                for (name, value) in head.headers { fields[name.lowercased()] = value }
                answer.succeed(
                    Answer(status: Int(head.status.code), headers: fields, body: Data(body.readableBytesView))
                )
                context.close(promise: nil)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            answer.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            answer.fail(Failure(description: "the connection closed before the answer ended"))
            context.fireChannelInactive()
        }
    }
}
