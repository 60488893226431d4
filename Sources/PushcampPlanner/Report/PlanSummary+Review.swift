import Crypto
import Foundation
import PushcampAPNsCore
import PushcampAudience
import PushcampModel

extension PlanSummary {
    /// Whose rendered copy a plan's samples show.
    public enum SampleKind: Sendable, Hashable {
        /// Rows of the audience (`plan`): the recipients' own values.
        case rows
        /// Rows of `audience.sample`: made-up recipients.
        case synthetic
        /// Recipients whose every attribute is its column's name (`‹first_name›`): the copy's shape
        /// without anyone's values, for a review of a real audience.
        case masked
    }

    /// The plan a review shows (`plan --review`, `pushcamp review`): made without the journal (a pull
    /// request's CI has none), every token masked as a prefix and a hash, and rendered copy of
    /// made-up recipients only: the sample's rows, or masked recipients when the real audience was
    /// read. Nothing of a real recipient but its row number is in it.
    public static func reviewed(
        _ campaign: LoadedCampaign,
        sendTime: Timestamp?,
        samples: Int,
        clock: any WallClock = SystemWallClock()
    ) async throws -> PlanSummary {
        let review = campaign.review ?? AudienceReview(read: .audience)
        var summary = try await planned(
            campaign,
            journal: nil,
            sendTime: sendTime,
            sendTimeSource: "--at",
            samples: review.isSynthetic ? samples : 0,
            clock: clock
        )
        summary.review = review
        summary.journal = nil
        summary.sampleKind = review.isSynthetic ? .synthetic : .masked
        if !review.isSynthetic, case .audience = review.read, let columns = review.columns, samples > 0 {
            let masked = campaign.maskedRecipients(columns: columns, count: samples)
            summary.samples = try Planner(
                campaign: masked,
                sendTime: summary.sendTime,
                sampleLimit: samples,
                clock: clock
            )
            .run().samples
        }
        summary.maskTokens()
        return summary
    }

    /// A token as a review shows it: its first six characters and a hash of the whole, so two
    /// mentions of one token can be matched without either being readable.
    public static func maskedToken(_ token: String) -> String {
        let digest = SHA256.hash(data: Array(token.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
        return "\(token.prefix(6))…#\(digest)"
    }

    /// Every token of the summary masked: samples (their headers and an Android body), failure and
    /// invalid-token examples.
    mutating func maskTokens() {
        for index in samples.indices {
            let token = samples[index].token
            let masked = Self.maskedToken(token)
            samples[index].token = masked
            samples[index].payload = Self.replacing(
                Array(token.utf8),
                with: Array(masked.utf8),
                in: samples[index].payload
            )
        }
        for reason in failures.keys {
            for index in failures[reason]!.examples.indices {
                failures[reason]!.examples[index].token = Self.maskedToken(failures[reason]!.examples[index].token)
            }
        }
        for index in audience.invalidExamples.indices {
            audience.invalidExamples[index].token = "(not shown)"
        }
    }

    static func replacing(_ target: [UInt8], with replacement: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        guard !target.isEmpty, bytes.count >= target.count else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if index + target.count <= bytes.count, bytes[index..<(index + target.count)].elementsEqual(target) {
                out += replacement
                index += target.count
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    /// Where a sample comes from, as its heading says it.
    func sampleOrigin(_ push: PlannedPush) -> String {
        switch sampleKind {
        case .rows: return "row \(push.row)"
        case .synthetic: return "sample row \(push.row)"
        case .masked: return "a masked recipient"
        }
    }

    /// What a review says of the audience it read, one line each: the sample planned instead, an
    /// audience or exclusions not read here, and whose copy the samples show.
    public var reviewLines: [String] {
        guard let review else { return [] }
        var lines: [String] = []
        switch review.read {
        case .audience: break
        case .sample(let path):
            let real = review.unreadPaths.first.map { " instead of \($0)" } ?? ""
            lines.append("planned against the sample audience \(path)\(real): counts are of its made-up rows")
        case .notRead(let why):
            lines.append("audience not read: \(why); nothing is counted (give the campaign an audience.sample)")
        }
        for why in review.exclusionsNotRead {
            lines.append("exclusion not read: \(why); the counts include whom it would exclude")
        }
        lines.append(
            subscriptionRow == nil
                ? "made without the journal: no dead token or frequency cap is applied"
                : "made without the journal: no dead token or frequency cap is applied, and no row has an App Store subscription"
        )
        switch sampleKind {
        case .synthetic where !samples.isEmpty: lines.append("rendered for the sample's made-up recipients")
        case .masked where !samples.isEmpty:
            lines.append("rendered for a masked recipient: each attribute shows its column's name, ‹like_this›")
        default: break
        }
        return lines
    }
}

extension LoadedCampaign {
    /// The campaign with an audience of `count` masked recipients per platform it sends to: every
    /// attribute the audience has is its column's name (`‹first_name›`), the platform column says
    /// the platform, tokens are made up. No filter, exclusion, holdout or frequency cap, so each is
    /// rendered: its copy's shape for a review, without anyone's values.
    func maskedRecipients(columns: [String], count: Int) -> LoadedCampaign {
        let tokenColumn = audience.source.tokenColumn
        let platformColumn = audience.platforms.column
        var rows: [InlineRow] = []
        for platform in Platform.allCases where platforms.contains(platform) {
            for index in 0..<count {
                let seed = SHA256.hash(data: Array("masked-\(platform.rawValue)-\(index)".utf8))
                    .map { String(format: "%02x", $0) }.joined()
                let token = platform == .ios ? seed : "masked\(index):APA91b\(seed)"
                var values: [(name: String, value: AttributeValue)] = [(tokenColumn, .string(token))]
                values.append((platformColumn, .string(platform.rawValue)))
                for column in columns where column != tokenColumn && column != platformColumn {
                    values.append((column, .string("‹\(column)›")))
                }
                rows.append(InlineRow(values: values, line: rows.count + 1))
            }
        }
        var copy = self
        copy.audience = AudienceStream(
            source: InlineSource(rows: rows, name: "a masked recipient", tokenColumn: tokenColumn),
            filter: nil,
            exclusions: [],
            platforms: audience.platforms
        )
        copy.holdout = Share(basisPoints: 0)
        copy.frequencyCap = nil
        copy.subscriptions = nil
        return copy
    }
}
