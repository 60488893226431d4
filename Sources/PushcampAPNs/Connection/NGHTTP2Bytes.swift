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

    /// What a connection-level frame says, when it is one the exchange discipline acts on: the
    /// server's SETTINGS (its current stream limit), GOAWAY, or the answer to our PING. Both codecs
    /// read frames through this, so the push pool and the one-request client see the same events.
    enum ConnectionFrame: Equatable {
        case settings(maxConcurrentStreams: UInt32)
        case goaway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
        case pingAcknowledged
    }

    static func connectionFrame(_ frame: UnsafePointer<nghttp2_frame>, session: OpaquePointer?) -> ConnectionFrame? {
        let header = frame.pointee.hd
        let ack = header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
        switch Int(header.type) {
        case Int(NGHTTP2_SETTINGS.rawValue) where !ack:
            return .settings(
                maxConcurrentStreams: nghttp2_session_get_remote_settings(
                    session,
                    NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS
                )
            )
        case Int(NGHTTP2_GOAWAY.rawValue):
            let goaway = frame.pointee.goaway
            let debug = goaway.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len)) }
            return .goaway(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code, debugData: debug ?? [])
        case Int(NGHTTP2_PING.rawValue) where ack:
            return .pingAcknowledged
        default:
            return nil
        }
    }

    /// Whether a frame type is one `connectionFrame` may read (checked first, so the frames of each
    /// answer cost nothing more).
    @inline(__always)
    static func isConnectionFrame(_ type: UInt8) -> Bool {
        type == UInt8(NGHTTP2_SETTINGS.rawValue) || type == UInt8(NGHTTP2_GOAWAY.rawValue)
            || type == UInt8(NGHTTP2_PING.rawValue)
    }

    /// The error code of a stream the server refused unprocessed (above its GOAWAY's last id).
    static let refusedStream = NGHTTP2_REFUSED_STREAM.rawValue

    static func failure(_ code: Int32) -> APNsClientError {
        APNsClientError(.protocolError, "HTTP/2: " + String(cString: nghttp2_strerror(code)))
    }
}
