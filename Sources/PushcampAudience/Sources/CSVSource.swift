import PushcampModel

/// A CSV audience (RFC 4180): a header row naming the columns, one of which holds device tokens;
/// every other column is an attribute. Quoted fields may hold delimiters, quotes (`""`) and line
/// breaks. An empty cell is an absent attribute. A row with more or fewer fields than the header, a
/// quote that never closes or bytes that are not UTF-8 stop the read with the line they are on.
public struct CSVSource: AudienceSource {
    public let path: String
    public let name: String
    public let tokenColumn: String
    public let delimiter: UInt8
    /// Where the campaign names this source, for problems with the file as a whole.
    public let location: SourceLocation

    public init(
        path: String,
        name: String,
        tokenColumn: String = "token",
        delimiter: UInt8 = 0x2C,
        location: SourceLocation
    ) {
        self.path = path
        self.name = name
        self.tokenColumn = tokenColumn
        self.delimiter = delimiter
        self.location = location
    }

    public func columns() throws(AudienceError) -> [String]? {
        var header: [String]?
        do {
            try scan(tokensOnly: true, stopAfterHeader: true) { names in
                header = names
            } body: { _ in
            }
        } catch let error as AudienceError {
            throw error
        } catch {
            throw AudienceError("\(error)", at: location)
        }
        return header
    }

    public func forEachRow(tokensOnly: Bool, _ body: (SourceRow) throws -> Void) throws {
        try scan(tokensOnly: tokensOnly, stopAfterHeader: false, header: { _ in }, body: body)
    }

    struct Field {
        var start: Int
        var end: Int
        var quoted: Bool
    }

    enum RecordScan {
        case complete(next: Int, lines: Int)
        case needMore
        case unterminatedQuote
    }

    /// Finds the fields of the record at `start`; `needMore` when the record runs past `end`.
    static func scanRecord(
        _ bytes: UnsafeBufferPointer<UInt8>,
        start: Int,
        end: Int,
        atEOF: Bool,
        delimiter: UInt8,
        fields: inout [Field]
    ) -> RecordScan {
        fields.removeAll(keepingCapacity: true)
        var index = start
        var lines = 0
        var fieldStart = start
        while true {
            // One field.
            if index < end, bytes[index] == 0x22 {
                index += 1
                let contentStart = index
                while true {
                    guard index < end else { return atEOF ? .unterminatedQuote : .needMore }
                    let byte = bytes[index]
                    if byte == 0x22 {
                        if index + 1 < end, bytes[index + 1] == 0x22 {
                            index += 2
                            continue
                        }
                        if index + 1 == end, !atEOF { return .needMore }
                        break
                    }
                    if byte == 0x0A { lines += 1 }
                    index += 1
                }
                fields.append(Field(start: contentStart, end: index, quoted: true))
                index += 1
                // Text after a closing quote up to the delimiter is kept out of the value.
                while index < end, bytes[index] != delimiter, bytes[index] != 0x0A, bytes[index] != 0x0D { index += 1 }
            } else {
                while index < end {
                    let byte = bytes[index]
                    if byte == delimiter || byte == 0x0A || byte == 0x0D { break }
                    index += 1
                }
                fields.append(Field(start: fieldStart, end: index, quoted: false))
            }
            guard index < end else {
                if !atEOF { return .needMore }
                return .complete(next: index, lines: lines + 1)
            }
            let byte = bytes[index]
            if byte == delimiter {
                index += 1
                fieldStart = index
                continue
            }
            // End of record: \n, \r\n or \r.
            if byte == 0x0D {
                if index + 1 < end {
                    index += bytes[index + 1] == 0x0A ? 2 : 1
                } else if atEOF {
                    index += 1
                } else {
                    return .needMore
                }
            } else {
                index += 1
            }
            return .complete(next: index, lines: lines + 1)
        }
    }

