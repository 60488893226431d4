import Foundation
import PushcampModel

/// What `pushcamp sim` prints and writes on exit: a summary, and each kind of request received, for
/// checking a send against what arrived.
extension SimulatorRecorder {
    /// Requests, connections, streams, answers by status and reason, and the provider tokens
    /// `verifier` saw: one line each.
    public func summaryText(verifier: ProviderTokenVerifier?) -> String {
        var text =
            "received \(records.count) request(s) on \(connections) connection(s); at most \(maxOpenStreams) "
            + "streams open at once\n"
        if resets > 0 {
            text +=
                "reset \(resets) request(s) whose headers HTTP/2 forbids (control characters, bad pseudo-headers)\n"
        }
        for (answer, count) in summary().sorted(by: { $0.key < $1.key }) { text += "  \(answer)  \(count)\n" }
        if let verifier {
            let (tokens, tooSoon) = verifier.statistics
            text += "provider tokens: \(tokens) accepted, \(tooSoon) refused as too frequent\n"
        }
        return text
    }

    /// Every device push received, as CSV: token, status, reason, apns-id, collapse id, connection,
    /// client address, time in seconds since 1970.
    public func deviceCSV() -> String {
        var csv = "token,status,reason,apns_id,collapse_id,connection,peer,time\n"
        for entry in records where entry.path == "/3/device/" {
            // The client chose the token, apns-id and collapse id: quoted as CSV wants.
            csv += "\(csvField(entry.token)),\(entry.status),\(entry.reason.map { "\($0)" } ?? ""),"
            csv +=
                "\(csvField(entry.apnsID ?? "")),\(csvField(entry.collapseID ?? "")),\(entry.connection),\(entry.peer),"
            csv += String(format: "%.3f", entry.time) + "\n"
        }
        return csv
    }

    /// Every request to the broadcast API (channel management and broadcast sends), one JSON object
    /// a line: method, path, channel id, push type, priority, expiration, status, reason, payload.
    public func broadcastLines() -> String {
        var lines = ""
        for entry in records where entry.path != "/3/device/" && !entry.isFCM && entry.path != "/token" {
            lines +=
                JSONValue.members([
                    ("method", .string(entry.method)), ("path", .string(entry.path)),
                    ("channel_id", entry.channelID.map(JSONValue.string)),
                    ("push_type", entry.pushType.map(JSONValue.string)),
                    ("priority", entry.priority.map(JSONValue.string)),
                    ("expiration", entry.expiration.map(JSONValue.string)),
                    ("status", .integer(entry.status)),
                    ("reason", entry.reason.map { .string("\($0)") }),
                    ("payload", .string(String(decoding: entry.payload, as: UTF8.self))),
                ]).text + "\n"
        }
        return lines
    }

    /// Every FCM send received, one JSON object a line: token, status, reason, validate_only,
    /// connection, time, message (the request's body).
    public func fcmLines() -> String {
        var lines = ""
        for entry in records where entry.isFCM {
            lines +=
                JSONValue.members([
                    ("token", .string(entry.token)), ("status", .integer(entry.status)),
                    ("reason", entry.fcmReason.map { .string("\($0)") }),
                    ("validate_only", .bool(entry.validateOnly)), ("connection", .integer(entry.connection)),
                    ("time", .number((entry.time * 1000).rounded() / 1000)),
                    ("message", .string(String(decoding: entry.payload, as: UTF8.self))),
                ]).text + "\n"
        }
        return lines
    }
}
