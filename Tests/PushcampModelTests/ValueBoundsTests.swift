import PushcampModel
import Testing

/// Every duration, rate and delay read from a file is range-checked where it is read: extreme
/// values are located errors, never a trap further down.
@Suite("Value bounds")
struct ValueBoundsTests {
    @Test(arguments: ["9223372036854775807s", "3651d", "99999999999999999999999h", "1000000000d"])
    func durationsBeyondTenYearsAreRefused(_ text: String) {
        guard case .failure(let error) = TimeSpan.parse(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(error.message.contains("too long: at most 3650d"), "\(error.message)")
    }

    @Test func tenYearsIsTheLongest() throws {
        #expect(try TimeSpan.parse("3650d").get() == TimeSpan.maximum)
    }

    @Test(arguments: ["1e-300/s", "0.0001/h", "1e22/s", "100000001/s", "1e308/min"])
    func ratesOutsideTheBoundsAreRefused(_ text: String) {
        guard case .failure(let error) = Rate.parse(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(error.message.contains("too slow") || error.message.contains("too fast"), "\(error.message)")
    }

    @Test(arguments: ["1/h", "100000000/s", "10000000/s"])
    func ratesAtTheBoundsAreKept(_ text: String) throws {
        _ = try Rate.parse(text).get()
    }

    @Test func retryDelaysAreAtMostAnHour() {
        let yaml =
            CampaignDiagnosticsTests.valid
            + "\nretry: { TooManyRequests: 9223372036854775807s, ServiceUnavailable: 2h, InternalServerError: 1h }\n"
        #expect(
            CampaignDiagnosticsTests().diagnostics(yaml) == [
                "campaigns/c.yaml:7:27: error: 'retry.TooManyRequests': '9223372036854775807s' is too long: at most 3650d (ten years)",
                "campaigns/c.yaml:7:69: error: 'retry.ServiceUnavailable' is 2h; a retry delay is at most 1h (write never to not retry)",
            ]
        )
    }

    @Test func resendUnknownIsTrueOrFalseAndTrueUnlessSaid() throws {
        let yaml = CampaignDiagnosticsTests.valid + "\nretry: { resend_unknown: sometimes, resend_unknwon: false }\n"
        let diagnostics = CampaignDiagnosticsTests().diagnostics(yaml)
        #expect(diagnostics.count == 2, "\(diagnostics)")
        #expect(diagnostics.first == "campaigns/c.yaml:7:26: error: 'retry.resend_unknown' must be true or false")
        #expect(
            diagnostics.last?.contains("unknown key 'retry.resend_unknwon'; did you mean 'resend_unknown'?") == true
        )
        let off = CampaignDiagnosticsTests.valid + "\nretry: { resend_unknown: false }\n"
        for (yaml, resends) in [(off, false), (CampaignDiagnosticsTests.valid, true)] {
            let document = try #require(YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml").0)
            let campaign = try #require(CampaignReader.read(document).0)
            #expect(campaign.retry.resendUnknown == resends)
        }
    }

    @Test func anExpirationBeyondTenYearsIsALocatedError() {
        let yaml = CampaignDiagnosticsTests.valid + "\n  expiration: 9223372036854775807s\n"
        let diagnostics = CampaignDiagnosticsTests().diagnostics(yaml)
        #expect(diagnostics.count == 1, "\(diagnostics)")
        #expect(diagnostics.first?.hasPrefix("campaigns/c.yaml:7:15: error:") == true, "\(diagnostics)")
    }

    /// Found by fuzz-jsonl: a string ending in a backslash at the end of the input reported an
    /// offset past the input (a column beyond the line).
    @Test func aJSONErrorIsAlwaysInsideTheInput() {
        for text in [#"{"to0\"#, #"["\"#, #"""#, #"{"a":"\u12"#] {
            let bytes = Array(text.utf8)
            do {
                _ = try JSONParser.parse(bytes)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.offset <= bytes.count, "\(text): offset \(error.offset) of \(bytes.count)")
            }
        }
    }
}
