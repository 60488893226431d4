import CNghttp2
import NIOCore

/// The one place where Pushcamp touches libnghttp2: a client session used as a pure codec.
///
/// nghttp2 never sees the socket. `receive` feeds it bytes read from TLS, `drainOutput` collects
/// what it wants written (once per batch, by the caller), and its callbacks only record `Event`s,
/// which the caller takes with `takeEvents()` after each call — so no callback ever re-enters
/// Pushcamp's code while nghttp2 is on the stack.
///
/// Confinement: an instance belongs to one channel's event loop and is never shared; that is why it
/// is not `Sendable`. The C callbacks find the instance through `user_data`, an unretained pointer
/// that lives as long as the nghttp2 session, which `deinit` deletes first.
package final class NGHTTP2Session {
    enum Event {
        /// SETTINGS (the server's current `SETTINGS_MAX_CONCURRENT_STREAMS`), GOAWAY, or a PING's answer.
        case connection(NGHTTP2Bytes.ConnectionFrame)
        /// A request's stream ended: with a response (`status` set), reset, or refused.
        case streamClosed(Stream, errorCode: UInt32)
        /// nghttp2 gave up on a request before its HEADERS went out (e.g. after GOAWAY).
        case notSent(Stream)
    }

    /// One request on the wire and what came back so far: a reference, so the stream table's
    /// updates (status, body, bytes sent) never copy the request.
    final class Stream {
        let request: APNsRequest
        let started: NIODeadline
        /// The provider token's generation it went with (0: certificate auth).
        let tokenGeneration: Int
        var sent = 0
        var status: Int?
        /// `retry-after` in seconds, when the answer had one in that form (FCM's 429 and 503).
        var retryAfter: Int?
        var body: [UInt8] = []

        init(request: APNsRequest, started: NIODeadline, tokenGeneration: Int) {
            self.request = request
            self.started = started
            self.tokenGeneration = tokenGeneration
        }
    }

    /// Which of Apple's "index the first time only" headers this connection has sent already.
    private struct IndexedOnce {
        var apnsID = false
        var expiration = false
        var collapseID = false
    }

    private var session: OpaquePointer?
    /// nghttp2's allocator for this session (see shim.h): freed blocks kept for the next requests.
    private let pool: UnsafeMutablePointer<pushcamp_nghttp2_pool>
    private(set) var streams: [Int32: Stream] = [:]
    private var events: [Event] = []
    private var indexedOnce = IndexedOnce()
    private var headerBlock = HeaderBlock()
    /// The `:authority` value, allocated once: every request's header list points at it.
    private let authority: UnsafeMutableBufferPointer<UInt8>

    package init(authority: String) throws(APNsClientError) {
        guard let pool = pushcamp_nghttp2_pool_new() else {
            throw APNsClientError(.protocolError, "nghttp2: out of memory")
        }
        self.pool = pool
        let count = authority.utf8.count
        self.authority = UnsafeMutableBufferPointer(start: .allocate(capacity: max(1, count)), count: count)
        _ = self.authority.initialize(from: authority.utf8)
        var callbacks: OpaquePointer?
        // From here on a throw runs `deinit`, which deletes the pool and the authority.
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw APNsClientError(.protocolError, "nghttp2: out of memory")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrame)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, onFrameNotSent)
        var created: OpaquePointer?
        var memory = pushcamp_nghttp2_pool_mem(pool)
        guard
            nghttp2_session_client_new3(&created, callbacks, Unmanaged.passUnretained(self).toOpaque(), nil, &memory)
                == 0
        else {
            throw APNsClientError(.protocolError, "nghttp2: cannot create a session")
        }
        session = created
        // The client preface: no server push, our own limits left at nghttp2's defaults.
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0)]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    deinit {
        nghttp2_session_del(session)
        pushcamp_nghttp2_pool_delete(pool)
        authority.deallocate()
    }

    func takeEvents() -> [Event] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    /// Feeds bytes read from the connection; throws on a protocol error (the connection must close).
    func receive(_ buffer: ByteBuffer) throws(APNsClientError) {
        try NGHTTP2Bytes.receive(buffer, into: session)
    }

    /// Everything nghttp2 wants to send now, in one buffer (nil when it has nothing).
    package func drainOutput(allocator: ByteBufferAllocator) throws(APNsClientError) -> ByteBuffer? {
        try NGHTTP2Bytes.drain(session, allocator: allocator, capacity: 16_384)
    }

    /// Queues a request's HEADERS and DATA; returns its stream id.
    ///
    /// HPACK follows Apple: `:path` and `authorization` as literals never indexed; `apns-id`,
    /// `apns-expiration` and `apns-collapse-id` indexed the first time on this connection and not after;
    /// everything else with incremental indexing (nghttp2's default).
    /// nghttp2 refused a request: why, and the request, handed back (submit consumes it).
    package struct Refused: Error {
        var error: APNsClientError
        var request: APNsRequest
    }

    package func submit(
        _ request: consuming APNsRequest,
        token: ProviderTokens.Current?,
        now: NIODeadline
    ) throws(Refused)
        -> Int32
    {
        let noIndex = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        // Work on a local block (swapped out and back) so the hot loop touches no class storage.
        var block = HeaderBlock()
        swap(&block, &headerBlock)
        defer { swap(&block, &headerBlock) }
        block.removeAll()
        block.add(":method", constant: "POST")
        block.add(":scheme", constant: "https")
        block.add(":authority", constant: UnsafeBufferPointer(authority))
        if request.isFCM {
            // FCM: one path for every message of a run; the token is in the body.
            request.withTopic { block.add(":path", $0) }
            if let token { block.add("authorization", token.bearer, flags: noIndex) }
            block.add("content-type", constant: "application/json; charset=UTF-8")
            block.add("content-length", decimal: Int64(request.payloadCount))
            return try submit(request, block: &block, token: token, now: now)
        }
        request.withDeviceToken { block.add(":path", prefix: "/3/device/", $0, flags: noIndex) }
        if let token { block.add("authorization", token.bearer, flags: noIndex) }
        request.withAPNsID { block.add("apns-id", $0, flags: indexedOnce.apnsID ? noIndex : 0) }
        indexedOnce.apnsID = true
        request.withTopic { block.add("apns-topic", $0) }
        request.withPushType { block.add("apns-push-type", $0) }
        if let priority = request.priority { block.add("apns-priority", decimal: Int64(priority)) }
        if let expiration = request.expiration {
            block.add("apns-expiration", decimal: expiration, flags: indexedOnce.expiration ? noIndex : 0)
            indexedOnce.expiration = true
        }
        request.withCollapseID { collapseID in
            guard let collapseID else { return }
            block.add("apns-collapse-id", collapseID, flags: indexedOnce.collapseID ? noIndex : 0)
            indexedOnce.collapseID = true
        }
        block.add("content-length", decimal: Int64(request.payloadCount))
        return try submit(request, block: &block, token: token, now: now)
    }

    /// Hands the header block and the request's body to nghttp2.
    private func submit(
        _ request: consuming APNsRequest,
        block: inout HeaderBlock,
        token: ProviderTokens.Current?,
        now: NIODeadline
    ) throws(Refused) -> Int32 {
        var body = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: bodyReader)
        let streamID = block.withNameValues { list in
            nghttp2_submit_request(session, nil, list.baseAddress, list.count, &body, nil)
        }
        guard streamID > 0 else {
            throw Refused(
                error: NGHTTP2Bytes.failure(streamID),
                request: request
            )
        }
        streams[streamID] = Stream(request: request, started: now, tokenGeneration: token?.generation ?? 0)
        return streamID
    }

    func ping() {
        nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    func reset(streamID: Int32) {
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
    }

    /// Queues a GOAWAY (NO_ERROR): the polite end of a connection.
    func goAway() {
        nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
    }

    /// Forgets every stream, handing back their requests (the connection is gone).
    func abandonStreams() -> [Stream] {
        defer { streams.removeAll() }
        return Array(streams.values)
    }

    // MARK: callbacks (recording only)

    /// A response's `:status` (kept with `retry-after`; the C callback passes no other header).
    fileprivate func status(streamID: Int32, value: UnsafeBufferPointer<UInt8>) {
        var status = 0
        for digit in value { status = status * 10 + Int(digit &- 0x30) }
        streams[streamID]?.status = status
    }

    /// `retry-after` as delta-seconds (an HTTP date is left out: FCM sends seconds).
    fileprivate func retryAfter(streamID: Int32, value: UnsafeBufferPointer<UInt8>) {
        guard (1...6).contains(value.count), value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return }
        streams[streamID]?.retryAfter = value.reduce(0) { $0 * 10 + Int($1 &- 0x30) }
    }

    fileprivate func data(streamID: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        // Error bodies are a small JSON object; anything beyond 4 KiB is not worth keeping.
        if let stream = streams[streamID], stream.body.count < 4096 {
            stream.body.append(contentsOf: bytes.prefix(4096 - stream.body.count))
        }
    }

    fileprivate func closed(streamID: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        events.append(.streamClosed(stream, errorCode: errorCode))
    }

    fileprivate func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        if let received = NGHTTP2Bytes.connectionFrame(frame, session: session) { events.append(.connection(received)) }
    }

    fileprivate func frameNotSent(_ frame: UnsafePointer<nghttp2_frame>) {
        guard Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue),
            let stream = streams.removeValue(forKey: frame.pointee.hd.stream_id)
        else { return }
        events.append(.notSent(stream))
    }

    fileprivate func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int) -> (Int, Bool) {
        streams[streamID]?.copyBody(into: buffer, length: length) ?? (0, true)
    }
}

