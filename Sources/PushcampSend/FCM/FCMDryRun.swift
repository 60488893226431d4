import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCMCore
import PushcampModel
import PushcampPlanner
import Synchronization

/// Google's own check of a campaign's Android messages before the real send: the first `sample`
/// messages the plan renders, each sent with `validate_only: true` (FCM runs every check a send gets
/// and delivers nothing), over the campaign's connections and with its app's access token. Answers
/// are counted by reason as a send's are (`fcm/UNREGISTERED`…); `ok` is a message Google accepted.
public struct FCMDryRun: Sendable {
    /// Google's answer to one message, with the recipient's row.
    public struct Answer: Sendable, Hashable {
        public var row: Int
        public var token: String
        /// `ok`, or the reason as reports name it.
        public var reason: String
        /// Google's message, for an error.
        public var message: String?
    }

    public var asked = 0
    /// Answers by reason, `ok` included.
    public var counts: [String: Int] = [:]
    /// The first answers of each reason other than `ok`.
    public var examples: [Answer] = []
    /// Why the check stopped before every message was answered (no connection, credentials refused).
    public var failure: String?

    static let examplesPerReason = 3

    /// Plans `campaign` (its Android recipients only, up to `sample`) and asks Google about each.
    public static func run(
        _ campaign: LoadedCampaign,
        sample: Int,
        sendTime: Timestamp,
        paths: ProjectPaths,
        environment: [String: String],
        clock: any WallClock = SystemWallClock()
    ) async throws(RunRefusal) -> FCMDryRun {
        guard let android = campaign.android else {
            throw RunRefusal(.refused, "the campaign names no Android app: Google's dry run checks FCM messages")
        }
        let pushes = try Self.sample(campaign, count: sample, sendTime: sendTime)
        var result = FCMDryRun()
        guard !pushes.isEmpty else { return result }
        let (pool, _, _, path) = try SendRun.fcmTransport(
            for: android.app,
            connections: min(campaign.connections, 4),
            paths: paths,
            environment: environment,
            clock: clock
        )
        let requests = pushes.enumerated().map { index, push in
            APNsRequest(
                tag: index,
                registrationToken: push.token,
                path: path,
                body: push.fcmBody(sendTime: Timestamp(secondsSince1970: Int64(clock.now())), validateOnly: true)
            )
        }
        let (outcomes, failure) = await Self.ask(pool, requests)
        result.asked = requests.count
        result.failure = failure
        for outcome in outcomes.sorted(by: { $0.request.tag < $1.request.tag }) {
            let push = pushes[outcome.request.tag]
            let reason = Self.reason(of: outcome)
            result.counts[reason, default: 0] += 1
            let shown = result.examples.filter { $0.reason == reason }.count
            if reason != "ok", shown < Self.examplesPerReason {
                result.examples.append(
                    Answer(row: push.row, token: push.token, reason: reason, message: outcome.fcmError?.message)
                )
            }
        }
        return result
    }

    /// The first `count` Android pushes of the plan, in audience order.
    static func sample(_ campaign: LoadedCampaign, count: Int, sendTime: Timestamp) throws(RunRefusal) -> [PlannedPush]
    {
        struct Enough: Error {}
        var pushes: [PlannedPush] = []
        guard count > 0 else { return [] }
        do {
            _ = try Planner(campaign: campaign, sendTime: sendTime).run { push in
                guard push.platform == .android else { return }
                pushes.append(push)
                if pushes.count == count { throw Enough() }
            }
        } catch is Enough {
        } catch {
            throw RunRefusal(.refused, "the campaign could not be planned: \(error)")
        }
        return pushes
    }

