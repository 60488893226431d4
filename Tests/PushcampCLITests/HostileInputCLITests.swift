import Foundation
import GRDB
import PushcampTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Campaign files come from pull requests and audiences from other teams: extreme input gives a
/// located error (or a bounded result) quickly, never a crash, a hang or unbounded memory.
@Suite("hostile input from the command line")
struct HostileInputCLITests {
    static let token = TemporaryProject.token(1)

    static func project() throws -> TemporaryProject {
        let project = try TemporaryProject()
        try project.write("audiences/a.csv", "token,name,x\n\(token),a,1\n")
        return project
    }

    static func campaign(
        _ extra: String,
        payload: String = "{ aps: { alert: hi } }",
        source: String = "{ csv: audiences/a.csv }"
    ) -> String {
        "campaign: c\napp: shop\naudience:\n  source: \(source)\n\(extra)\nmessage:\n  payload: \(payload)\n"
    }

    /// `plan` of `campaign` exits 1 within 20 s, its first line `expected`.
    static func refused(_ project: TemporaryProject, _ campaign: String, _ expected: String) throws {
        try project.write("campaigns/c.yaml", campaign)
        let started = Date()
        let plan = try CLI.run(["plan", "--samples", "0", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(plan.status == 1, "\(plan.stderr.prefix(300))")
        #expect(plan.stderr.hasPrefix(expected), "\(plan.stderr.prefix(300))")
        #expect(Date().timeIntervalSince(started) < 20)
    }

    @Test func nestedAliasesAreBounded() throws {
        let project = try Self.project()
        defer { project.remove() }
        var variables = "variables:\n  l0: &l0 [\(Array(repeating: "\"lol\"", count: 10).joined(separator: ","))]\n"
        for level in 1..<10 {
            variables +=
                "  l\(level): &l\(level) [\(Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ","))]\n"
        }
        try Self.refused(
            project,
            "campaign: c\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\n" + variables
                + "message:\n  payload: { aps: { alert: hi } }\n",
            "campaigns/c.yaml:"
        )
        let again = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect((again.stdout + again.stderr).contains("expands to more than 100000 values"), "\(again.stdout)")
    }

    @Test func deepConditionsAreLocatedErrors() throws {
        let project = try Self.project()
        defer { project.remove() }
        let parens = String(repeating: "(", count: 50_000) + "x == 1" + String(repeating: ")", count: 50_000)
        try Self.refused(
            project,
            Self.campaign("  where: \"\(parens)\""),
            "campaigns/c.yaml:5:75: error: invalid filter: the condition nests parentheses and '!' more than 64 deep"
        )
        let nots = String(repeating: "!", count: 50_000) + "x"
        try Self.refused(project, Self.campaign("  where: \"\(nots)\""), "campaigns/c.yaml:5:")
        let chain = Array(repeating: "x == 1", count: 50_000).joined(separator: " && ")
        try Self.refused(
            project,
            Self.campaign("  where: \"\(chain)\""),
            "campaigns/c.yaml:5:5011: error: invalid filter: the condition has more than 500 comparisons"
        )
    }

    @Test func deepTemplatesAndDocumentsAreLocatedErrors() throws {
        let project = try Self.project()
        defer { project.remove() }
        let sections = String(repeating: "{{#x}}", count: 50_000) + "hi" + String(repeating: "{{/x}}", count: 50_000)
        try project.write("templates/deep.yaml", "aps: { alert: \"\(sections)\" }\n")
        try Self.refused(
            project,
            Self.campaign("", payload: "templates/deep.yaml"),
            "templates/deep.yaml:1:208: error: template: sections nest more than 32 deep"
        )
        try project.write(
            "templates/nested.yaml",
            "aps: { alert: hi, x: \(String(repeating: "[", count: 50_000))\(String(repeating: "]", count: 50_000)) }\n"
        )
        try Self.refused(project, Self.campaign("", payload: "templates/nested.yaml"), "templates/nested.yaml:1:")
        try project.write(
            "audiences/deep.jsonl",
            "{\"token\":\"\(Self.token)\",\"x\":\(String(repeating: "[", count: 50_000))\(String(repeating: "]", count: 50_000))}\n"
        )
        try Self.refused(
            project,
            Self.campaign("", source: "{ jsonl: audiences/deep.jsonl }"),
            "audiences/deep.jsonl:1:144: error: invalid JSON: objects and lists nest more than 64 deep"
        )
    }

    @Test func renderingHasABudgetAndARecipientOverItIsRefused() throws {
        let project = try Self.project()
        defer { project.remove() }
        let items = "[" + (0..<100).map { "\($0)" }.joined(separator: ",") + "]"
        try project.write(
            "audiences/list.jsonl",
            "{\"token\":\"\(Self.token)\",\"items\":\(items)}\n{\"token\":\"\(TemporaryProject.token(2))\",\"items\":[1]}\n"
        )
        let nested = String(repeating: "{{#items}}", count: 5) + "x" + String(repeating: "{{/items}}", count: 5)
        try project.write("templates/p.yaml", "aps: { alert: \"\(nested)\" }\n")
        try project.write(
            "campaigns/c.yaml",
            Self.campaign("", payload: "templates/p.yaml", source: "{ jsonl: audiences/list.jsonl }")
        )
        let plan = try CLI.run(["plan", "--samples", "0", "campaigns/c.yaml"], in: project.root, timeout: 20)
        // 100⁵ renders for the first recipient: refused with a reason, and the second one planned.
        #expect(plan.status == 3, "\(plan.stdout)\(plan.stderr)")
        #expect(plan.stdout.contains("render-budget: 1"), "\(plan.stdout)")
        #expect(plan.stdout.contains("  planned                  1"), "\(plan.stdout)")
    }

    @Test func specialFilesAreRefusedBeforeTheyAreOpened() throws {
        let project = try Self.project()
        defer { project.remove() }
        #expect(mkfifo(project.path("audiences/fifo.csv"), 0o600) == 0)
        try Self.refused(
            project,
            Self.campaign("", source: "{ csv: audiences/fifo.csv }"),
            "campaigns/c.yaml:4:11: error: audience file 'audiences/fifo.csv' is a named pipe (FIFO), not a regular file"
        )
        try project.write("pushcamp.yaml", TemporaryProject.defaultProjectFile + "\nfiles:\n  allow: [/dev]\n")
        try Self.refused(
            project,
            Self.campaign("", source: "{ csv: /dev/zero }"),
            "campaigns/c.yaml:4:11: error: audience file '/dev/zero' is a device, not a regular file"
        )
        try Self.refused(
            project,
            Self.campaign("", payload: "/dev/zero"),
            "/dev/zero: error: is a device, not a regular file"
        )
    }

    @Test func filesOutsideTheProjectAreNotRead() throws {
        let project = try Self.project()
        defer { project.remove() }
        try project.write("campaigns/c.yaml", Self.campaign("", source: "{ csv: /proc/self/environ }"))
        let validate = try CLI.run(
            ["validate", "--format", "github", "campaigns/c.yaml"],
            in: project.root,
            timeout: 20
        )
        #expect(validate.status == 1)
        #expect(
            validate.stdout.contains(
                "::error file=campaigns/c.yaml,line=4,col=11::audience file '/proc/self/environ' is outside the project"
            ),
            "\(validate.stdout)"
        )
        #expect(!(validate.stdout + validate.stderr).contains("PATH="))
        try project.write("campaigns/c.yaml", Self.campaign("", payload: "../../etc/passwd"))
        let plan = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(plan.stderr.contains("payload file '../../etc/passwd' is outside the project"), "\(plan.stderr)")
        #expect(!plan.stderr.contains("root:"))
    }

    /// Issue #27, case 9: a key read as an audience is refused before any of it is printed,
    /// whether its PEM block is the header or a row; cells of a `token` column that are not tokens
    /// (API keys, say) show their length only; a header without the token column is not listed.
    @Test func aFileThatIsNotAnAudienceIsRefusedBeforeAnyOfItIsPrinted() throws {
        let project = try Self.project()
        defer { project.remove() }
        let keyLine = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRETSECRET"
        let key = "-----BEGIN PRIVATE KEY-----\n\(keyLine)\n-----END PRIVATE KEY-----\n"
        for (file, text, line) in [
            ("keys/AuthKey.p8", key, 1),
            ("keys/headed.p8", "token\n" + key + "\(Self.token)\n", 2),
        ] {
            try project.write(file, text)
            for format in ["text", "json", "markdown"] {
                try project.write("campaigns/c.yaml", Self.campaign("", source: "{ csv: \(file) }"))
                let plan = try CLI.run(["plan", "--format", format, "campaigns/c.yaml"], in: project.root, timeout: 20)
                #expect(plan.status == 1, "\(plan.stdout)\(plan.stderr)")
                #expect(!(plan.stdout + plan.stderr).contains("MIGH"), "\(format): \(plan.stdout)\(plan.stderr)")
                #expect(!(plan.stdout + plan.stderr).contains("SECRET"))
                #expect(
                    plan.stderr.contains("\(file):\(line): error: audience file '\(file)'"),
                    "\(plan.stderr)"
                )
                #expect(plan.stderr.contains("PEM block (a private key or a certificate)"), "\(plan.stderr)")
            }
        }
        // As an exclusion list too.
        try project.write(
            "campaigns/c.yaml",
            Self.campaign("", source: "{ csv: audiences/a.csv }\n  exclude: [ { csv: keys/headed.p8 } ]")
        )
        let excluded = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(excluded.status == 1 && excluded.stderr.contains("PEM block"), "\(excluded.stderr)")

        // Secrets in a `token` column: refused as tokens, never shown.
        try project.write("audiences/keys.csv", "token,owner\nsk_live_SECRETSECRETSECRET,billing\n\(Self.token),a\n")
        try project.write("campaigns/c.yaml", Self.campaign("", source: "{ csv: audiences/keys.csv }"))
        for format in ["text", "json"] {
            let plan = try CLI.run(["plan", "--format", format, "campaigns/c.yaml"], in: project.root, timeout: 20)
            #expect(plan.status == 0, "\(plan.stderr)")
            #expect(!plan.stdout.contains("sk_live") && !plan.stdout.contains("SECRET"), "\(plan.stdout)")
            #expect(plan.stdout.contains("(26 characters, not shown)"), "\(format): \(plan.stdout)")
        }

        // A header without the token column is not listed either.
        try project.write("audiences/env.csv", "DATABASE_PASSWORD,API_KEY\nhunter2,sk\n")
        try project.write("campaigns/c.yaml", Self.campaign("", source: "{ csv: audiences/env.csv }"))
        let plan = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(plan.status == 1)
        #expect(!plan.stderr.contains("DATABASE_PASSWORD") && !plan.stderr.contains("hunter2"), "\(plan.stderr)")
        #expect(
            plan.stderr.contains(
                "audiences/env.csv:1: error: the header has no 'token' column (it has 2 columns, not shown"
            )
        )
    }

    /// Issue #27, case 9: a secrets file named as `strings:` is refused by key and line, its values
    /// never quoted.
    @Test func aSecretsFileNamedAsStringsIsNeverQuoted() throws {
        let project = try Self.project()
        defer { project.remove() }
        try project.write("secrets.yaml", "password: \"hunter2 {{#x}}\"\ndatabase:\n  token: [sk_live_SECRET]\n")
        try project.write(
            "campaigns/c.yaml",
            Self.campaign("", payload: "{ aps: { alert: hi } }\n  strings: secrets.yaml")
        )
        let validate = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(validate.status == 1)
        let output = validate.stdout + validate.stderr
        #expect(!output.contains("hunter2") && !output.contains("sk_live"), "\(output)")
        #expect(
            output.contains("secrets.yaml:1:11: error: 'strings.password' must be a mapping, found a single value"),
            "\(output)"
        )
        #expect(
            output.contains("secrets.yaml:3:10: error: 'strings.database.token' must be a single value, found a list"),
            "\(output)"
        )
    }

    /// Issue #27, case 9: header values with control characters are refused by `validate` (as
    /// `plan` refuses every push for them), `plan` prints them escaped, and zone offsets out of the
    /// world's range are refused.
    @Test func headerValuesWithControlCharactersAndImpossibleOffsetsAreRefused() throws {
        let project = try Self.project()
        defer { project.remove() }
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: { aps: { alert: hi } }\n  collapse_id: \"ab\\rFAKE: 0 refused\\0x\"\n"
        )
        let validate = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(validate.status == 1)
        #expect(
            validate.stdout.contains(
                "campaigns/c.yaml:7:16: error: collapse_id 'ab\\rFAKE: 0 refused\\u{0}x' holds control characters; no header may"
            ),
            "\(validate.stdout)"
        )
        let plan = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(plan.status == 3, "\(plan.stderr)")
        #expect(!plan.stdout.contains("\r") && !plan.stdout.contains("\u{0}"), "\(plan.stdout)")
        #expect(plan.stdout.contains("collapse id ab\\rFAKE: 0 refused\\u{0}x"), "\(plan.stdout)")

        for offset in ["+25:00", "-13:00", "+01:60"] {
            try project.write(
                "campaigns/c.yaml",
                Self.campaign("schedule: { at: \"2027-03-20T09:00:00\(offset)\" }")
            )
            let refused = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root, timeout: 20)
            #expect(refused.status == 1, "\(offset)")
            #expect(
                refused.stdout.contains("zone offset out of range; offsets run from -12:00 to +14:00"),
                "\(refused.stdout)"
            )
        }
        try project.write("campaigns/c.yaml", Self.campaign("schedule: { at: \"2027-03-20T09:00:00+14:00\" }"))
        #expect(try CLI.run(["validate", "campaigns/c.yaml"], in: project.root, timeout: 20).status == 0)
    }

    @Test func controlCharactersCannotForgeOutput() throws {
        let project = try Self.project()
        defer { project.remove() }
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\ndescription: \"ok\\rFAKE: all 28 pushes OK\\u001B[2K <script>x</script> | cell\"\napp: shop\n"
                + "audience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: { aps: { alert: hi } }\n"
        )
        let text = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(!text.stdout.contains("\r") && !text.stdout.contains("\u{1B}"))
        #expect(text.stdout.contains("  ok\\rFAKE: all 28 pushes OK\\u{1B}[2K"), "\(text.stdout)")
        let markdown = try CLI.run(["plan", "--format", "markdown", "campaigns/c.yaml"], in: project.root, timeout: 20)
        #expect(markdown.stdout.contains("&lt;script&gt;x&lt;/script&gt; \\| cell"), "\(markdown.stdout)")
        #expect(!markdown.stdout.contains("<script>"))
    }

    @Test func planPredictsWhatAPNsWouldRefuse() throws {
        let project = try Self.project()
        defer { project.remove() }
        try project.write(
            "audiences/a.csv",
            "token,name,tag\n\(Self.token),a,\"x\r\napns-priority: 5\"\n\(TemporaryProject.token(2)),b,fine\n"
        )
        func plan(_ message: String) throws -> CLI.Output {
            try project.write(
                "campaigns/c.yaml",
                "campaign: c\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n\(message)\n  payload: { aps: { alert: hi } }\n"
            )
            return try CLI.run(["plan", "--samples", "2", "campaigns/c.yaml"], in: project.root, timeout: 20)
        }
        // A collapse id rendered from data with CR LF: that recipient is refused, the other planned,
        // and no forged header line is printed.
        let collapse = try plan("  collapse_id: \"{{tag}}\"")
        #expect(collapse.status == 3, "\(collapse.stdout)\(collapse.stderr)")
        #expect(collapse.stdout.contains("header-control-characters: 1"), "\(collapse.stdout)")
        #expect(collapse.stdout.contains("  planned                  1"), "\(collapse.stdout)")
        #expect(!collapse.stdout.contains("\napns-priority: 5"), "\(collapse.stdout)")
        // A topic that is not the app's: every push would be BadTopic.
        let topic = try plan("  topic: com.other.app")
        #expect(topic.status == 3)
        #expect(topic.stdout.contains("bad-topic: 2"), "\(topic.stdout)")
        let forged = try plan("  topic: \"com.example.shop\\r\\napns-priority: 5\"")
        #expect(forged.stdout.contains("header-control-characters: 2"), "\(forged.stdout)")
        // An expiration before the send; one before 1970 is refused where it is written (issue 43:
        // APNs counts seconds since 1970, so it would go out negative).
        let past = try plan("  expiration: 2020-01-01T00:00:00Z")
        #expect(past.stdout.contains("expiration-passed: 2"), "\(past.stdout)")
        let ancient = try plan("  expiration: 1969-07-20T20:17:00Z")
        #expect(ancient.status == 1, "\(ancient.stdout)\(ancient.stderr)")
        #expect(
            ancient.stderr.contains(
                "campaigns/c.yaml:6:15: error: 'expiration': '1969-07-20T20:17:00Z' is in the year 1969"
            ),
            "\(ancient.stderr)"
        )
    }
}