extension NGHTTP2Session.Stream {
    /// Copies the next part of the payload into nghttp2's buffer; true when that was the last part.
    fileprivate func copyBody(into buffer: UnsafeMutablePointer<UInt8>, length: Int) -> (Int, Bool) {
        let (count, total) = request.withPayload { payload in
            let count = min(length, payload.count - sent)
            buffer.update(from: payload.baseAddress! + sent, count: count)
            return (count, payload.count)
        }
        sent += count
        return (count, sent == total)
    }
}

/// A request's header fields: names and constant values where they live for good (string literals,
/// the session's authority), the request's own values laid out in one byte buffer, and the
/// `nghttp2_nv` list pointing at both. nghttp2 copies only what is not marked `NO_COPY`: the
/// request's values. Reused from request to request so encoding allocates nothing once warm.
private struct HeaderBlock {
    private enum Value {
        /// In `bytes`.
        case laidOut(Range<Int>)
        /// Storage that outlives every request of the session.
        case constant(UnsafePointer<UInt8>, count: Int)
    }

    private var bytes: [UInt8] = []
    private var fields: [(name: StaticString, value: Value, flags: UInt8)] = []
    private var nameValues: [nghttp2_nv] = []

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// A value that lives as long as the session (a string literal, the session's authority).
    mutating func add(_ name: StaticString, constant value: UnsafeBufferPointer<UInt8>) {
        fields.append((name, .constant(value.baseAddress!, count: value.count), 0))
    }

