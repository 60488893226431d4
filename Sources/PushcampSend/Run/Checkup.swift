import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCMCore
import PushcampModel
import PushcampPlanner

/// One line of `pushcamp doctor`: `ok`, `problem` or `skipped`, what was checked, what was found.
public struct CheckLine: Sendable {
    public enum Outcome: String, Sendable {
        case ok, problem, skipped
    }

    public var outcome: Outcome
    public var subject: String
    public var detail: String

    public init(outcome: Outcome, subject: String, detail: String) {
        self.outcome = outcome
        self.subject = subject
        self.detail = detail
    }

    public var text: String {
        outcome.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0) + "\(subject): \(detail)"
    }
}

/// What `pushcamp doctor` checks of an app, line by line as each check ends: its credentials, its
/// endpoint answering with TLS and HTTP/2 and, when asked, one real test push.
public enum Checkup {
    /// An APNs app's lines (told to `report`, as printed, as they come); the number of problems found.
    /// `sendTest`: a device token to send one alert push to.
    public static func apns(
        _ app: AppConfig,
        paths: ProjectPaths,
        environment: [String: String],
        tokenCache: String?,
        sendTest: String?,
        timeout: Int,
        clock: any WallClock = SystemWallClock(),
        report: (String) -> Void
    ) async -> Int {
        var problems = 0
        let subject = "app \(app.name)"
        report("\(subject) \(app.destination.text)")
        if let problem = SendRun.credentialsProblem(of: app, paths: paths, environment: environment) {
            problems += 1
            // The problem names the app already; the line's subject does.
            let message = problem.message
            let detail =
                (problem.location.map { "\($0): " } ?? "")
                + (message.hasPrefix("\(subject): ") ? String(message.dropFirst(subject.count + 2)) : message)
            report(CheckLine(outcome: .problem, subject: "\(subject) \(problem.part)", detail: detail).text)
            report(
                CheckLine(
                    outcome: .skipped,
                    subject: "\(subject) TLS and HTTP/2",
                    detail: "not tried without usable credentials"
                ).text
            )
            return problems
        }
        report(CheckLine(outcome: .ok, subject: "\(subject) credentials", detail: describe(app.credentials)).text)
        let test = sendTest.map { testPush(to: $0, app: app) }
        let probe = await SendRun.probe(
            app,
            paths: paths,
            environment: environment,
            tokenCache: tokenCache,
            test: test,
            timeout: .seconds(timeout),
            clock: clock
        )
        if let connected = probe.connected {
            report(
                CheckLine(
                    outcome: .ok,
                    subject: "\(subject) TLS and HTTP/2",
                    detail:
                        "\(app.destination.endpoint) answered in \(Int((connected.seconds * 1000).rounded())) ms"
                ).text
            )
        }
        if let failure = probe.failure {
            problems += 1
            let what = probe.connected == nil ? "TLS and HTTP/2" : "test push"
            let detail = failure.hasPrefix("\(subject): ") ? String(failure.dropFirst(subject.count + 2)) : failure
            report(CheckLine(outcome: .problem, subject: "\(subject) \(what)", detail: detail).text)
            return problems
        }
        if let answer = probe.answer, let test {
            let accepted = answer.status == 200
            if !accepted { problems += 1 }
            let status = answer.status.map(String.init) ?? "no status"
            report(
                CheckLine(
                    outcome: accepted ? .ok : .problem,
                    subject: "\(subject) test push to \(DeviceToken.masked(test.deviceToken))",
                    detail: accepted
                        ? "\(status), apns-id \(answer.apnsID)"
                        : "\(status) \(answer.reason ?? "")".trimmingCharacters(in: .whitespaces)
                ).text
            )
        }
        return problems
    }

