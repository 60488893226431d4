import PushcampJournal
import PushcampModel

extension ScheduleListing {
    /// `pushcamp schedules` for a terminal.
    public func text() -> String {
        guard !entries.isEmpty else {
            return
                "no scheduled campaigns (a campaign is scheduled by a `schedule:` key; see docs/campaign-format.md)\n"
        }
        var text = ""
        for entry in entries {
            guard let schedule = entry.schedule, let campaign = entry.campaign else {
                text += "\(entry.file): invalid, skipped by serve\n  \(entry.error ?? "")\n"
                continue
            }
            text += "\(campaign)  \(schedule)  (\(entry.file))\n"
            let next = entry.nextSlots.map { Timestamps.text(Double($0)) }
            text += "  next:    \(next.isEmpty ? "none (the schedule has ended)" : next.joined(separator: ", "))\n"
            if let fired = entry.lastFired {
                let run = entry.lastRun.map { "run \($0.id) \($0.status.rawValue)" } ?? "no run"
                text += "  last:    \(Timestamps.text(Double(fired.slot))), \(run)\n"
            } else {
                text += "  last:    never fired\n"
            }
            for skip in entry.skipped {
                let slots =
                    skip.count == 1
                    ? Timestamps.text(Double(skip.slot))
                    : "\(skip.count) slots \(Timestamps.text(Double(skip.slot)))…\(Timestamps.text(Double(skip.last)))"
                text += "  skipped: \(slots): \(skip.reason ?? "-")" + (skip.detail.map { " (\($0))" } ?? "") + "\n"
            }
            for failed in entry.failed {
                text +=
                    "  failed:  \(Timestamps.text(Double(failed.slot))): \(failed.reason ?? "-")"
                    + (failed.detail.map { " (\($0))" } ?? "") + (failed.run.map { ", run \($0)" } ?? "") + "\n"
            }
        }
        return text
    }

    /// `pushcamp schedules --format json` (docs/json.md).
    public func json() -> String {
        JSONValue.array(
            entries.map { entry in
                if let error = entry.error {
                    return .members([
                        ("file", .string(entry.file)), ("campaign", entry.campaign.map { .string($0) }),
                        ("error", .string(error)),
                    ])
                }
                return .members([
                    ("file", .string(entry.file)), ("campaign", entry.campaign.map { .string($0) }),
                    ("schedule", entry.schedule.map { .string("\($0)") }),
                    ("next_slots", .array(entry.nextSlots.map { .string(Timestamps.iso(Double($0))) })),
                    (
                        "last_fired",
                        entry.lastFired.map { fired in
                            .members([
                                ("slot", .string(Timestamps.iso(Double(fired.slot)))),
                                ("run", fired.run.map { .integer(Int($0.rawValue)) }),
                                ("status", entry.lastRun.map { .string($0.status.rawValue) }),
                            ])
                        }
                    ),
                    (
                        "skipped",
                        .array(
                            entry.skipped.map { skip in
                                .members([
                                    ("slot", .string(Timestamps.iso(Double(skip.slot)))),
                                    ("count", .integer(skip.count)),
                                    ("reason", .string(skip.reason ?? "")),
                                    ("through", skip.count > 1 ? .string(Timestamps.iso(Double(skip.last))) : nil),
                                    ("detail", skip.detail.map { .string($0) }),
                                ])
                            }
                        )
                    ),
                    (
                        "failed",
                        .array(
                            entry.failed.map { failed in
                                .members([
                                    ("slot", .string(Timestamps.iso(Double(failed.slot)))),
                                    ("run", failed.run.map { .integer(Int($0.rawValue)) }),
                                    ("reason", .string(failed.reason ?? "")),
                                    ("detail", failed.detail.map { .string($0) }),
                                ])
                            }
                        )
                    ),
                ])
            }
        ).text
    }
}