    mutating func add(_ name: StaticString, constant value: StaticString) {
        add(name, constant: UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
    }

    mutating func add(_ name: StaticString, prefix: StaticString = "", _ value: String, flags: UInt8 = 0) {
        var value = value
        value.withUTF8 { add(name, prefix: prefix, $0, flags: flags) }
    }

    mutating func add(
        _ name: StaticString,
        prefix: StaticString = "",
        _ value: UnsafeBufferPointer<UInt8>,
        flags: UInt8 = 0
    ) {
        let valueStart = bytes.count
        prefix.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: value)
        fields.append((name, .laidOut(valueStart..<bytes.count), flags))
    }

    /// A non-negative integer in decimal, written in place (digits counted first, then filled from
    /// the end: no temporary storage).
    mutating func add(_ name: StaticString, decimal: Int64, flags: UInt8 = 0) {
        let valueStart = bytes.count
        let value = UInt64(max(decimal, 0))
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        bytes.append(contentsOf: repeatElement(0x30, count: digits))
        bytes.withUnsafeMutableBufferPointer { text in
            var rest = value
            for index in stride(from: text.count - 1, through: valueStart, by: -1) {
                text[index] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
                rest /= 10
            }
        }
        fields.append((name, .laidOut(valueStart..<bytes.count), flags))
    }

