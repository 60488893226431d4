import PushcampAPNsCore
import PushcampJournal
import PushcampModel

/// Carries out a `ChannelPlan` (`pushcamp channels apply`): creates the missing channels and
/// records each id at once, deletes at APNs and retires those no longer declared. Idempotent, and
/// convergent whatever an earlier apply left half done or another apply does at the same time:
///
/// - a channel is retired by its id, so an apply that planned on an old record never retires the
///   channel another apply just recorded for the name;
/// - of two channels created for one name, the first recorded stays and the other is deleted;
/// - deleting a channel APNs no longer has (deleted by the other apply, or before a failure)
///   still retires it;
/// - each management request is retried (`ChannelClient`) before the apply gives up, and an apply
///   that gave up is finished by the next.
///
/// A create whose answer was lost may have made a channel nobody recorded: `channels list` shows
/// it as an orphan, `channels delete --id` removes it.
public enum ChannelApply {
    /// What the apply did, step by step, as it went.
    public enum Step: Sendable, Equatable {
        case created(name: String, channelID: String)
        /// Another apply recorded a channel for the name first: the one made here was deleted.
        case duplicateDeleted(name: String, channelID: String)
        /// Deleted at APNs (`found: false`: APNs no longer had it) and retired.
        case deleted(name: String, channelID: String, found: Bool)
    }

    /// How many channels were created and deleted.
    public struct Summary: Sendable, Equatable {
        public var created = 0
        public var deleted = 0
    }

    /// Applies `plan` (times from `clock`); `client` gives the management client of a place; each step is told to
    /// `progress` once done. Throws the client's `ChannelClient.Failure`, the journal's
    /// `JournalError`, or what `client` throws; what was done before stays done.
    public static func apply(
        _ plan: ChannelPlan,
        journal: any ChannelStore,
        clock: any WallClock = SystemWallClock(),
        client: (ChannelPlan.Place) async throws -> ChannelClient,
        progress: (Step) -> Void = { _ in }
    ) async throws -> Summary {
        var summary = Summary()
        for entry in plan.entries where entry.action != .keep {
            let client = try await client(entry.place)
            if let record = entry.recorded, entry.action == .delete || entry.action == .recreate {
                var found = false
                if entry.action == .delete {
                    found = try await client.delete(record.channelID)
                }
                _ = try await journal.retireChannel(named: record.name, channelID: record.channelID, now: clock.now())
                if entry.action == .delete {
                    summary.deleted += 1
                    progress(.deleted(name: record.name, channelID: record.channelID, found: found))
                }
            }
            guard entry.action == .create || entry.action == .recreate else { continue }
            let id = try await client.create(storage: entry.storage)
            let record = ChannelRecord(
                name: entry.name,
                bundleID: entry.place.bundleID,
                environment: entry.place.environment.rawValue,
                channelID: id,
                storagePolicy: entry.storage.policy,
                createdAt: clock.now()
            )
            let kept: Bool
            do {
                kept = try await journal.recordChannel(record)
            } catch {
                // Not recorded, not kept: the channel is deleted again, so no id is lost.
                _ = try? await client.delete(id)
                throw error
            }
            if kept {
                summary.created += 1
                progress(.created(name: entry.name, channelID: id))
            } else {
                _ = try await client.delete(id)
                progress(.duplicateDeleted(name: entry.name, channelID: id))
            }
        }
        return summary
    }
}
