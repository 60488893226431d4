import ArgumentParser
import Foundation
import PushcampAPNs
import PushcampModel
import PushcampPlanner
import PushcampSend

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a campaign to APNs.",
        discussion: """
            Plans the campaign (as `pushcamp plan` shows it) and sends each push over the app's \
            connections from pushcamp.yaml: Apple's host for its environment, or its endpoint with \
            its ca_file (a simulator, a test server). The campaign's throttle sets the rate and the \
            number of connections; each connection keeps no more streams open than the server \
            allows. Failed pushes are retried as Apple advises and as the campaign's retry: says; \
            refused credentials stop the run after a few requests. Ctrl-C drains in-flight requests \
            and stops.

            Try a campaign with `pushcamp rehearse` first: the same send against a local simulator.

            Exit status: 0 every push delivered; 1 invalid campaign or audience; 2 credentials \
            refused or no connection; 4 some pushes failed or were not sent; 130 interrupted.

            Examples:
              pushcamp send campaigns/spring-sale.yaml
              pushcamp send --quiet campaigns/order-tracking.yaml 2> send.log
            """
    )

    @Argument(help: "The campaign file.")
    var file: String

    @Flag(help: "No progress line, only the report.")
    var quiet = false

    func run() async throws {
        let (campaign, paths) = try loadCampaign(file)
        let transport: APNsConnectionPool
        let endpoint: String
        do {
            (transport, endpoint) = try SendPipeline.transport(for: campaign, paths: paths)
        } catch {
            printError("\(campaign.path): error: \(error.message)")
            throw ExitCode(2)
        }
        let executor = SendPipeline.executor(campaign: campaign, transport: transport, endpoint: endpoint)
        let printer = ProgressPrinter()
        let signals = StopSignals { executor.stop() }
        let progress = printer.callback(enabled: !quiet)
        let report = await executor.run(progress: progress)
        withExtendedLifetime(signals) {}
        printer.finish()
        print(report.text(), terminator: "")
        if report.exitCode != 0 { throw ExitCode(report.exitCode) }
    }
}

/// Loads and checks a campaign, printing diagnostics; exits 1 when it is invalid.
func loadCampaign(_ file: String) throws -> (LoadedCampaign, ProjectPaths) {
    let loaded = CampaignLoader().load(file)
    for diagnostic in loaded.diagnostics { printError(diagnostic.description) }
    let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    let url = URL(fileURLWithPath: file, relativeTo: workingDirectory).standardizedFileURL
    guard let campaign = loaded.campaign,
        let paths = ProjectPaths.locate(campaign: url, workingDirectory: workingDirectory)
    else { throw ExitCode(1) }
    return (campaign, paths)
}
