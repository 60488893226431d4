import Foundation
import NIOCore
import PushcampAPNsCore
import PushcampModel

/// A scenario file for `pushcamp sim` and `rehearse`: how the stand-in APNs behaves, kept in git
/// beside the campaigns it rehearses. Every key is optional; flags given on the command line win.
///
///     max_streams: 100                   # the limit announced after the first authenticated request
///     lower_limit: { after: 500, to: 1 } # then lowered, as APNs does after rejected notifications
///                                        # (to: 0 allows no stream at all: a stalled server)
///     goaway_after: 1000                 # GOAWAY after this many requests on each connection
///     drop_after: 5000                   # drop each connection, streams in flight, after this many
///     latency_ms: 20                     # delay before every answer
///     error_rate: 0.5%                   # share answered 500 InternalServerError
///     tokens:                            # device behaviours, as in a tokens file
///       "0f3a…": unregistered 1700000000000
///       "9bc1…": flaky 2
///     tokens_file: rehearsal-tokens.txt  # more of them, relative to this file
///     channel_throttle: 5s               # a channel takes one broadcast per 5 s (429 sooner)
///     broadcast_error_rate: 30%          # share of broadcast-API requests answered 500 or 503
///     broadcast_faults: [429, 503, drop] # the first broadcast sends' fates, in order
///     retry_after: 2                     # seconds, in `retry-after` of the broadcast API's 429/503
///                                        # and of FCM's 429/500/503
///     fcm_quota: 600                     # FCM: the project's messages per minute (429 QUOTA_EXCEEDED over it)
///     fcm_token_lifetime: 5m             # FCM: how long an access token lives (Google's: 1h)
///     fcm_revoke_after: 500              # FCM: revoke every access token after this many messages
///     fcm_delete_key_after: 500          # FCM: delete the service account's key after this many messages
public struct SimulatorScenario: Sendable {
    public var maxStreams: Int?
    public var lowerLimit: (after: Int, to: Int)?
    public var goawayAfter: Int?
    public var dropAfter: Int?
    public var latencyMilliseconds: Int?
    public var errorRate: Double?
    public var tokens: [String: TokenBehaviour] = [:]
    /// The broadcast API's faults.
    public var broadcast = BroadcastFaults()
    /// FCM: the project's quota in messages per minute.
    public var fcmQuota: Int?
    /// FCM: an access token's lifetime in seconds.
    public var fcmTokenLifetime: Int?
    /// FCM: every access token issued is revoked after this many messages delivered.
    public var fcmRevokeAfter: Int?
    /// FCM: the service account's key deleted after this many messages.
    public var fcmDeleteKeyAfter: Int?

    public init() {}

    static let keys = [
        "max_streams", "lower_limit", "goaway_after", "drop_after", "latency_ms", "error_rate", "tokens",
        "tokens_file", "channel_throttle", "broadcast_error_rate", "broadcast_faults", "retry_after",
        "fcm_quota", "fcm_token_lifetime", "fcm_revoke_after", "fcm_delete_key_after",
    ]

    /// Reads `path`; every problem comes back as a located diagnostic.
    public static func load(_ path: String) -> Result<SimulatorScenario, DiagnosticsError> {
        let (document, problems) = YAMLDocument.load(URL(fileURLWithPath: path), displayPath: path)
        guard problems.isEmpty, let document else { return .failure(DiagnosticsError(problems)) }
        guard let root = document.root else { return .success(SimulatorScenario()) }
        let reader = YAMLReader(path: path)
        var scenario = SimulatorScenario()
        if let map = reader.mapping(root, in: "scenario", allowed: keys) {
            scenario.read(map, with: reader, directory: URL(fileURLWithPath: path).deletingLastPathComponent())
        }
        return reader.diagnostics.isEmpty ? .success(scenario) : .failure(DiagnosticsError(reader.diagnostics))
    }

