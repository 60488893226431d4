import PushcampAudience
import PushcampModel
import PushcampTestSupport
import Testing

@Suite("Audience stream: tokens, duplicates, filters, exclusions")
struct AudienceStreamTests {
    @Test func countsEveryStepAndKeepsTheFirstRowOfAToken() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let t = (0..<6).map(TemporaryProject.token)
        let csv = """
            token,platform
            \(t[0]),ios
            \(t[1]),android
            \(t[0].uppercased()),ipados
            zz-not-hex,ios
            ,ios
            \(t[2]),ios
            \(t[3]),ios
            \(t[2]),android
            abc,ios
            """
        let path = try project.write("a.csv", csv)
        let excludePath = try project.write("x.csv", "token\n\(t[3])\nnot-a-token\n")
        let location = SourceLocation(path: "c.yaml")
        let stream = AudienceStream(
            source: CSVSource(path: path, name: "a.csv", location: location),
            filter: try FilterParser.parse("platform == 'ios'").get(),
            exclusions: [CSVSource(path: excludePath, name: "x.csv", location: location)]
        )
        var recipients: [Recipient] = []
        let counts = try stream.forEachRecipient { recipients.append($0) }
        #expect(recipients.map(\.token) == [t[0], t[2]])
        #expect(recipients.map(\.row) == [2, 7])
        #expect(counts.read == 9)
        #expect(counts.invalid == [.notHex: 1, .empty: 1, .oddLength: 1])
        #expect(counts.invalidExamples.map(\.location.description) == ["a.csv:5", "a.csv:6", "a.csv:10"])
        #expect(counts.duplicates == 2)
        #expect(counts.filteredOut == 1)
        #expect(counts.excluded == 1)
        #expect(counts.passed == 2)
    }

    @Test func duplicatesAmongManyTokensAreExact() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        // 20,000 distinct tokens, every tenth repeated later.
        var lines = ["token"]
        for index in 0..<20_000 { lines.append(TemporaryProject.token(index)) }
        for index in stride(from: 0, to: 20_000, by: 10) { lines.append(TemporaryProject.token(index)) }
        let path = try project.write("a.csv", lines.joined(separator: "\n"))
        let stream = AudienceStream(
            source: CSVSource(path: path, name: "a.csv", location: SourceLocation(path: "c.yaml")),
            filter: nil,
            exclusions: []
        )
        var seen: Set<String> = []
        let counts = try stream.forEachRecipient { #expect(seen.insert($0.token).inserted) }
        #expect(counts.duplicates == 2000)
        #expect(counts.passed == 20_000)
    }
}
