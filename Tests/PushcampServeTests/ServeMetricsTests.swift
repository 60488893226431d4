import Crypto
import PushcampAPNs
import PushcampServe
import PushcampTestSupport
import Testing

@Suite("serve's metrics")
struct ServeMetricsTests {
    /// Issue 43: `pushcamp_provider_tokens_minted_total` counts every token this process mints,
    /// the first included (it read 0 across a whole cluster run), per key, when scraped.
    @Test func everyProviderTokenMintedIsCountedTheFirstIncluded() {
        let owners = ProviderTokenOwners()
        let metrics = ServeMetrics(providerTokens: owners)
        let clock = ManualClock(1_800_000_000)
        let tokens = owners.tokens(
            teamID: "ABCDE12345",
            keyID: "KEY1234567",
            key: P256.Signing.PrivateKey(),
            clock: clock,
            cacheDirectory: nil
        )
        let series = #"pushcamp_provider_tokens_minted_total{team_id="ABCDE12345",key_id="KEY1234567"}"#
        #expect(!String(decoding: metrics.exposition(), as: UTF8.self).contains(series))
        _ = tokens.current()
        _ = tokens.current()
        #expect(String(decoding: metrics.exposition(), as: UTF8.self).contains(series + " 1"))
        // The renewal 50 minutes later is the second; scraping again counts nothing twice.
        clock.advance(50 * 60)
        _ = tokens.current()
        #expect(String(decoding: metrics.exposition(), as: UTF8.self).contains(series + " 2"))
        #expect(String(decoding: metrics.exposition(), as: UTF8.self).contains(series + " 2"))
    }
}
