import PushcampAudience
import PushcampModel

/// One row of an engagement file or post: who (by `apns-id` or the audience's user key), what
/// (`opened`, `converted`…) and when.
public struct EngagementRow: Sendable, Hashable {
    public enum Recipient: Sendable, Hashable {
        /// The push's `apns-id`, lowercase (what the app sees as the notification's identifier).
        case apnsID(String)
        /// The value of the campaign's `audience.user_key` attribute.
        case user(String)
    }

    public var recipient: Recipient
    public var event: String
    /// Seconds since 1970.
    public var at: Double
    /// 1-based line (file) or item (post) it came from.
    public var line: Int
    /// What it was worth (a purchase's amount, in the currency the team reports in); nil when the
    /// row gives none.
    public var value: Double?

    public init(recipient: Recipient, event: String, at: Double, line: Int, value: Double? = nil) {
        self.recipient = recipient
        self.event = event
        self.at = at
        self.line = line
        self.value = value
    }

    /// The names a row's fields go by: `apns_id` (or `apns-id`), `user`, `event`, `time`, `value`.
    public static let fields = ["apns_id", "apns-id", "user", "event", "time", "value"]

    /// Values beyond this (either sign) are a mistake: cents for units, or an identifier.
    static let valueLimit = 1e12

    /// Checks one row's fields; the error names the field, never its value (it may be personal data).
    public static func make(
        apnsID: AttributeValue?,
        user: AttributeValue?,
        event: AttributeValue?,
        time: AttributeValue?,
        value: AttributeValue? = nil,
        line: Int
    ) -> Result<EngagementRow, ValueError> {
        let recipient: Recipient
        switch (apnsID, user) {
        case (nil, nil): return .failure(ValueError("the row names no recipient: give 'apns_id' or 'user'"))
        case (.some, .some): return .failure(ValueError("give 'apns_id' or 'user', not both"))
        case (.string(let text)?, nil):
            guard Self.isUUID(text) else {
                return .failure(ValueError("'apns_id' is not a UUID (8-4-4-4-12 hex digits)"))
            }
            recipient = .apnsID(text.lowercased())
        case (.some, nil): return .failure(ValueError("'apns_id' is not a UUID (8-4-4-4-12 hex digits)"))
        case (nil, let value?):
            switch value {
            case .string(let text) where !text.isEmpty && text.utf8.count <= 256: recipient = .user(text)
            case .integer(let number): recipient = .user(String(number))
            default: return .failure(ValueError("'user' must be a non-empty text or whole number of at most 256 bytes"))
            }
        }
        guard case .string(let name)? = event else {
            return .failure(ValueError("'event' is missing: name what happened, like opened or converted"))
        }
        guard Self.isEventName(name) else {
            return .failure(
                ValueError("'event' must be 1-64 lowercase letters, digits, '_' or '-', starting with a letter")
            )
        }
        let seconds: Double
        switch time {
        case nil: return .failure(ValueError("'time' is missing: when it happened, like 2027-03-20T09:00:00Z"))
        case .integer(let number)?: seconds = Double(number)
        case .number(let number)?: seconds = number
        case .string(let text)?:
            if let number = Double(text), number.isFinite {
                seconds = number
            } else if case .success(let timestamp) = Timestamp.parse(text) {
                seconds = Double(timestamp.secondsSince1970)
            } else {
                return .failure(
                    ValueError("'time' is not a time: write 2027-03-20T09:00:00Z or seconds since 1970")
                )
            }
        default: return .failure(ValueError("'time' is not a time: write 2027-03-20T09:00:00Z or seconds since 1970"))
        }
        // Years 2001 to 2286: a time in milliseconds, or no time at all, is a mistake.
        guard seconds >= 978_307_200, seconds < 10_000_000_000 else {
            return .failure(ValueError("'time' is out of range: seconds since 1970 (not milliseconds), after 2001"))
        }
        let amount: Double?
        switch value {
        case nil: amount = nil
        case .integer(let number)?: amount = Double(number)
        case .number(let number)?: amount = number
        case .string(let text)? where text.isEmpty: amount = nil
        case .string(let text)?: amount = Double(text) ?? .nan
        default: amount = .nan
        }
        if let amount, !amount.isFinite || abs(amount) >= valueLimit {
            return .failure(
                ValueError("'value' is not an amount: write it like 4.99 (a dot for decimals, no currency sign)")
            )
        }
        return .success(EngagementRow(recipient: recipient, event: name, at: seconds, line: line, value: amount))
    }

    static func isEventName(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...64).contains(bytes.count), (0x61...0x7A).contains(bytes[0]) else { return false }
        return bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D }
    }

    static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == 0x2D else { return false }
            } else {
                guard (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte)
                else { return false }
            }
        }
        return true
    }
}

/// An engagement file: CSV with a header (`apns_id` or `user`, `event`, `time`), or JSON Lines
/// (`.jsonl`, `.ndjson`) with the same keys. Read as a stream.
public struct EngagementFile: Sendable {
    public var path: String
    /// As diagnostics name it.
    public var display: String

    public init(path: String, display: String) {
        self.path = path
        self.display = display
    }

    /// What errors call the file.
    static let kind = "events file"

    var isJSONLines: Bool {
        let lowered = path.lowercased()
        return lowered.hasSuffix(".jsonl") || lowered.hasSuffix(".ndjson") || lowered.hasSuffix(".json")
    }

    var csv: CSVSource {
        var source = CSVSource(path: path, name: display, tokenColumn: "event", location: SourceLocation(path: display))
        source.kind = Self.kind
        return source
    }

    var jsonLines: JSONLinesSource {
        var source = JSONLinesSource(
            path: path,
            name: display,
            tokenColumn: "event",
            location: SourceLocation(path: display)
        )
        source.kind = Self.kind
        return source
    }

    /// Calls `good` with each well-formed row and `bad` with each problem (located at its line),
    /// in file order. Throws when the file cannot be read at all.
    public func forEachRow(
        _ good: (EngagementRow) throws -> Void,
        bad: (Diagnostic) throws -> Void
    ) throws {
        if !isJSONLines, let columns = try csv.columns() {
            let known = Set(EngagementRow.fields)
            for column in columns where !known.contains(column) {
                throw AudienceError(
                    "unknown column '\(column)': an engagement file has apns_id or user, event, time and value",
                    at: SourceLocation(path: display, line: 1)
                )
            }
        }
        // A row that cannot be read is one more bad row: the scan goes on, so all are found.
        let unreadable: (AudienceError) throws -> Void = { error in try bad(error.diagnostic) }
        let each: (SourceRow) throws -> Void = { row in
            let attributes = row.attributes
            let result = EngagementRow.make(
                apnsID: attributes["apns_id"] ?? attributes["apns-id"],
                user: attributes["user"],
                event: row.token.map { .string($0) },
                time: attributes["time"],
                value: attributes["value"],
                line: row.row
            )
            switch result {
            case .success(let parsed): try good(parsed)
            case .failure(let error): try bad(.error(error.message, at: SourceLocation(path: display, line: row.row)))
            }
        }
        if isJSONLines {
            try jsonLines.forEachRow(tokensOnly: false, problem: unreadable, each)
        } else {
            try csv.forEachRow(tokensOnly: false, problem: unreadable, each)
        }
    }
}
