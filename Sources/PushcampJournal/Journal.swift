/// Everything a journal keeps, one protocol per concern: runs and their recipients with dead
/// tokens and delivery history (`JournalStore`), schedule slots (`ScheduleSlotStore`), trigger
/// firings (`TriggerFiringStore`), App Store notifications and subscriptions
/// (`NotificationStore`). `MemoryJournal` and `SQLiteJournal` keep all of them, so a caller holds
/// one `any Journal` and never asks a store whether it can do something.
public typealias Journal = JournalStore & ScheduleSlotStore & TriggerFiringStore & NotificationStore
