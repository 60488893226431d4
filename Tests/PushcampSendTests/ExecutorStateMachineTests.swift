import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampSend
import Testing

/// The executor's behaviour in memory, on a manual clock (`ExecutorSimulation`).
@Suite("Executor state machine")
struct ExecutorStateMachineTests {
    /// First-send times by push, in order.
    static func firstSends(_ simulation: ExecutorSimulation) -> [Double] {
        simulation.written.keys.sorted().map { simulation.written[$0]![0] }
    }

    @Test(arguments: [1.0 / 60, 15.0 / 60, 1, 60, 1000, 20_000])
    func pacingHoldsFromOneAMinuteToTheWiresLimit(rate: Double) {
        let pushes = max(5, min(4000, Int(rate * 2)))
        var simulation = ExecutorSimulation(pushes: pushes, rate: rate, rules: .init(latency: 0.002))
        simulation.run()
        #expect(simulation.report?.delivered == pushes)
        let sends = Self.firstSends(simulation)
        let interval = 1 / rate
        // The first push leaves at once (after its journal commit, 1 ms here).
        #expect(sends[0] <= 0.0011)
        if interval >= 0.01 {
            // None later than its slot by more than 10% of an interval.
            for (index, time) in sends.enumerated() {
                let slot = Double(index) * interval + 0.001
                #expect(time - slot <= 0.1 * interval, "push \(index) at \(time), slot \(slot)")
            }
        } else {
            // Faster than the wire's first moments allow (one stream until the token is accepted):
            // the whole send within 10% of its ideal length, plus that first round trip.
            let ideal = Double(pushes - 1) * interval
            #expect(sends.last! <= ideal * 1.1 + 0.005, "last push at \(sends.last!), ideal \(ideal)")
        }
        // Nothing bunched: never more than one hand-over batch (5 ms of pushes) ahead of the rate.
        let batch = Double(simulation.machine.configuration.handOverSize)
        for (index, time) in sends.enumerated() {
            #expect(Double(index) <= time * rate + batch, "push \(index) at \(time) is ahead of the rate")
        }
    }

    @Test func fifteenAMinuteSendsEveryFourSecondsFromTheFirstAtOnce() {
        var simulation = ExecutorSimulation(pushes: 5, rate: 0.25, rules: .init(latency: 0.05))
        simulation.run()
        // Each push leaves once its journal commit (1 ms here) is done.
        let sends = Self.firstSends(simulation).map { ($0 * 1000).rounded() / 1000 }
        #expect(sends == [0.001, 4.001, 8.001, 12.001, 16.001])
    }

    @Test func aServerThatAllowsNoStreamsStopsTheRunAfterTheStallTimeout() {
        var simulation = ExecutorSimulation(pushes: 50, rate: 1000, rules: .init(streamLimit: 0))
        simulation.run()
        let report = simulation.report
        #expect(report?.exitCode == 2)
        guard case .stalled(let message)? = report?.stop else {
            Issue.record("expected a stall, got \(String(describing: report?.stop))")
            return
        }
        #expect(message.contains("https://memory.test answered nothing for 60 s"), "\(message)")
        #expect(message.contains("0 concurrent streams"), "\(message)")
        #expect(simulation.now >= 60 && simulation.now < 61)
        #expect(simulation.written.isEmpty)
        // Nothing was written, so nothing is left in flight: a resume sends them as not sent.
        #expect(simulation.inFlight.isEmpty)
    }

    @Test func aServerThatSendsNoSettingsOrNeverAnswersIsNamed() {
        var silent = ExecutorSimulation(pushes: 20, rate: 1000, rules: .init(sendsSettings: false, answers: false))
        silent.run()
        guard case .stalled(let message)? = silent.report?.stop else {
            Issue.record("expected a stall")
            return
        }
        #expect(message.contains("no HTTP/2 SETTINGS"), "\(message)")

        var mute = ExecutorSimulation(pushes: 20, rate: 1000, rules: .init(answers: false)) { $0.stallTimeout = 10 }
        mute.run()
        guard case .stalled(let muteMessage)? = mute.report?.stop else {
            Issue.record("expected a stall")
            return
        }
        #expect(muteMessage.contains("answered nothing for 10 s with"), "\(muteMessage)")
        #expect(muteMessage.contains("requests are open and unanswered"), "\(muteMessage)")
    }

    /// Issue #27, case 5: a server that answers, then allows no stream at all, is a stall like any
    /// other: progress is an answer, and none came for the stall timeout while requests wait.
    @Test func aStallAfterSomeAnswersStopsTheRunAfterTheStallTimeout() {
        var simulation = ExecutorSimulation(
            pushes: 500,
            rate: 1000,
            rules: .init(lowerLimit: (afterAnswers: 1, to: 0))
        ) { $0.stallTimeout = 60 }
        simulation.run(until: 1000)
        let report = simulation.report
        #expect(report?.delivered == 1)
        #expect(report?.exitCode == 2)
        guard case .stalled(let message)? = report?.stop else {
            Issue.record("expected a stall, got \(String(describing: report?.stop))")
            return
        }
        #expect(message.contains("answered nothing for 60 s"), "\(message)")
        #expect(message.contains("0 concurrent streams"), "\(message)")
        // Sixty seconds after the one answer (at 11 ms), not later.
        #expect(simulation.now >= 60 && simulation.now < 61, "\(simulation.now)")
    }

