import PushcampAudience
import PushcampModel
import PushcampTestSupport
import Testing

@Suite("CSV audiences")
struct CSVSourceTests {
    func rows(
        _ text: String,
        bytes: [UInt8]? = nil,
        tokenColumn: String = "token",
        tokensOnly: Bool = false
    ) throws -> [SourceRow] {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = try project.write("a.csv", bytes: bytes ?? Array(text.utf8))
        let source = CSVSource(
            path: path,
            name: "a.csv",
            tokenColumn: tokenColumn,
            location: SourceLocation(path: "c.yaml", line: 4, column: 3)
        )
        var rows: [SourceRow] = []
        try source.forEachRow(tokensOnly: tokensOnly) { rows.append($0) }
        return rows
    }

    /// Tokens and rows (or the error) of a read, for comparing the two kinds of pass.
    func outline(_ text: String, tokensOnly: Bool) -> [String] {
        do {
            return try rows(text, tokensOnly: tokensOnly).map { "\($0.row):\($0.token ?? "-")" }
        } catch {
            return ["\(error)"]
        }
    }

    /// The token-only pass (the duplicate search; its fast path splits plain lines with memchr)
    /// reads the same tokens at the same rows, and stops at the same error, as a full read:
    /// CRLF and bare CR endings, blank lines, quoted fields (with delimiters and line breaks), an
    /// empty token, a last line without a newline, ragged rows.
    @Test(arguments: [
        "token,name\r\nt1,a\r\n\r\nt2,b\r\n",
        "name,token\nx,t1\n\"q,uoted\",t2\ny,\n\nz,t4",
        "token,name,note\nt1,a,\"two\nlines\"\nt2,b,c\r\nt3,c,d",
        "token,name\nt1,a\rt2,b\n",
        "token,name\nt1,a\nt2,b,extra\nt3,c\n",
        "token,name\nt1\n",
        "token,name\n\"t1\",a\nt2,\"b\"\n",
        "token,name\nt1,Inès\nt2,Zoë\n",
    ])
    func theTokenPassAgreesWithAFullRead(_ text: String) {
        #expect(outline(text, tokensOnly: true) == outline(text, tokensOnly: false))
    }

    /// Bytes that are not UTF-8 in any field stop the token pass too (it runs before anything is
    /// sent), at the same line as the full read. Found by fuzz-csv.
    @Test(arguments: [
        Array("token,name\nt1,ok\nt2,".utf8) + [0x94, 0x8C] + Array("\nt3,x\n".utf8),
        Array("token,first_name,loca\r\0,fir_nae\0me,loStroca\r\0,firsj_n!e\0me,oStri".utf8) + [0x94, 0x8C]
            + Array("tketkere".utf8),
    ])
    func invalidUTF8StopsTheTokenPassWhereTheFullReadStops(_ bytes: [UInt8]) throws {
        func outline(tokensOnly: Bool) -> [String] {
            do {
                return try rows("", bytes: bytes, tokensOnly: tokensOnly).map { "\($0.row):\($0.token ?? "-")" }
            } catch {
                return ["\(error)"]
            }
        }
        let full = outline(tokensOnly: false)
        #expect(full.last?.contains("not valid UTF-8") == true)
        #expect(outline(tokensOnly: true) == full)
    }

