import Foundation
import PushcampTestSupport
import Testing

/// Usage errors said better than the parser says them: the nearest command to a typo, `--dry-run`
/// on a command that sends pointed at `plan` and `rehearse` (never at `--new-run`), the version
/// however it is asked for.
@Suite("Hints on the command line")
struct HintsCLITests {
    @Test(arguments: [
        (["plna", "campaigns/c.yaml"], "error: 'plna' is not a command of pushcamp; did you mean 'plan'?"),
        (["rehaerse"], "error: 'rehaerse' is not a command of pushcamp; did you mean 'rehearse'?"),
        (["channels", "aply"], "error: 'aply' is not a command of pushcamp channels; did you mean 'apply'?"),
        (["frobnicate"], "error: 'frobnicate' is not a command of pushcamp; `pushcamp --help` lists them"),
    ])
    func anUnknownCommandGetsTheNearestOne(arguments: [String], expected: String) throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        let output = try CLI.run(arguments, in: project.root)
        #expect(output.status == 64)
        #expect(output.stderr.hasPrefix(expected), "\(output.stderr)")
        #expect(output.stdout.isEmpty)
    }

    @Test(arguments: [
        ["send", "--dry-run", "campaigns/c.yaml"], ["send", "campaigns/c.yaml", "-n"],
        ["replay", "3", "--dry-run=yes"],
    ])
    func aDryRunOfASendPointsAtPlanAndRehearse(arguments: [String]) throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        let output = try CLI.run(arguments, in: project.root)
        #expect(output.status == 64)
        #expect(output.stderr.contains("has no --dry-run: it sends. `pushcamp plan CAMPAIGN` shows what would be sent"))
        #expect(!output.stderr.contains("--new-run"), "\(output.stderr)")
    }

    @Test func theVersionIsTheSameHoweverItIsAsked() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        let outputs = try [["--version"], ["-V"], ["version"]].map { try CLI.run($0, in: project.root) }
        for output in outputs {
            #expect(output.status == 0)
            #expect(output.stdout == outputs[0].stdout)
        }
        #expect(outputs[0].stdout.hasPrefix("0."), "\(outputs[0].stdout)")
        // Help on a command still goes through.
        let help = try CLI.run(["help", "send"], in: project.root)
        #expect(help.status == 0 && help.stdout.contains("USAGE: pushcamp send"), "\(help.stdout)")
    }
}
