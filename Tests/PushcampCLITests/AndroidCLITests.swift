import Foundation
import PushcampTestSupport
import Testing

/// One campaign to iPhones and Android phones, from the built binary to `pushcamp sim` (APNs and FCM
/// on one port): planned per platform, each recipient sent once, every FCM reason with its reaction.
@Suite("Android and iOS in one campaign")
struct AndroidCLITests {
    /// `pushcamp.yaml` with an iOS app `shop` and an Android app `shop-android`, both sending to the
    /// simulator on `port` with the credentials it wrote into `sim/`.
    static func writeProject(_ project: TemporaryProject, port: Int) throws {
        try project.write(
            "pushcamp.yaml",
            """
            apps:
              shop:
                topic: com.example.shop
                team_id: ABCDE12345
                key_id: KEY1234567
                key_file: sim/key.p8
                endpoint: https://127.0.0.1:\(port)
                ca_file: sim/ca.pem
              shop-android:
                service_account: sim/fcm-service-account.json
                endpoint: https://127.0.0.1:\(port)
                ca_file: sim/ca.pem
            """
        )
    }

    static func fcmToken(_ index: Int) -> String { TemporaryProject.fcmToken(index) }

    /// `audiences/users.csv`: `count` people, each with an iPhone, and every other one an Android
    /// phone too (the same `user_id`), platform column as a users table exports it.
    static func writeAudience(_ project: TemporaryProject, people count: Int) throws {
        var lines = ["user_id,token,platform,name"]
        for index in 0..<count {
            lines.append("u\(index),\(TemporaryProject.token(index)),iOS,Name\(index)")
            if index % 2 == 0 { lines.append("u\(index),\(fcmToken(index)),Android,Name\(index)") }
        }
        try project.write("audiences/users.csv", lines.joined(separator: "\n") + "\n")
    }

    static let campaign = """
        campaign: mixed
        app: [shop, shop-android]
        audience:
          source: { csv: audiences/users.csv }
          user_key: user_id
        message:
          title: "Spring sale, {{name}}"
          body: "20% off until Sunday"
          data: { deep_link: "shop://sale", count: 3 }
          android: { channel_id: promotions }
          variants:
            - { name: a, weight: 1 }
            - { name: b, weight: 1 }
        throttle: { rate: 5000/s, connections: 2 }
        """

    /// `audiences/a.csv` with `count` Android phones and `campaigns/a.yaml`, an Android-only campaign
    /// `id` to them at `throttle`, plus `extra` keys.
    static func writeAndroidCampaign(
        _ project: TemporaryProject,
        id: String,
        count: Int,
        throttle: String,
        extra: String = ""
    ) throws {
        let rows = (0..<count).map { "\(fcmToken($0)),android" }
        try project.write("audiences/a.csv", "token,platform\n" + rows.joined(separator: "\n") + "\n")
        try project.write("campaigns/a.yaml", androidCampaign(id, extra: "throttle: \(throttle)\n" + extra))
    }

    /// An Android-only campaign `id` to audiences/a.csv saying `message`, with `extra` keys.
    static func androidCampaign(
        _ id: String,
        message: String = "{ title: Hello, body: There }",
        extra: String
    )
        -> String
    {
        """
        campaign: \(id)
        app: shop-android
        audience:
          source: { csv: audiences/a.csv }
        message: \(message)

        """ + extra
    }

