import NIOCore
import NIOPosix
import NIOSSL
import PushcampAPNsCore
import Synchronization

/// N long-lived HTTP/2 connections to one APNs endpoint, fed from one bounded queue.
///
/// Each connection takes as many requests as its stream budget allows; a connection that ends
/// (GOAWAY, drop, PING timeout) is replaced after an exponential back-off with jitter, and the requests
/// it never processed go to the others.
public final class APNsConnectionPool: PushTransport {
    private let configuration: APNsClientConfiguration
    /// Every connection of the pool runs on this one loop (so does the executor, by preference).
    private let eventLoop: any EventLoop
    public let taskExecutor: (any TaskExecutor)?
    private let tlsContext: NIOSSLContext
    private let queue = RequestQueue()
    private let state = Mutex(State())
    private let streams = StreamCounter()

    private struct State {
        var stopping = false
        var channels: [Int: any Channel] = [:]
    }

    public init(
        configuration: APNsClientConfiguration,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(APNsClientError) {
        self.configuration = configuration
        eventLoop = group.next()
        taskExecutor = EventLoopTaskExecutor(eventLoop: eventLoop)
        self.tlsContext = try configuration.makeTLSContext()
    }

    /// One loop of the shared group, for pools that should run side by side on it (a campaign's
    /// APNs and FCM pools, whose executor then runs next to both).
    public static func nextEventLoop() -> any EventLoopGroup { MultiThreadedEventLoopGroup.singleton.next() }

    public func submit(_ requests: consuming [APNsRequest]) -> [APNsRequest] {
        queue.add(requests) ?? []
    }

    public var openStreams: Int { streams.value }

    public func shutdown() {
        let channels = state.withLock { state in
            state.stopping = true
            return Array(state.channels.values)
        }
        for channel in channels {
            channel.pipeline.fireUserInboundEventTriggered(APNsConnectionHandler.Drain())
        }
    }

    public func run(reporting events: @escaping TransportEventSink) async {
        // Structured: the slots and the token keeper are children of this group, which ends when every
        // slot has (after shutdown) and then cancels the keeper. Children say whether they were a
        // connection slot (true) or the token keeper.
        await withTaskGroup(of: Bool.self) { group in
            for slot in 0..<configuration.connections {
                group.addTask {
                    await self.maintain(slot: slot, events: events)
                    return true
                }
            }
            guard case .bearer(let source) = configuration.authentication else { return }
            // Keeps a token at hand while the connections run; refused credentials stop the run.
            let clock = configuration.clock
            group.addTask {
                do throws(APNsClientError) {
                    try await source.keepFresh(clock: clock)
                } catch {
                    events(.connectFailed(connection: -1, error: error))
                }
                return false
            }
            // Every slot is maintained until shutdown; then the keeper goes too.
            var slots = configuration.connections
            while slots > 0, let wasSlot = await group.next() {
                if wasSlot { slots -= 1 }
            }
            group.cancelAll()
        }
        let unsent = queue.close()
        if !unsent.isEmpty { events(.unsent(unsent)) }
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    /// Keeps one connection slot filled until shutdown.
    private func maintain(slot: Int, events: @escaping TransportEventSink) async {
        var backoff = configuration.reconnectBackoff
        while !stopping {
            do {
                let channel = try await connect(slot: slot, events: events)
                backoff.reset()
                let stopNow = state.withLock { state in
                    state.channels[slot] = channel
                    return state.stopping
                }
                if stopNow { channel.pipeline.fireUserInboundEventTriggered(APNsConnectionHandler.Drain()) }
                try? await channel.closeFuture.get()
                _ = state.withLock { $0.channels.removeValue(forKey: slot) }
            } catch let error as APNsClientError {
                events(.connectFailed(connection: slot, error: error))
            } catch {
                events(.connectFailed(connection: slot, error: APNsClientError(.connect, "\(error)")))
            }
            guard !stopping else { break }
            // The back-off, in steps so a shutdown does not wait for it; cancellation ends the slot.
            let until = configuration.clock.now() + Double(backoff.next().nanoseconds) / 1e9
            do {
                while !stopping, configuration.clock.now() < until {
                    try await configuration.clock.sleep(until: min(until, configuration.clock.now() + 0.05))
                }
            } catch {
                break
            }
        }
    }

    private func connect(slot: Int, events: @escaping TransportEventSink) async throws -> any Channel {
        let host = configuration.host
        let authority = configuration.port == 443 ? host : "\(host):\(configuration.port)"
        let tokens: ProviderTokens?
        if case .providerToken(let provider) = configuration.authentication { tokens = provider } else { tokens = nil }
        var handlerConfiguration = APNsConnectionHandler.Configuration(
            id: slot,
            authority: authority,
            queue: queue,
            tokens: tokens,
            events: events,
            requestTimeout: configuration.requestTimeout,
            idleTimeout: configuration.idleTimeout,
            pingTimeout: configuration.pingTimeout,
            settingsTimeout: configuration.settingsTimeout,
            streams: streams
        )
        if case .bearer(let source) = configuration.authentication { handlerConfiguration.bearer = source }
        let ready = eventLoop.makePromise(of: Void.self)
        let configured = handlerConfiguration
        let bootstrap = configuration.bootstrap(on: eventLoop, tlsContext: tlsContext) {
            APNsConnectionHandler(configuration: configured, ready: ready)
        }
        let channel: any Channel
        do {
            let target = configuration.connectTarget
            channel = try await bootstrap.connect(host: target.host, port: target.port).get()
        } catch {
            ready.fail(error)
            throw APNsClientError(
                .connect,
                ConnectFailure.explain(error, connectTimeout: configuration.connectTimeout)
            )
        }
        do {
            try await ready.futureResult.get()
        } catch let error as APNsClientError {
            channel.close(promise: nil)
            throw error
        } catch {
            channel.close(promise: nil)
            throw APNsClientError(
                .connect,
                ConnectFailure.explain(error, connectTimeout: configuration.connectTimeout)
            )
        }
        return channel
    }
}

/// Streams open across the pool's connections, for progress ("on the wire").
final class StreamCounter: Sendable {
    private let count = Atomic<Int>(0)
    func add(_ delta: Int) { count.add(delta, ordering: .relaxed) }
    var value: Int { max(0, count.load(ordering: .relaxed)) }
}
