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

    /// One check's line: `ok`, `problem` or `skipped`, what was checked, what was found.
    struct Line {
        enum Outcome: String {
            case ok, problem, skipped
        }
        var outcome: Outcome
        var subject: String
        var detail: String

        var text: String {
            outcome.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0) + "\(subject): \(detail)"
        }
    }

    func run() async throws {
        let (project, paths) = try projectOption.load()
        var lines = [
            Line(
                outcome: .ok,
                subject: paths.projectFileDisplay,
                detail:
                    "\(project.apps.count + project.fcmApps.count) app\(project.apps.count + project.fcmApps.count == 1 ? "" : "s")"
                    + (project.fcmApps.isEmpty ? "" : " (\(project.fcmApps.count) on FCM)")
            )
        ]
        let setting = journalLocation.setting(JournalSetting(project, paths: paths))
        let journalLine = await Self.checkJournal(try JournalLocationOption.access(setting))
        lines.append(journalLine)
        for line in lines { print(line.text) }

        var apps = project.apps.values.sorted { $0.name < $1.name }
        var fcmApps = project.fcmApps.values.sorted { $0.name < $1.name }
        let allNames = (Array(project.apps.keys) + Array(project.fcmApps.keys)).sorted().joined(separator: ", ")
        if let app {
            apps = apps.filter { $0.name == app }
            fcmApps = fcmApps.filter { $0.name == app }
            if apps.isEmpty && fcmApps.isEmpty {
                printError(
                    "error: --app \(app.escapingControlCharacters): pushcamp.yaml has no such app (it has \(allNames))"
                )
                throw ExitCode(64)
            }
            if sendTest != nil && !fcmApps.isEmpty {
                printError(
                    "error: --send-test sends an APNs push; \(app.escapingControlCharacters) is an FCM app, which doctor "
                        + "checks without sending"
                )
                throw ExitCode(64)
            }
        } else if sendTest != nil && apps.count > 1 {
            printError(
                "error: --send-test sends with one app: name it with --app (\(project.apps.keys.sorted().joined(separator: ", ")))"
            )
            throw ExitCode(64)
        }
        let environment = ProcessInfo.processInfo.environment
        var appProblems = 0
        for app in apps {
            let subject = "app \(app.name)"
            print("\(subject) \(app.destination.text)")
            if let problem = SendRun.credentialsProblem(of: app, paths: paths, environment: environment) {
                appProblems += 1
                // The problem names the app already; the line's subject does.
                let message = problem.message
                let detail =
                    (problem.location.map { "\($0): " } ?? "")
                    + (message.hasPrefix("\(subject): ") ? String(message.dropFirst(subject.count + 2)) : message)
                print(Line(outcome: .problem, subject: "\(subject) credentials", detail: detail).text)
                print(
                    Line(
                        outcome: .skipped,
                        subject: "\(subject) TLS and HTTP/2",
                        detail: "not tried without usable credentials"
                    ).text
                )
                continue
            }
            print(Line(outcome: .ok, subject: "\(subject) credentials", detail: Self.describe(app.credentials)).text)
            let test = sendTest.map { Self.testPush(to: $0, app: app) }
            let probe = await SendRun.probe(
                app,
                paths: paths,
                environment: environment,
                tokenCache: (setting.path as NSString).deletingLastPathComponent,
                test: test,
                timeout: .seconds(timeout)
            )
            if let connected = probe.connected {
                print(
                    Line(
                        outcome: .ok,
                        subject: "\(subject) TLS and HTTP/2",
                        detail:
                            "\(app.destination.endpoint) answered in \(Int((connected.seconds * 1000).rounded())) ms"
                    ).text
                )
            }
            if let failure = probe.failure {
                appProblems += 1
                let what = probe.connected == nil ? "TLS and HTTP/2" : "test push"
                let detail = failure.hasPrefix("\(subject): ") ? String(failure.dropFirst(subject.count + 2)) : failure
                print(Line(outcome: .problem, subject: "\(subject) \(what)", detail: detail).text)
                continue
            }
            if let answer = probe.answer, let test {
                let accepted = answer.status == 200
                if !accepted { appProblems += 1 }
                let status = answer.status.map(String.init) ?? "no status"
                print(
                    Line(
                        outcome: accepted ? .ok : .problem,
                        subject: "\(subject) test push to \(DeviceToken.masked(test.deviceToken))",
                        detail: accepted
                            ? "\(status), apns-id \(answer.apnsID)"
                            : "\(status) \(answer.reason ?? "")".trimmingCharacters(in: .whitespaces)
                    ).text
                )
            }
        }
        if sendTest == nil {
            for app in fcmApps {
                appProblems += await Self.checkFCM(
                    app,
                    paths: paths,
                    environment: environment,
                    timeout: Double(timeout)
                )
            }
        }
        let problems = appProblems + (journalLine.outcome == .problem ? 1 : 0)
        print(problems == 0 ? "\neverything checked is ok" : "\n\(problems) problem\(problems == 1 ? "" : "s")")
        if journalLine.outcome == .problem { throw ExitCode(1) }
        if appProblems > 0 { throw ExitCode(2) }
    }

    /// An FCM app's lines: credentials, the token endpoint, FCM's endpoint. Returns the problems found.
    static func checkFCM(
        _ app: FCMAppConfig,
        paths: ProjectPaths,
        environment: [String: String],
        timeout: Double
    ) async -> Int {
        let subject = "app \(app.name)"
        print("\(subject) \(app.destinationText)")
        let credentials: FCMCredentials
        do {
            credentials = try FCMCredentials.load(app, paths: paths, environment: environment)
        } catch {
            let message =
                error.message.hasPrefix("\(subject): ")
                ? String(error.message.dropFirst(subject.count + 2)) : error.message
            let detail = (error.location.map { "\($0): " } ?? "") + message
            print(Line(outcome: .problem, subject: "\(subject) credentials", detail: detail).text)
            for step in ["token endpoint", "TLS and HTTP/2"] {
                print(
                    Line(
                        outcome: .skipped,
                        subject: "\(subject) \(step)",
                        detail: "not tried without usable credentials"
                    ).text
                )
            }
            return 1
        }
        let account = credentials.account
        var detail =
            "service account \(account.clientEmail), key \(account.privateKeyID.prefix(8)), project \(credentials.projectID)"
        if credentials.sharedReadable {
            detail += "; note: \(credentials.source) can be read by others (chmod 600 it)"
        }
        print(Line(outcome: .ok, subject: "\(subject) credentials", detail: detail).text)
        let probe = await FCMProbe.run(
            app,
            credentials: credentials,
            timeout: timeout,
            environment: ProcessInfo.processInfo.environment
        )
        if let issued = probe.issued {
            print(
                Line(
                    outcome: .ok,
                    subject: "\(subject) token endpoint",
                    detail: "\(account.tokenURI) issued an access token (it lives \(Int(issued.lifetime)) s) in "
                        + "\(Int((issued.took * 1000).rounded())) ms"
                ).text
            )
        }
        if let connected = probe.connected {
            print(
                Line(
                    outcome: .ok,
                    subject: "\(subject) TLS and HTTP/2",
                    detail: "\(app.sendEndpoint) answered in \(Int((connected * 1000).rounded())) ms"
                ).text
            )
        }
        guard let failure = probe.failure else { return 0 }
        print(Line(outcome: .problem, subject: "\(subject) \(failure.step)", detail: failure.message).text)
        if failure.step == "token endpoint" {
            print(
                Line(
                    outcome: .skipped,
                    subject: "\(subject) TLS and HTTP/2",
                    detail: "not tried without an access token"
                ).text
            )
        }
        return 1
    }

    static func checkJournal(_ access: JournalAccess) async -> Line {
        let subject = "journal \(access.name)"
        if case .file(let path) = access.kind, !FileManager.default.fileExists(atPath: path) {
            return Line(outcome: .ok, subject: subject, detail: "no file yet; the first send creates it")
        }
        do {
            let runs = try await access.withJournal(readOnly: true) { journal in try await journal?.runs(limit: 1) }
            guard let runs else {
                return Line(outcome: .ok, subject: subject, detail: "no file yet; the first send creates it")
            }
            return Line(
                outcome: .ok,
                subject: subject,
                detail: runs.first.map { "opens; last run \($0.id) (\($0.campaign))" } ?? "opens; no runs yet"
            )
        } catch {
            return Line(outcome: .problem, subject: subject, detail: (error as? JournalError)?.message ?? "\(error)")
        }
    }

    static func describe(_ credentials: AppConfig.Credentials) -> String {
        switch credentials {
        case .token(let teamID, let keyID, _): return "provider token, key \(keyID) of team \(teamID)"
        case .certificate: return "client certificate"
        }
    }

    /// The test push: an alert a person recognizes, with an id of its own.
    static func testPush(to token: String, app: AppConfig) -> APNsRequest {
        let payload = #"{"aps":{"alert":{"title":"Pushcamp doctor","body":"A test push from pushcamp doctor."}}}"#
        return APNsRequest(
            tag: 0,
            deviceToken: (try? DeviceToken.normalize(token).get()) ?? token,
            apnsID: UUID().uuidString.lowercased(),
            topic: app.topic,
            pushType: "alert",
            priority: 10,
            expiration: 0,
            collapseID: nil,
            payload: Array(payload.utf8)
        )
    }
}
