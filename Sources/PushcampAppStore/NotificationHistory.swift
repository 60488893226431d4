import Crypto
import Foundation
import PushcampAPNsCore

/// The App Store Server API as `pushcamp appstore history` calls it: an In-App Purchase key of App
/// Store Connect, the app's bundle id and the host (Apple's production or sandbox one, or a stub).
public struct AppStoreServerAPI: Sendable {
    public static let production = "https://api.storekit.itunes.apple.com"
    public static let sandbox = "https://api.storekit-sandbox.itunes.apple.com"

    public var issuerID: String
    public var keyID: String
    public var key: P256.Signing.PrivateKey
    public var bundleID: String
    public var baseURL: String

    public init(issuerID: String, keyID: String, key: P256.Signing.PrivateKey, bundleID: String, baseURL: String) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.key = key
        self.bundleID = bundleID
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
    }

    /// The API with the In-App Purchase key in `keyFile` (a .p8 file, PEM).
    public init(
        issuerID: String,
        keyID: String,
        keyFile: String,
        bundleID: String,
        baseURL: String
    ) throws(SigningKeyFile.Problem) {
        self.init(
            issuerID: issuerID,
            keyID: keyID,
            key: try SigningKeyFile.read(keyFile),
            bundleID: bundleID,
            baseURL: baseURL
        )
    }

    /// The bearer token: ES256 with the key, `iss` the issuer, `aud` appstoreconnect-v1, `bid` the
    /// bundle id, valid 20 minutes (Apple allows at most 60).
    public func token(issuedAt: Int64) -> String {
        let header: [String: Any] = ["alg": "ES256", "kid": keyID, "typ": "JWT"]
        let claims: [String: Any] = [
            "iss": issuerID, "iat": issuedAt, "exp": issuedAt + 20 * 60, "aud": "appstoreconnect-v1", "bid": bundleID,
        ]
        func encoded(_ object: [String: Any]) -> String {
            Base64URL.encode(
                Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
            )
        }
        let input = encoded(header) + "." + encoded(claims)
        // Signing a digest with a fresh nonce cannot fail for a valid key.
        let signature = try! key.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// `POST /inApps/v1/notifications/history`, with the page's token as a query parameter.
    public func historyURL(paginationToken: String?) -> URL? {
        var components = URLComponents(string: baseURL + "/inApps/v1/notifications/history")
        if let paginationToken {
            components?.queryItems = [URLQueryItem(name: "paginationToken", value: paginationToken)]
        }
        return components?.url
    }
}

/// What to ask Get Notification History for: a time range (Apple keeps 180 days in production, 30
/// in sandbox) and, optionally, only the notifications Apple failed to deliver. Every page is asked
/// with the same body.
public struct NotificationHistoryQuery: Sendable, Hashable {
    public var start: Date
    public var end: Date
    public var onlyFailures: Bool

    public init(start: Date, end: Date, onlyFailures: Bool) {
        self.start = start
        self.end = end
        self.onlyFailures = onlyFailures
    }

    public var body: Data {
        var object: [String: Any] = [
            "startDate": Int64(start.timeIntervalSince1970 * 1000), "endDate": Int64(end.timeIntervalSince1970 * 1000),
        ]
        if onlyFailures { object["onlyFailures"] = true }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}

/// Decides what Get Notification History calls come next from the answers: the next page while
/// `hasMore`, a wait after 429 (Apple's rate limit) or a 5xx (its `Retry-After`, else back-off
/// from 1 s doubling to 60 s), and a stop with the reason for anything else. Pure: the driver
/// (`NotificationHistory.fetch`) carries the actions out.
public struct NotificationHistoryPager: Sendable {
    public enum Action: Sendable, Equatable {
        case fetch(paginationToken: String?)
        case wait(seconds: Double, then: String?)
        case finished
        case failed(String)
    }

    public let maxAttempts: Int
    /// The page being asked for.
    private(set) var token: String?
    private var attempts = 0
    private var seen: Set<String> = []
    public private(set) var pages = 0
    public private(set) var waits = 0

    public init(maxAttempts: Int = 8) {
        self.maxAttempts = maxAttempts
    }

