import Foundation
import PushcampAPNsCore
import PushcampFCMCore

/// How the simulator answers one device token (a line of a tokens file).
///
/// ```
/// # token                                                           behaviour
/// 3f2a…c9   ok
/// 77b1…04   unregistered 1767225600000     # 410, with the timestamp (ms) APNs saw the token go
/// 9c0d…aa   bad                            # 400 BadDeviceToken
/// 51e3…2f   wrong-topic                    # 400 DeviceTokenNotForTopic
/// 0a9b…11   flaky 2                        # 503 ServiceUnavailable twice, then 200
/// e4c2…7d   throttled 1                    # 429 TooManyRequests once, then 200
/// 2b7f…90   reason PayloadTooLarge         # any status/reason APNs documents
/// cX1…:APA91b…  reason SENDER_ID_MISMATCH  # any FCM error code, for FCM registration tokens
/// ```
///
/// The same words serve FCM registration tokens: `unregistered` is 404 UNREGISTERED, `bad` 400
/// INVALID_ARGUMENT about the token, `wrong-topic` 403 SENDER_ID_MISMATCH, `flaky` 503 UNAVAILABLE,
/// `throttled` 429 QUOTA_EXCEEDED (the device's rate).
public enum TokenBehaviour: Hashable, Sendable {
    case ok
    case unregistered(timestamp: Int64)
    case bad
    case wrongTopic
    /// The first `failures` requests get 503 ServiceUnavailable.
    case flaky(failures: Int)
    /// The first `times` requests get 429 TooManyRequests.
    case throttled(times: Int)
    case reason(APNsReason)
    /// An FCM error code (FCM tokens only; an APNs request to such a token gets 200).
    case fcm(FCMReason)

    /// Reads and parses the tokens file at `path` (`--tokens`); the error names the file, and the
    /// line when one is wrong.
    public static func readFile(_ path: String) throws(SimulatorError) -> [String: TokenBehaviour] {
        let text: String
        do {
            text = String(decoding: try InputFile.read(path, limit: 256 << 20), as: UTF8.self)
        } catch {
            throw SimulatorError("\(path): error: the tokens file \(error.description)")
        }
        return try parseFile(text, path: path)
    }

    /// Parses a tokens file: `token behaviour [argument]` per line, `#` starts a comment.
    public static func parseFile(_ text: String, path: String) throws(SimulatorError) -> [String: TokenBehaviour] {
        var rules: [String: TokenBehaviour] = [:]
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "," })
            guard let token = words.first else { continue }
            do {
                rules[token.lowercased()] = try parse(words.dropFirst().map(String.init))
            } catch {
                throw SimulatorError("\(path):\(index + 1): error: \(error.description)")
            }
        }
        return rules
    }

    /// One behaviour from its words (`unregistered 1700000000000`, `flaky 2`, `reason Shutdown`…);
    /// the error says what is wrong, without a location.
    public static func parse(_ words: [String]) throws(SimulatorError) -> TokenBehaviour {
        func number(_ fallback: Int) throws(SimulatorError) -> Int {
            guard words.count > 1 else { return fallback }
            guard let value = Int(words[1]), value >= 0 else {
                throw SimulatorError("'\(words[1])' is not a count")
            }
            return value
        }
        switch words.first ?? "ok" {
        case "ok": return .ok
        case "unregistered":
            guard words.count > 1 else { return .unregistered(timestamp: 1_700_000_000_000) }
            guard let stamp = Int64(words[1]) else {
                throw SimulatorError("'\(words[1])' is not a timestamp in milliseconds")
            }
            return .unregistered(timestamp: stamp)
        case "bad": return .bad
        case "wrong-topic": return .wrongTopic
        case "flaky": return .flaky(failures: try number(1))
        case "throttled": return .throttled(times: try number(1))
        case "reason":
            guard words.count > 1 else { throw SimulatorError("'reason' needs an APNs reason or an FCM error code") }
            let reason = APNsReason(words[1])
            if case .unknown = reason {
                let code = FCMReason(words[1])
                guard FCMReason.errorCodes.contains(code) else {
                    throw SimulatorError("'\(words[1])' is not a reason APNs documents nor an FCM error code")
                }
                return .fcm(code)
            }
            return .reason(reason)
        case let other:
            throw SimulatorError(
                "unknown behaviour '\(other)' (ok, unregistered, bad, wrong-topic, flaky, throttled, reason)"
            )
        }
    }
}

/// The simulator's one error type.
public struct SimulatorError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
