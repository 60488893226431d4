import Foundation
import PushcampTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension ScaleOutCLITests {
    /// Issue 48: a sliced run's creator opens slices while it is still writing the snapshot, and
    /// sends the first of them itself. Killed (-9) between the first slices opened and the seal,
    /// then sent again: the new creator drops what the dead one wrote past its last opened slice,
    /// writes the rest of the same plan after it, and every recipient gets the push; nobody twice
    /// who is not in the run's list of possible duplicates; the snapshot holds each push once.
    @Test func aCreatorKilledMidSnapshotIsTakenOverWhereItStopped() async throws {
        try await onOwnThread(Self.aCreatorKilledMidSnapshotIsTakenOverWhereItStoppedScenario)
    }

    static func aCreatorKilledMidSnapshotIsTakenOverWhereItStoppedScenario() throws {
        // Slices of a second at a third of 50,000/s (16,667 pushes; the first one page, 5,000, the
        // second two): a snapshot of 250,000 takes long enough to be stopped in the middle.
        let count = 250_000
        let (server, project, sim) = try slicedProject(count: count)
        defer { project.remove() }
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try project.write(
            "campaigns/c.yaml",
            """
            campaign: c
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: { aps: { alert: "hi {{name}}" } }
            throttle: { rate: 50000/s, connections: 2 }
            """
        )
        func number(_ sql: String) throws -> Int { Int(try TestPostgres.query(server, sql).first ?? "") ?? -1 }
        let creator = Process()
        creator.executableURL = CLI.binary
        creator.arguments = ["send", "--quiet", "campaigns/c.yaml"]
        creator.currentDirectoryURL = project.root
        creator.standardOutput = FileHandle.nullDevice
        creator.standardError = FileHandle.nullDevice
        try creator.run()
        defer { if creator.isRunning { kill(creator.processIdentifier, SIGKILL) } }

        // Frozen as soon as two slices are open and the snapshot is not sealed (the journal's
        // tables may not be made yet), then killed.
        eventually(within: 60, every: 0.005) {
            (try? number("SELECT count(*) FROM slice s JOIN run r ON r.id = s.run WHERE r.planned IS NULL")) ?? 0 >= 2
        }
        kill(creator.processIdentifier, SIGSTOP)
        let opened = try number("SELECT count(*) FROM slice")
        let written = try number("SELECT count(*) FROM pushcamp_snapshot(1)")
        #expect(
            try number("SELECT count(*) FROM run WHERE id = 1 AND planned IS NULL") == 1,
            "the snapshot was sealed before the creator could be stopped: nothing was tested"
        )
        #expect(opened >= 2 && written < count, "\(opened) slices opened, \(written) pushes written")
        kill(creator.processIdentifier, SIGKILL)
        creator.waitUntilExit()

        // Sent again once the dead creator's lease has run out: the same run, resumed.
        try eventually(within: 30, every: 0.1) {
            try number(
                "SELECT count(*) FROM lease WHERE resource = 'campaign:c' AND expires_at > extract(epoch FROM clock_timestamp())"
            ) == 0
        }
        let again = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stderr.contains("resuming run 1"), "\(again.stderr)")
        _ = sim.stop()

        #expect(try TestPostgres.query(server, "SELECT status, planned FROM run") == ["finished|\(count)"])
        // The snapshot holds each push of the plan once, and the slices cover it without a gap or
        // an overlap; the first slices are the ones the dead creator opened.
        #expect(
            try TestPostgres.query(server, "SELECT count(*), count(DISTINCT seq) FROM pushcamp_snapshot(1)")
                == ["\(count)|\(count)"]
        )
        #expect(
            try TestPostgres.query(
                server,
                """
                SELECT sum(last_seq - first_seq + 1), count(*) FILTER (WHERE first_seq <> previous + 1)
                FROM (SELECT first_seq, last_seq, lag(last_seq) OVER (ORDER BY first_seq) AS previous FROM slice) s
                """
            ) == ["\(count)|0"]
        )
        #expect(try number("SELECT count(*) FROM slice WHERE NOT done") == 0)
        #expect(try number("SELECT count(*) FROM slice") > opened)

        // Everyone got it; nobody twice who is not listed as a possible duplicate.
        let answers = try ServeCLITests.deliveries(project)
        #expect(answers.count == count)
        let listed = Set(try TestPostgres.query(server, "SELECT token FROM possible_duplicate WHERE run = 1"))
        let twice = answers.filter { $0.value > 1 }.map { String($0.key) }
        #expect(twice.allSatisfy(listed.contains), "\(twice.count) received twice, \(listed.count) listed")
    }
}
