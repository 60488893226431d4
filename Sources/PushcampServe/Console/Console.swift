import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampReport

/// `serve`'s console (`serve.console: true`): the overview at `/`, each run's report at
/// `/runs/N`, the JSON behind them under `/api/`, and `POST /api/engagement`. Reads the journal
/// every node shares, so any node of a cluster shows the same console. Who may read it is
/// `ConsoleAccess`'s decision.
public struct Console: Sendable {
    public var access: ConsoleAccess
    public var journal: any Journal
    public var journalName: String
    public var paths: ProjectPaths
    public var folders: [String]
    public var status: ServeStatus
    public var clock: any WallClock

    public init(
        access: ConsoleAccess,
        journal: any Journal,
        journalName: String,
        paths: ProjectPaths,
        folders: [String],
        status: ServeStatus,
        clock: any WallClock = SystemWallClock()
    ) {
        self.access = access
        self.journal = journal
        self.journalName = journalName
        self.paths = paths
        self.folders = folders
        self.status = status
        self.clock = clock
    }

    /// Runs the overview and `/api/runs` list.
    static let listedRuns = 50

    /// Headers every console answer carries: no caching, no framing, no sniffing, and a policy
    /// that allows only the page's own inline style and script and requests to this origin.
    static func headers(_ contentType: String) -> HTTPFields {
        [
            .contentType: contentType, .cacheControl: "no-store",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            HTTPField.Name("Content-Security-Policy")!:
                "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; "
                + "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
        ]
    }

    static func answer(_ status: HTTPResponse.Status, _ body: String, _ contentType: String) -> Response {
        Response(
            status: status,
            headers: headers(contentType),
            body: ResponseBody(byteBuffer: ByteBuffer(string: body))
        )
    }

    static func json(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        answer(status, body.hasSuffix("\n") ? body : body + "\n", "application/json; charset=utf-8")
    }

    static func html(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        answer(status, body, "text/html; charset=utf-8")
    }

    static func problem(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json(JSONValue.object([("error", .string(message))]).text, status: status)
    }

    /// 401 with `message`, asking for a bearer token.
    static func unauthorized(_ message: String) -> Response {
        var refused = problem(.unauthorized, message)
        refused.headers[.wwwAuthenticate] = "Bearer realm=\"pushcamp\""
        return refused
    }

    /// Answers `request` with `body` when the request may read; else sends a page to `/login` and
    /// an API call a 401.
    func reading(
        _ request: Request,
        page: Bool,
        _ body: () async throws -> Response
    ) async -> Response {
        guard access.serves(host: request.head.authority) else {
            return Self.problem(
                .misdirectedRequest,
                "this console answers only requests to localhost, 127.0.0.1 or [::1]: it has no token "
                    + "(PUSHCAMP_CONSOLE_TOKEN), so a page of another site must not reach it through its own name"
            )
        }
        let verdict = access.read(authorization: request.headers[.authorization], cookie: request.headers[.cookie])
        guard verdict == .allowed else {
            if page { return Response(status: .seeOther, headers: [.location: "/login", .cacheControl: "no-store"]) }
            return Self.unauthorized("this console needs its token: Authorization: Bearer TOKEN")
        }
        do {
            return try await body()
        } catch let error as JournalError {
            return Self.problem(.serviceUnavailable, "the journal cannot be read: \(error.message)")
        } catch {
            return Self.problem(.serviceUnavailable, "\(error)")
        }
    }

    func run(_ context: BasicRequestContext) -> RunID? {
        context.parameters.get("id", as: Int64.self).map(RunID.init)
    }

    func report(_ id: RunID) async throws -> RunReport? {
        guard var report = try await RunReport.load(id, from: journal) else { return nil }
        report.fileDisplay = report.run.file.map(paths.displayRelative)
        return report
    }

    func overview() async throws -> String {
        let now = clock.now()
        let (ready, health) = status.readiness(now: now)
        // The status reads the schedules (every campaign file) once; the page shows that listing.
        let projectStatus = try await ProjectStatus.read(
            paths: paths,
            folders: folders,
            journal: journal,
            journalName: journalName,
            now: now
        )
        return ConsolePage(
            status: projectStatus,
            runs: try await RunListing.read(from: journal, limit: 20),
            schedules: projectStatus.schedules,
            notifications: NotificationListing(records: try await journal.notifications(limit: 10, quarantined: false)),
            firings: FiringListing(firings: try await journal.firings(campaign: nil, limit: 10), campaign: nil),
            ready: ready,
            health: health
        ).overview()
    }

