import PushcampModel
import Testing

/// Android apps in pushcamp.yaml: a `service_account` makes an app an FCM app.
@Suite("Android apps in pushcamp.yaml")
struct FCMAppTests {
    static func read(_ text: String) -> (Project?, [String]) {
        let (document, problems) = YAMLDocument.parse(Array(text.utf8), path: "pushcamp.yaml")
        guard let document else { return (nil, problems.map(\.description)) }
        let (project, diagnostics) = ProjectReader.read(document)
        return (project, diagnostics.map(\.description))
    }

    @Test func anAppWithAServiceAccountIsAnAndroidAppBesideTheIOSOne() throws {
        let (project, problems) = Self.read(
            """
            apps:
              shop-ios: { topic: com.example.shop, certificate: cert.p12 }
              shop-android:
                service_account: ${env:SHOP_FCM_KEY}
                project_id: "123456789012"
                endpoint: https://127.0.0.1:8443
            """
        )
        #expect(problems.isEmpty, "\(problems)")
        let app = try #require(project?.fcmApps["shop-android"])
        #expect(project?.appNames == ["shop-ios"])
        #expect(project?.fcmAppNames == ["shop-android"])
        #expect(app.serviceAccount.environmentNames == ["SHOP_FCM_KEY"])
        #expect(app.projectID == "123456789012")
        #expect(app.sendEndpoint == "https://127.0.0.1:8443")
        #expect(app.destinationText == "→ custom endpoint https://127.0.0.1:8443 (instead of FCM)")
        #expect(
            FCMAppConfig(name: "a", serviceAccount: app.serviceAccount).destinationText == "→ FCM (fcm.googleapis.com)"
        )
    }

    @Test(arguments: [
        ("shop-prod", true), ("my-project-123", true), ("123456789012", true), ("short", false),
        ("Shop-prod", false), ("shop_prod", false), ("shop-prod-", false), ("9shop-prod", false),
        (String(repeating: "a", count: 31), false),
    ])
    func projectIDsAsGoogleWritesThem(id: String, valid: Bool) {
        let (_, problems) = Self.read("apps:\n  a:\n    service_account: k.json\n    project_id: \"\(id)\"\n")
        #expect(problems.isEmpty == valid, "\(problems)")
    }

    @Test func anFCMSettingOnAnAPNsAppIsNamed() {
        let (_, problems) = Self.read("apps:\n  a:\n    topic: t\n    certificate: c.p12\n    project_id: shop-prod\n")
        #expect(
            problems.first?.hasPrefix("pushcamp.yaml:5:17: error: 'apps.a.project_id' is an FCM setting") == true,
            "\(problems)"
        )
    }
}
