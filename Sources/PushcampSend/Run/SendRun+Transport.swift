import Foundation
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCM
import PushcampFCMCore
import PushcampJournal
import PushcampModel
import PushcampPlanner

extension SendRun {
    /// A connection pool for the campaign's app: its endpoint (or Apple's host for its environment),
    /// credentials resolved from `${env:…}` with paths relative to the project root. Reads the key or
    /// certificate now, so a missing or unreadable one stops the send before a run exists.
    /// Provider tokens come from `owners`, the one owner per key that every run of the process
    /// asks; `tokenCache` is where they are kept between processes (beside the journal).
    static func appTransport(
        for app: AppConfig,
        connections: Int,
        paths: ProjectPaths,
        environment: [String: String],
        clock: any WallClock,
        owners: ProviderTokenOwners,
        tokenCache: String?,
        group: any EventLoopGroup = APNsConnectionPool.nextEventLoop()
    ) throws(APNsClientError) -> (APNsConnectionPool, endpoint: String, tokens: ProviderTokens?) {
        var (configuration, endpoint) = try clientConfiguration(
            for: app,
            paths: paths,
            environment: environment,
            clock: clock,
            owners: owners,
            tokenCache: tokenCache
        )
        configuration.connections = connections
        var tokens: ProviderTokens?
        if case .providerToken(let owner) = configuration.authentication { tokens = owner }
        return (try APNsConnectionPool(configuration: configuration, group: group), endpoint, tokens)
    }

    /// A connection pool for an Android app: FCM's endpoint (or the app's), the service account's
    /// access tokens fetched from its token endpoint and renewed before they expire, and the
    /// `messages:send` path of the app's Firebase project.
    static func fcmTransport(
        for app: FCMAppConfig,
        connections: Int,
        paths: ProjectPaths,
        environment: [String: String],
        clock: any WallClock,
        group: any EventLoopGroup = APNsConnectionPool.nextEventLoop()
    ) throws(RunRefusal) -> (APNsConnectionPool, endpoint: String, tokens: AccessTokens, path: String) {
        let credentials: FCMCredentials
        do {
            credentials = try FCMCredentials.load(app, paths: paths, environment: environment)
        } catch {
            throw RunRefusal(.credentials, "\(error.description); nothing was sent")
        }
        do throws(APNsClientError) {
            let pool = try fcmPool(
                account: credentials.account,
                endpoint: app.sendEndpoint,
                caFile: credentials.caFile,
                connections: connections,
                clock: clock,
                group: group,
                proxy: { host throws(APNsClientError) in
                    try proxy(for: host, setting: app.proxy, environment: environment, app: app.name)
                }
            )
            return (pool.pool, app.sendEndpoint, pool.tokens, fcmPath(project: credentials.projectID))
        } catch {
            throw RunRefusal(.credentials, "app \(app.name): " + error.message + "; nothing was sent")
        }
    }

    /// A pool to FCM's `endpoint` sending as `account`: its access tokens fetched from the account's
    /// token endpoint, renewed ahead of their end and once after a 401.
    public static func fcmPool(
        account: ServiceAccount,
        endpoint: String,
        caFile: String?,
        connections: Int,
        clock: any WallClock,
        group: any EventLoopGroup = APNsConnectionPool.nextEventLoop(),
        proxy: (String) throws(APNsClientError) -> HTTPProxy? = { _ in nil }
    ) throws(APNsClientError) -> (pool: APNsConnectionPool, tokens: AccessTokens) {
        guard let (host, port) = APNsClientConfiguration.parseEndpoint(endpoint) else {
            throw APNsClientError(.connect, "endpoint '\(endpoint)' is not https://host[:port]")
        }
        let tokens: AccessTokens
        let tokenProxy = try proxy(TokenEndpoint.host(of: account.tokenURI) ?? host)
        do throws(FCMClientError) {
            tokens = AccessTokens(
                account: account,
                endpoint: try TokenEndpoint(uri: account.tokenURI, caFile: caFile, proxy: tokenProxy),
                clock: clock
            )
        } catch {
            throw APNsClientError(.credentials, error.message)
        }
        var configuration = APNsClientConfiguration(
            host: host,
            port: port,
            authentication: .bearer(tokens),
            caFile: caFile,
            connections: connections
        )
        configuration.clock = clock
        configuration.proxy = try proxy(host)
        return (try APNsConnectionPool(configuration: configuration, group: group), tokens)
    }

