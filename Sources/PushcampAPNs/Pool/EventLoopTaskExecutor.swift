import NIOCore

/// Runs Swift tasks on a NIO event loop: the executor that drives a send prefers it, so the state
/// machine, the transport's events and the connections' handlers share one thread and hand-overs
/// between them cost no thread wake-up.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
