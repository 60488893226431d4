import PushcampModel
import Testing

@Suite("Campaign files: readout (primary metric, guardrails, the holdout's events, attribution window)")
struct ReadoutSpecTests {
    func read(_ readout: String) -> (ReadoutSpec?, [String]) {
        let yaml = """
            campaign: c
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: { aps: { alert: hi } }
            \(readout)
            """
        let (document, parse) = YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml")
        guard let document else { return (nil, parse.map(\.description)) }
        let (campaign, diagnostics) = CampaignReader.read(document)
        return (campaign?.readout, diagnostics.sortedByLocation().map(\.description))
    }

    @Test func aReadoutIsReadWithItsDefaults() throws {
        let (spec, diagnostics) = read(
            "readout: { primary: converted, guardrails: [unsubscribed, uninstalled], not_in_holdout: [opened, clicked], window: 72h }"
        )
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(
            spec
                == ReadoutSpec(
                    primary: "converted",
                    guardrails: ["unsubscribed", "uninstalled"],
                    notInHoldout: ["opened", "clicked"],
                    window: 72 * 3_600
                )
        )
        // One name alone is a list of one; left out, opens are what the holdout cannot have.
        let (single, _) = read("readout: { guardrails: unsubscribed }")
        #expect(single == ReadoutSpec(guardrails: ["unsubscribed"], notInHoldout: ["opened"]))
        // An empty list says the holdout can have every event.
        let (none, _) = read("readout: { not_in_holdout: [] }")
        #expect(none?.notInHoldout == [])
        let (absent, _) = read("")
        #expect(absent == nil)
    }

    @Test func mistakesAreNamedByKeyAndLine() {
        for (readout, expected) in [
            (
                "readout: { primary: converted, guardrails: [converted] }",
                "7:44: error: readout.guardrails names 'converted', the primary event"
            ),
            ("readout: { window: 10s }", "7:20: error: readout.window is between 1m and 90d"),
            ("readout: { window: 91d }", "7:20: error: readout.window is between 1m and 90d"),
            ("readout: { window: soon }", "7:20: error: 'readout.window': 'soon' is not a duration"),
            (
                "readout: { not_in_holdout: [opened, opened] }",
                "7:37: error: readout.not_in_holdout names event 'opened' twice"
            ),
            ("readout: { primary: [a, b] }", "7:21: error: 'readout.primary' must be a single value"),
            ("readout: { winner: a }", "7:12: error:"),
        ] {
            let (_, diagnostics) = read(readout)
            #expect(diagnostics.contains { $0.contains(expected) }, "\(readout): \(diagnostics)")
        }
    }

    /// An event counts from the run's start to the end of the window: never before the push, and,
    /// without a window, at any time after it.
    @Test func theAttributionWindowRunsFromTheRunsStart() {
        let start = 1_800_000_000.0
        let window = ReadoutSpec(window: 72 * 3_600).attributionWindow(from: start)
        #expect(window.contains(start) && window.contains(start + 72 * 3_600))
        #expect(!window.contains(start - 1) && !window.contains(start + 72 * 3_600 + 1))
        let open = ReadoutSpec().attributionWindow(from: start)
        #expect(!open.contains(start - 1) && open.contains(start + 10 * 365 * 86_400))
    }
}
