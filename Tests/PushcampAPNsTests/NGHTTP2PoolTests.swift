import CNghttp2
import Testing

/// The allocator nghttp2 runs on (shim.h): blocks reused per size class, contents kept on realloc.
@Suite("nghttp2's allocator")
struct NGHTTP2PoolTests {
    @Test func blocksAreReusedAndReallocKeepsTheirContents() throws {
        let pool = try #require(pushcamp_nghttp2_pool_new())
        defer { pushcamp_nghttp2_pool_delete(pool) }
        let memory = pushcamp_nghttp2_pool_mem(pool)
        let user = memory.mem_user_data

        // A freed block comes back for the next request of its class.
        let first = try #require(memory.malloc(40, user))
        memory.free(first, user)
        let second = try #require(memory.malloc(60, user))
        #expect(second == first)
        #expect(Int(bitPattern: second) % 16 == 0)

        // Growing within the class keeps the block; beyond it, moves it and keeps the bytes.
        let bytes = second.assumingMemoryBound(to: UInt8.self)
        for index in 0..<60 { bytes[index] = UInt8(index) }
        let same = try #require(memory.realloc(second, 64, user))
        #expect(same == second)
        let moved = try #require(memory.realloc(same, 5_000, user)).assumingMemoryBound(to: UInt8.self)
        #expect((0..<60).allSatisfy { moved[$0] == UInt8($0) })
        let shrunk = try #require(memory.realloc(moved, 10, user)).assumingMemoryBound(to: UInt8.self)
        #expect((0..<10).allSatisfy { shrunk[$0] == UInt8($0) })
        memory.free(shrunk, user)

        // calloc zeroes a reused block and refuses a size that overflows.
        let dirty = try #require(memory.malloc(100, user)).assumingMemoryBound(to: UInt8.self)
        dirty.update(repeating: 0xFF, count: 100)
        memory.free(dirty, user)
        let clean = try #require(memory.calloc(10, 10, user)).assumingMemoryBound(to: UInt8.self)
        #expect((0..<100).allSatisfy { clean[$0] == 0 })
        memory.free(clean, user)
        #expect(memory.calloc(Int.max, 4, user) == nil)

        // Beyond what a class keeps, blocks go back to the system; the pool keeps the rest.
        var held: [UnsafeMutableRawPointer] = []
        for _ in 0..<10_000 { held.append(try #require(memory.malloc(24, user))) }
        for block in held { memory.free(block, user) }
        #expect(pool.pointee.kept.0 == 128 * 1024 / 32)
        memory.free(nil, user)
    }
}