    /// The `messages:send` path of a Firebase project.
    static func fcmPath(project: String) -> String { "/v1/projects/\(project)/messages:send" }

    /// What is wrong with an app's credentials, and where in pushcamp.yaml the setting at fault is
    /// written (`key_file`, `certificate`, `ca_file`), when it is one of those.
    public struct CredentialsProblem: Error, Sendable, CustomStringConvertible {
        public var location: SourceLocation?
        public var message: String
        /// What is at fault, as doctor's line names it: `credentials`, or `connection set-up` (the
        /// endpoint, a CA file, or a machine without certificate authorities).
        public var part = "credentials"

        /// `pushcamp.yaml:7:15: app shop: key_file …`, or the message alone.
        public var description: String { location.map { "\($0): \(message)" } ?? message }
    }

    /// What is wrong with the credentials of `campaign`'s apps (see the other `credentialsProblem`;
    /// an Android app's service account is read and parsed).
    public static func credentialsProblem(
        of campaign: LoadedCampaign,
        paths: ProjectPaths,
        environment: [String: String]
    ) -> CredentialsProblem? {
        if let app = campaign.app, let problem = credentialsProblem(of: app, paths: paths, environment: environment) {
            return problem
        }
        return campaign.android.flatMap { credentialsProblem(of: $0.app, paths: paths, environment: environment) }
    }

    /// What is wrong with an Android app's credentials: its service account read and parsed, its
    /// CA file usable. Nil when nothing is.
    public static func credentialsProblem(
        of app: FCMAppConfig,
        paths: ProjectPaths,
        environment: [String: String]
    ) -> CredentialsProblem? {
        do {
            _ = try FCMCredentials.load(app, paths: paths, environment: environment)
            return nil
        } catch {
            return error
        }
    }

    /// What is wrong with `app`'s credentials, checked without connecting: every `${env:…}` set, the
    /// key readable and an ES256 key (or the certificate and its password loadable), the CA file
    /// usable, and, for Apple's hosts, a team id and key id other than the placeholders `pushcamp
    /// init` writes. Nil when nothing is: what `serve` checks at start and on every reload, and
    /// `send` before it asks anything.
    public static func credentialsProblem(
        of app: AppConfig,
        paths: ProjectPaths,
        environment: [String: String]
    ) -> CredentialsProblem? {
        var blame: SourceLocation?
        do {
            let (configuration, _) = try clientConfiguration(
                for: app,
                paths: paths,
                environment: environment,
                clock: SystemWallClock(),
                owners: ProviderTokenOwners(),
                tokenCache: nil,
                blame: &blame
            )
            try configuration.validate()
        } catch {
            guard error.code == .connect else { return CredentialsProblem(location: blame, message: error.message) }
            // A machine without certificate authorities is no setting's fault; a bad ca_file is its own.
            var problem = CredentialsProblem(location: app.caFile == nil ? nil : blame, message: error.message)
            problem.part = "connection set-up"
            return problem
        }
        if case .token(let teamID, let keyID, _) = app.credentials, app.endpoint == nil {
            let placeholders = [
                (teamID == ProjectScaffold.placeholderTeamID, "team_id \(teamID)"),
                (keyID == ProjectScaffold.placeholderKeyID, "key_id \(keyID)"),
            ].filter(\.0).map(\.1)
            if !placeholders.isEmpty {
                return CredentialsProblem(
                    location: nil,
                    message: "app \(app.name): \(placeholders.joined(separator: " and ")) "
                        + "\(placeholders.count == 1 ? "is the placeholder" : "are the placeholders") `pushcamp init` "
                        + "wrote; Apple's \(app.environment.rawValue) host would refuse them. Put your team's and key's "
                        + "ids in pushcamp.yaml"
                )
            }
        }
        return nil
    }

    /// The client configuration of `app` (one connection): where to connect, how to authenticate.
    static func clientConfiguration(
        for app: AppConfig,
        paths: ProjectPaths,
        environment: [String: String],
        clock: any WallClock,
        owners: ProviderTokenOwners,
        tokenCache: String?
    ) throws(APNsClientError) -> (APNsClientConfiguration, endpoint: String) {
        var blame: SourceLocation?
        return try clientConfiguration(
            for: app,
            paths: paths,
            environment: environment,
            clock: clock,
            owners: owners,
            tokenCache: tokenCache,
            blame: &blame
        )
    }

