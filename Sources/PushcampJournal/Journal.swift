/// Everything a journal keeps, one protocol per concern: runs and their recipients
/// (`JournalStore`), dead tokens and delivery history (`TokenHistoryStore`), schedule slots (`ScheduleSlotStore`), trigger
/// firings (`TriggerFiringStore`), App Store notifications and subscriptions
/// (`NotificationStore`), leases (`LeaseStore`), the provider token the nodes share
/// (`ProviderTokenStore`), runs cut into slices for several workers (`SliceStore`), broadcast
/// channels (`ChannelStore`), engagement with runs (`EngagementStore`), retention (`RetentionStore`). `MemoryJournal`, `SQLiteJournal` and
/// PostgreSQL's journal keep all of them, so a caller holds
/// one `any Journal` and never asks a store whether it can do something.
public typealias Journal = JournalStore & TokenHistoryStore & ScheduleSlotStore & TriggerFiringStore
    & NotificationStore & LeaseStore & ProviderTokenStore & SliceStore & ChannelStore
    & EngagementStore & RetentionStore
