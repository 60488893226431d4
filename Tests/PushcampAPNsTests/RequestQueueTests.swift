import PushcampAPNs
import Synchronization
import Testing

@Suite("Request queue")
struct RequestQueueTests {
    static func requests(_ tags: Range<Int>) -> [APNsRequest] {
        tags.map {
            APNsRequest(
                tag: $0,
                deviceToken: String(repeating: "a", count: 64),
                apnsID: "5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b",
                topic: "com.example.shop",
                pushType: "alert",
                priority: nil,
                expiration: nil,
                collapseID: nil,
                payload: Array("{}".utf8)
            )
        }
    }

    @Test func takesInArrivalOrderAcrossBatches() {
        let queue = RequestQueue()
        #expect(queue.add(Self.requests(0..<5)) == nil)
        #expect(queue.add(Self.requests(5..<12)) == nil)
        #expect(queue.count == 12)
        var tags: [Int] = []
        for limit in [3, 1, 4, 10] {
            let taken = queue.take(limit, connection: 0, wake: {})
            #expect(taken.count == min(limit, 12 - tags.count))
            tags += taken.map(\.tag)
        }
        #expect(tags == Array(0..<12))
        #expect(queue.count == 0)
    }

    @Test func requeuedRequestsGoFirstAndCloseHandsBackTheRestInOrder() {
        let queue = RequestQueue()
        #expect(queue.add(Self.requests(0..<6)) == nil)
        let first = queue.take(4, connection: 0, wake: {})
        queue.requeue(Array(first[2...]))
        #expect(queue.take(3, connection: 0, wake: {}).map(\.tag) == [2, 3, 4])
        #expect(queue.add(Self.requests(6..<8)) == nil)
        #expect(queue.close().map(\.tag) == [5, 6, 7])
        #expect(queue.add(Self.requests(8..<9))?.map(\.tag) == [8])
    }

    @Test func anEmptyTakeLeavesAWakeUpForTheNextArrival() {
        let queue = RequestQueue()
        let woken = Counter()
        #expect(queue.take(5, connection: 1, wake: { woken.add() }).isEmpty)
        #expect(queue.add(Self.requests(0..<2)) == nil)
        #expect(woken.value == 1)
        // Taken in full: the wake-up was used once and is not kept.
        _ = queue.take(2, connection: 1, wake: { woken.add() })
        #expect(woken.value == 1)
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
