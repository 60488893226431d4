import Foundation
import PushcampTestSupport
import Testing

/// Shell completions from the built binary: the bash script is run in bash, as a shell would at a
/// Tab; the zsh and fish scripts are checked for what they offer.
@Suite("shell completions")
struct CompletionCLITests {
    /// What bash offers at the end of `line`, in `directory`, with the generated script loaded.
    func bashCompletions(_ line: String, script: URL, in directory: URL) throws -> [String] {
        var words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        if words.isEmpty { words = [""] }
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let program = """
            source '\(script.path)'
            COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
            _pushcamp pushcamp '\(words.last!)' '\(words.count > 1 ? words[words.count - 2] : "")'
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", program]
        process.currentDirectoryURL = directory
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).sorted()
    }

    @Test func bashCompletesCommandsAndCampaignFiles() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try project.write("spring.yaml", "campaign: x\n")
        try project.write("autumn.yml", "campaign: y\n")
        try project.write("notes.txt", "not a campaign\n")
        try project.write("campaigns/winter.yaml", "campaign: z\n")
        let generated = try CLI.run(["--generate-completion-script", "bash"], in: project.root)
        #expect(generated.status == 0, "\(generated.stderr)")
        let script = project.root.appendingPathComponent("pushcamp.bash")
        try generated.stdout.write(to: script, atomically: true, encoding: .utf8)

        #expect(try bashCompletions("pushcamp pl", script: script, in: project.root) == ["plan"])
        #expect(
            try bashCompletions("pushcamp re", script: script, in: project.root) == [
                "rehearse", "replay", "report", "review",
            ]
        )
        // Campaign arguments: YAML files and folders, nothing else.
        for command in ["plan", "send", "rehearse", "validate"] {
            #expect(
                try bashCompletions("pushcamp \(command) ", script: script, in: project.root)
                    == ["autumn.yml", "campaigns", "spring.yaml"],
                "\(command)"
            )
        }
    }

    @Test func zshAndFishScriptsOfferTheSameCommandsAndFiles() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        for shell in ["zsh", "fish"] {
            let generated = try CLI.run(["--generate-completion-script", shell], in: project.root)
            #expect(generated.status == 0, "\(shell): \(generated.stderr)")
            for command in [
                "validate", "plan", "rehearse", "send", "runs", "report", "cancel", "replay", "tokens", "sim",
            ] {
                #expect(generated.stdout.contains(command), "\(shell) offers \(command)")
            }
            #expect(
                generated.stdout.contains("yaml") && generated.stdout.contains("yml"),
                "\(shell) completes YAML files"
            )
        }
    }
}
