import ArgumentParser
import Foundation
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampServe

struct Schedules: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List scheduled campaigns: their next slots, the last slot fired and its run, slots skipped.",
        discussion: """
            Reads the folders `pushcamp serve` watches (serve.campaigns in pushcamp.yaml, default \
            campaigns/) and the journal. A campaign file that does not validate is listed with its \
            error: serve skips it until it is fixed. Skipped slots carry their reason: missed (due \
            longer ago than catch_up.within), superseded (catch_up.mode latest fired a newer one), \
            not-caught-up (catch_up.mode skip), overlap (the previous slot was still sending), \
            invalid (the file did not validate when the slot came), refused (the send was refused, \
            e.g. credentials), sent (an `at` campaign sent by `pushcamp send`).

            Examples:
              pushcamp schedules
              pushcamp schedules --format json
            """
    )

    @OptionGroup var projectOption: ProjectOption

    @OptionGroup var journalLocation: JournalLocationOption

    @Option(help: "text or json.")
    var format: Format = .text

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func run() async throws {
        let (loaded, paths) = try projectOption.load()
        let listing = try await journalLocation.withJournal(JournalSetting(loaded, paths: paths), readOnly: true) {
            store in
            try await ScheduleListing.read(
                paths: paths,
                folders: loaded.serve.campaignFolders,
                journal: store,
                now: commandClock.now()
            )
        }
        switch format {
        case .text: print(listing.text(), terminator: "")
        case .json: print(listing.json())
        }
    }
}

/// `--project DIR`, on every command that works in a project: the folder holding pushcamp.yaml
/// (default: the nearest one at or above the current folder).
struct ProjectOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The project folder holding pushcamp.yaml (default: the nearest one at or above the current folder); campaign files are then relative to it.",
            valueName: "dir"
        )
    )
    var project: String?

    /// The folder to look for pushcamp.yaml from: `--project`, else the current folder.
    var directory: URL {
        let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        return URL(fileURLWithPath: project ?? workingDirectory.path, relativeTo: workingDirectory).standardizedFileURL
    }

    /// For the commands given campaign files: works from `--project` as if started there (as
    /// `git -C` and `make -C` do), so campaign paths are relative to the project. Exits 1 when it
    /// is not a folder.
    func enter() throws {
        guard let project else { return }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue,
            FileManager.default.changeCurrentDirectoryPath(directory.path)
        else {
            throw Failure("error: --project \(project.escapingControlCharacters): not a folder", exitCode: 1)
        }
    }

    /// The project's pushcamp.yaml, read; prints the problems and exits 1 when there is none or it is invalid.
    func load() throws -> (Project, ProjectPaths) {
        switch ProjectJournal.project(workingDirectory: directory) {
        case .success(let found): return found
        case .failure(let error):
            throw Failure(error.description, exitCode: 1)
        }
    }
}
