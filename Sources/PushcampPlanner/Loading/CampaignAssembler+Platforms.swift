import PushcampFCMCore
import PushcampModel
import PushcampTemplates
import Yams

extension CampaignAssembler {
    /// The apps `app:` names, resolved: at most one APNs app and one FCM app.
    mutating func resolveApps() -> (apns: AppConfig?, fcm: FCMAppConfig?)? {
        var apns: AppConfig?
        var fcm: FCMAppConfig?
        var failed = false
        let names = campaign.apps.isEmpty ? [(campaign.app, campaign.appLocation)] : campaign.apps
        for (name, location) in names {
            if let app = project.apps[name] {
                if let first = apns {
                    diagnostics.append(
                        .error(
                            "'\(name)' and '\(first.name)' are both iOS apps; a campaign sends to one iOS app and one Android app at most",
                            at: location
                        )
                    )
                    failed = true
                }
                apns = app
            } else if let app = project.fcmApps[name] {
                if let first = fcm {
                    diagnostics.append(
                        .error(
                            "'\(name)' and '\(first.name)' are both Android apps; a campaign sends to one iOS app and one Android app at most",
                            at: location
                        )
                    )
                    failed = true
                }
                fcm = app
            } else {
                let known = project.appNames + project.fcmAppNames
                let hint = Suggestion.didYouMean(name, in: known)
                let list = known.isEmpty ? "" : " (apps: \(known.joined(separator: ", ")))"
                diagnostics.append(
                    .error("no app '\(name)' in \(paths.projectFileDisplay)\(hint.isEmpty ? list : hint)", at: location)
                )
                failed = true
            }
        }
        if let fcm, campaign.channel != nil {
            diagnostics.append(
                .error(
                    "'\(fcm.name)' is an Android app: broadcast channels are APNs', so a 'channel' campaign names an iOS app",
                    at: campaign.appLocation
                )
            )
            failed = true
        }
        if let fcm, campaign.trigger != nil {
            diagnostics.append(
                .error(
                    "'\(fcm.name)' is an Android app: App Store triggers are about iOS subscriptions; send to Android from a schedule or `pushcamp send`",
                    at: campaign.appLocation
                )
            )
            failed = true
        }
        return failed ? nil : (apns, fcm)
    }

    /// How rows find their platform: `audience.platform` (default `platform`), the campaign's apps.
    func platformRule(apns: AppConfig?, fcm: FCMAppConfig?) -> PlatformRule {
        var targets: Set<Platform> = []
        var names: [String: Platform] = [:]
        if let apns {
            targets.insert(.ios)
            names[apns.name] = .ios
        }
        if let fcm {
            targets.insert(.android)
            names[fcm.name] = .android
        }
        return PlatformRule(
            column: campaign.audience.platformColumn ?? PlatformRule.defaultColumn,
            targets: targets,
            appNames: names
        )
    }

    /// The APNs payload the message's platform-neutral part makes, for variants without a payload of
    /// their own: `aps.alert.title` and `.body`, `mutable-content` and an `image` key when there is an
    /// image (a notification service extension shows it), and each `data` key beside `aps`. The
    /// written nodes are reused, so a problem in one is located where it is written.
    func neutralPayload() -> Node? {
        let message = campaign.message
        guard message.hasNeutralContent || message.image != nil else { return nil }
        var alert: [(Node, Node)] = []
        if let title = message.title { alert.append((Node("title"), title.node)) }
        if let body = message.body { alert.append((Node("body"), body.node)) }
        var aps: [(Node, Node)] = []
        if !alert.isEmpty { aps.append((Node("alert"), .mapping(Node.Mapping(alert)))) }
        if message.image != nil { aps.append((Node("mutable-content"), Node("1"))) }
        // Data-only: a background push (`content-available`), as FCM's data message is.
        if alert.isEmpty { aps.append((Node("content-available"), Node("1"))) }
        var root: [(Node, Node)] = [(Node("aps"), .mapping(Node.Mapping(aps)))]
        if let image = message.image { root.append((Node("image"), image.node)) }
        for (key, value) in message.data { root.append((Node(key), value.node)) }
        return .mapping(Node.Mapping(root))
    }

