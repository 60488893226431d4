import Foundation
import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel

/// `serve`'s log lines on standard error, one per event: as text for people
/// (`2026-11-26T09:00:00Z notice pushcamp.serve: slot … of digest: run 3 sending`), or as JSON for
/// log pipelines (`--log-format json`), one object per line with `time`, `level`, `logger`,
/// `message`, and the event's fields as the scheduler and receiver attach them: `campaign`, `run`,
/// `slot`, `event` (docs/serve.md lists the events). Messages are escaped in both forms: nothing a
/// campaign file or a request holds can forge a line.
public struct ServeLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable {
        case text
        case json
    }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let format: Format
    let output: @Sendable (String) -> Void
    /// What each line's `time` is read from.
    let clock: any WallClock

    /// Makes every logger of the process log as `serve` does, from `level` up, in `format`.
    public static func bootstrap(format: Format, level: Logger.Level) {
        LoggingSystem.bootstrap { label in ServeLogHandler(label: label, format: format, level: level) }
    }

    public init(
        label: String,
        format: Format,
        level: Logger.Level,
        clock: any WallClock = SystemWallClock(),
        output: @escaping @Sendable (String) -> Void = ServeLogHandler.standardError
    ) {
        self.label = label
        self.format = format
        self.logLevel = level
        self.clock = clock
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }
        output(
            line(
                level: event.level,
                message: "\(event.message)",
                fields: fields,
                at: Date(timeIntervalSince1970: clock.now())
            )
        )
    }

    /// One line, newline included.
    func line(level: Logger.Level, message: String, fields: Logger.Metadata, at date: Date) -> String {
        let time = Self.timestamp(date)
        switch format {
        case .text:
            return "\(time) \(level) \(label): \(message.escapingControlCharacters)\n"
        case .json:
            var writer = JSONWriter(capacity: 256)
            writer.raw("{\"time\":")
            writer.string(time)
            writer.raw(",\"level\":")
            writer.string(level.rawValue)
            writer.raw(",\"logger\":")
            writer.string(label)
            writer.raw(",\"message\":")
            writer.string(message)
            for key in fields.keys.sorted() where !["time", "level", "logger", "message"].contains(key) {
                writer.raw(",")
                writer.string(key)
                writer.raw(":")
                writer.string("\(fields[key]!)")
            }
            writer.raw("}\n")
            return writer.string
        }
    }

    /// `2026-11-26T09:00:00.123Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(secondsFromGMT: 0)!)
        )
    }

    /// Writes to standard error, a line at a time.
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension Logger {
    /// The fields `serve`'s log events carry (JSON lines print them; text lines say them in words).
    static func fields(
        _ event: String,
        campaign: String? = nil,
        run: RunID? = nil,
        slot: Int64? = nil,
        slice: RunSlice? = nil
    ) -> Logger.Metadata {
        var fields: Logger.Metadata = ["event": .string(event)]
        if let campaign { fields["campaign"] = .string(campaign) }
        if let run { fields["run"] = .string(run.description) }
        if let slot { fields["slot"] = .string(Timestamps.text(Double(slot))) }
        if let slice {
            fields["first"] = .string("\(slice.seqs.lowerBound)")
            fields["last"] = .string("\(slice.seqs.upperBound)")
        }
        return fields
    }
}
