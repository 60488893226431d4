import PushcampJournal
import PushcampModel
import PushcampServe
import Testing

@Suite("Scheduler state machine (virtual time)")
struct SchedulerStateMachineTests {
    typealias Machine = SchedulerStateMachine
    static let t0: Int64 = 1_800_000_000  // 2027-01-15T08:00:00Z, a multiple of 10 minutes

    func every(
        _ seconds: Int64,
        within: Int64 = 3600,
        mode: CatchUp.Mode = .latest,
        overlap: Overlap = .skip
    )
        -> ScheduleSpec
    {
        ScheduleSpec(
            rule: .every(TimeSpan(seconds: seconds)),
            catchUp: CatchUp(within: TimeSpan(seconds: within), mode: mode),
            overlap: overlap
        )
    }

    @Test func eachSlotFiresOnceAsTimeGoesBy() {
        var machine = Machine(startedAt: Self.t0)
        machine.schedule("news", every(60), cursor: Self.t0, recorded: false)
        #expect(machine.nextDue == Self.t0 + 60)
        #expect(machine.tick(now: Self.t0 + 59).isEmpty)
        #expect(machine.tick(now: Self.t0 + 60) == [.fire(campaign: "news", slot: Self.t0 + 60)])
        // Ticking again within the same slot decides nothing new.
        #expect(machine.tick(now: Self.t0 + 61).isEmpty)
        #expect(machine.runEnded("news", now: Self.t0 + 70).isEmpty)
        #expect(machine.tick(now: Self.t0 + 120) == [.fire(campaign: "news", slot: Self.t0 + 120)])
        #expect(machine.nextDue == Self.t0 + 180)
    }