    public func start() -> Action { .fetch(paginationToken: nil) }

    /// An answer to the current page: its signed payloads (empty unless 200) and what to do next.
    public mutating func answered(status: Int, retryAfter: Double?, body: Data) -> (payloads: [String], next: Action) {
        switch status {
        case 200:
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else {
                return ([], .failed("the App Store Server API answered 200 with a body that is not JSON"))
            }
            attempts = 0
            pages += 1
            let items = object["notificationHistory"] as? [[String: Any]] ?? []
            let payloads = items.compactMap { $0["signedPayload"] as? String }
            guard object["hasMore"] as? Bool == true else { return (payloads, .finished) }
            guard let next = object["paginationToken"] as? String, !next.isEmpty, seen.insert(next).inserted else {
                return (payloads, .failed("the App Store Server API said hasMore but gave no new paginationToken"))
            }
            token = next
            return (payloads, .fetch(paginationToken: next))
        case 429, 500...599:
            attempts += 1
            guard attempts < maxAttempts else {
                return (
                    [],
                    .failed("the App Store Server API answered \(status) \(attempts) times in a row; try again later")
                )
            }
            waits += 1
            let backOff = min(60, pow(2, Double(attempts - 1)))
            return ([], .wait(seconds: min(max(retryAfter ?? backOff, 0), 3600), then: token))
        case 401:
            return (
                [],
                .failed(
                    "the App Store Server API refused the key (401 Unauthorized): check api.issuer_id, api.key_id and api.key_file (an In-App Purchase key of App Store Connect) and the bundle id"
                )
            )
        default:
            let message = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["errorMessage"] as? String
            return (
                [], .failed("the App Store Server API answered \(status)\(message.map { ": \($0.prefix(200))" } ?? "")")
            )
        }
    }

    /// A request that got no answer (connection refused, reset, timed out): retried like a 5xx.
    public mutating func unanswered(_ error: String) -> Action {
        let (_, next) = answered(status: 599, retryAfter: nil, body: Data())
        if case .failed = next { return .failed("the App Store Server API cannot be reached: \(error)") }
        return next
    }
}

/// One HTTP exchange with the App Store Server API.
public protocol AppStoreAPITransport: Sendable {
    func post(
        _ url: URL,
        headers: [String: String],
        body: Data
    ) async throws -> (
        status: Int, headers: [String: String], body: Data
    )
}

public enum NotificationHistory {
    /// What a fetch went through.
    public struct Fetched: Sendable {
        public var pages: Int
        public var waits: Int
        public var payloads: Int
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Asks for every page of `query`, handing each page's signed payloads to `page` as it comes.
    public static func fetch(
        _ query: NotificationHistoryQuery,
        api: AppStoreServerAPI,
        transport: any AppStoreAPITransport,
        clock: any WallClock = SystemWallClock(),
        page: ([String]) async throws -> Void
    ) async throws -> Fetched {
        var pager = NotificationHistoryPager()
        var action = pager.start()
        var payloads = 0
        while true {
            switch action {
            case .finished:
                return Fetched(pages: pager.pages, waits: pager.waits, payloads: payloads)
            case .failed(let message):
                throw Failure(description: message)
            case .wait(let seconds, let token):
                try await clock.sleep(for: seconds)
                action = .fetch(paginationToken: token)
            case .fetch(let token):
                guard let url = api.historyURL(paginationToken: token) else {
                    throw Failure(description: "\(api.baseURL) is not a URL")
                }
                let headers = [
                    "Authorization": "Bearer " + api.token(issuedAt: Int64(clock.now())),
                    "Content-Type": "application/json",
                ]
                let answer: (status: Int, headers: [String: String], body: Data)
                do {
                    answer = try await transport.post(url, headers: headers, body: query.body)
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    action = pager.unanswered("\(error)")
                    continue
                }
                let (items, next) = pager.answered(
                    status: answer.status,
                    retryAfter: answer.headers["retry-after"].flatMap(Double.init),
                    body: answer.body
                )
                if !items.isEmpty {
                    payloads += items.count
                    try await page(items)
                }
                action = next
            }
        }
    }
}
