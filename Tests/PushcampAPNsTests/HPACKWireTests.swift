import NIOCore
import NIOHPACK
import PushcampAPNs
import PushcampAPNsCore
import Testing

/// Decodes what nghttp2 put on the wire and checks Apple's HPACK rules.
@Suite("HPACK on the wire")
struct HPACKWireTests {
    func request(_ index: Int) -> APNsRequest {
        APNsRequest(
            tag: index,
            deviceToken: String(repeating: String(index % 10), count: 64),
            apnsID: "00000000-0000-5000-8000-00000000000\(index % 10)",
            topic: "com.example.shop",
            pushType: "alert",
            priority: 10,
            expiration: 1_767_225_600,
            collapseID: "sale",
            payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        )
    }

    /// HEADERS frame blocks in order, after the client preface.
    func headerBlocks(_ buffer: ByteBuffer) -> [ByteBuffer] {
        var buffer = buffer
        buffer.moveReaderIndex(forwardBy: 24)  // PRI * HTTP/2.0 …
        var blocks: [ByteBuffer] = []
        while buffer.readableBytes >= 9 {
            let length = Int(buffer.readInteger(as: UInt8.self)!) << 16 | Int(buffer.readInteger(as: UInt16.self)!)
            let type = buffer.readInteger(as: UInt8.self)!
            let flags = buffer.readInteger(as: UInt8.self)!
            _ = buffer.readInteger(as: UInt32.self)
            var payload = buffer.readSlice(length: length)!
            if type == 1 {
                if flags & 0x08 != 0 { payload.moveReaderIndex(forwardBy: Int(payload.readInteger(as: UInt8.self)!)) }
                if flags & 0x20 != 0 { payload.moveReaderIndex(forwardBy: 5) }
                blocks.append(payload)
            }
        }
        return blocks
    }

    /// The header block nghttp2 writes for `request` alone on a new session, decoded.
    func wireHeaders(of request: APNsRequest, authority: String) throws -> (HPACKHeaders, wire: ByteBuffer) {
        let session = try NGHTTP2Session(authority: authority)
        _ = try session.submit(request, token: nil, now: .now())
        let wire = try #require(try session.drainOutput(allocator: ByteBufferAllocator()))
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var block = try #require(headerBlocks(wire).first)
        return (try decoder.decodeHeaders(from: &block), wire)
    }

    @Test func pathAndAuthorizationAreNeverIndexedAndApnsHeadersOnlyTheFirstTime() throws {
        let session = try NGHTTP2Session(authority: "api.push.apple.com")
        let token = ProviderTokens.Current(bearer: "bearer abc.def.ghi", generation: 1)
        for index in 0..<3 { _ = try session.submit(request(index), token: token, now: .now()) }
        let wire = try #require(try session.drainOutput(allocator: ByteBufferAllocator()))
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let blocks = headerBlocks(wire)
        #expect(blocks.count == 3)
        var decoded: [HPACKHeaders] = []
        for var block in blocks { decoded.append(try decoder.decodeHeaders(from: &block)) }

        func indexing(_ headers: HPACKHeaders, _ name: String) -> HPACKIndexing? {
            headers.firstIndex { $0.name == name }.map { headers[$0].indexable }
        }
        for (number, headers) in decoded.enumerated() {
            #expect(headers.first(name: ":path") == "/3/device/" + String(repeating: String(number), count: 64))
            #expect(indexing(headers, ":path") == .neverIndexed)
            #expect(indexing(headers, "authorization") == .neverIndexed)
            for name in ["apns-id", "apns-expiration", "apns-collapse-id"] {
                #expect(
                    indexing(headers, name) == (number == 0 ? .indexable : .neverIndexed),
                    "\(name) in request \(number)"
                )
            }
            #expect(indexing(headers, "apns-topic") == .indexable)
            #expect(headers.first(name: "apns-id") == "00000000-0000-5000-8000-00000000000\(number)")
            #expect(headers.first(name: "apns-expiration") == "1767225600")
            #expect(headers.first(name: "apns-priority") == "10")
            #expect(headers.first(name: "content-length") == "22")
        }
    }

    /// A planner's request: its `apns-id` written from the UUID's bytes, its payload kept beside it.
    @Test func aRequestMadeFromUUIDBytesCarriesItsTextAndPayload() throws {
        let payload = Array(#"{"aps":{"alert":"\#(String(repeating: "é", count: 300))"}}"#.utf8)
        let request = APNsRequest(
            tag: 7,
            deviceToken: String(repeating: "ab", count: 32),
            uuid: (0x5D2E_0F9A_3C1B_5E7D, 0x9A8B_0C1D_2E3F_4A5B),
            topic: "com.example.shop",
            pushType: "alert",
            priority: nil,
            expiration: 0,
            collapseID: nil,
            payload: payload
        )
        #expect(request.apnsID == "5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b")
        #expect(request.payload == payload)
        #expect(request.payloadCount == payload.count)

        let (headers, wire) = try wireHeaders(of: request, authority: "api.push.apple.com")
        #expect(headers.first(name: "apns-id") == "5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b")
        #expect(headers.first(name: "apns-expiration") == "0")
        #expect(headers.first(name: "content-length") == "\(payload.count)")
        #expect(headers.first(name: "apns-priority") == nil)
        // Names and constant values go to nghttp2 uncopied, the request's fields from its own storage.
        #expect(headers.first(name: ":method") == "POST")
        #expect(headers.first(name: ":scheme") == "https")
        #expect(headers.first(name: ":authority") == "api.push.apple.com")
        #expect(headers.first(name: ":path") == "/3/device/" + String(repeating: "ab", count: 32))
        #expect(headers.first(name: "apns-topic") == "com.example.shop")
        #expect(headers.first(name: "apns-push-type") == "alert")
        #expect(headers.first(name: "apns-collapse-id") == nil)
        // The body follows in DATA frames, byte for byte.
        #expect(wire.readableBytesView.suffix(payload.count).elementsEqual(payload))
    }

    /// Topic, push type and collapse id are kept as bytes beside the payload; each reads back whole,
    /// whatever their lengths, and goes on the wire as given.
    @Test(arguments: [("com.example.shop", "alert", "spring-sale-été"), ("t", "", ""), ("a.b.voip", "voip", "x")])
    func aRequestKeepsItsTextFieldsBesideThePayload(topic: String, pushType: String, collapseID: String) throws {
        let payload = Array(#"{"aps":{}}"#.utf8)
        let request = APNsRequest(
            tag: 1,
            deviceToken: String(repeating: "0f", count: 32),
            apnsID: "5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b",
            topic: topic,
            pushType: pushType,
            priority: 5,
            expiration: nil,
            collapseID: collapseID,
            payload: payload
        )
        #expect(request.topic == topic)
        #expect(request.pushType == pushType)
        #expect(request.collapseID == collapseID)
        #expect(request.payload == payload)
        #expect(request.apnsID == "5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b")

        let (headers, _) = try wireHeaders(of: request, authority: "127.0.0.1:2197")
        #expect(headers.first(name: ":authority") == "127.0.0.1:2197")
        #expect(headers.first(name: "apns-topic") == topic)
        #expect(headers.first(name: "apns-push-type") == pushType)
        #expect(headers.first(name: "apns-collapse-id") == collapseID)
        #expect(headers.first(name: "apns-priority") == "5")
    }
}
