import ArgumentParser
import Foundation
import NIOCore
import PushcampAPNsCore
import PushcampModel
import PushcampSimulator

/// Simulator options shared by `sim` and `rehearse`: a scenario file, and flags that override it.
struct SimulatorFaults: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A scenario file (YAML): device behaviours and faults; flags win over it.",
            valueName: "file"
        )
    )
    var scenario: String?

    @Option(help: ArgumentHelp("Device behaviours: a file of `TOKEN BEHAVIOUR` lines.", valueName: "file"))
    var tokens: String?

    @Option(help: "The stream limit announced after the first authenticated request (default 500).")
    var maxStreams: Int?

    @Option(help: ArgumentHelp("Send GOAWAY after this many requests on each connection.", valueName: "n"))
    var goawayAfter: Int?

    @Option(help: ArgumentHelp("Drop each connection, streams in flight, after this many requests.", valueName: "n"))
    var dropAfter: Int?

    @Option(help: ArgumentHelp("Delay before every answer, in milliseconds (default 0).", valueName: "ms"))
    var latency: Int?

    @Option(
        help: ArgumentHelp(
            "Share of requests answered 500 InternalServerError, a percentage as in a scenario's error_rate (0.5%, 5%; default 0).",
            valueName: "percent"
        ),
        transform: { text in
            switch Share.parse(text) {
            case .success(let share): return Double(share.basisPoints) / 10_000
            case .failure(let error): throw ValidationError("--error-rate: \(error.message)")
            }
        }
    )
    var errorRate: Double?

    @Option(
        help: ArgumentHelp(
            "A broadcast channel takes at most one broadcast per this many seconds; a sooner one is answered 429 TooManyRequests.",
            valueName: "seconds"
        )
    )
    var channelThrottle: Double?

    @Option(
        help: ArgumentHelp(
            "Share of channel-management and broadcast requests answered 500 or 503, a percentage (30%).",
            valueName: "percent"
        ),
        transform: { text in
            switch Share.parse(text) {
            case .success(let share): return Double(share.basisPoints) / 10_000
            case .failure(let error): throw ValidationError("--broadcast-error-rate: \(error.message)")
            }
        }
    )
    var broadcastErrorRate: Double?

    @Option(
        help: ArgumentHelp(
            "The fates of the first broadcast sends, in order, comma-separated: 429, 500, 503 or drop (the connection dropped, the request unanswered).",
            valueName: "list"
        ),
        transform: { text in
            try text.split(separator: ",").map { part in
                switch BroadcastFaults.Step.parse(String(part)) {
                case .success(let step): return step
                case .failure(let error): throw ValidationError("--broadcast-faults: \(error.message)")
                }
            }
        }
    )
    var broadcastFaults: [BroadcastFaults.Step]?

    @Option(
        help: ArgumentHelp(
            "Send `retry-after: SECONDS` with every 429 and 503 of the broadcast API, and with FCM's 429, 500 and 503.",
            valueName: "seconds"
        )
    )
    var retryAfter: Int?

    @Option(
        help: ArgumentHelp(
            "FCM: the project's quota in messages per minute; over it, 429 QUOTA_EXCEEDED until its minute ends (Google's default: 600,000).",
            valueName: "n"
        )
    )
    var fcmQuota: Int?

    @Option(
        help: ArgumentHelp(
            "FCM: how long an access token lives, in seconds (1 to 3600, Google's: 3600); a send with an expired one is answered 401.",
            valueName: "seconds"
        )
    )
    var fcmTokenLifetime: Int?

    @Option(
        help: ArgumentHelp(
            "FCM: revoke every access token issued after this many messages, as Google does when a key is deleted: later sends with them are answered 401 until a new token is fetched.",
            valueName: "n"
        )
    )
    var fcmRevokeAfter: Int?

    @Option(
        help: ArgumentHelp(
            "FCM: delete the service account's key after this many messages: every access token is revoked and the token endpoint refuses the key (invalid_grant), so a send stops on its credentials.",
            valueName: "n"
        )
    )
    var fcmDeleteKeyAfter: Int?

    func validate() throws {
        if let fcmDeleteKeyAfter, fcmDeleteKeyAfter < 1 {
            throw ValidationError("--fcm-delete-key-after must be 1 or more")
        }
        if let fcmRevokeAfter, fcmRevokeAfter < 1 { throw ValidationError("--fcm-revoke-after must be 1 or more") }
        if let fcmQuota, fcmQuota < 1 { throw ValidationError("--fcm-quota must be 1 or more") }
        if let fcmTokenLifetime, !(1...3600).contains(fcmTokenLifetime) {
            throw ValidationError("--fcm-token-lifetime must be 1 to 3600 seconds")
        }
        if let channelThrottle, !(channelThrottle > 0) {
            throw ValidationError("--channel-throttle must be more than 0 seconds")
        }
        if let retryAfter, !(0...3600).contains(retryAfter) {
            throw ValidationError("--retry-after must be 0 to 3600 seconds")
        }
        if let maxStreams, maxStreams < 1 { throw ValidationError("--max-streams must be 1 or more") }
        if let latency, latency < 0 { throw ValidationError("--latency must be 0 or more") }
        if let goawayAfter, goawayAfter < 1 { throw ValidationError("--goaway-after must be 1 or more") }
        if let dropAfter, dropAfter < 1 { throw ValidationError("--drop-after must be 1 or more") }
    }

    /// The scenario file (if any), then the flags on top; bad files stop with located errors (exit 1).
    func resolve() throws -> SimulatorScenario {
        var resolved = SimulatorScenario()
        if let scenario {
            switch SimulatorScenario.load(scenario) {
            case .success(let loaded): resolved = loaded
            case .failure(let error):
                throw Failure(error.description, exitCode: 1)
            }
        }
        if let tokens {
            do throws(SimulatorError) {
                resolved.tokens.merge(try TokenBehaviour.readFile(tokens)) { _, flag in flag }
            } catch {
                throw Failure(error.description, exitCode: 1)
            }
        }
        resolved.maxStreams = maxStreams ?? resolved.maxStreams
        resolved.goawayAfter = goawayAfter ?? resolved.goawayAfter
        resolved.dropAfter = dropAfter ?? resolved.dropAfter
        resolved.latencyMilliseconds = latency ?? resolved.latencyMilliseconds
        resolved.errorRate = errorRate ?? resolved.errorRate
        resolved.broadcast.channelThrottle = channelThrottle ?? resolved.broadcast.channelThrottle
        resolved.broadcast.errorRate = broadcastErrorRate ?? resolved.broadcast.errorRate
        resolved.broadcast.script = broadcastFaults ?? resolved.broadcast.script
        resolved.broadcast.retryAfter = retryAfter ?? resolved.broadcast.retryAfter
        resolved.fcmQuota = fcmQuota ?? resolved.fcmQuota
        resolved.fcmTokenLifetime = fcmTokenLifetime ?? resolved.fcmTokenLifetime
        resolved.fcmRevokeAfter = fcmRevokeAfter ?? resolved.fcmRevokeAfter
        resolved.fcmDeleteKeyAfter = fcmDeleteKeyAfter ?? resolved.fcmDeleteKeyAfter
        return resolved
    }
}
