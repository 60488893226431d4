import PushcampModel

/// The audience as the planner sees it: a source's rows with tokens checked and normalized,
/// duplicates dropped (the first row of a token wins), the `where:` filter applied and exclusion
/// sources removed, in that order, each step counted.
///
/// Memory stays flat as the audience grows: duplicates are found in two passes over the source, the
/// first filling a fixed-size Bloom filter with token hashes and noting the hashes it saw twice, the
/// second checking only those candidates exactly. Exclusion sources are held as a set of tokens, so
/// their memory grows with the exclusion lists (not with the audience).
public struct AudienceStream: Sendable {
    public let source: any AudienceSource
    public let filter: FilterExpression?
    public let exclusions: [any AudienceSource]
    /// Whether its source or an exclusion can change without any file changing (`AudienceSource.isLive`).
    public var isLive: Bool { source.isLive || exclusions.contains { $0.isLive } }
    /// How each row's platform is decided; rows of a platform the campaign does not send to are
    /// passed over (and counted) before the duplicate check.
    public let platforms: PlatformRule

    public init(
        source: any AudienceSource,
        filter: FilterExpression?,
        exclusions: [any AudienceSource],
        platforms: PlatformRule = .iosOnly
    ) {
        self.source = source
        self.filter = filter
        self.exclusions = exclusions
        self.platforms = platforms
    }

    /// Streams the recipients to `body` and returns the counts. `candidates` are the source's
    /// `duplicateCandidates()` when the caller has them already (another pass over the same
    /// source); else they are found first.
    @discardableResult
    public func forEachRecipient(
        candidates known: Set<UInt64>? = nil,
        _ body: (Recipient) throws -> Void
    ) throws -> AudienceCounts {
        let excluded = try loadExclusions()
        let candidates = try known ?? duplicateCandidates()
        var seenCandidates: Set<String> = []
        var counts = AudienceCounts()
        try source.forEachRow(tokensOnly: false) { row in
            counts.read += 1
            let raw = row.token ?? ""
            let platform: Platform
            switch platforms.platform(value: row.attributes[platforms.column]?.text, token: raw) {
            case .platform(let decided): platform = decided
            case .unknown:
                counts.invalid[.unknownPlatform, default: 0] += 1
                if counts.invalidExamples.count < AudienceCounts.exampleLimit {
                    let location = SourceLocation(path: source.name, line: row.row)
                    counts.invalidExamples.append(
                        .init(location: location, token: DeviceToken.masked(raw), problem: .unknownPlatform)
                    )
                }
                return
            }
            guard platforms.targets.contains(platform) else {
                counts.otherPlatform[platform, default: 0] += 1
                return
            }
            let token: String
            switch platform.normalize(raw) {
            case .success(let normalized): token = normalized
            case .failure(let problem):
                try Self.refusePEM(row, in: source)
                counts.invalid[problem, default: 0] += 1
                if counts.invalidExamples.count < AudienceCounts.exampleLimit {
                    let location = SourceLocation(path: source.name, line: row.row)
                    counts.invalidExamples.append(
                        .init(location: location, token: DeviceToken.masked(row.token ?? ""), problem: problem)
                    )
                }
                return
            }
            if !candidates.isEmpty, candidates.contains(Self.duplicateHash(token)) {
                guard seenCandidates.insert(token).inserted else {
                    counts.duplicates += 1
                    return
                }
            }
            if let filter, !filter.matches(row.attributes) {
                counts.filteredOut += 1
                return
            }
            if excluded.contains(token) {
                counts.excluded += 1
                return
            }
            counts.passed += 1
            counts.count(platform)
            try body(Recipient(token: token, attributes: row.attributes, row: row.row, platform: platform))
        }
        return counts
    }

    /// A key or certificate read as an audience (a PEM block where a token should be) is refused
    /// at once, before any of it reaches a plan or a report.
    static func refusePEM(_ row: SourceRow, in source: any AudienceSource) throws(AudienceError) {
        guard let raw = row.token, DeviceToken.isPEMBoundary(raw) else { return }
        throw AudienceError(
            "audience file '\(source.name)' holds a PEM block (a private key or a certificate), not device tokens; nothing of it is shown",
            at: SourceLocation(path: source.name, line: row.row)
        )
    }

    /// Hashes seen more than once in a first, token-only pass (true duplicates and rare false maybes).
    public func duplicateCandidates() throws -> Set<UInt64> {
        var bloom = BloomFilter()
        var candidates: Set<UInt64> = []
        try source.forEachRow(tokensOnly: true) { row in
            guard let raw = row.token, let token = Self.anyToken(raw) else {
                try Self.refusePEM(row, in: source)
                return
            }
            let hash = Self.duplicateHash(token)
            if bloom.insert(hash) { candidates.insert(hash) }
        }
        return candidates
    }

    /// A token normalized as its shape says (APNs device tokens in lowercase, FCM registration
    /// tokens as written), or nil when it is neither: what the duplicate pass and exclusion lists
    /// key on, where no row's platform column is read.
    static func anyToken(_ raw: String) -> String? {
        // An APNs token first: most audiences hold only those, and that check allocates nothing.
        if case .success(let token) = DeviceToken.normalize(raw) { return token }
        return try? Platform.android.normalize(raw).get()
    }

    /// The hash duplicates are found by: never stored, so unlike `StableHash` (FNV-1a, one byte at
    /// a time, kept in the journal) it can take eight bytes per step. Runs twice per row.
    @inline(__always)
    static func duplicateHash(_ token: String) -> UInt64 {
        var token = token
        return token.withUTF8 { bytes in
            var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
            var index = 0
            let raw = UnsafeRawBufferPointer(bytes)
            while index + 8 <= raw.count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
                hash ^= hash >> 29
                index += 8
            }
            var tail: UInt64 = 0
            while index < raw.count {
                tail = tail << 8 | UInt64(raw[index])
                index += 1
            }
            return StableHash.mix(hash ^ tail)
        }
    }

    func loadExclusions() throws -> Set<String> {
        var tokens: Set<String> = []
        for exclusion in exclusions {
            try exclusion.forEachRow(tokensOnly: true) { row in
                if let raw = row.token, let token = Self.anyToken(raw) {
                    tokens.insert(token)
                } else {
                    try Self.refusePEM(row, in: exclusion)
                }
            }
        }
        return tokens
    }
}
