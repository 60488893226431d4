import Dispatch
import Synchronization

/// A bounded hand-over to one async consumer, from a producer that is a thread (the planner, which
/// blocks while `capacity` elements wait) or a task (which awaits room): memory stays flat whatever
/// the audience size.
final class Feed<Element: Sendable>: Sendable {
    private enum Producer {
        case thread
        case task(CheckedContinuation<Void, Never>)
    }

    private struct State {
        var elements: [Element] = []
        var consumer: CheckedContinuation<Element?, Never>?
        /// The producer waiting for room, if one is.
        var producer: Producer?
        var finished = false
        var cancelled = false
    }

    private enum Offer {
        case placed
        case full
        case cancelled
    }

    private let state = Mutex(State())
    private let capacity: Int
    /// How a producing thread waits for room: a thread cannot await, and the planner is a thread
    /// (it reads files and renders, work that must not hold a thread of the cooperative pool).
    private let room = DispatchSemaphore(value: 0)  // the planner's thread only; a task awaits room instead

    init(capacity: Int) {
        self.capacity = capacity
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Producer side, on a thread: hands over `element`, blocking while the feed is full; false
    /// once cancelled.
    func put(_ element: Element) -> Bool {
        while true {
            switch offer(element, waiting: .thread) {
            case .placed: return true
            case .cancelled: return false
            case .full: room.wait()
            }
        }
    }

    /// Producer side, in a task: hands over `element`, awaiting room; false once cancelled.
    func put(_ element: Element) async -> Bool {
        while true {
            var outcome = Offer.full
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                outcome = offer(element, waiting: .task(continuation))
                if case .full = outcome { return }  // resumed once there is room
                continuation.resume()
            }
            switch outcome {
            case .placed: return true
            case .cancelled: return false
            case .full: continue
            }
        }
    }

    /// Places `element` (with the consumer if it waits), or records `waiting` as the producer to
    /// wake when there is room.
    private func offer(_ element: Element, waiting: Producer) -> Offer {
        let (offer, consumer) = state.withLock { state -> (Offer, CheckedContinuation<Element?, Never>?) in
            if state.cancelled { return (.cancelled, nil) }
            if let consumer = state.consumer {
                state.consumer = nil
                return (.placed, consumer)
            }
            if state.elements.count < capacity {
                state.elements.append(element)
                return (.placed, nil)
            }
            state.producer = waiting
            return (.full, nil)
        }
        consumer?.resume(returning: element)
        return offer
    }

    /// Producer side: no more elements.
    func finish() {
        let consumer = state.withLock { state in
            state.finished = true
            defer { state.consumer = nil }
            return state.elements.isEmpty ? state.consumer : nil
        }
        consumer?.resume(returning: nil)
    }

    /// Consumer side: the next element, or nil when the producer finished or the feed is cancelled.
    func next() async -> Element? {
        await withCheckedContinuation { continuation in
            let (ready, producer) = state.withLock { state -> (Element??, Producer?) in
                if state.cancelled { return (.some(nil), nil) }
                if !state.elements.isEmpty {
                    defer { state.producer = nil }
                    return (.some(state.elements.removeFirst()), state.producer)
                }
                if state.finished { return (.some(nil), nil) }
                state.consumer = continuation
                return (nil, nil)
            }
            wake(producer)
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Stops the producer at its next element and the consumer at its next `next()`.
    func cancel() {
        let (consumer, producer) = state.withLock { state in
            state.cancelled = true
            state.elements.removeAll()
            defer {
                state.consumer = nil
                state.producer = nil
            }
            return (state.consumer, state.producer)
        }
        wake(producer)
        consumer?.resume(returning: nil)
    }

    private func wake(_ producer: Producer?) {
        switch producer {
        case .thread?: room.signal()
        case .task(let continuation)?: continuation.resume()
        case nil: break
        }
    }
}
