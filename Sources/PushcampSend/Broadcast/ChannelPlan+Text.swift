import PushcampJournal
import PushcampModel

extension ChannelPlan {
    /// A place as people read it: `com.example.app (production)`.
    public static func describe(_ place: Place) -> String {
        "\(place.bundleID) (\(place.environment.rawValue))"
    }

    /// The plan as `pushcamp channels plan` prints it: one line per channel (+ create, - delete,
    /// ! create again, blank: unchanged), the orphans and the counts against Apple's cap. `asked`:
    /// whether APNs was asked.
    public func text(asked: Bool) -> String {
        var text = ""
        let symbols: [ChannelPlan.Action: String] = [.create: "+", .keep: " ", .recreate: "!", .delete: "-"]
        let rows = entries.map { entry -> [String] in
            let detail: String
            switch entry.action {
            case .create: detail = "(create)"
            case .keep: detail = "id \(entry.recorded!.channelID)"
            case .recreate: detail = "(create again: APNs no longer has \(entry.recorded!.channelID))"
            case .delete: detail = "id \(entry.recorded!.channelID)  (delete: no longer declared)"
            }
            return [entry.name, Self.describe(entry.place), "storage \(entry.storage.rawValue)", detail]
        }
        let lines = TextColumns.render(rows).split(separator: "\n")
        for (entry, line) in zip(entries, lines) {
            text += "\(symbols[entry.action]!) \(line)\n"
            if let drift = entry.drift {
                text +=
                    "    warning: \(drift); a channel cannot be changed: `pushcamp channels delete \(entry.name)`, then apply, makes a new one (devices must subscribe to its new id)\n"
            }
        }
        if entries.isEmpty { text += "No channels are declared or recorded.\n" }
        for place in orphans.keys.sorted() {
            let ids = orphans[place, default: []]
            text +=
                "\(ids.count) channel\(ids.count == 1 ? "" : "s") of \(Self.describe(place)) at APNs \(ids.count == 1 ? "is" : "are") in no journal: "
                + ids.prefix(5).joined(separator: ", ") + (ids.count > 5 ? ", …" : "")
                + " (pushcamp channels delete --id ID --app APP)\n"
        }
        for count in counts {
            let now = count.now.map { "\($0) now, " } ?? ""
            text += "\(Self.describe(count.place)): \(now)\(count.after) after apply, of Apple's 10,000\n"
        }
        if !asked { text += "note: APNs was not asked (--offline): recorded channels are assumed to exist\n" }
        return text
    }

    /// The plan as JSON (`--format json` of `plan` and `list`).
    public func json(asked: Bool) -> String {
        JSONValue.members([
            (
                "channels",
                .array(
                    entries.map { entry in
                        JSONValue.members([
                            ("name", .string(entry.name)), ("action", .string(entry.action.rawValue)),
                            ("bundle_id", .string(entry.place.bundleID)),
                            ("environment", .string(entry.place.environment.rawValue)),
                            ("storage", .string(entry.storage.rawValue)),
                            ("channel_id", entry.recorded.map { .string($0.channelID) }),
                            ("drift", entry.drift.map(JSONValue.string)),
                        ])
                    }
                )
            ),
            (
                "orphans",
                .array(
                    orphans.keys.sorted().flatMap { place in
                        orphans[place, default: []].map { id in
                            JSONValue.members([
                                ("bundle_id", .string(place.bundleID)),
                                ("environment", .string(place.environment.rawValue)), ("channel_id", .string(id)),
                            ])
                        }
                    }
                )
            ),
            (
                "counts",
                .array(
                    counts.map { count in
                        JSONValue.members([
                            ("bundle_id", .string(count.place.bundleID)),
                            ("environment", .string(count.place.environment.rawValue)),
                            ("now", count.now.map(JSONValue.integer)), ("after", .integer(count.after)),
                            ("cap", .integer(10_000)),
                        ])
                    }
                )
            ),
            ("asked_apns", .bool(asked)),
        ]).text + "\n"
    }

    /// The channels as `pushcamp channels list` prints them: each recorded or declared channel with
    /// its state, the orphans, and how many each place holds against Apple's cap.
    public func listing() -> String {
        var rows: [[String]] = []
        for entry in entries {
            let state: String
            switch entry.action {
            case .create: state = "declared, not created (pushcamp channels apply)"
            case .keep: state = "created \(Timestamps.iso(entry.recorded!.createdAt))  id \(entry.recorded!.channelID)"
            case .recreate: state = "recorded, but APNs no longer has \(entry.recorded!.channelID)"
            case .delete: state = "created, no longer declared  id \(entry.recorded!.channelID)"
            }
            rows.append([entry.name, Self.describe(entry.place), "storage \(entry.storage.rawValue)", state])
        }
        for place in orphans.keys.sorted() {
            for id in orphans[place, default: []] {
                rows.append(["(orphan)", Self.describe(place), "", "id \(id)  in no journal"])
            }
        }
        var text = rows.isEmpty ? "No channels are declared or recorded.\n" : TextColumns.render(rows)
        for count in counts {
            let held = count.now.map { "\($0) at APNs" } ?? "\(count.after) recorded"
            text += "\(Self.describe(count.place)): \(held), of Apple's 10,000\n"
        }
        return text
    }
}
