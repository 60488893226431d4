import PushcampReport
import Testing

/// What an event was worth per recipient (revenue), its interval, and the difference against
/// the holdout: figures checked against an independent computation (Python, the same formulas).
@Suite("Value per recipient")
struct AmountTests {
    @Test func valuePerRecipientCountsEveryoneAssignedWithItsInterval() throws {
        // 50 of 1,000 bought for 10.00; 10 of 500 held out did.
        let variant = Amount(total: 500, squares: 5_000, of: 1_000)
        let holdout = Amount(total: 100, squares: 1_000, of: 500)
        #expect(variant.perRecipient == 0.5 && holdout.perRecipient == 0.2)
        let interval = try #require(variant.interval)
        #expect(abs(interval.lowerBound - 0.36485121312830815) < 1e-12)
        #expect(abs(interval.upperBound - 0.6351487868716919) < 1e-12)
        let held = try #require(holdout.interval)
        #expect(abs(held.lowerBound - 0.0771639467865436) < 1e-12 && abs(held.upperBound - 0.32283605321345643) < 1e-12)
        let lift = try #require(variant.difference(from: holdout))
        #expect(abs(lift.difference - 0.3) < 1e-12)
        #expect(abs(lift.interval.lowerBound - 0.11736952455313193) < 1e-12)
        #expect(abs(lift.interval.upperBound - 0.48263047544686805) < 1e-12)
        #expect(lift.verdict == .better)
        #expect(holdout.difference(from: variant)?.verdict == .worse)
        // Nobody assigned, or one: no interval.
        #expect(Amount(total: 0, squares: 0, of: 0).perRecipient == nil)
        #expect(Amount(total: 3, squares: 9, of: 1).interval == nil)
        #expect(Amount(total: 3, squares: 9, of: 1).difference(from: holdout) == nil)
        // The same value for everyone: no spread, an interval of width 0.
        #expect(Amount(total: 20, squares: 40, of: 10).interval == 2...2)
    }
}
