import Foundation
import PushcampTestSupport
import Testing

/// `pushcamp sim` in its own process, as a team would run it beside a rehearsal.
final class SimulatorProcess {
    let process = Process()
    let port: Int
    private let output = Pipe()

    init(_ arguments: [String], in directory: URL) throws {
        process.executableURL = CLI.binary
        process.arguments = ["sim", "--port", "0"] + arguments
        process.currentDirectoryURL = directory
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line names the port it listens on.
        var first: [UInt8] = []
        while !first.contains(0x0A) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            first += chunk
        }
        let line = String(decoding: first, as: UTF8.self)
        guard let range = line.range(of: "https://127.0.0.1:"),
            let port = Int(line[range.upperBound...].prefix { $0.isNumber })
        else {
            process.terminate()
            throw CLIError("pushcamp sim did not start: \(line)")
        }
        self.port = port
    }

    /// Ctrl-C, then everything it printed after the start-up lines.
    func stop() -> String {
        process.interrupt()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: rest, as: UTF8.self)
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite("send and rehearse from the command line")
struct SendCLITests {
    @Test func sendReachesASeparatelyStartedSimulator() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let count = 60
        let gone = TemporaryProject.token(7)
        let bad = TemporaryProject.token(8)
        try project.write("tokens.txt", "# device behaviours\n\(gone) unregistered 1700000000000\n\(bad) bad\n")
        let sim = try SimulatorProcess(
            [
                "--state-dir", "sim", "--team-id", "ABCDE12345", "--key-id", "KEY1234567",
                "--topic", "com.example.shop", "--tokens", "tokens.txt",
            ],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(project, port: sim.port, credentials: Self.simulatorKey)
        try Self.writeAudience(project, count: count)
        try project.write(
            "campaigns/c.yaml",
            """
            campaign: cli-send
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload:
                aps: { alert: "Hello {{name}}" }
            throttle: { connections: 2 }
            """
        )
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        let simulatorReport = sim.stop()

        // Partly delivered: exit 4, and the report says by reason what failed.
        #expect(send.status == 4, "\(send.stderr)")
        #expect(send.stdout.contains("delivered \(count - 2), failed 2\n"), "\(send.stdout)")
        #expect(send.stdout.contains("Unregistered"))
        #expect(send.stdout.contains("BadDeviceToken"))
        // The simulator saw each token exactly once: no retries of permanent failures.
        #expect(simulatorReport.contains("received \(count) request(s)"), "\(simulatorReport)")
        #expect(simulatorReport.contains("  200  \(count - 2)\n"))
        #expect(simulatorReport.contains("  410 Unregistered  1\n"))
        #expect(simulatorReport.contains("  400 BadDeviceToken  1\n"))
    }

