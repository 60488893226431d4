import PushcampModel
import PushcampServe
import Testing

@Suite("Who may read the console and post engagement")
struct ConsoleAccessTests {
    static let token = "0123456789abcdef0123456789abcdef"

    @Test func withATokenEveryRequestNeedsIt() {
        let access = ConsoleAccess(token: Self.token)
        #expect(access.read(authorization: nil, cookie: nil) == .unauthorized)
        #expect(access.read(authorization: "Bearer \(Self.token)", cookie: nil) == .allowed)
        #expect(access.read(authorization: "bearer  \(Self.token)", cookie: nil) == .allowed)
        #expect(access.read(authorization: "Basic \(Self.token)", cookie: nil) == .unauthorized)
        #expect(access.read(authorization: "Bearer \(Self.token)x", cookie: nil) == .unauthorized)
        #expect(access.read(authorization: "Bearer \(Self.token.dropLast())", cookie: nil) == .unauthorized)
        #expect(access.read(authorization: nil, cookie: "theme=dark; pushcamp_console=\(Self.token)") == .allowed)
        #expect(access.read(authorization: nil, cookie: "pushcamp_console=nope; other=\(Self.token)") == .unauthorized)
        #expect(access.write(authorization: "Bearer \(Self.token)", cookie: nil) == .allowed)
        #expect(access.write(authorization: nil, cookie: nil) == .unauthorized)
    }

    @Test func withoutATokenReadingIsOpenAndWritingIsNot() {
        let access = ConsoleAccess(token: nil)
        #expect(access.read(authorization: nil, cookie: nil) == .allowed)
        #expect(access.write(authorization: "Bearer anything-at-all-here", cookie: nil) == .needsToken)
    }

    @Test func theConsoleStartsOnlyWhereItIsSafe() {
        let loopback = ListenAddress(host: "127.0.0.1", port: 8080)
        let everywhere = ListenAddress(host: "0.0.0.0", port: 8080)
        #expect(ConsoleAccess.problem(listen: loopback, bound: "127.0.0.1", token: nil) == nil)
        #expect(ConsoleAccess.problem(listen: ListenAddress(host: "::1", port: 80), bound: "::1", token: nil) == nil)
        #expect(
            ConsoleAccess.problem(listen: ListenAddress(host: "localhost", port: 80), bound: "127.0.0.1", token: nil)
                == nil
        )
        #expect(ConsoleAccess.problem(listen: everywhere, bound: "0.0.0.0", token: Self.token) == nil)
        let open = ConsoleAccess.problem(listen: everywhere, bound: "0.0.0.0", token: nil)
        #expect(open?.contains("set PUSHCAMP_CONSOLE_TOKEN") == true, "\(open ?? "")")
        // What the name resolves to decides, not how it starts.
        let named = ConsoleAccess.problem(
            listen: ListenAddress(host: "127.attacker.test", port: 8080),
            bound: "203.0.113.7",
            token: nil
        )
        #expect(
            named?.contains(
                "serve listens on 127.attacker.test:8080 (127.attacker.test is 203.0.113.7), beyond this machine"
            )
                == true,
            "\(named ?? "")"
        )
        #expect(
            ConsoleAccess.problem(listen: everywhere, bound: "0.0.0.0", token: "short")?.contains("shorter than 16")
                == true
        )
        // The cookie carries the token as it is: no separators in it.
        #expect(
            ConsoleAccess.problem(listen: loopback, bound: "127.0.0.1", token: "0123456789abcdef;x")?.contains(
                "semicolons"
            )
                == true
        )
        #expect(ConsoleAccess.cookie("abc") == "pushcamp_console=abc; Path=/; HttpOnly; SameSite=Strict")
    }

    @Test func loopbackIsAnAddressNotAPrefix() {
        for address in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"] {
            #expect(ConsoleAccess.isLoopbackAddress(address), "\(address)")
        }
        for address in [
            "127.attacker.test", "127.0.0.1.nip.io", "0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "127.0.0.256",
            "localhost",
        ] {
            #expect(!ConsoleAccess.isLoopbackAddress(address), "\(address)")
        }
    }

    @Test func anOpenConsoleAnswersOnlyRequestsAddressedToLoopback() {
        let open = ConsoleAccess(token: nil)
        for host in ["localhost:8080", "LOCALHOST", "127.0.0.1:8080", "[::1]:8080", "app.localhost:80", "localhost."] {
            #expect(open.serves(host: host), "\(host)")
        }
        // DNS rebinding: another site's name, resolved to 127.0.0.1 by its own DNS.
        for host in [
            "attacker.test:8080", "127.0.0.1.attacker.test", "127.attacker.test:8080", "localhost.attacker.test",
            "[::1", "localhost:80x", "",
        ] {
            #expect(!open.serves(host: host), "\(host)")
        }
        #expect(!open.serves(host: nil))
        // With a token, any name: proxies pass the public one, and other sites never have the cookie.
        #expect(ConsoleAccess(token: Self.token).serves(host: "push.example.com"))
    }
}
