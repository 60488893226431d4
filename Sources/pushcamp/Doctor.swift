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
        print(Checkup.projectLine(project, paths: paths).text)
        let setting = journalLocation.setting(JournalSetting(project, paths: paths))
        let access = try JournalLocationOption.access(setting)
        let (journalProblem, detail) = await access.checkup()
        print(
            CheckLine(outcome: journalProblem ? .problem : .ok, subject: "journal \(access.name)", detail: detail).text
        )
        let apps: (apns: [AppConfig], fcm: [FCMAppConfig])
        do throws(Checkup.Refusal) {
            apps = try Checkup.apps(of: project, named: app, sendTest: sendTest != nil)
        } catch {
            throw Failure("error: \(error.message)", exitCode: 64)
        }
        let environment = ProcessInfo.processInfo.environment
        var appProblems = 0
        for app in apps.apns {
            appProblems += await Checkup.apns(
                app,
                paths: paths,
                environment: environment,
                tokenCache: (setting.path as NSString).deletingLastPathComponent,
                sendTest: sendTest,
                timeout: timeout
            ) { print($0) }
        }
        for app in apps.fcm {
            appProblems += await Checkup.fcm(app, paths: paths, environment: environment, timeout: Double(timeout)) {
                print($0)
            }
        }
        let problems = appProblems + (journalProblem ? 1 : 0)
        print(problems == 0 ? "\neverything checked is ok" : "\n\(problems) problem\(problems == 1 ? "" : "s")")
        if journalProblem { throw ExitCode(1) }
        if appProblems > 0 { throw ExitCode(2) }
    }
}
