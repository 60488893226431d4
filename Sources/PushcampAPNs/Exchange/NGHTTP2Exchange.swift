import CNghttp2
import NIOCore

/// libnghttp2 as the codec of a general HTTP/2 client: any method, path and header fields, every
/// response header kept. For APNs' broadcast API (channel management and broadcast sends); the push
/// path's codec (`NGHTTP2Session`) stays fixed on `POST /3/device/…` and records `:status` only.
///
/// Like `NGHTTP2Session`, it never sees the socket: `receive` feeds it bytes, `drainOutput`
/// collects what it wants written, and its callbacks only record `Event`s, which the caller takes
/// with `takeEvents()` after each call, so no callback re-enters the caller while nghttp2 is on
/// the stack. Connection frames are read by the same `NGHTTP2Bytes.connectionFrame` as the push
/// path's. Confined to one event loop.
final class NGHTTP2Exchange {
    enum Event {
        /// SETTINGS (the server's current stream limit), GOAWAY, or a PING's answer.
        case connection(NGHTTP2Bytes.ConnectionFrame)
        /// A request's stream ended: with its response, or reset without one (`errorCode` says
        /// how: `REFUSED_STREAM` when the server never processed it, as after its GOAWAY).
        case closed(id: Int32, response: APNsExchange.Response?, errorCode: UInt32)
        /// nghttp2 gave up on a request before its HEADERS went out: never processed.
        case notSent(id: Int32)
    }

    private final class Stream {
        let body: [UInt8]
        var sent = 0
        var response = APNsExchange.Response(status: 0, headers: [], body: [])

        init(body: [UInt8]) {
            self.body = body
        }
    }

    private var session: OpaquePointer?
    private var streams: [Int32: Stream] = [:]
    private var events: [Event] = []

    init() throws(APNsClientError) {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw APNsClientError(.protocolError, "nghttp2: out of memory")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, exchangeOnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, exchangeOnData)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, exchangeOnClose)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, exchangeOnFrame)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, exchangeOnFrameNotSent)
        var created: OpaquePointer?
        guard nghttp2_session_client_new(&created, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0 else {
            throw APNsClientError(.protocolError, "nghttp2: cannot create a session")
        }
        session = created
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0)]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    deinit {
        nghttp2_session_del(session)
    }

    func takeEvents() -> [Event] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    func receive(_ buffer: ByteBuffer) throws(APNsClientError) {
        try NGHTTP2Bytes.receive(buffer, into: session)
    }

    func drainOutput(allocator: ByteBufferAllocator) throws(APNsClientError) -> ByteBuffer? {
        try NGHTTP2Bytes.drain(session, allocator: allocator, capacity: 0)
    }

    /// Queues a request; returns its stream id. Its end comes back as an `Event`.
    func submit(_ fields: [(name: String, value: String)], body: [UInt8]) throws(APNsClientError) -> Int32 {
        // Names and values laid out in one buffer; nghttp2 copies them during the call.
        var bytes: [UInt8] = []
        var ranges: [(name: Range<Int>, value: Range<Int>)] = []
        for field in fields {
            let name = bytes.count..<bytes.count + field.name.utf8.count
            bytes += field.name.utf8
            let value = bytes.count..<bytes.count + field.value.utf8.count
            bytes += field.value.utf8
            ranges.append((name, value))
        }
        bytes.append(0)
        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: exchangeReadBody)
        let id = bytes.withUnsafeMutableBufferPointer { buffer in
            var list = ranges.map { range in
                nghttp2_nv(
                    name: buffer.baseAddress! + range.name.lowerBound,
                    value: buffer.baseAddress! + range.value.lowerBound,
                    namelen: range.name.count,
                    valuelen: range.value.count,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
                )
            }
            if body.isEmpty { return nghttp2_submit_request(session, nil, &list, list.count, nil, nil) }
            return nghttp2_submit_request(session, nil, &list, list.count, &provider, nil)
        }
        guard id > 0 else { throw NGHTTP2Bytes.failure(id) }
        streams[id] = Stream(body: body)
        return id
    }

    /// Resets a stream whose answer is late; it ends as `.closed` with `CANCEL`.
    func cancel(_ id: Int32) {
        guard streams[id] != nil else { return }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
    }

    func ping() {
        nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    fileprivate func header(_ id: Int32, name: String, value: String) {
        guard let stream = streams[id] else { return }
        if name == ":status" {
            stream.response.status = Int(value) ?? 0
        } else {
            stream.response.headers.append((name, value))
        }
    }

    fileprivate func data(_ id: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        // Answers of the broadcast API are small JSON objects; 1 MiB is more than any.
        guard let stream = streams[id], stream.response.body.count + bytes.count <= 1 << 20 else { return }
        stream.response.body += bytes
    }

    fileprivate func closed(_ id: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        let answered = stream.response.status != 0 && errorCode == NGHTTP2_NO_ERROR.rawValue
        events.append(.closed(id: id, response: answered ? stream.response : nil, errorCode: errorCode))
    }

    fileprivate func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        if let received = NGHTTP2Bytes.connectionFrame(frame, session: session) { events.append(.connection(received)) }
    }

    fileprivate func frameNotSent(_ frame: UnsafePointer<nghttp2_frame>) {
        let id = frame.pointee.hd.stream_id
        guard Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue), streams.removeValue(forKey: id) != nil
        else { return }
        events.append(.notSent(id: id))
    }

    fileprivate func readBody(_ id: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int) -> (Int, Bool) {
        guard let stream = streams[id] else { return (0, true) }
        let count = min(length, stream.body.count - stream.sent)
        stream.body.withUnsafeBufferPointer { body in
            buffer.update(from: body.baseAddress! + stream.sent, count: count)
        }
        stream.sent += count
        return (count, stream.sent == stream.body.count)
    }
}

private func exchange(_ userData: UnsafeMutableRawPointer?) -> NGHTTP2Exchange {
    Unmanaged<NGHTTP2Exchange>.fromOpaque(userData!).takeUnretainedValue()
}

private let exchangeOnHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, user in
    exchange(user).header(
        frame!.pointee.hd.stream_id,
        name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
        value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
    )
    return 0
}

private let exchangeOnData: nghttp2_on_data_chunk_recv_callback = { _, _, id, data, length, user in
    exchange(user).data(id, UnsafeBufferPointer(start: data, count: length))
    return 0
}

private let exchangeOnClose: nghttp2_on_stream_close_callback = { _, id, errorCode, user in
    exchange(user).closed(id, errorCode: errorCode)
    return 0
}

private let exchangeOnFrame: nghttp2_on_frame_recv_callback = { _, frame, user in
    if NGHTTP2Bytes.isConnectionFrame(frame!.pointee.hd.type) { exchange(user).frameReceived(frame!) }
    return 0
}

private let exchangeOnFrameNotSent: nghttp2_on_frame_not_send_callback = { _, frame, _, user in
    exchange(user).frameNotSent(frame!)
    return 0
}

private let exchangeReadBody: nghttp2_data_source_read_callback = { _, id, buffer, length, flags, _, user in
    let (count, done) = exchange(user).readBody(id, into: buffer!, length: length)
    if done { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
    return count
}
