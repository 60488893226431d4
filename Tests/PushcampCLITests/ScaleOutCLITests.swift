import Foundation
import PushcampTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Three `serve` nodes on one PostgreSQL journal against the simulator, with a node killed and
/// another frozen past its lease: every slot fires once, the big run finishes on a survivor, and
/// nothing reaches the simulator twice beyond what the run counts as possible duplicates.
@Suite("pushcamp serve on several nodes, one PostgreSQL", .serialized)
struct ScaleOutCLITests {
    static let lease = 3.0
    /// The `tick` campaign's five recipients, apart from the big audience's.
    static let tickTokens = (0..<5).map { TemporaryProject.token(1_000_000 + $0) }

    /// A project on the PostgreSQL journal at `url`: `tick` (5 recipients, every 2 s) and `big`
    /// (`count` recipients at `at`, paced so it takes a while).
    static func project(
        count: Int,
        at: Date,
        journal url: String,
        sliced: Bool = true
    ) throws -> (TemporaryProject, SimulatorProcess) {
        let (project, sim) = try ServeCLITests.simulated()
        try useJournal(url, in: project, sliced: sliced)
        try SendCLITests.writeAudience(project, count: count)
        try project.write(
            "audiences/small.csv",
            "token,name\n" + tickTokens.map { "\($0),Tick" }.joined(separator: "\n") + "\n"
        )
        try project.write(
            "campaigns/tick.yaml",
            """
            campaign: tick
            app: shop
            audience:
              source: { csv: audiences/small.csv }
            message:
              payload: { aps: { alert: "tick" } }
            schedule: { every: 2s }
            """
        )
        try project.write(
            "campaigns/big.yaml",
            """
            campaign: big
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: { aps: { alert: "hi {{name}}" } }
            schedule: { at: \(ISO8601DateFormatter().string(from: at)) }
            throttle: { rate: 2500/s, connections: 2 }
            """
        )
        return (project, sim)
    }

    /// `project`'s journal: the PostgreSQL database at `url`, with leases of `lease` seconds, its
    /// runs cut into slices of 20 s of work (unless not `sliced`: sent whole).
    static func useJournal(_ url: String, in project: TemporaryProject, sliced: Bool = true) throws {
        let projectFile = try String(contentsOf: project.root.appendingPathComponent("pushcamp.yaml"), encoding: .utf8)
        try project.write(
            "pushcamp.yaml",
            projectFile + "\njournal: { url: \"\(url)\", lease: \(Int(lease))s\(sliced ? ", slice: 20s" : "") }\n"
        )
    }

    /// The pid in a lease owner (`host/pid/random`).
    static func pid(of owner: String) -> Int32? {
        let parts = owner.split(separator: "/")
        return parts.count == 3 ? Int32(parts[1]) : nil
    }

    /// `campaign`'s lease holder's pid, and its first run's delivered count so far and status.
    static func state(
        _ server: TestPostgres.Server,
        campaign: String = "big"
    ) throws -> (owner: Int32?, delivered: Int, status: String?) {
        let owner = try TestPostgres.query(
            server,
            "SELECT owner FROM lease WHERE resource = 'campaign:\(campaign)' AND expires_at > extract(epoch FROM clock_timestamp())"
        ).first.flatMap(pid(of:))
        let run = try TestPostgres.query(
            server,
            "SELECT id, status FROM run WHERE campaign = '\(campaign)' ORDER BY id LIMIT 1"
        ).first?.split(separator: "|")
        guard let run, run.count == 2 else { return (owner, 0, nil) }
        let delivered =
            try TestPostgres.query(
                server,
                """
                SELECT (SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM delivery WHERE run = \(run[0]))
                     + (SELECT count(*) FROM recipient WHERE run = \(run[0]) AND state = 'delivered')
                """
            ).first.flatMap { Int($0) } ?? 0
        return (owner, delivered, String(run[1]))
    }

    /// The big run's slices (by lease resource; only those not sent yet when `open`) and the pid
    /// of each one's latest holder.
    static func sliceOwners(
        _ server: TestPostgres.Server,
        campaign: String = "big",
        open: Bool = false
    ) throws -> [String: Int32] {
        var owners: [String: Int32] = [:]
        for row in try TestPostgres.query(
            server,
            """
            SELECT l.resource || '|' || l.owner FROM lease l
            JOIN slice s ON l.resource = 'run:' || s.run || '/slice:' || s.first_seq
            WHERE s.run = (SELECT id FROM run WHERE campaign = '\(campaign)' ORDER BY id LIMIT 1)
                AND (NOT s.done OR NOT \(open))
            """
        ) {
            let parts = row.split(separator: "|", maxSplits: 1)
            if parts.count == 2, let pid = pid(of: String(parts[1])) { owners[String(parts[0])] = pid }
        }
        return owners
    }

