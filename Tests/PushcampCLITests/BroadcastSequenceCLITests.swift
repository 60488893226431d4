import Foundation
import PushcampTestSupport
import Testing

/// Issue 43: a Live Activity's sequence under `serve` with the channel's throttle in the way, and
/// a step that finally fails: visible, never a quiet `finished`.
@Suite("broadcast sequences under serve, through faults", .serialized)
struct BroadcastSequenceCLITests {
    /// An ISO 8601 time `seconds` from now, on a whole second.
    static func at(_ seconds: Double) -> String {
        ISO8601DateFormatter().string(
            from: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + seconds).rounded(.up))
        )
    }

    /// A broadcast step of `channel` final: `campaigns/NAME.yaml`.
    static func writeStep(
        _ project: TemporaryProject,
        _ name: String,
        event: String,
        at time: String,
        retry: String
    ) throws {
        try project.write(
            "campaigns/\(name).yaml",
            """
            campaign: \(name)
            app: shop
            channel: final
            schedule: { at: \(time) }
            retry: \(retry)
            message:
              payload:
                aps: { event: \(event), content-state: { home: 1, away: 0 } }

            """
        )
    }

    /// Start (per device), update and end one second apart, on a channel that takes one broadcast
    /// per 4 s and answers the first 429: the update is held up, the end comes due meanwhile and
    /// waits for it, then is throttled itself and goes again. Every step is delivered once, in
    /// order; every run finished; no slot failed.
    @Test func aStartUpdateEndSequenceIsDeliveredInOrderThroughTheChannelThrottle() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try BroadcastCLITests.appliedThenRestarted(
            project,
            simulator: ["--record", "received.csv", "--channel-throttle", "4", "--broadcast-faults", "429"]
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let token = TemporaryProject.token(1)
        try BroadcastCLITests.writeStart(project, to: token, at: Self.at(2))
        let retry = "{ TooManyRequests: 2s }"
        try Self.writeStep(project, "match-update", event: "update", at: Self.at(4), retry: retry)
        try Self.writeStep(project, "match-end", event: "end", at: Self.at(5), retry: retry)

        let serve = try ServeProcess(in: project.root)
        defer { if serve.process.isRunning { _ = serve.stop() } }
        #expect(serve.waitFor("of match-update: run 2 broadcast to channel final: 200", timeout: 40), "\(serve.output)")
        #expect(serve.waitFor("of match-end: run 3 broadcast to channel final: 200", timeout: 40), "\(serve.output)")
        #expect(serve.stop() == 0)
        let runs = try ServeCLITests.runs(project)
        #expect(runs.count == 3 && runs.allSatisfy { $0["status"] as? String == "finished" }, "\(runs)")
        let schedules = try CLI.run(["schedules", "--format", "json"], in: project.root)
        #expect(!schedules.stdout.contains(#""outcome":"failed""#) && schedules.stdout.contains(#""failed":[]"#))
        _ = sim.stop()

        #expect(try JournalCLITests.received(project).map(\.token) == [token])
        let broadcasts = try ChannelsCLITests.received(project).filter { $0.path.hasPrefix("/4/") }
        let delivered = broadcasts.filter { $0.status == 200 }
        #expect(BroadcastCLITests.events(delivered) == ["update", "end"], "\(broadcasts.map(\.status))")
        // The throttle was in the way: the update's first answer was 429, and so was an end's.
        #expect(broadcasts.filter { $0.status == 429 }.count >= 2, "\(broadcasts.map(\.status))")
    }

    /// A step answered 503 until its attempts run out: a failed slot with its reason in
    /// `pushcamp schedules`, a problem in `pushcamp status`, an error in the log, and counted in
    /// `/metrics`; the run is not a quiet `finished` with nothing said.
    @Test func aStepThatFinallyFailsIsAFailedSlotWithItsReason() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try BroadcastCLITests.appliedThenRestarted(project, simulator: ["--broadcast-faults", "503,503,503"])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeStep(
            project,
            "match-end",
            event: "end",
            at: Self.at(2),
            retry: "{ max_attempts: 2, ServiceUnavailable: 1s }"
        )
        let serve = try ServeProcess(in: project.root)
        defer { if serve.process.isRunning { _ = serve.stop() } }
        #expect(
            serve.waitFor("broadcast to channel final failed: 503 ServiceUnavailable (2 attempts", timeout: 30),
            "\(serve.output)"
        )
        #expect(serve.output.contains(" error pushcamp.serve: "), "\(serve.output)")
        let metrics = try serve.get("/metrics").body
        #expect(
            metrics.contains(
                #"pushcamp_scheduler_slots_failed_total{campaign="match-end",reason="ServiceUnavailable"} 1"#
            ),
            "\(metrics)"
        )
        #expect(serve.stop() == 0)

        let schedules = try CLI.run(["schedules"], in: project.root)
        #expect(schedules.stdout.contains("failed:  "), "\(schedules.stdout)")
        #expect(
            schedules.stdout.contains("ServiceUnavailable (503 ServiceUnavailable (2 attempts"),
            "\(schedules.stdout)"
        )
        let status = try CLI.run(["status"], in: project.root)
        #expect(status.stdout.contains("failed: ServiceUnavailable"), "\(status.stdout)")
        let report = try CLI.run(["report", "1", "--format", "json"], in: project.root)
        #expect(report.stdout.contains(#""failed":1"#), "\(report.stdout)")
    }
}
