import Foundation
import PushcampModel

/// Who may read `serve`'s console and post engagement: decided per request from its
/// `Authorization` and `Cookie` headers, without sockets (tested in memory).
///
/// - With a token (`PUSHCAMP_CONSOLE_TOKEN`), every console page and `/api/` call needs it: as
///   `Authorization: Bearer TOKEN` (scripts), or as the cookie `/login` sets (browsers).
/// - Without one, the console is read-only and open, and only on a loopback address: a console on
///   any other address without a token is refused at start. Posting engagement always needs the
///   token (any local process could otherwise write to the journal).
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

    /// Why the console cannot start on `listen` with `token`; nil when it can.
    public static func problem(listen: ListenAddress, token: String?) -> String? {
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
        guard isLoopback(listen.host) else {
            return "serve.console is on and serve listens on \(listen), beyond this machine: set "
                + "\(tokenVariable) (e.g. to the output of openssl rand -hex 32), or listen on 127.0.0.1"
        }
        return nil
    }

    /// 127.0.0.0/8, ::1 and localhost.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
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
