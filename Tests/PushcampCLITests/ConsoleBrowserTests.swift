import Foundation
import PushcampTestSupport
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Headless Chromium (Debian's package), driven over the DevTools protocol by
/// `scripts/lib/browser.py`: one JSON command a line in, one answer a line out.
final class Browser: Sendable {
    let process: Process
    private let input: FileHandle
    private let output: FileHandle
    private let pending = Mutex<[UInt8]>([])

    /// A browser that resolves each of `names` to its address (Chromium's host resolver rules), as
    /// a site's own DNS would when it rebinds its name to this machine.
    init(names: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", CLI.repository.appendingPathComponent("scripts/lib/browser.py").path]
            + names.sorted { $0.key < $1.key }.flatMap { ["--map", "\($0.key)=\($0.value)"] }
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        input = stdin.fileHandleForWriting
        output = stdout.fileHandleForReading
        let ready = try line()
        guard ready["ok"] as? Bool == true else {
            throw CLIError("chromium did not start: \(ready["error"] ?? "?")")
        }
    }

    /// The next answer line, parsed.
    private func line() throws -> [String: Any] {
        while true {
            if let text = pending.withLock({ bytes -> String? in
                guard let end = bytes.firstIndex(of: 0x0A) else { return nil }
                defer { bytes.removeSubrange(...end) }
                return String(decoding: bytes[..<end], as: UTF8.self)
            }) {
                return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            }
            let chunk = output.availableData
            guard !chunk.isEmpty else { throw CLIError("the browser driver stopped") }
            pending.withLock { $0 += chunk }
        }
    }

    @discardableResult
    func send(_ command: [String: Any]) throws -> [String: Any] {
        input.write(try JSONSerialization.data(withJSONObject: command) + Data("\n".utf8))
        let answer = try line()
        guard answer["ok"] as? Bool == true else {
            throw CLIError("browser: \(command["op"] ?? "?"): \(answer["error"] ?? "?")")
        }
        return answer
    }

    func navigate(_ url: String) throws { try send(["op": "navigate", "url": url]) }
    /// Runs `expression`, which navigates, and waits for the next page to load.
    func follow(_ expression: String) throws { try send(["op": "follow", "expression": expression]) }
    func eval(_ expression: String) throws -> Any? { try send(["op": "eval", "expression": expression])["value"] }
    func errors() throws -> [String] { try send(["op": "errors"])["errors"] as? [String] ?? [] }
    func screenshot(width: Int, path: String) throws { try send(["op": "screenshot", "width": width, "path": path]) }

    func quit() {
        _ = try? send(["op": "quit"])
        process.waitUntilExit()
    }
}

/// The console of `serve`, in a real browser, against a real serve sending a scheduled campaign to
/// `pushcamp sim` on loopback.
@Suite("serve's console in headless Chromium", .serialized)
struct ConsoleBrowserTests {
    static let token = "0123456789abcdef0123456789abcdef"

    /// GET `path` with the console's token (or none), as a script would.
    static func get(
        _ serve: ServeProcess,
        _ path: String,
        token: String? = Self.token
    ) throws -> (
        status: Int, body: String
    ) {
        try request(serve, path, token: token)
    }

    /// `path` with the console's token (or none), a POST when there is a body.
    static func request(
        _ serve: ServeProcess,
        _ path: String,
        token: String? = Self.token,
        body: String? = nil
    ) throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(serve.port)\(path)")!)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let result = Mutex<(Int, String)?>(nil)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, _ in
            result.withLock {
                $0 = ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data ?? Data(), as: UTF8.self))
            }
            done.signal()
        }.resume()
        guard done.wait(timeout: .now() + 30) == .success, let answer = result.withLock({ $0 }) else {
            throw CLIError("no answer from serve on \(path)")
        }
        return answer
    }

    /// The runs `/api/runs` lists.
    static func runs(_ serve: ServeProcess) throws -> [[String: Any]] {
        let answer = try get(serve, "/api/runs")
        #expect(answer.status == 200, "\(answer.body)")
        return try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]] ?? []
    }

    /// Waits (at most `timeout` seconds) for `check` to hold.
    static func eventually(_ timeout: Double = 60, _ check: () throws -> Bool) rethrows -> Bool {
        try PushcampTestSupport.eventually(within: timeout, every: 0.1, check)
    }

    /// A test sent with some dead tokens, and its conversions imported: the console's runs table
    /// says why its failures failed and links to the run page's outcomes; the run page leads with
    /// the readout's verdict, before any table, so a phone shows it on its first screen.
    @Test func theConsoleShowsWhyARunFailedAndItsPageLeadsWithTheWinner() async throws {
        try await onOwnThread {
            let project = try TemporaryProject(projectFile: nil)
            defer { project.remove() }
            let dead = (0..<1_000).filter { $0 % 50 == 7 }.map {
                "\(TemporaryProject.token($0)) unregistered 1700000000000"
            }
            try project.write("tokens.txt", dead.joined(separator: "\n") + "\n")
            let sim = try JournalCLITests.start(project, ["--tokens", "tokens.txt"])
            defer { _ = sim.stop() }
            try EngagementCLITests.sendATestControlWins(project)
            try project.append("pushcamp.yaml", "\nserve:\n  console: true\n")
            var environment = ProcessInfo.processInfo.environment
            environment["PUSHCAMP_CONSOLE_TOKEN"] = Self.token
            let serve = try ServeProcess(in: project.root, environment: environment)
            defer { _ = serve.stop() }
            let listed = try #require(try Self.runs(serve).first)
            let reasons = try #require(listed["failed_by_reason"] as? [String: Int], "\(listed)")
            #expect(reasons["Unregistered"] == listed["failed"] as? Int && (reasons["Unregistered"] ?? 0) > 0)

            let browser = try Browser()
            defer { browser.quit() }
            try browser.navigate("http://127.0.0.1:\(serve.port)/")
            try browser.follow(
                "document.querySelector('input[name=token]').value='\(Self.token)';document.querySelector('form').submit()"
            )
            let failed =
                try browser.eval(
                    """
                    new Promise(function(done){var timer=setInterval(function(){
                      var a=document.querySelector('#runs tr[data-run="1"] a[href="/runs/1#outcomes"]');
                      if(a){clearInterval(timer);done(a.textContent);}},100);
                      setTimeout(function(){done('');},15000);})
                    """
                ) as? String ?? ""
            #expect(failed.contains(" · Unregistered "), "\(failed)")
            // Its sends per minute: a small chart, drawn by the page's script from /api/runs.
            let chart =
                try browser.eval(
                    """
                    (function(){var svg=document.querySelector('#runs tr[data-run="1"] svg.spark');
                    return svg?svg.getAttribute('aria-label')+' · '+svg.querySelectorAll('rect').length:'';})()
                    """
                ) as? String ?? ""
            #expect(chart.hasPrefix("answers per minute: at most ") && !chart.hasSuffix(" · 0"), "\(chart)")
            try browser.follow("document.querySelector('#runs a[href=\"/runs/1#outcomes\"]').click()")
            #expect(try browser.eval("location.pathname + location.hash") as? String == "/runs/1#outcomes")
            #expect(try browser.eval("document.getElementById('outcomes') !== null") as? Bool == true)
            // The verdict first: the first section of the page, before the copy, cards and tables.
            let first = try browser.eval("document.querySelector('section').id") as? String
            #expect(first == "verdicts", "\(first ?? "none")")
            let verdict = try browser.eval("document.querySelector('#verdicts').textContent") as? String ?? ""
            #expect(verdict.contains("converted: winner: control, ahead of urgency and the holdout"), "\(verdict)")
            // Conversions over time, a line per arm (the holdout dashed).
            let lines = try browser.eval("document.querySelectorAll('#engagement svg polyline.arm').length") as? Int
            #expect(lines == 3, "\(lines ?? -1)")
            if let folder = ProcessInfo.processInfo.environment["PUSHCAMP_SCREENSHOTS"] {
                try browser.screenshot(width: 390, path: folder + "/run-page-390.png")
            }
            #expect(try browser.errors().isEmpty)
        }
    }

    @Test func theConsoleShowsARunProgressingAndLinksItsReport() async throws {
        try await onOwnThread {
            let (project, sim) = try ServeCLITests.simulated()
            defer {
                _ = sim.stop()
                project.remove()
            }
            try project.append("pushcamp.yaml", "\nserve:\n  console: true\n")
            try SendCLITests.writeAudience(project, count: 400)
            let at = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3))
            try project.write(
                "campaigns/tick.yaml",
                """
                campaign: tick
                description: A slow scheduled send, for watching its progress
                app: shop
                audience:
                  source: { csv: audiences/a.csv }
                message:
                  payload: { aps: { alert: "hi {{name}}" } }
                schedule: { at: "\(at)" }
                throttle: { rate: 40/s, connections: 1 }
                readout: { primary: opened }

                """
            )
            var environment = ProcessInfo.processInfo.environment
            environment["PUSHCAMP_CONSOLE_TOKEN"] = Self.token
            let serve = try ServeProcess(in: project.root, environment: environment)
            defer { _ = serve.stop() }
            #expect(serve.output.contains("the console at / (token required)"), "\(serve.output)")
            let base = "http://127.0.0.1:\(serve.port)"

            // Scripts need the token, as a bearer token; a wrong one is refused like none.
            #expect(try Self.get(serve, "/api/runs", token: nil).status == 401)
            #expect(try Self.get(serve, "/api/runs", token: "wrong-token-wrong-token").status == 401)
            #expect(try Self.get(serve, "/api/schedules").status == 200)

            let browser = try Browser()
            defer { browser.quit() }
            // A browser without the token is sent to sign in; a wrong token is refused there.
            try browser.navigate(base + "/")
            #expect(try browser.eval("location.pathname") as? String == "/login")
            try browser.follow(
                "document.querySelector('input[name=token]').value='not-the-token';document.querySelector('form').submit()"
            )
            #expect(try browser.eval("document.getElementById('wrong') !== null") as? Bool == true)
            try browser.follow(
                "document.querySelector('input[name=token]').value='\(Self.token)';document.querySelector('form').submit()"
            )
            #expect(try browser.eval("location.pathname") as? String == "/")
            #expect(try browser.eval("document.querySelector('h1').textContent") as? String == "Pushcamp ready")

            // The slot fires; while the run sends, its progress bar moves without a reload.
            #expect(
                try Self.eventually {
                    try Self.runs(serve).first {
                        $0["status"] as? String == "running" && ($0["delivered"] as? Int ?? 0) > 0
                    } != nil
                },
                "\(serve.output)"
            )
            let moved =
                try browser.eval(
                    """
                    window.notReloaded = true;
                    new Promise(function(done){
                      function value(){var p=document.querySelector('#runs tr[data-run="1"] progress');return p?p.value:-1;}
                      var first=value();
                      var timer=setInterval(function(){var now=value();
                        if(first>=0&&now>first){clearInterval(timer);done([first,now]);}
                        else if(first<0&&now>=0){first=now;}},100);
                      setTimeout(function(){clearInterval(timer);done([first,value()]);},30000);
                    })
                    """
                ) as? [Double]
            let values = try #require(moved)
            #expect(values.count == 2 && values[0] >= 0 && values[1] > values[0], "\(values)")
            #expect(try browser.eval("window.notReloaded === true") as? Bool == true)
            // While it sends, its total is known (a test keeps its assignment before its first
            // push): answered of 400, below 100%, with a rate and the time left.
            #expect(
                try Self.eventually {
                    try Self.runs(serve).first {
                        $0["status"] as? String == "running" && $0["planned"] as? Int == 400
                            && ($0["percent"] as? Int ?? 100) < 100 && $0["eta_seconds"] as? Int != nil
                    } != nil
                },
                "\(serve.output)"
            )
            // Its description too, before the plan's end: kept from the run's first second.
            let live = try Self.get(serve, "/api/runs/1")
            #expect(
                live.body.contains("\"description\":\"A slow scheduled send, for watching its progress\""),
                "\(live.body.prefix(400))"
            )
            let shownProgress =
                try browser.eval(
                    """
                    new Promise(function(done){var timer=setInterval(function(){
                      var td=document.querySelector('#runs tr[data-run="1"] td:nth-child(4)');
                      if(td&&/ of 400 \\(\\d\\d?%\\)/.test(td.textContent)){clearInterval(timer);done(td.textContent);}},100);
                      setTimeout(function(){done('');},15000);})
                    """
                ) as? String ?? ""
            #expect(shownProgress.contains(" of 400 ("), "\(shownProgress)")

            // Finished, the run's badge says so (still without a reload), and its link opens its report.
            #expect(try Self.eventually { try Self.runs(serve).first?["status"] as? String == "finished" })
            #expect(
                try browser.eval(
                    """
                    new Promise(function(done){var timer=setInterval(function(){
                      var b=document.querySelector('#runs tr[data-run="1"] .status');
                      if(b&&b.textContent==='finished'){clearInterval(timer);done(true);}},100);
                      setTimeout(function(){done(false);},15000);})
                    """
                ) as? Bool == true
            )
            // The schedule's section follows: its slot fired, with a link to the run.
            #expect(
                try browser.eval(
                    """
                    new Promise(function(done){var timer=setInterval(function(){
                      if(document.querySelector('#schedules a[href="/runs/1"]')){clearInterval(timer);done(true);}},100);
                      setTimeout(function(){done(false);},20000);})
                    """
                ) as? Bool == true
            )
            #expect(try browser.eval("window.notReloaded === true") as? Bool == true)
            if let folder = ProcessInfo.processInfo.environment["PUSHCAMP_SCREENSHOTS"] {
                try browser.screenshot(width: 1280, path: folder + "/console-1280.png")
                try browser.screenshot(width: 390, path: folder + "/console-390.png")
            }
            try browser.follow("document.querySelector('#runs a[href=\"/runs/1\"]').click()")
            #expect(try browser.eval("location.pathname") as? String == "/runs/1")
            let title = try browser.eval("document.querySelector('h1').textContent") as? String
            #expect(title?.hasPrefix("Run 1 of tick") == true, "\(title ?? "")")
            let shown = try browser.eval("document.body.textContent") as? String ?? ""
            #expect(shown.contains("400 (100.00%)"), "the report shows the 400 delivered: \(shown.prefix(600))")
            // JSON behind the pages.
            let report = try Self.get(serve, "/api/runs/1")
            #expect(report.status == 200 && report.body.contains("\"delivered\":400"), "\(report.body.prefix(300))")
            #expect(try Self.get(serve, "/api/runs/99").status == 404)
            for path in ["/api/status", "/api/health", "/api/notifications", "/api/firings"] {
                let answer = try Self.get(serve, path)
                #expect(answer.status == 200, "\(path): \(answer.body)")
                #expect((try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) != nil, "\(path)")
            }
            // No console error, no failed load: only the wrong token's deliberate 401.
            let errors = try browser.errors()
            #expect(
                errors.count == 1 && errors.first?.contains("401 (Unauthorized) \(base)/login") == true,
                "\(errors)"
            )
        }
    }
}

