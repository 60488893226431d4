import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import PushcampAPNsCore
import Synchronization

/// A local stand-in for the App Store Server API's Get Notification History, on 127.0.0.1: it
/// checks the bearer token as Apple does (ES256 with the In-App Purchase key, issuer, key id,
/// audience, bundle id, at most an hour), serves `pages` of signed payloads with `hasMore` and a
/// `paginationToken`, answers 429 (with `Retry-After: 1`) the first time each page in
/// `rateLimited` is asked for, and records every request so tests can check the bodies repeat.
public final class AppStoreAPIStub: Sendable {
    public struct Request: Sendable, Hashable {
        public var paginationToken: String?
        public var body: String
        public var status: Int
    }

    final class Recorder: Sendable {
        let requests = Mutex<[Request]>([])
        let limited: Mutex<Set<Int>>
        init(limited: Set<Int>) { self.limited = Mutex(limited) }
    }

    public let port: Int
    private let task: Task<Void, any Error>
    private let recorder: Recorder

    public var requests: [Request] { recorder.requests.withLock { $0 } }

    public init(
        pages: [[String]],
        rateLimited: Set<Int> = [],
        issuerID: String,
        keyID: String,
        publicKey: P256.Signing.PublicKey,
        bundleID: String
    ) async throws {
        let recorder = Recorder(limited: rateLimited)
        let router = Router()
        router.post("inApps/v1/notifications/history") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 16)
            let text = String(buffer: bytes)
            let token = request.uri.queryParameters.get("paginationToken")
            let page = token.flatMap { $0.hasPrefix("page-") ? Int($0.dropFirst(5)) : nil } ?? 0
            func answer(_ status: Int, _ json: [String: Any], headers: HTTPFields = [:]) -> Response {
                recorder.requests.withLock { $0.append(Request(paginationToken: token, body: text, status: status)) }
                var fields = headers
                fields[.contentType] = "application/json"
                let data = (try? JSONSerialization.data(withJSONObject: json)) ?? Data()
                return Response(
                    status: HTTPResponse.Status(code: status),
                    headers: fields,
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: Array(data)))
                )
            }
            let bearer = request.headers[.authorization].map { String($0.dropFirst("Bearer ".count)) } ?? ""
            guard
                Self.valid(bearer, issuerID: issuerID, keyID: keyID, publicKey: publicKey, bundleID: bundleID)
            else { return answer(401, ["errorCode": 4_010_000, "errorMessage": "Unauthorized"]) }
            guard page < pages.count else {
                return answer(400, ["errorCode": 4_000_008, "errorMessage": "Invalid pagination token."])
            }
            if recorder.limited.withLock({ $0.remove(page) != nil }) {
                return answer(
                    429,
                    ["errorCode": 4_290_000, "errorMessage": "Rate limit exceeded."],
                    headers: [.retryAfter: "1"]
                )
            }
            var json: [String: Any] = [
                "notificationHistory": pages[page].map { ["signedPayload": $0, "sendAttempts": []] },
                "hasMore": page + 1 < pages.count,
            ]
            if page + 1 < pages.count { json["paginationToken"] = "page-\(page + 1)" }
            return answer(200, json)
        }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "stub")
        logger.logLevel = .error
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        task = Task { try await application.run() }
        var iterator = ports.makeAsyncIterator()
        port = await iterator.next() ?? 0
        self.recorder = recorder
    }

    public func stop() {
        task.cancel()
    }

    /// What Apple checks of the bearer token.
    static func valid(
        _ token: String,
        issuerID: String,
        keyID: String,
        publicKey: P256.Signing.PublicKey,
        bundleID: String
    ) -> Bool {
        guard let issuedAt = ProviderTokenJWT.issuedAt(token, publicKey: publicKey, teamID: issuerID, keyID: keyID)
        else { return false }
        let parts = token.split(separator: ".")
        guard let bytes = Base64URL.decode(parts[1]),
            let claims = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let expires = (claims["exp"] as? NSNumber)?.int64Value
        else { return false }
        let now = Int64(Date().timeIntervalSince1970)
        return claims["aud"] as? String == "appstoreconnect-v1" && claims["bid"] as? String == bundleID
            && expires - issuedAt <= 3600 && expires > now && issuedAt <= now + 60
    }
}
