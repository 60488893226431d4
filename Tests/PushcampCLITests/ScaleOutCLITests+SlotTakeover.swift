import Foundation
import PushcampTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 43: three `serve` nodes on one PostgreSQL journal (in a network namespace of the test's
/// own, each node over a link of its own), a recurring campaign whose slot run takes longer than
/// its interval. The link of the node sending a slot run is cut mid-send. The node that takes the
/// campaign over finishes that run (every recipient reached once, beyond the possible duplicates
/// it lists) before any newer slot may start; the slots that came due meanwhile are overlaps,
/// whichever node saw what first. No run is closed `superseded`. Part of the serialized
/// `ScaleOutCLITests`, so no other many-node test runs beside it.
extension ScaleOutCLITests {
    @Test func aSlotRunWhoseSenderIsCutOffIsFinishedByTheNodeThatTakesItOver() async throws {
        try await onOwnThread(Self.slotRunCutOffScenario)
    }

    static func slotRunCutOffScenario() throws {
        let count = 300
        let network = try TestNetwork(links: 4)
        defer { network.remove() }
        let cluster = try TestPostgres.Cluster.start(in: network.namespace, listen: network.links.map(\.farAddress))
        defer { cluster.remove() }
        // Nodes 0, 1, 2 reach PostgreSQL over links 0, 1, 2; the test over link 3.
        let server = cluster.server.at(host: network.links[3].farAddress)
        let (project, sim) = try ServeCLITests.simulated()
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try ScaleOutCLITests.useJournal(server.url("postgres"), in: project)
        try SendCLITests.writeAudience(project, count: count)
        // Slots at first, +4 s and +8 s; each run takes 12 s at 25 pushes a second.
        let first = (Date().timeIntervalSince1970 + 8).rounded(.up)
        let iso = ISO8601DateFormatter()
        try project.write(
            "campaigns/slow.yaml",
            """
            campaign: slow
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: { aps: { alert: "hi {{name}}" } }
            schedule:
              every: 4s
              from: \(iso.string(from: Date(timeIntervalSince1970: first)))
              until: \(iso.string(from: Date(timeIntervalSince1970: first + 9)))
            throttle: { rate: 25/s, connections: 1 }

            """
        )
        let nodes = try (0..<3).map { index in
            try ServeProcess(
                in: project.root,
                arguments: ["--journal", cluster.server.at(host: network.links[index].farAddress).url("postgres")]
            )
        }
        defer { for node in nodes where node.process.isRunning { node.process.terminate() } }

        // The first slot's run, 40 or more delivered: its sender's link is cut.
        let sending = try ScaleOutCLITests.wait(server, campaign: "slow", timeout: 60) {
            $0.owner != nil && $0.delivered >= 40
        }
        let sender = try #require(nodes.firstIndex { $0.process.processIdentifier == sending.owner })
        try network.cut(sender)
        let cutAt = Date()
        let taken = try ScaleOutCLITests.wait(server, campaign: "slow", timeout: 30) {
            $0.owner != nil && $0.owner != sending.owner
        }
        #expect(taken.owner != nil && taken.owner != sending.owner, "not taken over: \(taken)")
        print("slot run taken over \(String(format: "%.2f", Date().timeIntervalSince(cutAt))) s after the cut")
        let finished = try ScaleOutCLITests.wait(server, campaign: "slow", timeout: 90) { $0.status == "finished" }
        #expect(finished.status == "finished" && finished.delivered == count, "\(finished)")
        try network.mend(sender)
        // The later slots are decided (overlaps): waited for, at most 10 s.
        _ = try ConsoleBrowserTests.eventually(10) {
            try TestPostgres.query(server, "SELECT count(*) FROM schedule_slot WHERE campaign = 'slow'") == ["3"]
        }
        for node in nodes { _ = node.stop() }
        _ = sim.stop()

        // One run, of the first slot, finished; nothing superseded.
        let runs = try TestPostgres.query(server, "SELECT slot, status FROM run WHERE campaign = 'slow' ORDER BY id")
        #expect(runs == ["\(Int64(first))|finished"], "\(runs)")
        // The slots due while it was sending, or while its cut-off sender held the campaign: overlaps.
        let slots = try TestPostgres.query(
            server,
            "SELECT slot, outcome, coalesce(reason, '') FROM schedule_slot WHERE campaign = 'slow' ORDER BY slot"
        )
        #expect(
            slots == [
                "\(Int64(first))|fired|", "\(Int64(first) + 4)|skipped|overlap", "\(Int64(first) + 8)|skipped|overlap",
            ],
            "\(slots)"
        )
        // Every recipient reached; what arrived twice is listed as a possible duplicate.
        let deliveries = try ServeCLITests.deliveries(project)
        #expect(deliveries.count == count, "\(deliveries.count) tokens delivered")
        let listed = Set(
            try TestPostgres.query(
                server,
                "SELECT token FROM possible_duplicate WHERE run = (SELECT id FROM run WHERE campaign = 'slow')"
            ).map { Substring($0) }
        )
        let twice = Set(deliveries.filter { $0.value > 1 }.keys)
        #expect(twice.isSubset(of: listed), "sent twice, not listed: \(twice.subtracting(listed).sorted())")
        #expect(deliveries.values.allSatisfy { $0 <= 2 }, "\(deliveries.filter { $0.value > 2 })")
    }
}
