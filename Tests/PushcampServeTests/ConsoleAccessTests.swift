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
        #expect(ConsoleAccess.problem(listen: loopback, token: nil) == nil)
        #expect(ConsoleAccess.problem(listen: ListenAddress(host: "::1", port: 80), token: nil) == nil)
        #expect(ConsoleAccess.problem(listen: everywhere, token: Self.token) == nil)
        let open = ConsoleAccess.problem(listen: everywhere, token: nil)
        #expect(open?.contains("set PUSHCAMP_CONSOLE_TOKEN") == true, "\(open ?? "")")
        #expect(ConsoleAccess.problem(listen: everywhere, token: "short")?.contains("shorter than 16") == true)
        // The cookie carries the token as it is: no separators in it.
        #expect(ConsoleAccess.problem(listen: loopback, token: "0123456789abcdef;x")?.contains("semicolons") == true)
        #expect(ConsoleAccess.cookie("abc") == "pushcamp_console=abc; Path=/; HttpOnly; SameSite=Strict")
    }
}