    /// A simulator for `project` whose FCM answers each listed phone as its behaviour says (the
    /// `--tokens` file; `--retry-after 1`, recorded in fcm.jsonl), and an Android-only campaign `id`
    /// to `count` phones at 1000/s, retried up to `attempts` times.
    static func simulate(
        _ behaviours: [(phone: Int, behaviour: String)],
        in project: TemporaryProject,
        id: String,
        count: Int,
        attempts: Int
    ) throws -> SimulatorProcess {
        try project.write(
            "tokens.txt",
            behaviours.map { "\(fcmToken($0.phone)) \($0.behaviour)" }.joined(separator: "\n") + "\n"
        )
        let sim = try SimulatorProcess(
            ["--state-dir", "sim", "--tokens", "tokens.txt", "--record-fcm", "fcm.jsonl", "--retry-after", "1"],
            in: project.root
        )
        do {
            try writeProject(project, port: sim.port)
            try writeAndroidCampaign(
                project,
                id: id,
                count: count,
                throttle: "{ rate: 1000/s }",
                extra: "retry: { max_attempts: \(attempts) }\n"
            )
        } catch {
            _ = sim.stop()
            throw error
        }
        return sim
    }

    /// An Android-only campaign of `count` phones sent once against a simulator started with `flags`
    /// (and `--record-fcm`): what the send printed, the simulator's summary, what it received, and
    /// `runs --format json` afterwards.
    static func sendAndroid(
        simulator flags: [String],
        id: String,
        count: Int,
        throttle: String
    ) throws -> (send: CLI.Output, summary: String, fcm: [[String: Any]], runs: String) {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(["--state-dir", "sim", "--record-fcm", "fcm.jsonl"] + flags, in: project.root)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try writeProject(project, port: sim.port)
        try writeAndroidCampaign(project, id: id, count: count, throttle: throttle)
        let send = try CLI.run(["send", "--quiet", "campaigns/a.yaml"], in: project.root)
        let summary = sim.stop()
        let runs = try CLI.run(["runs", "--format", "json"], in: project.root).stdout
        return (send, summary, try fcmRecords(project, "fcm.jsonl"), runs)
    }

