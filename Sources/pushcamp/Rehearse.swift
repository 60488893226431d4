import ArgumentParser
import Foundation
import PushcampSend
import PushcampSimulator
import Synchronization

struct Rehearse: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a campaign to a local APNs simulator: the safe way to try it end to end.",
        discussion: """
            Starts the built-in simulator on 127.0.0.1 with a throwaway key and certificate made on \
            the spot, then runs the real send against it: planning, rendering, HTTP/2 over TLS, \
            stream limits, the campaign's rate, retries. The simulator checks every request as APNs \
            does (token, topic, push type, priority, expiration, collapse id, payload size) and the \
            report shows what APNs would have answered. Nothing leaves the machine.

            --tokens gives device behaviours, one per line: `TOKEN ok|unregistered [ms]|bad|\
            wrong-topic|flaky [n]|throttled [n]|reason NAME` (see `pushcamp sim --help`); \
            --scenario gives them, and faults, in a YAML file kept beside the campaign.

            Exit status as for `pushcamp send`.

            Examples:
              pushcamp rehearse campaigns/spring-sale.yaml
              pushcamp rehearse --tokens audiences/rehearsal-tokens.txt --goaway-after 200 campaigns/spring-sale.yaml
              pushcamp rehearse --scenario rehearsal/outage.yaml campaigns/spring-sale.yaml
            """
    )

    @Argument(help: "The campaign file.")
    var file: String

    @OptionGroup var faults: SimulatorFaults

    @Flag(help: "No progress line, only the report.")
    var quiet = false

    func run() async throws {
        let (campaign, _) = try loadCampaign(file)
        var rehearsal = Rehearsal(campaign: campaign)
        let scenario = try faults.resolve()
        rehearsal.tokens = scenario.tokens
        rehearsal.adjust = { scenario.apply(to: &$0) }
        let printer = ProgressPrinter()
        let stopper = ExecutorBox()
        let signals = StopSignals { stopper.stop() }
        let progress = printer.callback(enabled: !quiet)
        let result = try await rehearsal.run(started: { stopper.set($0) }, progress: progress)
        withExtendedLifetime(signals) {}
        printer.finish()
        print(result.report.text(), terminator: "")
        print(
            "simulator: \(result.recorder.connections) connection(s), at most \(result.recorder.maxOpenStreams) streams open at once"
        )
        if result.report.exitCode != 0 { throw ExitCode(result.report.exitCode) }
    }
}

/// Holds the running executor for the signal handler.
final class ExecutorBox: Sendable {
    private let executor = Mutex<Executor?>(nil)
    func set(_ executor: Executor) { self.executor.withLock { $0 = executor } }
    func stop() { executor.withLock { $0 }?.stop() }
}
