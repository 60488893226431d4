/// What happened to the rows of an audience on their way to the planner.
public struct AudienceCounts: Sendable, Hashable {
    /// Rows read from the source.
    public var read = 0
    /// Rows whose token is not a device token, by problem.
    public var invalid: [DeviceToken.Problem: Int] = [:]
    /// The first invalid rows, located, for the report.
    public var invalidExamples: [InvalidRow] = []
    /// Rows whose token appeared on an earlier row (the first row wins).
    public var duplicates = 0
    /// Rows the `where:` filter left out.
    public var filteredOut = 0
    /// Rows whose token is in an exclusion source.
    public var excluded = 0
    /// Rows handed on to the planner.
    public var passed = 0
    /// Rows handed on, by platform.
    public var platforms: [Platform: Int] {
        var counts: [Platform: Int] = [:]
        if passedIOS > 0 { counts[.ios] = passedIOS }
        if passed - passedIOS > 0 { counts[.android] = passed - passedIOS }
        return counts
    }
    /// Rows handed on to iOS (counted per row without hashing: this runs once per recipient).
    @usableFromInline var passedIOS = 0

    /// A row handed on to the planner for `platform` (the stream counts `passed` itself).
    @inlinable public mutating func count(_ platform: Platform) {
        if platform == .ios { passedIOS += 1 }
    }
    /// Rows of a platform the campaign does not send to (an Android row of an iOS campaign), passed
    /// over before anything else.
    public var otherPlatform: [Platform: Int] = [:]

    public var invalidTotal: Int { invalid.values.reduce(0, +) }

    public static let exampleLimit = 5

    public struct InvalidRow: Sendable, Hashable {
        public var location: SourceLocation
        public var token: String
        public var problem: DeviceToken.Problem

        public init(location: SourceLocation, token: String, problem: DeviceToken.Problem) {
            self.location = location
            self.token = token
            self.problem = problem
        }
    }

    public init() {}
}