    /// The simulator's FCM record: one JSON object a line.
    static func fcmRecords(_ project: TemporaryProject, _ file: String) throws -> [[String: Any]] {
        let text = try String(contentsOf: project.root.appendingPathComponent(file), encoding: .utf8)
        return try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func aMixedAudienceIsPlannedPerPlatformAndEachRecipientSentOnce() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let people = 40
        let gone = Self.fcmToken(4)
        try project.write("tokens.txt", "\(gone) unregistered\n")
        let sim = try SimulatorProcess(
            [
                "--state-dir", "sim", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--topic",
                "com.example.shop", "--tokens", "tokens.txt", "--record", "apns.csv", "--record-fcm", "fcm.jsonl",
            ],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(project, port: sim.port)
        try Self.writeAudience(project, people: people)
        try project.write("campaigns/mixed.yaml", Self.campaign)

        // The plan counts each platform and shows a sample of each, in text, Markdown and JSON.
        let plan = try CLI.run(["plan", "campaigns/mixed.yaml", "--samples", "4"], in: project.root)
        #expect(plan.status == 0, "\(plan.stdout)\(plan.stderr)")
        #expect(plan.stdout.contains("Android app shop-android → custom endpoint"), "\(plan.stdout)")
        #expect(plan.stdout.contains("  iOS                     40   via APNs\n"), "\(plan.stdout)")
        #expect(plan.stdout.contains("  Android                 20   via FCM\n"), "\(plan.stdout)")
        #expect(plan.stdout.contains("Variants (assigned per person (user_id))"))
        #expect(plan.stdout.contains(#""data":{"deep_link":"shop://sale","count":"3"}"#), "FCM data as strings")
        #expect(plan.stdout.contains(#""deep_link":"shop://sale","count":3}"#), "APNs keeps JSON types")
        let markdown = try CLI.run(["plan", "campaigns/mixed.yaml", "--format", "markdown"], in: project.root)
        #expect(markdown.stdout.contains("| Android | 20 | FCM |"), "\(markdown.stdout)")
        let json = try CLI.run(["plan", "campaigns/mixed.yaml", "--format", "json"], in: project.root)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let platforms = try #require(object["platforms"] as? [String: [String: Any]])
        #expect(platforms["ios"]?["planned"] as? Int == 40)
        #expect(platforms["android"]?["planned"] as? Int == 20)
        #expect(object["assignment_unit"] as? String == "person (user_id)")

        let send = try CLI.run(["send", "--quiet", "campaigns/mixed.yaml"], in: project.root)
        let summary = sim.stop()
        // One Android token is gone: exit 4, its reason by name, and the token in the dead list.
        #expect(send.status == 4, "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("delivered 59, failed 1\n"), "\(send.stdout)")
        #expect(send.stdout.contains("fcm/UNREGISTERED"), "\(send.stdout)")

        // What arrived: every iPhone once over APNs, every Android phone once over FCM.
        let apns = try String(contentsOf: project.root.appendingPathComponent("apns.csv"), encoding: .utf8)
        let apnsTokens = apns.split(separator: "\n").dropFirst().map { String($0.split(separator: ",")[0]) }
        #expect(apnsTokens.sorted() == (0..<people).map(TemporaryProject.token).sorted())
        let fcm = try Self.fcmRecords(project, "fcm.jsonl")
        let fcmTokens = fcm.compactMap { $0["token"] as? String }
        #expect(fcmTokens.sorted() == stride(from: 0, to: people, by: 2).map(Self.fcmToken).sorted())
        #expect(fcm.allSatisfy { $0["validate_only"] as? Bool == false })
        let text = try #require(fcm.first { $0["token"] as? String == Self.fcmToken(0) }?["message"] as? String)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let message = try #require(body["message"] as? [String: Any])
        #expect((message["notification"] as? [String: Any])?["title"] as? String == "Spring sale, Name0")
        let android = try #require(message["android"] as? [String: Any])
        #expect((android["notification"] as? [String: Any])?["channel_id"] as? String == "promotions")
        // The collapse id (the campaign id by default) tags the shown notification, so a resend
        // replaces it.
        #expect((android["notification"] as? [String: Any])?["tag"] as? String == "mixed")
        #expect(summary.contains("fcm access tokens: 1 issued"), "\(summary)")

        // The send, then the report, say what each platform got; the failure names its platform.
        #expect(
            send.stdout.contains("by platform:\n  iOS      40 delivered, 0 failed\n  Android  19 delivered, 1 failed")
        )
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        let readout = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        let rows = try #require(readout["platforms"] as? [[String: Any]], "\(report.stdout)")
        #expect(rows.map { $0["name"] as? String } == ["ios", "android"])
        #expect(rows.map { $0["planned"] as? Int } == [40, 20])
        #expect(rows.map { $0["delivered"] as? Int } == [40, 19])
        #expect((rows[1]["failed_by_reason"] as? [String: Int]) == ["fcm/UNREGISTERED": 1])
        let failed = (readout["outcomes"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "failed" }
        #expect(failed.map { $0["platform"] as? String } == ["android"], "\(report.stdout)")
        let reportText = try CLI.run(["report"], in: project.root).stdout
        #expect(reportText.contains("  Android 404 fcm/UNREGISTERED"), "\(reportText)")
        #expect(reportText.contains("Platforms\n"), "\(reportText)")
        // The readout counts per arm and says what assigned them.
        #expect(reportText.contains("Variants (assigned per person (user_id))\n"), "\(reportText)")
        #expect(readout["assignment_unit"] as? String == "person (user_id)")

        // The dead Android token is passed over next time, as APNs' 410 is.
        let again = try CLI.run(["plan", "campaigns/mixed.yaml"], in: project.root)
        #expect(again.stdout.contains("  suppressed               1"), "\(again.stdout)")
    }

    /// Every FCM answer with its reaction: dead tokens dropped and listed, the rest reported by name and
    /// not retried, server trouble retried with back-off, a project quota pausing the whole run.
    @Test func everyFCMReasonGetsItsReaction() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.simulate(
            [
                (1, "unregistered"), (2, "bad"), (3, "reason SENDER_ID_MISMATCH"), (4, "flaky 2"),
                (5, "reason THIRD_PARTY_AUTH_ERROR"), (6, "reason INTERNAL"), (7, "throttled 1"),
            ],
            in: project,
            id: "android-only",
            count: 40,
            attempts: 3
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let send = try CLI.run(["send", "--quiet", "--format", "json", "campaigns/a.yaml"], in: project.root)
        _ = sim.stop()
        #expect(send.status == 4, "\(send.stdout)\(send.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(send.stdout.utf8)) as? [String: Any])
        let outcomes = try #require(report["outcomes"] as? [[String: Any]], "\(send.stdout)")
        var failures: [String: Int] = [:]
        for outcome in outcomes where outcome["kind"] as? String == "failed" {
            failures[outcome["reason"] as? String ?? "", default: 0] += outcome["count"] as? Int ?? 0
        }
        #expect(failures["fcm/UNREGISTERED"] == 1)
        #expect(failures["fcm/INVALID_ARGUMENT:token"] == 1)
        #expect(failures["fcm/SENDER_ID_MISMATCH"] == 1)
        #expect(failures["fcm/THIRD_PARTY_AUTH_ERROR"] == 1)
        // INTERNAL is retried until max_attempts, then reported; `flaky 2` is delivered at the third.
        #expect(failures["fcm/INTERNAL"] == 1)
        #expect(report["delivered"] as? Int == 35)

        let fcm = try Self.fcmRecords(project, "fcm.jsonl")
        func sent(_ index: Int) -> Int { fcm.filter { $0["token"] as? String == Self.fcmToken(index) }.count }
        #expect(sent(1) == 1 && sent(2) == 1 && sent(3) == 1 && sent(5) == 1, "permanent reasons are not retried")
        #expect(sent(4) == 3)
        #expect(sent(6) == 3)
        // QUOTA_EXCEEDED paused the whole run for its Retry-After, then the message went again.
        #expect(sent(7) == 2)
        let quota = try #require(fcm.first { $0["reason"] as? String == "QUOTA_EXCEEDED" }?["time"] as? Double)
        // (What was already on the wire when the 429 came back arrives within milliseconds.)
        let times = fcm.compactMap { $0["time"] as? Double }
        #expect(!times.contains { $0 >= quota + 0.2 && $0 < quota + 0.9 }, "nothing sent while the run waited")

        // The dead tokens (UNREGISTERED, and INVALID_ARGUMENT about the token of a valid message)
        // are suppressed next time.
        let again = try CLI.run(["plan", "campaigns/a.yaml"], in: project.root)
        #expect(again.stdout.contains("  suppressed               2"), "\(again.stdout)")
    }

    /// Replay and the frequency cap work for Android phones as for iPhones: a message that failed
    /// for a reason worth trying again goes again to exactly its recipient; dead tokens and reasons
    /// FCM never retries need --force; deliveries count toward the next campaign's cap.
    @Test func androidFailuresReplayAndDeliveriesCountTowardTheCap() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.simulate(
            [(1, "flaky 2"), (2, "unregistered"), (3, "reason SENDER_ID_MISMATCH")],
            in: project,
            id: "replayed",
            count: 10,
            attempts: 2
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let send = try CLI.run(["send", "--quiet", "campaigns/a.yaml"], in: project.root)
        #expect(send.status == 4, "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("delivered 7, failed 3\n"), "\(send.stdout)")

        let dead = try CLI.run(["replay", "1", "--reason", "fcm/UNREGISTERED"], in: project.root)
        #expect(dead.status == 1)
        #expect(dead.stderr.contains("FCM called those tokens dead (fcm/UNREGISTERED)"), "\(dead.stderr)")
        let mismatch = try CLI.run(["replay", "1", "--reason", "fcm/sender_id_mismatch"], in: project.root)
        #expect(mismatch.status == 1)
        #expect(mismatch.stderr.contains("FCM never retries fcm/SENDER_ID_MISMATCH"), "\(mismatch.stderr)")

        // The phone FCM answered UNAVAILABLE twice goes again, alone, and gets it.
        let replay = try CLI.run(["replay", "1", "--reason", "fcm/UNAVAILABLE", "--quiet"], in: project.root)
        _ = sim.stop()
        #expect(replay.status == 0, "\(replay.stdout)\(replay.stderr)")
        #expect(replay.stdout.contains("delivered 1, failed 0\n"), "\(replay.stdout)")
        let records = try Self.fcmRecords(project, "fcm.jsonl")
        #expect(records.filter { $0["token"] as? String == Self.fcmToken(1) }.count == 3)
        #expect(records.count == 12, "ten, one retry, one replay")

        // Eight phones were delivered to: a campaign capped at one message a day passes them over.
        try project.write(
            "campaigns/b.yaml",
            Self.androidCampaign(
                "capped",
                message: "{ title: Again, body: Soon }",
                extra: "frequency_cap: { max: 1, per: 24h }\n"
            )
        )
        let plan = try CLI.run(["plan", "campaigns/b.yaml"], in: project.root)
        #expect(Self.number(after: "  capped", in: plan.stdout) == 8, "\(plan.stdout)")
        #expect(Self.number(after: "  suppressed", in: plan.stdout) == 1, "\(plan.stdout)")
    }

    /// Quiet hours on each recipient's clock hold for Android phones: the phones where it is night
    /// are passed over (`action: drop`), the others get the message.
    @Test func quietHoursFollowEachAndroidPhonesClock() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(["--state-dir", "sim", "--record-fcm", "fcm.jsonl"], in: project.root)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(project, port: sim.port)
        // Quiet from an hour ago to an hour from now on the phone's clock: now for the phones in UTC,
        // not for those in Kolkata (UTC+5:30, five and a half hours later).
        func clock(_ seconds: Double) -> String {
            let minutes = (Int(seconds / 60) % 1440 + 1440) % 1440
            return String(format: "%02d:%02d", minutes / 60, minutes % 60)
        }
        let now = Date().timeIntervalSince1970
        let zones = ["UTC", "Asia/Kolkata", "UTC", "Asia/Kolkata"]
        let rows = zones.enumerated().map { "\(Self.fcmToken($0.offset)),android,\($0.element)" }
        try project.write("audiences/a.csv", "token,platform,timezone\n" + rows.joined(separator: "\n") + "\n")
        try project.write(
            "campaigns/a.yaml",
            Self.androidCampaign(
                "night",
                extra: "quiet_hours: { from: \"\(clock(now - 3600))\", to: \"\(clock(now + 3600))\", action: drop }\n"
            )
        )
        let send = try CLI.run(["send", "--quiet", "campaigns/a.yaml"], in: project.root)
        _ = sim.stop()
        #expect(send.stdout.contains("delivered 2, failed 0\n"), "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("quiet-hours"), "\(send.stdout)")
        let sent = try Self.fcmRecords(project, "fcm.jsonl").compactMap { $0["token"] as? String }
        #expect(sent.sorted() == [Self.fcmToken(1), Self.fcmToken(3)].sorted())
    }

