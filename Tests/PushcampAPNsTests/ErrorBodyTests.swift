import PushcampAPNs
import PushcampAPNsCore
import Testing

/// An error body comes from the network: whatever it holds, it gives a reason and a sane timestamp
/// or none, never a trap or a year −4712.
@Suite("APNs error bodies")
struct ErrorBodyTests {
    @Test func aTimestampIsKeptWhenItIsMillisecondsAfter1970() {
        let (reason, timestamp) = APNsConnectionHandler.parseError(
            Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8)
        )
        #expect(reason == .unregistered)
        #expect(timestamp == 1_700_000_000_000)
    }

    @Test(arguments: ["1e300", "-1", "-1e300", "253402300800000", "\"soon\"", "null"])
    func anyOtherTimestampIsIgnored(_ value: String) {
        let (reason, timestamp) = APNsConnectionHandler.parseError(
            Array(#"{"reason":"Unregistered","timestamp":\#(value)}"#.utf8)
        )
        #expect(reason == .unregistered)
        #expect(timestamp == nil)
    }
}
