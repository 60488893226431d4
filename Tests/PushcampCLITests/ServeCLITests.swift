import Foundation
import PushcampTestSupport
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `pushcamp serve` in its own process: its log (standard error) is collected as it comes, and
/// the port it listens on is read from its first line.
final class ServeProcess: Sendable {
    let process: Process
    let port: Int
    private let log = Mutex("")
    private let logEnded = Mutex(false)

    /// `environment` replaces the test's own (for a variable left unset); `descriptorLimit` starts it
    /// under `ulimit -n`.
    init(
        in directory: URL,
        arguments: [String] = [],
        environment: [String: String]? = nil,
        descriptorLimit: Int? = nil
    ) throws {
        let process = Process()
        let serve = ["serve", "--listen", "127.0.0.1:0"] + arguments
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", CLI.binary.path] + serve
        } else {
            process.executableURL = CLI.binary
            process.arguments = serve
        }
        if let environment { process.environment = environment }
        process.currentDirectoryURL = directory
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        self.process = process
        let reader = errors.fileHandleForReading
        var port: Int?
        var seen = ""
        let deadline = Date().addingTimeInterval(30)
        while port == nil, Date() < deadline {
            let chunk = reader.availableData
            guard !chunk.isEmpty else { break }
            seen += String(decoding: chunk, as: UTF8.self)
            if let range = seen.range(of: "listening on http://127.0.0.1:") {
                port = Int(seen[range.upperBound...].prefix { $0.isNumber })
            }
        }
        guard let port else {
            process.terminate()
            throw CLIError("pushcamp serve did not start: \(seen)")
        }
        self.port = port
        log.withLock { $0 = seen }
        Thread.detachNewThread { [self] in
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                self.log.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
            self.logEnded.withLock { $0 = true }
        }
    }

    var output: String { log.withLock { $0 } }

    /// Waits (at most `timeout` seconds) until the log holds `count` lines containing `text`.
    func waitFor(_ text: String, count: Int = 1, timeout: Double = 30) -> Bool {
        eventually(within: timeout) { output.components(separatedBy: text).count - 1 >= count }
    }

    /// Waits until the scheduler has decided `count` more ticks (its last tick, in `/metrics`, moved
    /// on by as many seconds): for tests that check what serve does not do.
    func waitForTicks(_ count: Int, timeout: Double = 30) -> Bool {
        let series = "pushcamp_scheduler_last_tick_timestamp_seconds"
        let tick = { ServeCLITests.value(of: series, in: (try? self.get("/metrics").body) ?? "") }
        let first = tick()
        return eventually(within: timeout, every: 0.1) { first > 0 && tick() >= first + Double(count) }
    }

    /// CPU seconds the process has used so far (user and system, from /proc).
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// SIGINT (a graceful drain); its exit status.
    func stop() -> Int32 {
        process.interrupt()
        process.waitUntilExit()
        // Its last lines read.
        eventually(within: 5) { logEnded.withLock { $0 } }
        return process.terminationStatus
    }

    /// `/readyz` once its body passes `check` (the first ticks take a moment), or after 15 s.
    func readiness(_ check: (String) -> Bool) throws -> (status: Int, body: String) {
        var answer = try get("/readyz")
        try eventually(within: 15, every: 0.1) {
            answer = try get("/readyz")
            return check(answer.body)
        }
        return answer
    }

    func get(_ path: String) throws -> (status: Int, body: String) {
        try request(URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!))
    }

    func post(_ path: String, body: [UInt8]) throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        return try self.request(request)
    }

    private func request(_ request: URLRequest) throws -> (status: Int, body: String) {
        let path = request.url?.path ?? ""
        let result = Mutex<(Int, String)?>(nil)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, _ in
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            result.withLock { $0 = (status, String(decoding: data ?? Data(), as: UTF8.self)) }
            done.signal()
        }.resume()
        guard done.wait(timeout: .now() + 10) == .success, let answer = result.withLock({ $0 }) else {
            throw CLIError("no answer from serve on \(path)")
        }
        return answer
    }
}