    /// Polls `state` until `done` holds (at most `timeout` seconds); the last state.
    static func wait(
        _ server: TestPostgres.Server,
        campaign: String = "big",
        timeout: Double,
        until done: ((owner: Int32?, delivered: Int, status: String?)) -> Bool
    ) throws -> (owner: Int32?, delivered: Int, status: String?) {
        var last = try state(server, campaign: campaign)
        try eventually(within: timeout, every: 0.1) {
            last = try state(server, campaign: campaign)
            return done(last)
        }
        return last
    }

    /// After a chaos test: each slot of `tick` fired once, the big run finished once with all
    /// `count` delivered, and what reached the simulator twice is within the possible duplicates
    /// the runs counted.
    static func checkEachSlotFiredOnceAndNothingSentTwiceUncounted(
        _ server: TestPostgres.Server,
        _ project: TemporaryProject,
        count: Int
    ) throws {
        // Each slot of `tick` fired once: one run per slot, and the slots every 2 s without a gap
        // (a slot may be recorded skipped, never lost).
        let fired = try TestPostgres.query(
            server,
            "SELECT slot, count(*) FROM run WHERE campaign = 'tick' GROUP BY slot"
        )
        #expect(fired.allSatisfy { $0.hasSuffix("|1") }, "a tick slot fired twice: \(fired)")
        let slots = try TestPostgres.query(
            server,
            "SELECT slot, coalesce(through, slot), outcome FROM schedule_slot WHERE campaign = 'tick' ORDER BY slot"
        ).map { $0.split(separator: "|").map(String.init) }
        #expect(slots.count >= 10, "\(slots)")
        for (earlier, later) in zip(slots, slots.dropFirst()) {
            #expect(Int64(later[0]) == (Int64(earlier[1]) ?? 0) + 2, "tick slots are not contiguous: \(slots)")
        }
        let tickRuns =
            try TestPostgres.query(
                server,
                "SELECT count(*), coalesce(sum(possible_duplicates), 0) FROM run WHERE campaign = 'tick'"
            ).first?.split(separator: "|").compactMap { Int($0) } ?? []

        // The big run: one run, finished, everyone delivered; what reached the simulator twice is
        // within the possible duplicates the run counted (requests on a dead node's wire).
        let runs = try TestPostgres.query(
            server,
            "SELECT status, possible_duplicates FROM run WHERE campaign = 'big'"
        )
        #expect(runs.count == 1, "\(runs)")
        let reported = Int(runs.first?.split(separator: "|").last ?? "") ?? -1
        let deliveries = try ServeCLITests.deliveries(project)
        let ticks = Set(Self.tickTokens.map { Substring($0) })
        let big = deliveries.filter { !ticks.contains($0.key) }
        #expect(big.count == count, "\(big.count) tokens delivered")
        let duplicated = big.values.reduce(0) { $0 + ($1 - 1) }
        #expect(duplicated <= reported, "\(duplicated) sent twice, \(reported) reported")
        // And each of them by name: every token that arrived twice is in the run's list.
        let listed = Set(
            try TestPostgres.query(
                server,
                "SELECT token FROM possible_duplicate WHERE run = (SELECT id FROM run WHERE campaign = 'big')"
            ).map { Substring($0) }
        )
        let twice = Set(big.filter { $0.value > 1 }.keys)
        #expect(twice.isSubset(of: listed), "sent twice, not listed: \(twice.subtracting(listed).sorted())")
        #expect(listed.count <= reported, "\(listed.count) listed, \(reported) counted")
        // Each tick run delivers its five once (beyond what its run counted as possible duplicates).
        for token in ticks {
            #expect((deliveries[token] ?? 0) <= tickRuns[0] + tickRuns[1], "\(token): \(deliveries[token] ?? 0)")
        }
    }

    @Test func threeNodesFireEachSlotOnceAndAKilledOrFrozenSendersRunFinishesElsewhere() async throws {
        try await onOwnThread(Self.threeNodesFireEachSlotOnceAndAKilledOrFrozenSendersRunFinishesElsewhereScenario)
    }