/// Messages say what is wrong, where and what to do — no library's error dump — and exit codes
/// follow the documented table.
@Suite("messages and exit codes")
struct MessagesCLITests {
    static func project(_ app: String) throws -> TemporaryProject {
        let project = try TemporaryProject(
            projectFile: "apps:\n  shop:\n    topic: com.example.shop\n\(app)\n    endpoint: https://127.0.0.1:9\n"
        )
        try SendCLITests.writeAudience(project, count: 3)
        try SendCLITests.writeCampaign(project)
        return project
    }

    @Test(arguments: [
        ("    certificate: bad.pem", "cannot load the client certificate", 2),
        ("    certificate: sim/client.pem\n    ca_file: bad.pem", "cannot use ca_file", 2),
        ("    certificate: /dev/null", "is a device, not a regular file", 2),
        ("    certificate: fifo.pem", "is a named pipe (FIFO), not a regular file", 2),
        (
            "    team_id: ABCDE12345\n    key_id: KEY1234567\n    key_file: ${env:PUSHCAMP_TEST_UNSET_KEY}",
            "PUSHCAMP_TEST_UNSET_KEY", 2
        ),
        (
            "    team_id: ABCDE12345\n    key_id: KEY1234567\n    key_file: bad.pem",
            "is not an ES256 (P-256) private key", 2
        ),
    ])
    func credentialProblemsSayWhatIsWrong(_ app: String, _ expected: String, _ status: Int32) throws {
        let project = try Self.project(app)
        defer { project.remove() }
        try project.write("bad.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        _ = try SimulatorProcess(["--state-dir", "sim", "--client-certificates"], in: project.root).stop()
        // The client certificate's file holds its private key: the owner's alone.
        let mode = try FileManager.default.attributesOfItem(atPath: project.path("sim/client.pem"))[.posixPermissions]
        #expect((mode as? NSNumber)?.intValue == 0o600)
        _ = mkfifo(project.path("fifo.pem"), 0o600)
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root, timeout: 30)
        #expect(send.status == status, "\(send.stderr)")
        #expect(send.stderr.contains(expected), "\(send.stderr)")
        for noise in ["NIOSSL", "BoringSSL", "Error Domain", "DecodingError", "The operation could not be completed"] {
            #expect(!send.stderr.contains(noise), "\(send.stderr)")
        }
        #expect(try DeliberateSendCLITests.nothingSent(project))
    }
}