    /// The campaign `id` of the watched folders, loaded; nil when there is none or it does not load.
    func loadCampaign(_ id: String) -> LoadedCampaign? {
        var catalog = CampaignCatalog(paths: paths, folders: folders)
        _ = catalog.refresh()
        guard let entry = catalog.entries.values.sorted(by: { $0.path < $1.path }).first(where: { $0.id == id }),
            entry.error == nil
        else { return nil }
        return catalog.loader.load(entry.path).campaign
    }

    /// Adds the console's routes to `router`.
    public func register(on router: Router<BasicRequestContext>) {
        router.get("/") { request, _ in
            await reading(request, page: true) { Self.html(try await overview()) }
        }
        // Browsers ask for an icon; the console has none, and says so without an error.
        router.get("favicon.ico") { _, _ in Response(status: .noContent, headers: [.cacheControl: "max-age=86400"]) }
        router.get("login") { _, _ -> Response in
            access.token == nil
                ? Response(status: .seeOther, headers: [.location: "/"]) : Self.html(ConsolePage.login(failed: false))
        }
        router.post("login") { request, _ -> Response in
            guard let token = access.token else { return Response(status: .seeOther, headers: [.location: "/"]) }
            let body = (try? await request.body.collect(upTo: 4096)).map { String(buffer: $0) } ?? ""
            let given = Self.formValue("token", in: body) ?? ""
            guard ConsoleAccess.same(given, token) else {
                return Self.html(ConsolePage.login(failed: true), status: .unauthorized)
            }
            return Response(
                status: .seeOther,
                headers: [.location: "/", .setCookie: ConsoleAccess.cookie(token), .cacheControl: "no-store"]
            )
        }
        router.get("runs/:id") { request, context in
            await reading(request, page: true) {
                guard let id = run(context), let report = try await report(id) else {
                    return Self.html(
                        ConsolePage.page(title: "No such run", body: "<h1>No such run</h1>"),
                        status: .notFound
                    )
                }
                return Self.html(report.html())
            }
        }
        router.get("api/runs") { request, _ in
            await reading(request, page: false) {
                Self.json(try await RunListing.read(from: journal, limit: Self.listedRuns).json())
            }
        }
        router.get("api/runs/:id") { request, context in
            await reading(request, page: false) {
                guard let id = run(context), let report = try await report(id) else {
                    return Self.problem(.notFound, "no such run")
                }
                return Self.json(report.json())
            }
        }
        router.get("api/schedules") { request, _ in
            await reading(request, page: false) {
                Self.json(
                    try await ScheduleListing.read(paths: paths, folders: folders, journal: journal, now: clock.now())
                        .json()
                )
            }
        }
        router.get("api/status") { request, _ in
            await reading(request, page: false) {
                Self.json(
                    try await ProjectStatus.read(
                        paths: paths,
                        folders: folders,
                        journal: journal,
                        journalName: journalName,
                        now: clock.now()
                    ).json()
                )
            }
        }
        router.get("api/health") { request, _ in
            await reading(request, page: false) {
                let (ready, text) = status.readiness(now: clock.now())
                return Self.json(JSONValue.object([("ready", .bool(ready)), ("text", .string(text))]).text)
            }
        }
        router.get("api/notifications") { request, _ in
            await reading(request, page: false) {
                Self.json(
                    NotificationListing(records: try await journal.notifications(limit: 50, quarantined: false)).json()
                )
            }
        }
        router.get("api/firings") { request, _ in
            await reading(request, page: false) {
                Self.json(
                    FiringListing(firings: try await journal.firings(campaign: nil, limit: 50), campaign: nil).json()
                )
            }
        }
        router.post("api/engagement") { request, _ -> Response in
            switch access.write(authorization: request.headers[.authorization], cookie: request.headers[.cookie]) {
            case .allowed: break
            case .needsToken:
                return Self.problem(
                    .forbidden,
                    "posting engagement needs a console token: set \(ConsoleAccess.tokenVariable) on serve"
                )
            case .unauthorized:
                return Self.unauthorized("posting engagement needs the console's token: Authorization: Bearer TOKEN")
            }
            let bytes: [UInt8]
            do {
                bytes = Array(try await request.body.collect(upTo: EngagementPost.bodyLimit + 1).readableBytesView)
            } catch {
                bytes = [UInt8](repeating: 0x20, count: EngagementPost.bodyLimit + 1)
            }
            let answer = await EngagementPost.handle(
                bytes,
                journal: journal,
                loadCampaign: loadCampaign,
                now: clock.now()
            )
            return Self.json(answer.body, status: HTTPResponse.Status(code: answer.status))
        }
    }

    /// The value of `name` in an `application/x-www-form-urlencoded` body.
    static func formValue(_ name: String, in body: String) -> String? {
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }
}
