import Hummingbird
import Logging
import NIOCore
import PushcampAPNsCore
import PushcampAppStore
import PushcampModel

/// `serve`'s HTTP server (hummingbird 2): `GET /healthz` (the process answers), `GET /readyz`
/// (200 when the journal is open and the scheduler ticks, 503 with the reason otherwise) and
/// `GET /metrics` (Prometheus' text format). Plain HTTP on the configured address, loopback by
/// default: put a TLS-terminating proxy in front to expose it (docs/serve.md).
public enum ServeHTTP {
    public typealias App = Application<RouterResponder<BasicRequestContext>>

    public static func application(
        listen: ListenAddress,
        status: ServeStatus,
        metrics: ServeMetrics,
        logger: Logger,
        clock: any WallClock = SystemWallClock(),
        appStore: (path: String, receiver: AppStoreReceiver)? = nil,
        onListening: @escaping @Sendable (Int) -> Void = { _ in }
    ) -> App {
        let router = Router()
        if let (path, receiver) = appStore {
            router.post(RouterPath(path)) { request, context -> Response in
                var body = request.body
                let bytes: [UInt8]
                do {
                    // One byte over the limit is enough to refuse it.
                    let buffer = try await body.collect(upTo: NotificationIntake.bodyLimit + 1)
                    bytes = Array(buffer.readableBytesView)
                } catch {
                    bytes = [UInt8](repeating: 0, count: NotificationIntake.bodyLimit + 1)
                }
                let answer = await receiver.handle(bytes)
                return Response(
                    status: HTTPResponse.Status(code: answer.status),
                    headers: [.contentType: "text/plain; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: answer.body))
                )
            }
        }
        router.get("healthz") { _, _ in
            "ok\n"
        }
        router.get("readyz") { _, _ -> Response in
            let (ready, body) = status.readiness(now: clock.now())
            return Response(
                status: ready ? .ok : .serviceUnavailable,
                headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: body))
            )
        }
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
            )
        }
        return Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(listen.host, port: listen.port),
                serverName: "pushcamp"
            ),
            onServerRunning: { channel in
                onListening(channel.localAddress?.port ?? listen.port)
            },
            logger: logger
        )
    }
}
