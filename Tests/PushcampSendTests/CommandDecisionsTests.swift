import Foundation
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampTestSupport
import Testing

/// What the commands decided in their own files before it moved into the libraries (doctor's choice
/// of apps, diff's baseline, the run an engagement import matches), checked without the binary.
@Suite("Decisions the commands take from the libraries")
struct CommandDecisionsTests {
    static let projectFile =
        TemporaryProject.defaultProjectFile + """

              shop-mac:
                topic: com.example.shop.mac
                team_id: ABCDE12345
                key_id: KEY1234567
                key_file: ${env:SHOP_KEY}
              shop-android:
                service_account: ${env:SHOP_FCM}
            """

    static let campaign = """
        campaign: c
        app: shop
        audience:
          source: { csv: audiences/a.csv }
        message:
          title: Hi
          body: Sale
        """

    static func project() throws -> TemporaryProject {
        let project = try TemporaryProject(projectFile: projectFile)
        try project.write("audiences/a.csv", "token\n\(TemporaryProject.token(1))\n\(TemporaryProject.token(2))\n")
        try project.write("campaigns/c.yaml", campaign)
        return project
    }

    static func loaded(_ project: TemporaryProject) throws -> LoadedCampaign {
        let result = CampaignLoader(workingDirectory: project.root).load("campaigns/c.yaml")
        return try #require(result.campaign, "\(result.diagnostics)")
    }

    @Test func doctorChecksEveryAppOrTheOneNamed() throws {
        let temporary = try Self.project()
        defer { temporary.remove() }
        let (project, _) = try ProjectJournal.project(workingDirectory: temporary.root).get()

        let every = try Checkup.apps(of: project, named: nil, sendTest: false)
        #expect(every.apns.map(\.name) == ["shop", "shop-mac"])
        #expect(every.fcm.map(\.name) == ["shop-android"])
        let android = try Checkup.apps(of: project, named: "shop-android", sendTest: false)
        #expect(android.apns.isEmpty && android.fcm.map(\.name) == ["shop-android"])
        // A test push goes with one APNs app, and checks no FCM app.
        let test = try Checkup.apps(of: project, named: "shop-mac", sendTest: true)
        #expect(test.apns.map(\.name) == ["shop-mac"] && test.fcm.isEmpty)

        #expect(throws: Checkup.Refusal.self) { try Checkup.apps(of: project, named: nil, sendTest: true) }
        do throws(Checkup.Refusal) {
            _ = try Checkup.apps(of: project, named: "shop-andriod", sendTest: false)
            Issue.record("an app that is not in pushcamp.yaml was checked")
        } catch {
            #expect(error.message.contains("no such app (it has shop, shop-android, shop-mac)"))
        }
        do throws(Checkup.Refusal) {
            _ = try Checkup.apps(of: project, named: "shop-android", sendTest: true)
            Issue.record("a test push was sent with an FCM app")
        } catch {
            #expect(error.message.hasPrefix("--send-test sends an APNs push; shop-android is an FCM app"))
        }
    }

    @Test func diffComparesWithTheLatestRunTheRunNamedOrNothing() async throws {
        let temporary = try Self.project()
        defer { temporary.remove() }
        let campaign = try Self.loaded(temporary)
        let journal = MemoryJournal()

        // Never sent: nothing to compare with, and no journal at all is the same.
        #expect(try await PlanDiff.before(campaign, baseline: .run(nil), journal: journal) == nil)
        #expect(try await PlanDiff.before(campaign, baseline: .run(nil), journal: nil) == nil)

        let other = try await journal.createRun(campaign: "other", revision: "r0", now: 1)
        let first = try await journal.createRun(campaign: campaign.id, revision: "r1", now: 2)
        let second = try await journal.createRun(campaign: campaign.id, revision: "r2", now: 3)
        let latest = try #require(try await PlanDiff.before(campaign, baseline: .run(nil), journal: journal))
        #expect(latest.side.label == "run \(second.id)" && latest.side.revision == "r2")
        let named = try #require(try await PlanDiff.before(campaign, baseline: .run(first.id), journal: journal))
        #expect(named.side.label == "run \(first.id)" && named.changedFiles.isEmpty)

        // Another campaign's run, or one that does not exist, is refused by number.
        for number in [other.id, RunID(99)] {
            do {
                _ = try await PlanDiff.before(campaign, baseline: .run(number), journal: journal)
                Issue.record("run \(number) was compared with")
            } catch let refusal as PlanDiff.Refusal {
                #expect(refusal.message == "campaign c has no run \(number); `pushcamp runs` lists them")
            }
        }
        await #expect(throws: PlanFileError.self) {
            try await PlanDiff.before(campaign, baseline: .planFile(temporary.path("nope.json")), journal: journal)
        }
    }

    @Test func anImportMatchesTheRunNamedOrTheLatestPlannedFromTheseFiles() async throws {
        let temporary = try Self.project()
        defer { temporary.remove() }
        let campaign = try Self.loaded(temporary)
        let journal = MemoryJournal()

        for number in [nil, RunID(4)] {
            do {
                _ = try await EngagementImport.forRun(number, of: campaign, in: journal)
                Issue.record("a run that does not exist was matched")
            } catch let refusal as EngagementImport.Refusal {
                #expect(refusal.noSuchRun)
                #expect(
                    refusal.description
                        == (number.map { "there is no run \($0) in the journal" }
                            ?? "'c' has no run in the journal yet: send it first")
                )
            }
        }
        let current = try await journal.createRun(campaign: campaign.id, revision: campaign.revision, now: 1)
        #expect(try await EngagementImport.forRun(nil, of: campaign, in: journal).run.id == current.id)

        // A later run planned from other files: found, and refused because it cannot be matched.
        let edited = try await journal.createRun(campaign: campaign.id, revision: "elsewhere", now: 2)
        do {
            _ = try await EngagementImport.forRun(nil, of: campaign, in: journal)
            Issue.record("run \(edited.id) was matched with files it was not planned from")
        } catch let refusal as EngagementImport.Refusal {
            #expect(!refusal.noSuchRun && refusal.description.contains("run \(edited.id) kept no assignment"))
            #expect(refusal.description.contains("planned from revision elsewhere"))
        }
        // The run of these files keeps its assignment at its first import; it assigned no people,
        // so rows naming users are refused.
        let matcher = try await EngagementImport.forRun(current.id, of: campaign, in: journal)
        #expect(matcher.run.id == current.id && matcher.assignment.isComplete && matcher.assignment.userKey == nil)
        let user = try #require(
            try? EngagementRow.make(
                apnsID: nil,
                user: .string("u1"),
                event: .string("opened"),
                time: .integer(4_102_444_800),
                line: 2
            ).get()
        )
        do {
            _ = try await matcher.record([user], in: journal, now: 3)
            Issue.record("a row naming a user was matched in a run that assigned no people")
        } catch let refusal as EngagementImport.Refusal {
            #expect(refusal.description.contains("run \(current.id) assigned no people"), "\(refusal)")
        }
    }
}
