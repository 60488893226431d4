import ArgumentParser
import Foundation
import PushcampJournal
import PushcampPlanner
import PushcampRehearsal
import PushcampReport
import PushcampSend
import PushcampSimulator

struct Rehearse: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a campaign to a local APNs simulator: the safe way to try it end to end.",
        discussion: """
            Starts the built-in simulator on 127.0.0.1 with a throwaway key and certificate made on \
            the spot, then runs the real send against it: planning, rendering, HTTP/2 over TLS, \
            stream limits, the campaign's rate, retries. The simulator checks every request as APNs \
            does (token, topic, push type, priority, expiration, collapse id, payload size) and the \
            report shows what APNs would have answered. A campaign with an Android app rehearses \
            its Android recipients against the simulator's FCM (a throwaway service account, \
            Google's checks and answers) in the same run. Nothing leaves the machine.

            --tokens gives device behaviours, one per line: `TOKEN ok|unregistered [ms]|bad|\
            wrong-topic|flaky [n]|throttled [n]|reason NAME` (see `pushcamp sim --help`); \
            --scenario gives them, and faults, in a YAML file kept beside the campaign.

            The rehearsal is recorded in a journal of its own (.pushcamp/rehearsal.sqlite beside \
            the project's journal): `pushcamp runs --rehearsal`, `report --rehearsal` and `cancel \
            --rehearsal` show and stop it, and a rehearsal killed part-way resumes when rehearsed \
            again. Rehearsals read the project's journal (dead tokens and frequency caps apply as \
            in a real send) but never write to it: they suppress no token and count toward no cap.

            A broadcast campaign (channel: NAME) is rehearsed on a channel created on the \
            simulator for the rehearsal (recorded in the rehearsal journal; nothing is created at \
            APNs).

            Exit status as for `pushcamp send`.

            Examples:
              pushcamp rehearse campaigns/spring-sale.yaml
              pushcamp rehearse --tokens rehearsal/tokens.txt campaigns/spring-sale.yaml
              pushcamp rehearse --goaway-after 200 campaigns/spring-sale.yaml
              pushcamp rehearse --scenario rehearsal/outage.yaml campaigns/spring-sale.yaml
            """
    )

    @Argument(help: "The campaign file.", completion: .campaignFiles)
    var file: String

    @OptionGroup var faults: SimulatorFaults

    @Flag(name: .shortAndLong, help: "No progress line, only the report.")
    var quiet = false

    @OptionGroup var stall: StallOption

    @OptionGroup var format: SendFormatOption

    @OptionGroup var projectOption: ProjectOption

    func run() async throws {
        try projectOption.enter()
        let (campaign, paths) = try loadCampaign(file)
        var rehearsal = Rehearsal(campaign: campaign)
        let scenario = try faults.resolve()
        rehearsal.tokens = scenario.tokens
        rehearsal.adjust = { scenario.apply(to: &$0) }
        let rehearsals = try JournalLocationOption.access(JournalSetting(path: campaign.rehearsalJournalPath))
        try await JournalLocationOption.withJournal(rehearsals, readOnly: false, refusing: campaign) { journal in
            rehearsal.journal = journal ?? MemoryJournal()
            if campaign.broadcast != nil {
                try await rehearseBroadcast(rehearsal, paths: paths)
                return
            }
            // A project that never sent has no journal: nothing is suppressed or capped.
            let project = try JournalLocationOption.access(campaign.journal)
            try await JournalLocationOption.withJournal(project, readOnly: true, refusing: campaign) { projectJournal in
                rehearsal.projectJournal = projectJournal ?? MemoryJournal()
                rehearsal.stallTimeout = stall.stallTimeout
                let printer = ProgressPrinter()
                let prepared: Rehearsal.Prepared
                do {
                    prepared = try await rehearsal.prepare(progress: printer.callback(enabled: !quiet))
                } catch let error as RunRefusal {
                    throw Failure(error, of: campaign)
                }
                defer { prepared.cleanUp() }
                if let note = prepared.send.note { printError(note + " (rehearsal)") }
                let report = try await runServices(prepared.services, until: prepared.send, printer: printer)
                let journal = rehearsal.journal
                try await format.print(report, journal: journal, rehearsal: true, textExtra: prepared.trailer)
                if report.exitCode != 0 { throw ExitCode(report.exitCode) }
            }
        }
    }
}

extension Rehearse {
    /// A broadcast campaign's one request, against the rehearsal simulator.
    func rehearseBroadcast(_ rehearsal: Rehearsal, paths: ProjectPaths) async throws {
        let campaign = rehearsal.campaign
        let result: Rehearsal.BroadcastResult
        do {
            result = try await rehearsal.broadcast(paths: paths)
        } catch let refusal as RunRefusal {
            throw Failure(refusal, of: campaign)
        } catch {
            throw Failure("\(campaign.path): error: \(error)", exitCode: 2)
        }
        let outcome = result.outcome
        switch format.format {
        case .json: try await format.printJSON(outcome.run, journal: rehearsal.journal, rehearsal: true)
        case .text:
            print(outcome.message.text(), terminator: "")
            let answer =
                outcome.delivered ? "200" : "\(outcome.status.map(String.init) ?? "no answer") \(outcome.reason ?? "")"
            print("rehearsal simulator answered \(answer)")
            print(
                "recorded as rehearsal run \(outcome.run): `pushcamp runs --rehearsal`, `pushcamp report --rehearsal`"
            )
        }
        if !outcome.delivered { throw ExitCode(4) }
    }
}
