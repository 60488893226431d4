import ArgumentParser
import Foundation
import PushcampAPNs
import PushcampFCMCore
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner
import PushcampSend

struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that this machine can send: project, journal, keys, and APNs and FCM answering.",
        discussion: """
            Checks, in order, and prints one line each: pushcamp.yaml reads; the journal opens (a \
            SQLite file that does not exist yet is fine: the first send creates it); for each app, \
            its credentials are usable (every ${env:…} set, the .p8 key an ES256 key or the \
            certificate loadable, the team id and key id not the placeholders `pushcamp init` \
            wrote), and its endpoint (Apple's host for its environment, or the custom one) answers \
            with TLS and HTTP/2. With --send-test TOKEN, one real alert push, "Pushcamp doctor", is \
            sent to that device with the app's credentials, and APNs' answer is printed. Nothing \
            else is sent and nothing is written, except the provider token cache beside the journal.

            For an Android (FCM) app: its service_account is read (every ${env:…} set, a key file \
            Google issued, with a note when others can read it), the token endpoint the key names \
            issues an access token for it, and FCM's endpoint (or the custom one) answers with TLS \
            and HTTP/2. No message is sent.

            Exit status: 0 when everything checked is ok; 1 when the project or the journal cannot be \
            used; 2 when an app's credentials or connection (or the test push) fail.

            Examples:
              pushcamp doctor
              pushcamp doctor --send-test "$MY_DEVICE_TOKEN" --app shop-ios
            """
    )

    @OptionGroup var projectOption: ProjectOption

    @OptionGroup var journalLocation: JournalLocationOption

    @Option(
        help: ArgumentHelp(
            "Send one real alert push to this device token (hex) and print APNs' answer.",
            valueName: "token"
        )
    )
    var sendTest: String?

    @Option(help: ArgumentHelp("The app to check (default: every app; --send-test needs one).", valueName: "name"))
    var app: String?

    @Option(help: ArgumentHelp("How long to wait for each endpoint.", valueName: "seconds"))
    var timeout: Int = 15

    func validate() throws {
        if let sendTest, case .failure(let problem) = DeviceToken.normalize(sendTest) {
            throw ValidationError("--send-test: \(problem.explanation)")
        }
        if timeout < 1 { throw ValidationError("--timeout must be at least 1 second") }
    }

    func run() async throws {
        let (project, paths) = try projectOption.load()
        print(
            CheckLine(
                outcome: .ok,
                subject: paths.projectFileDisplay,
                detail:
                    "\(project.apps.count + project.fcmApps.count) app\(project.apps.count + project.fcmApps.count == 1 ? "" : "s")"
                    + (project.fcmApps.isEmpty ? "" : " (\(project.fcmApps.count) on FCM)")
            ).text
        )
        let setting = journalLocation.setting(JournalSetting(project, paths: paths))
        let journalLine = await Self.checkJournal(try JournalLocationOption.access(setting))
        print(journalLine.text)

        var apps = project.apps.values.sorted { $0.name < $1.name }
        var fcmApps = project.fcmApps.values.sorted { $0.name < $1.name }
        let allNames = (Array(project.apps.keys) + Array(project.fcmApps.keys)).sorted().joined(separator: ", ")
        if let app {
            apps = apps.filter { $0.name == app }
            fcmApps = fcmApps.filter { $0.name == app }
            if apps.isEmpty && fcmApps.isEmpty {
                throw Failure(
                    "error: --app \(app.escapingControlCharacters): pushcamp.yaml has no such app (it has \(allNames))",
                    exitCode: 64
                )
            }
            if sendTest != nil && !fcmApps.isEmpty {
                throw Failure(
                    "error: --send-test sends an APNs push; \(app.escapingControlCharacters) is an FCM app, which doctor "
                        + "checks without sending",
                    exitCode: 64
                )
            }
        } else if sendTest != nil && apps.count > 1 {
            throw Failure(
                "error: --send-test sends with one app: name it with --app (\(project.apps.keys.sorted().joined(separator: ", ")))",
                exitCode: 64
            )
        }
        let environment = ProcessInfo.processInfo.environment
        var appProblems = 0
        for app in apps {
            appProblems += await Checkup.apns(
                app,
                paths: paths,
                environment: environment,
                tokenCache: (setting.path as NSString).deletingLastPathComponent,
                sendTest: sendTest,
                timeout: timeout
            ) { print($0) }
        }
        if sendTest == nil {
            for app in fcmApps {
                appProblems += await Checkup.fcm(
                    app,
                    paths: paths,
                    environment: environment,
                    timeout: Double(timeout)
                ) { print($0) }
            }
        }
        let problems = appProblems + (journalLine.outcome == .problem ? 1 : 0)
        print(problems == 0 ? "\neverything checked is ok" : "\n\(problems) problem\(problems == 1 ? "" : "s")")
        if journalLine.outcome == .problem { throw ExitCode(1) }
        if appProblems > 0 { throw ExitCode(2) }
    }

    static func checkJournal(_ access: JournalAccess) async -> CheckLine {
        let subject = "journal \(access.name)"
        if case .file(let path) = access.kind, !FileManager.default.fileExists(atPath: path) {
            return CheckLine(outcome: .ok, subject: subject, detail: "no file yet; the first send creates it")
        }
        do {
            let runs = try await access.withJournal(readOnly: true) { journal in try await journal?.runs(limit: 1) }
            guard let runs else {
                return CheckLine(outcome: .ok, subject: subject, detail: "no file yet; the first send creates it")
            }
            return CheckLine(
                outcome: .ok,
                subject: subject,
                detail: runs.first.map { "opens; last run \($0.id) (\($0.campaign))" } ?? "opens; no runs yet"
            )
        } catch {
            return CheckLine(
                outcome: .problem,
                subject: subject,
                detail: (error as? JournalError)?.message ?? "\(error)"
            )
        }
    }
}
