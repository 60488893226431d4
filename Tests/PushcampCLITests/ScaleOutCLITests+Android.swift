import Foundation
import PushcampTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension ScaleOutCLITests {
    /// Three `serve` nodes on one PostgreSQL journal sending an Android campaign every 2 s: whichever
    /// node fires a slot sends with the access token the first one fetched, kept in the journal, so
    /// Google's token endpoint is asked once for the whole cluster.
    @Test func threeNodesSendToAndroidWithOneAccessToken() throws {
        let (name, url) = try TestPostgres.newDatabase()
        let server = try TestPostgres.server().on(database: name)
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(["--state-dir", "sim", "--record-fcm", "fcm.jsonl"], in: project.root)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try AndroidCLITests.writeProject(project, port: sim.port)
        try Self.useJournal(url, in: project)
        try AndroidCLITests.writeAndroidCampaign(
            project,
            id: "android-tick",
            count: 50,
            throttle: "{ rate: 1000/s }",
            extra: "schedule: { every: 2s }\n"
        )
        // The journal is cut into slices, but a campaign with an Android app is sent whole by one
        // node under its project's quota, so it cannot be left to the nodes as slices.
        let detached = try CLI.run(["send", "--detach", "--yes", "campaigns/a.yaml"], in: project.root)
        #expect(detached.status == 1, "\(detached.stdout)\(detached.stderr)")
        #expect(detached.stderr.contains("a campaign with an Android app is sent whole"), "\(detached.stderr)")
        let nodes = try (0..<3).map { _ in try ServeProcess(in: project.root) }
        defer { for node in nodes where node.process.isRunning { node.process.terminate() } }
        func finished() throws -> Int {
            let rows = try TestPostgres.query(
                server,
                "SELECT count(*) FROM run WHERE campaign = 'android-tick' AND status = 'finished'"
            )
            return Int(rows.first ?? "") ?? 0
        }
        func senders() -> [ServeProcess] { nodes.filter { $0.output.contains(" finished: 50 delivered") } }

        // Two slots sent; the node that sent them leaves, so the others send the next ones.
        #expect(try ConsoleBrowserTests.eventually(60) { try finished() >= 2 })
        // The sender's metrics count Android's answers under their platform.
        let metrics = try #require(senders().first).get("/metrics").body
        let label = #"campaign="android-tick",platform="android""#
        #expect(
            metrics.contains(#"pushcamp_pushes_total{campaign="android-tick",outcome="delivered",platform="android"}"#)
        )
        #expect(metrics.contains("pushcamp_apns_answers_total{\(label),status=\"200\"}"), "\(metrics)")
        #expect(metrics.contains("pushcamp_apns_request_duration_seconds_bucket{\(label),le=\"+Inf\"}"))
        for node in senders() {
            node.process.terminate()
            node.process.waitUntilExit()
        }
        let before = try finished()
        #expect(try ConsoleBrowserTests.eventually(60) { try finished() >= before + 3 })
        for node in nodes where node.process.isRunning {
            node.process.terminate()
            node.process.waitUntilExit()
        }
        let summary = sim.stop()
        #expect(senders().count >= 2, "\(nodes.map(\.output))")
        #expect(summary.contains("fcm access tokens: 1 issued"), "\(summary)")
        let fcm = try AndroidCLITests.fcmRecords(project, "fcm.jsonl")
        #expect(fcm.allSatisfy { $0["status"] as? Int == 200 })
    }
}
