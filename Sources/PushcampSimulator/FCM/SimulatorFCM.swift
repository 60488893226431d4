import Foundation
import PushcampFCMCore
import Synchronization

/// The simulator's FCM side, shared by its connections: one `FCMBackend` behind a lock.
public final class SimulatorFCM: Sendable {
    private let backend: Mutex<FCMBackend>

    init(settings: FCMSimulation) {
        backend = Mutex(FCMBackend(settings: settings))
    }

    /// The service account that signs for the simulator: its `token_uri` is the simulator's token
    /// endpoint once it listens. What `pushcamp sim` writes as `fcm-service-account.json`.
    public var account: ServiceAccount { backend.withLock { $0.settings.account } }

    /// Access tokens the token endpoint issued.
    public var accessTokensIssued: Int { backend.withLock { $0.accessTokensIssued } }

    /// Forgets every access token issued (see `FCMBackend.revokeAccessTokens`).
    public func revokeAccessTokens() {
        backend.withLock { $0.revokeAccessTokens() }
    }

    /// Points the service account's `token_uri` at where the simulator listens.
    func listening(host: String, port: Int) {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        backend.withLock { $0.settings.account.tokenURI = "https://\(authority)\(FCMBackend.tokenPath)" }
    }

    func token(method: String, body: [UInt8], now: Double) -> BroadcastRules.Answer {
        backend.withLock { backend in
            backend.token(method: method, body: body, now: now) {
                "ya29.sim-" + (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 36) }.joined()
            }
        }
    }

    func send(
        _ request: RequestRules.Request,
        project: String,
        tokens: [String: TokenBehaviour],
        now: Double
    ) -> (BroadcastRules.Answer, FCMBackend.Sent) {
        backend.withLock {
            $0.send(request, project: project, tokens: tokens, now: now, random: Double.random(in: 0..<1))
        }
    }
}