/// The journal holds what was sent: nothing a command does may lose it.
@Suite("the journal is never lost")
struct JournalSafetyCLITests {
    static func sentProject() throws -> (TemporaryProject, SimulatorProcess) {
        let project = try TemporaryProject(projectFile: nil)
        let sim = try JournalCLITests.start(project)
        try SendCLITests.writeAudience(project, count: 20)
        try SendCLITests.writeCampaign(project)
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(send.status == 0, "\(send.stderr)")
        return (project, sim)
    }

    @Test func reportOutputNeverOverwritesTheJournalOrAnotherFile() throws {
        let (project, sim) = try Self.sentProject()
        defer { project.remove() }
        _ = sim.stop()
        let journal = project.path(".pushcamp/journal.sqlite")
        let before = try Data(contentsOf: URL(fileURLWithPath: journal))
        for target in [
            ".pushcamp/journal.sqlite", ".pushcamp/journal.sqlite-wal", "./.pushcamp/../.pushcamp/journal.sqlite",
        ] {
            let report = try CLI.run(["report", "-o", target, "--force"], in: project.root)
            #expect(report.status == 1)
            #expect(report.stderr.contains("is the journal"), "\(report.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == before)
        try project.write("notes.txt", "my notes\n")
        let refused = try CLI.run(["report", "-o", "notes.txt"], in: project.root)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("notes.txt exists and is not a Pushcamp report; pass --force"),
            "\(refused.stderr)"
        )
        // A previous report is simply replaced; --force replaces anything else.
        #expect(try CLI.run(["report", "-o", "r.html", "--format", "html"], in: project.root).status == 0)
        #expect(try CLI.run(["report", "-o", "r.html", "--format", "html"], in: project.root).status == 0)
        #expect(try CLI.run(["report", "-o", "notes.txt", "--force"], in: project.root).status == 0)
    }

