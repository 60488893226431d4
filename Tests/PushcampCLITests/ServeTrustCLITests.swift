import Crypto
import Foundation
import GRDB
import PushcampAPNsCore
import PushcampTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue #27: what a team meets in the first weeks of leaving `pushcamp serve` running, each case
/// against the built binary and `pushcamp sim`.
@Suite("pushcamp serve you can leave running", .serialized)
struct ServeTrustCLITests {
    static func iso(_ seconds: Double) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds.rounded(.up)))
    }

    /// A project sending to a fresh simulator (which records what it receives, and follows
    /// `scenario` when given), `count` recipients.
    static func project(count: Int, scenario: String? = nil) throws -> (TemporaryProject, SimulatorProcess) {
        let project = try TemporaryProject(projectFile: nil)
        var options = ["--state-dir", "sim", "--team-id", "ABCDE12345", "--key-id", "KEY1234567"]
        options += ["--record", "received.csv"]
        if let scenario {
            try project.write("scenario.yaml", scenario)
            options += ["--scenario", "scenario.yaml"]
        }
        let sim = try SimulatorProcess(options, in: project.root)
        try SendCLITests.writeProject(project, port: sim.port, credentials: SendCLITests.simulatorKey)
        try SendCLITests.writeAudience(project, count: count)
        return (project, sim)
    }

    static func campaign(_ id: String, _ extra: String) -> String {
        "campaign: \(id)\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: { aps: { alert: \"hi {{name}}\" } }\n"
            + extra
    }

    /// Case 1: ten campaigns of one app fire in the same second, from a cold start and with a cached
    /// token 55 minutes old (too old to keep, young enough that APNs still counts it): one token is
    /// minted and APNs refuses none.
    @Test(arguments: [false, true])
    func tenCampaignsOfOneAppFiringTogetherMintOneProviderToken(cachedTokenIsOld: Bool) throws {
        let (project, sim) = try Self.project(count: 5)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let at = Self.iso(Date().timeIntervalSince1970 + 3)
        for index in 0..<10 {
            try project.write("campaigns/c\(index).yaml", Self.campaign("c\(index)", "schedule: { at: \(at) }\n"))
        }
        if cachedTokenIsOld {
            let key = try P256.Signing.PrivateKey(
                pemRepresentation: try String(contentsOfFile: project.path("sim/key.p8"), encoding: .utf8)
            )
            let old = ProviderTokenJWT.make(
                teamID: "ABCDE12345",
                keyID: "KEY1234567",
                issuedAt: Int64(Date().timeIntervalSince1970) - 55 * 60,
                key: key
            )
            let fingerprint = ProviderTokenJWT.fingerprint(of: key.publicKey)
            try project.write(".pushcamp/provider-token-ABCDE12345-KEY1234567-\(fingerprint).jwt", old)
        }
        let serve = try ServeProcess(in: project.root)
        #expect(serve.waitFor("finished: 5 delivered", count: 10, timeout: 60), "\(serve.output)")
        #expect(serve.stop() == 0)
        let received = sim.stop()
        #expect(received.contains("provider tokens: 1 accepted, 0 refused as too frequent"), "\(received)")
        #expect(received.contains("  200  50\n"), "\(received)")
    }

    /// Case 2: SIGTERM while a run waits for its pushes' moment (here the end of quiet hours, two
    /// hours away) stops `serve` at once, and `send` too; the run is left to resume.
    @Test func sigtermStopsARunWaitingForItsPushesMomentAtOnce() throws {
        let (project, sim) = try Self.project(count: 5)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        // Quiet from an hour ago until two hours from now, in UTC.
        func clock(_ seconds: Double) -> String {
            let minutes = Int(seconds / 60) % 1440
            return String(format: "%02d:%02d", minutes / 60, minutes % 60)
        }
        let now = Date().timeIntervalSince1970
        let quiet = "quiet_hours: { from: \"\(clock(now - 3600))\", to: \"\(clock(now + 7200))\", timezone: UTC }\n"
        try project.write(
            "campaigns/night.yaml",
            Self.campaign("night", "schedule: { at: \(Self.iso(now + 2)) }\n" + quiet)
        )
        try project.write("campaigns/manual.yaml", Self.campaign("manual", quiet))

        let serve = try ServeProcess(in: project.root)
        #expect(serve.waitFor("run 1 sending", timeout: 30), "\(serve.output)")
        #expect(serve.waitForTicks(1))
        let asked = Date()
        serve.process.terminate()
        serve.process.waitUntilExit()
        #expect(Date().timeIntervalSince(asked) < 5, "serve took \(Date().timeIntervalSince(asked)) s to stop")
        #expect(serve.process.terminationStatus == 0)
        #expect(serve.output.contains("run 1 interrupted: 0 delivered"), "\(serve.output)")

        let send = try CLI.start(["send", "--yes", "campaigns/manual.yaml"], in: project.root)
        #expect(eventually(within: 30) { ((try? ServeCLITests.runs(project)) ?? []).count == 2 })
        let sent = Date()
        send.terminate()
        send.waitUntilExit()
        #expect(Date().timeIntervalSince(sent) < 5, "send took \(Date().timeIntervalSince(sent)) s to stop")
        #expect(send.terminationStatus == 130)

        let runs = try ServeCLITests.runs(project)
        #expect(runs.count == 2 && runs.allSatisfy { $0["status"] as? String == "interrupted" }, "\(runs)")
        _ = sim.stop()
        #expect(try ServeCLITests.deliveries(project).isEmpty)
    }

    /// Case 3: `serve` killed while sending a slot, started again after the next slot came due and
    /// the killed one's `catch_up.within` passed: the killed run is closed (expired), the due slot
    /// fires, and nothing is skipped as overlap.
    @Test func aStaleSlotRunIsClosedAndTheDueSlotFires() throws {
        let (project, sim) = try Self.project(count: 20_000)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try project.write(
            "campaigns/tick.yaml",
            Self.campaign(
                "tick",
                "schedule: { every: 4s, catch_up: { within: 2s } }\nthrottle: { rate: 1000/s, connections: 1 }\n"
            )
        )
        let first = try ServeProcess(in: project.root)
        #expect(first.waitFor("run 1 sending", timeout: 30), "\(first.output)")
        #expect(eventually(within: 30) { ServeCLITests.delivered(project) >= 500 })
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        // Past the next slot and the killed slot's window.
        Thread.sleep(forTimeInterval: 4)
        let second = try ServeProcess(in: project.root)
        #expect(second.waitFor("is not resumed: expired", timeout: 30), "\(second.output)")
        #expect(second.waitFor("run 2 sending", timeout: 30), "\(second.output)")
        #expect(second.stop() == 0)
        #expect(!second.output.contains("resuming run 1"), "\(second.output)")
        #expect(!second.output.contains("skipped: overlap"), "\(second.output)")
        let runs = try ServeCLITests.runs(project)
        #expect(runs.first { $0["run"] as? Int == 1 }?["status"] as? String == "expired", "\(runs)")
        #expect(second.output.contains(" warning pushcamp.serve: run 1 of tick (slot "), "\(second.output)")
    }

    /// A second `serve` on a port another holds stops at once with one line that names the
    /// address and what to do: nothing about the journal, nothing started.
    @Test func aTakenPortIsTheOneErrorSaid() throws {
        let (project, sim) = try Self.project(count: 3)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let first = try ServeProcess(in: project.root)
        defer { if first.process.isRunning { _ = first.stop() } }
        let second = try CLI.run(["serve", "--listen", "127.0.0.1:\(first.port)"], in: project.root, timeout: 30)
        #expect(second.status == 1, "\(second.stderr)")
        #expect(
            second.stderr
                == "error: cannot listen on 127.0.0.1:\(first.port): Address already in use: another process (another pushcamp serve?) listens there; stop it, or choose another address with --listen or serve.listen in pushcamp.yaml\n",
            "\(second.stderr)"
        )
        #expect(first.stop() == 0)
    }

    /// Case 4: with the key's environment variable unset, or the scaffold's placeholder ids sent to
    /// Apple, `serve` refuses to be ready and says why; a run that cannot connect is an error that
    /// names the endpoint and the cause.
    @Test func credentialsItCannotUseKeepServeNotReadyAndFailuresAreErrors() throws {
        let (project, sim) = try Self.project(count: 3)
        defer { project.remove() }
        let port = sim.port
        _ = sim.stop()  // its key and CA stay in sim/; nothing listens on its port any more
        try SendCLITests.writeProject(
            project,
            port: port,
            credentials: "team_id: ABCDE12345\nkey_id: KEY1234567\nkey_file: ${env:SHOP_KEY_FILE}"
        )
        try project.write(
            "campaigns/tick.yaml",
            Self.campaign("tick", "schedule: { at: \(Self.iso(Date().timeIntervalSince1970 + 3600)) }\n")
        )
        var environment = ProcessInfo.processInfo.environment
        environment["SHOP_KEY_FILE"] = nil
        let unset = try ServeProcess(in: project.root, environment: environment)
        // Once the scheduler has ticked too: its first tick checks the credentials before it ends.
        let ready = try unset.readiness { $0.contains("credentials:") && !$0.contains("has not ticked") }
        #expect(ready.status == 503, "\(ready.body)")
        #expect(ready.body.hasPrefix("not ready: credentials cannot be used (1 app(s))"), "\(ready.body)")
        #expect(
            ready.body.contains(
                "credentials: pushcamp.yaml:6:15: app shop: key_file: environment variable SHOP_KEY_FILE is not set (needed by '${env:SHOP_KEY_FILE}') (campaigns: tick)"
            ),
            "\(ready.body)"
        )
        #expect(unset.output.contains(" error pushcamp.serve: credentials cannot be used"), "\(unset.output)")
        #expect(
            ServeCLITests.value(of: "pushcamp_credentials_problems", in: try unset.get("/metrics").body) == 1
        )
        #expect(unset.stop() == 0)

        // Set, the key readable: ready; the slot's run cannot connect, and says where and why.
        try project.write(
            "campaigns/tick.yaml",
            Self.campaign("tick", "schedule: { at: \(Self.iso(Date().timeIntervalSince1970 + 3)) }\n")
        )
        environment["SHOP_KEY_FILE"] = "sim/key.p8"
        let set = try ServeProcess(in: project.root, environment: environment)
        #expect(try set.readiness { $0.hasPrefix("ready") }.status == 200)
        #expect(set.waitFor("cannot-connect", timeout: 60), "\(set.output)")
        let line = set.output.split(separator: "\n").first { $0.contains("cannot-connect") } ?? ""
        #expect(line.contains(" error pushcamp.serve: slot "), "\(line)")
        #expect(
            line.contains("sending to https://127.0.0.1:\(port): cannot connect to https://127.0.0.1:\(port)"),
            "\(line)"
        )
        #expect(set.stop() == 0)

        // The scaffold's placeholder ids, sent to Apple's host: not ready.
        try project.write(
            "pushcamp.yaml",
            "apps:\n  shop:\n    topic: com.example.shop\n    team_id: ABCDE12345\n    key_id: KEY1234567\n    key_file: sim/key.p8\n"
        )
        let placeholders = try ServeProcess(in: project.root)
        let body = try placeholders.readiness { $0.contains("credentials:") && !$0.contains("has not ticked") }.body
        #expect(
            body.contains(
                "credentials: app shop: team_id ABCDE12345 and key_id KEY1234567 are the placeholders `pushcamp init` wrote"
            ),
            "\(body)"
        )
        #expect(placeholders.stop() == 0)
    }

    /// Case 5: a server that answers, then allows no stream at all, stops `send` after the stall
    /// timeout (exit 2), like every other stall.
    @Test func aStallAfterSomeAnswersStopsTheSendAfterTheStallTimeout() throws {
        // Two requests answered (the first raises the limit), then no stream allowed.
        let (project, sim) = try Self.project(count: 50, scenario: "lower_limit: { after: 2, to: 0 }\n")
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        // At the default rate (1000/s, hand-overs of 5) the window is full once the limit drops, so
        // nothing more is released: only the answers can tell progress (before, this never stalled).
        try SendCLITests.writeCampaign(project)
        let started = Date()
        let send = try CLI.run(
            ["send", "--yes", "--stall-timeout", "3", "campaigns/c.yaml"],
            in: project.root,
            timeout: 60
        )
        #expect(send.status == 2, "\(send.stdout)\(send.stderr)")
        #expect(Date().timeIntervalSince(started) < 20)
        let output = send.stdout + send.stderr
        #expect(output.contains("answered nothing for 3 s"), "\(output)")
        #expect(output.contains("0 concurrent streams"), "\(output)")
    }

    /// A project whose `shop` app receives App Store notifications signed by the test chain.
    static func receiving(_ chain: AppStoreTestChain) throws -> TemporaryProject {
        let project = try TemporaryProject(projectFile: TemporaryProject.appStoreProjectFile)
        try project.write("test-root.pem", chain.rootPEM)
        return project
    }

    /// Case 7: another process holds the journal's write lock for 6 s while notifications arrive:
    /// `/healthz` keeps answering at once, the notifications are answered 503 (Apple retries) and
    /// `/readyz` says so until one is stored again.
    @Test func aLockedJournalNeverFreezesTheServerAndItsStoreFailuresShowInReadiness() throws {
        let chain = try AppStoreTestChain()
        let project = try Self.receiving(chain)
        defer { project.remove() }
        let serve = try ServeProcess(in: project.root)
        defer { if serve.process.isRunning { _ = serve.stop() } }
        // Ready once the scheduler's first tick is done (the port is bound before it may be).
        #expect(try serve.readiness { $0.hasPrefix("ready") }.status == 200)
        let journal = try DatabaseQueue(path: project.path(".pushcamp/journal.sqlite"))
        let locked = DispatchSemaphore(value: 0)
        let holder = Thread {
            try? journal.inDatabase { db in
                try db.execute(sql: "BEGIN EXCLUSIVE")
                locked.signal()
                Thread.sleep(forTimeInterval: 6)
                try db.execute(sql: "ROLLBACK")
            }
        }
        holder.start()
        locked.wait()
        let answers = Mutex<[Int]>([])
        let posts = DispatchGroup()
        for _ in 0..<3 {
            DispatchQueue.global().async(group: posts) {
                let body = AppStoreTestChain.body(try! chain.sign(AppStoreTestChain.notification()))
                let status = (try? serve.post("/app-store/notifications", body: body).status) ?? 0
                answers.withLock { $0.append(status) }
            }
        }
        // /healthz on a connection of its own each time, timed from connect to the last byte.
        var slowest = 0.0
        var readiness: (status: Int, body: String)?
        let until = Date().addingTimeInterval(5)
        while Date() < until {
            let asked = Date()
            let answer = try RawConnection(port: serve.port).get("/healthz")
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
            slowest = max(slowest, Date().timeIntervalSince(asked))
            if readiness == nil, answers.withLock({ $0.contains(503) }) { readiness = try serve.get("/readyz") }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(slowest < 1, "/healthz took \(slowest) s while the journal was locked")
        posts.wait()
        #expect(answers.withLock { $0 }.contains(503), "\(answers.withLock { $0 })")
        #expect(readiness?.status == 503, "\(String(describing: readiness))")
        #expect(
            readiness?.body.contains("App Store notifications cannot be stored (answered 503)") == true,
            "\(String(describing: readiness))"
        )
        #expect(
            ServeCLITests.value(of: "pushcamp_appstore_store_failures_total", in: try serve.get("/metrics").body) >= 1
        )
        // The lock gone, the next notification is stored and serve is ready again.
        eventually(within: 30, every: 0.1) { !holder.isExecuting }
        let body = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        #expect(try serve.post("/app-store/notifications", body: body) == (200, "stored\n"))
        #expect(try serve.get("/readyz").status == 200)
        #expect(serve.stop() == 0)
    }

    /// Case 7: with 64 file descriptors, 120 clients holding idle connections neither stop serve
    /// from answering nor make it spin; a request whose body or header is trickled a byte at a
    /// time is cut off within the 10 s docs/serve.md states.
    @Test func connectionsThatHoldOrTrickleNeitherFreezeNorSpinTheServer() throws {
        let chain = try AppStoreTestChain()
        let project = try Self.receiving(chain)
        defer { project.remove() }
        let serve = try ServeProcess(in: project.root, descriptorLimit: 64)
        defer { if serve.process.isRunning { _ = serve.stop() } }
        var idle: [RawConnection] = []
        for _ in 0..<120 { idle.append(try RawConnection(port: serve.port)) }
        let cpu = serve.cpuSeconds
        let asked = Date()
        #expect(try serve.get("/healthz") == (200, "ok\n"))
        #expect(Date().timeIntervalSince(asked) < 2)
        Thread.sleep(forTimeInterval: 3)
        #expect(serve.cpuSeconds - cpu < 0.5, "serve used \(serve.cpuSeconds - cpu) s of CPU in 3 s")
        idle.removeAll()

        let trickle = try RawConnection(port: serve.port)
        trickle.send("POST /app-store/notifications HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n")
        let started = Date()
        var closed = false
        while !closed, Date().timeIntervalSince(started) < 20 {
            trickle.send("{")
            closed = trickle.isClosedByPeer(waiting: 1)
        }
        #expect(closed, "a request trickled for 20 s was not cut off")
        #expect(Date().timeIntervalSince(started) < 15)

        // A header trickled a byte a second is cut off as soon (issue 43): the 10 s start at the
        // request's first byte, not once its header is whole.
        let header = try RawConnection(port: serve.port)
        let headerStarted = Date()
        var headerClosed = false
        for character
            in "POST /app-store/notifications HTTP/1.1\r\nHost: localhost\r\nX-Slow: \(String(repeating: "z", count: 40))"
        {
            header.send(String(character))
            headerClosed = header.isClosedByPeer(waiting: 1)
            if headerClosed || Date().timeIntervalSince(headerStarted) > 25 { break }
        }
        #expect(headerClosed, "a header trickled for 25 s was not cut off")
        #expect(Date().timeIntervalSince(headerStarted) < 13, "\(Date().timeIntervalSince(headerStarted)) s")
        #expect(serve.stop() == 0)
    }
}

/// A plain TCP connection to serve on loopback, for clients that misbehave on purpose.
final class RawConnection {
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(descriptor)
            throw CLIError("cannot connect to 127.0.0.1:\(port)")
        }
    }

    deinit { close(descriptor) }

    /// A whole request and its answer, the connection closed after it.
    func get(_ path: String) throws -> String {
        send("GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    func send(_ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer {
            Glibc.send(descriptor, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL))
        }
    }

    /// Whether the peer closed the connection (or reset it), waiting up to `seconds` to see.
    func isClosedByPeer(waiting seconds: Double) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(seconds * 1000)) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
    }
}
