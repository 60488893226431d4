import Crypto
import Foundation
import PushcampAPNs
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampSimulator
import PushcampTestSupport
import Testing

/// What a send says when its set-up fails before any connection: each cause named as itself, so a
/// missing CA bundle on a minimal host is not called a certificate that does not fit its key.
@Suite("Set-up errors named by their cause")
struct SetUpErrorsTests {
    struct Failure: Error {}

    @Test func aTLSSetUpFailureIsSaidByItsCause() {
        let error = Failure()
        let badCAFile = APNsClientConfiguration.setupProblem(
            caFile: "sim/ca.pem",
            certificate: nil,
            systemTrustFound: true,
            error: error
        )
        #expect(badCAFile.message.hasPrefix("cannot use ca_file sim/ca.pem: it must hold PEM certificates"))

        // A provider token needs no client certificate: without the system's authorities, that is what is said.
        let noAuthorities = APNsClientConfiguration.setupProblem(
            caFile: nil,
            certificate: nil,
            systemTrustFound: false,
            error: error
        )
        #expect(noAuthorities.code == .connect)
        #expect(noAuthorities.message.contains("this machine has no certificate authorities"))
        #expect(noAuthorities.message.contains("apt-get install ca-certificates"))
        #expect(!noAuthorities.message.contains("do not fit"))
        let certificateWithoutAuthorities = APNsClientConfiguration.setupProblem(
            caFile: nil,
            certificate: "push.pem",
            systemTrustFound: false,
            error: error
        )
        #expect(certificateWithoutAuthorities.message.contains("no certificate authorities"))

        let mismatch = APNsClientConfiguration.setupProblem(
            caFile: nil,
            certificate: "push.pem",
            systemTrustFound: true,
            error: error
        )
        #expect(mismatch.code == .credentials)
        #expect(mismatch.message.contains("the client certificate in push.pem and its private key do not fit together"))
        let other = APNsClientConfiguration.setupProblem(
            caFile: nil,
            certificate: nil,
            systemTrustFound: true,
            error: error
        )
        #expect(other.message.hasPrefix("TLS set-up failed: "))
    }

    @Test func theSystemsAuthoritiesAreFoundWhereTLSLooksForThem() {
        // This machine has them (the tests reach Apple's hosts' stand-ins through them otherwise).
        #expect(APNsClientConfiguration.systemTrustStores.contains { FileManager.default.fileExists(atPath: $0) })
    }

    @Test func aKeyFileNamedAsAppleNamesItGivesItsKeyID() {
        #expect(SendRun.keyID(inFileName: "/keys/AuthKey_2X9R4HXF34.p8") == "2X9R4HXF34")
        #expect(SendRun.keyID(inFileName: "AuthKey_2X9R4HXF34.p8") == "2X9R4HXF34")
        for name in [
            "key.p8", "AuthKey_2x9r4hxf34.p8", "AuthKey_2X9R4HXF3.p8", "AuthKey_2X9R4HXF34.pem", "x/AuthKey_.p8",
        ] {
            #expect(SendRun.keyID(inFileName: name) == nil, "\(name)")
        }
    }

    /// A project with app `shop` signing with key PUSHCAMP01 of team TEAMID0001 (its file `keyFile`).
    static func project(keyFile: String, more: String = "") throws -> TemporaryProject {
        try TemporaryProject(
            projectFile: "apps:\n  shop:\n    topic: com.example.shop\n    team_id: TEAMID0001\n"
                + "    key_id: PUSHCAMP01\n    key_file: \(keyFile)\n" + more
        )
    }

    @Test func aKeyIDThatIsNotTheOneInTheKeyFilesNameIsRefusedBeforeSending() throws {
        let project = try Self.project(keyFile: "${env:SHOP_KEY}")
        defer { project.remove() }
        let pem = P256.Signing.PrivateKey().pemRepresentation
        let right = try project.write("AuthKey_PUSHCAMP01.p8", pem)
        let wrong = try project.write("AuthKey_OTHERKEY99.p8", pem)
        let renamed = try project.write("shop.p8", pem)
        let (loaded, paths) = try ProjectJournal.project(workingDirectory: project.root).get()
        let app = try #require(loaded.apps["shop"])

        for fine in [right, renamed] {
            #expect(SendRun.credentialsProblem(of: app, paths: paths, environment: ["SHOP_KEY": fine]) == nil)
        }
        let problem = try #require(SendRun.credentialsProblem(of: app, paths: paths, environment: ["SHOP_KEY": wrong]))
        #expect(
            problem.message
                == "app shop: key_id PUSHCAMP01 is not the id in the key file's name, AuthKey_OTHERKEY99.p8: Apple "
                + "names a key AuthKey_<key id>.p8, so the key_id is OTHERKEY99 or the file is another key"
        )
        #expect(problem.location?.line == 6)
    }

    @Test func aCAFileWithoutCertificatesIsTheConnectionsSetUpAtItsLine() throws {
        let project = try Self.project(keyFile: "AuthKey_PUSHCAMP01.p8", more: "    ca_file: ca.pem\n")
        defer { project.remove() }
        try project.write("AuthKey_PUSHCAMP01.p8", P256.Signing.PrivateKey().pemRepresentation)
        try project.write("ca.pem", "not a certificate\n")
        let (loaded, paths) = try ProjectJournal.project(workingDirectory: project.root).get()
        let app = try #require(loaded.apps["shop"])
        let problem = try #require(SendRun.credentialsProblem(of: app, paths: paths, environment: [:]))
        #expect(problem.part == "connection set-up")
        #expect(problem.location?.line == 7)
        #expect(problem.message.contains("cannot use ca_file"), "\(problem.message)")
    }

    @Test func aClientCertificateWithAnotherKeyIsSaidNotToFit() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushcamp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let one = try SimulatorCredentials.generate().clientCertificatePEM(topic: "com.example.shop")
        let two = try SimulatorCredentials.generate().clientCertificatePEM(topic: "com.example.shop")
        func block(_ pem: String, _ kind: String) -> String {
            let start = pem.range(of: "-----BEGIN \(kind)-----")!.lowerBound
            let end = pem.range(of: "-----END \(kind)-----")!.upperBound
            return String(pem[start..<end]) + "\n"
        }
        let path = directory.appendingPathComponent("push.pem").path
        let key = two.contains("-----BEGIN PRIVATE KEY-----") ? "PRIVATE KEY" : "EC PRIVATE KEY"
        try (block(one, "CERTIFICATE") + block(two, key)).write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = APNsClientConfiguration(
            host: "127.0.0.1",
            port: 8443,
            authentication: .certificate(path: path, password: nil),
            caFile: nil,
            connections: 1
        )
        do throws(APNsClientError) {
            try configuration.validate()
            Issue.record("a certificate with another certificate's key was taken")
        } catch {
            #expect(error.message.contains("do not fit together"), "\(error.message)")
        }
    }
}
