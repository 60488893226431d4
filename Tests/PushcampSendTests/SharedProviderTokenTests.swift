import Crypto
import Foundation
import PushcampAPNs
import PushcampFCM
import PushcampFCMCore
import PushcampJournal
import PushcampSend
import PushcampSimulator
import PushcampTestSupport
import Synchronization
import Testing

/// One provider token for every node on a journal: a cluster mints no more often than one node.
@Suite("Provider tokens shared through the journal")
struct SharedProviderTokenTests {
    /// A process on a journal that holds no token yet (a new file, another journal, a read-only
    /// command's empty one) takes the token this machine cached instead of minting a second one
    /// within 20 minutes, and shares it through its journal.
    @Test func aCachedTokenIsAdoptedAndSharedWhenTheJournalHasNone() async throws {
        let cache = NSTemporaryDirectory() + "pushcamp-token-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let clock = ManualClock(1_800_000_000)
        let key = P256.Signing.PrivateKey()
        func process() -> ProviderTokens {
            ProviderTokens(teamID: "ABCDE12345", keyID: "KEY1234567", key: key, clock: clock, cacheDirectory: cache)
        }
        let first = process()
        await first.synchronize(through: MemoryJournal())
        #expect(first.mintedCount == 1)
        clock.advance(60)
        let journal = MemoryJournal()
        let second = process()
        await second.synchronize(through: journal)
        #expect(second.mintedCount == 0)
        #expect(second.current().bearer == first.current().bearer)
        #expect(try await journal.providerToken(for: second.sharedName) == String(first.current().bearer.dropFirst(7)))
    }

    @Test func nodesOnOneJournalShareOneTokenAndOneOfThemRefreshesIt() async throws {
        let journal = MemoryJournal()
        let clock = ManualClock(1_800_000_000)
        let key = P256.Signing.PrivateKey()
        // Three nodes: three processes, each with its own owner of the key's tokens.
        let nodes = (0..<3).map { _ in ProviderTokens(teamID: "ABCDE12345", keyID: "KEY1234567", key: key, clock: clock)
        }
        for node in nodes { await node.synchronize(through: journal) }
        #expect(nodes.map(\.mintedCount) == [1, 0, 0])
        let first = nodes[0].current().bearer
        #expect(nodes.allSatisfy { $0.current().bearer == first })

        // 49 minutes on, all three look at once: one refreshes, the others adopt its token.
        clock.advance(49 * 60)
        await withTaskGroup { group in
            for node in nodes { group.addTask { await node.synchronize(through: journal) } }
        }
        #expect(nodes.map(\.mintedCount).reduce(0, +) == 2)
        let second = nodes[0].current().bearer
        #expect(second != first)
        #expect(nodes.allSatisfy { $0.current().bearer == second })
        #expect(try await journal.providerToken(for: nodes[0].sharedName) == String(second.dropFirst(7)))

        // A node that starts later adopts the stored token instead of minting.
        let late = ProviderTokens(teamID: "ABCDE12345", keyID: "KEY1234567", key: key, clock: clock)
        await late.synchronize(through: journal)
        #expect(late.mintedCount == 0 && late.current().bearer == second)
        // Another key's token is never adopted.
        let other = ProviderTokens(
            teamID: "ABCDE12345",
            keyID: "KEY1234567",
            key: P256.Signing.PrivateKey(),
            clock: clock
        )
        await other.synchronize(through: journal)
        #expect(other.mintedCount == 1 && other.current().bearer != second)
    }
}

/// FCM access tokens share the provider token's store: three nodes on one SQLite journal (and on
/// PostgreSQL, when the tests have it) use the one token a node fetched.
@Suite("FCM access tokens shared through the journal")
struct SharedAccessTokenTests {
    static let account = try! FCMSimulation.generateAccount(tokenURI: "https://127.0.0.1/token")

    /// Counts the tokens a token endpoint in memory issued, each named by its number.
    final class Fetched: Sendable {
        let count = Mutex(0)
        var value: Int { count.withLock { $0 } }

        func next() -> Int {
            count.withLock { count in
                count += 1
                return count
            }
        }
    }

    static func node(clock: ManualClock, fetched: Fetched) -> AccessTokens {
        AccessTokens(account: account, clock: clock) { _, _ throws(FCMClientError) in
            TokenEndpoint.Issued(token: "ya29.\(fetched.next())", lifetime: 3600)
        }
    }

    @Test func nodesOnOneSQLiteJournalUseOneToken() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let journal = try SQLiteJournal(path: project.root.appendingPathComponent("journal.sqlite").path)
        let clock = ManualClock(1_800_000_000)
        let fetched = Fetched()
        let nodes = (0..<3).map { _ in Self.node(clock: clock, fetched: fetched) }
        for node in nodes { await node.synchronize(through: journal) }
        #expect(fetched.value == 1)
        #expect(Set(nodes.compactMap { $0.current()?.bearer }) == ["Bearer ya29.1"])
        let stored = try await journal.providerToken(for: nodes[0].sharedName)
        #expect(stored == "1800003600 ya29.1")
        // Near its end one node fetches the next, and the others take it.
        clock.advance(3600 - 400)
        for node in nodes { await node.synchronize(through: journal) }
        #expect(fetched.value == 2)
        #expect(Set(nodes.compactMap { $0.current()?.bearer }) == ["Bearer ya29.2"])
    }
}
