import PushcampAPNsCore
import PushcampModel
import PushcampSimulator
import PushcampTestSupport
import Testing

/// The simulator's faults on the broadcast API, without sockets (issue 43).
@Suite("Simulator broadcast faults")
struct BroadcastFaultsTests {
    static let broadcast = BroadcastRules.Route.broadcast(bundleID: "com.example.shop")
    static let management = BroadcastRules.Route.channel(bundleID: "com.example.shop")
    static let accepted = BroadcastRules.Answer(status: 200)

    @Test func aChannelTakesOneBroadcastPerThrottleIntervalAndTheRefusedOneDoesNotCount() {
        var faults = BroadcastFaults()
        faults.channelThrottle = 5
        var state = BroadcastFaults.State()
        func send(_ channel: String, at now: Double) -> Int {
            faults.after(Self.accepted, channelID: channel, route: Self.broadcast, state: &state, now: now).status
        }
        #expect(send("YQ==", at: 100) == 200)
        #expect(send("YQ==", at: 103) == 429)
        // Another channel has a throttle of its own.
        #expect(send("Yg==", at: 103) == 200)
        // Counted from the last accepted broadcast, not the refused one.
        #expect(send("YQ==", at: 105) == 200)
        #expect(send("YQ==", at: 109.9) == 429)
        // A refusal by the rules (not 200) is left as it is, and management requests are not throttled.
        let refused = BroadcastRules.Answer(status: 400, reason: .channelNotRegistered)
        #expect(faults.after(refused, channelID: "YQ==", route: Self.broadcast, state: &state, now: 110) == refused)
        #expect(
            faults.after(Self.accepted, channelID: "YQ==", route: Self.management, state: &state, now: 110)
                == Self.accepted
        )
    }

    @Test func theScriptDecidesTheFirstBroadcastsInOrderThenNothing() {
        var faults = BroadcastFaults()
        faults.script = [.tooManyRequests, .serviceUnavailable, .drop, .internalServerError]
        faults.retryAfter = 3
        var state = BroadcastFaults.State()
        // Management requests do not use up the script.
        #expect(faults.before(Self.management, state: &state, random: 0) == .asUsual)
        var tooMany = BroadcastRules.Answer(status: 429, reason: .tooManyRequests)
        tooMany.headers["retry-after"] = "3"
        #expect(faults.before(Self.broadcast, state: &state, random: 0) == .answer(tooMany))
        var unavailable = BroadcastRules.Answer(status: 503, reason: .serviceUnavailable)
        unavailable.headers["retry-after"] = "3"
        #expect(faults.before(Self.broadcast, state: &state, random: 0) == .answer(unavailable))
        #expect(faults.before(Self.broadcast, state: &state, random: 0) == .drop)
        // 500 carries no retry-after.
        #expect(
            faults.before(Self.broadcast, state: &state, random: 0)
                == .answer(BroadcastRules.Answer(status: 500, reason: .internalServerError))
        )
        #expect(faults.before(Self.broadcast, state: &state, random: 0) == .asUsual)
    }

    @Test func theErrorRateAnswers500Or503ToEveryRequestOfTheBroadcastAPI() {
        var faults = BroadcastFaults()
        faults.errorRate = 0.3
        var state = BroadcastFaults.State()
        #expect(
            faults.before(Self.management, state: &state, random: 0.1)
                == .answer(BroadcastRules.Answer(status: 500, reason: .internalServerError))
        )
        #expect(
            faults.before(Self.broadcast, state: &state, random: 0.2)
                == .answer(BroadcastRules.Answer(status: 503, reason: .serviceUnavailable))
        )
        #expect(faults.before(Self.broadcast, state: &state, random: 0.3) == .asUsual)
        // Device pushes keep their own error rate (`error_rate`).
        #expect(faults.before(.device, state: &state, random: 0) == .asUsual)
    }

    @Test func aScenarioFileSetsTheFaultsAndNamesAWrongOneByItsLine() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = try project.write(
            "scenario.yaml",
            "channel_throttle: 5s\nbroadcast_error_rate: 30%\nbroadcast_faults: [429, 503, drop]\nretry_after: 2\n"
        )
        let scenario = try SimulatorScenario.load(path).get()
        #expect(scenario.broadcast.channelThrottle == 5)
        #expect(scenario.broadcast.errorRate == 0.3)
        #expect(scenario.broadcast.script == [.tooManyRequests, .serviceUnavailable, .drop])
        #expect(scenario.broadcast.retryAfter == 2)

        let wrong = try project.write("wrong.yaml", "retry_after: 1\nbroadcast_faults: [429, 418]\n")
        guard case .failure(let error) = SimulatorScenario.load(wrong) else {
            Issue.record("a scenario with fault 418 was accepted")
            return
        }
        #expect(
            error.description.contains("wrong.yaml:2:"),
            "\(error.description)"
        )
        #expect(
            error.description.contains("'418' is not a broadcast fault; write 429, 500, 503 or drop"),
            "\(error.description)"
        )
    }
}