@Suite("pushcamp serve: scheduled campaigns against the simulator", .serialized)
struct ServeCLITests {
    /// A project whose app sends to a fresh simulator (recording what it receives), with
    /// `count` recipients and a campaign `tick` on `schedule`.
    static func project(count: Int, schedule: String, extra: String = "") throws -> (TemporaryProject, SimulatorProcess)
    {
        let (project, sim) = try simulated()
        try SendCLITests.writeAudience(project, count: count)
        try project.write(
            "campaigns/tick.yaml",
            """
            campaign: tick
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: { aps: { alert: "hi {{name}}" } }
            schedule: \(schedule)
            \(extra)
            """
        )
        return (project, sim)
    }

    /// A new project whose app `shop` sends to a fresh simulator that records what it receives
    /// (`received.csv`, written when it stops).
    static func simulated() throws -> (TemporaryProject, SimulatorProcess) {
        let project = try TemporaryProject(projectFile: nil)
        let sim = try SimulatorProcess(
            ["--state-dir", "sim", "--team-id", "ABCDE12345", "--record", "received.csv"],
            in: project.root
        )
        try SendCLITests.writeProject(project, port: sim.port, credentials: SendCLITests.simulatorKey)
        return (project, sim)
    }

    /// `simulated()`, its app also receiving App Store notifications signed by `chain`.
    static func receiving(_ chain: AppStoreTestChain) throws -> (TemporaryProject, SimulatorProcess) {
        let (project, sim) = try simulated()
        let configured =
            try String(contentsOf: project.root.appendingPathComponent("pushcamp.yaml"), encoding: .utf8) + """

                    app_store:
                      bundle_id: com.example.shop
                      app_apple_id: 1234567890
                      trusted_roots: [test-root.pem]
                """
        try project.write("pushcamp.yaml", configured + "\n")
        try project.write("test-root.pem", chain.rootPEM)
        return (project, sim)
    }

    /// `campaigns/card.yaml`: `card-failed`, fired by DID_FAIL_TO_RENEW for the rows of
    /// `audiences/a.csv` whose `app_account_token` the subscription carries, at `rate` a second.
    static func writeTriggerCampaign(_ project: TemporaryProject, rate: Int) throws {
        try project.write(
            "campaigns/card.yaml",
            """
            campaign: card-failed
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: { aps: { alert: "your payment did not go through" } }
            trigger: { app_store: DID_FAIL_TO_RENEW }
            throttle: { rate: \(rate)/s, connections: 2 }
            """
        )
    }