    /// `clientConfiguration`, leaving in `blame` where the setting being read when it failed is
    /// written (key_file, certificate, ca_file).
    static func clientConfiguration(
        for app: AppConfig,
        paths: ProjectPaths,
        environment: [String: String],
        clock: any WallClock,
        owners: ProviderTokenOwners,
        tokenCache: String?,
        blame: inout SourceLocation?
    ) throws(APNsClientError) -> (APNsClientConfiguration, endpoint: String) {
        func resolve(_ value: ConfigString, _ what: String) throws(APNsClientError) -> String {
            switch value.resolve(environment) {
            case .success(let text): return text
            case .failure(let error): throw APNsClientError(.credentials, "app \(app.name): \(what): \(error.message)")
            }
        }
        // A file's path: `~` is the home folder.
        func resolvePath(_ value: ConfigString, _ what: String) throws(APNsClientError) -> String {
            switch value.resolvePath(environment) {
            case .success(let text): return text
            case .failure(let error): throw APNsClientError(.credentials, "app \(app.name): \(what): \(error.message)")
            }
        }
        let endpoint = app.endpoint ?? "https://\(app.environment.host)"
        guard let (host, port) = APNsClientConfiguration.parseEndpoint(endpoint) else {
            throw APNsClientError(.connect, "app \(app.name): endpoint '\(endpoint)' is not https://host[:port]")
        }
        let authentication: APNsClientConfiguration.Authentication
        switch app.credentials {
        case .token(let teamID, let keyID, let keyFile):
            blame = keyFile.location
            let path = paths.url(try resolvePath(keyFile, "key_file")).path
            if let named = Self.keyID(inFileName: path), named != keyID {
                throw APNsClientError(
                    .credentials,
                    "app \(app.name): key_id \(keyID) is not the id in the key file's name, "
                        + "\((path as NSString).lastPathComponent): Apple names a key AuthKey_<key id>.p8, so the "
                        + "key_id is \(named) or the file is another key"
                )
            }
            // Kept beside the journal, so a send started again soon after reuses the token.
            do {
                authentication = .providerToken(
                    try owners.tokens(
                        teamID: teamID,
                        keyID: keyID,
                        keyFile: path,
                        clock: clock,
                        cacheDirectory: tokenCache
                    )
                )
            } catch {
                throw APNsClientError(error.code, "app \(app.name): \(error.message)")
            }
        case .certificate(let file, let password):
            blame = file.location
            let path = paths.url(try resolvePath(file, "certificate")).path
            if let problem = InputFile.check(path) {
                throw APNsClientError(.credentials, "app \(app.name): certificate \(path) \(problem)")
            }
            authentication = .certificate(
                path: path,
                password: try password.map { value throws(APNsClientError) in try resolve(value, "password") }
            )
        }
        let caFile = try app.caFile.map { value throws(APNsClientError) in
            blame = value.location
            let path = paths.url(try resolvePath(value, "ca_file")).path
            if let problem = InputFile.check(path) {
                throw APNsClientError(.connect, "app \(app.name): ca_file \(path) \(problem)")
            }
            return path
        }
        var configuration = APNsClientConfiguration(
            host: host,
            port: port,
            authentication: authentication,
            caFile: caFile,
            connections: 1
        )
        configuration.clock = clock
        blame = app.proxy?.location
        configuration.proxy = try proxy(for: host, setting: app.proxy, environment: environment, app: app.name)
        // What a caller's `validate()` checks next is TLS's set-up: the CA file's, else the certificate's.
        blame = app.caFile?.location
        if blame == nil, case .certificate(let file, _) = app.credentials { blame = file.location }
        return (configuration, endpoint)
    }