    /// Issue #27, case 2: a batch held for its moment (a recipient's local time, the end of quiet
    /// hours) is dropped at once by a stop: nothing waits for the moment, and nothing was recorded.
    @Test func aStopWhileABatchWaitsForItsMomentEndsTheRunAtOnce() {
        var machine = ExecutorStateMachine(
            configuration: .init(rate: 100, retry: RetryPolicy(), endpoint: "https://memory.test", connections: 1),
            report: SendReport(campaign: "c", revision: "r", endpoint: "https://memory.test"),
            now: 0
        )
        #expect(machine.start(now: 0).contains { if case .pullPlan = $0 { true } else { false } })
        var batch = ExecutorStateMachine.PlanBatch(requests: [
            ExecutorSimulation.request(1), ExecutorSimulation.request(2),
        ])
        batch.notBefore = 7200
        let held = machine.planned(batch, now: 1)
        // Held: nothing recorded, nothing more pulled, a timer at its moment.
        #expect(!held.contains { if case .record = $0 { true } else { false } })
        #expect(!held.contains { if case .pullPlan = $0 { true } else { false } })
        #expect(held.contains { if case .arm(7200) = $0 { true } else { false } })
        let stopping = machine.stop(.interrupted, now: 2)
        #expect(stopping.contains { if case .shutdownTransport = $0 { true } else { false } })
        let ended = machine.transportEnded(now: 2.1)
        guard case .finish(let report)? = ended.last else {
            Issue.record("the run waits for its moment: \(ended)")
            return
        }
        #expect(report.stop == .interrupted)
        #expect(report.unsent == 2)

        // Without a stop, the batch is released at its moment and sent.
        var waiting = ExecutorStateMachine(
            configuration: .init(rate: 100, retry: RetryPolicy(), endpoint: "https://memory.test", connections: 1),
            report: SendReport(campaign: "c", revision: "r", endpoint: "https://memory.test"),
            now: 0
        )
        _ = waiting.start(now: 0)
        _ = waiting.planned(batch, now: 1)
        #expect(!waiting.timerFired(now: 7199).contains { if case .record = $0 { true } else { false } })
        #expect(
            waiting.timerFired(now: 7200).contains {
                if case .record(_, let requests, _) = $0 { requests.count == 2 } else { false }
            }
        )
    }

    @Test func refusedCredentialsStopTheRunWithinAHandfulOfRequests() {
        var simulation = ExecutorSimulation(
            pushes: 10_000,
            rate: 100_000,
            rules: .init(connections: 4, reason: { _ in .invalidProviderToken })
        )
        simulation.run()
        #expect(simulation.report?.exitCode == 2)
        #expect(simulation.written.count <= 12, "\(simulation.written.count) requests with a refused key")
        // Refused pushes are not final: a resume with the right key sends them.
        #expect(simulation.journal.values.allSatisfy { if case .failed = $0 { false } else { true } })
    }

    @Test func tooManyProviderTokenUpdatesStopsAtOnceAndIsNeverRetried() {
        var simulation = ExecutorSimulation(
            pushes: 1000,
            rate: 100_000,
            rules: .init(reason: { _ in .tooManyProviderTokenUpdates })
        )
        simulation.run()
        #expect(simulation.report?.exitCode == 2)
        #expect(simulation.written.count == 1)
        #expect(simulation.written.values.allSatisfy { $0.count == 1 })
        guard case .credentials(let message)? = simulation.report?.stop else {
            Issue.record("expected a credentials stop")
            return
        }
        #expect(message.contains("TooManyProviderTokenUpdates"))
        #expect(message.contains("no new token minted"))
    }

    @Test func frequentDropsSlowThePoolDownInsteadOfFailingPushes() {
        var simulation = ExecutorSimulation(
            pushes: 10_000,
            rate: 1_000_000,
            rules: .init(connections: 10, streamLimit: 1000, latency: 0.02, dropAfter: 300)
        )
        simulation.run()
        let report = simulation.report
        #expect(report?.delivered == 10_000, "\(String(describing: report?.failures))")
        #expect(report?.failures.isEmpty == true)
        #expect((report?.possibleDuplicates ?? 0) > 0)
        #expect(report?.exitCode == 0)
    }

    @Test(arguments: [0.05, 0.2, 0.4])
    func aKillLeavesNoMorePossibleDuplicatesThanOpenStreamsPlusABatchPerConnection(at moment: Double) {
        var simulation = ExecutorSimulation(
            pushes: 50_000,
            rate: 1_000_000,
            rules: .init(connections: 10, streamLimit: 100, latency: 0.01)
        )
        simulation.run(until: moment)
        #expect(simulation.report == nil)
        // What a resume would send again as possible duplicates: recorded in flight, not answered.
        #expect(simulation.inFlight.count <= simulation.duplicateBound, "\(simulation.inFlight.count)")
        #expect(simulation.inFlight.isSuperset(of: simulation.writtenUnanswered))
    }

    @Test func retriesWaitTheirDelayInTheHeapAndCancelDrains() {
        var simulation = ExecutorSimulation(
            pushes: 100,
            rate: 10_000,
            rules: .init(reason: { $0.tag == 7 && $0.attempt == 0 ? .tooManyRequests : nil })
        )
        simulation.run()
        let sends = simulation.written[7] ?? []
        #expect(sends.count == 2)
        #expect(sends.count == 2 && sends[1] - sends[0] >= 10)
        #expect(simulation.report?.delivered == 100)
        #expect(simulation.report?.retries["TooManyRequests"] == 1)

        var cancelled = ExecutorSimulation(pushes: 10_000, rate: 1000, rules: .init(latency: 0.05))
        cancelled.run(until: 2)
        cancelled.stop(.cancelled)
        let report = cancelled.report
        #expect(report?.exitCode == 130)
        // Everything written was answered; the rest is not sent, and nothing is left in flight.
        #expect(cancelled.writtenUnanswered.isEmpty)
        #expect(cancelled.inFlight.isEmpty)
        #expect((report?.delivered ?? 0) + (report?.unsent ?? 0) == report?.planned)
        #expect(report?.delivered == cancelled.written.count)
    }
}
