import Foundation
import PushcampTestSupport
import Testing
import Yams

/// The GitHub Actions workflow `pushcamp init` writes, run as written: a signed release tarball of
/// the build under test (scripts/package.sh --binary --sign), installed by the workflow's own steps
/// into a PATH without pushcamp, then its checks, its review of what a pull request changes (a git
/// repository whose last commit is the pull request), its artifact and its comment.
@Suite("The scaffolded CI workflow")
struct WorkflowCLITests {
    @Test func itInstallsTheSignedReleaseReviewsWithoutRealAudiencesAndFailsOnARefusedPlan() throws {
        let work = try TemporaryProject(projectFile: nil)
        defer { work.remove() }
        let key = work.root.appendingPathComponent("release-key")
        try Shell.run("ssh-keygen -q -t ed25519 -N '' -C '' -f '\(key.path)'")
        let tarball = try Self.package(into: work.root.appendingPathComponent("dist"), signedWith: key)
        // Installed as a user would, from the tarball; init then pins that very binary and its signer.
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
        let workflowFile = project.appendingPathComponent(".github/workflows/pushcamp.yml")
        let pinned = try String(contentsOf: workflowFile, encoding: .utf8)
        let publicKey = try String(contentsOf: key.appendingPathExtension("pub"), encoding: .utf8)
            .split(separator: " ").prefix(2).joined(separator: " ")
        #expect(pinned.contains("PUSHCAMP_SIGNER: \"releases@pushcamp \(publicKey)\""), "\(pinned)")
        let git = Git(project)
        try git.commit("the project as init wrote it")

        // A pull request that takes the real audience out of git: the campaign names it through the
        // environment (not set in CI) and plans against a committed sample of made-up recipients.
        let real = try String(contentsOf: project.appendingPathComponent("audiences/welcome.csv"), encoding: .utf8)
        try FileManager.default.removeItem(at: project.appendingPathComponent("audiences/welcome.csv"))
        try Self.sample.write(
            to: project.appendingPathComponent("audiences/welcome.sample.csv"),
            atomically: true,
            encoding: .utf8
        )
        try Self.edit(project.appendingPathComponent("campaigns/welcome.yaml")) {
            $0.replacingOccurrences(
                of: "source: { csv: audiences/welcome.csv }",
                with:
                    "source: { csv: \"${env:AUDIENCES}/welcome.csv\" }\n  sample: { csv: audiences/welcome.sample.csv }"
            )
        }
        try git.commit("audiences stay out of git")
        let passing = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-1"))
        #expect(passing.failedStep == nil, "\(passing.log)")
        #expect(
            passing.ran == [
                "Install pushcamp", "Validate and plan", "Keep the full plan", "Post the plans on the pull request",
            ]
        )
        #expect(passing.log.contains("Good \"pushcamp-release\" signature for releases@pushcamp"), "\(passing.log)")
        #expect(passing.log.contains("bin/pushcamp: OK"), "the binary's checksum was checked: \(passing.log)")
        let comment = try #require(passing.postedComment, "\(passing.log)")
        #expect(comment.hasPrefix("## pushcamp review: 1 campaign\n"), "\(comment)")
        #expect(comment.contains("planned against the sample audience audiences/welcome.sample.csv"), "\(comment)")
        #expect(comment.contains("Welcome, Zed!"), "the sample's made-up recipient is rendered: \(comment)")
        let artifact = try #require(passing.artifact, "\(passing.log)")
        for text in [comment, artifact] {
            Self.expectNothingPersonal(in: text, real: real + Self.sample)
        }
        #expect(passing.ghCalls.first == ["pr", "comment", "7", "--edit-last", "--body-file", passing.commentPath])

        // A pull request whose sample has a recipient APNs would refuse (a payload over 4 KB): the
        // plan is still posted, and the job fails.
        let long = String(repeating: "x", count: 5000)
        try (Self.sample + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,ios,\(long),true\n").write(
            to: project.appendingPathComponent("audiences/welcome.sample.csv"),
            atomically: true,
            encoding: .utf8
        )
        try git.commit("a sample row too long")
        let failing = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-2"))
        #expect(failing.failedStep == "Validate and plan", "\(failing.log)")
        #expect(failing.log.contains("exit 3"), "\(failing.log)")
        let refused = try #require(failing.postedComment, "\(failing.log)")
        #expect(refused.contains("| refused | 1 |"), "\(refused)")
        #expect(refused.contains("APNs or FCM would refuse 1 of these pushes"), "\(refused)")

        // A pull request that touches no campaign: checked, nothing planned, no comment.
        try "# Our pushes\n".write(to: project.appendingPathComponent("NOTES.md"), atomically: true, encoding: .utf8)
        try git.commit("notes")
        let quiet = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-3"))
        #expect(quiet.failedStep == nil, "\(quiet.log)")
        #expect(quiet.postedComment == nil && quiet.ghCalls.isEmpty, "\(quiet.log)")

