import Foundation
import PushcampModel

/// Who may read `serve`'s console and post engagement: decided per request from its
/// `Authorization` and `Cookie` headers, without sockets (tested in memory).
///
/// - With a token (`PUSHCAMP_CONSOLE_TOKEN`), every console page and `/api/` call needs it: as
///   `Authorization: Bearer TOKEN` (scripts), or as the cookie `/login` sets (browsers).
/// - Without one, the console is read-only and open, and only on a loopback address — the address
///   `--listen` resolves to and is bound, not its text: a console on any other address without a
///   token is refused at start. Its pages answer only requests addressed to a loopback name
///   (`Host: localhost:8080`, `127.0.0.1:8080`, `[::1]:8080`), so a page of another site whose
///   name is made to resolve to 127.0.0.1 (DNS rebinding) cannot read it. Posting engagement
///   always needs the token (any local process could otherwise write to the journal).
/// - With a token, `/metrics` needs it too and `/readyz` tells anyone else only whether the node
///   is ready: their details name campaigns and files. `/healthz` is open.
public struct ConsoleAccess: Sendable {
    /// The environment variable holding the token.
    public static let tokenVariable = "PUSHCAMP_CONSOLE_TOKEN"
    /// The cookie `/login` sets: HttpOnly, SameSite=Strict, for the whole console.
    public static let cookieName = "pushcamp_console"
    /// A token shorter than this is refused at start: guessable.
    public static let minimumTokenLength = 16

    public var token: String?

    public init(token: String?) {
        self.token = token
    }

    public enum Verdict: Sendable, Hashable {
        case allowed
        /// No token, or the wrong one.
        case unauthorized
        /// A write without a token configured: refused whatever the request carries.
        case needsToken
    }

    /// Reading a page or `/api/` data.
    public func read(authorization: String?, cookie: String?) -> Verdict {
        guard let token else { return .allowed }
        return Self.presented(authorization: authorization, cookie: cookie).contains { Self.same($0, token) }
            ? .allowed : .unauthorized
    }

    /// Writing (posting engagement).
    public func write(authorization: String?, cookie: String?) -> Verdict {
        guard token != nil else { return .needsToken }
        return read(authorization: authorization, cookie: cookie)
    }

    /// Whether a request addressed to `host` (its `Host` header) may read the console: any, with a
    /// token (a page of another site never has the cookie); without one, only a loopback name.
    public func serves(host: String?) -> Bool {
        token != nil || host.map(Self.isLoopbackName) == true
    }

    /// Why the console cannot start on `listen`, bound at `bound` (the address its host resolves
    /// to, numeric), with `token`; nil when it can.
    public static func problem(listen: ListenAddress, bound: String, token: String?) -> String? {
        if let token {
            // The cookie carries it as it is: printable ASCII without separators.
            guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) && ![0x22, 0x2C, 0x3B, 0x5C].contains($0) }) else {
                return "\(tokenVariable) may hold printable ASCII without spaces, quotes, commas, semicolons or "
                    + "backslashes (e.g. the output of openssl rand -hex 32)"
            }
            guard token.utf8.count >= minimumTokenLength else {
                return "\(tokenVariable) is shorter than \(minimumTokenLength) characters: use a long random one "
                    + "(e.g. openssl rand -hex 32)"
            }
            return nil
        }
        guard isLoopbackAddress(bound) else {
            let resolved = bound == listen.host ? "" : " (\(listen.host) is \(bound))"
            return "serve.console is on and serve listens on \(listen)\(resolved), beyond this machine: set "
                + "\(tokenVariable) (e.g. to the output of openssl rand -hex 32), or listen on 127.0.0.1"
        }
        return nil
    }

    /// A numeric address of this machine's loopback: 127.0.0.0/8, ::1, or 127.0.0.0/8 mapped into
    /// IPv6 (`::ffff:127.0.0.1`). A name is not one, whatever it starts with: `127.attacker.test`
    /// may resolve anywhere.
    public static func isLoopbackAddress(_ address: String) -> Bool {
        var text = address.lowercased()
        if text == "::1" || text == "0:0:0:0:0:0:0:1" { return true }
        if text.hasPrefix("::ffff:") { text = String(text.dropFirst(7)) }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ $0.count <= 3 && UInt8($0) != nil }) else { return false }
        return parts[0] == "127"
    }

    /// A `Host` header naming this machine's loopback: `localhost` (or a name under it, which
    /// resolvers keep on loopback), a loopback address, with or without a port.
    public static func isLoopbackName(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("[") {
            guard let end = name.firstIndex(of: "]") else { return false }
            name = String(name[name.index(after: name.startIndex)..<end])
            return isLoopbackAddress(name)
        }
        if let colon = name.lastIndex(of: ":") {
            guard name[name.index(after: colon)...].allSatisfy(\.isNumber) else { return false }
            name = String(name[..<colon])
        }
        if name.hasSuffix(".") { name.removeLast() }
        return name == "localhost" || name.hasSuffix(".localhost") || isLoopbackAddress(name)
    }

    /// The tokens a request presents: the bearer token, and the console cookie's value.
    static func presented(authorization: String?, cookie: String?) -> [String] {
        var found: [String] = []
        if let authorization {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                found.append(parts[1].trimmingCharacters(in: .whitespaces))
            }
        }
        for pair in (cookie ?? "").split(separator: ";") {
            let trimmed = pair.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix(cookieName + "=") { found.append(String(trimmed.dropFirst(cookieName.count + 1))) }
        }
        return found
    }

    /// Compares in time that depends only on the lengths, not on where they first differ.
    static func same(_ given: String, _ expected: String) -> Bool {
        let (a, b) = (Array(given.utf8), Array(expected.utf8))
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<b.count {
            difference |= (index < a.count ? a[index] : 0) ^ b[index]
        }
        return difference == 0
    }

    /// The `Set-Cookie` value that keeps `token` for the console's pages.
    public static func cookie(_ token: String) -> String {
        "\(cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict"
    }
}
