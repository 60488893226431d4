import Crypto
import Foundation
import PushcampTestSupport
import Testing

@Suite("pushcamp appstore history against a stub of the App Store Server API", .serialized)
struct AppStoreHistoryCLITests {
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"

    /// A project whose app trusts `chain` and has an In-App Purchase key for the stub at `port`.
    static func project(_ chain: AppStoreTestChain, key: P256.Signing.PrivateKey, port: Int) throws -> TemporaryProject
    {
        let project = try TemporaryProject(
            projectFile: TemporaryProject.defaultProjectFile + """

                    app_store:
                      bundle_id: com.example.shop
                      app_apple_id: 1234567890
                      trusted_roots: [test-root.pem]
                      api: { issuer_id: \(issuer), key_id: 2X9R4HXF34, key_file: iap.p8, endpoint: "http://127.0.0.1:\(port)" }
                """
        )
        try project.write("test-root.pem", chain.rootPEM)
        try project.write("iap.p8", key.pemRepresentation)
        return project
    }

    /// `CLI.run` on a thread of its own: the stub's handlers run on Swift's cooperative pool, which
    /// a test blocked in `waitUntilExit` (with others beside it, on two cores) could starve.
    static func run(_ arguments: [String], in directory: URL) async throws -> CLI.Output {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try CLI.run(arguments, in: directory) })
            }
        }
    }

    @Test func pagesA429AndRepeatsAreFedThroughTheVerifiedIdempotentPath() async throws {
        let chain = try AppStoreTestChain()
        let key = P256.Signing.PrivateKey()
        // Ten days old: past the receiver's 7-day limit for POSTs, which a back-fill does not apply.
        let old = Date().addingTimeInterval(-10 * 86_400)
        let payloads = try [
            chain.sign(
                chain.subscriptionNotification(
                    type: "DID_FAIL_TO_RENEW",
                    original: "2000000001",
                    appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                    signedDate: old
                )
            ),
            // For an environment the app does not take: quarantined. (Another app's notification signed
            // by this test root would be refused: the root is trusted for shop only.)
            chain.sign(AppStoreTestChain.notification(environment: "Sandbox")),
            chain.sign(AppStoreTestChain.notification(type: "DID_RENEW", subtype: nil)),
            // Signed by a chain this project does not trust: refused, never kept.
            AppStoreTestChain().sign(AppStoreTestChain.notification()),
        ]
        let stub = try await AppStoreAPIStub(
            pages: [Array(payloads[0..<2]), Array(payloads[2...])],
            rateLimited: [1],
            issuerID: Self.issuer,
            keyID: "2X9R4HXF34",
            publicKey: key.publicKey,
            bundleID: "com.example.shop"
        )
        defer { stub.stop() }
        let project = try Self.project(chain, key: key, port: stub.port)
        defer { project.remove() }

        let first = try await Self.run(["appstore", "history", "--since", "30d", "--only-failures"], in: project.root)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        // At least the 429's wait (a request lost on a busy machine is retried, and waited for, too).
        #expect(
            first.stdout.contains("2 pages, ") && first.stdout.contains("for Apple's rate limit"),
            "\(first.stdout)"
        )
        #expect(
            first.stdout.hasSuffix("4 notifications: 3 new (2 stored, 1 quarantined), 0 already kept, 1 refused\n"),
            "\(first.stdout)"
        )
        #expect(first.stderr.contains("refused: "), "\(first.stderr)")
        // Every page was asked with the same body, the second with the first's token (twice: the 429).
        let requests = stub.requests
        #expect(requests.filter { $0.status == 429 }.map(\.paginationToken) == ["page-1"], "\(requests)")
        #expect(requests.first?.paginationToken == nil && requests.last?.paginationToken == "page-1")
        #expect(requests.last?.status == 200)
        #expect(Set(requests.map(\.body)).count == 1)
        #expect(requests.first?.body.contains("\"onlyFailures\":true") == true)
        let subscriptions = try await Self.run(["appstore", "subscriptions"], in: project.root)
        #expect(subscriptions.stdout.hasPrefix("2000000001  billing-retry"), "\(subscriptions.stdout)")

        // Asked again: everything is kept already, nothing is stored twice.
        let second = try await Self.run(["appstore", "history", "--since", "30d"], in: project.root)
        #expect(
            second.stdout.hasSuffix("4 notifications: 0 new (0 stored, 0 quarantined), 3 already kept, 1 refused\n"),
            "\(second.stdout)\(second.stderr)"
        )
        let listed = try await Self.run(["appstore", "notifications", "--format", "json"], in: project.root)
        #expect((try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])?.count == 3)

        // With --fire-triggers (here into a journal of its own), a matching trigger campaign gets a
        // pending firing for `serve` to send; without it, none.
        try project.write(
            "campaigns/card.yaml",
            """
            campaign: card-failed
            app: shop
            audience:
              source: { inline: [{ token: \(TemporaryProject.token(0)), app_account_token: 7e3fb20b-4cdb-47cc-936d-99d65f608138 }] }
            message:
              payload: { aps: { alert: "update your card" } }
            trigger: { app_store: DID_FAIL_TO_RENEW }
            """
        )
        let other = ["--journal", "other.sqlite"]
        _ = try await Self.run(["appstore", "history"] + other + ["--fire-triggers"], in: project.root)
        let firings = try await Self.run(["appstore", "triggers", "--format", "json"] + other, in: project.root)
        let rows = try JSONSerialization.jsonObject(with: Data(firings.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(rows.map { $0["status"] as? String } == ["pending"], "\(firings.stdout)\(firings.stderr)")
        #expect(try await Self.run(["appstore", "triggers"], in: project.root).stdout == "no trigger firings yet\n")

        // Another key: Apple answers 401, and the command says what to check (exit 2).
        try project.write("iap.p8", P256.Signing.PrivateKey().pemRepresentation)
        let refused = try await Self.run(["appstore", "history"], in: project.root)
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("refused the key (401 Unauthorized): check api.issuer_id"), "\(refused.stderr)")
    }
}
