import Foundation
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

/// Audience data is another team's export: a bad cell costs one recipient, never the run.
@Suite("Hostile audience data")
struct HostileDataTests {
    @Test func unreadableRegistrationTimesOnDeadTokensCostOneRecipientEach() throws {
        let project = try makeProject(
            rows: 1,
            campaign: basicCampaign.replacingOccurrences(of: "holdout: 10%", with: "holdout: 0%")
        )
        defer { project.remove() }
        let values = [
            "nan", "inf", "-inf", "1e300", "99999999999999999", "-99999999999999999", "2027-01-01T00:00:00Z", "",
        ]
        try project.write(
            "audiences/a.csv",
            "token,name,registered_at\n"
                + values.enumerated().map { "\(TemporaryProject.token($0.offset)),n,\($0.element)" }.joined(
                    separator: "\n"
                )
                + "\n"
        )
        let campaign = try load(project)
        var suppression = Suppression(registeredAtAttribute: "registered_at")
        for index in values.indices {
            suppression.add(token: TemporaryProject.token(index), apnsTimestamp: 1_700_000_000_000, seenAt: .nan)
        }
        var planner = Planner(campaign: campaign)
        planner.history = DeliveryHistory(suppression: suppression)
        var sent: [Int] = []
        let summary = try planner.run { sent.append($0.seq) }
        // Only the row registered (validly) after APNs called the token dead is sent; the empty
        // cell is no registration time (suppressed); each unreadable cell costs its recipient,
        // located, and the plan goes on.
        #expect(sent == [6])
        #expect(summary.suppressed == 1)
        let refused = try #require(summary.failures[.registrationTimeUnreadable])
        #expect(refused.count == 6)
        #expect(refused.examples.map(\.location.line) == [2, 3, 4])
        #expect(refused.examples.first?.detail.contains("registered_at 'nan' is not a time") == true)
    }
}
