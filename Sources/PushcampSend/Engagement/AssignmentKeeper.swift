import PushcampJournal
import PushcampModel
import PushcampPlanner

/// Keeps a run's assignment in the journal — every recipient's place in the plan, apns-id, person,
/// arm and locale — so engagement is matched, and the readout counted, without the campaign's
/// files: a readout survives a regenerated audience export, a fixed description, a new revision.
public enum AssignmentKeeper {
    /// Recipients kept per transaction.
    public static let pageSize = 5_000

    /// `run`'s kept assignment; when it has none (or only part of one: its keeper was stopped),
    /// plans `campaign` once more (reading the audience, rendering nothing) and keeps every
    /// recipient, then the tally. `campaign` must be the run's revision: the caller checks.
    public static func keep(
        _ campaign: LoadedCampaign,
        run: RunRecord,
        in journal: any EngagementStore
    ) async throws -> AssignmentHeader {
        if let header = try await journal.assignmentHeader(of: run.id), header.isComplete { return header }
        var header = AssignmentHeader(
            variants: campaign.variants.map(\.name),
            locales: [],
            holdout: campaign.holdout.basisPoints > 0,
            userKey: campaign.userKey,
            readout: campaign.readout
        )
        // Written first: the run says whom it assigns by even while its recipients are being kept.
        try await journal.keepAssignmentHeader(header, of: run.id)
        let variants = Dictionary(uniqueKeysWithValues: header.variants.enumerated().map { ($1, $0) })
        let planner = Planner(campaign: campaign)
        // Locales get their index as they first appear, in plan order: the same on every pass.
        header.locales = try await ThreadPages.run(name: "pushcamp-assignment") {
            (emit: ([KeptAssignment]) throws -> Void) in
            var locales: [String: Int] = [:]
            var page: [KeptAssignment] = []
            page.reserveCapacity(pageSize)
            try planner.forEachAssignment { _, assignment in
                let locale = assignment.locale.map { name in
                    if let index = locales[name] { return index }
                    locales[name] = locales.count
                    return locales.count - 1
                }
                page.append(
                    KeptAssignment(
                        seq: assignment.seq,
                        id: AssignmentID(assignment.apnsID),
                        person: assignment.person,
                        variant: assignment.variant.flatMap { variants[$0] },
                        locale: locale
                    )
                )
                if page.count == pageSize {
                    try emit(page)
                    page.removeAll(keepingCapacity: true)
                }
            }
            if !page.isEmpty { try emit(page) }
            return locales.sorted { $0.value < $1.value }.map(\.key)
        } consume: { page in
            try await journal.keepAssignments(page, of: run.id)
        }
        header.tally = try await journal.sealAssignments(of: run.id)
        try await journal.keepAssignmentHeader(header, of: run.id)
        return header
    }
}

extension LoadedCampaign {
    /// Whether a send of this campaign keeps its assignment in the journal before its first push:
    /// a test (variants, a holdout, or a `readout:`), or a campaign naming people, sent as itself
    /// (not a replay or a rehearsal). Other runs keep it when their engagement is first imported.
    public func keepsAssignment(as kind: SendRun.Kind) -> Bool {
        guard broadcast == nil, variants.count > 1 || holdout.basisPoints > 0 || readout != nil || userKey != nil
        else { return false }
        switch kind {
        case .send, .slot, .trigger: return true
        case .replay, .rehearsal: return false
        }
    }
}

extension AssignmentID {
    init(_ id: APNsID) {
        self.init(high: Int64(bitPattern: id.bytes.0), low: Int64(bitPattern: id.bytes.1))
    }

    /// The identifier an engagement row names (36 characters, 8-4-4-4-12 hex, any case); nil
    /// when `text` is not one.
    init?(text: String) {
        var halves: (UInt64, UInt64) = (0, 0)
        var digits = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case 0x30...0x39: value = byte - 0x30
            case 0x61...0x66: value = byte - 0x61 + 10
            case 0x41...0x46: value = byte - 0x41 + 10
            case 0x2D where [8, 12, 16, 20].contains(digits): continue
            default: return nil
            }
            if digits < 16 {
                halves.0 = halves.0 << 4 | UInt64(value)
            } else {
                halves.1 = halves.1 << 4 | UInt64(value)
            }
            digits += 1
        }
        guard digits == 32, text.utf8.count == 36 else { return nil }
        self.init(high: Int64(bitPattern: halves.0), low: Int64(bitPattern: halves.1))
    }
}
