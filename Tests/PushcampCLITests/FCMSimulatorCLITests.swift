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
        try project.write("s.yaml", "fcm_quota: 0\nfcm_token_lifetime: 2h\nfcm_revoke_after: -1\n")
        let output = try CLI.run(["sim", "--port", "0", "--scenario", "s.yaml"], in: project.root)
        #expect(output.status == 1)
        #expect(output.stderr.contains("s.yaml:1:12: error:"), "\(output.stderr)")
        #expect(output.stderr.contains("'fcm_token_lifetime' must be 1s to 1h"), "\(output.stderr)")
        #expect(output.stderr.contains("s.yaml:3:19: error:"), "\(output.stderr)")
        let flags = try CLI.run(["sim", "--port", "0", "--fcm-token-lifetime", "0"], in: project.root)
        #expect(flags.status != 0)
        #expect(flags.stderr.contains("--fcm-token-lifetime must be 1 to 3600 seconds"), "\(flags.stderr)")
    }
}

/// An Android app in pushcamp.yaml: read, checked by `doctor` against the simulator, refused by
/// campaigns until FCM sending lands.
@Suite("Android apps in pushcamp.yaml")
struct FCMAppCLITests {
    static func writeProject(_ project: TemporaryProject, port: Int, serviceAccount: String) throws {
        try project.write(
            "pushcamp.yaml",
            """
            apps:
              shop-android:
                service_account: \(serviceAccount)
                endpoint: https://127.0.0.1:\(port)
                ca_file: sim/ca.pem
            """
        )
    }

    /// From a key file and from the key's JSON in a variable: credentials, token endpoint and FCM's
    /// endpoint each ok, and the key's secret never printed.
    @Test func doctorChecksTheServiceAccountAgainstTheSimulator() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(["--state-dir", "sim"], in: project.root)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.writeProject(project, port: sim.port, serviceAccount: "sim/fcm-service-account.json")
        var output = try CLI.run(["doctor"], in: project.root)
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("pushcamp.yaml: 1 app (1 on FCM)"))
        #expect(
            output.stdout.contains("app shop-android → custom endpoint https://127.0.0.1:\(sim.port) (instead of FCM)")
        )
        #expect(
            output.stdout.contains(
                "ok       app shop-android credentials: service account pushcamp-sim@pushcamp-sim.iam.gserviceaccount.com"
            )
        )
        #expect(
            output.stdout.contains(
                "ok       app shop-android token endpoint: https://127.0.0.1:\(sim.port)/token issued an access token (it lives 3600 s)"
            )
        )
        #expect(
            output.stdout.contains("ok       app shop-android TLS and HTTP/2: https://127.0.0.1:\(sim.port) answered")
        )

        let json = try String(
            contentsOf: project.root.appendingPathComponent("sim/fcm-service-account.json"),
            encoding: .utf8
        )
        try Self.writeProject(project, port: sim.port, serviceAccount: "${env:SHOP_FCM_KEY}")
        output = try CLI.run(["doctor"], in: project.root, environment: ["SHOP_FCM_KEY": json])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(!output.stdout.contains("PRIVATE KEY"))

        // A key Google never issued for this account: the token endpoint's OAuth error, exit 2.
        let stranger = json.replacingOccurrences(of: "\"pushcamp-sim@", with: "\"someone-else@")
        output = try CLI.run(["doctor"], in: project.root, environment: ["SHOP_FCM_KEY": stranger])
        #expect(output.status == 2)
        #expect(
            output.stdout.contains(
                "problem  app shop-android token endpoint: the token endpoint https://127.0.0.1:\(sim.port)/token refused the service account: invalid_grant"
            ),
            "\(output.stdout)"
        )
        #expect(output.stdout.contains("skipped  app shop-android TLS and HTTP/2"))
        let summary = sim.stop()
        #expect(summary.contains("fcm access tokens: 2 issued"), "\(summary)")
    }

    @Test func aBrokenServiceAccountIsNamedWithoutItsValue() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try project.write(
            "key.json",
            #"{"type":"service_account","project_id":"p","private_key":"-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n","client_email":"a@p.iam.gserviceaccount.com","private_key_id":"k"}"#
        )
        try Self.writeProject(project, port: 1, serviceAccount: "key.json")
        let output = try CLI.run(["doctor"], in: project.root)
        #expect(output.status == 2)
        #expect(
            output.stdout.contains("problem  app shop-android credentials: pushcamp.yaml:3:22: service_account "),
            "\(output.stdout)"
        )
        #expect(output.stdout.contains("'private_key' is not an RSA private key in PEM form"))
        #expect(!output.stdout.contains("c2VjcmV0"))
    }

    /// APNs settings on an FCM app are named where they are written; a campaign for the app with an
    /// APNs payload only, two Android apps, or an Android broadcast is refused where it is written.
    @Test func apnsSettingsOnAnAndroidAppAndCampaignsThatCannotReachItAreRefused() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try project.write(
            "pushcamp.yaml",
            "apps:\n  shop-android:\n    service_account: key.json\n    topic: com.example.shop\n    environment: sandbox\n    project_id: Bad_Id\n"
        )
        var output = try CLI.run(["validate"], in: project.root)
        #expect(output.status == 1)
        #expect(
            output.stdout.contains(
                "pushcamp.yaml:4:12: error: 'apps.shop-android.topic' is an APNs setting, and this app is an FCM app"
            ),
            "\(output.stdout)"
        )
        #expect(
            output.stdout.contains("pushcamp.yaml:5:18: error: 'apps.shop-android.environment' is an APNs setting"),
            "\(output.stdout)"
        )
        #expect(
            output.stdout.contains(
                "pushcamp.yaml:6:17: error: 'apps.shop-android.project_id' must be a Firebase project id"
            ),
            "\(output.stdout)"
        )
        try project.write("pushcamp.yaml", "apps:\n  shop-android:\n    service_account: key.json\n")
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop-android\naudience:\n  source: { inline: [x] }\nmessage:\n  payload: { aps: { alert: hi } }\n"
        )
        output = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root)
        #expect(output.status == 1)
        #expect(
            output.stdout.contains(
                "campaigns/c.yaml:6:3: error: app 'shop-android' is an Android app: the message needs a 'title' and 'body' (or 'data')"
            ),
            "\(output.stdout)"
        )
        try project.write(
            "pushcamp.yaml",
            "apps:\n  a1:\n    service_account: key.json\n  a2:\n    service_account: key.json\n"
        )
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: [a1, a2]\naudience:\n  source: { inline: [x] }\nmessage:\n  title: hi\n  data: { from: me }\n"
        )
        output = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root)
        #expect(output.status == 1)
        #expect(
            output.stdout.contains("campaigns/c.yaml:2:11: error: 'a2' and 'a1' are both Android apps"),
            "\(output.stdout)"
        )
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: a1\naudience:\n  source: { inline: [x] }\nmessage:\n  title: hi\n  data: { from: me }\n"
        )
        output = try CLI.run(["validate", "campaigns/c.yaml"], in: project.root)
        #expect(output.status == 1)
        #expect(
            output.stdout.contains("campaigns/c.yaml:7:17: error: data key 'from' is a key FCM reserves"),
            "\(output.stdout)"
        )
    }
}
