import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCMCore
import PushcampJournal
import PushcampModel

extension ExecutorStateMachine {
    /// Answers and losses: delivered, failed, or waiting in the retry heap, as `RetryPolicy` decides;
    /// refused credentials and run-level conditions stop the run.
    mutating func handle(_ outcomes: [APNsOutcome], now: Double) -> [Action] {
        unanswered -= outcomes.count
        var updates: [RecipientUpdate] = []
        var firstDeliveries: [FirstDelivery] = []
        firstDeliveries.reserveCapacity(outcomes.count)
        var dead: [InvalidToken] = []
        var lostInFlight = 0
        var stopReason: SendReport.Stop?
        var answered = 0
        for outcome in outcomes {
            let request = outcome.request
            if case .response = outcome.result {
                report.latency.record(nanoseconds: outcome.latency.nanoseconds)
                report.variantLatency[request.group >> 16, default: LatencyHistogram()].record(
                    nanoseconds: outcome.latency.nanoseconds
                )
                // An answer is progress: silence counts again from now for the requests still
                // unanswered, whatever the connections did meanwhile.
                silentSince = unanswered > 0 ? now : nil
            }
            if case .timedOut = outcome.result { timeouts += 1 }
            // The journal counts sends, this one included.
            let attempt = request.attempt + 1
            func note(_ state: RecipientState) {
                updates.append(RecipientUpdate(seq: request.tag, token: request.deviceToken, state: state))
            }
            let decision =
                request.isFCM
                ? configuration.retry.decideFCM(
                    outcome,
                    attempt: request.attempt,
                    losses: request.losses,
                    payloadKnownValid: fcmAccepted,
                    random: Double.random(in: 0..<1)
                )
                : configuration.retry.decide(
                    outcome.result,
                    attempt: request.attempt,
                    losses: request.losses,
                    random: Double.random(in: 0..<1)
                )
            switch decision {
            case .delivered:
                if request.isFCM { fcmAccepted = true }
                report.delivered += 1
                answered += 1
                report.statuses[.init(request.isFCM ? .android : .ios, 200), default: 0] += 1
                report.groups[request.group, default: Readout()].delivered += 1
                if request.attempt == 0 {
                    // The common case: no token text taken (its reference count lives on the planner's
                    // thread), the hash the planner made instead.
                    firstDeliveries.append(FirstDelivery(seq: request.tag, tokenHash: request.deviceTokenHash))
                } else {
                    note(.delivered(attempt: attempt))
                }
            case .failed(let reason):
                fail(outcome, reason: reason)
                answered += 1
                report.groups[request.group, default: Readout()].failed[reason, default: 0] += 1
                var stamp: Int64?
                if case .response(_, _, let timestamp) = outcome.result { stamp = timestamp }
                note(.failed(status: outcome.status, reason: reason, apnsTimestamp: stamp))
                if InvalidToken.reasons.contains(reason) || FCMReason.deadTokenReasons.contains(reason) {
                    // Remembered for the topic (FCM's registration tokens: for FCM): later campaigns
                    // skip the token.
                    dead.append(
                        InvalidToken(
                            topic: request.isFCM ? InvalidToken.fcmTopic : request.topic,
                            token: request.deviceToken,
                            reason: reason,
                            apnsTimestamp: stamp,
                            seenAt: now
                        )
                    )
                }
            case .credentials(let reason):
                // Not final for the journal: once the credentials are fixed, a resume sends it.
                fail(outcome, reason: reason)
                note(.waiting(until: now, attempt: attempt))
                credentialFailures += 1
                if credentialFailures >= configuration.credentialStopAfter, stopReason == nil {
                    stopReason = .credentials(Self.explain(reason))
                }
            case .stopRun(let reason):
                fail(outcome, reason: reason)
                note(.waiting(until: now, attempt: attempt))
                if stopReason == nil { stopReason = .credentials(Self.explain(reason)) }
            case .pauseRun(let after, let cause):
                // Nothing more is released before the pause ends; this push goes first after it.
                report.retries[cause, default: 0] += 1
                let until = max(pausedUntil ?? now, now + after)
                pausedUntil = until
                var retry = request
                retry.attempt += 1
                note(.waiting(until: until, attempt: attempt))
                if stop == nil && stopReason == nil { scheduleRetry(retry, due: until) }
            case .retry(let after, let cause):
                report.retries[cause, default: 0] += 1
                var retry = request
                retry.attempt += 1
                if outcome.status == nil, case .connectionLost = outcome.result {
                    // Lost in flight: APNs may have it, so the next send is a possible duplicate.
                    retry.losses += 1
                    lostInFlight += 1
                    note(.unknown(attempt: attempt))
                } else if outcome.status == nil {
                    lostInFlight += 1
                    note(.unknown(attempt: attempt))
                } else {
                    note(.waiting(until: now + after, attempt: attempt))
                }
                if stop == nil && stopReason == nil {
                    scheduleRetry(retry, due: now + after)
                }
            }
        }
        report.possibleDuplicates += lostInFlight
        report.answers.record(answered, at: now)
        var actions: [Action] = [
            .settle(updates, firstDeliveries: firstDeliveries, possibleDuplicates: lostInFlight, invalidTokens: dead)
        ]
        if let stopReason {
            // Retries decided in this same read are not sent (the report counts them as not sent).
            actions += halt(stopReason, now: now)
        }
        return actions
    }

    mutating func fail(_ outcome: APNsOutcome, reason: String) {
        report.failures[reason, default: 0] += 1
        if let status = outcome.status {
            report.statuses[.init(outcome.request.isFCM ? .android : .ios, status), default: 0] += 1
        }
        guard InvalidToken.reasons.contains(reason) || FCMReason.deadTokenReasons.contains(reason) else { return }
        if report.deadTokens.count < SendReport.deadTokenLimit {
            var timestamp: Int64?
            if case .response(_, _, let stamp) = outcome.result { timestamp = stamp }
            report.deadTokens.append(.init(token: outcome.request.deviceToken, reason: reason, timestamp: timestamp))
        } else {
            report.deadTokensOmitted += 1
        }
    }

    /// What to check when APNs refuses the credentials, or the run's use of them.
    public static func explain(_ reason: String) -> String {
        switch APNsReason(reason) {
        case .invalidProviderToken:
            return "APNs refused the provider token (InvalidProviderToken): check team_id and key_id in pushcamp.yaml "
                + "and that the .p8 key is theirs and not revoked"
        case .missingProviderToken:
            return "APNs got no provider token (MissingProviderToken): configure token credentials or a certificate"
        case .badCertificate:
            return "APNs refused the client certificate (BadCertificate): check the certificate file and password"
        case .badCertificateEnvironment:
            return "the certificate is for the other environment (BadCertificateEnvironment): check `environment`"
        case .expiredProviderToken:
            return "APNs calls the provider token expired although it was issued less than 20 minutes ago "
                + "(ExpiredProviderToken): this machine's clock and APNs' disagree; check the clock (NTP)"
        case .tooManyProviderTokenUpdates:
            return "APNs refuses a new provider token because another one for this key was introduced less than "
                + "20 minutes ago (TooManyProviderTokenUpdates): another machine (or a process with its journal "
                + "elsewhere) is sending with the same key and a token of its own, and no earlier token of ours "
                + "was young enough to go back to. Nothing more was sent and no new token minted; send again in "
                + "20 minutes to resume, and let one machine's journal folder hold the key's token"
        default:
            return "APNs refused the credentials (\(reason)): check the app's credentials in pushcamp.yaml"
        }
    }
}