    private mutating func read(_ map: YAMLReader.Mapping, with reader: YAMLReader, directory: URL) {
        let count = 1...Int(Int32.max)
        if let node = map["max_streams"] { maxStreams = reader.int(node, "max_streams", in: count) }
        if let node = map["goaway_after"] { goawayAfter = reader.int(node, "goaway_after", in: count) }
        if let node = map["drop_after"] { dropAfter = reader.int(node, "drop_after", in: count) }
        if let node = map["latency_ms"] { latencyMilliseconds = reader.int(node, "latency_ms", in: 0...60_000) }
        if let node = map["error_rate"], let share = reader.parsed(node, "error_rate", Share.parse) {
            errorRate = Double(share.basisPoints) / 10_000
        }
        if let node = map["channel_throttle"], let span = reader.parsed(node, "channel_throttle", TimeSpan.parse) {
            broadcast.channelThrottle = Double(span.seconds)
        }
        if let node = map["broadcast_error_rate"], let share = reader.parsed(node, "broadcast_error_rate", Share.parse)
        {
            broadcast.errorRate = Double(share.basisPoints) / 10_000
        }
        if let node = map["broadcast_faults"], let steps = reader.sequence(node, "broadcast_faults") {
            broadcast.script = steps.compactMap { step in
                reader.parsed(step, "broadcast_faults", BroadcastFaults.Step.parse)
            }
        }
        if let node = map["retry_after"] { broadcast.retryAfter = reader.int(node, "retry_after", in: 0...3600) }
        if let node = map["fcm_quota"] { fcmQuota = reader.int(node, "fcm_quota", in: count) }
        if let node = map["fcm_revoke_after"] { fcmRevokeAfter = reader.int(node, "fcm_revoke_after", in: count) }
        if let node = map["fcm_delete_key_after"] {
            fcmDeleteKeyAfter = reader.int(node, "fcm_delete_key_after", in: count)
        }
        if let node = map["fcm_token_lifetime"],
            let span = reader.parsed(node, "fcm_token_lifetime", TimeSpan.parse)
        {
            if (1...3600).contains(span.seconds) {
                fcmTokenLifetime = Int(span.seconds)
            } else {
                reader.error("'fcm_token_lifetime' must be 1s to 1h, as Google's tokens live an hour at most", at: node)
            }
        }
        if let node = map["lower_limit"],
            let limit = reader.mapping(node, in: "lower_limit", allowed: ["after", "to"], required: ["after", "to"]),
            let after = limit["after"].flatMap({ reader.int($0, "lower_limit.after", in: count) }),
            let to = limit["to"].flatMap({ reader.int($0, "lower_limit.to", in: 0...Int(Int32.max)) })
        {
            lowerLimit = (after, to)
        }
        if let node = map["tokens_file"], let file = reader.string(node, "tokens_file") {
            let url = URL(fileURLWithPath: file, relativeTo: directory)
            if let bytes = try? InputFile.read(url.path, limit: 256 << 20) {
                let text = String(decoding: bytes, as: UTF8.self)
                do {
                    tokens.merge(try TokenBehaviour.parseFile(text, path: file)) { _, new in new }
                } catch {
                    reader.error("'tokens_file': \(error.description)", at: node)
                }
            } else {
                reader.error("'tokens_file': cannot read '\(file)'", at: node)
            }
        }
        // Tokens listed in the scenario itself win over the tokens file.
        if let node = map["tokens"], let entries = reader.freeMapping(node, in: "tokens") {
            for entry in entries {
                guard let text = reader.scalar(entry.value, "tokens.\(entry.key)") else { continue }
                let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                do {
                    tokens[entry.key.lowercased()] = try TokenBehaviour.parse(words)
                } catch {
                    reader.error("'tokens': \(error.description)", at: entry.value)
                }
            }
        }
    }
}

extension SimulatorScenario {
    /// The simulator configured as the scenario says.
    public func apply(to configuration: inout SimulatorConfiguration) {
        configuration.tokens = tokens
        if let maxStreams { configuration.maxConcurrentStreams = UInt32(maxStreams) }
        configuration.goawayAfter = goawayAfter
        configuration.dropAfter = dropAfter
        configuration.lowerLimit = lowerLimit.map { ($0.after, UInt32($0.to)) }
        configuration.latency = .milliseconds(Int64(latencyMilliseconds ?? 0))
        configuration.errorRate = errorRate ?? 0
        configuration.broadcastFaults = broadcast
        if var fcm = configuration.fcm {
            fcm.quotaPerMinute = fcmQuota
            fcm.accessTokenLifetime = fcmTokenLifetime ?? 3600
            fcm.errorRate = errorRate ?? 0
            fcm.retryAfter = broadcast.retryAfter
            fcm.revokeAfter = fcmRevokeAfter
            fcm.deleteKeyAfter = fcmDeleteKeyAfter
            configuration.fcm = fcm
        }
    }
}

extension BroadcastFaults.Step {
    /// `429`, `500`, `503` or `drop`.
    public static func parse(_ text: String) -> Result<Self, ValueError> {
        guard let step = Self(rawValue: text.trimmingCharacters(in: .whitespaces)) else {
            return .failure(
                ValueError("'\(text)' is not a broadcast fault; write 429, 500, 503 or drop")
            )
        }
        return .success(step)
    }
}