    static func threeNodesFireEachSlotOnceAndAKilledOrFrozenSendersRunFinishesElsewhereScenario() throws {
        let count = 50_000
        let (name, url) = try TestPostgres.newDatabase()
        let server = try TestPostgres.server().on(database: name)
        let (project, sim) = try Self.project(count: count, at: Date().addingTimeInterval(6), journal: url)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let nodes = try (0..<3).map { _ in try ServeProcess(in: project.root) }
        defer {
            for node in nodes where node.process.isRunning {
                kill(node.process.processIdentifier, SIGCONT)
                node.process.terminate()
            }
        }
        func node(_ pid: Int32?) -> ServeProcess? { nodes.first { $0.process.processIdentifier == pid } }

        // The big run starts on one node; it is killed mid-send.
        let started = try Self.wait(server, timeout: 60) { $0.owner != nil && $0.delivered >= 5_000 }
        let first = try #require(node(started.owner), "no node sends the big run: \(started)")
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        let killedAt = Date()

        // Another takes it over once its lease expired, within a lease and a look for orphans.
        let second = try Self.wait(server, timeout: 30) { $0.owner != nil && $0.owner != started.owner }
        let takeover = Date().timeIntervalSince(killedAt)
        let survivor = try #require(node(second.owner), "nobody took the big run over: \(second)")
        #expect(takeover < Self.lease + Self.lease / 5 + 2, "taken over after \(takeover) s")

        // That one freezes (SIGSTOP) past its lease: its work is taken over by the third, either
        // the campaign's lease or, when the third already sends slices of the run, the slices the
        // frozen one held (claimed again once their leases expired); the frozen one, woken, finds
        // its leases gone and sends nothing more.
        _ = try Self.wait(server, timeout: 30) { $0.delivered >= second.delivered + 5_000 }
        kill(survivor.process.processIdentifier, SIGSTOP)
        let frozenAt = Date()
        var sliceHolders = Set(try Self.sliceOwners(server).values)
        let frozenSlices = try Self.sliceOwners(server, open: true).filter { $0.value == second.owner }.map(\.key)
        var slicesTaken = false
        let third = try Self.wait(server, timeout: 30) { state in
            sliceHolders.formUnion(((try? Self.sliceOwners(server)) ?? [:]).values)
            // Each slice the frozen node held is held by another now, or sent.
            let owners = (try? Self.sliceOwners(server, open: true)) ?? [:]
            slicesTaken = !frozenSlices.isEmpty && frozenSlices.allSatisfy { owners[$0] != second.owner }
            return slicesTaken || (state.owner != nil && state.owner != second.owner && state.owner != started.owner)
        }
        let frozenTakeover = Date().timeIntervalSince(frozenAt)
        // What every session was doing, should it not have been taken over: a lock a frozen node
        // holds is seen here as its session "idle in transaction" and the others waiting on it.
        let sessions = try TestPostgres.query(
            server,
            """
            SELECT concat_ws(' | ', state, wait_event_type, wait_event, left(query, 80)) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            """
        )
        #expect(
            third.owner.map { node($0) != nil } ?? true,
            "nobody took the frozen node's run over: \(third); sessions: \(sessions)"
        )
        // Frozen, its process is alive: the others wait for its lease (renewed at most a fifth of
        // a lease before the freeze) to expire, then take over at their next look; a node already
        // sending a slice of the run looks when that slice is sent (at most a slice's 20 s of work).
        #expect(
            frozenTakeover < Self.lease + Self.lease / 5 + 2 + (slicesTaken ? 20 : 0),
            "taken over after \(frozenTakeover) s: \(third), slices \(frozenSlices); sessions: \(sessions)"
        )
        print(
            "takeover: \(String(format: "%.2f", takeover)) s after kill -9, \(String(format: "%.2f", frozenTakeover)) s after SIGSTOP (lease \(Self.lease) s; \(slicesTaken ? "its slices" : "the campaign"))"
        )
        Thread.sleep(forTimeInterval: 1)
        kill(survivor.process.processIdentifier, SIGCONT)

        let finished = try Self.wait(server, timeout: 120) { state in
            sliceHolders.formUnion(((try? Self.sliceOwners(server)) ?? [:]).values)
            return state.status == "finished"
        }
        #expect(finished.status == "finished", "\(finished)")
        // The run was cut into slices, and more than one node sent some of them (a slice's lease
        // row names its latest holder only: the holders are gathered while it is sent).
        #expect(sliceHolders.count >= 2, "slices held by \(sliceHolders)")
        #expect(
            survivor.waitFor("lease-lost", timeout: 20),
            "the frozen node did not say it lost the run: \(survivor.output.suffix(3000))"
        )
        // A few more ticks on the two nodes left, then a graceful stop.
        for node in nodes where node.process.isRunning { #expect(node.waitForTicks(4)) }
        for node in nodes where node.process.isRunning { #expect(node.stop() == 0) }
        _ = sim.stop()

        try Self.checkEachSlotFiredOnceAndNothingSentTwiceUncounted(server, project, count: count)
    }

    /// `pushcamp send` on a PostgreSQL journal, two `serve` nodes up: the run is cut into slices,
    /// the nodes join and send some of them, every recipient gets it once, and the run finishes
    /// with the send. Then `send --detach` plans a second campaign into the journal and leaves it:
    /// the nodes send all of it.
    @Test func sendCutsItsRunIntoSlicesThatServeNodesHelpWithOrLeavesThemAll() async throws {
        try await onOwnThread(Self.sendCutsItsRunIntoSlicesThatServeNodesHelpWithOrLeavesThemAllScenario)
    }

    /// A project against the simulator on a new database, its runs cut into slices of a second
    /// (leases of 3 s), with `count` recipients in `audiences/a.csv`.
    static func slicedProject(count: Int) throws -> (TestPostgres.Server, TemporaryProject, SimulatorProcess) {
        let (name, url) = try TestPostgres.newDatabase()
        let (project, sim) = try ServeCLITests.simulated()
        let projectFile = try String(contentsOf: project.root.appendingPathComponent("pushcamp.yaml"), encoding: .utf8)
        try project.write("pushcamp.yaml", projectFile + "\njournal: { url: \"\(url)\", lease: 3s, slice: 1s }\n")
        try SendCLITests.writeAudience(project, count: count)
        return (try TestPostgres.server().on(database: name), project, sim)
    }

    /// How many of `run`'s recipients the journal on `server` holds delivered (-1 when unreadable).
    static func delivered(run: String, on server: TestPostgres.Server) throws -> Int {
        Int(
            try TestPostgres.query(
                server,
                "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM delivery WHERE run = \(run)"
            ).first ?? ""
        ) ?? -1
    }

    static func sendCutsItsRunIntoSlicesThatServeNodesHelpWithOrLeavesThemAllScenario() throws {
        let count = 6_000
        // Slices of a second at a third of 1,500/s: 500 pushes, twelve slices.
        let (server, project, sim) = try slicedProject(count: count)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        for campaign in ["c", "d", "e"] {
            try project.write(
                "campaigns/\(campaign).yaml",
                """
                campaign: \(campaign)
                app: shop
                audience: { source: { csv: audiences/a.csv } }
                message:
                  payload: { aps: { alert: "hi from \(campaign)" } }
                throttle: { rate: \(campaign == "e" ? "300/s" : "1500/s"), connections: 2 }
                """
            )
        }
        let nodes = try (0..<2).map { _ in try ServeProcess(in: project.root) }
        defer { for node in nodes where node.process.isRunning { node.process.terminate() } }

        let sent = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        func run(_ campaign: String) throws -> [String] {
            try TestPostgres.query(server, "SELECT id, status, planned FROM run WHERE campaign = '\(campaign)'")
                .first?.split(separator: "|").map(String.init) ?? []
        }
        func holders(_ campaign: String) throws -> Set<String> {
            Set(
                try TestPostgres.query(
                    server,
                    """
                    SELECT split_part(owner, '/', 2) FROM lease
                    WHERE resource LIKE 'run:' || (SELECT id FROM run WHERE campaign = '\(campaign)') || '/slice:%'
                    """
                )
            )
        }
        #expect(try run("c").dropFirst() == ["finished", "\(count)"])
        let slices = try TestPostgres.query(server, "SELECT count(*) FROM slice WHERE run = \(try run("c")[0])")
        #expect(slices == ["12"])
        // The send and at least one node sent slices of it.
        let nodePids = Set(nodes.map { String($0.process.processIdentifier) })
        let heldC = try holders("c")
        #expect(!heldC.isDisjoint(with: nodePids) && heldC.count >= 2, "slices held by \(heldC)")

        let detached = try CLI.run(["send", "--detach", "campaigns/d.yaml"], in: project.root)
        #expect(detached.status == 0, "\(detached.stderr)")
        #expect(detached.stdout.contains("\(count) pushes planned into the journal in 12 slices"), "\(detached.stdout)")
        try eventually(within: 90, every: 0.2) { try run("d").dropFirst().first == "finished" }
        #expect(try run("d").dropFirst().first == "finished")
        let heldD = try holders("d")
        #expect(!heldD.isEmpty && heldD.isSubset(of: nodePids), "slices held by \(heldD)")

        // A detached run the nodes are sending shows as running, and `cancel` from here stops
        // every node's slices of it within a few seconds.
        #expect(try CLI.run(["send", "--detach", "campaigns/e.yaml"], in: project.root).status == 0)
        let e = try run("e")[0]
        func delivered() throws -> Int { try Self.delivered(run: e, on: server) }
        try eventually(within: 30, every: 0.1) { try delivered() >= 600 }
        let listed = try CLI.run(["runs"], in: project.root)
        let line = listed.stdout.split(separator: "\n").first { $0.hasPrefix("\(e) ") } ?? ""
        #expect(line.contains(" running "), "\(listed.stdout)")
        // Its slices (some done, some held) and who sends them, at what rate; d's all done.
        #expect(line.contains(" held)"), "\(listed.stdout)")
        #expect(listed.stdout.contains("\nrun \(e): "), "\(listed.stdout)")
        let d = try run("d")[0]
        let lineD = listed.stdout.split(separator: "\n").first { $0.hasPrefix("\(d) ") } ?? ""
        #expect(lineD.hasSuffix(" 12/12"), "\(listed.stdout)")
        let started = Date()
        let cancelled = try CLI.run(["cancel", e], in: project.root)
        #expect(
            cancelled.status == 0 && cancelled.stdout.contains("cancelled"),
            "\(cancelled.stdout)\(cancelled.stderr)"
        )
        #expect(Date().timeIntervalSince(started) < 5, "the cancel took \(Date().timeIntervalSince(started)) s")
        #expect(try run("e")[1] == "cancelled")
        let atCancel = try delivered()
        // Two more ticks of every node: none sends more of it.
        for node in nodes { #expect(node.waitForTicks(2)) }
        #expect(try delivered() == atCancel, "sent after the cancel")
        #expect(atCancel < count, "\(atCancel)")

        for node in nodes { #expect(node.stop() == 0) }
        _ = sim.stop()
        // Both finished campaigns reached every device once (and e some of them).
        let deliveries = try ServeCLITests.deliveries(project)
        #expect(deliveries.count == count && deliveries.values.allSatisfy { $0 == 2 || $0 == 3 })
        #expect(deliveries.values.filter { $0 == 3 }.count <= atCancel + 100)
        // --detach needs a shared journal.
        let shared = try String(contentsOf: project.root.appendingPathComponent("pushcamp.yaml"), encoding: .utf8)
        try project.write("pushcamp.yaml", shared.components(separatedBy: "\njournal:")[0] + "\n")
        let refused = try CLI.run(["send", "--detach", "campaigns/d.yaml"], in: project.root)
        #expect(refused.status == 1 && refused.stderr.contains("--detach"), "\(refused.stderr)")
    }

    /// Issue 48: APNs's refusal of a provider token as too frequent is the cluster's, as the token
    /// is. A token was minted elsewhere (a send on a journal of its own, whose cached token then
    /// went); node A, on the shared journal, mints one of its own within 20 minutes and APNs
    /// refuses it. Node B, another machine (a folder of its own), starts meanwhile: held back
    /// before it sends anything, it mints nothing and never connects.
    @Test func aProviderTokenRefusedOnOneNodeIsHeldOnEveryNode() throws {
        let journal = try TestPostgres.newDatabase().url
        let a = try TemporaryProject(projectFile: nil)
        defer { a.remove() }
        let sim = try JournalCLITests.start(a, [])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try SendCLITests.writeAudience(a, count: 5)
        try SendCLITests.writeCampaign(a)
        let elsewhere = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: a.root)
        #expect(elsewhere.status == 0, "\(elsewhere.stdout)\(elsewhere.stderr)")
        try FileManager.default.removeItem(at: a.root.appendingPathComponent(".pushcamp"))
        let b = try TemporaryProject(projectFile: nil)
        defer { b.remove() }
        for file in ["pushcamp.yaml", "sim/key.p8", "sim/ca.pem", "audiences/a.csv", "campaigns/c.yaml"] {
            try b.write(file, try String(contentsOf: a.root.appendingPathComponent(file), encoding: .utf8))
        }

        let refused = try CLI.run(["send", "--quiet", "--journal", journal, "campaigns/c.yaml"], in: a.root)
        #expect(refused.status != 0, "\(refused.stdout)\(refused.stderr)")
        #expect((refused.stdout + refused.stderr).contains("TooManyProviderTokenUpdates"), "\(refused.stderr)")
        let held = try CLI.run(["send", "--quiet", "--journal", journal, "campaigns/c.yaml"], in: b.root)
        #expect(held.status == 2, "\(held.stdout)\(held.stderr)")
        #expect(held.stderr.contains("no token is minted before") && held.stderr.contains("nothing was sent"))
        // The token from elsewhere accepted; A's refused on its one connection; B never connected.
        let received = sim.stop()
        #expect(received.contains("on 2 connection(s)") && received.contains("provider tokens: 1 accepted"))
        #expect(received.contains("  200  5\n"), "\(received)")
    }

    /// A node whose link to PostgreSQL is cut while it sends the big run (it still reaches APNs):
    /// PostgreSQL runs in a network namespace of the test's own, reached by each node over a veth
    /// link of its own, and the sender's link is cut at the far end, so its packets vanish. It
    /// stops sending before its lease can expire and says why, `/readyz` turns 503, the other node
    /// takes the run over and finishes it, and nothing reaches the simulator twice beyond what the
    /// run counts. Mended, the cut node is ready again and sends nothing of that run.
    @Test func aNodeCutOffFromPostgreSQLStopsAndAnotherFinishesItsRun() async throws {
        try await onOwnThread(Self.aNodeCutOffFromPostgreSQLStopsAndAnotherFinishesItsRunScenario)
    }

    static func aNodeCutOffFromPostgreSQLStopsAndAnotherFinishesItsRunScenario() throws {
        let count = 50_000
        let network = try TestNetwork(links: 2)
        defer { network.remove() }
        let cluster = try TestPostgres.Cluster.start(in: network.namespace, listen: network.links.map(\.farAddress))
        defer { cluster.remove() }
        // The test and node B reach PostgreSQL over link 1; node A over link 0, the one cut.
        let server = cluster.server.at(host: network.links[1].farAddress)
        let (project, sim) = try Self.project(
            count: count,
            at: Date().addingTimeInterval(4),
            journal: server.url("postgres")
        )
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let a = try ServeProcess(
            in: project.root,
            arguments: ["--journal", cluster.server.at(host: network.links[0].farAddress).url("postgres")]
        )
        defer { if a.process.isRunning { a.process.terminate() } }
        let sending = try Self.wait(server, timeout: 60) { $0.owner != nil && $0.delivered >= 5_000 }
        try #require(sending.owner == a.process.processIdentifier, "node A does not send the big run: \(sending)")
        let b = try ServeProcess(in: project.root)
        defer { if b.process.isRunning { b.process.terminate() } }
        let bReady = try b.readiness { $0.hasPrefix("ready") }
        #expect(bReady.status == 200, "\(bReady)")

        try network.cut(0)
        let cutAt = Date()
        // B takes the run over once A's lease expired; A, unable to record a request in flight,
        // has sent nothing since the cut, stops the run when its lease could lapse (`lease-lost`),
        // and is not ready.
        let taken = try Self.wait(server, timeout: 30) { $0.owner == b.process.processIdentifier }
        let takeover = Date().timeIntervalSince(cutAt)
        #expect(taken.owner == b.process.processIdentifier, "node B did not take the run over: \(taken)")
        #expect(takeover < Self.lease + Self.lease / 5 + 2, "taken over after \(takeover) s")
        let notReady = try a.readiness { $0.contains("journal: unreachable") }
        #expect(notReady.status == 503, "\(notReady)")
        #expect(a.waitFor("lease-lost", timeout: 20), "\(a.output.suffix(3000))")
        print("cut link: taken over \(String(format: "%.2f", takeover)) s after the cut (lease \(Self.lease) s)")

        let finished = try Self.wait(server, timeout: 120) { $0.status == "finished" }
        #expect(finished.status == "finished", "\(finished)")
        // Mended, A reaches the journal again and is ready; a few more ticks on both nodes.
        try network.mend(0)
        let ready = try a.readiness { $0.hasPrefix("ready") }
        #expect(ready.status == 200, "\(ready)")
        #expect(a.waitForTicks(4) && b.waitForTicks(1))
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
        _ = sim.stop()
        // What A logged about the cut is in words, not postgres-nio's descriptions.
        #expect(!a.output.contains("PSQLError"), "\(a.output.suffix(3000))")
        try Self.checkEachSlotFiredOnceAndNothingSentTwiceUncounted(server, project, count: count)
    }

    /// A rolling deploy that changed the campaign mid-send of a run sent whole (no slices, so no
    /// snapshot): the node sending the big run is killed, and the node that finds the run has
    /// another revision of the campaign. It does not send a plan the run was not made from: it
    /// gives the run up (`superseded`), says why, and fires nothing more for that slot; what
    /// reached the simulator came once. (A run planned into a snapshot is finished instead:
    /// `aRollingDeployFinishesTheRunAsItWasPlanned`.)
    @Test func aNodeOfAnotherRevisionGivesTheRunUpInsteadOfSendingAnotherPlan() async throws {
        try await onOwnThread(Self.aNodeOfAnotherRevisionGivesTheRunUpInsteadOfSendingAnotherPlanScenario)
    }

    static func aNodeOfAnotherRevisionGivesTheRunUpInsteadOfSendingAnotherPlanScenario() throws {
        let count = 20_000
        let (name, url) = try TestPostgres.newDatabase()
        let server = try TestPostgres.server().on(database: name)
        let (project, sim) = try Self.project(
            count: count,
            at: Date().addingTimeInterval(4),
            journal: url,
            sliced: false
        )
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        // The next revision: the same project with the big campaign's message changed.
        let deployed = try TemporaryProject(projectFile: nil)
        defer { deployed.remove() }
        for item in try FileManager.default.contentsOfDirectory(atPath: project.root.path) {
            try FileManager.default.copyItem(
                at: project.root.appendingPathComponent(item),
                to: deployed.root.appendingPathComponent(item)
            )
        }
        let big = try String(contentsOf: project.root.appendingPathComponent("campaigns/big.yaml"), encoding: .utf8)
        try deployed.write("campaigns/big.yaml", big.replacingOccurrences(of: "hi {{name}}", with: "hello {{name}}"))

        let old = try ServeProcess(in: project.root)
        defer { if old.process.isRunning { old.process.terminate() } }
        let sending = try Self.wait(server, timeout: 60) { $0.owner != nil && $0.delivered >= 3_000 }
        try #require(sending.owner == old.process.processIdentifier, "the old node does not send: \(sending)")
        kill(old.process.processIdentifier, SIGKILL)
        old.process.waitUntilExit()

        let new = try ServeProcess(in: deployed.root)
        defer { if new.process.isRunning { new.process.terminate() } }
        let given = try Self.wait(server, timeout: 30) { $0.status == "superseded" }
        #expect(given.status == "superseded", "\(given)")
        #expect(new.waitFor("the campaign changed since", timeout: 10), "\(new.output.suffix(3000))")
        #expect(new.waitForTicks(3))
        #expect(new.stop() == 0)
        _ = sim.stop()

        // One run for the slot, given up with what it delivered; nothing came twice.
        let runs = try TestPostgres.query(server, "SELECT status FROM run WHERE campaign = 'big'")
        #expect(runs == ["superseded"], "\(runs)")
        let deliveries = try ServeCLITests.deliveries(project)
        let ticks = Set(Self.tickTokens.map { Substring($0) })
        let reached = deliveries.filter { !ticks.contains($0.key) }
        #expect(reached.count >= 3_000 && reached.count < count, "\(reached.count) reached")
        #expect(reached.values.allSatisfy { $0 == 1 }, "a token of the given-up run came twice")
    }
}