    @Test func anEmptyForeignOrFolderJournalIsAnErrorNotANewJournal() throws {
        let (project, sim) = try Self.sentProject()
        defer { project.remove() }
        defer { _ = sim.stop() }
        let journal = project.path(".pushcamp/journal.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: journal + suffix) }
        _ = FileManager.default.createFile(atPath: journal, contents: Data())
        for command in [["runs"], ["send", "--quiet", "campaigns/c.yaml"], ["plan", "campaigns/c.yaml"]] {
            let output = try CLI.run(command, in: project.root)
            #expect(output.status == 1, "\(command): \(output.stdout)")
            #expect(output.stderr.contains("is empty (0 bytes)"), "\(command): \(output.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)).isEmpty)
        try FileManager.default.removeItem(atPath: journal)
        try DatabaseQueue(path: journal).write { try $0.execute(sql: "CREATE TABLE run (x); CREATE TABLE other (y);") }
        let foreign = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(foreign.status == 1)
        #expect(foreign.stderr.contains("is a SQLite database but not a Pushcamp journal"), "\(foreign.stderr)")
        try FileManager.default.removeItem(atPath: journal)
        try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
        let folder = try CLI.run(["runs"], in: project.root)
        #expect(folder.stderr.contains("is a folder, not a journal"), "\(folder.stderr)")
    }

    @Test func readingCommandsDoNotWriteTheJournal() throws {
        let (project, sim) = try Self.sentProject()
        defer { project.remove() }
        _ = sim.stop()
        let journal = project.path(".pushcamp/journal.sqlite")
        // Checkpointed and closed by the send: reading must leave every byte (and no -wal) behind.
        let before = try Data(contentsOf: URL(fileURLWithPath: journal))
        for command in [
            ["runs"], ["report"], ["report", "--format", "json"], ["tokens", "invalid"], ["plan", "campaigns/c.yaml"],
        ] {
            let output = try CLI.run(command, in: project.root)
            #expect(output.status == 0 || command.first == "plan", "\(command): \(output.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == before)
    }
}
