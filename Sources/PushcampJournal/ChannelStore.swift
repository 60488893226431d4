import GRDB
import Synchronization

/// A broadcast channel Apple created for the project: its declared name, Apple's id for it, and
/// where it lives. Kept in the journal so ids are never copied by hand between files, and every
/// node on a shared journal sends to the same channel.
public struct ChannelRecord: Sendable, Hashable {
    /// The name declared in pushcamp.yaml (`channels: NAME:`).
    public var name: String
    public var bundleID: String
    /// `production` or `sandbox`.
    public var environment: String
    /// Apple's id (base64), from the `apns-channel-id` header of the create answer.
    public var channelID: String
    /// 0: APNs stores no message; 1: it stores the most recent one.
    public var storagePolicy: Int
    /// Seconds since 1970.
    public var createdAt: Double

    public init(
        name: String,
        bundleID: String,
        environment: String,
        channelID: String,
        storagePolicy: Int,
        createdAt: Double
    ) {
        self.name = name
        self.bundleID = bundleID
        self.environment = environment
        self.channelID = channelID
        self.storagePolicy = storagePolicy
        self.createdAt = createdAt
    }
}

/// The channels created and not yet deleted, by name.
public protocol ChannelStore: Sendable {
    /// Every live channel, oldest first.
    func channels() async throws(JournalError) -> [ChannelRecord]
    /// Records a channel Apple created. False, and nothing changed, when a live channel of that
    /// name is recorded already (another node's apply won).
    func recordChannel(_ channel: ChannelRecord) async throws(JournalError) -> Bool
    /// Marks the live channel `name` deleted at `now` (its row stays, as history); with a
    /// `channelID`, only while that is the live channel's id (another apply may have replaced it
    /// meanwhile). False when there is no such live channel.
    func retireChannel(named name: String, channelID: String?, now: Double) async throws(JournalError) -> Bool
}

extension MemoryJournal: ChannelStore {
    public func channels() async throws(JournalError) -> [ChannelRecord] {
        state.withLock { $0.channels }
    }

    public func recordChannel(_ channel: ChannelRecord) async throws(JournalError) -> Bool {
        state.withLock { state in
            guard !state.channels.contains(where: { $0.name == channel.name }) else { return false }
            state.channels.append(channel)
            return true
        }
    }

    public func retireChannel(named name: String, channelID: String?, now: Double) async throws(JournalError) -> Bool {
        state.withLock { state in
            guard
                let index = state.channels.firstIndex(where: {
                    $0.name == name && (channelID == nil || $0.channelID == channelID)
                })
            else { return false }
            state.channels.remove(at: index)
            return true
        }
    }
}

extension SQLiteJournal: ChannelStore {
    static let channelsSchema = """
        -- Broadcast channels Apple created for the project, by declared name; a deleted one keeps
        -- its row with deleted_at set, and its name may be created again.
        CREATE TABLE broadcast_channel (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            environment TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            storage_policy INTEGER NOT NULL,
            created_at REAL NOT NULL,
            deleted_at REAL
        );
        CREATE UNIQUE INDEX broadcast_channel_live ON broadcast_channel(name) WHERE deleted_at IS NULL;
        """

    public func channels() async throws(JournalError) -> [ChannelRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM broadcast_channel WHERE deleted_at IS NULL ORDER BY id"
            ).map { row in
                ChannelRecord(
                    name: row["name"],
                    bundleID: row["bundle_id"],
                    environment: row["environment"],
                    channelID: row["channel_id"],
                    storagePolicy: row["storage_policy"],
                    createdAt: row["created_at"]
                )
            }
        }
    }

    public func recordChannel(_ channel: ChannelRecord) async throws(JournalError) -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO broadcast_channel
                        (name, bundle_id, environment, channel_id, storage_policy, created_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (name) WHERE deleted_at IS NULL DO NOTHING
                    """,
                arguments: [
                    channel.name, channel.bundleID, channel.environment, channel.channelID, channel.storagePolicy,
                    channel.createdAt,
                ]
            )
            return db.changesCount == 1
        }
    }

    public func retireChannel(named name: String, channelID: String?, now: Double) async throws(JournalError) -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE broadcast_channel SET deleted_at = ?
                    WHERE name = ? AND deleted_at IS NULL AND (? IS NULL OR channel_id = ?)
                    """,
                arguments: [now, name, channelID, channelID]
            )
            return db.changesCount == 1
        }
    }
}
