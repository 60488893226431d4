import Foundation
import PushcampTestSupport
import Testing
import Yams

/// The GitHub Actions workflow `pushcamp init` writes, run as written: a release tarball of the
/// build under test (scripts/package.sh --binary), installed by the workflow's own steps into a
/// PATH without pushcamp, then its checks and its plan comment.
@Suite("The scaffolded CI workflow")
struct WorkflowCLITests {
    @Test func itInstallsThePinnedReleaseChecksAndPostsThePlanAndFailsOnARefusedPlan() throws {
        let work = try TemporaryProject(projectFile: nil)
        defer { work.remove() }
        let tarball = try Self.package(into: work.root.appendingPathComponent("dist"))
        // Installed as a user would, from the tarball; init then pins that very binary.
        let installed = work.root.appendingPathComponent("installed")
        try Shell.run(
            "mkdir -p '\(installed.path)' && tar -xzf '\(tarball.path)' -C '\(installed.path)' --strip-components=1"
        )
        let pushcamp = installed.appendingPathComponent("bin/pushcamp").path
        let project = work.root.appendingPathComponent("project")
        let created = try Shell.run(
            "'\(pushcamp)' init '\(project.path)' --release-url 'file://\(tarball.path)'",
            in: work.root
        )
        #expect(created.status == 0, "\(created.output)")

        // As written, on a new project: installed, checked, planned, posted, green.
        let passing = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-1"))
        #expect(passing.failedStep == nil, "\(passing.log)")
        #expect(passing.ran == ["Install pushcamp", "Validate and plan", "Post the plans on the pull request"])
        #expect(passing.log.contains("bin/pushcamp: OK"), "the binary's checksum was checked: \(passing.log)")
        let comment = try #require(passing.postedComment, "\(passing.log)")
        // The scaffold's campaign goes to both apps; the Android one always reaches real phones, so
        // the destination is in bold.
        #expect(
            comment.hasPrefix(
                "**→ APNs sandbox (api.sandbox.push.apple.com)<br>Android app app-android → FCM (fcm.googleapis.com)**"
                    + "\n\n### Plan: `welcome`"
            ),
            "\(comment)"
        )
        #expect(passing.ghCalls.first == ["pr", "comment", "7", "--edit-last", "--body-file", passing.planPath])

        // A campaign APNs would refuse pushes of (a payload over 4 KB for one recipient): the plan is
        // still posted, and the job fails.
        let audience = project.appendingPathComponent("audiences/welcome.csv")
        let rows = try String(contentsOf: audience, encoding: .utf8)
        let long = String(repeating: "x", count: 5000)
        try (rows + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,ios,\(long),true\n").write(
            to: audience,
            atomically: true,
            encoding: .utf8
        )
        let failing = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-2"))
        #expect(failing.failedStep == "Validate and plan", "\(failing.log)")
        #expect(failing.ran == ["Install pushcamp", "Validate and plan", "Post the plans on the pull request"])
        let refused = try #require(failing.postedComment, "\(failing.log)")
        #expect(refused.contains("| refused | 1 |"), "\(refused)")
        #expect(
            refused.contains(
                "**campaigns/welcome.yaml: APNs or FCM would refuse some of these pushes (plan exit 3).**"
            ),
            "\(refused)"
        )

        // Another binary than the pinned one is refused before anything runs.
        var workflow = try String(
            contentsOf: project.appendingPathComponent(".github/workflows/pushcamp.yml"),
            encoding: .utf8
        )
        let pinned = try #require(workflow.firstMatch(of: /PUSHCAMP_SHA256: "([0-9a-f]{64})"/)?.1)
        workflow = workflow.replacingOccurrences(of: String(pinned), with: String(repeating: "0", count: 64))
        try workflow.write(
            to: project.appendingPathComponent(".github/workflows/pushcamp.yml"),
            atomically: true,
            encoding: .utf8
        )
        let tampered = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-3"))
        #expect(tampered.failedStep == "Install pushcamp", "\(tampered.log)")
        #expect(tampered.log.contains("FAILED"), "\(tampered.log)")
    }

    /// scripts/package.sh --binary: the tarball a release would have, of the build under test.
    static func package(into directory: URL) throws -> URL {
        let packed = try Shell.run(
            "scripts/package.sh --binary '\(CLI.binary.path)' --output '\(directory.path)'",
            in: CLI.repository
        )
        #expect(packed.status == 0, "\(packed.output)")
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".tar.gz") }
        )
        let checksum = try Shell.run("sha256sum --check --strict '\(name).sha256'", in: directory)
        #expect(checksum.status == 0, "\(checksum.output)")
        return directory.appendingPathComponent(name)
    }
}

/// One run of the project's .github/workflows/pushcamp.yml, as GitHub's runner would: each `run:`
/// step in bash (`-eo pipefail`) with the workflow's and the step's `env:`, RUNNER_TEMP,
/// GITHUB_PATH, GITHUB_STEP_SUMMARY and GITHUB_OUTPUT; after a failure only `always()` steps run.
/// `uses:` steps are GitHub's own (the checkout: the project is already there). `gh`, GitHub's CLI,
/// is the one part that needs GitHub: a stand-in on PATH records its arguments and the comment.
struct WorkflowRun {
    var ran: [String] = []
    var failedStep: String?
    var log = ""
    var postedComment: String?
    var ghCalls: [[String]] = []
    var planPath: String