    @Test func sendWithACertificateToASimulatorThatAcceptsThem() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(
            ["--state-dir", "sim", "--topic", "com.example.shop", "--client-certificates"],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(project, port: sim.port, credentials: "certificate: sim/client.pem")
        try Self.writeAudience(project, count: 40)
        try Self.writeCampaign(project)
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        let simulatorReport = sim.stop()
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("delivered 40, failed 0\n"), "\(send.stdout)")
        #expect(simulatorReport.contains("  200  40\n"), "\(simulatorReport)")
    }

    @Test func wrongCredentialsStopTheSendWithExitTwo() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        // A key the simulator does not know: the one another simulator made for itself.
        _ = try SimulatorProcess(["--state-dir", "other"], in: project.root).stop()
        let sim = try SimulatorProcess(["--state-dir", "sim", "--team-id", "ABCDE12345"], in: project.root)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(
            project,
            port: sim.port,
            credentials: "team_id: ABCDE12345\nkey_id: KEY1234567\nkey_file: other/key.p8"
        )
        try Self.writeAudience(project, count: 500)
        try Self.writeCampaign(project)
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(send.status == 2, "\(send.stdout)\(send.stderr)")
        #expect((send.stdout + send.stderr).contains("InvalidProviderToken"), "\(send.stdout)\(send.stderr)")
        // Stopped after a handful of requests, not 500, and every planned push accounted for.
        let numbers = Self.numbers(in: send.stdout, lineStartingWith: "delivered ")
        let planned = Self.numbers(in: send.stdout, lineStartingWith: "planned ").first
        #expect(numbers.count == 3, "\(send.stdout)")
        if numbers.count == 3, let planned {
            #expect(numbers[0] == 0)
            #expect((3...8).contains(numbers[1]), "\(send.stdout)")
            #expect(numbers[1] + numbers[2] == planned, "\(send.stdout)")
        }

        // The right key, corrected in pushcamp.yaml: the wrong key's cached token is not reused,
        // the run resumes and everyone is delivered, without a single TooManyProviderTokenUpdates.
        try Self.writeProject(project, port: sim.port, credentials: Self.simulatorKey)
        let corrected = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        let simulatorReport = sim.stop()
        #expect(corrected.status == 0, "\(corrected.stdout)\(corrected.stderr)")
        #expect(corrected.stderr.contains("resuming run 1 of c"), "\(corrected.stderr)")
        #expect(corrected.stdout.contains("delivered 500, failed 0\n"), "\(corrected.stdout)")
        #expect(!(corrected.stdout + corrected.stderr).contains("TooManyProviderTokenUpdates"))
        #expect(!simulatorReport.contains("TooManyProviderTokenUpdates"), "\(simulatorReport)")
        #expect(simulatorReport.contains("  200  500\n"), "\(simulatorReport)")
    }

    @Test func rehearseFollowsAScenarioFile() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        let count = 120
        try Self.writeAudience(project, count: count)
        try Self.writeCampaign(project, extra: "retry: { ServiceUnavailable: 1s }\n")
        try project.write("rehearsal/more-tokens.txt", "\(TemporaryProject.token(3)) bad\n")
        try project.write(
            "rehearsal/outage.yaml",
            """
            # GOAWAY every 50 requests, a limit lowered to 2 (after the ramp reached 20), one device gone, one bad, one flaky.
            max_streams: 20
            lower_limit: { after: 40, to: 2 }
            goaway_after: 50
            tokens:
              "\(TemporaryProject.token(1))": unregistered 1700000000000
              "\(TemporaryProject.token(2))": flaky 2
            tokens_file: more-tokens.txt
            """
        )
        let output = try CLI.run(
            ["rehearse", "--scenario", "rehearsal/outage.yaml", "campaigns/c.yaml"],
            in: project.root
        )
        #expect(output.status == 4, "\(output.stderr)")
        #expect(output.stdout.contains("delivered \(count - 2), failed 2\n"), "\(output.stdout)")
        #expect(output.stdout.contains("ServiceUnavailable"))
        #expect(output.stdout.contains("stream limit up to 20"), "\(output.stdout)")
        #expect(output.stdout.contains("GOAWAY"), "\(output.stdout)")

        // A flag wins over the file.
        let flagged = try CLI.run(
            ["rehearse", "--scenario", "rehearsal/outage.yaml", "--max-streams", "7", "campaigns/c.yaml"],
            in: project.root
        )
        #expect(flagged.stdout.contains("stream limit up to 7"), "\(flagged.stdout)")
    }

    @Test func theExampleOutageScenarioLosesNothing() throws {
        let examples = try CLI.examples()
        defer { examples.remove() }
        let output = try CLI.run(
            ["rehearse", "--scenario", "rehearsal/outage.yaml", "campaigns/spring-sale.yaml"],
            in: examples.root
        )
        #expect(output.status == 4)
        #expect(output.stdout.contains("delivered 26, failed 2\n"), "\(output.stdout)")
        #expect(output.stdout.contains("  Unregistered                 1\n"))
        #expect(output.stdout.contains("  BadDeviceToken               1\n"))
        #expect(!output.stdout.contains("connection-lost"), "\(output.stdout)")
    }

    @Test func aBrokenScenarioReadsLikeACompilerError() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        try project.write(
            "s.yaml",
            "max_stream: 5\nlatency_ms: soon\ntokens:\n  abcd: sometimes\n"
        )
        let output = try CLI.run(["sim", "--port", "0", "--scenario", "s.yaml"], in: project.root)
        #expect(output.status == 1)
        #expect(
            output.stderr == """
                s.yaml:1:1: error: unknown key 'max_stream' in 'scenario'; did you mean 'max_streams'?
                s.yaml:2:13: error: 'latency_ms' must be a whole number
                s.yaml:4:9: error: 'tokens': unknown behaviour 'sometimes' (ok, unregistered, bad, wrong-topic, flaky, throttled, reason)

                """
        )
    }

    /// Token credentials for the key a simulator started with `--state-dir sim` made for itself.
    static let simulatorKey = "team_id: ABCDE12345\nkey_id: KEY1234567\nkey_file: sim/key.p8"

    /// `pushcamp.yaml` with one app, `shop`, sending to the simulator on `port` and authenticating
    /// with `credentials` (YAML lines of the app).
    static func writeProject(_ project: TemporaryProject, port: Int, credentials: String) throws {
        let indented = credentials.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
        try project.write(
            "pushcamp.yaml",
            """
            apps:
              shop:
                topic: com.example.shop
            \(indented)
                endpoint: https://127.0.0.1:\(port)
                ca_file: sim/ca.pem
            """
        )
    }

    /// `audiences/a.csv` with `count` recipients and a `name` column.
    static func writeAudience(_ project: TemporaryProject, count: Int) throws {
        try project.write("audiences/a.csv", TemporaryProject.csv(count: count, columns: ["name"]) { ["Name\($0)"] })
    }

    /// `campaigns/c.yaml`: one plain alert to `audiences/a.csv` for `shop`, plus `extra` keys.
    static func writeCampaign(_ project: TemporaryProject, extra: String = "") throws {
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: { aps: { alert: hi } }\n"
                + extra
        )
    }

    /// The integers on the first line of `text` that starts with `prefix`.
    static func numbers(in text: String, lineStartingWith prefix: String) -> [Int] {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return [] }
        return line.split { !$0.isNumber }.compactMap { Int($0) }
    }

    @Test func rehearseDeliversEveryExampleCampaign() throws {
        let examples = try CLI.examples()
        defer { examples.remove() }
        for (campaign, planned) in [
            ("campaigns/spring-sale.yaml", 28), ("campaigns/catalog-refresh.yaml", 19),
            ("campaigns/order-tracking.yaml", 7),
        ] {
            let output = try CLI.run(["rehearse", campaign], in: examples.root)
            #expect(output.status == 0, "\(campaign): \(output.stderr)")
            #expect(output.stdout.contains("delivered \(planned), failed 0\n"), "\(campaign): \(output.stdout)")
            #expect(output.stdout.contains("  200  \(planned)\n"))
        }
    }

    /// The example `rehearse --help` gives runs, with the example token behaviours it names.
    @Test func theRehearseHelpExampleRuns() throws {
        let examples = try CLI.examples()
        defer { examples.remove() }
        let help = try CLI.run(["rehearse", "--help"], in: examples.root).stdout
        #expect(help.contains("pushcamp rehearse --tokens rehearsal/tokens.txt campaigns/spring-sale.yaml\n"))
        #expect(help.contains("pushcamp rehearse --goaway-after 200 campaigns/spring-sale.yaml\n"))
        // Both at once: the token behaviours hold across the GOAWAYs.
        let output = try CLI.run(
            ["rehearse", "--tokens", "rehearsal/tokens.txt", "--goaway-after", "200", "campaigns/spring-sale.yaml"],
            in: examples.root
        )
        #expect(output.status == 4, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("delivered 26, failed 2\n"), "\(output.stdout)")
        #expect(output.stdout.contains("  Unregistered                 1\n"), "\(output.stdout)")
        #expect(output.stdout.contains("  BadDeviceToken               1\n"), "\(output.stdout)")
        // --format json: the run's report as `report --format json` prints it.
        let json = try CLI.run(
            [
                "rehearse", "--quiet", "--format", "json", "--tokens", "rehearsal/tokens.txt",
                "campaigns/spring-sale.yaml",
            ],
            in: examples.root
        )
        #expect(json.status == 4)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["rehearsal"] as? Bool == true)
        #expect(object?["campaign"] as? String == "spring-sale-2027")
        let report = try CLI.run(["report", "--rehearsal", "--format", "json"], in: examples.root)
        #expect(report.stdout == json.stdout)
        // --error-rate takes a percentage, as a scenario file's error_rate does.
        let refused = try CLI.run(["rehearse", "--error-rate", "0.5", "campaigns/spring-sale.yaml"], in: examples.root)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("--error-rate: '0.5' is not a percentage"), "\(refused.stderr)")
    }
}

