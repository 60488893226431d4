import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner

/// APNs' channel-management API for one app in one environment: create, read, delete and list
/// channels (`/1/apps/{bundle}/channels`, `/1/apps/{bundle}/all-channels`), the channel id in the
/// `apns-channel-id` header both ways.
public struct ChannelClient: Sendable {
    public let bundleID: String
    public let environment: APNsEnvironment
    /// The management endpoint, as messages name it.
    public let endpoint: String
    private let exchange: APNsExchange
    /// What back-offs wait on.
    private let clock: any WallClock

    /// Why a management request failed: APNs' answer (status and reason) or the connection.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var status: Int?
        public var reason: APNsReason?
        public var message: String

        public var description: String { message }
    }

    /// A client with `app`'s credentials, to its channel-management endpoint for `environment`;
    /// its provider token is the one the nodes on `journal` share (see `SendRun.exchange`).
    public static func make(
        app: AppConfig,
        environment: APNsEnvironment,
        paths: ProjectPaths,
        variables: [String: String],
        tokenCache: String?,
        journal: (any Journal)?,
        clock: any WallClock = SystemWallClock()
    ) async throws(APNsClientError) -> ChannelClient {
        let endpoint = app.channelsEndpoint(environment)
        let exchange = try await SendRun.exchange(
            app: app,
            endpoint: endpoint,
            paths: paths,
            variables: variables,
            tokenCache: tokenCache,
            journal: journal
        )
        return ChannelClient(
            bundleID: app.topic,
            environment: environment,
            endpoint: endpoint,
            exchange: exchange,
            clock: clock
        )
    }

    private var channelsPath: String { "/1/apps/\(bundleID)/channels" }

    /// Sends `request` until APNs answers `status`, retrying 429, 5xx, lost answers and failed
    /// connections as `ExchangeRetry.management` says; throws the last failure.
    private func send(
        _ request: APNsExchange.Request,
        expecting status: Int,
        _ what: String
    ) async throws(Failure)
        -> APNsExchange.Response
    {
        var retry = ExchangeRetry.management
        while true {
            let attempt: ExchangeRetry.Attempt
            let failure: Failure
            do {
                let response = try await exchange.send(request)
                if response.status == status { return response }
                let reason = response.reason
                attempt = .answered(
                    status: response.status,
                    reason: reason,
                    retryAfter: response.retryAfter(now: clock.now())
                )
                failure = Failure(
                    status: response.status,
                    reason: reason,
                    message: "\(what): APNs answered \(response.status)\(reason.map { " \($0)" } ?? "")"
                        + (reason.map(Self.advice) ?? "")
                )
            } catch {
                failure = Failure(status: nil, reason: nil, message: "\(what): \(endpoint): \(error.message)")
                if error.code == .shutdown { throw failure }
                attempt = error.code == .unanswered ? .unanswered(timedOut: false) : .notSent
            }
            switch retry.decide(attempt, now: clock.now(), random: Double.random(in: 0..<1)) {
            case .retry(let after, _, _):
                do {
                    try await clock.sleep(for: after)
                } catch {
                    throw failure
                }
            case .fail:
                guard retry.attempts > 1 else { throw failure }
                var last = failure
                last.message += " (tried \(retry.attempts) times)"
                throw last
            }
        }
    }

    /// What to do about a refusal, when there is something to say.
    static func advice(_ reason: APNsReason) -> String {
        switch reason {
        case .featureNotEnabled:
            return " (the App ID lacks the Broadcast capability: enable it in Certificates, Identifiers & Profiles)"
        case .cannotCreateChannelConfig:
            return " (the app holds 10,000 channels in this environment, Apple's cap: delete ended ones first)"
        case .topicMismatch:
            return " (the key or certificate is not for this bundle id)"
        default:
            return reason.disposition == .credentials ? " (check the app's key_file, team_id and key_id)" : ""
        }
    }

    /// Creates a channel; returns Apple's id for it.
    public func create(storage: ChannelStorage) async throws(Failure) -> String {
        let body = #"{"message-storage-policy": \#(storage.policy), "push-type": "LiveActivity"}"#
        let response = try await send(
            APNsExchange.Request(
                method: "POST",
                path: channelsPath,
                headers: [("content-type", "application/json")],
                body: Array(body.utf8)
            ),
            expecting: 201,
            "creating a channel of \(bundleID)"
        )
        guard let id = response.value("apns-channel-id"), !id.isEmpty else {
            throw Failure(
                status: response.status,
                reason: nil,
                message: "creating a channel of \(bundleID): APNs answered 201 without an apns-channel-id"
            )
        }
        return id
    }

    /// The storage of channel `id`; nil when APNs has no such channel.
    public func read(_ id: String) async throws(Failure) -> ChannelStorage? {
        do {
            let response = try await send(
                APNsExchange.Request(method: "GET", path: channelsPath, headers: [("apns-channel-id", id)]),
                expecting: 200,
                "reading channel \(id)"
            )
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return (object?["message-storage-policy"] as? Int).flatMap(ChannelStorage.init(policy:))
        } catch  where error.reason == .channelNotRegistered {
            return nil
        }
    }

    /// Deletes channel `id`; false when APNs had no such channel (deleted already).
    public func delete(_ id: String) async throws(Failure) -> Bool {
        do {
            _ = try await send(
                APNsExchange.Request(method: "DELETE", path: channelsPath, headers: [("apns-channel-id", id)]),
                expecting: 204,
                "deleting channel \(id)"
            )
            return true
        } catch  where error.reason == .channelNotRegistered {
            return false
        }
    }

    /// Every channel id APNs holds for the app in this environment.
    public func list() async throws(Failure) -> [String] {
        let response = try await send(
            APNsExchange.Request(method: "GET", path: "/1/apps/\(bundleID)/all-channels"),
            expecting: 200,
            "listing the channels of \(bundleID)"
        )
        guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let ids = object["channels"] as? [String]
        else {
            throw Failure(
                status: 200,
                reason: nil,
                message: "listing the channels of \(bundleID): the answer is not {\"channels\": [...]}"
            )
        }
        return ids
    }

    public func close() async {
        await exchange.close()
    }
}

extension SendRun {
    /// A one-request-at-a-time client to `endpoint` with `app`'s credentials (the broadcast API).
    /// Its provider token is first adopted from `journal` (or minted and stored there), as a
    /// send's is: every process on the journal uses one token per key, and a second token within
    /// 20 minutes would be refused (TooManyProviderTokenUpdates).
    static func exchange(
        app: AppConfig,
        endpoint: String,
        paths: ProjectPaths,
        variables: [String: String],
        tokenCache: String?,
        journal: (any Journal)?
    ) async throws(APNsClientError) -> APNsExchange {
        var (configuration, _) = try clientConfiguration(
            for: app,
            paths: paths,
            environment: variables,
            clock: SystemWallClock(),
            // One token per key in the process, shared with its other requests and sends: APNs
            // refuses a new token within 20 minutes of the last (TooManyProviderTokenUpdates).
            owners: .shared,
            tokenCache: tokenCache
        )
        guard let (host, port) = APNsClientConfiguration.parseEndpoint(endpoint) else {
            throw APNsClientError(.connect, "app \(app.name): endpoint '\(endpoint)' is not https://host[:port]")
        }
        configuration.host = host
        configuration.port = port
        if let journal, case .providerToken(let tokens) = configuration.authentication {
            await tokens.synchronize(through: journal)
        }
        return try APNsExchange(configuration: configuration)
    }
}
