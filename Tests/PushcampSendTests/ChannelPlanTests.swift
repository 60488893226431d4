import PushcampJournal
import PushcampModel
import PushcampSend
import Testing

@Suite("What `channels apply` would do")
struct ChannelPlanTests {
    static let place = ChannelPlan.Place(bundleID: "com.example.shop", environment: .sandbox)

    static func spec(_ name: String, storage: ChannelStorage = .latest) -> (spec: ChannelSpec, bundleID: String) {
        (
            ChannelSpec(
                name: name,
                app: "shop",
                storage: storage,
                environment: .sandbox,
                location: SourceLocation(path: "pushcamp.yaml", line: 1, column: 1)
            ),
            "com.example.shop"
        )
    }

    static func record(_ name: String, id: String, policy: Int = 1) -> ChannelRecord {
        ChannelRecord(
            name: name,
            bundleID: "com.example.shop",
            environment: "sandbox",
            channelID: id,
            storagePolicy: policy,
            createdAt: 0
        )
    }

    @Test func declaredRecordedAndListedMeet() {
        let plan = ChannelPlan.make(
            declared: [Self.spec("new"), Self.spec("kept"), Self.spec("gone"), Self.spec("changed", storage: .none)],
            recorded: [
                Self.record("kept", id: "a"), Self.record("gone", id: "b"), Self.record("changed", id: "c"),
                Self.record("dropped", id: "d"),
            ],
            apple: [Self.place: ["a", "c", "d", "x"]]
        )
        #expect(plan.entries.map(\.name) == ["new", "kept", "gone", "changed", "dropped"])
        #expect(plan.entries.map(\.action) == [.create, .keep, .recreate, .keep, .delete])
        #expect(plan.entries[3].drift == "created with storage latest, declared with storage none")
        #expect(plan.orphans == [Self.place: ["x"]])
        // 4 at APNs; +1 new, +1 made again, -1 deleted.
        #expect(plan.counts.map(\.now) == [4] && plan.counts.map(\.after) == [5])
        #expect(plan.changes == 3)
    }

    @Test func offlineAssumesRecordedChannelsExist() {
        let plan = ChannelPlan.make(
            declared: [Self.spec("kept"), Self.spec("new")],
            recorded: [Self.record("kept", id: "a")],
            apple: nil
        )
        #expect(plan.entries.map(\.action) == [.keep, .create])
        #expect(plan.orphans.isEmpty)
        #expect(plan.counts.map(\.now) == [nil] && plan.counts.map(\.after) == [2])
    }
}