    /// The HTTP proxy connections of app `app` to `host` tunnel through: pushcamp.yaml's `proxy:`,
    /// else `HTTPS_PROXY`, unless `NO_PROXY` names the host. A problem names the setting, never its
    /// value (it may hold a password).
    public static func proxy(
        for host: String,
        setting: ConfigString?,
        environment: [String: String],
        app: String
    ) throws(APNsClientError) -> HTTPProxy? {
        var configured: String?
        if let setting {
            switch setting.resolve(environment) {
            case .success(let text): configured = text
            case .failure(let error): throw APNsClientError(.connect, "app \(app): proxy: \(error.message)")
            }
        }
        switch HTTPProxy.resolve(for: host, configured: configured, environment: environment) {
        case .success(let proxy): return proxy
        case .failure(let error):
            let source = configured != nil ? "proxy" : "HTTPS_PROXY"
            throw APNsClientError(.connect, "app \(app): \(source): \(error.message)")
        }
    }
}

/// The credentials a send shares through the journal with the other nodes on it: the APNs app's
/// provider tokens, the Android app's access tokens.
struct SharedCredentials: Sendable {
    var items: [any SharedCredential]
    let clock: any WallClock

    /// Nil when there is nothing to share (a given transport, a certificate).
    init?(_ items: [(any SharedCredential)?], clock: any WallClock) {
        self.items = items.compactMap { $0 }
        self.clock = clock
        if self.items.isEmpty { return nil }
    }

    func synchronize(through journal: any Journal) async {
        for item in items { await item.synchronize(through: journal) }
    }

    /// Shares what the credentials learnt since they last synchronized (a refusal of a provider
    /// token as too frequent): at the end of a send, before the process may exit.
    func shareNews(through journal: any Journal) async {
        for item in items where item.hasNews { await item.synchronizeHold(through: journal) }
    }

    /// Adopts the holds other nodes stored, and says why nothing can be sent now, if so.
    func heldBack(through journal: any Journal) async -> String? {
        for item in items { await item.synchronizeHold(through: journal) }
        return items.lazy.compactMap(\.heldBack).first
    }

    func keepSynchronized(through journal: any Journal) async {
        await withDiscardingTaskGroup { group in
            // One child per credential, each sharing its token until the send ends and cancels them.
            for item in items { group.addTask { await item.keepSynchronized(through: journal, clock: clock) } }
        }
    }
}

extension SharedCredential {
    /// Shares this credential through `journal` (every node on it uses one; see `synchronize`).
    /// Failures are left to the next call: without the store, each node goes on as on one machine.
    package func synchronize(through journal: any Journal) async {
        await synchronizeHold(through: journal)
        let name = sharedName
        try? await synchronize(
            read: { try await journal.providerToken(for: name) },
            replace: { replacing, token in
                try await journal.replaceProviderToken(for: name, replacing: replacing, with: token)
            },
            lookahead: 120
        )
    }

    /// Shares a hold learnt here, and adopts one stored by another node (see `synchronizeHold`).
    /// Failures are left to the next call.
    func synchronizeHold(through journal: any Journal) async {
        let name = sharedName
        try? await synchronizeHold(
            read: { try await journal.providerTokenHold(for: name) },
            hold: { try await journal.holdProviderToken(for: name, seconds: $0) },
            replace: { replacing, token in
                try await journal.replaceProviderToken(for: name, replacing: replacing, with: token)
            }
        )
    }

    /// `synchronize(through:)` every `interval` seconds until cancelled: while a send lasts, so
    /// the refresh of its token (about every 50 minutes) is one node's, adopted by the others;
    /// and within `step` seconds of news (a refusal as too frequent) the other nodes must hear.
    func keepSynchronized(
        through journal: any Journal,
        clock: any WallClock,
        every interval: Double = 60,
        step: Double = 2
    ) async {
        var next = clock.now() + interval
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: min(step, interval))
            } catch {
                return
            }
            if hasNews {
                await synchronizeHold(through: journal)
            } else if clock.now() >= next {
                next = clock.now() + interval
                await synchronize(through: journal)
            }
        }
    }
}

extension SendRun {
    /// The key id in a key file's name as Apple names the download (`AuthKey_2X9R4HXF34.p8`), or
    /// nil for a file named otherwise.
    package static func keyID(inFileName path: String) -> String? {
        let name = (path as NSString).lastPathComponent
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        let id = name.dropFirst("AuthKey_".count).dropLast(".p8".count)
        guard id.count == 10, id.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else { return nil }
        return String(id)
    }
}