@Suite("resume after a kill, from the command line")
struct ResumeCLITests {
    /// Kill -9 a send of 50,000 at two points, send again, and check against what the simulator
    /// received: everyone delivered, nobody twice but the possible duplicates the sends reported.
    @Test func aKilledSendResumesWithoutSendingTwice() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let count = 50_000
        let sim = try SimulatorProcess(
            ["--state-dir", "sim", "--team-id", "ABCDE12345", "--record", "received.csv"],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try SendCLITests.writeProject(project, port: sim.port, credentials: SendCLITests.simulatorKey)
        try SendCLITests.writeAudience(project, count: count)
        try SendCLITests.writeCampaign(project, extra: "throttle: { rate: 20000/s, connections: 2 }\n")

        var notes = ""
        for delay in [0.8, 0.8] {
            let send = Process()
            send.executableURL = CLI.binary
            send.arguments = ["send", "--quiet", "campaigns/c.yaml"]
            send.currentDirectoryURL = project.root
            let errors = Pipe()
            send.standardOutput = FileHandle.nullDevice
            send.standardError = errors
            try send.run()
            // Killed once it is sending: the journal exists, then `delay` more seconds.
            let journal = project.root.appendingPathComponent(".pushcamp/journal.sqlite").path
            eventually(within: 20, every: 0.02) { FileManager.default.fileExists(atPath: journal) }
            Thread.sleep(forTimeInterval: delay)
            kill(send.processIdentifier, SIGKILL)
            send.waitUntilExit()
            notes += String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
        let last = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        _ = sim.stop()
        #expect(last.status == 0, "\(last.stdout)\(last.stderr)")
        // The second and third sends resumed the first's run.
        #expect(
            (notes + last.stderr).components(separatedBy: "resuming run 1").count - 1 >= 1,
            "\(notes)\(last.stderr)"
        )

        // What the simulator received, token by token.
        let received = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
        var deliveries: [Substring: Int] = [:]
        for line in received.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            if fields[1] == "200" { deliveries[fields[0], default: 0] += 1 }
        }
        #expect(deliveries.count == count)
        let duplicated = deliveries.values.reduce(0) { $0 + ($1 - 1) }
        // Possible duplicates reported by the resumes (and the final run record).
        let runs = try CLI.run(["runs", "--format", "json"], in: project.root)
        let object = try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]]
        let reported = object?.first?["possible_duplicates"] as? Int ?? -1
        #expect(object?.first?["status"] as? String == "finished")
        #expect(object?.first?["delivered"] as? Int == count)
        #expect(duplicated <= reported, "\(duplicated) sent twice, \(reported) reported")
        // Never more than could be written and unanswered at each of the two kills: the open streams
        // of two connections (the simulator allows 500 each) and one hand-over batch per connection
        // (5 ms of pushes at 20,000/s: 100).
        #expect(reported <= 2 * (2 * 500 + 2 * 100), "\(reported)")
    }
}
