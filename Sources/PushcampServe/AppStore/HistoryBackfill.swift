import Foundation
import PushcampAppStore
import PushcampJournal
import PushcampModel

/// `pushcamp appstore history`: the App Store Server API's notification history, page by page,
/// each notification taken in as `serve` takes one in (verified, stored once, quarantined when the
/// configuration refuses it, triggers fired when asked), counted.
public struct HistoryBackfill: Sendable {
    /// What happened to the notifications fetched: `stored`, `quarantined`, `duplicate` (kept
    /// already), `refused`; the first five refusals; and the pages fetched (nil when it failed).
    public var counts: [String: Int] = [:]
    public var refusals: [String] = []
    public var fetched: NotificationHistory.Fetched?
    public var failure: Failure?

    public enum Failure: Error, Sendable {
        /// The API refused or failed; `unauthorized` for a 401 (the key).
        case api(String, unauthorized: Bool)
        /// A notification could not be stored: run the command again.
        case journal(String)
    }

    /// Fetches `query` and hands every notification to `receiver`.
    public static func run(
        _ query: NotificationHistoryQuery,
        api: AppStoreServerAPI,
        receiver: AppStoreReceiver,
        transport: any AppStoreAPITransport = AppStoreAPIClient()
    ) async -> HistoryBackfill {
        var result = HistoryBackfill()
        do {
            result.fetched = try await NotificationHistory.fetch(query, api: api, transport: transport) { payloads in
                for payload in payloads {
                    switch await receiver.ingest(signedPayload: payload, checkAge: false) {
                    case .kept(let record, let new):
                        result.counts[new ? record.disposition.rawValue : "duplicate", default: 0] += 1
                    case .refused(let refusal):
                        result.counts["refused", default: 0] += 1
                        if result.refusals.count < 5 { result.refusals.append(refusal.description) }
                    case .storeFailed(let error):
                        throw error
                    }
                }
            }
        } catch let failure as NotificationHistory.Failure {
            result.failure = .api(failure.description, unauthorized: failure.description.contains("(401"))
        } catch let error as JournalError {
            result.failure = .journal(error.message)
        } catch {
            result.failure = .journal("\(error)")
        }
        return result
    }

    /// `12 notifications: 10 new (9 stored, 1 quarantined), 2 already kept, 0 refused`.
    public var summary: String {
        let total = counts.values.reduce(0, +)
        let new = (counts["stored"] ?? 0) + (counts["quarantined"] ?? 0)
        return "\(total) notification\(total == 1 ? "" : "s"): \(new) new (\(counts["stored"] ?? 0) stored, "
            + "\(counts["quarantined"] ?? 0) quarantined), \(counts["duplicate"] ?? 0) already kept, "
            + "\(counts["refused"] ?? 0) refused"
    }
}

extension HistoryBackfill {
    /// `APP (ENVIRONMENT), notifications since TIME: N pages, M waits for Apple's rate limit`.
    public func heading(app: String, environment: String, query: NotificationHistoryQuery) -> String {
        let pages = fetched?.pages ?? 0
        let waits = fetched?.waits ?? 0
        let waitText = waits > 0 ? ", \(waits) wait\(waits == 1 ? "" : "s") for Apple's rate limit" : ""
        let what = query.onlyFailures ? "failed notifications" : "notifications"
        return "\(app) (\(environment)), \(what) since \(Timestamps.text(query.start.timeIntervalSince1970)): "
            + "\(pages) page\(pages == 1 ? "" : "s")\(waitText)"
    }

    /// The failure as the command says it (after the summary), with its exit code: 2 when Apple
    /// refused the key, else 1.
    public var failureMessage: (message: String, exitCode: Int32)? {
        switch failure {
        case .api(let message, let unauthorized)?: ("error: \(message.escapingControlCharacters)", unauthorized ? 2 : 1)
        case .journal(let message)?:
            ("error: the journal cannot keep notifications: \(message); run the command again", 1)
        case nil: nil
        }
    }
}