    /// An FCM app's lines: credentials, the token endpoint, FCM's endpoint. Returns the problems found.
    public static func fcm(
        _ app: FCMAppConfig,
        paths: ProjectPaths,
        environment: [String: String],
        timeout: Double,
        report: (String) -> Void
    ) async -> Int {
        let subject = "app \(app.name)"
        report("\(subject) \(app.destinationText)")
        let credentials: FCMCredentials
        do {
            credentials = try FCMCredentials.load(app, paths: paths, environment: environment)
        } catch {
            let message =
                error.message.hasPrefix("\(subject): ")
                ? String(error.message.dropFirst(subject.count + 2)) : error.message
            let detail = (error.location.map { "\($0): " } ?? "") + message
            report(CheckLine(outcome: .problem, subject: "\(subject) credentials", detail: detail).text)
            for step in ["token endpoint", "TLS and HTTP/2"] {
                report(
                    CheckLine(
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
        report(CheckLine(outcome: .ok, subject: "\(subject) credentials", detail: detail).text)
        let probe = await FCMProbe.run(
            app,
            credentials: credentials,
            timeout: timeout,
            environment: environment
        )
        if let issued = probe.issued {
            report(
                CheckLine(
                    outcome: .ok,
                    subject: "\(subject) token endpoint",
                    detail: "\(account.tokenURI) issued an access token (it lives \(Int(issued.lifetime)) s) in "
                        + "\(Int((issued.took * 1000).rounded())) ms"
                ).text
            )
        }
        if let connected = probe.connected {
            report(
                CheckLine(
                    outcome: .ok,
                    subject: "\(subject) TLS and HTTP/2",
                    detail: "\(app.sendEndpoint) answered in \(Int((connected * 1000).rounded())) ms"
                ).text
            )
        }
        guard let failure = probe.failure else { return 0 }
        report(CheckLine(outcome: .problem, subject: "\(subject) \(failure.step)", detail: failure.message).text)
        if failure.step == "token endpoint" {
            report(
                CheckLine(
                    outcome: .skipped,
                    subject: "\(subject) TLS and HTTP/2",
                    detail: "not tried without an access token"
                ).text
            )
        }
        return 1
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

extension Checkup {
    /// Why doctor cannot check what it was asked to (a usage error: exit 64).
    public struct Refusal: Error, Sendable {
        public var message: String
    }

    /// The project's line: where pushcamp.yaml is, and how many apps it has.
    public static func projectLine(_ project: Project, paths: ProjectPaths) -> CheckLine {
        let apps = project.apps.count + project.fcmApps.count
        return CheckLine(
            outcome: .ok,
            subject: paths.projectFileDisplay,
            detail: "\(apps) app\(apps == 1 ? "" : "s")"
                + (project.fcmApps.isEmpty ? "" : " (\(project.fcmApps.count) on FCM)")
        )
    }

    /// The apps to check, by name: every one, or the one `name` picks. A test push is sent with one
    /// APNs app, so `sendTest` needs a single APNs app to be chosen, and checks no FCM app.
    public static func apps(
        of project: Project,
        named name: String?,
        sendTest: Bool
    ) throws(Refusal) -> (apns: [AppConfig], fcm: [FCMAppConfig]) {
        var apps = project.apps.values.sorted { $0.name < $1.name }
        var fcmApps = project.fcmApps.values.sorted { $0.name < $1.name }
        guard let name else {
            if sendTest && apps.count > 1 {
                throw Refusal(
                    message:
                        "--send-test sends with one app: name it with --app (\(project.apps.keys.sorted().joined(separator: ", ")))"
                )
            }
            // A test push checks an APNs app; FCM apps are checked without sending, another time.
            return (apps, sendTest ? [] : fcmApps)
        }
        apps = apps.filter { $0.name == name }
        fcmApps = fcmApps.filter { $0.name == name }
        if apps.isEmpty && fcmApps.isEmpty {
            let names = (Array(project.apps.keys) + Array(project.fcmApps.keys)).sorted().joined(separator: ", ")
            throw Refusal(
                message: "--app \(name.escapingControlCharacters): pushcamp.yaml has no such app (it has \(names))"
            )
        }
        if sendTest && !fcmApps.isEmpty {
            throw Refusal(
                message:
                    "--send-test sends an APNs push; \(name.escapingControlCharacters) is an FCM app, which doctor "
                    + "checks without sending"
            )
        }
        return (apps, fcmApps)
    }
}