    /// Deliveries per token in the simulator's record.
    static func deliveries(_ project: TemporaryProject) throws -> [Substring: Int] {
        let received = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
        var deliveries: [Substring: Int] = [:]
        for line in received.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            if fields[1] == "200" { deliveries[fields[0], default: 0] += 1 }
        }
        return deliveries
    }

    /// The `pushcamp_…` metric names in a repository file or a text, without histogram suffixes.
    static func names(in file: String) throws -> Set<String> {
        names(inText: try String(contentsOf: CLI.repository.appendingPathComponent(file), encoding: .utf8))
    }

    static func names(inText text: String) -> Set<String> {
        let words = text.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
        return Set(
            words.filter { $0.hasPrefix("pushcamp_") }.map { word in
                var name = String(word)
                for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                    name.removeLast(suffix.count)
                }
                return name
            }
        )
    }

    /// The value of the series `series` (name and labels, as printed) in Prometheus text; -1 if absent.
    static func value(of series: String, in text: String) -> Double {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1)) ?? -1
        }
        return -1
    }

    /// What the journal records as delivered by the newest run, while it sends.
    static func delivered(_ project: TemporaryProject) -> Int {
        ((try? runs(project)) ?? []).first?["delivered"] as? Int ?? 0
    }

    static func runs(_ project: TemporaryProject) throws -> [[String: Any]] {
        let runs = try CLI.run(["runs", "--format", "json", "--limit", "1000"], in: project.root)
        return try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]] ?? []
    }

    @Test func slotsFireOnceEachAndDeliverWithHealthReadinessAndMetrics() throws {
        let (project, sim) = try Self.project(count: 20, schedule: "{ every: 2s }")
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try project.write("campaigns/broken.yaml", "campaign: broken\napp: shop\nschedule: { every: 1s }\n")

        let serve = try ServeProcess(in: project.root)
        #expect(serve.waitFor("finished: 20 delivered", count: 1, timeout: 20), "\(serve.output)")
        let firedBefore = Self.value(
            of: "pushcamp_scheduler_slots_fired_total{campaign=\"tick\"}",
            in: try serve.get("/metrics").body
        )
        // A slot sends the file as it is when it fires: the next runs record the new revision.
        try project.write(
            "campaigns/tick.yaml",
            """
            campaign: tick
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: { aps: { alert: "hello again {{name}}" } }
            schedule: { every: 2s }
            """
        )
        #expect(serve.waitFor("finished: 20 delivered", count: 3, timeout: 20), "\(serve.output)")
        #expect(try serve.get("/healthz") == (200, "ok\n"))
        let ready = try serve.get("/readyz")
        #expect(ready.status == 200)
        #expect(ready.body.hasPrefix("ready\n"), "\(ready.body)")
        #expect(
            ready.body.contains("invalid: campaigns/broken.yaml: campaigns/broken.yaml:1:1: error"),
            "\(ready.body)"
        )
        let metrics = try serve.get("/metrics").body
        // The metrics move.
        let firedAfter = Self.value(of: "pushcamp_scheduler_slots_fired_total{campaign=\"tick\"}", in: metrics)
        #expect(firedBefore >= 1 && firedAfter >= firedBefore + 2, "\(firedBefore) then \(firedAfter)")
        #expect(metrics.contains("pushcamp_pushes_total{campaign=\"tick\",outcome=\"delivered\",platform=\"ios\"}"))
        #expect(metrics.contains("pushcamp_campaigns_invalid 1"))
        #expect(metrics.contains("pushcamp_scheduler_last_tick_timestamp_seconds"))
        #expect(metrics.contains("pushcamp_apns_answers_total{campaign=\"tick\",platform=\"ios\",status=\"200\"}"))
        #expect(
            metrics.contains(
                "pushcamp_apns_request_duration_seconds_bucket{campaign=\"tick\",platform=\"ios\",le=\"+Inf\"}"
            )
        )
        // Every metric serve exports, and every one the shipped alert rules use, is documented.
        let documented = try Self.names(in: "docs/metrics.md")
        for name in Self.names(inText: metrics) {
            #expect(documented.contains(name), "serve exports \(name), which docs/metrics.md does not list")
            #expect(metrics.contains("# HELP \(name) "), "\(name) has no # HELP line")
        }
        #expect(metrics.contains("pushcamp_build_info{version=\"0.1.0\",commit=\""), "\(metrics)")
        for name in ["process_cpu_seconds_total", "process_open_fds", "process_max_fds", "process_start_time_seconds"] {
            #expect(Self.value(of: name, in: metrics) > 0, "\(name)")
        }
        for name in try Self.names(in: "docs/alerts/pushcamp.rules.yml") {
            #expect(documented.contains(name), "the alert rules use \(name), which docs/metrics.md does not list")
        }
        let schedules = try CLI.run(["schedules", "--format", "json"], in: project.root)
        let listed = try JSONSerialization.jsonObject(with: Data(schedules.stdout.utf8)) as? [[String: Any]]
        let tick = listed?.first { $0["campaign"] as? String == "tick" }
        #expect(tick?["schedule"] as? String == "every 2s")
        let lastStatus = (tick?["last_fired"] as? [String: Any])?["status"] as? String
        #expect(lastStatus == "finished" || lastStatus == "running", "\(String(describing: lastStatus))")
        #expect((tick?["next_slots"] as? [String])?.count == 3)
        #expect(
            listed?.contains {
                ($0["error"] as? String)?.contains("missing required key 'message'") == true
            } == true
        )

        // A file that stops validating keeps its schedule: its slots are recorded as skipped, invalid.
        try project.write("campaigns/tick.yaml", "campaign: tick\napp: shop\nschedule: { every: 2s }\n")
        #expect(serve.waitFor("of tick skipped: invalid", timeout: 10), "\(serve.output)")
        #expect(try serve.get("/readyz").body.contains("invalid: campaigns/tick.yaml"))
        let skips = try CLI.run(["schedules"], in: project.root).stdout
        #expect(skips.contains("campaigns/tick.yaml: invalid, skipped by serve"), "\(skips)")
        #expect(serve.stop() == 0, "\(serve.output)")

        // Each run has its own slot; every recipient got one notification per run.
        let runs = try Self.runs(project)
        let slots = runs.compactMap { $0["slot"] as? String }
        #expect(slots.count == runs.count && runs.count >= 2)
        #expect(Set(slots).count == slots.count, "\(slots)")
        #expect(runs.allSatisfy { $0["status"] as? String == "finished" })
        #expect(Set(runs.compactMap { $0["revision"] as? String }).count == 2)
        _ = sim.stop()
        let deliveries = try Self.deliveries(project)
        #expect(deliveries.count == 20)
        #expect(deliveries.values.allSatisfy { $0 == runs.count }, "\(deliveries.values) vs \(runs.count) runs")

    }

    @Test func twoServesOnOneJournalFireEachSlotOnce() throws {
        let (project, sim) = try Self.project(count: 20, schedule: "{ every: 1s }")
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let first = try ServeProcess(in: project.root)
        let second = try ServeProcess(in: project.root)
        #expect(first.waitFor("delivered", count: 3, timeout: 20), "\(first.output)")
        #expect(second.waitFor("scheduled tick", timeout: 20))
        // Three more slots, with both serves ticking.
        #expect(eventually(within: 20) { ((try? Self.runs(project)) ?? []).count >= 6 })
        #expect(first.stop() == 0)
        #expect(second.stop() == 0)

        let runs = try Self.runs(project)
        let slots = runs.compactMap { $0["slot"] as? String }
        #expect(runs.count >= 4)
        #expect(Set(slots).count == runs.count, "\(slots)")
        _ = sim.stop()
        // Nobody heard a slot twice: one delivery per token per run, whichever serve sent it.
        let deliveries = try Self.deliveries(project)
        let finished = runs.filter { $0["status"] as? String == "finished" }.count
        #expect(deliveries.values.allSatisfy { $0 <= runs.count && $0 >= finished }, "\(deliveries.values)")
    }

    /// `kill -9`, then SIGTERM, while a slot's run is sending; each next serve resumes that run (same
    /// duplicate bound as `send`) and the slot never fires a second run.
    @Test func aKilledServeResumesTheSlotsRunAndFiresItOnce() throws {
        let count = 25_000
        // One slot, two seconds from now.
        let formatter = ISO8601DateFormatter()
        let at = formatter.string(from: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 2).rounded(.up)))
        let (project, sim) = try Self.project(
            count: count,
            schedule: "{ at: \(at) }",
            extra: "throttle: { rate: 5000/s, connections: 2 }"
        )
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let first = try ServeProcess(in: project.root)
        #expect(first.waitFor("sending", timeout: 30), "\(first.output)")
        #expect(eventually(within: 30) { Self.delivered(project) >= 2_000 })
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()

        // The next serve resumes it; SIGTERM drains it (in-flight answers recorded) and the one after
        // that resumes it again and finishes it.
        let second = try ServeProcess(in: project.root)
        #expect(second.waitFor("resuming run 1", timeout: 30), "\(second.output)")
        let resumedAt = Self.delivered(project)
        #expect(eventually(within: 30) { Self.delivered(project) >= resumedAt + 1_000 })
        second.process.terminate()
        second.process.waitUntilExit()
        #expect(second.process.terminationStatus == 0)
        #expect(second.output.contains("run 1 interrupted"), "\(second.output)")
        let third = try ServeProcess(in: project.root)
        #expect(third.waitFor("resuming run 1", timeout: 30), "\(third.output)")
        #expect(third.waitFor("run 1 finished", timeout: 60), "\(third.output)")
        #expect(third.stop() == 0)

        let runs = try Self.runs(project)
        #expect(runs.count == 1, "\(runs)")
        #expect(runs.first?["status"] as? String == "finished")
        #expect(runs.first?["delivered"] as? Int == count)
        _ = sim.stop()
        let deliveries = try Self.deliveries(project)
        #expect(deliveries.count == count)
        let duplicated = deliveries.values.reduce(0) { $0 + ($1 - 1) }
        let reported = runs.first?["possible_duplicates"] as? Int ?? -1
        #expect(duplicated <= reported, "\(duplicated) sent twice, \(reported) reported")
    }

    /// Apple's notifications POSTed to the real serve: stored once, duplicates answered 200,
    /// forgeries refused (a test root listed for one app included, for another app), one for an
    /// environment the app does not take quarantined, all listed and counted.
    @Test func serveReceivesAppStoreNotifications() throws {
        let chain = try AppStoreTestChain()
        let project = try TemporaryProject(
            projectFile: TemporaryProject.defaultProjectFile + """

                    app_store:
                      bundle_id: com.example.shop
                      app_apple_id: 1234567890
                      environments: [production]
                      trusted_roots: [test-root.pem]
                  prod:
                    topic: com.example.prod
                    team_id: ABCDE12345
                    key_id: KEY1234567
                    key_file: ${env:SHOP_KEY}
                    app_store:
                      bundle_id: com.example.prod
                      app_apple_id: 1234567890
                """
        )
        defer { project.remove() }
        try project.write("test-root.pem", chain.rootPEM)
        let serve = try ServeProcess(in: project.root)
        defer { if serve.process.isRunning { _ = serve.stop() } }
        #expect(serve.output.contains("trusts an App Store root besides Apple's"), "\(serve.output)")
        let path = "/app-store/notifications"
        let notification = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        #expect(try serve.post(path, body: notification) == (200, "stored\n"))
        #expect(try serve.post(path, body: notification) == (200, "duplicate\n"))
        let forged = try AppStoreTestChain().sign(AppStoreTestChain.notification())
        #expect(try serve.post(path, body: AppStoreTestChain.body(forged)) == (400, "refused: chain\n"))
        // shop's test root does not vouch for prod: whoever holds the test key cannot forge prod's.
        let prod = try chain.sign(AppStoreTestChain.notification(bundle: "com.example.prod"))
        #expect(try serve.post(path, body: AppStoreTestChain.body(prod)) == (400, "refused: chain\n"))
        let other = try chain.sign(AppStoreTestChain.notification(environment: "Sandbox"))
        #expect(try serve.post(path, body: AppStoreTestChain.body(other)) == (200, "quarantined\n"))
        let renewal = try chain.subscriptionNotification(
            type: "DID_FAIL_TO_RENEW",
            original: "2000000999",
            appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            signedDate: Date()
        )
        #expect(try serve.post(path, body: AppStoreTestChain.body(try chain.sign(renewal))) == (200, "stored\n"))
        let metrics = try serve.get("/metrics").body
        #expect(
            Self.value(
                of: "pushcamp_appstore_notifications_total{type=\"DID_FAIL_TO_RENEW\",outcome=\"stored\"}",
                in: metrics
            ) == 2,
            "\(metrics)"
        )
        #expect(Self.value(of: "pushcamp_appstore_refused_total{reason=\"chain\"}", in: metrics) == 2)
        #expect(serve.stop() == 0)

        let listed = try CLI.run(["appstore", "notifications", "--format", "json"], in: project.root)
        let rows = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(rows.count == 3, "\(listed.stdout)\(listed.stderr)")
        let subscriptions = try CLI.run(["appstore", "subscriptions", "--status", "billing-retry"], in: project.root)
        #expect(
            subscriptions.stdout.hasPrefix("2000000999  billing-retry  com.example.shop.premium  auto-renew on"),
            "\(subscriptions.stdout)"
        )
        #expect(Set(rows.compactMap { $0["kept"] as? String }) == ["stored", "quarantined"])
        #expect(rows.first { $0["kept"] as? String == "stored" }?["app"] as? String == "shop")
        let text = try CLI.run(["appstore", "notifications", "--quarantined"], in: project.root).stdout
        #expect(text.contains("quarantined: environment sandbox is not among app shop's"), "\(text)")

        // The configuration fixed, the quarantined one is released for its app.
        let fixed = try String(contentsOf: project.root.appendingPathComponent("pushcamp.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "environments: [production]", with: "environments: [production, sandbox]")
        try project.write("pushcamp.yaml", fixed)
        let reprocessed = try CLI.run(["appstore", "reprocess"], in: project.root)
        #expect(
            reprocessed.stdout.hasSuffix("1 released, 0 still quarantined\n"),
            "\(reprocessed.stdout)\(reprocessed.stderr)"
        )
        let after = try CLI.run(["appstore", "notifications", "--quarantined"], in: project.root).stdout
        #expect(after == "no quarantined App Store notifications\n", "\(after)")
    }

    /// A 200 means committed: after `kill -9` right behind the answer, Apple's retry of the same
    /// notification to the next serve is a duplicate, and the journal has one row.
    @Test func aNotificationAnswered200SurvivesKill9AndItsRetryIsADuplicate() throws {
        let chain = try AppStoreTestChain()
        let project = try TemporaryProject(projectFile: TemporaryProject.appStoreProjectFile)
        defer { project.remove() }
        try project.write("test-root.pem", chain.rootPEM)
        let body = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        let first = try ServeProcess(in: project.root)
        #expect(try first.post("/app-store/notifications", body: body) == (200, "stored\n"))
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        let second = try ServeProcess(in: project.root)
        #expect(try second.post("/app-store/notifications", body: body) == (200, "duplicate\n"))
        #expect(second.stop() == 0)
        let rows = try CLI.run(["appstore", "notifications", "--format", "json"], in: project.root)
        #expect((try JSONSerialization.jsonObject(with: Data(rows.stdout.utf8)) as? [[String: Any]])?.count == 1)
    }

    /// A trigger campaign end to end: a DID_FAIL_TO_RENEW for a subscription whose app account
    /// token two devices carry reaches both, once; one for an account with no device is counted as
    /// reaching nobody; a renewal fires nothing; Apple's retry after a restart fires nothing again.
    @Test func aTriggerCampaignSendsToTheSubscriptionsDevicesOncePerNotification() throws {
        let chain = try AppStoreTestChain()
        let (project, sim) = try Self.receiving(chain)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let payer = "7E3FB20B-4CDB-47CC-936D-99D65F608138"  // as the app's backend spells it
        let accounts = [payer.lowercased(), "0b7c9a55-2f7d-4a39-9d53-6c1c0b0e7f11", payer.lowercased()]
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: 3, columns: ["name", "account"]) { ["Name\($0)", accounts[$0]] }
        )
        try project.write(
            "campaigns/card.yaml",
            """
            campaign: card-failed
            app: shop
            audience:
              source: { csv: audiences/a.csv }
              subscriptions: { status: [billing-retry, grace-period], attribute: account }
            message:
              payload: { aps: { alert: "{{name}}, your payment did not go through" } }
            trigger: { app_store: DID_FAIL_TO_RENEW, delay: 1s }
            """
        )
        // Before any notification: nobody is joined to a subscription, and `send` refuses a trigger campaign.
        let before = try CLI.run(["plan", "campaigns/card.yaml", "--format", "json"], in: project.root)
        let planned = try JSONSerialization.jsonObject(with: Data(before.stdout.utf8)) as? [String: Any]
        #expect((planned?["audience"] as? [String: Any])?["no_subscription"] as? Int == 3, "\(before.stdout)")
        let refused = try CLI.run(["send", "campaigns/card.yaml"], in: project.root)
        #expect(refused.status == 1 && refused.stderr.contains("the campaign has a trigger"), "\(refused.stderr)")

        func post(_ serve: ServeProcess, _ type: String, original: String, account: String?) throws -> [UInt8] {
            let payload = try chain.subscriptionNotification(
                type: type,
                original: original,
                appAccountToken: account,
                signedDate: Date()
            )
            let body = AppStoreTestChain.body(try chain.sign(payload))
            #expect(try serve.post("/app-store/notifications", body: body) == (200, "stored\n"))
            return body
        }
        let serve = try ServeProcess(in: project.root)
        let failed = try post(serve, "DID_FAIL_TO_RENEW", original: "2000000001", account: payer)
        _ = try post(
            serve,
            "DID_FAIL_TO_RENEW",
            original: "2000000002",
            account: "9d0a7e4e-0000-4000-8000-000000000000"
        )
        _ = try post(serve, "DID_RENEW", original: "2000000003", account: accounts[1])
        // Both firings settled: one reached the payer's two devices, one reached nobody.
        let sent = "pushcamp_trigger_firings_total{campaign=\"card-failed\",outcome=\"sent\"}"
        let nobody = "pushcamp_trigger_firings_total{campaign=\"card-failed\",outcome=\"no_recipient\"}"
        var metrics = ""
        try eventually(within: 60, every: 0.2) {
            metrics = try serve.get("/metrics").body
            return Self.value(of: sent, in: metrics) + Self.value(of: nobody, in: metrics) >= 2
        }
        #expect(Self.value(of: sent, in: metrics) == 1 && Self.value(of: nobody, in: metrics) == 1, "\(metrics)")
        #expect(serve.stop() == 0)

        // Apple's retry of the first notification reaches the next serve: a duplicate, no second send.
        let again = try ServeProcess(in: project.root)
        #expect(try again.post("/app-store/notifications", body: failed) == (200, "duplicate\n"))
        #expect(again.waitForTicks(3))
        #expect(again.stop() == 0)
        #expect(!again.output.contains("trigger of card-failed"), "\(again.output)")
        _ = sim.stop()
        let delivered = try Self.deliveries(project)
        #expect(
            delivered == [Substring(TemporaryProject.token(0)): 1, Substring(TemporaryProject.token(2)): 1],
            "\(delivered)"
        )
        let triggerRuns = try Self.runs(project).filter { $0["campaign"] as? String == "card-failed" }
        #expect(!triggerRuns.isEmpty && triggerRuns.allSatisfy { $0["status"] as? String == "finished" })

        // What plan says now: one subscription in billing retry, two rows joined to it, and what fired.
        let after = try CLI.run(["plan", "campaigns/card.yaml"], in: project.root)
        #expect(after.stdout.contains("in the last 30 days 2 notifications for 2 subscriptions would have fired it"))
        #expect(
            SendCLITests.numbers(in: after.stdout, lineStartingWith: "  no subscription").first == 1,
            "\(after.stdout)"
        )
        let firings = try CLI.run(["appstore", "triggers", "--format", "json"], in: project.root)
        let rows = try JSONSerialization.jsonObject(with: Data(firings.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(Set(rows.compactMap { $0["status"] as? String }) == ["fired", "no-recipient"], "\(firings.stdout)")
    }

    /// A trigger run cut by `kill -9` is resumed by the next serve and finished, never fired again.
    @Test func aKilledServeResumesATriggerRunAndFiresItOnce() throws {
        let count = 6_000
        let chain = try AppStoreTestChain()
        let (project, sim) = try Self.receiving(chain)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        // One business account whose subscription failed, on many devices.
        let account = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: count, columns: ["app_account_token"]) { _ in [account] }
        )
        try ServeCLITests.writeTriggerCampaign(project, rate: 2000)
        let first = try ServeProcess(in: project.root)
        let payload = try chain.subscriptionNotification(
            type: "DID_FAIL_TO_RENEW",
            original: "2000000001",
            appAccountToken: account,
            signedDate: Date()
        )
        let body = AppStoreTestChain.body(try chain.sign(payload))
        #expect(try first.post("/app-store/notifications", body: body) == (200, "stored\n"))
        #expect(first.waitFor("run 1 sending", timeout: 30), "\(first.output)")
        #expect(eventually(within: 30) { Self.delivered(project) >= 1_500 })
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()

        let second = try ServeProcess(in: project.root)
        #expect(second.waitFor("resuming run 1 of card-failed, fired by notification", timeout: 30), "\(second.output)")
        #expect(second.waitFor("run 1 finished", timeout: 60), "\(second.output)")
        // Apple's retry, had the first answer been lost: a duplicate.
        #expect(try second.post("/app-store/notifications", body: body) == (200, "duplicate\n"))
        #expect(second.waitForTicks(2))
        #expect(second.stop() == 0)

        let runs = try Self.runs(project)
        #expect(runs.count == 1, "\(runs)")
        #expect(runs.first?["status"] as? String == "finished" && runs.first?["delivered"] as? Int == count)
        _ = sim.stop()
        let deliveries = try Self.deliveries(project)
        #expect(deliveries.count == count)
        let duplicated = deliveries.values.reduce(0) { $0 + ($1 - 1) }
        #expect(duplicated <= runs.first?["possible_duplicates"] as? Int ?? -1)
    }
}
