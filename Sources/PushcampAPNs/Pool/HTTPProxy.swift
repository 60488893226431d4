import NIOCore
import PushcampAPNsCore

/// An HTTP proxy connections go through with `CONNECT` (a company network's only way out): the
/// tunnel is opened first, then TLS and HTTP/2 run inside it as they would straight to the server.
/// Its credentials (`http://user:password@host:port`) go in `Proxy-Authorization` and are never
/// printed: `description` names the proxy without them.
public struct HTTPProxy: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// `Basic <base64(user:password)>`, when the URL has credentials.
    var authorization: String?

    /// `http://proxy.example.com:3128` (credentials left out).
    public var description: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// Reads `http://[user[:password]@]host[:port]` (port 80 when absent; `https://` proxies are
    /// not supported: the tunnel's own TLS is the server's). The error never holds the URL: it may
    /// hold a password.
    public static func parse(_ text: String) -> Result<HTTPProxy, ProxyError> {
        var rest = Substring(text.trimmingSpaces)
        guard rest.lowercased().hasPrefix("http://") else {
            return .failure(ProxyError("a proxy is written http://[user:password@]host[:port]"))
        }
        rest = rest.dropFirst("http://".count)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var authorization: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let decoded = percentDecoded(credentials)
            authorization = "Basic " + base64(Array(decoded.utf8))
        }
        let host: String
        var port = 80
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                return .failure(ProxyError("the proxy's host is not closed by ']'"))
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
        } else {
            let end = rest.firstIndex(of: ":") ?? rest.endIndex
            host = String(rest[..<end])
            rest = rest[end...]
        }
        if rest.hasPrefix(":") {
            guard let value = Int(rest.dropFirst()), (1...65535).contains(value) else {
                return .failure(ProxyError("the proxy's port is not a number from 1 to 65535"))
            }
            port = value
        } else if !rest.isEmpty {
            return .failure(ProxyError("a proxy is written http://[user:password@]host[:port], with nothing after"))
        }
        guard !host.isEmpty else { return .failure(ProxyError("the proxy names no host")) }
        return .success(HTTPProxy(host: host, port: port, authorization: authorization))
    }

    /// The proxy a connection to `host` goes through: `configured` (pushcamp.yaml's `proxy:`), else
    /// the environment's `HTTPS_PROXY` (or `https_proxy`), unless `NO_PROXY` (or `no_proxy`) names
    /// the host: `*`, a host, or a domain (`.example.com` or `example.com` matches its subdomains).
    public static func resolve(
        for host: String,
        configured: String?,
        environment: [String: String]
    ) -> Result<HTTPProxy?, ProxyError> {
        let setting =
            configured ?? environment["HTTPS_PROXY"] ?? environment["https_proxy"]
        guard let setting, !setting.trimmingSpaces.isEmpty else { return .success(nil) }
        let exceptions = (environment["NO_PROXY"] ?? environment["no_proxy"] ?? "").split(separator: ",")
            .map { $0.trimmingSpaces.lowercased() }.filter { !$0.isEmpty }
        let name = host.lowercased()
        for exception in exceptions {
            if exception == "*" || exception == name { return .success(nil) }
            let domain = exception.hasPrefix(".") ? String(exception.dropFirst()) : exception
            if name == domain || name.hasSuffix("." + domain) { return .success(nil) }
        }
        return parse(setting).map { $0 }
    }

    /// The request that opens the tunnel to `host:port`.
    func connectRequest(to host: String, port: Int) -> String {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        return request + "\r\n"
    }

    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == 0x25, utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = 0
            for (offset, byte) in chunk.enumerated() { value |= Int(byte) << (16 - 8 * offset) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[(value >> (18 - 6 * position)) & 0x3F] : 0x3D)
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Why a proxy setting cannot be used; never holds the setting itself.
public struct ProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Opens a proxy's tunnel: on connect, sends `CONNECT`; on the proxy's `200`, adds the handlers
/// `then` makes (TLS first) right after itself and leaves. Anything else closes the connection with
/// an error naming the proxy and its answer (never the credentials).
final class ProxyConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let proxy: HTTPProxy
    let target: (host: String, port: Int)
    let then: (ChannelHandlerContext) throws -> Void
    private var received: [UInt8] = []
    private var done = false

    init(proxy: HTTPProxy, target: (host: String, port: Int), then: @escaping (ChannelHandlerContext) throws -> Void) {
        self.proxy = proxy
        self.target = target
        self.then = then
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendConnect(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendConnect(context: context)
        context.fireChannelActive()
    }

    private var sent = false

    private func sendConnect(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        let request = proxy.connectRequest(to: target.host, port: target.port)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        // The proxy's answer ends with an empty line; a server's first bytes only follow our TLS hello.
        guard let end = Self.headerEnd(received) else {
            if received.count > 16_384 {
                fail(context, "the proxy \(proxy) answered CONNECT with no end to its headers")
            }
            return
        }
        let statusLine = String(decoding: received.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            fail(context, "the proxy \(proxy) did not answer CONNECT as an HTTP proxy does")
            return
        }
        guard (200..<300).contains(status) else {
            let phrase = parts.count > 2 ? " \(String(parts[2]).prefix(80))" : ""
            let hint =
                status == 407 || status == 401
                ? ": it wants credentials (proxy: http://user:password@host:port), or refused the ones given"
                : status == 403 ? ": it does not allow a tunnel to this host and port" : ""
            fail(
                context,
                "the proxy \(proxy) refused a tunnel to \(target.host):\(target.port): \(status)\(phrase)\(hint)"
            )
            return
        }
        done = true
        let leftover = Array(received[end...])
        received = []
        do {
            try then(context)
        } catch {
            context.fireErrorCaught(error)
            context.close(promise: nil)
            return
        }
        if !leftover.isEmpty {
            context.fireChannelRead(NIOAny(context.channel.allocator.buffer(bytes: leftover)))
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func fail(_ context: ChannelHandlerContext, _ message: String) {
        done = true
        context.fireErrorCaught(APNsClientError(.connect, message))
        context.close(promise: nil)
    }

    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 0x0A && bytes[index - 1] == 0x0D && bytes[index - 2] == 0x0A && bytes[index - 3] == 0x0D {
            return index + 1
        }
        return nil
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\n" || last == "\r" {
            text = text.dropLast()
        }
        return String(text)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String { String(self).trimmingSpaces }
}
