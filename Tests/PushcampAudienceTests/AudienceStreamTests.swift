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
        // The two Android rows are not this iOS campaign's: passed over before anything else.
        #expect(counts.otherPlatform == [.android: 2])
        #expect(counts.duplicates == 1)
        #expect(counts.filteredOut == 0)
        #expect(counts.excluded == 1)
        #expect(counts.passed == 2)
    }

    /// A campaign of both platforms: each row's platform from its column (a platform's name in any
    /// case, or an app's name), else from its token's shape; each token checked as its provider's.
    @Test func rowsFindTheirPlatform() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let ios = TemporaryProject.token(1)
        let fcm = "cYx0Sd8pQ0mB1kz7Jf3aPq:APA91bHk2J4x5Qw8e9r0t1y2u3i4o5p6a7s8d9f0g1h2j3k4l5z6x7c8v9b0n1m2"
        let csv = """
            token,platform
            \(ios.uppercased()),iOS
            \(fcm),Android
            \(fcm),shop-android
            \(TemporaryProject.token(2)),
            \(fcm.dropLast())X,
            \(TemporaryProject.token(3)),android
            \(TemporaryProject.token(4)),blackberry
            short:token,android
            """
        let path = try project.write("a.csv", csv)
        let stream = AudienceStream(
            source: CSVSource(path: path, name: "a.csv", location: SourceLocation(path: "c.yaml")),
            filter: nil,
            exclusions: [],
            platforms: PlatformRule(targets: [.ios, .android], appNames: ["shop-android": .android])
        )
        var recipients: [Recipient] = []
        let counts = try stream.forEachRecipient { recipients.append($0) }
        #expect(recipients.map(\.platform) == [.ios, .android, .ios, .android])
        // APNs tokens in lowercase; FCM's as written (they are case-sensitive).
        #expect(recipients.map(\.token) == [ios, fcm, TemporaryProject.token(2), fcm.dropLast() + "X"])
        #expect(counts.duplicates == 1)
        #expect(counts.platforms == [.ios: 2, .android: 2])
        #expect(counts.invalid == [.notRegistrationToken: 2, .unknownPlatform: 1])
        #expect(counts.invalidExamples.map(\.location.description) == ["a.csv:7", "a.csv:8", "a.csv:9"])
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