    func scan(
        tokensOnly: Bool,
        stopAfterHeader: Bool,
        header: ([String]) -> Void,
        body: (SourceRow) throws -> Void
    ) throws {
        var reader = try ChunkedFileReader(path: path, displayName: name, at: location)
        _ = try reader.fill(displayName: name)
        // A UTF-8 byte order mark is not part of the first column's name.
        if reader.end >= 3, reader.buffer[0] == 0xEF, reader.buffer[1] == 0xBB, reader.buffer[2] == 0xBF {
            reader.start = 3
        }
        var fields: [Field] = []
        fields.reserveCapacity(32)
        var line = 1
        var schema: AttributeSchema?
        var tokenIndex = 0
        var columnCount = 0

        while true {
            if reader.start >= reader.end, try !reader.fill(displayName: name) { break }
            let scanned = reader.buffer.withUnsafeBufferPointer { bytes in
                Self.scanRecord(
                    bytes,
                    start: reader.start,
                    end: reader.end,
                    atEOF: reader.atEOF,
                    delimiter: delimiter,
                    fields: &fields
                )
            }
            let next: Int
            let lines: Int
            switch scanned {
            case .needMore:
                _ = try reader.fill(displayName: name)
                continue
            case .unterminatedQuote:
                throw AudienceError("a quoted field opened on this line is never closed", at: at(line))
            case .complete(let nextIndex, let lineCount):
                next = nextIndex
                lines = lineCount
            }
            let recordLine = line
            defer {
                reader.start = next
                line += lines
            }
            // A blank line is no record.
            if fields.count == 1, fields[0].start == fields[0].end, !fields[0].quoted { continue }

            guard let currentSchema = schema else {
                var names: [String] = []
                for field in fields {
                    names.append(try text(reader.buffer, field, line: recordLine))
                }
                try checkHeader(names, line: recordLine)
                header(names)
                if stopAfterHeader { return }
                tokenIndex = names.firstIndex(of: tokenColumn)!
                columnCount = names.count
                schema = AttributeSchema(names: names)
                continue
            }
            guard fields.count == columnCount else {
                throw AudienceError(
                    "row has \(fields.count) field\(fields.count == 1 ? "" : "s") but the header has \(columnCount); check quoting and delimiters on this line",
                    at: at(recordLine)
                )
            }
            var values = [AttributeValue?](repeating: nil, count: tokensOnly ? 0 : columnCount)
            var token: String?
            for index in 0..<columnCount {
                let field = fields[index]
                if tokensOnly, index != tokenIndex { continue }
                if field.start == field.end { continue }
                let value = try text(reader.buffer, field, line: recordLine)
                if index == tokenIndex { token = value }
                if !tokensOnly { values[index] = .string(value) }
            }
            let attributes = tokensOnly ? Attributes.empty : Attributes(schema: currentSchema, values: values)
            try body(SourceRow(token: token, attributes: attributes, row: recordLine))
        }
        if schema == nil {
            throw AudienceError(
                "audience file '\(name)' is empty; it needs a header row naming a '\(tokenColumn)' column",
                at: location
            )
        }
    }

    func at(_ line: Int) -> SourceLocation { SourceLocation(path: name, line: line) }

    func text(_ buffer: [UInt8], _ field: Field, line: Int) throws(AudienceError) -> String {
        // Through a buffer pointer, so the call is specialized (no generic metadata looked up per
        // cell); ASCII, the common case, needs no validation.
        let decoded: String? = buffer.withUnsafeBufferPointer { all in
            let bytes = UnsafeBufferPointer(rebasing: all[field.start..<field.end])
            if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
            return String(validating: bytes, as: UTF8.self)
        }
        guard let text = decoded else {
            throw AudienceError("field is not valid UTF-8 (save the file as UTF-8)", at: at(line))
        }
        if field.quoted, buffer[field.start..<field.end].contains(0x22) {
            return text.replacingOccurrences(of: "\"\"", with: "\"")
        }
        return text
    }

    func checkHeader(_ names: [String], line: Int) throws(AudienceError) {
        var seen: Set<String> = []
        for name in names {
            if name.isEmpty { throw AudienceError("the header has an empty column name", at: at(line)) }
            if !seen.insert(name).inserted {
                throw AudienceError("the header names column '\(name)' twice", at: at(line))
            }
        }
        guard names.contains(tokenColumn) else {
            throw AudienceError(
                "the header has no '\(tokenColumn)' column\(Suggestion.didYouMean(tokenColumn, in: names)) (columns: \(names.joined(separator: ", ")); set token_column to use another)",
                at: at(line)
            )
        }
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
