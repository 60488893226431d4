import Foundation
import PushcampTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Audiences read from a PostgreSQL query, through the built binary: planned as the same rows in a
/// CSV file are (filters, caps, buckets), checked without reading a row, and sent from the run's
/// snapshot, so that an audience that changes while the run is interrupted does not change the run.
@Suite("PostgreSQL audiences, from the command line", .serialized)
struct PostgresAudienceCLITests {
    static let count = 600

    /// `devices` in a new database: `count` rows, every sixth not opted in.
    static func audience() throws -> (url: String, server: TestPostgres.Server) {
        let (name, url) = try TestPostgres.newDatabase()
        let server = try TestPostgres.server().on(database: name)
        let rows = (0..<count).map { "(\($0), '\(TemporaryProject.token($0))', 'Name\($0)', \($0 % 6 != 0))" }
        try TestPostgres.psql(
            server,
            "CREATE TABLE devices (id int PRIMARY KEY, token text, name text, opted_in bool);"
                + "INSERT INTO devices VALUES \(rows.joined(separator: ","))"
        )
        return (url, server)
    }

    static func campaign(id: String, source: String, extra: String = "") -> String {
        """
        campaign: \(id)
        app: shop
        audience:
          source: \(source)
          where: opted_in
        message:
          payload: { aps: { alert: "hi {{name}}" } }
          holdout: 10%
          variants:
            - { name: a, weight: 1 }
            - { name: b, weight: 1 }
        frequency_cap: { max: 1, per: 24h }
        \(extra)
        """
    }

    /// The plan's funnel and per-variant lines (what the source's name and revision do not change).
    static func funnel(_ plan: String) -> [Substring] {
        plan.split(separator: "\n").filter { line in
            ["read", "duplicates", "filtered out", "capped", "held out", "planned", "  variant"].contains {
                line.trimmingCharacters(in: .whitespaces).hasPrefix($0.trimmingCharacters(in: .whitespaces))
            }
        }
    }

    /// What `runs` says `campaign`'s first run delivered so far (0 before it has one).
    static func delivered(_ campaign: String, in project: TemporaryProject) -> Int {
        let runs = (try? CLI.run(["runs", "--format", "json"], in: project.root))?.stdout ?? ""
        let listed = (try? JSONSerialization.jsonObject(with: Data(runs.utf8))) as? [[String: Any]] ?? []
        return listed.first { $0["campaign"] as? String == campaign }?["delivered"] as? Int ?? 0
    }

    /// Runs `pushcamp ARGUMENTS` in `project` with `environment` and kills it (-9) once `campaign`'s
    /// run has delivered more than `count`.
    static func kill(
        _ arguments: [String],
        once campaign: String,
        delivered count: Int,
        in project: TemporaryProject,
        environment: [String: String]
    ) throws {
        let send = Process()
        send.executableURL = CLI.binary
        send.arguments = arguments
        send.currentDirectoryURL = project.root
        send.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        send.standardOutput = FileHandle.nullDevice
        send.standardError = FileHandle.nullDevice
        try send.run()
        eventually(within: 30, every: 0.05) { delivered(campaign, in: project) > count }
        Glibc.kill(send.processIdentifier, SIGKILL)
        send.waitUntilExit()
    }

    @Test func aPostgreSQLAudienceIsPlannedAsItsRowsInAFileAndSentFromTheRunsSnapshot() async throws {
        try await onOwnThread(Self.aPostgreSQLAudienceIsPlannedAsItsRowsInAFileAndSentFromTheRunsSnapshotScenario)
    }

