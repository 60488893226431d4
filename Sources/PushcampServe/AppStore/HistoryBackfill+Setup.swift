import Foundation
import Logging
import PushcampAPNsCore
import PushcampAppStore
import PushcampJournal
import PushcampModel
import PushcampPlanner

extension HistoryBackfill {
    /// What a back-fill runs with: the app asked about, the App Store Server API with its key, and
    /// a receiver that takes notifications in as `serve` does.
    public struct Setup: Sendable {
        public var app: String
        public var api: AppStoreServerAPI
        public var receiver: AppStoreReceiver
    }

    /// Why a back-fill cannot start (the message names the key of pushcamp.yaml at fault).
    public struct SetupError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The set-up for `app` (or the one app with `app_store.api`), asking Apple's `sandbox` host or
    /// the production one, storing into `store`; with `fireTriggers`, trigger firings are recorded
    /// for the campaigns `serve` watches.
    public static func setUp(
        project: Project,
        paths: ProjectPaths,
        app: String?,
        sandbox: Bool,
        fireTriggers: Bool,
        store: any Journal,
        environment: [String: String],
        logger: Logger
    ) throws(SetupError) -> Setup {
        let withAPI = project.appNames.filter { project.apps[$0]?.appStore?.api != nil }
        guard let name = app ?? (withAPI.count == 1 ? withAPI[0] : nil) else {
            throw SetupError(
                message: withAPI.isEmpty
                    ? "error: no app in pushcamp.yaml has app_store.api (issuer_id, key_id, key_file); see docs/app-store.md"
                    : "error: several apps have app_store.api (\(withAPI.joined(separator: ", "))); name one with --app"
            )
        }
        guard let config = project.apps[name]?.appStore, let api = config.api else {
            throw SetupError(
                message: "error: app \(name) has no app_store.api key in pushcamp.yaml; see docs/app-store.md"
            )
        }
        let keyPath: String
        switch api.keyFile.resolve(environment) {
        case .success(let resolved): keyPath = paths.url(resolved).path
        case .failure(let error):
            throw SetupError(message: "error: apps.\(name).app_store.api.key_file: \(error.message)")
        }
        let server: AppStoreServerAPI
        do throws(SigningKeyFile.Problem) {
            server = try AppStoreServerAPI(
                issuerID: api.issuerID,
                keyID: api.keyID,
                keyFile: keyPath,
                bundleID: config.bundleID,
                baseURL: api.endpoint ?? (sandbox ? AppStoreServerAPI.sandbox : AppStoreServerAPI.production)
            )
        } catch {
            throw SetupError(message: "error: apps.\(name).app_store.api: \(error.description)")
        }
        do {
            let intake = try AppStoreReceiver.requiredIntake(
                for: project,
                paths: paths,
                environment: environment,
                logger: logger
            )
            let receiver = AppStoreReceiver(
                intake: intake,
                store: store,
                metrics: ServeMetrics(),
                logger: logger,
                triggers: fireTriggers
                    ? TriggerTable(paths: paths, folders: project.serve.campaignFolders) : TriggerTable()
            )
            return Setup(app: name, api: server, receiver: receiver)
        } catch let error as JournalError {
            throw SetupError(message: "error: \(error.message)")
        } catch {
            throw SetupError(message: "error: \(error)")
        }
    }
}
