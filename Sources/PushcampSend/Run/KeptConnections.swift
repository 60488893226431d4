import PushcampAPNs
import Synchronization

/// A worker's connections, kept from one slice to the next: a new slice's executor gets the
/// connections the last one left, already through TLS and past the one-stream ramp, instead of
/// opening its own.
///
/// Each slice borrows the pool (`lend()`), a `PushTransport` of its own. A slice that ends with
/// nothing in flight hands the pool back as it is; one that ends with requests on the wire (a
/// stop, a lost lease) shuts the pool down as a send always did, so nothing of that slice is
/// written after it stopped, and the next slice opens new connections.
final class KeptConnections: Sendable {
    private struct State {
        var pool: (any PushTransport)?
        var running: Task<Void, Never>?
        /// The last loan made, and whether it was given back before it started.
        var loan = 0
        var givenBack = false
        /// The borrower's sink, and the count of its requests submitted and not yet ended.
        var sink: TransportEventSink?
        var inFlight = 0
        /// What a new borrower must be told first: the connections up and their stream limits.
        var connected: Set<Int> = []
        var limits: [Int: Int] = [:]
        /// Resumed when the borrower gives the pool back, or the pool ends.
        var returned: CheckedContinuation<Void, Never>?
        var ended = false
    }

    private let make: @Sendable () throws -> any PushTransport
    private let state = Mutex(State())

    init(make: @escaping @Sendable () throws -> any PushTransport) {
        self.make = make
    }

    /// The pool for one slice: the kept one, or a new one when the last ended.
    func lend() throws -> any PushTransport {
        try state.withLock { state in
            if state.pool == nil || state.ended { state = State(pool: try make(), loan: state.loan) }
            state.loan += 1
            state.givenBack = false
            return Loan(kept: self, pool: state.pool!, id: state.loan)
        }
    }

    /// Shuts the kept pool down and waits for its connections to close.
    func close() async {
        let running = state.withLock { state in
            state.pool?.shutdown()
            return state.running
        }
        await running?.value
    }

    /// Attaches `sink` (telling it the connections already up), starts the pool on first use, and
    /// waits until the borrower gives it back or the pool ends.
    fileprivate func borrow(_ loan: Loan, reporting sink: @escaping TransportEventSink) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                guard state.loan == loan.id, !state.givenBack, !state.ended else {
                    continuation.resume()
                    return
                }
                state.sink = sink
                state.inFlight = 0
                state.returned = continuation
                for connection in state.connected.sorted() {
                    sink(.connected(connection: connection))
                    if let limit = state.limits[connection] { sink(.streamLimit(connection: connection, limit: limit)) }
                }
                guard state.running == nil else { return }
                let pool = loan.pool
                state.running = Task(executorPreference: pool.taskExecutor) {
                    await pool.run { [weak self] event in self?.forward(event) }
                    self.poolEnded()
                }
            }
        }
    }

    /// Events go on to the borrower, in order (under the lock, so a new borrower's replay of the
    /// connections never comes after a later change); between slices, only the state is kept.
    private func forward(_ event: TransportEvent) {
        state.withLock { state in
            switch event {
            case .connected(let connection): state.connected.insert(connection)
            case .disconnected(let connection, _):
                state.connected.remove(connection)
                state.limits[connection] = nil
            case .streamLimit(let connection, let limit): state.limits[connection] = limit
            case .outcomes(let outcomes): state.inFlight -= outcomes.count
            case .unsent(let requests): state.inFlight -= requests.count
            case .connectFailed, .requeued, .providerTokenRenewed, .providerTokenReverted, .accessTokenRefused: break
            }
            state.sink?(event)
        }
    }

    private func poolEnded() {
        state.withLock { state in
            state.ended = true
            state.sink = nil
            state.returned?.resume()
            state.returned = nil
        }
    }

    fileprivate func submit(_ requests: consuming [APNsRequest], to pool: any PushTransport) -> [APNsRequest] {
        let count = requests.count
        state.withLock { $0.inFlight += count }
        let refused = pool.submit(requests)
        if !refused.isEmpty { state.withLock { $0.inFlight -= refused.count } }
        return refused
    }

    /// The borrower is done: with nothing of its own in flight the pool is handed back as it is;
    /// otherwise it is shut down, and its run ends once the requests on the wire are answered.
    fileprivate func giveBack(_ loan: Loan) {
        let idle = state.withLock { state -> Bool in
            guard state.loan == loan.id, state.inFlight == 0, !state.ended else { return false }
            state.givenBack = true
            state.sink = nil
            state.returned?.resume()
            state.returned = nil
            return true
        }
        if !idle { loan.pool.shutdown() }
    }

    /// One slice's use of the kept pool.
    fileprivate struct Loan: PushTransport {
        let kept: KeptConnections
        let pool: any PushTransport
        let id: Int

        func run(reporting events: @escaping TransportEventSink) async {
            await kept.borrow(self, reporting: events)
        }
        func submit(_ requests: consuming [APNsRequest]) -> [APNsRequest] { kept.submit(requests, to: pool) }
        func shutdown() { kept.giveBack(self) }
        var openStreams: Int { pool.openStreams }
        var taskExecutor: (any TaskExecutor)? { pool.taskExecutor }
    }
}
