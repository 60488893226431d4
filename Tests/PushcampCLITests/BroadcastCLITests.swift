import Foundation
import PushcampTestSupport
import Testing

/// Broadcast campaigns (`channel:`) against `pushcamp sim`: one request to APNs' broadcast API.
@Suite("broadcast campaigns from the command line")
struct BroadcastCLITests {
    /// A project with channels `final` (storage latest) and `semi` (storage none), applied.
    static func applied(_ project: TemporaryProject, simulator: [String] = []) throws -> SimulatorProcess {
        let sim = try ChannelsCLITests.start(project, channels: ChannelsCLITests.twoChannels, simulator: simulator)
        let apply = try CLI.run(["channels", "apply"], in: project.root)
        #expect(apply.status == 0, "\(apply.stderr)")
        return sim
    }

    /// A project whose channels were applied, its simulator started again on its state folder (the
    /// channels kept, as Apple keeps them) with `simulator` options: faults for what follows.
    static func appliedThenRestarted(_ project: TemporaryProject, simulator: [String]) throws -> SimulatorProcess {
        _ = try applied(project).stop()
        return try ChannelsCLITests.start(project, channels: ChannelsCLITests.twoChannels, simulator: simulator)
    }

    /// `campaigns/0-start.yaml`: a push-to-start of the match to `token` at `time`, subscribing the
    /// new activity to channel `final` by name.
    static func writeStart(_ project: TemporaryProject, to token: String, at time: String) throws {
        try project.write(
            "campaigns/0-start.yaml",
            """
            campaign: match-start
            app: shop
            audience:
              source: { inline: [\(token)] }
            schedule: { at: \(time) }
            retry: { resend_unknown: false }   # a start sent twice starts two activities
            message:
              push_type: liveactivity
              payload:
                aps:
                  event: start
                  timestamp: "{{now}}"
                  attributes-type: MatchAttributes
                  attributes: { home: Lyon, away: Porto }
                  content-state: { home: 0, away: 0 }
                  alert: { title: "Kick-off", body: "Lyon – Porto" }
                  input-push-channel: "{{channels.final}}"

            """
        )
    }

    /// `campaigns/score.yaml`: an update of the score to `channel`, with `top` lines added at the
    /// top level, `message` lines under `message:` and `aps` lines under `aps:`.
    static func writeCampaign(
        _ project: TemporaryProject,
        channel: String = "final",
        top: String = "",
        message: String = "",
        aps: String = "      content-state: { home: 1, away: 0 }\n"
    ) throws {
        try project.write(
            "campaigns/score.yaml",
            "campaign: score\napp: shop\nchannel: \(channel)\n\(top)message:\n\(message)  payload:\n    aps:\n      event: update\n"
                + aps
        )
    }

