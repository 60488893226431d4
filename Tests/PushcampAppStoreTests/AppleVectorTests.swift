import Crypto
import Foundation
import PushcampAppStore
import SwiftASN1
import Testing
import X509

/// Apple's own test vectors (Tests/PushcampAppStoreTests/Vectors/README.md).
@Suite("App Store payloads: Apple's vectors")
struct AppleVectorTests {
    static func vector(_ name: String) throws -> String {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Vectors"))
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func testRoot() throws -> Certificate {
        let url = try #require(
            Bundle.module.url(forResource: "testCA.der", withExtension: nil, subdirectory: "Vectors")
        )
        return try Certificate(derEncoded: Array(try Data(contentsOf: url)))
    }

    /// 2023-04-12T15:45:24Z, testNotification's signedDate, plus an hour.
    static let received = Date(timeIntervalSince1970: 1_681_314_324 + 3600)
    static let example = AppStoreApp(
        name: "example",
        bundleID: "com.example",
        appAppleID: 1234,
        environments: ["sandbox"]
    )

    func intake(roots: [Certificate]) -> NotificationIntake {
        NotificationIntake(apps: [Self.example], verifier: SignedPayloadVerifier(roots: roots))
    }

    @Test func theTestNotificationIsAcceptedUnderApplesTestRoot() async throws {
        let outcome = try await intake(roots: [try Self.testRoot()])
            .receive(signedPayload: try Self.vector("testNotification"), now: Self.received)
        guard case .accepted(let notification, let app) = outcome else {
            Issue.record("not accepted: \(outcome)")
            return
        }
        #expect(app == "example")
        #expect(notification.uuid == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(notification.type == "TEST" && notification.subtype == nil)
        #expect(notification.environment == "Sandbox" && notification.appAppleID == 1234)
        #expect(notification.signedDate == Date(timeIntervalSince1970: 1_681_314_324))
    }

    @Test func theTestNotificationIsRefusedUnderApplesRealRoot() async throws {
        await #expect(throws: AppStoreRefusal.self) {
            _ = try await intake(roots: [AppleRoot.certificate])
                .receive(signedPayload: try Self.vector("testNotification"), now: Self.received)
        }
        do {
            _ = try await intake(roots: [AppleRoot.certificate])
                .receive(signedPayload: try Self.vector("testNotification"), now: Self.received)
        } catch let refusal as AppStoreRefusal {
            #expect(refusal.code == .chain)
        }
    }

    @Test(arguments: [
        (-3600.0, AppStoreRefusal.Code.signedDate),  // an hour before it was signed
        (8 * 86_400.0, .signedDate),  // eight days after: Apple stops retrying after ~6.5
    ])
    func aNotificationOutsideItsTimeIsRefused(offset: Double, code: AppStoreRefusal.Code) async throws {
        do {
            _ = try await intake(roots: [try Self.testRoot()])
                .receive(
                    signedPayload: try Self.vector("testNotification"),
                    now: Date(timeIntervalSince1970: 1_681_314_324 + offset)
                )
            Issue.record("accepted")
        } catch let refusal as AppStoreRefusal {
            #expect(refusal.code == code, "\(refusal)")
        }
    }

    @Test func tamperingIsRefused() async throws {
        let parts = try Self.vector("testNotification").split(separator: ".").map(String.init)
        // The payload re-encoded with another bundle id: the signature no longer matches.
        let payload = try #require(Data(base64Encoded: base64(parts[1])))
        let forged = String(decoding: payload, as: UTF8.self).replacingOccurrences(
            of: "com.example",
            with: "com.evil.app"
        )
        let forgedPart = Data(forged.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        var signature = Array(try #require(Data(base64Encoded: base64(parts[2]))))
        signature[5] ^= 0x01
        let flipped = Data(signature).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        for jws in [[parts[0], forgedPart, parts[2]], [parts[0], parts[1], flipped]].map({ $0.joined(separator: ".") })
        {
            do {
                _ = try await intake(roots: [try Self.testRoot()]).receive(signedPayload: jws, now: Self.received)
                Issue.record("a tampered payload was accepted")
            } catch let refusal as AppStoreRefusal {
                #expect(refusal.code == .signature, "\(refusal)")
            }
        }
    }

    @Test func aCorrectlySignedNotificationForAnotherBundleIsQuarantined() async throws {
        // wrongBundleId carries no signedDate: its chain is checked now, and it is never accepted.
        let outcome = try await intake(roots: [try Self.testRoot()])
            .receive(signedPayload: try Self.vector("wrongBundleId"), now: Date())
        guard case .quarantined(let notification, let reason) = outcome else {
            Issue.record("not quarantined: \(outcome)")
            return
        }
        #expect(notification.bundleID == "com.example.wrong")
        #expect(reason.contains("no signedDate"))
        // The same decision for a dated one: another bundle, another environment, another app id.
        var dated = notification
        dated.signedDate = Self.received
        let configured = intake(roots: [])
        guard case .quarantined(_, let bundle) = configured.decide(dated) else {
            Issue.record("accepted")
            return
        }
        #expect(bundle == "bundle id com.example.wrong is not configured in pushcamp.yaml")
        dated.bundleID = "com.example"
        dated.environment = "Production"
        dated.appAppleID = 1234
        guard case .quarantined(_, let environment) = configured.decide(dated) else {
            Issue.record("accepted")
            return
        }
        #expect(environment.contains("environment production is not among"))
    }

    @Test func theTransactionInfoVectorDecodes() async throws {
        let (object, signedDate, _) = try await SignedPayloadVerifier(roots: [try Self.testRoot()])
            .verify(try Self.vector("transactionInfo"), now: Self.received, checkAge: false)
        #expect(signedDate == Date(timeIntervalSince1970: 1_672_956_154))
        #expect(object["bundleId"] as? String == "com.example")
    }

    @Test func theCompiledInRootIsApplesRootG3() {
        let der = try! AppleRoot.certificate.serializeAsPEM().derBytes
        let fingerprint = SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(
            fingerprint
                == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79"
        )
    }

    func base64(_ url: String) -> String {
        var text = url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return text
    }
}
