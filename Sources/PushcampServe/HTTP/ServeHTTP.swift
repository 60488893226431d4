import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import PushcampAPNsCore
import PushcampAppStore
import PushcampModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `serve`'s HTTP server (hummingbird 2): `GET /healthz` (the process answers), `GET /readyz`
/// (200 when the journal is open, the scheduler ticks, every campaign's credentials can be used and
/// App Store notifications can be stored; 503 with the reasons otherwise) and `GET /metrics`
/// (Prometheus' text format), and with `serve.console` the console and its `/api/` (`Console`). Plain HTTP on the configured address, loopback by default: put a
/// TLS-terminating proxy in front to expose it (docs/serve.md).
///
/// Connections are bounded (`Limits`): a connection that sends nothing is closed after the idle
/// timeout, a request must arrive whole within the request timeout, beyond the soft limit new
/// connections close the longest-idle one, and at the hard limit (half the descriptors the
/// process may open) the server stops accepting until one closes.
public enum ServeHTTP {
    public typealias App = Application<RouterResponder<BasicRequestContext>>

    public struct Limits: Sendable {
        public var idleTimeout: TimeAmount = .seconds(30)
        public var requestTimeout: TimeAmount = .seconds(10)
        public var softConnections: Int
        public var hardConnections: Int

        /// Limits for a process that may open `descriptors` files: a quarter of them for connections
        /// before idle ones are closed, half at most (the journal, APNs connections and audience
        /// files need the rest).
        public init(descriptors: Int = ServeHTTP.descriptorLimit()) {
            softConnections = max(8, descriptors / 4)
            hardConnections = max(16, descriptors / 2)
        }
    }

    #if os(Linux)
    private static let openFiles = Int32(RLIMIT_NOFILE.rawValue)
    #else
    private static let openFiles = RLIMIT_NOFILE
    #endif

    /// The process's limit on open files (its soft limit).
    public static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(openFiles, &limit) == 0 else { return 1024 }
        // RLIM_INFINITY is the largest value: no limit reads as a million.
        return Int(min(limit.rlim_cur, 1 << 20))
    }

    /// Raises the limit on open files to the most the system allows this process (as Go's runtime
    /// does), so connections, the journal and APNs connections rarely compete; returns the limit.
    @discardableResult
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        if getrlimit(openFiles, &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(openFiles, &limit)
        }
        return descriptorLimit()
    }

    /// Why `serve` cannot listen on `address`, found by binding it a moment before the server
    /// does (before anything else starts, so the error is all that is said); nil when it can.
    public static func listenProblem(_ address: ListenAddress) async -> String? {
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: address.host, port: address.port)
                .get()
            try? await channel.close()
            return nil
        } catch let error as IOError {
            let reason = String(cString: strerror(error.errnoCode))
            switch error.errnoCode {
            case EADDRINUSE:
                return
                    "cannot listen on \(address): \(reason): another process (another pushcamp serve?) listens there; "
                    + "stop it, or choose another address with --listen or serve.listen in pushcamp.yaml"
            case EADDRNOTAVAIL:
                return "cannot listen on \(address): \(reason): \(address.host) is not an address of this machine"
            case EACCES:
                return
                    "cannot listen on \(address): \(reason): ports below 1024 need privileges; choose a port above it"
            default:
                return "cannot listen on \(address): \(reason)"
            }
        } catch {
            return "cannot listen on \(address): \(error)"
        }
    }

    /// The numeric address `listen` is bound at: its host resolved once, as the bind would, so
    /// what is checked (the console's loopback rule) is what is bound.
    public static func bound(_ listen: ListenAddress) -> Result<ListenAddress, ServeNode.Failure> {
        do {
            let address = try SocketAddress.makeAddressResolvingHost(listen.host, port: listen.port)
            guard let ip = address.ipAddress else {
                return .failure(ServeNode.Failure(message: "error: \(listen.host) is not an IP address"))
            }
            return .success(ListenAddress(host: ip, port: listen.port))
        } catch {
            return .failure(
                ServeNode.Failure(
                    message: "error: cannot listen on \(listen): \(listen.host) does not resolve to an address"
                )
            )
        }
    }

    public static func application(
        listen: ListenAddress,
        status: ServeStatus,
        metrics: ServeMetrics,
        logger: Logger,
        clock: any WallClock = SystemWallClock(),
        appStore: (path: String, receiver: AppStoreReceiver)? = nil,
        console: Console? = nil,
        limits: Limits = Limits(),
        onListening: @escaping @Sendable (Int) -> Void = { _ in }
    ) -> App {
        let router = Router()
        if let (path, receiver) = appStore {
            router.post(RouterPath(path)) { request, context -> Response in
                let bytes: [UInt8]
                do {
                    // One byte over the limit is enough to refuse it.
                    let buffer = try await request.body.collect(upTo: NotificationIntake.bodyLimit + 1)
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
        console?.register(on: router)
        router.get("healthz") { _, _ in
            "ok\n"
        }
        // With the console's token set, what names campaigns and files is for those who have it.
        let guarded = console.map(\.access).flatMap { $0.token == nil ? nil : $0 }
        @Sendable func holdsToken(_ request: Request) -> Bool {
            guarded?.read(authorization: request.headers[.authorization], cookie: request.headers[.cookie])
                != .unauthorized
        }
        router.get("readyz") { request, _ -> Response in
            var (ready, body) = status.readiness(now: clock.now())
            if !holdsToken(request) { body = ready ? "ready\n" : "not ready (the details need the console's token)\n" }
            return Response(
                status: ready ? .ok : .serviceUnavailable,
                headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: body))
            )
        }
        router.get("metrics") { request, _ -> Response in
            guard holdsToken(request) else {
                return Response(
                    status: .unauthorized,
                    headers: [.contentType: "text/plain; charset=utf-8", .wwwAuthenticate: "Bearer"],
                    body: ResponseBody(
                        byteBuffer: ByteBuffer(
                            string: "/metrics needs the console's token: Authorization: Bearer TOKEN\n"
                        )
                    )
                )
            }
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
            )
        }
        let connections = ConnectionGuard(softLimit: limits.softConnections, requestTimeout: limits.requestTimeout)
        return Application(
            router: router,
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: [connections.handler()],
                    idleTimeout: limits.idleTimeout
                )
            ),
            configuration: ApplicationConfiguration(
                address: .hostname(listen.host, port: listen.port),
                serverName: "pushcamp",
                availableConnectionsDelegate: MaximumAvailableConnections(limits.hardConnections)
            ),
            onServerRunning: { channel in
                onListening(channel.localAddress?.port ?? listen.port)
            },
            logger: logger
        )
    }
}