    /// Calls `body` with the fields as nghttp2 name-value pairs (valid only during the call).
    mutating func withNameValues<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        // Names are string literals (lower case, as HTTP/2 wants): nghttp2 neither copies nor
        // lowercases them.
        let noCopyName = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue)
        let noCopyValue = UInt8(NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)
        return bytes.withUnsafeMutableBufferPointer { text in
            nameValues.removeAll(keepingCapacity: true)
            for field in fields {
                let (value, count, noCopy): (UnsafePointer<UInt8>, Int, UInt8)
                switch field.value {
                case .laidOut(let range):
                    (value, count, noCopy) = (UnsafePointer(text.baseAddress! + range.lowerBound), range.count, 0)
                case .constant(let start, let length): (value, count, noCopy) = (start, length, noCopyValue)
                }
                nameValues.append(
                    nghttp2_nv(
                        name: UnsafeMutablePointer(mutating: field.name.utf8Start),
                        value: UnsafeMutablePointer(mutating: value),
                        namelen: field.name.utf8CodeUnitCount,
                        valuelen: count,
                        flags: field.flags | noCopyName | noCopy
                    )
                )
            }
            return nameValues.withUnsafeBufferPointer(body)
        }
    }
}

/// Whether a header's name is `:status`, byte by byte (no generic comparison per header).
private func isStatus(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
    name.count == 7 && name[0] == UInt8(ascii: ":") && name[1] == UInt8(ascii: "s") && name[2] == UInt8(ascii: "t")
        && name[3] == UInt8(ascii: "a") && name[4] == UInt8(ascii: "t") && name[5] == UInt8(ascii: "u")
        && name[6] == UInt8(ascii: "s")
}

private func owner(_ userData: UnsafeMutableRawPointer?) -> NGHTTP2Session {
    Unmanaged<NGHTTP2Session>.fromOpaque(userData!).takeUnretainedValue()
}

/// Whether a header's name is `retry-after` (HTTP/2 names are lowercase).
private func isRetryAfter(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
    name.count == 11 && name.elementsEqual("retry-after".utf8)
}

/// Called for every response header; only `:status` and `retry-after` reach the session. The checks
/// come first, so the other headers (server, date, apns-id…) cost no reference count on the session.
private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let name else { return 0 }
    let header = UnsafeBufferPointer(start: name, count: nameLength)
    if isStatus(header) {
        owner(userData).status(
            streamID: frame!.pointee.hd.stream_id,
            value: UnsafeBufferPointer(start: value, count: valueLength)
        )
    } else if isRetryAfter(header) {
        owner(userData).retryAfter(
            streamID: frame!.pointee.hd.stream_id,
            value: UnsafeBufferPointer(start: value, count: valueLength)
        )
    }
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    owner(userData).data(streamID: streamID, UnsafeBufferPointer(start: data, count: length))
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    owner(userData).closed(streamID: streamID, errorCode: errorCode)
    return 0
}

/// Called for every frame received; only SETTINGS, GOAWAY and PING reach the session (not each
/// response's HEADERS and DATA).
private let onFrame: nghttp2_on_frame_recv_callback = { _, frame, userData in
    if NGHTTP2Bytes.isConnectionFrame(frame!.pointee.hd.type) { owner(userData).frameReceived(frame!) }
    return 0
}

private let onFrameNotSent: nghttp2_on_frame_not_send_callback = { _, frame, _, userData in
    owner(userData).frameNotSent(frame!)
    return 0
}

private let bodyReader: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    let (count, done) = owner(userData).readBody(streamID: streamID, into: buffer!, length: length)
    if done { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
    return count
}
