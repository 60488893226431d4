import Foundation
import PushcampModel
import PushcampPlanner
import PushcampPostgres

/// The campaign files `serve` watches: every `*.yaml` and `*.yml` under the configured folders
/// (not recursively), read again when a file's size or modification time changes. A file that does
/// not validate is kept as invalid with its first error; the others go on. A campaign whose file
/// stops validating keeps its last schedule (or trigger), so each of its slots is still decided,
/// and recorded as skipped (`invalid`) when its file cannot be sent.
struct CampaignCatalog {
    struct Entry {
        var path: String
        var stamp: Stamp
        var id: String?
        var schedule: ScheduleSpec?
        var trigger: TriggerRule?
        /// The app it sends with (its credentials are checked while it is scheduled or triggered).
        var app: AppConfig?
        /// Its Android app, when it sends to one.
        var android: FCMAppConfig? = nil
        /// The channel a broadcast campaign sends to.
        var channel: String?
        var loadError: String?
        /// Set when an earlier file (by path) defines the same campaign.
        var duplicateOf: String?

        var error: String? {
            loadError
                ?? duplicateOf.map { "campaign \(id ?? "") is also defined in \($0); campaign ids must be unique" }
        }
    }

    struct Stamp: Equatable {
        var size: Int
        var modified: Double
    }

    let paths: ProjectPaths
    let folders: [String]
    let loader: CampaignLoader
    private(set) var entries: [String: Entry] = [:]

    init(paths: ProjectPaths, folders: [String]) {
        self.paths = paths
        self.folders = folders
        loader = CampaignLoader(workingDirectory: paths.root, servers: PostgresAudiences())
    }

    /// Scheduled campaigns by id (the first file wins when two name the same campaign), with the
    /// last valid schedule of those whose file stopped validating.
    var scheduled: [String: (path: String, schedule: ScheduleSpec)] {
        var result: [String: (path: String, schedule: ScheduleSpec)] = [:]
        for entry in entries.values.sorted(by: { $0.path < $1.path }) {
            guard entry.duplicateOf == nil, let id = entry.id, let schedule = entry.schedule, result[id] == nil else {
                continue
            }
            result[id] = (entry.path, schedule)
        }
        return result
    }

    /// Trigger campaigns by id, as `scheduled`.
    var triggers: [String: (path: String, rule: TriggerRule)] {
        var result: [String: (path: String, rule: TriggerRule)] = [:]
        for entry in entries.values.sorted(by: { $0.path < $1.path }) {
            guard entry.duplicateOf == nil, let id = entry.id, let rule = entry.trigger, result[id] == nil else {
                continue
            }
            result[id] = (entry.path, rule)
        }
        return result
    }

    /// An app a campaign sends with: APNs' or FCM's.
    enum SendingApp {
        case apns(AppConfig)
        case fcm(FCMAppConfig)
    }

    /// The apps scheduled and trigger campaigns send with, by name, with those campaigns' ids.
    var sendingApps: [String: (app: SendingApp, campaigns: [String])] {
        var result: [String: (app: SendingApp, campaigns: [String])] = [:]
        let campaigns = Set(scheduled.keys).union(triggers.keys)
        for entry in entries.values.sorted(by: { $0.path < $1.path }) {
            guard entry.duplicateOf == nil, let id = entry.id, campaigns.contains(id) else { continue }
            if let app = entry.app { result[app.name, default: (.apns(app), [])].campaigns.append(id) }
            if let app = entry.android { result[app.name, default: (.fcm(app), [])].campaigns.append(id) }
        }
        return result
    }

    /// The scheduled broadcast campaigns on each channel: the steps of its sequences, which go one
    /// at a time.
    var sequences: [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        let scheduled = self.scheduled
        for entry in entries.values where entry.duplicateOf == nil {
            guard let id = entry.id, let channel = entry.channel, scheduled[id]?.path == entry.path else { continue }
            result[channel, default: []].insert(id)
        }
        return result
    }

    var invalid: [(file: String, error: String)] {
        entries.values.compactMap { entry in entry.error.map { (entry.path, $0) } }.sorted { $0.file < $1.file }
    }

    /// Looks at the folders again; returns whether anything changed.
    mutating func refresh() -> Bool {
        var seen: Set<String> = []
        var changed = false
        for path in paths.campaignFiles(in: folders).map(\.path) {
            guard let stamp = Self.stamp(path) else { continue }
            seen.insert(path)
            if entries[path]?.stamp == stamp { continue }
            var entry = read(path, stamp: stamp)
            if entry.loadError != nil, let previous = entries[path], previous.loadError == nil {
                entry.id = previous.id
                entry.schedule = previous.schedule
                entry.trigger = previous.trigger
                entry.app = previous.app
                entry.channel = previous.channel
            }
            entries[path] = entry
            changed = true
        }
        for path in entries.keys where !seen.contains(path) {
            entries[path] = nil
            changed = true
        }
        if changed { markDuplicates() }
        return changed
    }

    /// The campaign at `path` loaded now, as a slot fires: the file as it is at that moment.
    func load(_ path: String) -> (LoadedCampaign?, String?) {
        let result = loader.load(path)
        let error = result.diagnostics.first { $0.severity == .error }
        guard let campaign = result.campaign, error == nil else {
            return (nil, error?.description ?? "\(path) does not load")
        }
        return (campaign, nil)
    }

    private func read(_ path: String, stamp: Stamp) -> Entry {
        let (campaign, error) = load(path)
        return Entry(
            path: path,
            stamp: stamp,
            id: campaign?.id,
            schedule: campaign?.schedule,
            trigger: campaign.flatMap(TriggerRule.init),
            app: campaign?.app,
            android: campaign?.android?.app,
            channel: campaign?.broadcast?.channel.name,
            loadError: error
        )
    }

    private mutating func markDuplicates() {
        var owners: [String: String] = [:]
        for path in entries.keys.sorted() {
            entries[path]?.duplicateOf = nil
            guard let id = entries[path]?.id else { continue }
            if let owner = owners[id] {
                entries[path]?.duplicateOf = owner
            } else {
                owners[id] = path
            }
        }
    }

    private static func stamp(_ path: String) -> Stamp? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            (attributes[.type] as? FileAttributeType) == .typeRegular
        else { return nil }
        return Stamp(
            size: (attributes[.size] as? Int) ?? 0,
            modified: (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        )
    }
}
