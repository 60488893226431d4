import Foundation
import PushcampTestSupport
import Testing

extension ScaleOutCLITests {
    /// A rolling deploy in the middle of a sliced run: three machines, each with its own copy of
    /// the project, on one journal and one APNs; one machine at a time gets a new revision of the
    /// campaign and restarts. The run, planned from the old revision, is finished by the new nodes
    /// from its snapshot: every recipient gets it, nobody twice who is not listed.
    @Test func aRollingDeployFinishesTheRunAsItWasPlanned() async throws {
        try await onOwnThread(Self.aRollingDeployFinishesTheRunAsItWasPlannedScenario)
    }

    static func aRollingDeployFinishesTheRunAsItWasPlannedScenario() throws {
        let count = 9_000
        // Slices of a second at a third of 1,500/s: 500 pushes, eighteen slices, six seconds at least.
        let (server, project, sim) = try slicedProject(count: count)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        func campaign(_ alert: String) -> String {
            """
            campaign: big
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: { aps: { alert: "\(alert)" } }
            throttle: { rate: 1500/s, connections: 2 }
            """
        }
        try project.write("campaigns/big.yaml", campaign("before the deploy"))
        let copies = try (1...2).map { _ in
            let copy = FileManager.default.temporaryDirectory.appendingPathComponent(
                "pushcamp-node-\(UUID().uuidString)"
            )
            try FileManager.default.copyItem(at: project.root, to: copy)
            return copy
        }
        defer { for copy in copies { try? FileManager.default.removeItem(at: copy) } }
        let folders = [project.root] + copies
        var nodes = try folders.map { try ServeProcess(in: $0) }
        defer { for node in nodes where node.process.isRunning { node.process.terminate() } }

        let detached = try CLI.run(["send", "--detach", "campaigns/big.yaml"], in: project.root)
        #expect(detached.status == 0, "\(detached.stderr)")
        let row = try TestPostgres.query(server, "SELECT id, revision FROM run WHERE campaign = 'big'")
        let parts = row.first?.split(separator: "|").map(String.init) ?? []
        let (run, revision) = (parts.first ?? "0", parts.last ?? "")
        func delivered() throws -> Int { try Self.delivered(run: run, on: server) }
        func status() throws -> String {
            try TestPostgres.query(server, "SELECT status FROM run WHERE id = \(run)").first ?? ""
        }
        try eventually(within: 30, every: 0.1) { try delivered() >= 1_000 }

        // The deploy, one machine at a time: its campaign file changes (a new revision), its node restarts.
        var restarted: [ServeProcess] = []
        for (index, folder) in folders.enumerated() {
            try campaign("after the deploy").write(
                to: folder.appendingPathComponent("campaigns/big.yaml"),
                atomically: true,
                encoding: .utf8
            )
            _ = nodes[index].stop()
            nodes[index] = try ServeProcess(in: folder)
            restarted.append(nodes[index])
        }
        #expect(try status() == "running", "the deploy took longer than the run: nothing was tested")
        // Only nodes of the new revision are left: they finish the old revision's run.
        try eventually(within: 90, every: 0.2) { try status() == "finished" }
        #expect(try status() == "finished")
        #expect(try TestPostgres.query(server, "SELECT revision FROM run WHERE id = \(run)") == [revision])
        let refused = restarted.filter { $0.output.contains("it sends no slice of it") }
        #expect(refused.isEmpty, "\(refused.map(\.output))")
        for node in nodes { _ = node.stop() }
        _ = sim.stop()

        // Everyone got it; nobody twice who is not in the run's list of possible duplicates.
        var answers: [String: Int] = [:]
        for request in try JournalCLITests.received(project) where request.status == "200" {
            answers[request.token, default: 0] += 1
        }
        #expect(answers.count == count)
        let listed = Set(try TestPostgres.query(server, "SELECT token FROM possible_duplicate WHERE run = \(run)"))
        let twice = answers.filter { $0.value > 1 }.map(\.key)
        #expect(twice.allSatisfy(listed.contains), "\(twice.count) received twice, \(listed.count) listed")
        // The new revision was never sent: a campaign already sent is not sent again by itself.
        #expect(try TestPostgres.query(server, "SELECT count(*) FROM run WHERE campaign = 'big'") == ["1"])
    }
}
