import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PushcampAPNsCore

/// Where and how a pool connects.
public struct APNsClientConfiguration: Sendable {
    public enum Authentication: Sendable {
        /// ES256 provider tokens, shared by every connection.
        case providerToken(ProviderTokens)
        /// A TLS client certificate: a PKCS#12 bundle, or a PEM file holding certificate and key.
        case certificate(path: String, password: String?)
        /// Each request carries its own `authorization`, or none (FCM's OAuth 2.0 access token, and
        /// the token endpoint that issues it): a connection still opens one stream until a request
        /// is accepted, as with provider tokens.
        case inRequest
        /// A bearer token from elsewhere, the same for every request (FCM's access tokens): one
        /// stream until a request is accepted; requests wait while no token is fit to send with.
        case bearer(any BearerAuthorization)
    }

    public var host: String
    public var port: Int
    public var authentication: Authentication
    /// PEM file of CAs to trust instead of the system's (simulators, tests).
    public var caFile: String?
    public var connections: Int
    public var requestTimeout: TimeAmount = .seconds(30)
    public var idleTimeout: TimeAmount = .seconds(60)
    public var pingTimeout: TimeAmount = .seconds(10)
    public var connectTimeout: TimeAmount = .seconds(10)
    /// A connection whose server sends no SETTINGS this long after TLS is closed and replaced.
    public var settingsTimeout: TimeAmount = .seconds(10)
    public var reconnectBackoff = Backoff()
    /// The clock reconnect back-offs wait on (and provider tokens are minted by).
    public var clock: any WallClock = SystemWallClock()
    /// An HTTP proxy to tunnel through (`CONNECT`), or nil to connect straight.
    public var proxy: HTTPProxy?

    /// Where the TCP connection goes: the proxy when there is one, else the server.
    public var connectTarget: (host: String, port: Int) { proxy.map { ($0.host, $0.port) } ?? (host, port) }

    public init(host: String, port: Int, authentication: Authentication, caFile: String? = nil, connections: Int) {
        self.host = host
        self.port = port
        self.authentication = authentication
        self.caFile = caFile
        self.connections = connections
    }

    /// `https://host[:port]` → host and port (443 when absent).
    public static func parseEndpoint(_ text: String) -> (host: String, port: Int)? {
        guard text.hasPrefix("https://") else { return nil }
        var rest = Substring(text.dropFirst("https://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            let host = String(rest[rest.index(after: rest.startIndex)..<close])
            let tail = rest[rest.index(after: close)...]
            if tail.isEmpty { return (host, 443) }
            guard tail.hasPrefix(":"), let port = Int(tail.dropFirst()), (1...65535).contains(port) else { return nil }
            return (host, port)
        }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard !parts[0].isEmpty, parts.count <= 2 else { return nil }
        if parts.count == 1 { return (String(parts[0]), 443) }
        guard let port = Int(parts[1]), (1...65535).contains(port) else { return nil }
        return (String(parts[0]), port)
    }

    /// TCP to `host`, TLS on it (ALPN h2; the server's name checked unless `host` is an address),
    /// then the handler `makeHandler` makes: how the pool's connections and the broadcast API's
    /// exchange connect.
    func bootstrap(
        on eventLoop: any EventLoop,
        tlsContext: NIOSSLContext,
        makeHandler: @escaping @Sendable () -> any ChannelHandler
    ) -> ClientBootstrap {
        let host = self.host
        let port = self.port
        let proxy = self.proxy
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            // A TCP option: `.socketOption(.tcp_nodelay)` would set SOL_SOCKET option 1, SO_DEBUG, which
            // only root may set (every connection of a user without CAP_NET_ADMIN was refused).
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = makeHandler()
                    guard let proxy else {
                        let tls = try NIOSSLClientHandler(context: tlsContext, serverHostname: isAddress ? nil : host)
                        try channel.pipeline.syncOperations.addHandler(tls)
                        try channel.pipeline.syncOperations.addHandler(handler)
                        return
                    }
                    // The tunnel first; TLS goes in between once the proxy has opened it. The
                    // connection's handler is there from the start, so a refused tunnel fails it.
                    let tunnel = ProxyConnectHandler(proxy: proxy, target: (host, port)) { context in
                        let tls = try NIOSSLClientHandler(context: tlsContext, serverHostname: isAddress ? nil : host)
                        try context.pipeline.syncOperations.addHandler(tls, position: .after(context.handler))
                    }
                    try channel.pipeline.syncOperations.addHandler(tunnel)
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
    }

    /// Loads what a connection needs before it connects (the client certificate and its key, the
    /// CA file): the errors a connection would meet, found without connecting.
    public func validate() throws(APNsClientError) {
        _ = try makeTLSContext()
    }

    func makeTLSContext() throws(APNsClientError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        if let caFile {
            tls.trustRoots = .file(caFile)
        }
        if case .certificate(let path, let password) = authentication {
            do {
                if path.hasSuffix(".p12") || path.hasSuffix(".pfx") {
                    let bundle = try NIOSSLPKCS12Bundle(file: path, passphrase: Array((password ?? "").utf8))
                    tls.certificateChain = bundle.certificateChain.map { .certificate($0) }
                    tls.privateKey = .privateKey(bundle.privateKey)
                } else {
                    tls.certificateChain = try NIOSSLCertificate.fromPEMFile(path).map { .certificate($0) }
                    tls.privateKey = .privateKey(
                        try NIOSSLPrivateKey(file: path, format: .pem) { setter in setter((password ?? "").utf8) }
                    )
                }
            } catch {
                // BoringSSL's own error stack says nothing a user can act on; say what the file must be.
                throw APNsClientError(
                    .credentials,
                    "cannot load the client certificate \(path): it must be a PEM file with the certificate and its "
                        + "private key, or a .p12/.pfx bundle, and its password (if any) must be right"
                )
            }
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            var certificate: String?
            if case .certificate(let path, _) = authentication { certificate = path }
            throw Self.setupProblem(
                caFile: caFile,
                certificate: certificate,
                systemTrustFound: Self.systemTrustStores.contains { FileManager.default.fileExists(atPath: $0) },
                error: error
            )
        }
    }

    /// Where the system's certificate authorities are looked for when no `ca_file` is given: the
    /// places swift-nio-ssl tries on Linux (Debian's, Fedora's, the directory).
    package static let systemTrustStores = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/certs",
    ]

    /// Why the TLS context for a connection could not be made, by its cause: a `ca_file` that holds
    /// no certificates; a machine without the system's certificate authorities (a minimal image
    /// without the ca-certificates package); a client certificate whose key does not fit it;
    /// else what TLS said.
    package static func setupProblem(
        caFile: String?,
        certificate: String?,
        systemTrustFound: Bool,
        error: any Error
    ) -> APNsClientError {
        if let caFile {
            return APNsClientError(
                .connect,
                "cannot use ca_file \(caFile): it must hold PEM certificates (-----BEGIN CERTIFICATE-----)"
            )
        }
        if !systemTrustFound {
            return APNsClientError(
                .connect,
                "this machine has no certificate authorities to check the server with (no "
                    + "/etc/ssl/certs/ca-certificates.crt): install them (Debian, Ubuntu: apt-get install "
                    + "ca-certificates), or name the authorities to trust with ca_file"
            )
        }
        if let certificate {
            return APNsClientError(
                .credentials,
                "TLS set-up failed: the client certificate in \(certificate) and its private key do not fit together"
            )
        }
        return APNsClientError(.connect, "TLS set-up failed: \(error)")
    }
}
