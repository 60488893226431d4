import Foundation
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCMCore

/// Google's OAuth 2.0 token endpoint (the service account's `token_uri`), over the same HTTP/2 client
/// as every other request: a signed assertion in, an access token and its lifetime out.
public final class TokenEndpoint: Sendable {
    public let uri: String
    private let path: String
    private let exchange: APNsExchange

    /// What the endpoint answered.
    public struct Issued: Sendable, Equatable {
        public var token: String
        /// Seconds.
        public var lifetime: Double

        public init(token: String, lifetime: Double) {
            self.token = token
            self.lifetime = lifetime
        }
    }

    /// The host of a `token_uri`, or nil when it is not an https:// address.
    public static func host(of uri: String) -> String? { parse(uri)?.host }

    /// `uri` is the key file's `token_uri`; `caFile` a CA to trust instead of the system's (a simulator);
    /// `proxy` an HTTP proxy to tunnel through.
    public init(uri: String, caFile: String?, timeout: Double = 30, proxy: HTTPProxy? = nil) throws(FCMClientError) {
        guard let (host, port, path) = Self.parse(uri) else {
            throw FCMClientError(.credentials, "the service account's token_uri is not an https:// address")
        }
        self.uri = uri
        self.path = path
        var configuration = APNsClientConfiguration(
            host: host,
            port: port,
            authentication: .inRequest,
            caFile: caFile,
            connections: 1
        )
        configuration.requestTimeout = .milliseconds(Int64(timeout * 1000))
        configuration.connectTimeout = .milliseconds(Int64(min(timeout, 10) * 1000))
        configuration.proxy = proxy
        do {
            exchange = try APNsExchange(configuration: configuration)
        } catch {
            throw FCMClientError(.connect, error.message)
        }
    }

    /// Exchanges an assertion signed by `account` at `now` for an access token.
    public func issue(for account: ServiceAccount, now: Double) async throws(FCMClientError) -> Issued {
        let response: APNsExchange.Response
        do {
            response = try await exchange.send(
                APNsExchange.Request(
                    method: "POST",
                    path: path,
                    headers: [("content-type", "application/x-www-form-urlencoded")],
                    body: AccessTokenAssertion.requestBody(
                        assertion: AccessTokenAssertion.make(account: account, issuedAt: Int64(now))
                    )
                )
            )
        } catch {
            throw FCMClientError(.connect, "the token endpoint \(uri): \(error.message)")
        }
        return try Self.read(response, uri: uri)
    }

    public func close() async { await exchange.close() }

    /// The token endpoint's answer: a token, or why not. An OAuth error is the credentials' (the key
    /// revoked, the clock far off, a wrong scope); any other status the endpoint's.
    static func read(_ response: APNsExchange.Response, uri: String) throws(FCMClientError) -> Issued {
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        if response.status == 200, let token = object?["access_token"] as? String, !token.isEmpty {
            let lifetime = (object?["expires_in"] as? NSNumber)?.doubleValue ?? 3600
            guard lifetime.isFinite, lifetime > AccessTokenSchedule.safetyMargin else {
                throw FCMClientError(.connect, "the token endpoint \(uri) issued a token that expires at once")
            }
            return Issued(token: token, lifetime: min(lifetime, 86_400))
        }
        if let error = object?["error"] as? String {
            // Google's texts name the problem, never the key.
            let description = (object?["error_description"] as? String).map { " (\($0))" } ?? ""
            throw FCMClientError(
                (400...403).contains(response.status) ? .credentials : .connect,
                "the token endpoint \(uri) refused the service account: \(error)\(description)"
            )
        }
        throw FCMClientError(.connect, "the token endpoint \(uri) answered \(response.status) without a token")
    }

    /// `https://host[:port]/path` → host, port (443 when absent) and path (`/` when absent).
    static func parse(_ uri: String) -> (host: String, port: Int, path: String)? {
        guard uri.hasPrefix("https://") else { return nil }
        let rest = uri.dropFirst("https://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        guard let (host, port) = APNsClientConfiguration.parseEndpoint("https://" + rest[..<slash]) else { return nil }
        return (host, port, path)
    }
}

/// The FCM client's one error type.
public struct FCMClientError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// The service account is refused or unusable: fixed in its key or the project, not by retrying.
        case credentials
        /// The endpoint could not be reached or did not answer as it should.
        case connect
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
