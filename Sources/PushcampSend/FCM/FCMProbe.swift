import Foundation
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCM
import PushcampFCMCore
import PushcampModel

/// What `doctor` learns of an FCM app without sending a message: whether the token endpoint issues an
/// access token for the service account, and whether FCM's endpoint answers with TLS and HTTP/2.
public struct FCMProbe: Sendable {
    /// The token endpoint issued a token: how long it lives and how long the exchange took.
    public var issued: (lifetime: Double, took: Double)?
    /// FCM's endpoint answered with TLS and HTTP/2, in this many seconds.
    public var connected: Double?
    /// What failed first, and which step: `token endpoint` or `TLS and HTTP/2`.
    public var failure: (step: String, message: String)?

    public static func run(
        _ app: FCMAppConfig,
        credentials: FCMCredentials,
        timeout: Double,
        environment: [String: String] = [:],
        clock: any WallClock = SystemWallClock()
    ) async -> FCMProbe {
        var probe = FCMProbe()
        let started = clock.now()
        func proxy(_ host: String) throws(APNsClientError) -> HTTPProxy? {
            try SendRun.proxy(for: host, setting: app.proxy, environment: environment, app: app.name)
        }
        do {
            let tokenHost = TokenEndpoint.host(of: credentials.account.tokenURI) ?? ""
            let tokenProxy: HTTPProxy?
            do {
                tokenProxy = try proxy(tokenHost)
            } catch {
                probe.failure = ("token endpoint", error.message)
                return probe
            }
            let endpoint = try TokenEndpoint(
                uri: credentials.account.tokenURI,
                caFile: credentials.caFile,
                timeout: timeout,
                proxy: tokenProxy
            )
            let issued: Result<TokenEndpoint.Issued, FCMClientError>
            do {
                issued = .success(try await endpoint.issue(for: credentials.account, now: clock.now()))
            } catch {
                issued = .failure(error)
            }
            await endpoint.close()
            probe.issued = (try issued.get().lifetime, clock.now() - started)
        } catch {
            probe.failure = ("token endpoint", error.message)
            return probe
        }
        let connecting = clock.now()
        do throws(APNsClientError) {
            guard let (host, port) = APNsClientConfiguration.parseEndpoint(app.sendEndpoint) else {
                throw APNsClientError(.connect, "endpoint '\(app.sendEndpoint)' is not https://host[:port]")
            }
            var configuration = APNsClientConfiguration(
                host: host,
                port: port,
                authentication: .inRequest,
                caFile: credentials.caFile,
                connections: 1
            )
            configuration.connectTimeout = .milliseconds(Int64(timeout * 1000))
            configuration.proxy = try proxy(host)
            let exchange = try APNsExchange(configuration: configuration)
            try await exchange.connect()
            probe.connected = clock.now() - connecting
            await exchange.close()
        } catch {
            probe.failure = ("TLS and HTTP/2", error.message)
        }
        return probe
    }
}