    @Test func afterDowntimeLatestFiresTheNewestSlotInTheWindow() {
        // Down from t0 to t0 + 3 h; slots every 10 minutes; catch up within 1 h.
        var machine = Machine(startedAt: Self.t0 + 3 * 3600)
        machine.schedule("news", every(600), cursor: Self.t0, recorded: true)
        let now = Self.t0 + 3 * 3600
        #expect(
            machine.tick(now: now) == [
                // t0+10m … t0+1h50m: 11 slots older than the window.
                .skip(
                    campaign: "news",
                    first: Self.t0 + 600,
                    through: Self.t0 + 7200 - 600,
                    count: 11,
                    reason: .missed
                ),
                .skip(
                    campaign: "news",
                    first: Self.t0 + 7200,
                    through: Self.t0 + 10800 - 600,
                    count: 6,
                    reason: .superseded
                ),
                .fire(campaign: "news", slot: Self.t0 + 10800),
            ]
        )
    }

    @Test func allFiresEveryMissedSlotInTheWindowOneAfterTheOther() {
        var machine = Machine(startedAt: Self.t0 + 1800)
        machine.schedule("news", every(600, within: 1100, mode: .all), cursor: Self.t0, recorded: true)
        let now = Self.t0 + 1800
        #expect(
            machine.tick(now: now) == [
                .skip(campaign: "news", first: Self.t0 + 600, through: Self.t0 + 600, count: 1, reason: .missed),
                .fire(campaign: "news", slot: Self.t0 + 1200),
            ]
        )
        #expect(machine.runEnded("news", now: now + 10) == [.fire(campaign: "news", slot: Self.t0 + 1800)])
        #expect(machine.runEnded("news", now: now + 20).isEmpty)
    }

    @Test func skipFiresOnlySlotsThatComeDueWhileServing() {
        let started = Self.t0 + 1500
        var machine = Machine(startedAt: started)
        machine.schedule("news", every(600, mode: .skip), cursor: Self.t0, recorded: true)
        #expect(
            machine.tick(now: started) == [
                .skip(campaign: "news", first: Self.t0 + 600, through: Self.t0 + 1200, count: 2, reason: .notCaughtUp)
            ]
        )
        #expect(machine.tick(now: Self.t0 + 1800) == [.fire(campaign: "news", slot: Self.t0 + 1800)])
    }

    @Test func aSlotDueWhileThePreviousRunSendsIsSkippedOrQueued() {
        var skipping = Machine(startedAt: Self.t0)
        skipping.schedule("news", every(60), cursor: Self.t0, recorded: true)
        #expect(skipping.tick(now: Self.t0 + 60) == [.fire(campaign: "news", slot: Self.t0 + 60)])
        #expect(
            skipping.tick(now: Self.t0 + 120) == [
                .skip(campaign: "news", first: Self.t0 + 120, through: Self.t0 + 120, count: 1, reason: .overlap)
            ]
        )
        #expect(skipping.runEnded("news", now: Self.t0 + 130).isEmpty)

        var queueing = Machine(startedAt: Self.t0)
        queueing.schedule("news", every(60, overlap: .queue), cursor: Self.t0, recorded: true)
        #expect(queueing.tick(now: Self.t0 + 60) == [.fire(campaign: "news", slot: Self.t0 + 60)])
        #expect(queueing.tick(now: Self.t0 + 120).isEmpty)
        #expect(queueing.nextSlot(of: "news") == Self.t0 + 120)
        #expect(queueing.runEnded("news", now: Self.t0 + 130) == [.fire(campaign: "news", slot: Self.t0 + 120)])
        // A queued slot that waited longer than the window is missed instead.
        #expect(queueing.tick(now: Self.t0 + 180).isEmpty)
        #expect(
            queueing.runEnded("news", now: Self.t0 + 180 + 3601) == [
                .skip(campaign: "news", first: Self.t0 + 180, through: Self.t0 + 180, count: 1, reason: .missed)
            ]
        )
    }

    @Test func anAtSlotFiresLateWithinTheWindowAndIsMissedAfter() {
        let at = ScheduleSpec(rule: .at(Timestamp(secondsSince1970: Self.t0)))
        var late = Machine(startedAt: Self.t0 + 1800)
        // First seen after its slot: still due (it is the campaign's one slot).
        late.schedule("launch", at, cursor: Self.t0 + 1800, recorded: false)
        #expect(late.tick(now: Self.t0 + 1800) == [.fire(campaign: "launch", slot: Self.t0)])
        #expect(late.runEnded("launch", now: Self.t0 + 1900).isEmpty)
        #expect(late.tick(now: Self.t0 + 99999).isEmpty)
        #expect(late.nextDue == nil)

        var tooLate = Machine(startedAt: Self.t0 + 7200)
        tooLate.schedule("launch", at, cursor: Self.t0 + 7200, recorded: false)
        #expect(
            tooLate.tick(now: Self.t0 + 7200) == [
                .skip(campaign: "launch", first: Self.t0, through: Self.t0, count: 1, reason: .missed)
            ]
        )
        // Recorded already (fired by another serve): nothing to do.
        var recorded = Machine(startedAt: Self.t0 + 10)
        recorded.schedule("launch", at, cursor: Self.t0, recorded: true)
        #expect(recorded.tick(now: Self.t0 + 10).isEmpty)
    }

    @Test func aYearOfMissedSecondsIsCountedWithoutWalkingEverySlot() {
        var machine = Machine(startedAt: Self.t0 + 365 * 86_400)
        machine.schedule("tick", every(1, within: 10), cursor: Self.t0, recorded: true)
        let now = Self.t0 + 365 * 86_400
        let actions = machine.tick(now: now)
        #expect(actions.count == 3)
        guard case .skip(_, let first, _, let count, .missed) = actions.first else {
            Issue.record("no missed slots: \(actions)")
            return
        }
        #expect(first == Self.t0 + 1)
        #expect(count == Machine.countLimit)
        #expect(actions.last == .fire(campaign: "tick", slot: now))
    }

    @Test func cronSlotsFollowTheZone() throws {
        let paris = try #require(Zone.named("Europe/Paris"))
        let cron = ScheduleSpec(rule: .cron(try CronExpression.parse("0 9 * * *").get()), zone: paris)
        // 2027-03-27T12:00Z; the next 09:00 Paris is the 28th, summer time (07:00Z).
        let now: Int64 = 1_806_148_800
        var machine = Machine(startedAt: now)
        machine.schedule("daily", cron, cursor: now, recorded: false)
        #expect(machine.nextDue == 1_806_217_200)
        #expect(machine.tick(now: 1_806_217_200) == [.fire(campaign: "daily", slot: 1_806_217_200)])
    }

    /// Issue #27, case 3: a daily digest killed while sending yesterday's slot, restarted today after
    /// today's slot came due. Yesterday's run is closed as expired when its slot is out of the
    /// catch-up window, and today's slot fires; within the window it is finished first (issue 43:
    /// its recipients are reached once), and today's slot, due while it sends, is an overlap.
    @Test func aStaleUnfinishedSlotRunIsClosedAndTheDueSlotFires() {
        let day: Int64 = 86_400
        let yesterday = (Self.t0 / day + 1) * day  // a daily slot (every 1d is anchored at midnight UTC)
        let today = yesterday + day
        // Restarted 10 minutes after today's slot, catch up within 1 hour: yesterday's is expired.
        var machine = Machine(startedAt: today + 600)
        machine.schedule("digest", every(day), cursor: yesterday, recorded: true)
        #expect(
            machine.unfinished("digest", slot: yesterday, newestFired: yesterday, now: today + 600) == [
                .close(campaign: "digest", slot: yesterday, reason: .expired)
            ]
        )
        #expect(machine.tick(now: today + 600) == [.fire(campaign: "digest", slot: today)])

        // Within a two-day window, yesterday's is not expired: it is finished, and today's, due
        // while it sends, is skipped as an overlap (or, with `overlap: queue`, fires after it).
        var wide = Machine(startedAt: today + 600)
        wide.schedule("digest", every(day, within: 2 * day), cursor: yesterday, recorded: true)
        #expect(
            wide.unfinished("digest", slot: yesterday, newestFired: yesterday, now: today + 600) == [
                .resume(campaign: "digest", slot: yesterday)
            ]
        )
        #expect(
            wide.tick(now: today + 600) == [
                .skip(campaign: "digest", first: today, through: today, count: 1, reason: .overlap)
            ]
        )
        var queued = Machine(startedAt: today + 600)
        queued.schedule("digest", every(day, within: 2 * day, overlap: .queue), cursor: yesterday, recorded: true)
        _ = queued.unfinished("digest", slot: yesterday, newestFired: yesterday, now: today + 600)
        #expect(queued.tick(now: today + 600).isEmpty)
        #expect(queued.runEnded("digest", now: today + 900) == [.fire(campaign: "digest", slot: today)])

        // A newer slot that fired already supersedes it too, even before the next is due.
        var fired = Machine(startedAt: today + 600)
        fired.schedule("digest", every(day, within: 2 * day), cursor: today, recorded: true)
        #expect(
            fired.unfinished("digest", slot: yesterday, newestFired: today, now: today + 600) == [
                .close(campaign: "digest", slot: yesterday, reason: .superseded)
            ]
        )
        #expect(fired.tick(now: today + 600).isEmpty)
    }

    /// A run stopped in its own slot's time is resumed, and the slots that come due meanwhile follow
    /// `overlap` as usual; with `catch_up.mode: all`, a due slot queues behind the resumed run.
    @Test func aCurrentUnfinishedSlotRunIsResumedAndDueSlotsAreNeverSkippedForIt() {
        var machine = Machine(startedAt: Self.t0 + 120)
        machine.schedule("news", every(3600), cursor: Self.t0, recorded: true)
        #expect(
            machine.unfinished("news", slot: Self.t0, newestFired: Self.t0, now: Self.t0 + 120) == [
                .resume(campaign: "news", slot: Self.t0)
            ]
        )
        #expect(machine.isRunning("news"))
        #expect(machine.tick(now: Self.t0 + 120).isEmpty)

        var all = Machine(startedAt: Self.t0 + 3700)
        all.schedule("news", every(3600, within: 7200, mode: .all), cursor: Self.t0, recorded: true)
        #expect(
            all.unfinished("news", slot: Self.t0, newestFired: Self.t0, now: Self.t0 + 3700) == [
                .resume(campaign: "news", slot: Self.t0)
            ]
        )
        #expect(all.tick(now: Self.t0 + 3700).isEmpty)
        #expect(all.runEnded("news", now: Self.t0 + 3800) == [.fire(campaign: "news", slot: Self.t0 + 3600)])
    }

    @Test func dueFiringsOfACampaignGoOutInOneRunAndThoseThatComeDueMeanwhileWait() {
        var machine = Machine(startedAt: Self.t0)
        machine.setTriggers(["card-failed", "welcome"])
        let due = [("card-failed", "n1"), ("welcome", "n2"), ("card-failed", "n3")]
        #expect(
            machine.firingsDue(due.map { (campaign: $0.0, notification: $0.1) }) == [
                .fireTrigger(campaign: "card-failed", notifications: ["n1", "n3"]),
                .fireTrigger(campaign: "welcome", notifications: ["n2"]),
            ]
        )
        // While card-failed's run sends, its next firing waits; nothing is skipped.
        #expect(machine.firingsDue([(campaign: "card-failed", notification: "n4")]).isEmpty)
        #expect(machine.runEnded("card-failed", now: Self.t0 + 5).isEmpty)
        #expect(
            machine.firingsDue([(campaign: "card-failed", notification: "n4")]) == [
                .fireTrigger(campaign: "card-failed", notifications: ["n4"])
            ]
        )
    }

    @Test func firingsOfACampaignNoLongerTriggeredAreSkippedAndItsUnfinishedRunLeft() {
        var machine = Machine(startedAt: Self.t0)
        machine.setTriggers(["welcome"])
        #expect(
            machine.firingsDue([(campaign: "card-failed", notification: "n1")]) == [
                .skipFirings(campaign: "card-failed", notifications: ["n1"], reason: .notTriggered)
            ]
        )
        #expect(
            Machine.FiringSkipReason.notTriggered.detail(campaign: "card-failed")
                == "campaign card-failed is no longer a trigger campaign in the campaign folders"
        )
        #expect(
            machine.unfinishedTriggerRun("card-failed", run: 7, notifications: ["n1"]) == [
                .leaveTriggerRun(campaign: "card-failed", run: 7)
            ]
        )
        // A triggered campaign's unfinished run is resumed, and its due firings wait for it.
        #expect(
            machine.unfinishedTriggerRun("welcome", run: 8, notifications: ["n2"]) == [
                .fireTrigger(campaign: "welcome", notifications: ["n2"])
            ]
        )
        #expect(machine.firingsDue([(campaign: "welcome", notification: "n3")]).isEmpty)
        // The folders change: the campaign is gone, its pending firings are skipped.
        machine.setTriggers([])
        _ = machine.runEnded("welcome", now: Self.t0 + 1)
        #expect(
            machine.firingsDue([(campaign: "welcome", notification: "n3")]) == [
                .skipFirings(campaign: "welcome", notifications: ["n3"], reason: .notTriggered)
            ]
        )
    }
}