/// The console's settings and `POST /api/engagement`, without a browser.
@Suite("serve's console and engagement API", .serialized)
struct ConsoleCLITests {
    /// `body` on a thread of its own, with a project whose app sends to a running simulator and
    /// the environment `serve` gets: the console's token set to `token`, or unset.
    static func withSimulated(
        token: String?,
        _ body: @escaping @Sendable (TemporaryProject, [String: String]) throws -> Void
    ) async throws {
        try await onOwnThread {
            let (project, sim) = try ServeCLITests.simulated()
            defer {
                _ = sim.stop()
                project.remove()
            }
            var environment = ProcessInfo.processInfo.environment
            environment["PUSHCAMP_CONSOLE_TOKEN"] = token
            try body(project, environment)
        }
    }

    @Test func aConsoleBeyondLoopbackNeedsATokenAndAnOffConsoleIsNotThere() async throws {
        try await Self.withSimulated(token: nil) { project, environment in
            // Off (the default): no console, no API.
            let off = try ServeProcess(in: project.root, environment: environment)
            #expect(try ConsoleBrowserTests.get(off, "/", token: nil).status == 404)
            #expect(try ConsoleBrowserTests.get(off, "/api/runs", token: nil).status == 404)
            _ = off.stop()

            try project.append("pushcamp.yaml", "\nserve:\n  console: true\n")
            let refused = try CLI.run(["serve", "--listen", "0.0.0.0:0"], in: project.root, environment: environment)
            #expect(refused.status == 1)
            #expect(
                refused.stderr.contains(
                    "error: the console cannot start: serve.console is on and serve listens on 0.0.0.0:0, beyond this machine: set PUSHCAMP_CONSOLE_TOKEN"
                ),
                "\(refused.stderr)"
            )
            // On loopback without a token: open to read, closed to writes.
            let open = try ServeProcess(in: project.root, environment: environment)
            defer { _ = open.stop() }
            #expect(open.output.contains("the console at / (open on loopback)"), "\(open.output)")
            #expect(try ConsoleBrowserTests.get(open, "/", token: nil).status == 200)
            #expect(try ConsoleBrowserTests.get(open, "/api/runs", token: nil).body == "[]\n")
            let write = try ConsoleBrowserTests.request(open, "/api/engagement", token: nil, body: "{}")
            #expect(write.status == 403 && write.body.contains("set PUSHCAMP_CONSOLE_TOKEN"), "\(write)")
        }
    }

    @Test func anOpenConsoleRefusesAPageOfAnotherSiteAndANameThatIsNotLoopback() async throws {
        try await Self.withSimulated(token: nil) { project, environment in
            try project.append("pushcamp.yaml", "\nserve:\n  console: true\n")

            // A name that starts like loopback and resolves beyond it: refused, said with its address.
            let hosts = try project.write("hosts", "0.0.0.0 127.attacker.test\n")
            let named = try Shell.run(
                "mount --bind '\(hosts)' /etc/hosts && exec '\(CLI.binary.path)' serve --listen 127.attacker.test:0",
                in: project.root,
                environment: environment,
                wrapper: ["unshare", "--mount", "--propagation", "private"]
            )
            #expect(named.status == 1, "\(named.output)")
            #expect(
                named.output.contains(
                    "serve listens on 127.attacker.test:0 (127.attacker.test is 0.0.0.0), beyond this machine"
                ),
                "\(named.output)"
            )

            let serve = try ServeProcess(in: project.root, environment: environment)
            defer { _ = serve.stop() }
            // A page of another site whose DNS now answers 127.0.0.1 (rebinding): refused, in Chromium.
            let browser = try Browser(names: ["rebind.test": "127.0.0.1"])
            defer { browser.quit() }
            try browser.navigate("http://rebind.test:\(serve.port)/api/runs")
            let refused = try browser.eval("document.body.innerText") as? String ?? ""
            #expect(refused.contains("answers only requests to localhost"), "\(refused)")
            #expect(!refused.contains("[]"), "\(refused)")
            try browser.navigate("http://rebind.test:\(serve.port)/")
            let page = try browser.eval("document.body.innerText") as? String ?? ""
            #expect(page.contains("answers only requests to localhost"), "the console's page is not served: \(page)")
            // Its own names are served.
            for name in ["localhost", "127.0.0.1"] {
                try browser.navigate("http://\(name):\(serve.port)/api/runs")
                let text = try browser.eval("document.body.innerText") as? String ?? ""
                #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(name): \(text)")
            }
        }
    }

    @Test func withATokenMetricsNeedItAndReadinessSaysOnlyReadyToOthers() async throws {
        try await Self.withSimulated(token: ConsoleBrowserTests.token) { project, environment in
            try project.append("pushcamp.yaml", "\nserve:\n  console: true\n")
            try project.write("campaigns/broken.yaml", "campaign: broken\napp: nope\n")
            let serve = try ServeProcess(in: project.root, environment: environment)
            defer { _ = serve.stop() }
            let metrics = try ConsoleBrowserTests.get(serve, "/metrics", token: nil)
            #expect(metrics.status == 401, "\(metrics)")
            #expect(try ConsoleBrowserTests.get(serve, "/metrics").body.contains("pushcamp_"))
            #expect(
                try ConsoleBrowserTests.eventually {
                    try ConsoleBrowserTests.get(serve, "/readyz").body.contains("invalid: campaigns/broken.yaml")
                }
            )
            let anonymous = try ConsoleBrowserTests.get(serve, "/readyz", token: nil)
            #expect(!anonymous.body.contains("broken"), "\(anonymous.body)")
            #expect(
                anonymous.body == "ready\n" || anonymous.body.hasPrefix("not ready (the details need"),
                "\(anonymous)"
            )
            #expect(try ConsoleBrowserTests.get(serve, "/healthz", token: nil).status == 200)
        }
    }

    @Test func engagementPostedToServeReachesTheReadout() async throws {
        try await onOwnThread {
            let project = try TemporaryProject(projectFile: nil)
            defer { project.remove() }
            let sim = try JournalCLITests.start(project, ["--record", "received.csv"])
            try EngagementCLITests.write(project)
            let send = try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
            #expect(send.status == 0, "\(send.stderr)")
            _ = sim.stop()
            let ids = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
                .split(separator: "\n").dropFirst().map {
                    String($0.split(separator: ",", omittingEmptySubsequences: false)[3])
                }
            #expect(ids.count > 150)
            try project.append("pushcamp.yaml", "\nserve:\n  console: true\n")
            var environment = ProcessInfo.processInfo.environment
            environment["PUSHCAMP_CONSOLE_TOKEN"] = ConsoleBrowserTests.token
            let serve = try ServeProcess(in: project.root, environment: environment)
            defer { _ = serve.stop() }

            let events = ids.prefix(40).enumerated().map { index, id in
                "{\"apns_id\":\"\(id)\",\"event\":\"opened\",\"time\":\(4_102_444_800 + index)}"
            }
            let body = "{\"campaign\":\"e\",\"events\":[\(events.joined(separator: ","))]}"
            #expect(try ConsoleBrowserTests.request(serve, "/api/engagement", token: nil, body: body).status == 401)
            let first = try ConsoleBrowserTests.request(serve, "/api/engagement", body: body)
            #expect(first.status == 200, "\(first.body)")
            #expect(
                first.body
                    == "{\"run\":1,\"recorded\":40,\"already_recorded\":0,\"not_sent\":0,\"unmatched\":0,\"outside_window\":0}\n"
            )
            let again = try ConsoleBrowserTests.request(serve, "/api/engagement", body: body)
            #expect(
                again.body
                    == "{\"run\":1,\"recorded\":0,\"already_recorded\":40,\"not_sent\":0,\"unmatched\":0,\"outside_window\":0}\n"
            )

            // A bad event refuses the whole body, by index, echoing no value; nothing is recorded.
            let bad =
                "{\"campaign\":\"e\",\"events\":[{\"user\":\"u1\",\"event\":\"converted\",\"time\":4102444800},"
                + "{\"apns_id\":\"private-looking\",\"event\":\"opened\",\"time\":4102444800}]}"
            let refused = try ConsoleBrowserTests.request(serve, "/api/engagement", body: bad)
            #expect(refused.status == 400)
            #expect(refused.body == "{\"errors\":[\"events[1]: 'apns_id' is not a UUID (8-4-4-4-12 hex digits)\"]}\n")
            let unknown = try ConsoleBrowserTests.request(
                serve,
                "/api/engagement",
                body: "{\"campaign\":\"nope\",\"events\":[{\"user\":\"u1\",\"event\":\"opened\",\"time\":4102444800}]}"
            )
            #expect(unknown.status == 404 && unknown.body.contains("no valid campaign 'nope'"), "\(unknown.body)")
            #expect(try ConsoleBrowserTests.request(serve, "/api/engagement", body: "not json").status == 400)

            let report = try ConsoleBrowserTests.get(serve, "/api/runs/1")
            let readout = try #require(
                (try JSONSerialization.jsonObject(with: Data(report.body.utf8)) as? [String: Any])?["readout"]
                    as? [String: Any]
            )
            #expect(readout["events"] as? [String] == ["opened"])
            let groups = try #require(readout["groups"] as? [[String: Any]])
            let opened = groups.compactMap { ($0["events"] as? [[String: Any]])?.first?["count"] as? Int }
            #expect(opened.reduce(0, +) == 40, "\(opened)")
        }
    }
}
