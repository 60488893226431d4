import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner

/// A project's Live Activity channels where they are declared (pushcamp.yaml), recorded (the
/// journal) and held (APNs), with a channel-management client per place, made on demand: what
/// `pushcamp channels` plans, applies, lists and deletes with. `close()` ends the clients.
public final class ProjectChannels {
    /// Why a channel command could not go on.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable {
            /// APNs refused a request or could not be reached; or no app can reach a place.
            case apns
            /// The journal could not be read or written.
            case journal
            /// The command named something the project does not have.
            case project
        }

        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    public let project: Project
    public let paths: ProjectPaths
    public let journal: any Journal
    /// Where provider tokens are cached (the journal's folder).
    let tokenCache: String
    let environment: [String: String]
    let clock: any WallClock
    private var clients: [ChannelPlan.Place: ChannelClient] = [:]

    public init(
        project: Project,
        paths: ProjectPaths,
        journal: any Journal,
        tokenCache: String,
        environment: [String: String],
        clock: any WallClock = SystemWallClock()
    ) {
        self.project = project
        self.paths = paths
        self.journal = journal
        self.tokenCache = tokenCache
        self.environment = environment
        self.clock = clock
    }

    /// Each declaration with its app's bundle id.
    public var declared: [(spec: ChannelSpec, bundleID: String)] {
        project.channels.compactMap { spec in project.apps[spec.app].map { (spec, $0.topic) } }
    }

    /// Every place a channel is declared or recorded.
    func places(recorded: [ChannelRecord]) -> [ChannelPlan.Place] {
        var places = Set(declared.map { ChannelPlan.Place(bundleID: $0.bundleID, environment: $0.spec.environment) })
        for record in recorded { places.insert(ChannelPlan.place(of: record)) }
        return places.sorted()
    }

    /// The client for `place`, with the credentials of the first app of that bundle id.
    public func client(_ place: ChannelPlan.Place) async throws(Failure) -> ChannelClient {
        if let client = clients[place] { return client }
        guard
            let app = project.appNames.compactMap({ project.apps[$0] }).first(where: { $0.topic == place.bundleID })
        else {
            throw Failure(
                kind: .apns,
                message: "error: no app in pushcamp.yaml has the bundle id \(place.bundleID) of channels in the "
                    + "journal; add the app back to manage them"
            )
        }
        if let problem = SendRun.credentialsProblem(of: app, paths: paths, environment: environment) {
            throw Failure(
                kind: .apns,
                message: (problem.location.map { "\($0): " } ?? "") + "error: \(problem.message)"
            )
        }
        do throws(APNsClientError) {
            let client = try await ChannelClient.make(
                app: app,
                environment: place.environment,
                paths: paths,
                variables: environment,
                tokenCache: tokenCache,
                journal: journal,
                clock: clock
            )
            clients[place] = client
            return client
        } catch {
            throw Failure(kind: .apns, message: "error: \(error.message)")
        }
    }

    /// The plan: the declarations against the journal and, when `askingAPNs`, what APNs lists per
    /// place (nil when it was not asked).
    public func plan(askingAPNs: Bool) async throws(Failure) -> (ChannelPlan, apple: [ChannelPlan.Place: [String]]?) {
        let recorded = try await Self.journal { () async throws(JournalError) in try await journal.channels() }
        var apple: [ChannelPlan.Place: [String]]?
        if askingAPNs {
            var lists: [ChannelPlan.Place: [String]] = [:]
            for place in places(recorded: recorded) {
                let client = try await self.client(place)
                lists[place] = try await Self.apns { () async throws(ChannelClient.Failure) in try await client.list() }
            }
            apple = lists
        }
        return (ChannelPlan.make(declared: declared, recorded: recorded, apple: apple), apple)
    }

    /// Carries `plan` out (`ChannelApply`), telling `step` of each change.
    public func apply(
        _ plan: ChannelPlan,
        step: (ChannelApply.Step) -> Void
    ) async throws(Failure) -> ChannelApply.Summary {
        do {
            return try await ChannelApply.apply(
                plan,
                journal: journal,
                clock: clock,
                client: { place in try await self.client(place) },
                progress: step
            )
        } catch let failure as Failure {
            throw failure
        } catch let failure as ChannelClient.Failure {
            throw Failure(kind: .apns, message: "error: \(failure.message)")
        } catch let error as JournalError {
            throw Failure(kind: .journal, message: "error: the journal: \(error.message)")
        } catch {
            throw Failure(kind: .apns, message: "error: \(error)")
        }
    }

    /// Deletes the channel `id` of `app` that no journal records (in `environment`, or the app's);
    /// whether APNs had it, and where it was.
    public func deleteOrphan(
        _ id: String,
        app: String,
        environment: APNsEnvironment?
    ) async throws(Failure) -> (found: Bool, place: ChannelPlan.Place) {
        guard let config = project.apps[app] else {
            throw Failure(
                kind: .project,
                message: "error: --app \(app.escapingControlCharacters): pushcamp.yaml has no such app (it has "
                    + "\(project.appNames.joined(separator: ", ")))"
            )
        }
        let place = ChannelPlan.Place(bundleID: config.topic, environment: environment ?? config.environment)
        let client = try await client(place)
        let found = try await Self.apns { () async throws(ChannelClient.Failure) in try await client.delete(id) }
        return (found, place)
    }

    /// Deletes the recorded channel `name` at APNs and retires it in the journal; the record, and
    /// whether APNs still had it.
    public func delete(named name: String) async throws(Failure) -> (record: ChannelRecord, found: Bool) {
        let recorded = try await Self.journal { () async throws(JournalError) in try await journal.channels() }
        guard let record = recorded.first(where: { $0.name == name }) else {
            throw Failure(
                kind: .journal,
                message: "error: no channel named \(name.escapingControlCharacters) is recorded"
                    + Suggestion.didYouMean(name, in: recorded.map(\.name))
            )
        }
        let client = try await client(ChannelPlan.place(of: record))
        let found = try await Self.apns { () async throws(ChannelClient.Failure) in
            try await client.delete(record.channelID)
        }
        _ = try await Self.journal { () async throws(JournalError) in
            try await journal.retireChannel(named: name, channelID: record.channelID, now: clock.now())
        }
        return (record, found)
    }

    public func close() async {
        for client in clients.values { await client.close() }
        clients = [:]
    }

    /// Runs `body` with these channels and closes their clients when it ends, thrown or not.
    public func use<T>(_ body: (ProjectChannels) async throws(Failure) -> T) async throws(Failure) -> T {
        do {
            let result = try await body(self)
            await close()
            return result
        } catch {
            await close()
            throw error
        }
    }

    private static func apns<T>(
        _ body: () async throws(ChannelClient.Failure) -> T
    ) async throws(Failure) -> T {
        do throws(ChannelClient.Failure) {
            return try await body()
        } catch {
            throw Failure(kind: .apns, message: "error: \(error.message)")
        }
    }

    private static func journal<T>(_ body: () async throws(JournalError) -> T) async throws(Failure) -> T {
        do throws(JournalError) {
            return try await body()
        } catch {
            throw Failure(kind: .journal, message: "error: the journal: \(error.message)")
        }
    }
}
