import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampModel
import PushcampPlanner

extension SendRun {
    /// A connection pool for the campaign's app: its endpoint (or Apple's host for its environment),
    /// credentials resolved from `${env:…}` with paths relative to the project root. Reads the key or
    /// certificate now, so a missing or unreadable one stops the send before a run exists.
    /// Provider tokens come from `owners`, the one owner per key that every run of the process
    /// asks; `tokenCache` is where they are kept between processes (beside the journal).
    static func appTransport(
        for campaign: LoadedCampaign,
        paths: ProjectPaths,
        environment: [String: String],
        clock: any WallClock,
        owners: ProviderTokenOwners,
        tokenCache: String?
    ) throws(APNsClientError) -> (APNsConnectionPool, endpoint: String) {
        let app = campaign.app
        func resolve(_ value: ConfigString, _ what: String) throws(APNsClientError) -> String {
            switch value.resolve(environment) {
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
            let path = paths.url(try resolve(keyFile, "key_file")).path
            // Kept beside the journal, so a send started again soon after reuses the token.
            authentication = .providerToken(
                try owners.tokens(
                    teamID: teamID,
                    keyID: keyID,
                    keyFile: path,
                    clock: clock,
                    cacheDirectory: tokenCache
                )
            )
        case .certificate(let file, let password):
            let path = paths.url(try resolve(file, "certificate")).path
            if let problem = InputFile.check(path) {
                throw APNsClientError(.credentials, "app \(app.name): certificate \(path) \(problem)")
            }
            authentication = .certificate(
                path: path,
                password: try password.map { value throws(APNsClientError) in try resolve(value, "password") }
            )
        }
        let caFile = try app.caFile.map { value throws(APNsClientError) in
            let path = paths.url(try resolve(value, "ca_file")).path
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
            connections: campaign.connections
        )
        configuration.clock = clock
        return (try APNsConnectionPool(configuration: configuration), endpoint)
    }
}
