import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import Testing

@Suite("Connection state machine")
struct ConnectionStateMachineTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func oneStreamUntilTheTokenIsAcceptedThenTheServersLimit() {
        var machine = ConnectionStateMachine(authentication: .providerToken, now: start)
        #expect(machine.budget == 1)  // before any SETTINGS
        _ = machine.settingsReceived(maxConcurrentStreams: 1000)
        #expect(machine.budget == 1)  // not authenticated yet
        machine.streamOpened(now: start)
        #expect(machine.budget == 0)
        _ = machine.streamClosed(status: 200, reason: nil, now: start)
        #expect(machine.budget == 1000)
    }

    @Test func aNewConnectionRampsUpFromTheServersFirstLimit() {
        var machine = ConnectionStateMachine(authentication: .providerToken, now: start)
        #expect(machine.settingsReceived(maxConcurrentStreams: 1) == .reportStreamLimit(1))
        machine.streamOpened(now: start)
        // The token is accepted; the server raises its limit to 500: the ramp doubles per round of answers.
        #expect(machine.streamClosed(status: 200, reason: nil, now: start) == .none)
        #expect(machine.settingsReceived(maxConcurrentStreams: 500) == .none)
        var limits: Set<Int> = []
        for _ in 0..<1200 {
            limits.insert(machine.streamLimit)
            while machine.budget > 0 { machine.streamOpened(now: start) }
            _ = machine.streamClosed(status: 200, reason: nil, now: start)
        }
        #expect(machine.streamLimit == 500)
        #expect(limits.sorted() == [1, 2, 4, 8, 16, 32, 64, 128, 256, 500])
    }

    @Test func aServerThatSendsNoSettingsIsClosed() {
        var machine = ConnectionStateMachine(authentication: .providerToken, now: start, settingsTimeout: .seconds(10))
        #expect(machine.tick(now: start + .seconds(9)) == .none)
        guard case .close(let reason) = machine.tick(now: start + .seconds(10)) else {
            Issue.record("expected close")
            return
        }
        #expect(reason.contains("no HTTP/2 SETTINGS"))
    }

    @Test func aRefusedTokenKeepsOneStream() {
        var machine = ConnectionStateMachine(authentication: .providerToken, now: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 500)
        machine.streamOpened(now: start)
        _ = machine.streamClosed(status: 403, reason: .invalidProviderToken, now: start)
        #expect(machine.budget == 1)
    }

    @Test func aKeyRefusedAFewTimesDrainsTheConnection() {
        var machine = ConnectionStateMachine(authentication: .providerToken, now: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 500)
        var actions: [ConnectionStateMachine.Action] = []
        for _ in 0..<ConnectionStateMachine.credentialRefusalLimit {
            #expect(machine.budget == 1)
            machine.streamOpened(now: start)
            actions.append(machine.streamClosed(status: 403, reason: .invalidProviderToken, now: start))
        }
        guard case .drain(let reason) = actions.last else {
            Issue.record("the third refusal drains")
            return
        }
        #expect(reason.contains("InvalidProviderToken"))
        #expect(machine.credentialsRefused)
        #expect(machine.phase == .draining)
        #expect(machine.budget == 0)
        #expect(machine.finished)
    }

    @Test func refusalsOtherThanCredentialsDoNotDrain() {
        var machine = ConnectionStateMachine(authentication: .providerToken, now: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 500)
        for _ in 0..<10 {
            machine.streamOpened(now: start)
            _ = machine.streamClosed(status: 403, reason: .expiredProviderToken, now: start)
        }
        #expect(machine.phase == .active)
        #expect(machine.budget == 1)
    }

    @Test func certificatesUseTheServersLimitAtOnce() {
        var machine = ConnectionStateMachine(authentication: .certificate, now: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 50)
        #expect(machine.budget == 50)
    }

    @Test func aLoweredLimitIsFollowedDown() {
        var machine = ConnectionStateMachine(authentication: .certificate, now: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 10)
        for _ in 0..<10 { machine.streamOpened(now: start) }
        _ = machine.settingsReceived(maxConcurrentStreams: 2)
        #expect(machine.budget == 0)
        for _ in 0..<8 { _ = machine.streamClosed(status: 200, reason: nil, now: start) }
        #expect(machine.budget == 0)
        _ = machine.streamClosed(status: 200, reason: nil, now: start)
        #expect(machine.budget == 1)
    }

    @Test func drainingOpensNothingAndFinishesWhenEmpty() {
        var machine = ConnectionStateMachine(authentication: .certificate, now: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 10)
        machine.streamOpened(now: start)
        machine.drain()
        #expect(machine.budget == 0)
        #expect(!machine.finished)
        _ = machine.streamClosed(status: nil, reason: nil, now: start)
        #expect(machine.finished)
    }

    @Test func aBurstOfBadTokensCutsTheBudgetToAQuarter() {
        var machine = ConnectionStateMachine(authentication: .certificate, now: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        for index in 0..<ConnectionStateMachine.healthWindow {
            machine.streamOpened(now: start)
            _ = machine.streamClosed(
                status: index % 2 == 0 ? 400 : 200,
                reason: index % 2 == 0 ? .badDeviceToken : nil,
                now: start
            )
        }
        #expect(machine.streamLimit == 25)
        for _ in 0..<ConnectionStateMachine.healthWindow {
            machine.streamOpened(now: start)
            _ = machine.streamClosed(status: 200, reason: nil, now: start)
        }
        #expect(machine.streamLimit == 100)
    }

    @Test func idleConnectionsArePingedAndClosedWithoutAnAnswer() {
        var machine = ConnectionStateMachine(
            authentication: .certificate,
            now: start,
            idleTimeout: .seconds(60),
            pingTimeout: .seconds(10)
        )
        _ = machine.settingsReceived(maxConcurrentStreams: 10)
        #expect(machine.tick(now: start + .seconds(59)) == .none)
        #expect(machine.tick(now: start + .seconds(60)) == .ping)
        #expect(machine.tick(now: start + .seconds(65)) == .none)
        machine.pingAcknowledged(now: start + .seconds(66))
        #expect(machine.tick(now: start + .seconds(100)) == .none)
        #expect(machine.tick(now: start + .seconds(126)) == .ping)
        if case .close = machine.tick(now: start + .seconds(136)) {} else { Issue.record("expected close") }
    }

    @Test func backoffGrowsWithJitterAndResets() {
        var backoff = Backoff(base: .milliseconds(100), maximum: .seconds(1))
        #expect(backoff.next(random: 0) == .milliseconds(50))
        #expect(backoff.next(random: 1) == .milliseconds(200))
        #expect(backoff.next(random: 1) == .milliseconds(400))
        #expect(backoff.next(random: 1) == .milliseconds(800))
        #expect(backoff.next(random: 1) == .seconds(1))
        backoff.reset()
        #expect(backoff.next(random: 1) == .milliseconds(100))
    }

    @Test(arguments: [
        ("BadDeviceToken", APNsReason.Disposition.neverRetry, 400),
        ("Unregistered", .neverRetry, 410),
        ("PayloadTooLarge", .neverRetry, 413),
        ("InvalidProviderToken", .credentials, 403),
        ("ExpiredProviderToken", .refreshProviderToken, 403),
        ("TooManyRequests", .deviceBusy, 429),
        ("ServiceUnavailable", .serverError, 503),
        ("BadPriority", .requestBug, 400),
    ])
    func reasons(name: String, disposition: APNsReason.Disposition, status: Int) {
        let reason = APNsReason(name)
        #expect(reason.description == name)
        #expect(reason.disposition == disposition)
        #expect(reason.status == status)
    }

    @Test func endpoints() {
        #expect(APNsClientConfiguration.parseEndpoint("https://api.push.apple.com")! == ("api.push.apple.com", 443))
        #expect(APNsClientConfiguration.parseEndpoint("https://127.0.0.1:8443")! == ("127.0.0.1", 8443))
        #expect(APNsClientConfiguration.parseEndpoint("http://127.0.0.1:8443") == nil)
        #expect(APNsClientConfiguration.parseEndpoint("https://host:99999") == nil)
    }
}
