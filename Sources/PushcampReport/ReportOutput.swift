import Foundation

/// Where `report --output` may write: never over the journal it reads (or the files SQLite and
/// the files SQLite keeps beside it), and over an existing file only when it is a previous report.
public enum ReportOutput {
    /// Why `output` must not be written, or nil when it may.
    public static func refusal(for output: String, journalPath: String, force: Bool) -> String? {
        let target = URL(fileURLWithPath: output).standardizedFileURL.resolvingSymlinksInPath().path
        let journal = URL(fileURLWithPath: journalPath).standardizedFileURL.resolvingSymlinksInPath().path
        if target == journal || target.hasPrefix(journal + "-") || target.hasPrefix(journal + ".") {
            return "\(output) is the journal (or one of its files); a report there would destroy it"
        }
        guard !force, FileManager.default.fileExists(atPath: output) else { return nil }
        guard isReport(output) else {
            return "\(output) exists and is not a Pushcamp report; pass --force to overwrite it"
        }
        return nil
    }

    /// Whether the file begins as one of `report`'s formats does.
    static func isReport(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = String(decoding: (try? handle.read(upToCount: 256)) ?? Data(), as: UTF8.self)
        return head.isEmpty || head.hasPrefix("{\"run\":") || head.hasPrefix("<!DOCTYPE html>")
            || head.hasPrefix("Run ") || head.hasPrefix("Rehearsal run ") || head.hasPrefix("### Run ")
            || head.hasPrefix("### Rehearsal run ")
    }
}
