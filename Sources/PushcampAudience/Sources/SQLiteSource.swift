import Foundation
import GRDB
import PushcampAPNsCore
import PushcampModel

/// A SQLite audience: a read-only query whose columns are the token and the attributes, such as
/// `SELECT token, locale, first_name FROM devices WHERE opted_in`. Rows stream from a cursor. A token
/// stored as a BLOB is read as hex. NULL is an absent attribute.
public struct SQLiteSource: AudienceSource {
    public let path: String
    public let name: String
    public let query: String
    public let tokenColumn: String
    /// Where the campaign names this source: SQL problems are reported there.
    public let location: SourceLocation

    public init(path: String, name: String, query: String, tokenColumn: String = "token", location: SourceLocation) {
        self.path = path
        self.name = name
        self.query = query
        self.tokenColumn = tokenColumn
        self.location = location
    }

    func open() throws(AudienceError) -> DatabaseQueue {
        if let problem = InputFile.check(path) {
            throw AudienceError("audience database '\(name)' \(problem)", at: location)
        }
        var configuration = Configuration()
        configuration.readonly = true
        do {
            return try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw AudienceError("cannot open audience database '\(name)': \(Self.message(error))", at: location)
        }
    }

    /// An audience query reads: a SELECT, or WITH … SELECT, that SQLite calls read-only (the
    /// database is opened read-only as well, so nothing could change, but a DELETE … RETURNING
    /// must fail `validate`, not the send).
    func checkIsQuery(_ statement: Statement) throws(AudienceError) {
        let first = query.drop { $0.isWhitespace || $0 == "(" }.prefix { $0.isLetter }.uppercased()
        guard first == "SELECT" || first == "WITH", statement.isReadonly else {
            throw AudienceError(
                "the query on '\(name)' must be a SELECT (or WITH … SELECT), found \(first.isEmpty ? "something else" : first)",
                at: location
            )
        }
    }

    public func columns() throws(AudienceError) -> [String]? {
        let queue = try open()
        do {
            let names = try queue.read { db in
                let statement = try db.makeStatement(sql: query)
                try checkIsQuery(statement)
                return statement.columnNames
            }
            try check(names)
            return names
        } catch let error as AudienceError {
            throw error
        } catch {
            throw AudienceError("query on '\(name)' fails: \(Self.message(error))", at: location)
        }
    }

    public func forEachRow(tokensOnly: Bool, _ body: (SourceRow) throws -> Void) throws {
        let queue = try open()
        do {
            try queue.read { db in
                let statement = try db.makeStatement(sql: query)
                try checkIsQuery(statement)
                let names = statement.columnNames
                try check(names)
                let schema = AttributeSchema(names: names)
                let tokenIndex = names.firstIndex(of: tokenColumn)!
                let cursor = try Row.fetchCursor(statement)
                var number = 0
                while let row = try cursor.next() {
                    number += 1
                    let token = Self.value(row[tokenIndex] as DatabaseValue)?.text
                    var values = [AttributeValue?](repeating: nil, count: tokensOnly ? 0 : names.count)
                    if !tokensOnly {
                        for index in 0..<names.count { values[index] = Self.value(row[index] as DatabaseValue) }
                    }
                    let attributes = tokensOnly ? Attributes.empty : Attributes(schema: schema, values: values)
                    try body(SourceRow(token: token, attributes: attributes, row: number))
                }
            }
        } catch let error as AudienceError {
            throw error
        } catch let error as DatabaseError {
            throw AudienceError("query on '\(name)' fails: \(Self.message(error))", at: location)
        }
    }

    func check(_ names: [String]) throws(AudienceError) {
        guard names.contains(tokenColumn) else {
            throw AudienceError(
                "the query returns no '\(tokenColumn)' column\(Suggestion.didYouMean(tokenColumn, in: names)) (columns: \(names.joined(separator: ", ")); name it with AS \(tokenColumn) or set token_column)",
                at: location
            )
        }
    }

    static func value(_ value: DatabaseValue) -> AttributeValue? {
        switch value.storage {
        case .null: return nil
        case .int64(let integer): return .integer(integer)
        case .double(let number): return .number(number)
        case .string(let text): return .string(text)
        case .blob(let data):
            let digits = Array("0123456789abcdef".utf8)
            var hex: [UInt8] = []
            hex.reserveCapacity(data.count * 2)
            for byte in data {
                hex.append(digits[Int(byte >> 4)])
                hex.append(digits[Int(byte & 0x0F)])
            }
            return .string(String(decoding: hex, as: UTF8.self))
        }
    }

    static func message(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return error.message ?? "\(error.resultCode)"
        }
        return "\(error)"
    }
}
