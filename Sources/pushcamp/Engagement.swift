import ArgumentParser
import Foundation
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend

struct Engagement: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record what recipients did after a run (opened, converted…), for the A/B readout.",
        subcommands: [Import.self]
    )

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Record engagement events from a CSV or JSON Lines file against a run.",
            discussion: """
                Each row names a recipient, by the push's apns-id (what the app sees as the \
                notification's identifier) or by the audience's user key (the attribute \
                audience.user_key names), an event and a time:

                  apns_id,event,time
                  1b4e28ba-2fa1-5d2b-a8c6-3c7a1d2e4f50,opened,2027-03-20T09:02:11Z
                  8c0d4a7e-0c3e-5f7a-9b1d-2e4f6a8b0c1d,converted,1805536800

                or, in a .jsonl file, {"user": "u-1042", "event": "converted", "time": "2027-03-20T10:00:00Z"}. \
                An optional value column gives what the event was worth (revenue, like 4.99): the \
                readout then shows each arm's value per recipient with an interval.

                Rows are matched with the assignment the run kept when it was sent (each \
                recipient's apns-id, person, variant, holdout and locale), so the campaign's \
                file and audience may have changed since. A run that kept none (one message, \
                no holdout, no readout:, no user_key) keeps it at its first import, planned \
                again from the files: those must then be at the run's revision. A recipient is \
                recorded once per event, however often it is imported, and with \
                audience.user_key once per person, whichever device a row names; held-out \
                recipients are recorded too (the readout's baseline); rows naming no recipient \
                of the run, one it never sent, or dated outside readout.window are counted and \
                left out.

                A file with any bad row is refused whole, each problem at its line, and nothing \
                is recorded. `pushcamp report` then names each event's winner (or the arm \
                leading), from every pair of arms compared with intervals that stay valid \
                however often you import and look, and shows each event's rate per variant, \
                per locale and for the holdout, with the lift against the holdout.

                Exit status: 0 recorded; 1 a bad file, campaign or journal.

                Examples:
                  pushcamp engagement import opens.csv --campaign campaigns/spring-sale.yaml
                  pushcamp engagement import buys.jsonl --campaign campaigns/sale.yaml --run 12
                """
        )

        @Argument(help: "The events: CSV with a header (apns_id or user, event, time, value), or JSON Lines (.jsonl).")
        var file: String

        @Option(help: ArgumentHelp("The campaign file of the run.", valueName: "campaign.yaml"))
        var campaign: String

        @Option(help: "The run (default: the campaign's latest run).")
        var run: Int64?

        @OptionGroup var journalLocation: JournalLocationOption

        func run() async throws {
            let events = EngagementFile(path: file, display: file)
            // Every row is checked before anything is recorded: a bad file changes nothing.
            var problems = 0
            var rows = 0
            do {
                try events.forEachRow { _ in
                    rows += 1
                } bad: { diagnostic in
                    problems += 1
                    if problems <= 20 { printError(diagnostic.description) }
                }
            } catch {
                throw Failure("\(error)", exitCode: 1)
            }
            if problems > 0 {
                if problems > 20 { printError("… and \(problems - 20) more") }
                throw Failure("error: \(problems) bad row\(problems == 1 ? "" : "s") in \(file); nothing was recorded")
            }
            let (loaded, _) = try loadCampaign(campaign)
            try await journalLocation.withWritableJournal(loaded.journal) { journal in
                let matcher = try await EngagementImport.forRun(run.map(RunID.init), of: loaded, in: journal)
                var outcome = EngagementImport.Outcome()
                do {
                    try await matcher.record(events, in: journal, outcome: &outcome)
                } catch {
                    let said =
                        outcome.recorded > 0
                        ? "note: \(outcome.recorded) events were recorded before this; importing the file again records the rest"
                        : "note: nothing was recorded"
                    throw Failure((Failure(error)?.message ?? "error: \(error)") + "\n" + said)
                }
                print(outcome.summary(rows: rows, run: matcher.run.id, window: matcher.assignment.readout?.window))
            }
        }
    }
}
