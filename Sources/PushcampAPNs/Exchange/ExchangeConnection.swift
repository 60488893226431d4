import NIOCore
import NIOPosix
import NIOSSL
import PushcampAPNsCore

/// One connection of an `APNsExchange`: TLS, HTTP/2 through `NGHTTP2Exchange`, and the rules of
/// `ConnectionStateMachine`, the pool's own, for SETTINGS, the stream budget, GOAWAY, PING and
/// idle checks.
final class ExchangeConnection: Sendable {
    let channel: any Channel
    /// Set once the connection takes no more requests (GOAWAY, closing, closed).
    private let closing: ExchangeHandler.Flag

    private init(channel: any Channel, closing: ExchangeHandler.Flag) {
        self.channel = channel
        self.closing = closing
    }

    /// Open, and taking new requests.
    var isUsable: Bool { channel.isActive && !closing.isSet }

    static func open(
        configuration: APNsClientConfiguration,
        tlsContext: NIOSSLContext,
        eventLoop: any EventLoop
    ) async throws(APNsClientError) -> ExchangeConnection {
        let ready = eventLoop.makePromise(of: Void.self)
        let closing = ExchangeHandler.Flag()
        let rules = ExchangeHandler.Rules(configuration)
        let bootstrap = configuration.bootstrap(on: eventLoop, tlsContext: tlsContext) {
            ExchangeHandler(rules: rules, ready: ready, closing: closing)
        }
        let channel: any Channel
        do {
            let target = configuration.connectTarget
            channel = try await bootstrap.connect(host: target.host, port: target.port).get()
        } catch {
            ready.fail(error)
            throw APNsClientError(.connect, ConnectFailure.explain(error, connectTimeout: configuration.connectTimeout))
        }
        do {
            try await ready.futureResult.get()
        } catch {
            channel.close(promise: nil)
            if let error = error as? APNsClientError { throw error }
            throw APNsClientError(.connect, ConnectFailure.explain(error, connectTimeout: configuration.connectTimeout))
        }
        return ExchangeConnection(channel: channel, closing: closing)
    }

    /// Sends one request on this connection and waits for its end: the response, or an error
    /// whose code says whether the server may have it (`.unanswered`) or surely not
    /// (`.notProcessed`, `.notSent`: send it again elsewhere). Cancelling the task resets the stream.
    func send(
        _ fields: [(name: String, value: String)],
        body: [UInt8]
    ) async throws(APNsClientError)
        -> APNsExchange.Response
    {
        let promise = channel.eventLoop.makePromise(of: APNsExchange.Response.self)
        let channel = self.channel
        channel.eventLoop.execute {
            guard let handler = try? channel.pipeline.syncOperations.handler(type: ExchangeHandler.self) else {
                promise.fail(APNsClientError(.notSent, "the connection closed before the request went"))
                return
            }
            handler.submit(ExchangeHandler.Submission(fields: fields, body: body, promise: promise))
        }
        do {
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                promise.fail(APNsClientError(.shutdown, "the request was cancelled"))
            }
        } catch let error as APNsClientError {
            throw error
        } catch {
            throw APNsClientError(.connect, "\(error)")
        }
    }
}