    init(project: URL, scratch: URL) throws {
        let manager = FileManager.default
        let temp = scratch.appendingPathComponent("runner-temp")
        let tools = scratch.appendingPathComponent("tools")
        try manager.createDirectory(at: temp, withIntermediateDirectories: true)
        try manager.createDirectory(at: tools, withIntermediateDirectories: true)
        planPath = temp.appendingPathComponent("plan.md").path
        let ghLog = scratch.appendingPathComponent("gh-calls")
        let gh = tools.appendingPathComponent("gh")
        try """
        #!/bin/sh
        # GitHub's CLI, standing in: records each call and the comment's body.
        printf '%s\\n' "$*" >> '\(ghLog.path)'
        while [ $# -gt 0 ]; do
          if [ "$1" = --body-file ]; then cp "$2" '\(scratch.path)/comment.md'; fi
          shift
        done

        """.write(to: gh, atomically: true, encoding: .utf8)
        try manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: gh.path)
        for file in ["github-path", "step-summary", "github-output"] {
            _ = manager.createFile(atPath: scratch.appendingPathComponent(file).path, contents: nil)
        }

        let text = try String(
            contentsOf: project.appendingPathComponent(".github/workflows/pushcamp.yml"),
            encoding: .utf8
        )
        let workflow = try #require(try Yams.load(yaml: text) as? [String: Any])
        let env = workflow["env"] as? [String: Any] ?? [:]
        let jobs = try #require(workflow["jobs"] as? [String: Any])
        #expect(jobs.count == 1)
        let job = try #require(jobs.values.first as? [String: Any])
        let steps = try #require(job["steps"] as? [[String: Any]])
        // What GitHub puts in the expressions of `env:` on a pull request.
        let expressions = ["${{ github.token }}": "ghs_test", "${{ github.event.pull_request.number }}": "7"]

        for step in steps {
            guard let script = step["run"] as? String else {
                #expect(step["uses"] as? String == "actions/checkout@v4", "only the checkout is GitHub's own")
                continue
            }
            let name = step["name"] as? String ?? script
            if let condition = step["if"] as? String {
                guard try Self.holds(condition, failed: failedStep != nil) else { continue }
            } else if failedStep != nil {
                continue
            }
            #expect(!script.contains("${{"), "\(name): expressions in a script are shell injection; use env:")
            var environment = [
                "HOME": scratch.path, "RUNNER_TEMP": temp.path,
                "GITHUB_PATH": scratch.appendingPathComponent("github-path").path,
                "GITHUB_STEP_SUMMARY": scratch.appendingPathComponent("step-summary").path,
                "GITHUB_OUTPUT": scratch.appendingPathComponent("github-output").path,
                "GITHUB_EVENT_NAME": "pull_request", "GITHUB_WORKSPACE": project.path,
            ]
            for (key, value) in env { environment[key] = "\(value)" }
            for (key, value) in step["env"] as? [String: Any] ?? [:] {
                environment[key] = expressions["\(value)"] ?? "\(value)"
            }
            // GITHUB_PATH's folders first, as the runner adds them; no pushcamp anywhere else.
            let added = try String(contentsOfFile: environment["GITHUB_PATH"]!, encoding: .utf8)
                .split(separator: "\n").map(String.init).reversed()
            environment["PATH"] = (added + [tools.path, "/usr/bin", "/bin"]).joined(separator: ":")
            ran.append(name)
            let result = try Shell.run(script, in: project, environment: environment, options: ["-eo", "pipefail"])
            log += "== \(name): exit \(result.status)\n\(result.output)"
            if result.status != 0 && failedStep == nil { failedStep = name }
        }
        postedComment = try? String(contentsOf: scratch.appendingPathComponent("comment.md"), encoding: .utf8)
        ghCalls = ((try? String(contentsOf: ghLog, encoding: .utf8)) ?? "").split(separator: "\n").map {
            $0.split(separator: " ").map(String.init)
        }
    }

    /// The conditions the scaffold uses: `always()`, `success()`, `failure()` and
    /// `github.event_name == '…'`, joined by `&&`; anything else fails the test, so a new
    /// condition is taught here before the workflow uses it.
    static func holds(_ condition: String, failed: Bool) throws -> Bool {
        try condition.components(separatedBy: "&&").allSatisfy { term in
            let term = term.trimmingCharacters(in: .whitespaces)
            switch term {
            case "always()": return true
            case "success()": return !failed
            case "failure()": return failed
            default:
                guard let event = term.firstMatch(of: /^github\.event_name == '([a-z_]+)'$/)?.1 else {
                    Issue.record("the workflow runner does not know the condition \(term)")
                    throw CLIError("unknown condition \(term)")
                }
                return event == "pull_request"
            }
        }
    }
}

/// Runs a shell script with bash.
enum Shell {
    struct Result {
        var status: Int32
        var output: String
    }

    @discardableResult
    static func run(
        _ script: String,
        in directory: URL? = nil,
        environment: [String: String]? = nil,
        options: [String] = [],
        timeout: Double = 300
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["--noprofile", "--norc"] + options + ["-c", script]
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        defer { watchdog.cancel() }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self))
    }
}
