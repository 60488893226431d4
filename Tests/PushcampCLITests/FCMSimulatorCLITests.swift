import Foundation
import PushcampFCMCore
import PushcampTestSupport
import Testing

/// `pushcamp sim` plays FCM too: it writes a service-account key file pointing at itself.
@Suite("pushcamp sim speaks FCM")
struct FCMSimulatorCLITests {
    @Test func theSimulatorWritesAPrivateServiceAccountPointingAtItself() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(["--state-dir", "sim", "--fcm-project", "shop-prod-1"], in: project.root)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let path = project.root.appendingPathComponent("sim/fcm-service-account.json").path
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let account = try ServiceAccount(json: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(account.projectID == "shop-prod-1")
        #expect(account.tokenURI == "https://127.0.0.1:\(sim.port)/token")
        #expect(account.clientEmail == "pushcamp-sim@shop-prod-1.iam.gserviceaccount.com")
        _ = sim.stop()
    }

    @Test func fcmFaultsAreCheckedWhereTheyAreWritten() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try project.write("s.yaml", "fcm_quota: 0\nfcm_token_lifetime: 2h\n")
        let output = try CLI.run(["sim", "--port", "0", "--scenario", "s.yaml"], in: project.root)
        #expect(output.status == 1)
        #expect(output.stderr.contains("s.yaml:1:12: error:"), "\(output.stderr)")
        #expect(output.stderr.contains("'fcm_token_lifetime' must be 1s to 1h"), "\(output.stderr)")
        let flags = try CLI.run(["sim", "--port", "0", "--fcm-token-lifetime", "0"], in: project.root)
        #expect(flags.status != 0)
        #expect(flags.stderr.contains("--fcm-token-lifetime must be 1 to 3600 seconds"), "\(flags.stderr)")
    }
}
