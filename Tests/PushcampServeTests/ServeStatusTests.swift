import Foundation
import Logging
import PushcampServe
import Synchronization
import Testing

@Suite("serve's readiness and log lines")
struct ServeStatusTests {
    /// `/readyz` is honest about what stops serve from doing its job: credentials it cannot use, a
    /// receiver that cannot store (for a minute after the last failure, or until the next success).
    @Test func readinessNamesCredentialsAndStoreFailures() {
        let status = ServeStatus()
        status.update {
            $0.journalOpen = true
            $0.lastTick = 1000
        }
        #expect(status.readiness(now: 1001).ready)
        status.update { $0.credentials = ["app shop: key_file: environment variable K is not set (campaigns: news)"] }
        let missing = status.readiness(now: 1001)
        #expect(!missing.ready)
        #expect(missing.body.hasPrefix("not ready: credentials cannot be used (1 app(s))\n"), "\(missing.body)")
        #expect(missing.body.contains("credentials: app shop: key_file: environment variable K is not set"))
        status.update { $0.credentials = [] }

        status.storeFailed("the journal is locked by another process", at: 1001)
        let failing = status.readiness(now: 1002)
        #expect(!failing.ready)
        #expect(
            failing.body.contains("App Store notifications cannot be stored (answered 503): the journal is locked"),
            "\(failing.body)"
        )
        // A minute later without a notification, the node offers itself again.
        status.update { $0.lastTick = 1061 }
        #expect(status.readiness(now: 1062).ready)
        status.storeFailed("locked", at: 1070)
        status.stored()
        status.update { $0.lastTick = 1071 }
        #expect(status.readiness(now: 1071).ready)
    }

    @Test func jsonLogLinesCarryTheEventsFieldsAndEscapeEverything() {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "pushcamp.serve") { label in
            ServeLogHandler(label: label, format: .json, level: .info) { line in lines.withLock { $0.append(line) } }
        }
        logger[metadataKey: "node"] = "a"
        logger.info("slot of \"news\"\n", metadata: ["event": "run-started", "campaign": "news", "run": "3"])
        logger.debug("not at info")
        let line = lines.withLock { $0 }.first ?? ""
        #expect(lines.withLock { $0.count } == 1)
        #expect(line.hasSuffix("\n") && line.dropLast().allSatisfy { $0 != "\n" })
        let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: String]
        #expect(object?["message"] == "slot of \"news\"\n")
        #expect(object?["level"] == "info" && object?["logger"] == "pushcamp.serve")
        #expect(object?["event"] == "run-started" && object?["campaign"] == "news" && object?["run"] == "3")
        #expect(object?["node"] == "a")
        #expect(object?["time"]?.hasSuffix("Z") == true)

        let text = Mutex<[String]>([])
        let plain = Logger(label: "pushcamp.serve") { label in
            ServeLogHandler(label: label, format: .text, level: .info) { line in text.withLock { $0.append(line) } }
        }
        plain.error("forged\r\nline")
        #expect(text.withLock { $0 }.first?.hasSuffix(" error pushcamp.serve: forged\\r\\nline\n") == true)
    }
}

extension ServeStatusTests {
    @Test func aJournalThatDoesNotAnswerMakesServeNotReady() {
        let status = ServeStatus()
        status.update {
            $0.journalOpen = true
            $0.lastTick = 100
        }
        #expect(status.readiness(now: 101).ready)
        status.update { $0.journalProblem = "the journal db:5432/pushcamp cannot be reached: connection refused" }
        let (ready, body) = status.readiness(now: 101)
        #expect(!ready)
        #expect(body.contains("not ready: the journal cannot be reached: the journal db:5432/pushcamp"), "\(body)")
        #expect(body.contains("journal: unreachable\n"), "\(body)")
    }
}
