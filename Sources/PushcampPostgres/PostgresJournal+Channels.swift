import PostgresNIO
import PushcampJournal

/// Broadcast channels, shared by every node on the journal.
extension PostgresJournal: ChannelStore {
    public func channels() async throws(JournalError) -> [ChannelRecord] {
        let rows = try await rows(
            """
            SELECT name, bundle_id, environment, channel_id, storage_policy, created_at
            FROM broadcast_channel WHERE deleted_at IS NULL ORDER BY id
            """
        )
        var channels: [ChannelRecord] = []
        for row in rows {
            channels.append(
                ChannelRecord(
                    name: try decode(row, "name", String.self),
                    bundleID: try decode(row, "bundle_id", String.self),
                    environment: try decode(row, "environment", String.self),
                    channelID: try decode(row, "channel_id", String.self),
                    storagePolicy: Int(try decode(row, "storage_policy", Int32.self)),
                    createdAt: try decode(row, "created_at", Double.self)
                )
            )
        }
        return channels
    }

    public func recordChannel(_ channel: ChannelRecord) async throws(JournalError) -> Bool {
        let policy = Int32(channel.storagePolicy)
        let rows = try await rows(
            """
            INSERT INTO broadcast_channel (name, bundle_id, environment, channel_id, storage_policy, created_at)
            VALUES (\(channel.name), \(channel.bundleID), \(channel.environment), \(channel.channelID), \(policy),
                \(channel.createdAt))
            ON CONFLICT (name) WHERE deleted_at IS NULL DO NOTHING
            RETURNING id
            """
        )
        return !rows.isEmpty
    }

    public func retireChannel(named name: String, channelID: String?, now: Double) async throws(JournalError) -> Bool {
        let rows = try await rows(
            """
            UPDATE broadcast_channel SET deleted_at = \(now)
            WHERE name = \(name) AND deleted_at IS NULL AND (\(channelID)::text IS NULL OR channel_id = \(channelID))
            RETURNING id
            """
        )
        return !rows.isEmpty
    }
}
