import Foundation
import GRDB
import PushcampAudience
import PushcampModel
import PushcampTestSupport
import Testing

@Suite("JSON Lines, SQLite and inline audiences")
struct OtherSourcesTests {
    @Test func jsonLines() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = try project.write(
            "a.jsonl",
            "{\"token\": \"t1\", \"n\": 3, \"beta\": true}\n\n{\"token\": \"t2\", \"tags\": [\"a\"], \"gone\": null}\n"
        )
        let source = JSONLinesSource(path: path, name: "a.jsonl", location: SourceLocation(path: "c.yaml"))
        var rows: [SourceRow] = []
        try source.forEachRow(tokensOnly: false) { rows.append($0) }
        #expect(rows.map(\.token) == ["t1", "t2"])
        #expect(rows.map(\.row) == [1, 3])
        #expect(rows[0].attributes["n"] == .integer(3))
        #expect(rows[0].attributes["beta"] == .bool(true))
        #expect(rows[1].attributes["tags"] == .list([.string("a")]))
        #expect(rows[1].attributes["gone"] == nil)
    }

    @Test func jsonLinesErrorsAreLocated() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = try project.write("a.jsonl", "{\"token\": \"t1\"}\n{\"token\": \"t2\",}\n")
        let source = JSONLinesSource(path: path, name: "a.jsonl", location: SourceLocation(path: "c.yaml"))
        #expect(throws: AudienceError.self) { try source.forEachRow(tokensOnly: false) { _ in } }
        do {
            try source.forEachRow(tokensOnly: false) { _ in }
        } catch let error as AudienceError {
            #expect(error.description == "a.jsonl:2:16: error: invalid JSON: expected a quoted key")
        }
        let arrayPath = try project.write("b.jsonl", "[1]\n")
        let arraySource = JSONLinesSource(path: arrayPath, name: "b.jsonl", location: SourceLocation(path: "c.yaml"))
        do {
            try arraySource.forEachRow(tokensOnly: false) { _ in }
            Issue.record("a JSON array line was accepted")
        } catch let error as AudienceError {
            #expect(error.description == "b.jsonl:1:1: error: each line must be a JSON object like {\"token\": \"…\"}")
        }
    }

    @Test func sqliteQueriesStreamRowsAndReadBlobTokensAsHex() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = project.path("a.sqlite")
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE devices (push BLOB, locale TEXT, n INTEGER, score REAL)")
            try db.execute(sql: "INSERT INTO devices VALUES (x'00ff10', 'fr', 2, 1.5), (x'abcd', NULL, NULL, NULL)")
        }
        let source = SQLiteSource(
            path: path,
            name: "a.sqlite",
            query: "SELECT push AS token, locale, n, score FROM devices ORDER BY rowid",
            location: SourceLocation(path: "c.yaml", line: 5, column: 5)
        )
        #expect(try source.columns() == ["token", "locale", "n", "score"])
        var rows: [SourceRow] = []
        try source.forEachRow(tokensOnly: false) { rows.append($0) }
        #expect(rows.map(\.token) == ["00ff10", "abcd"])
        #expect(rows[0].attributes["n"] == .integer(2))
        #expect(rows[0].attributes["score"] == .number(1.5))
        #expect(rows[1].attributes["locale"] == nil)

        let broken = SQLiteSource(
            path: path,
            name: "a.sqlite",
            query: "SELECT push FROM devicez",
            location: SourceLocation(path: "c.yaml", line: 5, column: 5)
        )
        do {
            _ = try broken.columns()
            Issue.record("a broken query was accepted")
        } catch {
            #expect(error.description == "c.yaml:5:5: error: query on 'a.sqlite' fails: no such table: devicez")
        }
        let noToken = SQLiteSource(
            path: path,
            name: "a.sqlite",
            query: "SELECT push FROM devices",
            location: SourceLocation(path: "c.yaml", line: 5, column: 5)
        )
        do {
            _ = try noToken.columns()
            Issue.record("a query without a token column was accepted")
        } catch {
            #expect(
                error.description
                    == "c.yaml:5:5: error: the query returns no 'token' column (columns: push; name it with AS token or set token_column)"
            )
        }
    }

    @Test(arguments: [
        "DELETE FROM devices RETURNING push AS token",
        "UPDATE devices SET locale = 'x' RETURNING push AS token",
        "INSERT INTO devices (push) VALUES (x'01') RETURNING push AS token",
        "PRAGMA table_info(devices)",
    ])
    func onlySelectQueriesAreAudiences(_ query: String) throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = project.path("a.sqlite")
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE devices (push BLOB, locale TEXT)")
            try db.execute(sql: "INSERT INTO devices VALUES (x'00ff10', 'fr')")
        }
        let source = SQLiteSource(
            path: path,
            name: "a.sqlite",
            query: query,
            location: SourceLocation(path: "c.yaml", line: 5, column: 5)
        )
        do {
            _ = try source.columns()
            Issue.record("accepted: \(query)")
        } catch {
            #expect(
                error.description.hasPrefix("c.yaml:5:5: error: the query on 'a.sqlite' must be a SELECT"),
                "\(error)"
            )
        }
        #expect(try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM devices") } == 1)
    }

    @Test func aWithQueryIsAnAudience() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = project.path("a.sqlite")
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE devices (push TEXT)")
        }
        let source = SQLiteSource(
            path: path,
            name: "a.sqlite",
            query: "WITH d AS (SELECT push FROM devices) SELECT push AS token FROM d",
            location: SourceLocation(path: "c.yaml")
        )
        #expect(try source.columns() == ["token"])
    }
}
