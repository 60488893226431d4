import ArgumentParser
import Foundation
import Logging
import PushcampAPNsCore
import PushcampModel
import PushcampSend
import PushcampSimulator
import ServiceLifecycle

struct Sim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run a stand-alone APNs and FCM simulator on 127.0.0.1 (HTTP/2 over TLS).",
        discussion: """
            An APNs stand-in for rehearsals and tests. It checks provider tokens (ES256, key id, \
            team id, age, refresh rate), starts every connection at one stream and raises the limit \
            after the first authenticated request, and checks each request as APNs does. It writes \
            the CA certificate clients must trust (ca.pem) and, unless --key names one, a fresh \
            provider-token key (key.p8) into --state-dir. Point an app at it in pushcamp.yaml:

              apps:
                shop-ios:
                  endpoint: https://127.0.0.1:8443
                  ca_file: .pushcamp/sim/ca.pem
                  key_file: .pushcamp/sim/key.p8
                  ...

            Device behaviours (--tokens FILE), one per line, `#` for comments:
              TOKEN ok                     200
              TOKEN unregistered [ms]      410 Unregistered, with the timestamp
              TOKEN bad                    400 BadDeviceToken
              TOKEN wrong-topic            400 DeviceTokenNotForTopic
              TOKEN flaky [n]              503 ServiceUnavailable n times (1), then 200
              TOKEN throttled [n]          429 TooManyRequests n times (1), then 200
              TOKEN reason NAME            any status and reason APNs documents

            Faults and behaviours can also come from a scenario file (--scenario FILE, YAML; \
            flags win over it): max_streams, lower_limit { after, to }, goaway_after, drop_after, \
            latency_ms, error_rate (a percentage), tokens (TOKEN: BEHAVIOUR) and tokens_file; for \
            the broadcast API channel_throttle, broadcast_error_rate, broadcast_faults and \
            retry_after. See docs/sending.md and docs/live-activities.md.

            Ctrl-C stops it and prints what it received, by status and reason.

            Examples:
              pushcamp sim --team-id ABCDE12345 --key-id KEY1234567
              pushcamp sim --topic com.example.shop --port 8443
              pushcamp sim --port 9443 --scenario rehearsal/outage.yaml
              pushcamp sim --host 10.0.0.1 --record received.csv
              pushcamp sim --channel-throttle 5 --broadcast-faults 429,503,drop

            The broadcast API answers on the same port: channel management (`/1/apps/BUNDLE/…`; \
            channels are kept in --state-dir/channels.json, at most 10,000 per app) and broadcast \
            sends (`/4/broadcasts/apps/BUNDLE`), checked in APNs' order. Its faults: a channel \
            throttle (429), a share of 500/503, a script of the first broadcasts' fates, \
            retry-after; --goaway-after and --drop-after hold for its connections too. See \
            docs/live-activities.md.

            FCM HTTP v1 answers on the same port too: Google's token endpoint (`/token`, which \
            exchanges a service account's signed assertion for an hour-long access token) and \
            `messages:send` (`/v1/projects/PROJECT/messages:send`), with Google's checks and \
            error bodies: 401 UNAUTHENTICATED without a valid access token, 403 PERMISSION_DENIED \
            for another project, 400 INVALID_ARGUMENT for a message FCM refuses, and the device \
            behaviours above for FCM registration tokens (unregistered → 404 UNREGISTERED, bad → \
            400 INVALID_ARGUMENT, wrong-topic → 403 SENDER_ID_MISMATCH, flaky → 503 UNAVAILABLE, \
            throttled → 429 QUOTA_EXCEEDED, reason CODE → any FCM error code). It writes a \
            service-account key file pointing at itself (fcm-service-account.json) into \
            --state-dir; --fcm-quota, --fcm-token-lifetime, --fcm-revoke-after and \
            --fcm-delete-key-after (scenario keys fcm_quota, fcm_token_lifetime, fcm_revoke_after, \
            fcm_delete_key_after) play the project's quota, short-lived tokens, revoked ones and a \
            deleted key, and --error-rate and --retry-after hold for it too. See docs/sending.md and docs/android.md.
            """
    )

    @Option(help: "The port to listen on.")
    var port: Int = 8443

    @Option(
        help: ArgumentHelp(
            "The IPv4 address to listen on; the server certificate names it besides 127.0.0.1 (for clients in other network namespaces).",
            valueName: "address"
        )
    )
    var host: String = "127.0.0.1"

    @Option(help: ArgumentHelp("Where to write ca.pem and key.p8.", valueName: "dir"))
    var stateDir: String = ".pushcamp/sim"

    @Option(help: ArgumentHelp("Verify provider tokens with this .p8 key's public half.", valueName: "file"))
    var key: String?

    @Option(help: "The team id tokens must carry (any when absent).")
    var teamID: String?

    @Option(help: "The key id tokens must carry (any when absent).")
    var keyID: String?

    @Option(help: ArgumentHelp("The bundle id topics must match (any when absent).", valueName: "bundle-id"))
    var topic: String?

    @Flag(
        help: """
            Accept certificate auth too: write client.pem (a client certificate and key signed by \
            the simulator's CA) into --state-dir, for an app's `certificate`.
            """
    )
    var clientCertificates = false

    @Option(
        help: ArgumentHelp(
            "On exit, write every device push received to this CSV file (token, status, reason, apns-id, collapse id, connection, client address, time in seconds since 1970), for checking a send against what arrived.",
            valueName: "file"
        )
    )
    var record: String?

    @Option(
        help: ArgumentHelp(
            "On exit, write every request to the broadcast API (channel management and broadcast sends) to this file, one JSON object a line: method, path, channel id, push type, priority, expiration, status, reason, payload.",
            valueName: "file"
        )
    )
    var recordBroadcast: String?

    @Option(
        help: ArgumentHelp(
            "On exit, write every FCM send received to this file, one JSON object a line: token, status, reason, validate_only, connection, time, message (the request's body).",
            valueName: "file"
        )
    )
    var recordFcm: String?

    @Option(
        help: ArgumentHelp(
            "The Firebase project id FCM sends must name (written into fcm-service-account.json).",
            valueName: "id"
        )
    )
    var fcmProject: String = FCMSimulation.defaultProjectID

    @Flag(
        help: """
            Stand in for an App ID without the Broadcast capability: every channel-management \
            and broadcast request is answered 400 FeatureNotEnabled.
            """
    )
    var noBroadcast = false

    @Option(
        help: ArgumentHelp(
            "Answer every well-formed broadcast send with this APNs reason (ChannelNotRegistered, PayloadTooLarge, …) instead of 200.",
            valueName: "reason"
        )
    )
    var broadcastReason: String?

    @OptionGroup var faults: SimulatorFaults

    func run() async throws {
        var options = SimulatorLaunch.Options()
        (options.host, options.port, options.stateDir, options.keyFile) = (host, port, stateDir, key)
        (options.teamID, options.keyID, options.topic) = (teamID, keyID, topic)
        (options.clientCertificates, options.fcmProject) = (clientCertificates, fcmProject)
        (options.broadcastEnabled, options.broadcastReason) = (!noBroadcast, broadcastReason)
        options.scenario = try faults.resolve()
        let launch: SimulatorLaunch
        do {
            launch = try SimulatorLaunch(options)
        } catch let failure as SimulatorLaunch.Failure {
            throw Failure(failure.description, exitCode: 1)
        }
        let simulator = try APNsSimulator(configuration: launch.configuration)
        var logger = Logger(label: "pushcamp-sim")
        logger.logLevel = .critical
        // Listening first, then the group (and its signal handlers) runs before the first line is
        // printed: whoever reads it may stop us at once.
        let bound = try await launch.start(simulator)
        let group = ServiceGroup.drainedBySignals([.init(service: simulator)], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await Task.yield()
            print(launch.banner(port: bound), terminator: "")
            fflush(nil)
            try await tasks.waitForAll()
        }
        print(launch.farewell(simulator), terminator: "")
        try simulator.recorder.export(devices: record, broadcast: recordBroadcast, fcm: recordFcm)
    }
}