    static func aPostgreSQLAudienceIsPlannedAsItsRowsInAFileAndSentFromTheRunsSnapshotScenario() throws {
        let (url, server) = try Self.audience()
        let (project, sim) = try ServeCLITests.simulated()
        defer {
            if sim.process.isRunning { _ = sim.stop() }
            project.remove()
        }
        // Any password in the URL comes from the environment, and no message repeats it.
        let secret = "not-the-password-\(getpid())"
        let environment = ["AUDIENCE_URL": url.replacingOccurrences(of: "@", with: ":\(secret)@")]
        // Forty recipients already delivered today: the frequency cap holds them back.
        try project.write(
            "audiences/warm.csv",
            TemporaryProject.csv(count: 40, columns: ["name", "opted_in"]) { ["Name\($0)", "true"] }
        )
        try project.write(
            "campaigns/warm.yaml",
            "campaign: warm\napp: shop\naudience:\n  source: { csv: audiences/warm.csv }\n"
                + "message:\n  payload: { aps: { alert: warm } }\nfrequency_cap: off\n"
        )
        let warm = try CLI.run(["send", "--quiet", "campaigns/warm.yaml"], in: project.root)
        #expect(warm.status == 0, "\(warm.stderr)")

        let query = "SELECT token, name, opted_in FROM devices ORDER BY id"
        try project.write(
            "campaigns/pg.yaml",
            Self.campaign(
                id: "pg",
                source: "{ postgres: \"${env:AUDIENCE_URL}\", query: \"\(query)\" }",
                extra: "throttle: { rate: 100/s, connections: 1 }"
            )
        )
        // The same rows as a file, the same campaign id: the same plan, bucket for bucket.
        try project.write(
            "audiences/same.csv",
            TemporaryProject.csv(count: Self.count, columns: ["name", "opted_in"]) {
                ["Name\($0)", $0 % 6 != 0 ? "true" : "false"]
            }
        )
        try project.write("campaigns/csv.yaml", Self.campaign(id: "pg", source: "{ csv: audiences/same.csv }"))

        let validated = try CLI.run(["validate", "campaigns/pg.yaml"], in: project.root, environment: environment)
        #expect(validated.status == 0, "\(validated.stderr)")
        let plan = try CLI.run(["plan", "campaigns/pg.yaml"], in: project.root, environment: environment)
        let same = try CLI.run(["plan", "campaigns/csv.yaml"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("Audience (postgres "), "\(plan.stdout)")
        #expect(Self.funnel(plan.stdout) == Self.funnel(same.stdout), "\(plan.stdout)\n---\n\(same.stdout)")
        #expect(plan.stdout.contains("filtered out           100"), "\(plan.stdout)")
        // Of the forty warm tokens, the six not opted in were filtered out first.
        #expect(plan.stdout.contains("capped                  33"), "\(plan.stdout)")
        #expect(plan.stdout.contains("hi Name40"), "\(plan.stdout)")
        let planned = SendCLITests.numbers(in: plan.stdout, lineStartingWith: "  planned").first ?? -1
        #expect(planned > 400, "\(plan.stdout)")

        // Killed while it sends; then the audience changes: everyone flips, and new rows come.
        try Self.kill(
            ["send", "--quiet", "campaigns/pg.yaml"],
            once: "pg",
            delivered: 30,
            in: project,
            environment: environment
        )
        let received = project.root.appendingPathComponent("received.csv")
        let added = (Self.count..<(Self.count + 50)).map {
            "(\($0), '\(TemporaryProject.token($0))', 'New\($0)', true)"
        }
        try TestPostgres.psql(
            server,
            "UPDATE devices SET opted_in = NOT opted_in; INSERT INTO devices VALUES \(added.joined(separator: ","))"
        )
        let resumed = try CLI.run(["send", "--quiet", "campaigns/pg.yaml"], in: project.root, environment: environment)
        _ = sim.stop()
        #expect(resumed.status == 0, "\(resumed.stdout)\(resumed.stderr)")
        #expect(!(resumed.stdout + resumed.stderr + plan.stderr + validated.stderr).contains(secret))

        // The run sent its plan: every planned recipient, nobody it had filtered out, nobody new.
        let runs = try CLI.run(["runs", "--format", "json"], in: project.root)
        let listed = try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]] ?? []
        let run = listed.first { $0["campaign"] as? String == "pg" }
        #expect(run?["status"] as? String == "finished", "\(runs.stdout)")
        #expect(run?["delivered"] as? Int == planned, "\(runs.stdout)")
        let text = try String(contentsOf: received, encoding: .utf8)
        var alerts: [String: Set<String>] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            alerts[String(fields[0]), default: []].insert(String(line))
        }
        let outsiders = (0..<(Self.count + 50)).filter { $0 % 6 == 0 || $0 >= Self.count }
        for index in outsiders where index >= 40 {
            #expect(alerts[TemporaryProject.token(index)] == nil, "row \(index) was not in the run's plan")
        }
    }

    /// A campaign with an Android app on a PostgreSQL audience: planned once into the run's
    /// snapshot with each push's platform, sent by one worker over APNs and FCM; killed, the table
    /// changed, sent again: every iPhone and Android phone of the plan gets it, nobody the table
    /// gained or changed since.
    @Test func aMixedCampaignOnAPostgreSQLAudienceSendsItsPlanToBothPlatforms() async throws {
        try await onOwnThread(Self.aMixedCampaignOnAPostgreSQLAudienceSendsItsPlanToBothPlatformsScenario)
    }

    static func aMixedCampaignOnAPostgreSQLAudienceSendsItsPlanToBothPlatformsScenario() throws {
        let (name, url) = try TestPostgres.newDatabase()
        let server = try TestPostgres.server().on(database: name)
        let people = 300
        var rows: [String] = []
        for index in 0..<people {
            rows.append("(\(2 * index), 'u\(index)', '\(TemporaryProject.token(index))', 'iOS', 'Name\(index)')")
            if index % 2 == 0 {
                rows.append(
                    "(\(2 * index + 1), 'u\(index)', '\(AndroidCLITests.fcmToken(index))', 'Android', 'Name\(index)')"
                )
            }
        }
        try TestPostgres.psql(
            server,
            "CREATE TABLE users (id int PRIMARY KEY, user_id text, token text, platform text, name text);"
                + "INSERT INTO users VALUES \(rows.joined(separator: ","))"
        )
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(
            [
                "--state-dir", "sim", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--topic",
                "com.example.shop", "--record", "apns.csv", "--record-fcm", "fcm.jsonl",
            ],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try AndroidCLITests.writeProject(project, port: sim.port)
        let query = "SELECT user_id, token, platform, name FROM users ORDER BY id"
        try project.write(
            "campaigns/mixed.yaml",
            AndroidCLITests.campaign
                .replacingOccurrences(
                    of: "source: { csv: audiences/users.csv }",
                    with: "source: { postgres: \"${env:AUDIENCE_URL}\", query: \"\(query)\" }"
                )
                .replacingOccurrences(of: "rate: 5000/s", with: "rate: 150/s")
        )
        let environment = ["AUDIENCE_URL": url]
        let plan = try CLI.run(["plan", "campaigns/mixed.yaml"], in: project.root, environment: environment)
        #expect(plan.status == 0, "\(plan.stdout)\(plan.stderr)")
        #expect(plan.stdout.contains("  iOS                    300   via APNs\n"), "\(plan.stdout)")
        #expect(plan.stdout.contains("  Android                150   via FCM\n"), "\(plan.stdout)")

        // Killed while it sends; then the table changes: half the people go, others come.
        try Self.kill(
            ["send", "--quiet", "campaigns/mixed.yaml"],
            once: "mixed",
            delivered: 30,
            in: project,
            environment: environment
        )
        let newcomers = (people..<(people + 20)).flatMap { index in
            [
                "(\(2 * index), 'u\(index)', '\(TemporaryProject.token(index))', 'iOS', 'New\(index)')",
                "(\(2 * index + 1), 'u\(index)', '\(AndroidCLITests.fcmToken(index))', 'Android', 'New\(index)')",
            ]
        }
        try TestPostgres.psql(
            server,
            "DELETE FROM users WHERE id % 4 = 0; INSERT INTO users VALUES \(newcomers.joined(separator: ","))"
        )
        let resumed = try CLI.run(
            ["send", "--quiet", "campaigns/mixed.yaml"],
            in: project.root,
            environment: environment
        )
        _ = sim.stop()
        #expect(resumed.status == 0, "\(resumed.stdout)\(resumed.stderr)")
        #expect(resumed.stderr.contains("resuming run 1"), "\(resumed.stderr)")

        // The run sent its plan to both platforms, each phone once but for a listed possible
        // duplicate; none of the newcomers.
        let runs = try CLI.run(["runs", "--format", "json"], in: project.root)
        let listed = try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]] ?? []
        let run = try #require(listed.first { $0["campaign"] as? String == "mixed" })
        #expect(run["status"] as? String == "finished", "\(runs.stdout)")
        #expect(run["delivered"] as? Int == 450, "\(runs.stdout)")
        let apns = try String(contentsOf: project.root.appendingPathComponent("apns.csv"), encoding: .utf8)
            .split(separator: "\n").dropFirst().map { String($0.split(separator: ",")[0]) }
        let records = try AndroidCLITests.fcmRecords(project, "fcm.jsonl")
        let fcm = records.compactMap { $0["token"] as? String }
        // An Android push from the snapshot is the message the plan rendered.
        let text = try #require(records.first { $0["token"] as? String == AndroidCLITests.fcmToken(0) }?["message"])
        let body = try #require(try JSONSerialization.jsonObject(with: Data("\(text)".utf8)) as? [String: Any])
        let message = try #require(body["message"] as? [String: Any])
        #expect((message["notification"] as? [String: Any])?["title"] as? String == "Spring sale, Name0")
        #expect(Set(apns) == Set((0..<people).map(TemporaryProject.token)))
        #expect(Set(fcm) == Set(stride(from: 0, to: people, by: 2).map(AndroidCLITests.fcmToken)))
        let twice = apns.count - Set(apns).count + fcm.count - Set(fcm).count
        #expect(twice <= run["possible_duplicates"] as? Int ?? 0, "\(twice) sent twice: \(runs.stdout)")
    }

    /// A recipient-local schedule on a PostgreSQL audience: each push is kept in the run's snapshot
    /// with its moment. Those whose local time had passed go at once, the others are held for
    /// theirs; killed while it holds them, the table changed, sent again: the held ones go at the
    /// moment the plan gave them, and nobody the table gained.
    @Test func aLocalTimeCampaignOnAPostgreSQLAudienceKeepsEachRecipientsMomentThroughAResume() async throws {
        try await onOwnThread(
            Self.aLocalTimeCampaignOnAPostgreSQLAudienceKeepsEachRecipientsMomentThroughAResumeScenario
        )
    }

    static func aLocalTimeCampaignOnAPostgreSQLAudienceKeepsEachRecipientsMomentThroughAResumeScenario() throws {
        let (name, url) = try TestPostgres.newDatabase()
        let server = try TestPostgres.server().on(database: name)
        // Even rows in UTC, odd rows in Kolkata (five and a half hours ahead: its wall time passed).
        let rows = (0..<40).map {
            "(\($0), '\(TemporaryProject.token($0))', '\($0 % 2 == 0 ? "UTC" : "Asia/Kolkata")')"
        }
        try TestPostgres.psql(
            server,
            "CREATE TABLE devices (id int PRIMARY KEY, token text, tz text);"
                + "INSERT INTO devices VALUES \(rows.joined(separator: ","))"
        )
        let (project, sim) = try ServeCLITests.simulated()
        defer {
            if sim.process.isRunning { _ = sim.stop() }
            project.remove()
        }
        // Ten seconds from now on a UTC wall clock.
        let moment = (Date().timeIntervalSince1970 + 10).rounded(.up)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        let wall = formatter.string(from: Date(timeIntervalSince1970: moment))
        try project.write(
            "campaigns/local.yaml",
            """
            campaign: local
            app: shop
            audience:
              source: { postgres: "${env:AUDIENCE_URL}", query: "SELECT token, tz FROM devices ORDER BY id" }
            message:
              payload: { aps: { alert: "good morning" } }
            schedule: { at: "\(wall)", timezone: recipient, zone_attribute: tz, on_passed: send_now }
            throttle: { rate: 100/s, connections: 1 }
            """
        )
        let environment = ["AUDIENCE_URL": url]
        let validated = try CLI.run(["validate", "campaigns/local.yaml"], in: project.root, environment: environment)
        #expect(validated.status == 0, "\(validated.stdout)\(validated.stderr)")

        try Self.kill(
            ["send", "--now", "--quiet", "campaigns/local.yaml"],
            once: "local",
            delivered: 19,
            in: project,
            environment: environment
        )
        #expect(
            Date().timeIntervalSince1970 < moment && Self.delivered("local", in: project) == 20,
            "the held pushes went before the send could be killed: nothing was tested"
        )
        // Everyone in UTC now (a plan made again would hold them all), and newcomers.
        let added = (40..<50).map { "(\($0), '\(TemporaryProject.token($0))', 'UTC')" }
        try TestPostgres.psql(
            server,
            "UPDATE devices SET tz = 'UTC'; INSERT INTO devices VALUES \(added.joined(separator: ","))"
        )
        let resumed = try CLI.run(
            ["send", "--now", "--quiet", "campaigns/local.yaml"],
            in: project.root,
            environment: environment
        )
        _ = sim.stop()
        #expect(resumed.status == 0, "\(resumed.stdout)\(resumed.stderr)")
        #expect(resumed.stderr.contains("resuming run 1"), "\(resumed.stderr)")

        // Each of the plan's forty once; the twenty in UTC not before their moment; no newcomer.
        let text = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
        var times: [String: [Double]] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            if fields[1] == "200" { times[String(fields[0]), default: []].append(Double(fields[7]) ?? 0) }
        }
        #expect(Set(times.keys) == Set((0..<40).map(TemporaryProject.token)))
        #expect(times.values.allSatisfy { $0.count == 1 }, "\(times.filter { $0.value.count > 1 })")
        for index in stride(from: 0, to: 40, by: 2) {
            let at = times[TemporaryProject.token(index)]?.first ?? 0
            #expect(at >= moment - 0.5, "row \(index) went at \(at), before its moment \(moment)")
        }
    }

    @Test func aPostgreSQLAudienceNamesItsProblemsWithoutItsURLAndRefusesWhatItCannotPlanOnce() throws {
        let (url, _) = try Self.audience()
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try SendCLITests.writeProject(project, port: 1, credentials: SendCLITests.simulatorKey)
        let secret = "not-the-password-\(getpid())"
        let environment = ["AUDIENCE_URL": url.replacingOccurrences(of: "@", with: ":\(secret)@")]
        func validate(_ source: String, extra: String = "") throws -> CLI.Output {
            try project.write("campaigns/c.yaml", Self.campaign(id: "c", source: source, extra: extra))
            return try CLI.run(["validate", "campaigns/c.yaml"], in: project.root, environment: environment)
        }
        // The query is checked, not run: a row that would fail it is never read by validate.
        let unread = try validate(
            "{ postgres: \"${env:AUDIENCE_URL}\", query: \"SELECT token, name, opted_in, 1 / (id - 7) AS x FROM devices\" }"
        )
        #expect(unread.status == 0, "\(unread.stdout)")
        let unset = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root)
        #expect(unset.status == 1)
        #expect(unset.stdout.contains("environment variable AUDIENCE_URL is not set"), "\(unset.stdout)")
        for (query, said) in [
            ("SELECT tokn, name, opted_in FROM devices", "column \"tokn\" does not exist"),
            ("SELECT id, name, opted_in FROM devices", "the query returns no 'token' column"),
            ("DELETE FROM devices RETURNING token", "must be a SELECT (or WITH … SELECT), found DELETE"),
            ("SELECT token, name, opted_in FROM devices; DROP TABLE devices", "syntax error"),
        ] {
            let output = try validate("{ postgres: \"${env:AUDIENCE_URL}\", query: \"\(query)\" }")
            #expect(output.status == 1, "\(query)")
            #expect(output.stdout.contains("campaigns/c.yaml:4:11: error:"), "\(output.stdout)")
            #expect(output.stdout.contains(said), "\(output.stdout)")
            #expect(!(output.stdout + output.stderr).contains(secret))
        }
        let written = try validate(
            "{ postgres: \"postgres://u:\(secret)@db.internal/app\", query: \"SELECT token FROM t\" }"
        )
        #expect(
            written.stdout.contains("carries a password, which must not be in a campaign file"),
            "\(written.stdout)"
        )
        #expect(!(written.stdout + written.stderr).contains(secret))
        // A trigger's run cannot come from a snapshot yet: said before any send.
        let triggered = try validate(
            "{ postgres: \"${env:AUDIENCE_URL}\", query: \"SELECT token, name, opted_in FROM devices\" }",
            extra: "trigger: { app_store: DID_FAIL_TO_RENEW }"
        )
        #expect(triggered.status == 1)
        #expect(
            triggered.stdout.contains("a PostgreSQL audience is planned once into the journal"),
            "\(triggered.stdout)"
        )
    }
}