    @Test func theTokenPassAgreesAcrossReadChunks() throws {
        // 30,000 rows of ~90 bytes: lines cross the reader's 1 MiB chunks.
        var text = "token,name,note\n"
        for index in 0..<30_000 {
            text +=
                "\(String(repeating: "ab", count: 32))\(index),Name\(index),\(index % 7 == 0 ? "\"q,\"" : "plain")\n"
        }
        let tokensOnly = outline(text, tokensOnly: true)
        #expect(tokensOnly.count == 30_000)
        #expect(tokensOnly == outline(text, tokensOnly: false))
    }

    func failure(_ text: String, bytes: [UInt8]? = nil, tokenColumn: String = "token") -> String? {
        do {
            _ = try rows(text, bytes: bytes, tokenColumn: tokenColumn)
            return nil
        } catch let error as AudienceError {
            return error.description
        } catch {
            return "\(error)"
        }
    }

    @Test func quotedFieldsLineBreaksAndEmptyCells() throws {
        let rows = try rows("\u{FEFF}token,name,note\r\nt1,\"Doe, \"\"JD\"\" Jane\",\"two\nlines\"\r\n\nt2,,x\nt3,Z,y")
        #expect(rows.map(\.token) == ["t1", "t2", "t3"])
        #expect(rows.map(\.row) == [2, 5, 6])
        #expect(rows[0].attributes["name"] == .string("Doe, \"JD\" Jane"))
        #expect(rows[0].attributes["note"] == .string("two\nlines"))
        #expect(rows[1].attributes["name"] == nil)
    }

    @Test func rowsSpanningReadChunksAreWhole() throws {
        // Larger than the reader's 1 MiB chunk, with a quoted field across the boundary.
        let long = String(repeating: "x", count: 700_000)
        let text = "token,blob\na,\"\(long)\"\nb,\"\(long)\"\nc,end\n"
        let rows = try rows(text)
        #expect(rows.map(\.token) == ["a", "b", "c"])
        #expect(rows[1].attributes["blob"] == .string(long))
    }

    @Test func raggedRowsStopWithTheirLine() {
        #expect(
            failure("token,name\nt1,a\nt2,b,extra\n")
                == "a.csv:3: error: row has 3 fields but the header has 2; check quoting and delimiters on this line"
        )
        #expect(
            failure("token,name\nt1\n")
                == "a.csv:2: error: row has 1 field but the header has 2; check quoting and delimiters on this line"
        )
    }

    @Test func unclosedQuotesInvalidUTF8AndHeaders() {
        #expect(
            failure("token,name\nt1,\"open\nt2,b\n")
                == "a.csv:2: error: a quoted field opened on this line is never closed"
        )
        #expect(
            failure("", bytes: Array("token,name\nt1,ok\nt2,".utf8) + [0xC3, 0x28] + [0x0A])
                == "a.csv:3: error: field is not valid UTF-8 (save the file as UTF-8)"
        )
        #expect(
            failure("tokn,name\nt1,a\n")
                == "a.csv:1: error: the header has no 'token' column; did you mean 'tokn'? (it has 2 columns, not shown; set token_column to the one holding device tokens)"
        )
        // An audience's header whose token column has another name is listed, pointing at that one;
        // any other first line is not (HostileInputCLITests: a secrets file's names stay unshown).
        #expect(
            failure("user_id,device_token,Locale\nu1,t1,fr\n")
                == "a.csv:1: error: the header has no 'token' column (columns: user_id, device_token, Locale; 'device_token' looks like it; set token_column to the one holding device tokens)"
        )
        // A first line that is not plainly a header (a line of secrets, a key) is never shown.
        for line in ["sk_live_4eC39HqLyjWDarjtT1zdp7dc", "API_KEY=abc123,SECRET=def", "token:abc,x", "hunter2,abc"] {
            let said = failure("\(line)\nx\n") ?? ""
            #expect(said.contains("not shown") && !said.contains("abc") && !said.contains("sk_live"), "\(said)")
        }
        #expect(failure("token,name,name\n") == "a.csv:1: error: the header names column 'name' twice")
        #expect(
            failure("")
                == "c.yaml:4:3: error: audience file 'a.csv' is empty; it needs a header row naming a 'token' column"
        )
    }

    @Test func missingFile() {
        let source = CSVSource(
            path: "/nonexistent/a.csv",
            name: "audiences/a.csv",
            location: SourceLocation(path: "c.yaml", line: 4, column: 3)
        )
        #expect(throws: AudienceError.self) { try source.columns() }
        do {
            _ = try source.columns()
        } catch {
            #expect(error.description == "c.yaml:4:3: error: audience file 'audiences/a.csv' does not exist")
        }
    }

    @Test func otherDelimitersAndTokenColumns() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = try project.write("a.csv", "device;lang\nt1;fr\n")
        let source = CSVSource(
            path: path,
            name: "a.csv",
            tokenColumn: "device",
            delimiter: 0x3B,
            location: SourceLocation(path: "c.yaml")
        )
        #expect(try source.columns() == ["device", "lang"])
        var tokens: [String?] = []
        try source.forEachRow(tokensOnly: true) { tokens.append($0.token) }
        #expect(tokens == ["t1"])
    }
}
