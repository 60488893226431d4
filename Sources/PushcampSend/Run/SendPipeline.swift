import Foundation
import PushcampAPNs
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSimulator

/// Builds the send pipeline in one place: `LoadedCampaign → Planner → Executor → APNs transport`.
/// The transport and the send time are injectable; `send` and `rehearse` differ only in the transport.
public enum SendPipeline {
    /// A connection pool for the campaign's app: its endpoint (or Apple's host for its environment),
    /// credentials resolved from `${env:…}` with paths relative to the project root.
    public static func transport(
        for campaign: LoadedCampaign,
        paths: ProjectPaths,
        environment: [String: String] = ProcessInfo.processInfo.environment
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
            let cache =
                (campaign.journalPath as NSString).deletingLastPathComponent + "/provider-token-\(teamID)-\(keyID).jwt"
            authentication = .providerToken(
                try ProviderTokens(teamID: teamID, keyID: keyID, keyFile: path, cacheFile: cache)
            )
        case .certificate(let file, let password):
            let path = paths.url(try resolve(file, "certificate")).path
            authentication = .certificate(
                path: path,
                password: try password.map { value throws(APNsClientError) in try resolve(value, "password") }
            )
        }
        let caFile = try app.caFile.map { value throws(APNsClientError) in paths.url(try resolve(value, "ca_file")).path
        }
        let configuration = APNsClientConfiguration(
            host: host,
            port: port,
            authentication: authentication,
            caFile: caFile,
            connections: campaign.connections
        )
        return (try APNsConnectionPool(configuration: configuration), endpoint)
    }

    /// The executor for `campaign`; with a journal, every recipient's state is recorded, and
    /// `resume` (read from that journal) picks up an unfinished run.
    public static func executor(
        campaign: LoadedCampaign,
        transport: any PushTransport,
        endpoint: String,
        journal: RunJournal? = nil,
        resume: ResumePoint = ResumePoint(),
        history: DeliveryHistory? = nil,
        only: SeqSet? = nil
    ) -> Executor {
        var planner = Planner(campaign: campaign, sampleLimit: 0)
        planner.history = history
        var options = Executor.Options(
            rate: campaign.rate.perSecond,
            retry: RetryPolicy(campaign.retry),
            endpoint: endpoint
        )
        options.journal = journal
        options.resume = resume
        options.only = only
        return Executor(planner: planner, transport: transport, options: options)
    }
}
