import Foundation
import PushcampJournal
import PushcampPlanner
import PushcampServe
import Testing

@Suite("pushcamp status")
struct ProjectStatusTests {
    /// An interrupted run says how to resume or give it up, with commands that run as written;
    /// dead tokens are counted per topic, the last day's apart.
    @Test func anInterruptedRunAndDeadTokens() async throws {
        let journal = MemoryJournal()
        let now = 1_790_000_000.0
        let run = try await journal.createRun(
            campaign: "spring",
            revision: "r1",
            now: now - 600,
            file: "/srv/pushes/campaigns/spring.yaml",
            replay: nil
        )
        try await journal.setStatus(.interrupted, of: run.id, now: now - 500)
        try await journal.rememberInvalidTokens([
            InvalidToken(
                topic: "com.a",
                token: String(repeating: "a", count: 64),
                reason: "Unregistered",
                apnsTimestamp: nil,
                seenAt: now - 100
            ),
            InvalidToken(
                topic: "com.a",
                token: String(repeating: "b", count: 64),
                reason: "Unregistered",
                apnsTimestamp: nil,
                seenAt: now - 200_000
            ),
        ])
        let status = try await ProjectStatus.read(
            paths: ProjectPaths(root: URL(fileURLWithPath: "/srv/pushes"), displayRoot: "."),
            folders: [],
            journal: journal,
            journalName: "memory",
            now: now
        )
        let text = status.text()
        #expect(
            text.contains(
                """
                Runs being sent or interrupted
                  run 1  spring  interrupted  since 2026-09-21 14:03:20Z  answered 0 of 0
                    `pushcamp send campaigns/spring.yaml` resumes it; `pushcamp cancel 1` gives it up

                """
            ),
            "\(text)"
        )
        #expect(
            text.contains(
                "Dead tokens (APNs called them Unregistered, ExpiredToken or BadDeviceToken)\n  com.a  2 (1 in the last day)\n"
            ),
            "\(text)"
        )
        #expect(
            status.json().contains(#""dead_tokens":[{"topic":"com.a","total":2,"last_day":1}]"#),
            "\(status.json())"
        )
    }
}
