import CNghttp2
import NIOCore

/// Bytes in and out of an nghttp2 session used as a codec, without a socket: what the push
/// path's `NGHTTP2Session` and the broadcast API's `NGHTTP2Exchange` share.
enum NGHTTP2Bytes {
    /// Feeds bytes read from the connection; throws on a protocol error (the connection must close).
    @inline(__always)
    static func receive(_ buffer: ByteBuffer, into session: OpaquePointer?) throws(APNsClientError) {
        let result = buffer.withUnsafeReadableBytes { bytes in
            nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if result < 0 { throw failure(Int32(result)) }
    }

    /// Everything the session wants to send now, in one buffer of at least `capacity` bytes (nil
    /// when it has nothing).
    @inline(__always)
    static func drain(
        _ session: OpaquePointer?,
        allocator: ByteBufferAllocator,
        capacity: Int
    ) throws(APNsClientError) -> ByteBuffer? {
        var output: ByteBuffer?
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            if count < 0 { throw failure(Int32(count)) }
            guard count > 0, let data else { return output }
            if output == nil { output = allocator.buffer(capacity: max(Int(count), capacity)) }
            output!.writeBytes(UnsafeRawBufferPointer(start: data, count: Int(count)))
        }
    }

    static func failure(_ code: Int32) -> APNsClientError {
        APNsClientError(.protocolError, "HTTP/2: " + String(cString: nghttp2_strerror(code)))
    }
}
