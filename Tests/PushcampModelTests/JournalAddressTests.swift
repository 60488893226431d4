import PushcampModel
import Testing

/// What names a PostgreSQL journal: one rule for `journal.url`, `--journal` and opening a journal.
@Suite("Journal addresses")
struct JournalAddressTests {
    @Test(arguments: [
        ("postgres://pushcamp@db.internal:5432/pushcamp", true), ("postgresql://db/pushcamp", true),
        (".pushcamp/journal.sqlite", false), (":memory:", false), ("postgres.sqlite", false),
        ("http://db/pushcamp", false),
    ])
    func aPostgresJournalIsNamedByItsScheme(address: String, postgres: Bool) {
        #expect(Project.namesPostgres(address) == postgres)
    }

    @Test func journalURLTakesOnlyAPostgresURL() {
        let apps = "apps: { shop: { topic: com.example.shop, certificate: cert.p12 } }\n"
        let (_, problems) = FCMAppTests.read(apps + "journal: { url: .pushcamp/journal.sqlite }\n")
        #expect(
            problems.contains { $0.contains("pushcamp.yaml:2:17: error: 'journal.url' names a PostgreSQL journal") },
            "\(problems)"
        )
        let (project, none) = FCMAppTests.read(apps + "journal: { url: \"postgresql://db/pushcamp\" }\n")
        #expect(none.isEmpty, "\(none)")
        #expect(project?.journalURL == "postgresql://db/pushcamp")
    }
}
