import ArgumentParser
import Foundation
import Logging
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampServe
import ServiceLifecycle
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Send scheduled campaigns at their slots and trigger campaigns on App Store events, each once; receive App Store notifications; serve health and metrics.",
        discussion: """
            The long-running side of Pushcamp. Every campaign file in the watched folders (serve.campaigns \
            in pushcamp.yaml, default campaigns/) with a `schedule:` is sent at each of its slots: \
            `at` once, `cron` in a time zone, or `every` a period. A file is read again when it \
            changes; one that stops validating is reported (log, /readyz, metrics) and skipped while \
            the others go on. A slot sends its campaign file as it is when the slot fires.

            Each slot fires once: it is recorded in the journal in the same transaction that creates \
            its run, so neither a restart, nor a crash, nor a second serve on the same journal fires it \
            again. With a PostgreSQL journal (journal.url, or --journal postgres://…) the same serve \
            runs on several machines: a campaign is sent by one node at a time under a lease, and a \
            node that dies or loses the database is taken over (docs/scale-out.md). Slots missed while serve was down follow the campaign's schedule.catch_up; a slot \
            due while the previous one still sends follows schedule.overlap. Skipped slots are \
            recorded with their reason (`pushcamp schedules` lists them).

            Campaigns with a `trigger: { app_store: TYPE }` are sent to a subscription's rows each \
            time such an App Store notification arrives, once per notification (docs/app-store.md).

            Before any slot needs them, and again whenever a campaign file changes, serve checks the \
            credentials of every app its campaigns send with (the key readable and an ES256 key, or \
            the certificate loadable; every ${env:…} set; no placeholder team or key id for Apple's \
            hosts) and is not ready until they can be used.

            HTTP (plain, on --listen; loopback by default): GET /healthz, GET /readyz (503 with the \
            reasons when the journal is closed or does not answer, the scheduler stalls, credentials \
            cannot be used or App Store notifications cannot be stored), GET /metrics (Prometheus), \
            and, for apps with an `app_store:` key, POST /app-store/notifications \
            (serve.app_store_path).

            With `serve.console: true`, a read-only console at / (runs with live progress and their \
            reports, schedules and next slots, App Store notifications, trigger firings, dead \
            tokens, health), its JSON under /api/ and POST /api/engagement. With \
            PUSHCAMP_CONSOLE_TOKEN set, every console page and call needs that token (a browser \
            signs in once at /login), /metrics needs it and /readyz says only ready or not ready \
            to others; without it the console is open, read-only, allowed only when --listen \
            resolves to a loopback address, and answers only requests addressed to localhost, \
            127.0.0.1 or [::1] (docs/console.md).

            Ctrl-C or SIGTERM drains at once: no new slot fires, running sends stop as `send` does \
            (in-flight answers recorded; a send waiting for its recipients' local time or the end \
            of quiet hours stops without waiting), and the next serve resumes them. Logs go to \
            standard error, as text or (--log-format json) one JSON object per line.

            Examples:
              pushcamp serve
              pushcamp serve --project deploy/pushcamp --listen 0.0.0.0:9090
              pushcamp serve --log-format json --log-level notice
              PGPASSWORD=… pushcamp serve --journal postgres://pushcamp@db/pushcamp

            See docs/serve.md (with a systemd unit), docs/scale-out.md and docs/metrics.md.
            """
    )

    @OptionGroup var projectOption: ProjectOption

    @Option(
        help: ArgumentHelp(
            "host:port for /healthz, /readyz and /metrics (default: serve.listen in pushcamp.yaml, else 127.0.0.1:8080; port 0 picks a free one).",
            valueName: "address"
        )
    )
    var listen: String?

    @OptionGroup var journalLocation: JournalLocationOption

    @Option(help: ArgumentHelp("Log level: debug, info, notice, warning or error.", valueName: "level"))
    var logLevel: String = "info"

    @Option(
        help: ArgumentHelp(
            "Log lines as text, or as json: one object per line with time, level, logger, message and the event's fields (campaign, run, slot, event).",
            valueName: "format"
        )
    )
    var logFormat: ServeLogHandler.Format = .text

    @OptionGroup var stall: StallOption

    func validate() throws {
        if let listen, case .failure(let error) = ListenAddress.parse(listen) {
            throw ValidationError("--listen: \(error.message)")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level takes trace, debug, info, notice, warning, error or critical")
        }
    }

    func run() async throws {
        let (loaded, paths) = try projectOption.load()
        let address = listen.flatMap { try? ListenAddress.parse($0).get() } ?? loaded.serve.listen
        ServeLogHandler.bootstrap(format: logFormat, level: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "pushcamp.serve")
        var httpLogger = Logger(label: "pushcamp.http")
        httpLogger.logLevel = .warning

        // A taken port is the one error said, before the journal or the scheduler start.
        if let problem = await ServeHTTP.listenProblem(address) {
            throw Failure("error: \(problem)", exitCode: 1)
        }
        let setting = journalLocation.setting(JournalSetting(loaded, paths: paths))
        let access = try JournalLocationOption.access(setting)
        // The schema brought forward before anything starts (once across nodes starting together:
        // the migration holds an advisory lock), then the journal every service shares.
        try await JournalLocationOption.withJournal(access, readOnly: false) { _ in }
        let (journal, client) = try access.open(logger: Logger(label: "pushcamp.journal"))
        var options = ServeNode.Options(stallTimeout: stall.stallTimeout)
        (options.tokenCache, options.leaseDuration, options.slicing) = setting.sending(through: access)
        let node = try ServeNode(
            project: loaded,
            paths: paths,
            journal: journal,
            journalName: access.name,
            listen: address,
            options: options,
            environment: ProcessInfo.processInfo.environment,
            logger: logger,
            httpLogger: httpLogger
        )
        do {
            try await node.run(after: client)
        } catch {
            throw Failure("error: \(error)", exitCode: 1)
        }
        logger.info("stopped; unfinished runs resume on the next start")
    }
}

extension ServeLogHandler.Format: ExpressibleByArgument {}
