import PushcampModel

/// A JSON Lines audience: one JSON object per line, one key of which holds the device token; the
/// other keys are attributes (strings, numbers, booleans, lists, objects). A missing or null key is an
/// absent attribute. Blank lines are skipped; a line that is not a JSON object stops the read there.
public struct JSONLinesSource: AudienceSource {
    public let path: String
    public let name: String
    public let tokenColumn: String
    public let location: SourceLocation
    /// What the file is, as errors name it.
    public var kind = "audience file"

    public init(path: String, name: String, tokenColumn: String = "token", location: SourceLocation) {
        self.path = path
        self.name = name
        self.tokenColumn = tokenColumn
        self.location = location
    }

    /// JSON Lines rows may each have their own keys, so none are known ahead of reading.
    public func columns() throws(AudienceError) -> [String]? {
        _ = try ChunkedFileReader(path: path, displayName: name, kind: kind, at: location)
        return nil
    }

    public func forEachRow(tokensOnly: Bool, _ body: (SourceRow) throws -> Void) throws {
        try forEachRow(tokensOnly: tokensOnly, problem: { throw $0 }, body)
    }

    /// Each row, as `forEachRow`; a line that is not a JSON object goes to `problem` and the scan
    /// goes on, so every bad line of a file is found in one pass.
    public func forEachRow(
        tokensOnly: Bool,
        problem bad: (AudienceError) throws -> Void,
        _ body: (SourceRow) throws -> Void
    ) throws {
        var reader = try ChunkedFileReader(path: path, displayName: name, kind: kind, at: location)
        var line = 0
        var schemas: [[String]: AttributeSchema] = [:]
        while true {
            if reader.start >= reader.end, try !reader.fill(displayName: name) { break }
            let newline = reader.buffer[reader.start..<reader.end].firstIndex(of: 0x0A)
            if newline == nil, !reader.atEOF {
                _ = try reader.fill(displayName: name)
                continue
            }
            let lineEnd = newline ?? reader.end
            let bytes = Array(reader.buffer[reader.start..<lineEnd])
            reader.start = newline.map { $0 + 1 } ?? reader.end
            line += 1
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }

            let value: AttributeValue?
            do throws(JSONParser.ParseError) {
                value = try JSONParser.parse(bytes)
            } catch {
                try bad(
                    AudienceError(
                        "invalid JSON: \(error.message)",
                        at: SourceLocation(path: name, line: line, column: error.offset + 1)
                    )
                )
                continue
            }
            guard case .object(let object) = value else {
                try bad(
                    AudienceError(
                        "each line must be a JSON object like {\"\(tokenColumn)\": \"…\"}",
                        at: SourceLocation(path: name, line: line, column: 1)
                    )
                )
                continue
            }
            var token: String?
            switch object[tokenColumn] {
            case .string(let text): token = text
            case nil: token = nil
            case .some(let other): token = other.text
            }
            let attributes: Attributes
            if tokensOnly {
                attributes = .empty
            } else {
                let schema: AttributeSchema
                if let cached = schemas[object.keys] {
                    schema = cached
                } else {
                    schema = AttributeSchema(names: object.keys)
                    if schemas.count < 1024 { schemas[object.keys] = schema }
                }
                attributes = Attributes(schema: schema, values: object.values)
            }
            try body(SourceRow(token: token, attributes: attributes, row: line))
        }
    }
}
