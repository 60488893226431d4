import PushcampModel
import Testing

@Suite("Campaign files: audience.subscriptions and trigger")
struct SubscriptionCampaignTests {
    func read(_ yaml: String) -> (Campaign?, [String]) {
        let (document, parse) = YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml")
        guard let document else { return (nil, parse.map(\.description)) }
        let (campaign, diagnostics) = CampaignReader.read(document)
        return (campaign, diagnostics.sortedByLocation().map(\.description))
    }

    @Test func subscriptionsAndATriggerAreReadWithTheirDefaults() throws {
        let (campaign, diagnostics) = read(
            """
            campaign: card-failed
            app: shop
            audience:
              source: { csv: audiences/a.csv }
              subscriptions: { status: [billing-retry, grace-period], product: premium, auto_renew: true, attribute: account }
            message:
              payload: { aps: { alert: hi } }
            trigger: { app_store: DID_FAIL_TO_RENEW, subtype: GRACE_PERIOD, delay: 10m }
            """
        )
        #expect(diagnostics.isEmpty)
        let spec = try #require(campaign?.audience.subscriptions)
        #expect(spec.statuses == ["billing-retry", "grace-period"])
        #expect(spec.products == ["premium"])
        #expect(spec.autoRenew == true)
        #expect(spec.attribute == "account" && spec.key == .appAccountToken)
        #expect(spec.admits(status: "grace-period", product: "premium", autoRenew: true))
        #expect(!spec.admits(status: "active", product: "premium", autoRenew: true))
        #expect(!spec.admits(status: "billing-retry", product: "basic", autoRenew: true))
        #expect(!spec.admits(status: "billing-retry", product: "premium", autoRenew: nil))
        #expect(spec.normalized("7E3FB20B-4CDB-47CC-936D-99D65F608138") == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        let trigger = try #require(campaign?.trigger)
        #expect(trigger.matches(type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD"))
        #expect(!trigger.matches(type: "DID_FAIL_TO_RENEW", subtype: nil))
        #expect(!trigger.matches(type: "EXPIRED", subtype: "GRACE_PERIOD"))
        #expect(trigger.delay.seconds == 600)

        let (byTransaction, _) = read(
            """
            campaign: c
            app: shop
            audience:
              source: { csv: audiences/a.csv }
              subscriptions: { by: original_transaction_id }
            message:
              payload: { aps: { alert: hi } }
            """
        )
        let join = try #require(byTransaction?.audience.subscriptions)
        #expect(join.key == .originalTransactionID && join.attribute == "original_transaction_id")
        #expect(join.statuses.isEmpty && join.admits(status: nil, product: nil, autoRenew: nil))
        #expect(join.normalized("ABC") == "ABC")
    }

    @Test func mistakesReadLikeCompilerErrorsAndUndocumentedTypesWarn() {
        let (campaign, diagnostics) = read(
            """
            campaign: c
            app: shop
            audience:
              source: { csv: audiences/a.csv }
              subscriptions: { status: [biling-retry], by: account, colour: red }
            message:
              payload: { aps: { alert: hi } }
            schedule: { at: 2030-01-01T09:00:00Z }
            trigger: { app_store: DID_FAIL_TO_RENEWW, delay: 30d }
            """
        )
        #expect(campaign == nil)
        #expect(
            diagnostics
                == [
                    "campaigns/c.yaml:5:57: error: unknown key 'colour' in 'audience.subscriptions' (expected one of: status, product, auto_renew, attribute, by)",
                    "campaigns/c.yaml:5:29: error: unknown subscription status 'biling-retry'; did you mean 'billing-retry'?",
                    "campaigns/c.yaml:5:48: error: 'audience.subscriptions.by' must be app_account_token or original_transaction_id, found 'account'",
                    "campaigns/c.yaml:9:1: error: a campaign has a 'schedule' or a 'trigger', not both: a trigger sends when its event arrives",
                    "campaigns/c.yaml:9:23: warning: 'DID_FAIL_TO_RENEWW' is not an App Store notification type Apple documents (the trigger fires only if Apple sends one); did you mean 'DID_FAIL_TO_RENEW'?",
                    "campaigns/c.yaml:9:50: error: 'trigger.delay' is 30d; a trigger waits at most 7d",
                ].sorted(),
            "\(diagnostics)"
        )
    }
}
