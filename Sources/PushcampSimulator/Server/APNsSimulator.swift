import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// An APNs stand-in on loopback: HTTP/2 over TLS only (ALPN `h2`; anything else is refused).
public final class APNsSimulator: Sendable {
    public let configuration: SimulatorConfiguration
    public let recorder = SimulatorRecorder()
    /// The channels of the broadcast API.
    public let channels: SimulatorChannels
    /// FCM's token endpoint and send API, when `configuration.fcm` asks for them.
    public let fcm: SimulatorFCM?
    private let channel = Mutex<(any Channel)?>(nil)
    private let nextConnection = Atomic<Int>(0)

    /// Throws when the saved channels (`configuration.channelsFile`) cannot be read.
    public init(configuration: SimulatorConfiguration) throws {
        self.configuration = configuration
        channels = try SimulatorChannels(
            rules: configuration.broadcast,
            faults: configuration.broadcastFaults,
            file: configuration.channelsFile
        )
        fcm = configuration.fcm.map(SimulatorFCM.init(settings:))
    }

    /// Starts listening; returns the port.
    public func start(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> Int {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [
                .certificate(
                    try NIOSSLCertificate(
                        bytes: Array(configuration.credentials.serverCertificatePEM.utf8),
                        format: .pem
                    )
                )
            ],
            privateKey: .privateKey(
                try NIOSSLPrivateKey(bytes: Array(configuration.credentials.serverKeyPEM.utf8), format: .pem)
            )
        )
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        if configuration.acceptsClientCertificates {
            // Certificate auth: a client may present a certificate; one our CA did not sign fails the
            // handshake, as a revoked or foreign certificate does with APNs.
            tls.certificateVerification = .optionalVerification
            tls.trustRoots = .certificates([
                try NIOSSLCertificate(bytes: Array(configuration.credentials.caCertificatePEM.utf8), format: .pem)
            ])
        }
        let context = try NIOSSLContext(configuration: tls)
        let configuration = self.configuration
        let recorder = self.recorder
        let channels = self.channels
        let fcm = self.fcm
        let simulator = self
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)  // not .socketOption: that is SO_DEBUG, root only
            .childChannelInitializer { channel in
                let id = simulator.nextConnection.wrappingAdd(1, ordering: .relaxed).oldValue
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(
                        ApplicationProtocolNegotiationHandler { result, channel in
                            guard case .negotiated("h2") = result else { return channel.close() }
                            return channel.eventLoop.makeCompletedFuture {
                                let http2 = NIOHTTP2Handler(
                                    mode: .server,
                                    initialSettings: [
                                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 1),
                                        HTTP2Setting(parameter: .maxHeaderListSize, value: 8192),
                                    ]
                                )
                                try channel.pipeline.syncOperations.addHandler(http2)
                                let tls = try channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
                                try channel.pipeline.syncOperations.addHandler(
                                    SimulatorConnectionHandler(
                                        id: id,
                                        configuration: configuration,
                                        recorder: recorder,
                                        channels: channels,
                                        fcm: fcm,
                                        certificateAuthenticated: tls.peerCertificate != nil
                                    )
                                )
                            }
                        }
                    )
                }
            }
        let server = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        channel.withLock { $0 = server }
        let port = server.localAddress?.port ?? configuration.port
        fcm?.listening(host: configuration.host, port: port)
        return port
    }

    /// The port it listens on, once started.
    public var port: Int? { channel.withLock { $0?.localAddress?.port } }

    public func stop() async {
        let server = channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await server?.close()
    }
}