    /// Sends `requests` through `pool` and waits for every answer, or for the pool to give up
    /// (credentials refused, no connection after its attempts).
    static func ask(
        _ pool: APNsConnectionPool,
        _ requests: [APNsRequest]
    ) async -> (outcomes: [APNsOutcome], failure: String?) {
        let (events, sink) = AsyncStream.makeStream(of: TransportEvent.self)
        return await withTaskGroup(of: (outcomes: [APNsOutcome], failure: String?)?.self) { group in
            // Structured: the pool runs until shut down; the reader shuts it down once it is done.
            group.addTask {
                await pool.run { sink.yield($0) }
                sink.finish()
                return nil
            }
            // The reader, the pool's sibling in this group: it submits, counts answers, and shuts
            // the pool down when every message is answered (or the pool gave up).
            group.addTask {
                var outcomes: [APNsOutcome] = []
                var failure: String?
                var failedConnects = 0
                _ = pool.submit(requests)
                for await event in events {
                    switch event {
                    case .outcomes(let answered): outcomes += answered
                    case .connectFailed(_, let error):
                        failedConnects += 1
                        if error.code == .credentials || failedConnects >= 3 { failure = error.message }
                    case .unsent(let unsent) where !unsent.isEmpty:
                        failure = failure ?? "\(unsent.count) message(s) could not be sent"
                    default: break
                    }
                    if outcomes.count >= requests.count || failure != nil { break }
                }
                pool.shutdown()
                for await _ in events {}
                return (outcomes, failure)
            }
            var result: (outcomes: [APNsOutcome], failure: String?) = ([], nil)
            for await value in group { if let value { result = value } }
            return result
        }
    }

    /// How an answer is named: `ok`, or the reason a send reports (`fcm/UNREGISTERED`, the token
    /// form of `INVALID_ARGUMENT`, a transport failure's own name).
    static func reason(of outcome: APNsOutcome) -> String {
        if outcome.status == 200 { return "ok" }
        if let error = outcome.fcmError {
            if error.reason == .invalidArgument, error.concernsToken {
                return FCMReason.prefix + "INVALID_ARGUMENT:token"
            }
            return FCMReason.prefix + error.reason.description
        }
        if let status = outcome.status { return FCMReason.prefix + FCMReason(httpStatus: status).description }
        return "no answer"
    }
}

extension FCMDryRun {
    /// Whether Google would refuse a message for a reason other than its token being dead: a
    /// problem with the message or the project, which every recipient's send would meet.
    public var refusesMessages: Bool {
        counts.keys.contains { $0 != "ok" && !FCMReason.deadTokenReasons.contains($0) }
    }

    /// Answers by reason, `ok` first, then most first.
    var sortedCounts: [(reason: String, count: Int)] {
        counts.sorted { lhs, rhs in
            if (lhs.key == "ok") != (rhs.key == "ok") { return lhs.key == "ok" }
            return lhs.value != rhs.value ? lhs.value > rhs.value : lhs.key < rhs.key
        }
        .map { ($0.key, $0.value) }
    }

    var headline: String {
        let answers = sortedCounts.map { "\($0.count) \($0.reason)" }.joined(separator: ", ")
        return "Google's dry run (validate_only, nothing delivered) of \(asked) Android message\(asked == 1 ? "" : "s")"
            + (asked == 0 ? ": the plan has no Android message" : ": \(answers)")
    }

    /// The dry run's section of a text plan; `source` names the audience for rows.
    public func text(source: String) -> String {
        var out = headline + "\n"
        for example in examples {
            out +=
                "  \(source):\(example.row): token \(PlanSummary.shortToken(example.token)): \(example.reason)"
                + (example.message.map { ": \($0.escapingControlCharacters)" } ?? "") + "\n"
        }
        if let failure { out += "  stopped: \(failure.escapingControlCharacters)\n" }
        return out
    }

    /// The same for a pull request.
    public func markdown(source: String) -> String {
        var out = "#### Google's dry run\n\n" + headline + ".\n\n"
        if !examples.isEmpty {
            out += "| row | reason | Google says |\n|---|---|---|\n"
            for example in examples {
                let message = (example.message ?? "").replacingOccurrences(of: "|", with: "\\|")
                out += "| `\(source):\(example.row)` | `\(example.reason)` | \(message) |\n"
            }
            out += "\n"
        }
        if let failure { out += "Stopped: \(failure)\n\n" }
        return out
    }

    /// `{"asked":N,"answers":{reason: count},"examples":[{row, reason, message}],"failure":…}`.
    public func json() -> String {
        let document: JSONValue = .object([
            ("asked", .integer(asked)),
            ("answers", .object(sortedCounts.map { ($0.reason, .integer($0.count)) })),
            (
                "examples",
                .array(
                    examples.map {
                        .object([
                            ("row", .integer($0.row)), ("reason", .string($0.reason)),
                            ("message", .optional($0.message)),
                        ])
                    }
                )
            ),
            ("failure", .optional(failure)),
        ])
        return document.text
    }
}
