import Foundation

/// Work that reads an audience (files, databases: blocking reads that must not hold a thread of the
/// cooperative pool) done on a thread of its own, handing pages over to the calling task, which
/// consumes each, awaited: memory holds a couple of pages whatever the audience's size.
enum ThreadPages {
    /// Runs `produce` on a thread named `name`; every page it emits is passed to `consume` here, in
    /// order. Answers what `produce` returned. When `consume` throws, `produce` is stopped at its
    /// next page (its `emit` throws) and the error is thrown.
    static func run<Page: Sendable, Produced: Sendable>(
        name: String,
        produce: @escaping @Sendable (_ emit: (Page) throws -> Void) throws -> Produced,
        consume: (Page) async throws -> Void
    ) async throws -> Produced {
        let pages = Feed<Page>(capacity: 2)
        async let produced = withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Produced, any Error>) in
            let thread = Thread {
                do {
                    let result = try produce { page in
                        guard pages.put(page) else { throw CancellationError() }
                    }
                    pages.finish()
                    continuation.resume(returning: result)
                } catch {
                    pages.finish()
                    continuation.resume(throwing: error)
                }
            }
            thread.name = name
            thread.start()
        }
        do {
            while let page = await pages.next() { try await consume(page) }
        } catch {
            pages.cancel()  // the producer stops at its next page
            _ = try? await produced
            throw error
        }
        return try await produced
    }
}