        // Another signer than the pinned one, or another binary, is refused before anything runs.
        try Shell.run("ssh-keygen -q -t ed25519 -N '' -C '' -f '\(work.root.path)/other-key'")
        let other = try String(contentsOfFile: "\(work.root.path)/other-key.pub", encoding: .utf8)
            .split(separator: " ").prefix(2).joined(separator: " ")
        try pinned.replacingOccurrences(of: publicKey, with: other).write(
            to: workflowFile,
            atomically: true,
            encoding: .utf8
        )
        let forged = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-4"))
        #expect(forged.failedStep == "Install pushcamp", "\(forged.log)")
        #expect(forged.ran == ["Install pushcamp", "Keep the full plan", "Post the plans on the pull request"])
        let binarySum = try #require(pinned.firstMatch(of: /PUSHCAMP_SHA256: "([0-9a-f]{64})"/)?.1)
        try pinned.replacingOccurrences(of: String(binarySum), with: String(repeating: "0", count: 64))
            .write(to: workflowFile, atomically: true, encoding: .utf8)
        let tampered = try WorkflowRun(project: project, scratch: work.root.appendingPathComponent("run-5"))
        #expect(tampered.failedStep == "Install pushcamp", "\(tampered.log)")
        #expect(tampered.log.contains("FAILED"), "\(tampered.log)")
    }

    /// Made-up recipients with the real audience's columns.
    static let sample = """
        token,platform,first_name,opted_in
        0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef,ios,Zed,true
        fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210,ios,,true
        sampleInstance01:APA91bSampleOnlyNotARealDeviceAtAll0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS,android,Yves,true

        """

    /// No token of `real` (whole, or its first 16 characters) and none of the real audience's names
    /// is in `text`.
    static func expectNothingPersonal(in text: String, real: String) {
        for line in real.split(separator: "\n").dropFirst() where !line.hasPrefix("token") {
            let token = String(line.split(separator: ",").first ?? "")
            #expect(!text.contains(token.prefix(16)), "token \(token.prefix(16)) is shown: \(text)")
        }
        for name in ["Ada", "Grace", "Linus", "Hedy"] { #expect(!text.contains(name), "\(name) is shown: \(text)") }
    }

    static func edit(_ file: URL, _ change: (String) -> String) throws {
        let text = try String(contentsOf: file, encoding: .utf8)
        let changed = change(text)
        #expect(changed != text, "\(file.lastPathComponent) was not changed")
        try changed.write(to: file, atomically: true, encoding: .utf8)
    }

    /// scripts/package.sh --binary: the tarball a release would have, of the build under test;
    /// signed with `key` (an SSH private key) when given.
    static func package(into directory: URL, signedWith key: URL? = nil) throws -> URL {
        let sign = key.map { " --sign '\($0.path)'" } ?? ""
        let packed = try Shell.run(
            "scripts/package.sh --binary '\(CLI.binary.path)' --output '\(directory.path)'\(sign)",
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

/// A git repository of a test's own: commits everything, with an author of its own.
struct Git {
    var directory: URL

    init(_ directory: URL) { self.directory = directory }

    func commit(_ message: String) throws {
        let script = """
            [ -d .git ] || git init -q -b main
            git add -A
            git -c user.name=pushcamp-test -c user.email=test@pushcamp.invalid commit -q -m '\(message)'
            """
        let result = try Shell.run(
            script,
            in: directory,
            environment: ["PATH": "/usr/bin:/bin", "HOME": directory.path]
        )
        #expect(result.status == 0, "\(result.output)")
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
    var commentPath: String
    /// What the upload-artifact step kept.
    var artifact: String?

    init(project: URL, scratch: URL) throws {
        let manager = FileManager.default
        let temp = scratch.appendingPathComponent("runner-temp")
        let tools = scratch.appendingPathComponent("tools")
        try manager.createDirectory(at: temp, withIntermediateDirectories: true)
        try manager.createDirectory(at: tools, withIntermediateDirectories: true)
        commentPath = temp.appendingPathComponent("comment.md").path
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
        let expressions = [
            "${{ github.token }}": "ghs_test", "${{ github.event.pull_request.number }}": "7",
            "${{ runner.temp }}": temp.path,
        ]

        for step in steps {
            let name = step["name"] as? String ?? step["run"] as? String ?? step["uses"] as? String ?? "?"
            if let condition = step["if"] as? String {
                guard try Self.holds(condition, failed: failedStep != nil) else { continue }
            } else if failedStep != nil {
                continue
            }
            guard let script = step["run"] as? String else {
                // GitHub's own actions: the checkout (the project is already there, its last commit
                // the pull request's) and the artifact's upload, which keeps the file it names.
                let uses = step["uses"] as? String
                #expect(uses == "actions/checkout@v4" || uses == "actions/upload-artifact@v4", "\(name)")
                if uses == "actions/upload-artifact@v4" {
                    ran.append(name)
                    let with = step["with"] as? [String: Any] ?? [:]
                    var path = "\(with["path"] ?? "")"
                    for (expression, value) in expressions {
                        path = path.replacingOccurrences(of: expression, with: value)
                    }
                    artifact = try? String(contentsOfFile: path, encoding: .utf8)
                }
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
            // What the checkout leaves for git: a repository owned by the runner's user.
            environment["GIT_CONFIG_COUNT"] = "1"
            environment["GIT_CONFIG_KEY_0"] = "safe.directory"
            environment["GIT_CONFIG_VALUE_0"] = "*"
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

/// Runs a shell script with bash (inside `wrapper`, when given).
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
        wrapper: [String] = [],
        timeout: Double = 300
    ) throws -> Result {
        let process = Process()
        let bash = ["/bin/bash", "--noprofile", "--norc"] + options + ["-c", script]
        // `wrapper` runs bash (unshare, in a mount namespace of the test's own).
        process.executableURL = URL(fileURLWithPath: wrapper.isEmpty ? "/bin/bash" : "/usr/bin/env")
        process.arguments = wrapper.isEmpty ? Array(bash.dropFirst()) : wrapper + bash
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