    @Test func aBroadcastIsOneRequestSentOnce() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.applied(project)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeCampaign(project, message: "  priority: 5\n")
        let list = try CLI.run(["channels", "list", "--format", "json", "--offline"], in: project.root)
        let id = try #require(
            list.stdout.firstMatch(of: /"channel_id":"([^"]+)","environment":"sandbox","name":"final"/)
        )
        .1

        let plan = try CLI.run(["plan", "campaigns/score.yaml", "--format", "json"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains(#""path":"/4/broadcasts/apps/com.example.shop""#), "\(plan.stdout)")
        #expect(plan.stdout.contains(#""apns-channel-id":"\#(id)""#))

        let before = Int(Date().timeIntervalSince1970)
        let sent = try CLI.run(["send", "campaigns/score.yaml"], in: project.root)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains("run 1 of score: broadcast to channel final"), "\(sent.stdout)")
        // Sent once: the second send is refused, as for any finished campaign.
        let again = try CLI.run(["send", "campaigns/score.yaml"], in: project.root)
        #expect(again.status == 1 && again.stderr.contains("was already sent"), "\(again.stderr)")
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        #expect(report.stdout.contains(#""delivered":1"#) && report.stdout.contains(#""failed":0"#), "\(report.stdout)")

        _ = sim.stop()
        let broadcasts = try ChannelsCLITests.received(project).filter { $0.path.hasPrefix("/4/") }
        try #require(broadcasts.count == 1)
        let request = broadcasts[0]
        #expect(request.method == "POST" && request.path == "/4/broadcasts/apps/com.example.shop")
        #expect(request.channelID == String(id) && request.pushType == "liveactivity" && request.priority == "5")
        #expect(request.status == 200)
        // Storage latest: kept up to 8 hours; the timestamp is the send time, in seconds.
        let expiration = try #require(request.expiration.flatMap(Int.init))
        #expect(expiration >= before + 8 * 3600 - 5 && expiration <= before + 8 * 3600 + 60)
        let payload = try #require(
            try JSONSerialization.jsonObject(with: Data(request.payload.utf8)) as? [String: Any]
        )
        let aps = try #require(payload["aps"] as? [String: Any])
        let timestamp = try #require(aps["timestamp"] as? Int)
        #expect(timestamp >= before && timestamp <= before + 60)
        #expect(aps["event"] as? String == "update")
    }

    @Test(
        arguments: [
            (
                "final", "", "      content-state: { home: 1 }\n      attributes-type: Score\n",
                "campaigns/score.yaml:5:3: error: aps.attributes-type starts a Live Activity"
            ),
            ("final", "", "", "campaigns/score.yaml:5:3: error: an update carries aps.content-state"),
            (
                "final", "", "      content-state: {}\n      timestamp: 99999999999\n",
                "campaigns/score.yaml:5:3: error: aps.timestamp is more than 8 hours ahead"
            ),
            (
                "final", "", "      content-state: {}\n      dismissal-date: 1\n",
                "campaigns/score.yaml:5:3: error: aps.dismissal-date goes with event end only"
            ),
            (
                "final", "", "      content-state: { text: \"\(String(repeating: "x", count: 5200))\" }\n",
                "campaigns/score.yaml:5:3: error: the payload is 52"
            ),
            (
                "semi", "  expiration: 1h\n", "      content-state: {}\n",
                "campaigns/score.yaml:5:3: error: channel 'semi' stores nothing (storage: none)"
            ),
            (
                "finale", "", "      content-state: {}\n",
                "campaigns/score.yaml:3:10: error: no channel 'finale' in pushcamp.yaml; did you mean 'final'"
            ),
            (
                "final", "  collapse_id: score\n", "      content-state: {}\n",
                "campaigns/score.yaml:5:3: error: a broadcast is one request to a channel: it carries no collapse id"
            ),
        ]
    )
    func eachOfflineCheckRefusesWithALocatedError(
        channel: String,
        message: String,
        aps: String,
        expected: String
    ) throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try SendCLITests.writeProject(project, port: 9, credentials: SendCLITests.simulatorKey)
        try project.append(
            "pushcamp.yaml",
            "\nchannels:\n" + ChannelsCLITests.twoChannels
        )
        try Self.writeCampaign(project, channel: channel, message: message, aps: aps)
        let plan = try CLI.run(["plan", "campaigns/score.yaml"], in: project.root)
        #expect(plan.status == 1)
        #expect(plan.stderr.contains(expected), "\(plan.stderr)")
        // `validate` (a pull request's check) finds the same.
        let validate = try CLI.run(["validate", "campaigns/score.yaml"], in: project.root)
        #expect(validate.status == 1 && (validate.stdout + validate.stderr).contains(expected), "\(validate.stdout)")
        // Nothing is sent either.
        let send = try CLI.run(["send", "campaigns/score.yaml"], in: project.root)
        #expect(send.status != 0)
    }

    @Test func aBroadcastIsRehearsedOnAChannelOfTheRehearsalSimulator() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        // No simulator of ours and no channel created: the rehearsal makes both.
        try SendCLITests.writeProject(project, port: 9, credentials: SendCLITests.simulatorKey)
        try project.append("pushcamp.yaml", "\nchannels:\n" + ChannelsCLITests.twoChannels)
        try Self.writeCampaign(project)
        for run in 1...2 {
            let rehearsed = try CLI.run(["rehearse", "campaigns/score.yaml"], in: project.root)
            #expect(rehearsed.status == 0, "\(rehearsed.stdout)\(rehearsed.stderr)")
            #expect(rehearsed.stdout.contains("POST /4/broadcasts/apps/com.example.shop"), "\(rehearsed.stdout)")
            #expect(rehearsed.stdout.contains("recorded as rehearsal run \(run)"), "\(rehearsed.stdout)")
        }
        let report = try CLI.run(["report", "--rehearsal", "--format", "json"], in: project.root)
        #expect(report.stdout.contains(#""delivered":1"#), "\(report.stdout)")
        // The real journal knows no channel: nothing was created at APNs.
        let list = try CLI.run(["channels", "list", "--offline"], in: project.root)
        #expect(list.stdout.contains("declared, not created"), "\(list.stdout)")
    }

    /// Per-device Live Activity campaigns get the rules of their event, offline.
    @Test(
        arguments: [
            (
                "event: start, timestamp: 1, content-state: {}",
                "a push-to-start (aps.event: start) needs aps.attributes-type"
            ),
            (
                "event: update, timestamp: 1, content-state: {}, attributes-type: M",
                "aps.attributes-type goes with aps.event: start only"
            ),
            ("event: update, timestamp: 1", "an update carries aps.content-state"),
            (
                "event: update, timestamp: 1795768081000, content-state: {}",
                "aps.timestamp is in seconds since 1970, not milliseconds"
            ),
            ("event: finish, timestamp: 1", "aps.event is start, update or end, not 'finish'"),
            (
                "event: update, timestamp: 1, content-state: {}, dismissal-date: 1",
                "aps.dismissal-date goes with aps.event: end only"
            ),
        ]
    )
    func aPerDeviceLiveActivityFollowsItsEventsRules(aps: String, expected: String) throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try SendCLITests.writeProject(project, port: 9, credentials: SendCLITests.simulatorKey)
        try project.write(
            "campaigns/la.yaml",
            """
            campaign: la
            app: shop
            audience: { source: { inline: [\(TemporaryProject.token(1))] } }
            message:
              push_type: liveactivity
              payload: { aps: { \(aps) } }

            """
        )
        let validate = try CLI.run(["validate", "campaigns/la.yaml"], in: project.root)
        #expect(validate.status == 1, "\(validate.stdout)")
        #expect(
            (validate.stdout + validate.stderr).contains(
                "campaigns/la.yaml:5:3: error: variant 'default': \(expected)"
            ),
            "\(validate.stdout)"
        )
    }

    /// Every reason APNs may answer a broadcast with is in the run's report, by name (those that
    /// are retried, after the one attempt `max_attempts: 1` allows).
    @Test(
        arguments: [
            "MissingChannelId", "BadChannelId", "ChannelNotRegistered", "MissingPushType", "InvalidPushType",
            "BadExpirationDate", "BadPriority", "PayloadEmpty", "PayloadTooLarge", "CannotCreateChannelConfig",
            "FeatureNotEnabled", "TooManyRequests", "InvalidProviderToken",
        ]
    )
    func everyReasonReachesTheReport(reason: String) throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.applied(project, simulator: ["--broadcast-reason", reason])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeCampaign(project, top: "retry: { max_attempts: 1 }\n")
        let sent = try CLI.run(["send", "campaigns/score.yaml"], in: project.root)
        #expect(sent.status == 4, "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains(reason), "\(sent.stdout)")
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        #expect(report.stdout.contains(#""reason":"\#(reason)""#), "\(report.stdout)")
    }

    /// A match's Live Activity under `serve`: a push-to-start (subscribing the device to the
    /// channel by name), a broadcast update and a broadcast end, each on a schedule; the serve
    /// killed (`kill -9`) with the update in flight. The next serve sends it again, counted and
    /// listed as a possible duplicate (a device drops the second: same timestamp), before the end,
    /// which goes once. The simulator was restarted on its state folder and still has the channel.
    @Test func aScheduledSequenceSendsEachStepOnceAcrossKill9() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        // Every answer takes 4 s: the requests are in flight long enough to be killed with them.
        let sim = try Self.appliedThenRestarted(project, simulator: ["--latency", "4000", "--record", "received.csv"])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try project.append("pushcamp.yaml", "journal:\n  lease: 2s\n")
        let formatter = ISO8601DateFormatter()
        func at(_ seconds: Double) -> String {
            formatter.string(from: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + seconds).rounded(.up)))
        }
        let tokens = [TemporaryProject.token(1)]
        try Self.writeStart(project, to: tokens[0], at: at(1))
        try project.write(
            "campaigns/1-update.yaml",
            """
            campaign: match-update
            app: shop
            channel: final
            schedule: { at: \(at(7)) }
            message:
              payload:
                aps: { event: update, content-state: { home: 1, away: 0 } }

            """
        )
        try project.write(
            "campaigns/2-end.yaml",
            """
            campaign: match-end
            app: shop
            channel: final
            schedule: { at: \(at(14)) }
            message:
              payload:
                aps: { event: end, content-state: { home: 1, away: 0 }, dismissal-date: 1 }

            """
        )
        // The start names the channel by name; its payload carries the channel's id.
        let list = try CLI.run(["channels", "list", "--format", "json", "--offline"], in: project.root)
        let id = try #require(
            list.stdout.firstMatch(of: /"channel_id":"([^"]+)","environment":"sandbox","name":"final"/)
        )
        .1
        let plan = try CLI.run(["plan", "campaigns/0-start.yaml", "--format", "json"], in: project.root)
        #expect(plan.stdout.contains(#""input-push-channel":"\#(id)""#), "\(plan.stdout)\(plan.stderr)")

        let first = try ServeProcess(in: project.root)
        // The start is answered (after 4 s) before the update goes.
        #expect(first.waitFor("run 1 finished: 1 delivered", timeout: 30), "\(first.output)")
        #expect(first.waitFor("of match-update: run 2 broadcasting", timeout: 30), "\(first.output)")
        Thread.sleep(forTimeInterval: 0.5)
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()

        let second = try ServeProcess(in: project.root)
        #expect(
            second.waitFor("of match-update: run 2 broadcast to channel final: 200", timeout: 30),
            "\(second.output)"
        )
        #expect(second.output.contains("1 possible duplicate"), "\(second.output)")
        #expect(second.waitFor("of match-end: run 3 broadcast to channel final: 200", timeout: 40), "\(second.output)")
        #expect(second.stop() == 0)

        let runs = try ServeCLITests.runs(project)
        #expect(runs.count == 3 && runs.allSatisfy { $0["status"] as? String == "finished" }, "\(runs)")
        let report = try CLI.run(["report", "2", "--format", "json"], in: project.root)
        #expect(report.stdout.contains(#""possible_duplicates":1"#), "\(report.stdout)")
        _ = sim.stop()
        // The device got the start once; the channel the update twice (the possible duplicate:
        // the killed serve's request reached APNs) and then the end once.
        let starts = try JournalCLITests.received(project).map(\.token)
        #expect(starts == tokens, "\(starts)")
        let broadcasts = try ChannelsCLITests.received(project).filter { $0.path.hasPrefix("/4/") }
        #expect(BroadcastCLITests.events(broadcasts) == ["update", "update", "end"], "\(broadcasts)")
    }

    /// The `aps.event` of each broadcast, in the order the simulator received them.
    static func events(_ broadcasts: [ChannelsCLITests.Received]) -> [String] {
        broadcasts.compactMap { request in
            ((try? JSONSerialization.jsonObject(with: Data(request.payload.utf8))) as? [String: Any])
                .flatMap { $0["aps"] as? [String: Any] }?["event"] as? String
        }
    }
}
