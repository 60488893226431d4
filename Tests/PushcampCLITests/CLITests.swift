import Foundation
import PushcampTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `pushcamp` binary.
struct CLI {
    static let binary: URL = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("pushcamp")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: ".build/debug/pushcamp")
    }()

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the binary; a run still going after `timeout` seconds is killed (and fails the test
    /// through its status: a hang is a bug, never a wait).
    static func run(
        _ arguments: [String],
        in directory: URL,
        timeout: Double = 120,
        environment: [String: String] = [:]
    ) throws -> Output {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let watchdog = DispatchWorkItem { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        defer { watchdog.cancel() }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }

    /// Starts the binary in the background, its output discarded: for tests that stop it themselves.
    static func start(_ arguments: [String], in directory: URL) throws -> Process {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs the binary on a pseudo-terminal (stdin, stdout and stderr all on it), typing `input`;
    /// returns its exit status and everything it wrote, in order.
    static func runOnTerminal(
        _ arguments: [String],
        in directory: URL,
        typing input: String,
        environment: [String: String] = [:]
    ) throws -> (status: Int32, output: String) {
        var primary: Int32 = -1
        var secondary: Int32 = -1
        guard openpty(&primary, &secondary, nil, nil, nil) == 0 else { throw CLIError("openpty failed") }
        defer { close(primary) }
        let terminal = FileHandle(fileDescriptor: secondary, closeOnDealloc: false)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardInput = terminal
        process.standardOutput = terminal
        process.standardError = terminal
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        try process.run()
        close(secondary)
        _ = input.utf8CString.withUnsafeBufferPointer { write(primary, $0.baseAddress, $0.count - 1) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(primary, &buffer, buffer.count)
            if count <= 0 { break }  // EIO once the process and its terminal are gone
            output += buffer[0..<count]
        }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// A copy of the repository's example project (pushcamp.yaml, campaigns, templates, audiences,
    /// rehearsal scenarios) in a temporary folder: for commands that write a journal, so tests never
    /// write into the repository or share a journal (and its run locks) with each other.
    static func examples() throws -> TemporaryProject {
        let project = try TemporaryProject(projectFile: nil)
        for item in ["pushcamp.yaml", "campaigns", "templates", "audiences", "rehearsal"] {
            try FileManager.default.copyItem(
                at: repository.appendingPathComponent(item),
                to: project.root.appendingPathComponent(item)
            )
        }
        return project
    }

    /// The repository root, where the example campaigns are.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
}

@Suite("pushcamp command line")
struct CLITests {
    @Test func theExamplesAreValid() throws {
        let output = try CLI.run(
            [
                "validate", "campaigns/spring-sale.yaml", "campaigns/catalog-refresh.yaml",
                "campaigns/order-tracking.yaml", "campaigns/morning-digest.yaml", "campaigns/app-update.yaml",
            ],
            in: CLI.repository
        )
        #expect(output.stdout == "5 campaigns valid\n")
        #expect(output.status == 0)
    }

    @Test func initScaffoldsAProjectThatValidatesAndPlansAndNeverOverwrites() throws {
        let parent = try TemporaryProject(projectFile: nil)
        defer { parent.remove() }
        let created = try CLI.run(["init", "pushes", "--bundle-id", "com.example.shop"], in: parent.root)
        #expect(created.status == 0, "\(created.stderr)")
        let project = parent.root.appendingPathComponent("pushes")
        for file in [
            "pushcamp.yaml", "campaigns/welcome.yaml", "templates/welcome.yaml", "audiences/welcome.csv", ".gitignore",
            ".github/workflows/pushcamp.yml",
        ] {
            #expect(FileManager.default.fileExists(atPath: project.appendingPathComponent(file).path), "\(file)")
        }
        // Credentials never go in git: Apple's keys and certificates, Firebase service-account keys.
        let ignored = try String(contentsOf: project.appendingPathComponent(".gitignore"), encoding: .utf8)
        for pattern in [".pushcamp/", "*.p8", "*.p12", "*service-account*.json", "*firebase-adminsdk*.json"] {
            #expect(ignored.split(separator: "\n").contains(Substring(pattern)), "\(pattern)")
        }
        #expect(try CLI.run(["validate", "campaigns/welcome.yaml"], in: project).stdout == "1 campaign valid\n")
        let plan = try CLI.run(["plan", "--format", "json", "campaigns/welcome.yaml"], in: project)
        #expect(plan.status == 0, "\(plan.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any]
        // Three iPhones and two Android phones opted in, of six rows.
        #expect(object?["planned"] as? Int == 5)
        #expect(object?["topic"] as? String == "com.example.shop")
        let platforms = object?["platforms"] as? [String: [String: Any]]
        #expect(platforms?["ios"]?["planned"] as? Int == 3)
        #expect(platforms?["android"]?["planned"] as? Int == 2)
        // It rehearses as it is: both platforms, against the local simulator, with no credentials set.
        let rehearsal = try CLI.run(["rehearse", "campaigns/welcome.yaml"], in: project)
        #expect(rehearsal.status == 0, "\(rehearsal.stdout)\(rehearsal.stderr)")
        #expect(rehearsal.stdout.contains("  iOS      3 delivered, 0 failed\n  Android  2 delivered, 0 failed\n"))
        // The workflow runs the commands it names.
        let workflow = try String(
            contentsOf: project.appendingPathComponent(".github/workflows/pushcamp.yml"),
            encoding: .utf8
        )
        #expect(workflow.contains("pushcamp validate --format github --review || status=1\n"))
        #expect(workflow.contains("pushcamp review --changed \"$RUNNER_TEMP/changed.txt\""))
        // WorkflowCLITests runs its steps.
        // A second init there, or in any folder with something in it, writes nothing.
        let before = try String(contentsOf: project.appendingPathComponent("pushcamp.yaml"), encoding: .utf8)
        try "mine".write(
            to: project.appendingPathComponent("campaigns/welcome.yaml"),
            atomically: true,
            encoding: .utf8
        )
        let again = try CLI.run(["init"], in: project)
        #expect(again.status == 1)
        #expect(again.stderr.contains("is not empty"), "\(again.stderr)")
        #expect(try String(contentsOf: project.appendingPathComponent("pushcamp.yaml"), encoding: .utf8) == before)
        #expect(
            try String(contentsOf: project.appendingPathComponent("campaigns/welcome.yaml"), encoding: .utf8) == "mine"
        )
    }

    @Test func planIsTheSameByteForByte() throws {
        for format in ["text", "json", "markdown"] {
            let first = try CLI.run(
                ["plan", "--format", format, "--samples", "4", "campaigns/spring-sale.yaml"],
                in: CLI.repository
            )
            let second = try CLI.run(
                ["plan", "--format", format, "--samples", "4", "campaigns/spring-sale.yaml"],
                in: CLI.repository
            )
            #expect(first.status == 0)
            #expect(first.stdout == second.stdout)
            #expect(!first.stdout.isEmpty)
        }
        let json = try CLI.run(["plan", "--format", "json", "campaigns/spring-sale.yaml"], in: CLI.repository)
        let plan = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(plan?["planned"] as? Int == 28)
        #expect((plan?["audience"] as? [String: Any])?["duplicates"] as? Int == 1)
    }

    @Test func brokenCampaignsReadLikeCompilerErrors() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        try project.write("audiences/a.csv", "token,name\n\(TemporaryProject.token(1)),Ann\n")
        try project.write("templates/p.yaml", "aps: { alert: \"Hi {{nam}}\" }")
        try project.write(
            "campaigns/c.yaml",
            """
            campaign: broken
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: templates/p.yaml
              expiraton: 24h
            """
        )
        let text = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root)
        #expect(text.status == 1)
        #expect(
            text.stdout == """
                campaigns/c.yaml:7:3: error: unknown key 'expiraton' in 'message'; did you mean 'expiration'?
                1 of 1 campaign invalid: 1 error

                """
        )
        try project.write(
            "campaigns/c.yaml",
            "campaign: broken\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: templates/p.yaml\n"
        )
        let github = try CLI.run(["validate", "--format", "github", "campaigns/c.yaml"], in: project.root)
        #expect(
            github.stdout
                == "::error file=templates/p.yaml,line=1,col=19::'nam' is not an audience column or a campaign variable; did you mean 'name'?\n"
        )
        #expect(github.status == 1)
        let json = try CLI.run(["validate", "--format", "json", "campaigns/c.yaml"], in: project.root)
        #expect(
            json.stdout.hasPrefix(
                #"{"valid":false,"files":[{"path":"campaigns/c.yaml","kind":"campaign","valid":false,"diagnostics":[{"severity":"error","path":"templates/p.yaml","line":1,"column":19,"#
            )
        )
        let plan = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root)
        #expect(plan.status == 1)
        #expect(plan.stdout.isEmpty)
        #expect(
            plan.stderr
                == "templates/p.yaml:1:19: error: 'nam' is not an audience column or a campaign variable; did you mean 'name'?\n"
        )
    }

    @Test(arguments: [
        (
            "audiences/a.csv", "token,name\nabc,1,2\n",
            "audiences/a.csv:2: error: row has 3 fields but the header has 2; check quoting and delimiters on this line\n",
            Int32(1)
        ),
        ("audiences/a.csv", "token,name\n", "audiences/a.csv: error: the audience has no recipients\n", 1),
        (
            "audiences/a.csv", "token,name\nnot-hex,Ann\n",
            "campaigns/c.yaml: error: nobody would be sent anything: all 1 rows were invalid, duplicates, filtered out, excluded, suppressed, capped or held out\n",
            1
        ),
        (
            "templates/p.yaml", "aps: { alert: \"{{#x}}\" }",
            "templates/p.yaml:1:16: error: template: section '{{#x}}' is never closed with '{{/x}}'\n", 1
        ),
        (
            "templates/p.yaml", "aps: [",
            "templates/p.yaml:2:1: error: invalid YAML: did not find expected node content (while parsing a flow node at line 2)\n",
            1
        ),
    ])
    func badInputsGetALocatedMessageAndANonZeroExit(
        _ file: String,
        _ content: String,
        _ stderr: String,
        _ status: Int32
    ) throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        try project.write("audiences/a.csv", "token,name\n\(TemporaryProject.token(1)),Ann\n")
        try project.write("templates/p.yaml", "aps: { alert: \"Hi {{name}}\" }")
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: templates/p.yaml\n"
        )
        try project.write(file, content)
        let output = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root)
        #expect(output.stderr == stderr)
        #expect(output.status == status)
    }

    @Test func refusedPushesExitWithThree() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        try project.write(
            "audiences/a.csv",
            "token,name\n\(TemporaryProject.token(1)),Ann\n\(TemporaryProject.token(2)),\n"
        )
        try project.write("templates/p.yaml", "aps: { alert: \"Hi {{name}}\" }")
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: templates/p.yaml\n"
        )
        let output = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root)
        #expect(output.status == 3)
        #expect(
            output.stdout.contains(
                "  missing-variable: 1 — a template names a variable the recipient does not have\n    audiences/a.csv:3: token "
            )
        )
    }

    @Test func helpTeaches() throws {
        let output = try CLI.run(["plan", "--help"], in: CLI.repository)
        #expect(output.stdout.contains("pushcamp plan --format markdown campaigns/spring-sale.yaml > plan.md"))
        #expect(output.status == 0)
    }

    /// Every command's help reads as prose: no stray line-continuation backslash from the source.
    @Test func everyHelpPageIsFreeOfSourceArtifacts() throws {
        let commands: [[String]] = [
            [], ["validate"], ["plan"], ["send"], ["rehearse"], ["report"], ["runs"], ["cancel"], ["replay"],
            ["tokens", "invalid"], ["init"], ["serve"], ["schedules"], ["sim"], ["appstore"],
            ["appstore", "notifications"], ["appstore", "subscriptions"], ["appstore", "triggers"],
            ["appstore", "reprocess"], ["appstore", "history"],
        ]
        for command in commands {
            let help = try CLI.run(command + ["--help"], in: CLI.repository)
            #expect(help.status == 0, "\(command)")
            #expect(!help.stdout.contains("\\\n") && !help.stdout.contains(" \\ "), "\(command): \(help.stdout)")
        }
    }
}