/// The App Store receiver on three `serve` nodes and one PostgreSQL of the test's own, restarted
/// mid-stream: Apple's notifications posted round-robin, one of them to all three at once, each
/// retried until answered 200 as Apple does. Each is stored once, each 200 was stored, and each
/// fires its trigger campaign once.
@Suite("pushcamp serve on several nodes: App Store notifications through a PostgreSQL restart", .serialized)
struct ScaleOutAppStoreCLITests {
    static let accounts = 31
    static let devicesPerAccount = 150

    /// The app account token of account `index`.
    static func account(_ index: Int) -> String {
        "7e3fb20b-4cdb-47cc-936d-" + String(String(index).reversed()).padding(toLength: 12, withPad: "0", startingAt: 0)
    }

    /// `body` posted to `node` until it is answered 200 (at most `timeout` seconds), as Apple
    /// retries; every answer on the way.
    static func deliver(
        _ body: [UInt8],
        to node: ServeProcess,
        timeout: Double = 60
    ) -> [(status: Int, body: String)] {
        var answers: [(status: Int, body: String)] = []
        eventually(within: timeout, every: 0.3) {
            let answer: (status: Int, body: String) =
                (try? node.post("/app-store/notifications", body: body)) ?? (0, "")
            answers.append(answer)
            return answer.status == 200
        }
        return answers
    }

