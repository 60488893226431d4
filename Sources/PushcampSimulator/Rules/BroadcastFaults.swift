import PushcampAPNsCore

/// What the simulator does wrong on purpose on the broadcast API, without sockets: a per-channel
/// throttle, a share of 5xx answers, and a script of the first broadcast sends' fates. Its state
/// (when each channel last took a broadcast, how far the script went) lives with the channels,
/// shared by every connection. GOAWAY and dropped connections are the connection's own faults
/// (`goawayAfter`, `dropAfter`), which hold for the broadcast API's connections as for pushes'.
public struct BroadcastFaults: Sendable, Equatable {
    /// The fate of one broadcast send in `script`.
    public enum Step: String, Sendable, CaseIterable {
        /// 429 TooManyRequests.
        case tooManyRequests = "429"
        /// 500 InternalServerError.
        case internalServerError = "500"
        /// 503 ServiceUnavailable.
        case serviceUnavailable = "503"
        /// The connection is dropped with the request unanswered (and not processed).
        case drop
    }

    /// A channel takes at most one broadcast per this many seconds; a sooner one is answered 429
    /// TooManyRequests (Apple documents that APNs throttles a channel, not how).
    public var channelThrottle: Double?
    /// Share of channel-management and broadcast requests answered 500 or 503 (half each), before
    /// anything is done.
    public var errorRate = 0.0
    /// The first broadcast sends go as these say, in order, across connections; later ones as usual.
    public var script: [Step] = []
    /// Seconds sent in `retry-after` with every 429 and 503 of the broadcast API (none when nil).
    public var retryAfter: Int?

    public init() {}

    /// Whether any fault is set.
    public var isEmpty: Bool { channelThrottle == nil && errorRate == 0 && script.isEmpty }

    /// What the faults make of a request to the broadcast API.
    public enum Verdict: Sendable, Equatable {
        /// Answered as the rules say.
        case asUsual
        /// Answered this instead, before anything is done.
        case answer(BroadcastRules.Answer)
        /// The connection is dropped, the request unanswered.
        case drop
    }

    /// The state the faults keep between requests.
    public struct State: Sendable, Equatable {
        /// When each channel (by id) last took a broadcast, in seconds.
        var accepted: [String: Double] = [:]
        var scriptPosition = 0

        public init() {}
    }

    /// Before a request is answered: a scripted fate (broadcast sends) or a random 5xx.
    public func before(
        _ route: BroadcastRules.Route,
        state: inout State,
        random: @autoclosure () -> Double
    ) -> Verdict {
        if case .broadcast = route, state.scriptPosition < script.count {
            defer { state.scriptPosition += 1 }
            switch script[state.scriptPosition] {
            case .tooManyRequests: return .answer(refusal(.tooManyRequests))
            case .internalServerError: return .answer(refusal(.internalServerError))
            case .serviceUnavailable: return .answer(refusal(.serviceUnavailable))
            case .drop: return .drop
            }
        }
        if route.isBroadcastAPI, errorRate > 0 {
            let draw = random()
            if draw < errorRate {
                return .answer(refusal(draw < errorRate / 2 ? .internalServerError : .serviceUnavailable))
            }
        }
        return .asUsual
    }

    /// After the rules accepted a broadcast to `channelID` at `now`: 429 when the channel took one
    /// less than `channelThrottle` seconds ago (the refused one does not count).
    public func after(
        _ answer: BroadcastRules.Answer,
        channelID: String?,
        route: BroadcastRules.Route,
        state: inout State,
        now: Double
    )
        -> BroadcastRules.Answer
    {
        guard case .broadcast = route, answer.status == 200, let channelID else { return answer }
        if let channelThrottle, let last = state.accepted[channelID], now - last < channelThrottle {
            var refused = refusal(.tooManyRequests)
            refused.headers.merge(answer.headers) { mine, _ in mine }
            return refused
        }
        state.accepted[channelID] = now
        return answer
    }

    private func refusal(_ reason: APNsReason) -> BroadcastRules.Answer {
        var answer = BroadcastRules.Answer(status: reason.status, reason: reason)
        if let retryAfter, reason.status == 429 || reason.status == 503 {
            answer.headers["retry-after"] = String(retryAfter)
        }
        return answer
    }
}
