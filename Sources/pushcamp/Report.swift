import ArgumentParser
import Foundation
import PushcampJournal
import PushcampJournalAccess
import PushcampPlanner
import PushcampReport

struct Report: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Say what a run did: outcomes by status and reason, retries, latency, throughput.",
        discussion: """
            Reads the run from the journal, so it works during a send, after it, and after a crash. \
            Every recipient of the run is accounted for: delivered, failed (by APNs status and \
            reason), waiting to retry, sent with no answer (in flight when the run stopped) or not \
            sent. Also: retries by cause, possible duplicates, latency percentiles (an \
            HdrHistogram of every answer, retries included), answers per second over time, and how \
            long it took (wall time from start to last update, and time spent sending, which \
            leaves out the gaps between a killed send and its resume).

            Latencies, retries and connection counts are saved about once a second while sending: \
            after a kill -9 the last second's may be missing from them. Outcomes are never missing.

            Formats: text (the terminal), markdown (a pull request or issue), json (dashboards and \
            scripts; shape in docs/report-json.md), html (one self-contained page with charts of \
            outcomes by reason, answers per second and the latency distribution).

            Examples:
              pushcamp report
              pushcamp report 12 --format markdown
              pushcamp report 12 --format html --output run-12.html
              pushcamp report --format json | jq '.outcomes[] | select(.kind == "failed")'

            --output never writes over the journal (or its -wal, -shm and lock files), and never \
            over an existing file that is not a Pushcamp report unless --force is given.
            """
    )

    @Argument(help: ArgumentHelp("The run (its number in `pushcamp runs`); default: the latest run.", valueName: "run"))
    var runNumber: Int64?

    @Option(help: "text, json, markdown or html.")
    var format: ReportFormat = .text

    @Option(
        name: [.short, .long],
        help: ArgumentHelp("Write the report to this file instead of printing it.", valueName: "file")
    )
    var output: String?

    @Flag(help: "Overwrite --output although it exists and is not a Pushcamp report.")
    var force = false

    @OptionGroup var journalOption: JournalOption

    enum ReportFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json, markdown, html
    }

    func run() async throws {
        try await journalOption.withJournal { journal, path in
            let latest = runNumber == nil ? try await journal.runs(limit: 1).first?.id : nil
            guard let id = runNumber.map(RunID.init) ?? latest else {
                // Nothing sent yet is a state, not an error: JSON readers get null.
                let nothing = "nothing has been \(journalOption.rehearsal ? "rehearsed" : "sent") from this project"
                print(format == .json ? "null" : "no runs yet: \(nothing)")
                return
            }
            let report = try await RunReport.shown(id, from: journal, name: path, rehearsal: journalOption.rehearsal)
            let text =
                switch format {
                case .text: report.text()
                case .json: report.json()
                case .markdown: report.markdown()
                case .html: report.html()
                }
            guard let output else {
                if format == .text { printDocument(text) } else { print(text, terminator: "") }
                return
            }
            if let refusal = ReportOutput.refusal(for: output, journalPath: path, force: force) {
                throw Failure("error: \(refusal)", exitCode: 1)
            }
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output))
            } catch {
                throw Failure("error: cannot write \(output): \(error.localizedDescription)", exitCode: 1)
            }
        }
    }
}

extension RunReport {
    /// Run `id`'s report as the commands print it: its file relative to the project, marked as a
    /// rehearsal's when it is one. A run not in `journal` (called `name`) is an error naming it.
    static func shown(
        _ id: RunID,
        from journal: any Journal,
        name: String = "the journal",
        rehearsal: Bool
    ) async throws -> RunReport {
        guard var report = try await load(id, from: journal) else {
            throw Failure("error: no run \(id) in \(name); `pushcamp runs` lists them", exitCode: 1)
        }
        report.rehearsal = rehearsal
        report.fileDisplay = projectRelative(report.run.file)
        return report
    }

    /// `file` relative to the project around the working directory, when it lies inside it.
    static func projectRelative(_ file: String?) -> String? {
        guard let file else { return nil }
        let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        guard case .success((_, let paths)) = ProjectJournal.project(workingDirectory: here) else { return file }
        return paths.displayRelative(file)
    }
}