    @Test func eachNotificationIsStoredOnceAndFiresOnceThroughAPostgreSQLRestart() async throws {
        try await onOwnThread(Self.eachNotificationIsStoredOnceAndFiresOnceThroughAPostgreSQLRestartScenario)
    }

    static func eachNotificationIsStoredOnceAndFiresOnceThroughAPostgreSQLRestartScenario() throws {
        let chain = try AppStoreTestChain()
        let cluster = try TestPostgres.Cluster.start()
        defer { cluster.remove() }
        let server = cluster.server
        let (project, sim) = try ServeCLITests.receiving(chain)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try ScaleOutCLITests.useJournal(server.url("postgres"), in: project)
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: Self.accounts * Self.devicesPerAccount, columns: ["app_account_token"]) {
                [Self.account($0 / Self.devicesPerAccount)]
            }
        )
        try ServeCLITests.writeTriggerCampaign(project, rate: 500)
        let nodes = try (0..<3).map { _ in try ServeProcess(in: project.root) }
        defer { for node in nodes where node.process.isRunning { node.process.terminate() } }

        // One notification per account, the last one for the test of all three nodes at once.
        let bodies = try (0..<Self.accounts).map { index in
            let payload = try chain.subscriptionNotification(
                type: "DID_FAIL_TO_RENEW",
                original: "\(2_000_000_000 + index)",
                appAccountToken: Self.account(index),
                signedDate: Date()
            )
            return (
                uuid: payload["notificationUUID"] as? String ?? "",
                body: AppStoreTestChain.body(try chain.sign(payload))
            )
        }
        var answered: [String: [(status: Int, body: String)]] = [:]
        func post(_ index: Int) {
            answered[bodies[index].uuid] = Self.deliver(bodies[index].body, to: nodes[index % nodes.count])
        }

        for index in 0..<10 { post(index) }

        // The same notification to all three nodes at once: all 200, stored by one.
        let shared = bodies[Self.accounts - 1]
        let together = Mutex<[(status: Int, body: String)]>([])
        let posts = DispatchGroup()
        for node in nodes {
            DispatchQueue.global().async(group: posts) {
                let answer: (status: Int, body: String) =
                    (try? node.post("/app-store/notifications", body: shared.body)) ?? (0, "")
                together.withLock { $0.append(answer) }
            }
        }
        posts.wait()
        let all = together.withLock { $0 }
        #expect(all.allSatisfy { $0.status == 200 }, "\(all)")
        #expect(all.filter { $0.body == "stored\n" }.count == 1, "\(all)")
        answered[shared.uuid] = all

        // PostgreSQL stops while trigger runs are being sent and notifications keep coming: those
        // are answered 503 until it is back, then stored.
        let sending = {
            (try? TestPostgres.query(server, "SELECT count(*) FROM run WHERE status = 'running'").first) ?? nil
        }
        eventually(within: 30) { sending() == "1" }
        try #require(sending() == "1", "no trigger run is being sent")
        try cluster.halt()
        // Answered 503 by the receiver's own deadline (2 s), not after the journal's 10 s: the
        // nodes say why in their logs (checked below), so the suite's load cannot fail this.
        var whileDown: [Int] = []
        for index in 10..<13 {
            let node = nodes[index % nodes.count]
            whileDown.append((try? node.post("/app-store/notifications", body: bodies[index].body).status) ?? 0)
        }
        #expect(whileDown == [503, 503, 503], "answered while PostgreSQL was down: \(whileDown)")
        let notReady = try nodes[0].get("/readyz")
        #expect(notReady.status == 503, "\(notReady)")
        try cluster.resume()
        for index in 10..<(Self.accounts - 1) { post(index) }
        #expect(answered.values.allSatisfy { $0.last?.status == 200 }, "\(answered)")

        // Every firing settles: claimed by a run (one run sends the firings due together), and
        // every run finished.
        let firings = "SELECT count(*) FROM trigger_firing WHERE status = 'fired'"
        let unfinished = "SELECT count(*) FROM run WHERE status <> 'finished'"
        try eventually(within: 120, every: 0.2) {
            try TestPostgres.query(server, firings).first == "\(Self.accounts)"
                && TestPostgres.query(server, unfinished).first == "0"
        }
        for node in nodes { #expect(node.stop() == 0) }
        _ = sim.stop()
        // What the nodes logged about the outage is in words, not postgres-nio's placeholder.
        for node in nodes {
            #expect(!node.output.contains("PSQLError"), "\(node.output.suffix(3000))")
        }
        let late = "not stored (503, Apple retries): the journal did not store it within 2 s"
        let lateAnswers = nodes.map { $0.output.components(separatedBy: late).count - 1 }.reduce(0, +)
        #expect(lateAnswers >= whileDown.count, "\(nodes.map { $0.output.suffix(2000) })")

        // Stored once each, and every notification answered 200 is stored.
        let stored = try TestPostgres.query(server, "SELECT uuid FROM appstore_notification")
        #expect(stored.count == Self.accounts && Set(stored) == Set(answered.keys), "\(stored.count) stored")
        #expect(
            try TestPostgres.query(server, "SELECT count(*) FROM subscription").first == "\(Self.accounts)"
        )
        // Fired once each: one firing per notification, claimed by a run that finished.
        let rows = try TestPostgres.query(
            server,
            "SELECT f.notification, f.status, r.status FROM trigger_firing f LEFT JOIN run r ON r.id = f.run"
        )
        #expect(rows.count == Self.accounts, "\(rows)")
        #expect(rows.allSatisfy { $0.hasSuffix("|fired|finished") }, "\(rows)")
        let runs =
            try TestPostgres.query(server, "SELECT count(*), sum(possible_duplicates) FROM run")
            .first?.split(separator: "|").compactMap { Int($0) } ?? []
        // Every device reached, none twice beyond what the runs counted as possible duplicates.
        let deliveries = try ServeCLITests.deliveries(project)
        #expect(deliveries.count == Self.accounts * Self.devicesPerAccount, "\(deliveries.count) devices reached")
        let duplicated = deliveries.values.reduce(0) { $0 + ($1 - 1) }
        #expect(duplicated <= runs.last ?? -1, "\(duplicated) sent twice, \(runs) counted")
        print(
            "PostgreSQL restart: \(answered.values.map { $0.count - 1 }.reduce(0, +)) notifications retried, \(runs.first ?? 0) trigger runs, \(duplicated) sent twice"
        )
    }
}