    /// `plan --fcm-dry-run N`: Google (the simulator) checks the first N Android messages with
    /// `validate_only`, answers are counted by reason, and nothing is delivered.
    @Test func googlesDryRunChecksASampleWithoutDelivering() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try project.write(
            "tokens.txt",
            "\(Self.fcmToken(2)) unregistered\n\(Self.fcmToken(3)) reason SENDER_ID_MISMATCH\n"
        )
        let sim = try SimulatorProcess(
            ["--state-dir", "sim", "--tokens", "tokens.txt", "--record-fcm", "fcm.jsonl"],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(project, port: sim.port)
        try Self.writeAndroidCampaign(project, id: "dry", count: 30, throttle: "{ rate: 100/s }")
        let plan = try CLI.run(["plan", "--fcm-dry-run", "10", "campaigns/a.yaml"], in: project.root)
        // SENDER_ID_MISMATCH would refuse a message of every recipient of that project: exit 3.
        #expect(plan.status == 3, "\(plan.stdout)\(plan.stderr)")
        #expect(
            plan.stdout.contains(
                "Google's dry run (validate_only, nothing delivered) of 10 Android messages: 8 ok, 1 fcm/SENDER_ID_MISMATCH, 1 fcm/UNREGISTERED"
            ),
            "\(plan.stdout)"
        )
        #expect(plan.stdout.contains("audiences/a.csv:4: token fcm00000…"), "\(plan.stdout)")
        let json = try CLI.run(
            ["plan", "--format", "json", "--fcm-dry-run", "3", "campaigns/a.yaml"],
            in: project.root
        )
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let dryRun = try #require(object["fcm_dry_run"] as? [String: Any])
        #expect(dryRun["asked"] as? Int == 3)
        #expect((dryRun["answers"] as? [String: Int])?["fcm/UNREGISTERED"] == 1)
        _ = sim.stop()
        let fcm = try Self.fcmRecords(project, "fcm.jsonl")
        #expect(fcm.count == 13)
        #expect(fcm.allSatisfy { $0["validate_only"] as? Bool == true }, "nothing was delivered")
        // Nothing was recorded as sent: the plan still plans everyone.
        let again = try CLI.run(["plan", "campaigns/a.yaml"], in: project.root)
        #expect(again.stdout.contains("  planned                 30"), "\(again.stdout)")
    }

    /// Tokens revoked mid-run (as when a key is deleted and another made): the 401 retires the
    /// token, one fresh token is fetched, the refused requests go again and nothing is lost or sent twice.
    @Test func aRevokedAccessTokenIsReplacedByOneFreshToken() throws {
        let (send, summary, fcm, _) = try Self.sendAndroid(
            simulator: ["--fcm-revoke-after", "20"],
            id: "revoked",
            count: 200,
            throttle: "{ rate: 400/s, connections: 1 }"
        )
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("delivered 200, failed 0"), "\(send.stdout)")
        #expect(summary.contains("fcm access tokens: 2 issued"), "one fresh token, not more: \(summary)")
        #expect(fcm.contains { $0["status"] as? Int == 401 })
        let delivered = fcm.filter { $0["status"] as? Int == 200 }.compactMap { $0["token"] as? String }
        #expect(delivered.count == 200 && Set(delivered).count == 200)
    }

    /// The service account's key deleted mid-run: the 401 gets one attempt at a fresh token, the
    /// token endpoint refuses the key, and the run stops as bad APNs credentials stop it (exit 2),
    /// every message not sent left for a resume once the key is replaced.
    @Test func aDeletedKeyStopsTheRunAfterOneAttemptAtAFreshToken() throws {
        let (send, summary, fcm, runs) = try Self.sendAndroid(
            simulator: ["--fcm-delete-key-after", "20"],
            id: "deleted",
            count: 200,
            throttle: "{ rate: 400/s, connections: 1 }"
        )
        #expect(send.status == 2, "\(send.stdout)\(send.stderr)")
        #expect((send.stdout + send.stderr).contains("invalid_grant"), "\(send.stdout)\(send.stderr)")
        #expect(summary.contains("fcm access tokens: 1 issued"), "\(summary)")
        #expect(fcm.filter { $0["status"] as? Int == 200 }.count == 20)
        // Nothing goes out after the refusal but what was already on the wire.
        #expect(fcm.filter { $0["status"] as? Int == 401 }.count <= 20, "\(fcm.count) requests")
        let object = try JSONSerialization.jsonObject(with: Data(runs.utf8)) as? [[String: Any]]
        #expect(object?.first?["status"] as? String == "interrupted", "\(runs)")
    }

    /// Tokens that live 70 seconds (Google's live an hour): renewed halfway through the time they may
    /// be sent with, so none is sent expired and none is fetched in a loop.
    @Test func shortLivedAccessTokensAreRenewedBeforeTheyExpire() throws {
        let (send, summary, fcm, _) = try Self.sendAndroid(
            simulator: ["--fcm-token-lifetime", "64"],
            id: "short-lived",
            count: 24,
            throttle: "{ rate: 4/s, connections: 1 }"
        )
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("delivered 24, failed 0"), "\(send.stdout)")
        // About 6 s of sending with a token usable for 4 s (64 − the 60 s margin), renewed after 2 s:
        // a few tokens, never a 401.
        #expect(fcm.allSatisfy { $0["status"] as? Int == 200 })
        let issued = Self.number(after: "fcm access tokens: ", in: summary)
        #expect((2...8).contains(issued), "\(summary)")
    }

    /// kill -9 in the middle of a mixed send, then send again: the run resumes, every device of both
    /// platforms is delivered, and no more are sent twice than the run lists as possible duplicates.
    @Test func aKilledMixedSendResumesWithoutSendingTwice() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let people = 16_000
        let sim = try SimulatorProcess(
            [
                "--state-dir", "sim", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--topic",
                "com.example.shop", "--record", "apns.csv", "--record-fcm", "fcm.jsonl",
            ],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(project, port: sim.port)
        try Self.writeAudience(project, people: people)
        try project.write(
            "campaigns/mixed.yaml",
            Self.campaign.replacingOccurrences(of: "rate: 5000/s", with: "rate: 20000/s")
        )

        let send = Process()
        send.executableURL = CLI.binary
        send.arguments = ["send", "--quiet", "campaigns/mixed.yaml"]
        send.currentDirectoryURL = project.root
        send.standardOutput = FileHandle.nullDevice
        send.standardError = FileHandle.nullDevice
        try send.run()
        // Killed in the middle: once the journal has a few thousand deliveries.
        func delivered() throws -> Int {
            let runs = try CLI.run(["runs", "--format", "json"], in: project.root)
            let list = try? JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]]
            return list?.first?["delivered"] as? Int ?? 0
        }
        #expect(try ConsoleBrowserTests.eventually(30) { try delivered() >= 3_000 })
        kill(send.processIdentifier, SIGKILL)
        send.waitUntilExit()

        let last = try CLI.run(["send", "--quiet", "campaigns/mixed.yaml"], in: project.root)
        _ = sim.stop()
        #expect(last.status == 0, "\(last.stdout)\(last.stderr)")
        #expect(last.stderr.contains("resuming run 1"), "\(last.stderr)")

        var deliveries: [String: Int] = [:]
        let apns = try String(contentsOf: project.root.appendingPathComponent("apns.csv"), encoding: .utf8)
        for line in apns.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            if fields[1] == "200" { deliveries[String(fields[0]), default: 0] += 1 }
        }
        for record in try Self.fcmRecords(project, "fcm.jsonl") where record["status"] as? Int == 200 {
            deliveries[record["token"] as? String ?? "", default: 0] += 1
        }
        #expect(deliveries.count == people + people / 2, "every device of both platforms")
        let duplicated = deliveries.values.reduce(0) { $0 + ($1 - 1) }
        let runs = try CLI.run(["runs", "--format", "json"], in: project.root)
        let object = try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]]
        #expect(object?.first?["status"] as? String == "finished")
        #expect(object?.first?["delivered"] as? Int == people + people / 2)
        let reported = object?.first?["possible_duplicates"] as? Int ?? -1
        #expect(duplicated <= reported, "\(duplicated) sent twice, \(reported) listed")
    }

    static func number(after prefix: String, in text: String) -> Int {
        guard let range = text.range(of: prefix) else { return -1 }
        return Int(text[range.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }) ?? -1
    }
}
