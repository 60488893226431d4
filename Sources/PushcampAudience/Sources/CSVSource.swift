import PushcampModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// What the file is, as errors name it.
    public var kind = "audience file"

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

    /// Each row, as `forEachRow`; a row that cannot be read (its fields' count, bytes that are not
    /// UTF-8) goes to `problem` and the scan goes on, so every bad row of a file is found in one
    /// pass. A problem with the whole file (its header, a quote never closed) still throws.
    public func forEachRow(
        tokensOnly: Bool,
        problem: (AudienceError) throws -> Void,
        _ body: (SourceRow) throws -> Void
    ) throws {
        try scan(tokensOnly: tokensOnly, stopAfterHeader: false, problem: problem, header: { _ in }, body: body)
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

    /// A record read for its token alone, by `tokenLine`.
    enum TokenLine {
        /// The token field's bytes, how many fields the line has, and where the next record starts.
        case record(token: Range<Int>, fields: Int, next: Int)
        case blank(next: Int)
    }

    /// The token-only pass's fast path: a whole line in the buffer with no quote and no stray CR
    /// (nearly every line of an export) is split with `memchr` instead of byte by byte. Nil sends the
    /// record to `scanRecord`, which handles everything (quotes, line breaks in fields, CR endings,
    /// a record cut by the buffer's end).
    static func tokenLine(
        _ bytes: UnsafeBufferPointer<UInt8>,
        start: Int,
        end: Int,
        delimiter: UInt8,
        tokenIndex: Int
    ) -> TokenLine? {
        guard start < end, let base = bytes.baseAddress.map({ UnsafeRawPointer($0 + start) }),
            let newline = memchr(base, 0x0A, end - start)
        else { return nil }
        let lineEnd = base.distance(to: UnsafeRawPointer(newline))
        var contentEnd = lineEnd
        if contentEnd > 0, base.load(fromByteOffset: contentEnd - 1, as: UInt8.self) == 0x0D { contentEnd -= 1 }
        if memchr(base, 0x22, contentEnd) != nil || memchr(base, 0x0D, contentEnd) != nil { return nil }
        // Other bytes than ASCII need UTF-8 checks per field: the full scan does them.
        guard isASCII(base, count: contentEnd) else { return nil }
        let next = start + lineEnd + 1
        if contentEnd == 0 { return .blank(next: next) }
        var fieldStart = 0
        var field = 0
        var token = 0..<0
        while true {
            let found = memchr(base + fieldStart, Int32(delimiter), contentEnd - fieldStart)
            let fieldEnd = found.map { base.distance(to: UnsafeRawPointer($0)) } ?? contentEnd
            if field == tokenIndex { token = start + fieldStart..<start + fieldEnd }
            guard found != nil else { break }
            fieldStart = fieldEnd + 1
            field += 1
        }
        return .record(token: token, fields: field + 1, next: next)
    }

    /// Whether `count` bytes are all ASCII, eight at a time.
    static func isASCII(_ base: UnsafeRawPointer, count: Int) -> Bool {
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= count {
            high |= base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < count {
            high |= UInt64(base.load(fromByteOffset: index, as: UInt8.self))
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    func scan(
        tokensOnly: Bool,
        stopAfterHeader: Bool,
        problem bad: (AudienceError) throws -> Void = { throw $0 },
        header: ([String]) -> Void,
        body: (SourceRow) throws -> Void
    ) throws {
        var reader = try ChunkedFileReader(path: path, displayName: name, kind: kind, at: location)
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
            if tokensOnly, schema != nil,
                let fast = reader.buffer.withUnsafeBufferPointer({ bytes in
                    Self.tokenLine(
                        bytes,
                        start: reader.start,
                        end: reader.end,
                        delimiter: delimiter,
                        tokenIndex: tokenIndex
                    )
                })
            {
                let recordLine = line
                line += 1
                switch fast {
                case .blank(let next):
                    reader.start = next
                case .record(let tokenRange, let fieldCount, let next):
                    guard fieldCount == columnCount else {
                        try bad(fieldCountError(fieldCount, columns: columnCount, line: recordLine))
                        reader.start = next
                        continue
                    }
                    let token =
                        tokenRange.isEmpty
                        ? nil
                        : try text(
                            reader.buffer,
                            Field(start: tokenRange.lowerBound, end: tokenRange.upperBound, quoted: false),
                            line: recordLine
                        )
                    reader.start = next
                    try body(SourceRow(token: token, attributes: .empty, row: recordLine))
                }
                continue
            }
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
                try bad(fieldCountError(fields.count, columns: columnCount, line: recordLine))
                continue
            }
            var values = [AttributeValue?](repeating: nil, count: tokensOnly ? 0 : columnCount)
            var token: String?
            do throws(AudienceError) {
                for index in 0..<columnCount {
                    let field = fields[index]
                    if field.start == field.end { continue }
                    if tokensOnly, index != tokenIndex {
                        // Not kept, but checked: the token pass finds every error the full read would,
                        // so a broken audience stops a send before anything is sent.
                        try checkUTF8(reader.buffer, field, line: recordLine)
                        continue
                    }
                    let value = try text(reader.buffer, field, line: recordLine)
                    if index == tokenIndex { token = value }
                    if !tokensOnly { values[index] = .string(value) }
                }
            } catch {
                try bad(error)
                continue
            }
            let attributes = tokensOnly ? Attributes.empty : Attributes(schema: currentSchema, values: values)
            try body(SourceRow(token: token, attributes: attributes, row: recordLine))
        }
        if schema == nil {
            throw AudienceError(
                "\(kind) '\(name)' is empty; it needs a header row naming a '\(tokenColumn)' column",
                at: location
            )
        }
    }

    func at(_ line: Int) -> SourceLocation { SourceLocation(path: name, line: line) }

    func fieldCountError(_ count: Int, columns: Int, line: Int) -> AudienceError {
        AudienceError(
            "row has \(count) field\(count == 1 ? "" : "s") but the header has \(columns); check quoting and delimiters on this line",
            at: at(line)
        )
    }

    func text(_ buffer: [UInt8], _ field: Field, line: Int) throws(AudienceError) -> String {
        // Through a buffer pointer, so the call is specialized (no generic metadata looked up per
        // cell); ASCII, the common case, needs no validation.
        let decoded: String? = buffer.withUnsafeBufferPointer { all in
            let bytes = UnsafeBufferPointer(rebasing: all[field.start..<field.end])
            if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
            return String(validating: bytes, as: UTF8.self)
        }
        guard let text = decoded else { throw notUTF8(line) }
        if field.quoted, buffer[field.start..<field.end].contains(0x22) {
            return text.replacingOccurrences(of: "\"\"", with: "\"")
        }
        return text
    }

    /// What `text` checks, without making the string (ASCII needs no string at all).
    func checkUTF8(_ buffer: [UInt8], _ field: Field, line: Int) throws(AudienceError) {
        let valid = buffer.withUnsafeBufferPointer { all in
            let bytes = UnsafeBufferPointer(rebasing: all[field.start..<field.end])
            return bytes.allSatisfy { $0 < 0x80 } || String(validating: bytes, as: UTF8.self) != nil
        }
        if !valid { throw notUTF8(line) }
    }

    func notUTF8(_ line: Int) -> AudienceError {
        AudienceError("field is not valid UTF-8 (save the file as UTF-8)", at: at(line))
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
            // The header is not quoted: the file may be anything (a key, a secrets file).
            if names.contains(where: DeviceToken.isPEMBoundary) {
                throw AudienceError(
                    "audience file '\(name)' is a PEM block (a private key or a certificate), not an audience; nothing of it is shown",
                    at: at(line)
                )
            }
            throw AudienceError(
                "the header has no '\(tokenColumn)' column\(Suggestion.didYouMean(tokenColumn, in: names)) "
                    + "(\(Self.describeHeader(names)); set token_column to the one holding device tokens)",
                at: at(line)
            )
        }
    }

    /// A header without the token column, as an error may say it: its column names when it is
    /// plainly an audience's header whose token column has another name (two or more short names of
    /// letters, digits, `_`, `-`, `.` and spaces, one of them with "token" in it: `device_token`),
    /// pointing at that one; else only how many names it has, since the first line of a file that
    /// is no audience may be anything (a key, a secrets file's names or values).
    static func describeHeader(_ names: [String]) -> String {
        let plain =
            names.count >= 2 && names.count <= 100
            && names.allSatisfy { name in
                name.utf8.count <= 32
                    && name.utf8.allSatisfy { byte in
                        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                            || byte == 0x5F || byte == 0x2D || byte == 0x2E || byte == 0x20
                    }
            }
        guard plain, let tokenLike = names.first(where: { $0.lowercased().contains("token") }) else {
            return "it has \(names.count) column\(names.count == 1 ? "" : "s"), not shown"
        }
        return "columns: \(names.joined(separator: ", ")); '\(tokenLike)' looks like it"
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