extension SchedulerStateMachineTests {
    /// `news` every minute (`catch_up.within` 2 minutes): its first slot found held by another
    /// process at two ticks in a row, so it waits to be tried again.
    static func slotHeldTwice(mode: CatchUp.Mode) -> Machine {
        var machine = Machine(startedAt: t0)
        machine.schedule(
            "news",
            SchedulerStateMachineTests().every(60, within: 120, mode: mode),
            cursor: t0,
            recorded: true
        )
        #expect(machine.tick(now: t0 + 60) == [.fire(campaign: "news", slot: t0 + 60)])
        #expect(machine.slotBusy("news", slot: t0 + 60).isEmpty)
        #expect(machine.runEnded("news", now: t0 + 60).isEmpty)
        #expect(machine.tick(now: t0 + 61) == [.fire(campaign: "news", slot: t0 + 60)])
        #expect(machine.slotBusy("news", slot: t0 + 60).isEmpty)
        #expect(machine.runEnded("news", now: t0 + 61).isEmpty)
        return machine
    }

    /// With `catch_up.mode: latest` (the default), a held slot nobody claimed is superseded when a
    /// newer slot fires here: it is recorded skipped then, never fired after the newer one, and
    /// never left in memory for a stop to lose (the cut-link test found one lost that way).
    @Test func aHeldSlotIsSupersededWhenANewerSlotFires() {
        var machine = Self.slotHeldTwice(mode: .latest)
        #expect(
            machine.tick(now: Self.t0 + 120) == [
                .skip(campaign: "news", first: Self.t0 + 60, through: Self.t0 + 60, count: 1, reason: .superseded),
                .fire(campaign: "news", slot: Self.t0 + 120),
            ]
        )
        #expect(machine.runEnded("news", now: Self.t0 + 125).isEmpty)
        #expect(machine.tick(now: Self.t0 + 126).isEmpty)
    }

    /// Several nodes fire every slot; the one holding the campaign's lease sends it. A node that
    /// finds the campaign held tries the slot again each tick, so a holder that dies before firing
    /// it does not lose it, and never lets the retry make a due slot overlap.
    /// With `catch_up.mode: all`, every slot goes out: a held one waits behind a newer one.
    @Test func aSlotFoundHeldByAnotherProcessIsTriedAgainUntilClaimedOrMissed() {
        var machine = Self.slotHeldTwice(mode: .all)
        // The next slot comes due: it fires first; the held one waits for the campaign to be free here.
        #expect(machine.tick(now: Self.t0 + 120) == [.fire(campaign: "news", slot: Self.t0 + 120)])
        #expect(machine.tick(now: Self.t0 + 121).isEmpty)
        #expect(machine.runEnded("news", now: Self.t0 + 125).isEmpty)
        #expect(machine.tick(now: Self.t0 + 126) == [.fire(campaign: "news", slot: Self.t0 + 60)])
        // Held until it fell out of catch_up.within: missed, never fired late.
        #expect(machine.slotBusy("news", slot: Self.t0 + 60).isEmpty)
        #expect(machine.runEnded("news", now: Self.t0 + 126).isEmpty)
        #expect(
            machine.tick(now: Self.t0 + 181) == [
                .fire(campaign: "news", slot: Self.t0 + 180)
            ]
        )
        #expect(machine.runEnded("news", now: Self.t0 + 182).isEmpty)
        #expect(
            machine.tick(now: Self.t0 + 183) == [
                .skip(campaign: "news", first: Self.t0 + 60, through: Self.t0 + 60, count: 1, reason: .missed)
            ]
        )
    }

    /// Issue 43: three nodes, the node sending `news`'s slot cut off mid-send. The node that takes
    /// the campaign over finishes that slot's run before any newer slot, whichever it meets first:
    /// the unfinished run (its look for runs nobody holds) or the newer slot (whose firing is
    /// refused behind the unfinished run). The newer slot, due while the old one was sending, is an
    /// overlap in both orders: skipped as `overlap`, or with `overlap: queue` fired after it.
    @Test(arguments: [Overlap.skip, Overlap.queue])
    func aTakenOverSlotRunIsFinishedBeforeANewerSlotWhateverIsSeenFirst(overlap: Overlap) {
        let old = Self.t0 + 60
        let new = Self.t0 + 120
        func node() -> Machine {
            var machine = Machine(startedAt: Self.t0)
            machine.schedule("news", every(60, overlap: overlap), cursor: old, recorded: true)
            // The newer slot came due while the cut-off node still held the campaign (sending `old`).
            #expect(machine.tick(now: new) == [.fire(campaign: "news", slot: new)])
            return machine
        }
        let overlapping = overlap == .skip
        var runFirst = node()
        // The holder sends an earlier slot: the newer one overlaps it.
        let held = runFirst.slotBusy("news", slot: new, overlapping: true)
        #expect(
            held == (overlapping ? [.skip(campaign: "news", first: new, through: new, count: 1, reason: .overlap)] : [])
        )
        #expect(runFirst.runEnded("news", now: new).isEmpty)
        // Its lease expired: the look for runs nobody holds finds `old`'s run first.
        #expect(
            runFirst.unfinished("news", slot: old, newestFired: old, now: new + 20) == [
                .resume(campaign: "news", slot: old)
            ]
        )
        #expect(runFirst.tick(now: new + 21).isEmpty)
        #expect(runFirst.runEnded("news", now: new + 30) == (overlapping ? [] : [.fire(campaign: "news", slot: new)]))

        var slotFirst = node()
        // The newer slot is tried again once the lease expired, and refused behind `old`'s run.
        #expect(slotFirst.slotBusy("news", slot: new).isEmpty)
        #expect(slotFirst.runEnded("news", now: new).isEmpty)
        #expect(slotFirst.tick(now: new + 20) == [.fire(campaign: "news", slot: new)])
        let behind = slotFirst.behind("news", slot: new, unfinished: old, newestFired: old, now: new + 20)
        #expect(
            behind
                == [.resume(campaign: "news", slot: old)]
                + (overlapping ? [.skip(campaign: "news", first: new, through: new, count: 1, reason: .overlap)] : [])
        )
        #expect(slotFirst.tick(now: new + 21).isEmpty)
        #expect(slotFirst.runEnded("news", now: new + 30) == (overlapping ? [] : [.fire(campaign: "news", slot: new)]))
    }

    /// A slot held by another process that is not sending an earlier slot (it is about to fire
    /// this one itself) is not an overlap: it waits to be tried again.
    @Test func aSlotHeldByAProcessFiringItIsTriedAgainNotSkipped() {
        var machine = Machine(startedAt: Self.t0)
        machine.schedule("news", every(60), cursor: Self.t0, recorded: true)
        #expect(machine.tick(now: Self.t0 + 60) == [.fire(campaign: "news", slot: Self.t0 + 60)])
        #expect(machine.slotBusy("news", slot: Self.t0 + 60, overlapping: false).isEmpty)
        #expect(machine.runEnded("news", now: Self.t0 + 60).isEmpty)
        #expect(machine.tick(now: Self.t0 + 61) == [.fire(campaign: "news", slot: Self.t0 + 60)])
    }

    @Test func theLooksComeAtTheirCadenceAndStopWithTheShutdown() {
        var machine = Machine(startedAt: Self.t0, orphanLookInterval: 3, credentialsRecheckInterval: 30)
        let now = Double(Self.t0)
        // The first tick reads everything.
        #expect(
            machine.beginTick(now: now, catalogChanged: false, credentialsTroubled: false)
                == .init(sync: true, credentials: true, orphans: true)
        )
        // Then the folders when a file changed, runs nobody holds every 3 s, and unusable
        // credentials every 30 s.
        #expect(machine.beginTick(now: now + 1, catalogChanged: false, credentialsTroubled: true) == .init())
        #expect(
            machine.beginTick(now: now + 3, catalogChanged: true, credentialsTroubled: true)
                == .init(sync: true, credentials: true, orphans: true)
        )
        #expect(
            machine.beginTick(now: now + 32, catalogChanged: false, credentialsTroubled: false) == .init(orphans: true)
        )
        #expect(
            machine.beginTick(now: now + 33, catalogChanged: false, credentialsTroubled: true)
                == .init(credentials: true)
        )
        machine.shutdown()
        #expect(machine.beginTick(now: now + 40, catalogChanged: true, credentialsTroubled: true) == nil)
        #expect(machine.isDrained)
    }

    @Test func runsNobodyHoldsAreTakenOverOnceAndSlicedRunsJoinedUntilRefused() {
        var machine = Machine(startedAt: Self.t0)
        machine.schedule("news", every(3600), cursor: Self.t0, recorded: true)
        machine.setTriggers(["card"])
        let sliced = RunRecord(
            id: RunID(7),
            campaign: "big",
            revision: "r1",
            status: .running,
            startedAt: Double(Self.t0),
            updatedAt: Double(Self.t0),
            cancelRequested: false
        )
        var look = Machine.Look(now: Double(Self.t0 + 10))
        look.orphanedSlots = [.init(campaign: "news", slot: Self.t0, newestFired: Self.t0)]
        look.orphanedTriggerRuns = [.init(campaign: "card", run: 5, notifications: ["n1"])]
        look.slicedRuns = [sliced]
        #expect(
            machine.tick(look) == [
                .takeOver(campaign: "news", what: .slot(Self.t0)),
                .resume(campaign: "news", slot: Self.t0),
                .takeOver(campaign: "card", what: .triggerRun(5)),
                .fireTrigger(campaign: "card", notifications: ["n1"]),
                .join(sliced),
            ]
        )
        #expect(machine.launched == ["news", "card"] && machine.joined == [RunID(7)])
        // Seen again while this process sends them: left alone.
        #expect(machine.tick(look).isEmpty)
        // The join refused (another revision here): never tried again, even once it ended.
        #expect(machine.ended(.join(sliced), .refused, now: Self.t0 + 11).isEmpty)
        look.orphanedSlots = []
        look.orphanedTriggerRuns = []
        #expect(machine.tick(look).isEmpty)
        // A shutdown drains once the last launch ended; nothing more is decided meanwhile.
        machine.shutdown()
        #expect(!machine.isDrained)
        #expect(machine.ended(.resume(campaign: "news", slot: Self.t0), .done, now: Self.t0 + 12).isEmpty)
        #expect(!machine.isDrained)
        #expect(machine.ended(.fireTrigger(campaign: "card", notifications: ["n1"]), .done, now: Self.t0 + 12).isEmpty)
        #expect(machine.isDrained)
    }

    @Test func aSlotBehindAnUnfinishedRunTakesThatRunOverFirst() {
        var machine = Machine(startedAt: Self.t0)
        machine.schedule("news", every(60), cursor: Self.t0, recorded: true)
        #expect(machine.tick(now: Self.t0 + 60) == [.fire(campaign: "news", slot: Self.t0 + 60)])
        let end = Machine.LaunchEnd.behind(slot: Self.t0 + 60, unfinished: Self.t0, newestFired: Self.t0)
        #expect(
            machine.ended(.fire(campaign: "news", slot: Self.t0 + 60), end, now: Self.t0 + 61) == [
                .takeOver(campaign: "news", what: .slot(Self.t0)),
                .resume(campaign: "news", slot: Self.t0),
                .skip(campaign: "news", first: Self.t0 + 60, through: Self.t0 + 60, count: 1, reason: .overlap),
            ]
        )
        #expect(machine.launched == ["news"])
    }
}
