import Foundation
import GRDB
import PushcampTestSupport
import Testing

/// `pushcamp journal prune` through the built binary: the rows go, and every report, listing and
/// the dead tokens read the same afterwards; the project's frequency caps set how young a cutoff
/// may be.
@Suite("journal prune from the command line")
struct RetentionCLITests {
    /// Rows of `table` in the project's SQLite journal.
    static func rows(_ table: String, in project: TemporaryProject) throws -> Int {
        let queue = try DatabaseQueue(path: project.path(".pushcamp/journal.sqlite"))
        return try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0 }
    }

    @Test func pruningKeepsEveryReportAndTheDeadTokens() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let token = TemporaryProject.token
        var rules = ""
        for index in 0..<6 { rules += "\(token(index)) unregistered 1700000000000\n" }
        for index in 6..<9 { rules += "\(token(index)) bad\n" }
        try project.write("tokens.txt", rules)
        let sim = try JournalCLITests.start(project, ["--tokens", "tokens.txt"])
        defer { _ = sim.stop() }
        try SendCLITests.writeAudience(project, count: 300)
        try SendCLITests.writeCampaign(project)
        #expect(try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root).status == 4)
        try project.write(
            "campaigns/d.yaml",
            "campaign: d\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\n"
                + "message:\n  payload: { aps: { alert: again } }\n"
        )
        #expect(try CLI.run(["send", "--quiet", "campaigns/d.yaml"], in: project.root).status == 0)

        let reads = [
            ["report", "1", "--format", "json"], ["report", "1"], ["report", "2", "--format", "json"],
            ["runs", "--format", "json"], ["tokens", "invalid", "--format", "json"],
        ]
        let before = try reads.map { try CLI.run($0, in: project.root).stdout }
        #expect(before[0].contains("\"Unregistered\""), "\(before[0])")
        #expect(try Self.rows("delivery", in: project) > 0)
        #expect(try Self.rows("recipient", in: project) > 0)

        // A dry run names the runs and changes nothing.
        let dry = try CLI.run(["journal", "prune", "--older-than", "0s", "--dry-run"], in: project.root)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("run 1 (c) finished"), "\(dry.stdout)")
        #expect(dry.stdout.contains("2 runs ended before"), "\(dry.stdout)")
        #expect(try Self.rows("delivery", in: project) > 0)

        let pruned = try CLI.run(["journal", "prune", "--older-than", "0s"], in: project.root)
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stdout.contains("pruned 2 runs ended before"), "\(pruned.stdout)")
        for table in ["delivery", "dispatch", "recipient"] {
            #expect(try Self.rows(table, in: project) == 0, "\(table)")
        }
        let after = try reads.map { try CLI.run($0, in: project.root).stdout }
        for (read, (was, now)) in zip(reads, zip(before, after)) {
            #expect(was == now, "\(read.joined(separator: " ")) changed:\n\(was)\n---\n\(now)")
        }
        // Who failed is gone: a replay says so; a second pass finds nothing left.
        let replay = try CLI.run(["replay", "1", "--reason", "BadDeviceToken", "--force"], in: project.root)
        #expect(replay.status != 0)
        #expect(replay.stderr.contains("were pruned from the journal"), "\(replay.stderr)")
        let again = try CLI.run(["journal", "prune", "--older-than", "0s"], in: project.root)
        #expect(again.stdout.contains("pruned 0 runs"), "\(again.stdout)")

        // A frequency cap counts deliveries from the rows within its window: a younger cutoff is refused.
        try project.write(
            "campaigns/capped.yaml",
            try String(contentsOf: project.root.appendingPathComponent("campaigns/d.yaml"), encoding: .utf8)
                .replacingOccurrences(of: "campaign: d", with: "campaign: capped")
                + "frequency_cap: { max: 1, per: 3d }\n"
        )
        let refused = try CLI.run(["journal", "prune", "--older-than", "2d"], in: project.root)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("campaigns/capped.yaml caps deliveries over 3d"), "\(refused.stderr)")
        #expect(try CLI.run(["journal", "prune", "--older-than", "3d"], in: project.root).status == 0)
        // Nor will `serve` keep less than the cap counts.
        try project.append("pushcamp.yaml", "\njournal: { retention: 2d }\n")
        let serve = try CLI.run(["serve", "--listen", "127.0.0.1:0"], in: project.root, timeout: 30)
        #expect(serve.status != 0)
        #expect(
            serve.stderr.contains(
                "journal.retention (2d) is shorter than the frequency cap of campaigns/capped.yaml (3d)"
            ),
            "\(serve.stderr)"
        )
        let usage = try CLI.run(["journal", "prune"], in: project.root)
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--older-than DURATION or --ended-before TIME"), "\(usage.stderr)")
    }
}
