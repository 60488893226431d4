import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend

/// `POST /api/engagement`: engagement events from a backend, as `pushcamp engagement import`
/// records them from a file (the same checks, the same matching, once per recipient and event).
///
/// The body is one JSON object: `campaign` (its id), `run` (optional: the campaign's latest run),
/// and `events`, up to `eventLimit` objects with `apns_id` or `user`, `event` and `time`. A body
/// with any bad event is refused whole (400, each problem by its index); nothing is recorded.
public enum EngagementPost {
    public static let bodyLimit = 1 << 20
    public static let eventLimit = 10_000

    public struct Answer: Error, Sendable, Hashable {
        public var status: Int
        public var body: String
    }

    struct Request {
        var campaign: String
        var run: Int64?
        var rows: [EngagementRow]
    }

    static func error(_ status: Int, _ messages: [String]) -> Answer {
        Answer(status: status, body: JSONValue.object([("errors", .array(messages.map { .string($0) }))]).text + "\n")
    }

    /// The request, or each problem with it (never echoing a value).
    static func parse(_ bytes: [UInt8]) -> Result<Request, Answer> {
        guard bytes.count <= bodyLimit else {
            return .failure(
                error(413, ["the body is over \(bodyLimit) bytes: post at most \(eventLimit) events at a time"])
            )
        }
        let parsed: AttributeValue?
        do throws(JSONParser.ParseError) {
            parsed = try JSONParser.parse(bytes)
        } catch {
            return .failure(Self.error(400, ["the body is not JSON: \(error.message) at byte \(error.offset)"]))
        }
        guard case .object(let object)? = parsed else {
            return .failure(error(400, ["the body must be a JSON object with campaign and events"]))
        }
        var problems: [String] = []
        for key in object.keys where !["campaign", "run", "events"].contains(key) {
            problems.append("unknown key '\(key)': the body has campaign, run and events")
        }
        guard case .string(let campaign)? = object["campaign"], !campaign.isEmpty else {
            return .failure(error(400, problems + ["'campaign' is missing: the campaign's id"]))
        }
        var run: Int64?
        switch object["run"] {
        case nil: break
        case .integer(let number)? where number > 0: run = number
        default: problems.append("'run' must be a run's number")
        }
        guard case .list(let items)? = object["events"], !items.isEmpty else {
            return .failure(error(400, problems + ["'events' must be a non-empty list"]))
        }
        guard items.count <= eventLimit else {
            return .failure(error(413, ["\(items.count) events: post at most \(eventLimit) at a time"]))
        }
        var rows: [EngagementRow] = []
        for (index, item) in items.enumerated() {
            guard case .object(let fields) = item else {
                problems.append(
                    "events[\(index)]: an event is an object with apns_id or user, event, time and optionally value"
                )
                continue
            }
            if let unknown = fields.keys.first(where: { !EngagementRow.fields.contains($0) }) {
                problems.append(
                    "events[\(index)]: unknown key '\(unknown)': an event has apns_id or user, event, time and value"
                )
                continue
            }
            switch EngagementRow.make(
                apnsID: fields["apns_id"] ?? fields["apns-id"],
                user: fields["user"],
                event: fields["event"],
                time: fields["time"],
                value: fields["value"],
                line: index
            ) {
            case .success(let row): rows.append(row)
            case .failure(let problem): problems.append("events[\(index)]: \(problem.message)")
            }
        }
        guard problems.isEmpty else {
            return .failure(
                error(
                    400,
                    Array(problems.prefix(50)) + (problems.count > 50 ? ["… and \(problems.count - 50) more"] : [])
                )
            )
        }
        return .success(Request(campaign: campaign, run: run, rows: rows))
    }

    /// Checks, matches and records `bytes`; answers what `pushcamp engagement import` prints.
    static func handle(
        _ bytes: [UInt8],
        journal: any Journal,
        loadCampaign: (String) -> LoadedCampaign?,
        now: Double
    ) async -> Answer {
        let request: Request
        switch parse(bytes) {
        case .success(let parsed): request = parsed
        case .failure(let answer): return answer
        }
        guard let campaign = loadCampaign(request.campaign) else {
            return error(404, ["no valid campaign '\(request.campaign)' in the watched folders"])
        }
        do {
            let matcher: EngagementImport
            do {
                matcher = try await EngagementImport.forRun(request.run.map(RunID.init), of: campaign, in: journal)
            } catch let refusal as EngagementImport.Refusal {
                return Self.error(refusal.noSuchRun ? 404 : 409, [refusal.description])
            }
            let record = matcher.run
            var outcome = EngagementImport.Outcome()
            var start = 0
            while start < request.rows.count {
                let batch = Array(request.rows[start..<min(request.rows.count, start + EngagementImport.batchSize)])
                outcome = outcome + (try await matcher.record(batch, in: journal, now: now))
                start += batch.count
            }
            let body: JSONValue = .object([
                ("run", .integer(Int(record.id.rawValue))), ("recorded", .integer(outcome.recorded)),
                ("already_recorded", .integer(outcome.alreadyRecorded)), ("not_sent", .integer(outcome.notSent)),
                ("unmatched", .integer(outcome.unmatched)), ("outside_window", .integer(outcome.outsideWindow)),
            ])
            return Answer(status: 200, body: body.text + "\n")
        } catch let refusal as EngagementImport.Refusal {
            return error(409, [refusal.description])
        } catch let failure as JournalError {
            return error(
                503,
                ["the journal cannot be written: \(failure.message); nothing more was recorded, post again"]
            )
        } catch {
            return Self.error(503, ["the audience cannot be read: \(error)"])
        }
    }
}
