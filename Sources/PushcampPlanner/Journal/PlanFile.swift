import Foundation
import PushcampJournal
import PushcampModel

/// What `plan --out FILE` writes and `send --plan FILE` holds a send to — the `terraform plan` /
/// `apply` habit for campaigns reviewed in pull requests: the campaign id and revision, the digest
/// of every file it is made of (campaign, templates, strings, audiences, `pushcamp.yaml`), the
/// journal status and the counts, and when it was made. A send with it goes ahead only while every
/// file still matches, and otherwise says which changed.
public struct PlanFile: Codable, Sendable, Equatable {
    public static let currentFormat = "pushcamp-plan-1"

    public struct Input: Codable, Sendable, Equatable {
        public var role: String
        public var path: String
        public var sha256: String
    }

    public struct Counts: Codable, Sendable, Equatable {
        public var read: Int
        public var invalidTokens: Int
        public var duplicates: Int
        public var filteredOut: Int
        public var excluded: Int
        public var suppressed: Int
        public var capped: Int
        public var heldOut: Int
        public var planned: Int
        public var refused: Int

        /// Each count with its name, in funnel order, as `diff` shows them.
        var rows: [(name: String, value: Int)] {
            [
                ("read", read), ("invalid tokens", invalidTokens), ("duplicates", duplicates),
                ("filtered out", filteredOut), ("excluded", excluded), ("suppressed", suppressed),
                ("capped", capped), ("held out", heldOut), ("planned", planned), ("refused", refused),
            ]
        }

        enum CodingKeys: String, CodingKey {
            case read, duplicates, excluded, suppressed, capped, planned, refused
            case invalidTokens = "invalid_tokens"
            case filteredOut = "filtered_out"
            case heldOut = "held_out"
        }
    }

    public var format: String
    public var campaign: String
    public var revision: String
    public var createdAt: String
    public var app: String
    public var environment: String
    /// The custom endpoint, when the app has one (a simulator, a test server).
    public var endpoint: String?
    public var topic: String
    /// The journal status line when the plan was made.
    public var journal: String?
    public var inputs: [Input]
    public var counts: Counts
    /// Planned per variant, and the first pushes as they would be sent: what `pushcamp diff
    /// --plan` compares with (absent from plan files made before they were kept).
    public var variants: [String: Int]?
    public var samples: [PlanSample]?

    enum CodingKeys: String, CodingKey {
        case format, campaign, revision, app, environment, endpoint, topic, journal, inputs, counts, variants, samples
        case createdAt = "created_at"
    }

    /// The plan file of `summary`, a plan of `campaign` made at `now` (seconds since 1970).
    public init(_ summary: PlanSummary, of campaign: LoadedCampaign, now: Double) {
        format = Self.currentFormat
        self.campaign = campaign.id
        revision = campaign.revision
        createdAt = Timestamp(secondsSince1970: Int64(now)).description
        app = campaign.appLabel
        environment = campaign.environmentLabel
        endpoint = campaign.app?.endpoint ?? campaign.android?.app.endpoint
        topic = campaign.topic
        journal = summary.journal?.text
        inputs = campaign.inputs.map { Input(role: $0.role.rawValue, path: $0.path, sha256: $0.sha256) }
        counts = Counts(summary)
        variants =
            summary.variants.isEmpty ? nil : Dictionary(summary.variants.map { ($0.name, $0.planned) }) { $0 + $1 }
        samples = summary.samples.map { summary.sample($0) }
    }

    /// The file's JSON: keys sorted, indented, so a plan file diffs well in review.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings and numbers cannot fail.
        return (try? encoder.encode(self)).map { $0 + Data("\n".utf8) } ?? Data()
    }

    public func write(to path: String) throws(PlanFileError) {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory.isEmpty ? "." : directory,
                withIntermediateDirectories: true
            )
        } catch {
            throw PlanFileError("cannot create the directory of \(path): \(error.localizedDescription)")
        }
        do {
            try encoded().write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw PlanFileError("cannot write the plan file \(path): \(error.localizedDescription)")
        }
    }

    /// Reads a plan file, saying what is wrong with one that is not.
    public static func read(from path: String) throws(PlanFileError) -> PlanFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PlanFileError("the plan file \(path) cannot be read (make one with `pushcamp plan --out \(path)`)")
        }
        let plan: PlanFile
        do {
            plan = try JSONDecoder().decode(PlanFile.self, from: data)
        } catch {
            throw PlanFileError("\(path) is not a pushcamp plan file (make one with `pushcamp plan --out FILE`)")
        }
        guard plan.format == currentFormat else {
            throw PlanFileError(
                "\(path) is a plan file of format '\(plan.format)', this pushcamp reads '\(currentFormat)': make it again with `pushcamp plan --out`"
            )
        }
        return plan
    }

    /// What differs between this plan and `campaign` as it is now, one phrase each; empty when the
    /// campaign is the one planned.
    public func differences(from campaign: LoadedCampaign) -> [String] {
        guard campaign.id == self.campaign else {
            return ["the plan is of campaign \(self.campaign), not \(campaign.id)"]
        }
        var differences: [String] = []
        let now = Dictionary(campaign.inputs.map { ("\($0.role.rawValue) \($0.path)", $0.sha256) }) { first, _ in first
        }
        let planned = Dictionary(inputs.map { ("\($0.role) \($0.path)", $0.sha256) }) { first, _ in first }
        for input in inputs {
            switch now["\(input.role) \(input.path)"] {
            case nil: differences.append("\(input.role) \(input.path) is no longer part of the campaign")
            case input.sha256: break
            default: differences.append("\(input.role) \(input.path) changed")
            }
        }
        for input in campaign.inputs where planned["\(input.role.rawValue) \(input.path)"] == nil {
            differences.append("\(input.role.rawValue) \(input.path) is new")
        }
        return differences
    }
}

public struct PlanFileError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

extension PlanFile.Counts {
    /// The funnel of `summary`.
    init(_ summary: PlanSummary) {
        self.init(
            read: summary.audience.read,
            invalidTokens: summary.audience.invalidTotal,
            duplicates: summary.audience.duplicates,
            filteredOut: summary.audience.filteredOut,
            excluded: summary.audience.excluded,
            suppressed: summary.suppressed,
            capped: summary.capped,
            heldOut: summary.heldOut,
            planned: summary.planned,
            refused: summary.failed
        )
    }
}
