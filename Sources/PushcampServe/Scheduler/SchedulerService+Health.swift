import Logging
import PushcampJournal
import PushcampModel
import PushcampSend

/// What `serve` says about its own health: credentials it cannot use (checked before any slot
/// needs them, and reported by `/readyz`), and how each run ended, failures at `error` with the
/// endpoint and the cause.
extension SchedulerService {
    /// How often credentials found unusable are checked again (a key file put in place, a
    /// certificate renewed), besides every change of the campaign files.
    static let credentialsRecheckInterval: Double = 30

    /// Checks the credentials of every app a scheduled or trigger campaign sends with, without
    /// connecting; `/readyz` answers 503 naming each problem until it is fixed. A new problem is
    /// logged at `error` once.
    func checkCredentials(_ catalog: CampaignCatalog) {
        var problems: [String] = []
        for (_, entry) in catalog.sendingApps.sorted(by: { $0.key < $1.key }) {
            let problem: SendRun.CredentialsProblem?
            switch entry.app {
            case .apns(let app):
                problem = SendRun.credentialsProblem(
                    of: app,
                    paths: configuration.paths,
                    environment: configuration.environment
                )
            case .fcm(let app):
                problem = SendRun.credentialsProblem(
                    of: app,
                    paths: configuration.paths,
                    environment: configuration.environment
                )
            }
            guard let problem else { continue }
            problems.append("\(problem.description) (campaigns: \(entry.campaigns.sorted().joined(separator: ", ")))")
        }
        let known = status.snapshot.credentials
        for problem in problems where !known.contains(problem) {
            logger.error(
                "credentials cannot be used, so no slot of these campaigns can be sent: \(problem)",
                metadata: ["event": "credentials"]
            )
        }
        if problems.isEmpty && !known.isEmpty {
            logger.notice("credentials usable again", metadata: ["event": "credentials"])
        }
        status.update { $0.credentials = problems }
        metrics.credentialsProblems(problems.count)
    }

    /// A run's end in the log: a finished or interrupted run at `info`, one that stopped on a failure
    /// (`credentials`, `cannot-connect`, `stalled`, `journal`, `plan-failed`) at `error`, naming the
    /// endpoint and the cause. `what` names the slot or the trigger; `counts` adds to the counts.
    func logEnd(_ what: String, send: SendRun, report: SendReport, slot: Int64?, counts: String) {
        let end = ServeMetrics.end(of: report)
        var fields = Logger.fields("run-ended", campaign: report.campaign, run: send.run.id, slot: slot)
        fields["end"] = .string(end)
        let summary =
            "\(what): run \(send.run.id) \(end): \(report.delivered) delivered, \(report.failed) failed\(counts)"
        if case .leaseLost(let message)? = report.stop {
            logger.warning("\(summary); \(message); the run is left to the node that holds it now", metadata: fields)
            return
        }
        guard let cause = Self.failure(of: report.stop) else {
            logger.info("\(summary)", metadata: fields)
            return
        }
        fields["endpoint"] = .string(send.endpoint)
        self.report("\(summary); sending to \(send.endpoint): \(cause)", fields)
    }

    /// Why a run stopped, when it stopped on a failure.
    static func failure(of stop: SendReport.Stop?) -> String? {
        switch stop {
        case .credentials(let message)?, .cannotConnect(let message)?, .stalled(let message)?,
            .journal(let message)?, .planFailed(let message)?:
            return message
        case nil, .interrupted?, .cancelled?, .leaseLost?:
            return nil
        }
    }
}