    /// Checks the neutral part against APNs: a data key cannot be `aps` (nor `image` beside an image).
    mutating func checkNeutralKeys() {
        for (key, value) in campaign.message.data {
            if key == "aps" || (key == "image" && campaign.message.image != nil) {
                diagnostics.append(
                    .error(
                        "data key '\(key)' is where the APNs payload keeps the \(key == "aps" ? "notification" : "image")",
                        at: value.location
                    )
                )
            }
        }
    }

    /// The Android message, compiled: the neutral part with `message.android:` over it.
    mutating func compileAndroid(_ app: FCMAppConfig, collapseID: MustacheTemplate?) -> AndroidTarget? {
        let message = campaign.message
        let android = message.android
        let failedBefore = diagnostics.count
        func compile(_ spec: TextSpec?, _ field: String) -> AndroidTarget.Text? {
            guard let spec else { return nil }
            switch TemplateLocation.compile(spec.node, text: spec.text, path: spec.location.path) {
            case .success(let template):
                return AndroidTarget.Text(template: template, location: spec.location, field: field)
            case .failure(let failure):
                diagnostics += failure.diagnostics
                return nil
            }
        }
        let title = compile(android?.title ?? message.title, android?.title != nil ? "android.title" : "title")
        let body = compile(android?.body ?? message.body, android?.body != nil ? "android.body" : "body")
        let image = compile(android?.image ?? message.image, android?.image != nil ? "android.image" : "image")
        let dataSpec = android?.data ?? message.data
        let dataField = android?.data != nil ? "android.data" : "data"
        var data: [(key: String, value: AndroidTarget.Text)] = []
        for (key, value) in dataSpec {
            if let problem = FCMMessageRules.reservedKeyProblem(key) {
                diagnostics.append(
                    .error("\(dataField) key \(problem); Android would never get this message", at: value.location)
                )
            }
            if let text = compile(value, "\(dataField).\(key)") { data.append((key, text)) }
        }
        guard title != nil || body != nil || !data.isEmpty else {
            diagnostics.append(
                .error(
                    "app '\(app.name)' is an Android app: the message needs a 'title' and 'body' (or 'data'), which FCM sends; a 'payload' is APNs JSON",
                    at: message.location
                )
            )
            return nil
        }
        let priority: FCMMessage.Priority =
            android?.highPriority.map { $0 ? .high : .normal }
            ?? FCMMessage.Priority(apnsPriority: message.priority ?? PushType.alert.defaultPriority)
        var target = AndroidTarget(
            app: app,
            title: title,
            body: body,
            image: image,
            data: data,
            channelID: compile(android?.channelID, "android.channel_id"),
            tag: compile(android?.tag, "android.tag"),
            clickAction: compile(android?.clickAction, "android.click_action"),
            sound: compile(android?.sound, "android.sound"),
            icon: compile(android?.icon, "android.icon"),
            color: compile(android?.color, "android.color"),
            collapseKey: compile(android?.collapseKey, "android.collapse_key"),
            notificationCount: android?.notificationCount,
            priority: priority,
            expiration: android?.ttl ?? message.expiration ?? project.defaults.expiration,
            restrictedPackageName: android?.restrictedPackageName
        )
        // The collapse id (the campaign id by default) tags the shown notification, so a push sent
        // twice (in flight when a run stopped, sent again on resume) replaces the first on the device.
        if target.tag == nil, title != nil || body != nil, let collapseID {
            target.tag = AndroidTarget.Text(
                template: collapseID,
                location: message.collapseIDLocation ?? message.location,
                field: "collapse_id"
            )
        }
        return Array(diagnostics[failedBefore...]).hasErrors ? nil : target
    }
}
