import PostgresNIO
import PushcampJournal

/// The journal's tables on PostgreSQL, as numbered migrations applied forward on start.
extension PostgresJournal {
    /// One schema version: its number, what it adds, and its statements (one each: PostgreSQL's
    /// extended protocol takes one statement per query).
    struct Migration: Sendable {
        var version: Int
        var name: String
        var statements: [String]
    }

    /// The key of the advisory lock under which migrations run: two nodes starting at once on an
    /// empty database migrate once, the second waits and finds nothing left to do. ("pushcamp" in
    /// ASCII.)
    static let migrationLock: Int64 = 0x7075_7368_6361_6D70

    static let migrations: [Migration] = [
        Migration(
            version: 1,
            name: "runs, recipients, dead tokens, schedule slots, App Store notifications, trigger firings",
            statements: [
                """
                CREATE TABLE run (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    campaign TEXT NOT NULL,
                    revision TEXT NOT NULL,
                    status TEXT NOT NULL,
                    started_at DOUBLE PRECISION NOT NULL,
                    updated_at DOUBLE PRECISION NOT NULL,
                    cancel_requested BOOLEAN NOT NULL DEFAULT false,
                    possible_duplicates BIGINT NOT NULL DEFAULT 0,
                    planned BIGINT,
                    file TEXT,
                    replay_of BIGINT REFERENCES run(id),
                    replay_reasons TEXT,
                    slot BIGINT
                )
                """,
                "CREATE INDEX run_by_campaign ON run (campaign, status)",
                """
                CREATE TABLE recipient (
                    run BIGINT NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                    seq BIGINT NOT NULL,
                    token TEXT NOT NULL,
                    state TEXT NOT NULL,
                    attempt INTEGER NOT NULL,
                    status INTEGER,
                    reason TEXT,
                    apns_timestamp BIGINT,
                    retry_at DOUBLE PRECISION,
                    updated_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (run, seq)
                )
                """,
                "CREATE INDEX recipient_delivered_by_time ON recipient (updated_at) WHERE state = 'delivered'",
                """
                CREATE TABLE dispatch (
                    run BIGINT NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                    first_seq BIGINT NOT NULL,
                    last_seq BIGINT NOT NULL,
                    PRIMARY KEY (run, first_seq)
                )
                """,
                """
                CREATE TABLE delivery (
                    run BIGINT NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                    first_seq BIGINT NOT NULL,
                    last_seq BIGINT NOT NULL,
                    delivered_at DOUBLE PRECISION NOT NULL,
                    token_hashes BYTEA NOT NULL,
                    PRIMARY KEY (run, first_seq)
                )
                """,
                "CREATE INDEX delivery_by_time ON delivery (delivered_at)",
                """
                CREATE TABLE run_stats (
                    run BIGINT PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
                    stats TEXT NOT NULL,
                    updated_at DOUBLE PRECISION NOT NULL
                )
                """,
                """
                CREATE TABLE invalid_token (
                    topic TEXT NOT NULL,
                    token TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    apns_timestamp BIGINT,
                    seen_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (topic, token)
                )
                """,
                """
                CREATE TABLE schedule_slot (
                    campaign TEXT NOT NULL,
                    slot BIGINT NOT NULL,
                    outcome TEXT NOT NULL,
                    reason TEXT,
                    detail TEXT,
                    run BIGINT REFERENCES run(id),
                    through BIGINT,
                    count INTEGER NOT NULL DEFAULT 1,
                    recorded_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (campaign, slot)
                )
                """,
                "CREATE TABLE schedule_watch (campaign TEXT PRIMARY KEY, since DOUBLE PRECISION NOT NULL)",
                """
                CREATE TABLE appstore_notification (
                    uuid TEXT PRIMARY KEY,
                    type TEXT NOT NULL,
                    subtype TEXT,
                    signed_date DOUBLE PRECISION,
                    environment TEXT,
                    bundle_id TEXT,
                    app TEXT,
                    disposition TEXT NOT NULL,
                    reason TEXT,
                    original_transaction_id TEXT,
                    product_id TEXT,
                    app_account_token TEXT,
                    signed_payload TEXT NOT NULL,
                    received_at DOUBLE PRECISION NOT NULL
                )
                """,
                "CREATE INDEX appstore_notification_by_time ON appstore_notification (received_at)",
                """
                CREATE TABLE subscription (
                    original_transaction_id TEXT PRIMARY KEY,
                    app TEXT,
                    product_id TEXT,
                    status TEXT,
                    auto_renew BOOLEAN,
                    expires_at DOUBLE PRECISION,
                    grace_period_expires_at DOUBLE PRECISION,
                    app_account_token TEXT,
                    last_type TEXT NOT NULL,
                    last_subtype TEXT,
                    signed_date DOUBLE PRECISION NOT NULL,
                    notification TEXT NOT NULL
                )
                """,
                "CREATE INDEX subscription_by_app ON subscription (app, original_transaction_id)",
                """
                CREATE TABLE trigger_firing (
                    campaign TEXT NOT NULL,
                    notification TEXT NOT NULL,
                    subscription_key TEXT,
                    due_at DOUBLE PRECISION NOT NULL,
                    status TEXT NOT NULL,
                    detail TEXT,
                    run BIGINT,
                    recorded_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (campaign, notification)
                )
                """,
                "CREATE INDEX trigger_firing_due ON trigger_firing (status, due_at)",
                "CREATE INDEX trigger_firing_run ON trigger_firing (run)",
            ]
        ),
        // Who sends what: a row per resource (a run), its owner, a fence that rises on every claim,
        // and when the lease ends (seconds since 1970 on the database's clock).
        Migration(
            version: 2,
            name: "leases",
            statements: [
                """
                CREATE TABLE lease (
                    resource TEXT PRIMARY KEY,
                    owner TEXT NOT NULL,
                    fence BIGINT NOT NULL,
                    expires_at DOUBLE PRECISION NOT NULL
                )
                """
            ]
        ),
        // The provider token every node shares, per Apple key (team, key id, key fingerprint).
        Migration(
            version: 3,
            name: "provider tokens",
            statements: ["CREATE TABLE provider_token (key TEXT PRIMARY KEY, token TEXT NOT NULL)"]
        ),
        // A run several workers send: its plan snapshotted once, cut into leased slices; and the
        // recipients that may have been sent twice, by name.
        Migration(
            version: 4,
            name: "run snapshots, slices and possible duplicates",
            statements: [
                """
                CREATE TABLE snapshot (
                    run BIGINT NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                    seq BIGINT NOT NULL,
                    token TEXT NOT NULL,
                    payload BYTEA NOT NULL,
                    variant TEXT NOT NULL,
                    locale TEXT,
                    collapse_id TEXT,
                    expiration BIGINT,
                    PRIMARY KEY (run, seq)
                )
                """,
                """
                CREATE TABLE slice (
                    run BIGINT NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                    first_seq BIGINT NOT NULL,
                    last_seq BIGINT NOT NULL,
                    done BOOLEAN NOT NULL DEFAULT false,
                    stats TEXT,
                    PRIMARY KEY (run, first_seq)
                )
                """,
                "CREATE INDEX slice_open ON slice (run) WHERE NOT done",
                """
                CREATE TABLE possible_duplicate (
                    run BIGINT NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                    seq BIGINT NOT NULL,
                    token TEXT NOT NULL,
                    PRIMARY KEY (run, seq)
                )
                """,
            ]
        ),
        // Broadcast channels Apple created for the project, by declared name; a deleted one keeps
        // its row with deleted_at set, and its name may be created again.
        Migration(
            version: 5,
            name: "broadcast channels",
            statements: [
                """
                CREATE TABLE broadcast_channel (
                    id BIGSERIAL PRIMARY KEY,
                    name TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    channel_id TEXT NOT NULL,
                    storage_policy INTEGER NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL,
                    deleted_at DOUBLE PRECISION
                )
                """,
                "CREATE UNIQUE INDEX broadcast_channel_live ON broadcast_channel (name) WHERE deleted_at IS NULL",
            ]
        ),
        // Engagement with a run, one row per (recipient, event): the recipient by its place in the
        // plan, with the variant (NULL: held out) and locale the plan gave it.
        Migration(
            version: 6,
            name: "engagement",
            statements: [
                """
                CREATE TABLE engagement (
                    run BIGINT NOT NULL,
                    seq BIGINT NOT NULL,
                    event TEXT NOT NULL,
                    variant TEXT,
                    locale TEXT,
                    at DOUBLE PRECISION NOT NULL,
                    recorded_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (run, seq, event)
                )
                """
            ]
        ),
        // What a run kept of its assignment at send time, so engagement is matched without the
        // campaign's files: a header per run (its arms, locales, readout, and the tally once every
        // recipient is kept); a row per recipient keyed by its apns-id, with its place in the plan,
        // its person (a hash of audience.user_key's value), and its variant (NULL: held out) and
        // locale as indexes into the header's lists; the same per person. Recipients are added in
        // plan order to assignment_added, then filed in key order when sealed.
        Migration(
            version: 7,
            name: "assignments kept at send time, and what an event was worth",
            statements: [
                "ALTER TABLE engagement ADD COLUMN value DOUBLE PRECISION",
                "CREATE TABLE assignment_run (run BIGINT PRIMARY KEY, header TEXT NOT NULL)",
                """
                CREATE TABLE assignment_added (
                    run BIGINT NOT NULL,
                    seq BIGINT NOT NULL,
                    id_high BIGINT NOT NULL,
                    id_low BIGINT NOT NULL,
                    person BIGINT,
                    variant SMALLINT,
                    locale SMALLINT,
                    PRIMARY KEY (run, seq)
                )
                """,
                """
                CREATE TABLE assignment (
                    run BIGINT NOT NULL,
                    id_high BIGINT NOT NULL,
                    id_low BIGINT NOT NULL,
                    seq BIGINT NOT NULL,
                    person BIGINT,
                    variant SMALLINT,
                    locale SMALLINT,
                    PRIMARY KEY (run, id_high, id_low)
                )
                """,
                """
                CREATE TABLE assignment_person (
                    run BIGINT NOT NULL,
                    person BIGINT NOT NULL,
                    seq BIGINT NOT NULL,
                    id_high BIGINT NOT NULL,
                    id_low BIGINT NOT NULL,
                    variant SMALLINT,
                    locale SMALLINT,
                    PRIMARY KEY (run, person, seq)
                )
                """,
            ]
        ),
        // APNs refused a provider token as too frequent: no node mints one for the key before
        // held_until (the database's clock, seconds since 1970).
        Migration(
            version: 8,
            name: "provider token holds",
            statements: [
                "CREATE TABLE provider_token_hold (key TEXT PRIMARY KEY, held_until DOUBLE PRECISION NOT NULL)"
            ]
        ),
        // When retention pruned a run: its pass selects the runs not pruned yet, instead of reading
        // every old run's statistics each hour to skip it.
        Migration(
            version: 9,
            name: "when a run was pruned",
            statements: [
                "ALTER TABLE run ADD COLUMN pruned_at DOUBLE PRECISION",
                """
                UPDATE run SET pruned_at = (s.stats::jsonb -> 'pruned' ->> 'at')::double precision
                FROM run_stats s WHERE s.run = run.id AND s.stats::jsonb ? 'pruned'
                """,
            ]
        ),
        // A run's snapshot a page per row (`SnapshotPage`'s bytes) instead of a row per push:
        // PostgreSQL's cost was per row. The rows of runs snapshotted before are packed into pages
        // of 5,000; `pushcamp_snapshot(run)` reads a run's pushes back as rows, for people and
        // scripts.
        Migration(
            version: 10,
            name: "snapshot pages",
            statements: [
                """
                CREATE TABLE snapshot_page (
                    run BIGINT NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                    first_seq BIGINT NOT NULL,
                    last_seq BIGINT NOT NULL,
                    pushes BYTEA NOT NULL,
                    PRIMARY KEY (run, first_seq)
                )
                """,
                // lz4 where the server has it (PostgreSQL 14 and later, built with it): a third of
                // the bytes, written faster; otherwise stored as it is, not through pglz's slower
                // compression.
                """
                DO $$ BEGIN
                    EXECUTE 'ALTER TABLE snapshot_page ALTER COLUMN pushes SET COMPRESSION lz4';
                EXCEPTION WHEN OTHERS THEN
                    ALTER TABLE snapshot_page ALTER COLUMN pushes SET STORAGE EXTERNAL;
                END $$
                """,
                packSnapshotRows,
                "DROP TABLE snapshot",
                snapshotFunction,
            ]
        ),
        // Android pushes and moments in a run's snapshot (flags of `SnapshotPage`'s format; pages
        // written before have none): `pushcamp_snapshot(run)` says each push's platform and when
        // it is due. (Version 10 makes the function as it is now too; this makes it again on
        // journals made before.)
        Migration(
            version: 11,
            name: "Android pushes and moments in snapshots",
            statements: ["DROP FUNCTION pushcamp_snapshot(BIGINT)", snapshotFunction]
        ),
    ]

    /// Packs the rows of the snapshot table of schema 4–9 (a row per push) into pages of
    /// `SnapshotPage`'s format, 5,000 seqs at most each.
    package static let packSnapshotRows =
        """
        INSERT INTO snapshot_page (run, first_seq, last_seq, pushes)
        SELECT run, min(seq), max(seq), '\\x01'::bytea || int4send(count(*)::int4) || string_agg(
            int8send(seq)
                || set_byte('\\x00'::bytea, 0, (CASE WHEN locale IS NULL THEN 0 ELSE 1 END)
                    + (CASE WHEN collapse_id IS NULL THEN 0 ELSE 2 END)
                    + (CASE WHEN expiration IS NULL THEN 0 ELSE 4 END))
                || int2send(octet_length(token)::int2) || convert_to(token, 'UTF8')
                || int4send(octet_length(payload)) || payload
                || int2send(octet_length(variant)::int2) || convert_to(variant, 'UTF8')
                || coalesce(int2send(octet_length(locale)::int2) || convert_to(locale, 'UTF8'), '')
                || coalesce(int2send(octet_length(collapse_id)::int2) || convert_to(collapse_id, 'UTF8'), '')
                || coalesce(int8send(expiration), ''),
            '' ORDER BY seq
        )
        FROM snapshot GROUP BY run, seq / 5000
        """

    /// `pushcamp_snapshot(run)`: a run's snapshot as rows (seq, token, payload, variant, locale,
    /// collapse_id, expiration, platform, due), decoded from its pages in SQL, for people and
    /// scripts. Each page is decompressed once (`|| ''`): a variable holding the stored value would
    /// be decompressed again by every `get_byte` and `substring`, a megabyte each.
    static let snapshotFunction =
        """
        CREATE FUNCTION pushcamp_snapshot(wanted BIGINT) RETURNS TABLE (
            seq BIGINT, token TEXT, payload BYTEA, variant TEXT, locale TEXT, collapse_id TEXT,
            expiration BIGINT, platform TEXT, due BIGINT
        ) LANGUAGE plpgsql STABLE AS $$
        DECLARE
            page BYTEA;
            at INT;
            flags INT;
            n INT;
        BEGIN
            FOR page IN SELECT p.pushes || ''::bytea FROM snapshot_page p
                WHERE p.run = wanted ORDER BY p.first_seq
            LOOP
                IF get_byte(page, 0) <> 1 THEN
                    RAISE EXCEPTION 'a snapshot page of run % is of an unknown format', wanted;
                END IF;
                at := 5;
                FOR i IN 1..(('x' || encode(substring(page FROM 2 FOR 4), 'hex'))::bit(32)::int) LOOP
                    seq := ('x' || encode(substring(page FROM at + 1 FOR 8), 'hex'))::bit(64)::bigint;
                    flags := get_byte(page, at + 8);
                    platform := CASE WHEN flags & 8 <> 0 THEN 'android' ELSE 'ios' END;
                    at := at + 9;
                    n := get_byte(page, at) * 256 + get_byte(page, at + 1);
                    token := convert_from(substring(page FROM at + 3 FOR n), 'UTF8');
                    at := at + 2 + n;
                    n := ('x' || encode(substring(page FROM at + 1 FOR 4), 'hex'))::bit(32)::int;
                    payload := substring(page FROM at + 5 FOR n);
                    at := at + 4 + n;
                    n := get_byte(page, at) * 256 + get_byte(page, at + 1);
                    variant := convert_from(substring(page FROM at + 3 FOR n), 'UTF8');
                    at := at + 2 + n;
                    locale := NULL;
                    collapse_id := NULL;
                    expiration := NULL;
                    IF flags & 1 <> 0 THEN
                        n := get_byte(page, at) * 256 + get_byte(page, at + 1);
                        locale := convert_from(substring(page FROM at + 3 FOR n), 'UTF8');
                        at := at + 2 + n;
                    END IF;
                    IF flags & 2 <> 0 THEN
                        n := get_byte(page, at) * 256 + get_byte(page, at + 1);
                        collapse_id := convert_from(substring(page FROM at + 3 FOR n), 'UTF8');
                        at := at + 2 + n;
                    END IF;
                    IF flags & 4 <> 0 THEN
                        expiration := ('x' || encode(substring(page FROM at + 1 FOR 8), 'hex'))::bit(64)::bigint;
                        at := at + 8;
                    END IF;
                    due := NULL;
                    IF flags & 16 <> 0 THEN
                        due := ('x' || encode(substring(page FROM at + 1 FOR 8), 'hex'))::bit(64)::bigint;
                        at := at + 8;
                    END IF;
                    RETURN NEXT;
                END LOOP;
            END LOOP;
        END
        $$
        """

    /// The newest schema version this build knows.
    public static var schemaVersion: Int { migrations.last?.version ?? 0 }

    /// Brings the schema to `schemaVersion`, under the advisory lock, in one transaction: a node
    /// that dies halfway leaves the schema as it was. Refuses a database whose schema is newer than
    /// this build (`.newerVersion`), and one whose tables are someone else's (`.corrupt`). Returns
    /// the versions it applied.
    @discardableResult
    public func migrate() async throws(JournalError) -> [Int] {
        let name = self.name
        let logger = self.logger
        let outcome: Result<[Int], JournalError> = try await transaction { connection in
            _ = try await Self.rows(
                "SELECT pg_advisory_xact_lock(\(Self.migrationLock))",
                on: connection,
                logger: logger
            )
            let current = try await Self.version(on: connection, logger: logger)
            if current == nil {
                let tables = try await Self.rows(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() LIMIT 3",
                    on: connection,
                    logger: logger
                ).map { try $0["table_name"].decode(String.self) }
                if !tables.isEmpty {
                    return .failure(
                        JournalError(
                            .corrupt,
                            "the database \(name) has tables of its own (\(tables.joined(separator: ", "))) but is not a "
                                + "Pushcamp journal; name an empty database in the journal URL"
                        )
                    )
                }
                _ = try await Self.rows(
                    """
                    CREATE TABLE pushcamp_schema (
                        version INTEGER PRIMARY KEY, name TEXT NOT NULL, migrated_at TIMESTAMPTZ NOT NULL DEFAULT now()
                    )
                    """,
                    on: connection,
                    logger: logger
                )
            }
            let from = current ?? 0
            if from > Self.schemaVersion {
                return .failure(Self.newer(from, name: name))
            }
            var applied: [Int] = []
            for migration in Self.migrations where migration.version > from {
                for statement in migration.statements {
                    _ = try await Self.rows(PostgresQuery(unsafeSQL: statement), on: connection, logger: logger)
                }
                _ = try await Self.rows(
                    "INSERT INTO pushcamp_schema (version, name) VALUES (\(migration.version), \(migration.name))",
                    on: connection,
                    logger: logger
                )
                applied.append(migration.version)
            }
            return .success(applied)
        }
        return try outcome.get()
    }

    /// The schema version of the database (nil: not a journal yet).
    public func version() async throws(JournalError) -> Int? {
        let logger = self.logger
        return try await withConnection { connection in try await Self.version(on: connection, logger: logger) }
    }

    /// Refuses a schema this build is too old for; what every node checks before using the journal.
    public func checkVersion() async throws(JournalError) {
        guard let version = try await version() else {
            throw JournalError(
                .cannotOpen,
                "the database \(name) is not a Pushcamp journal yet: run `pushcamp journal migrate`"
            )
        }
        if version > Self.schemaVersion { throw Self.newer(version, name: name) }
        if version < Self.schemaVersion {
            throw JournalError(
                .cannotOpen,
                "the journal \(name) is at schema version \(version), this Pushcamp needs \(Self.schemaVersion): "
                    + "run `pushcamp journal migrate`"
            )
        }
    }

    static func newer(_ version: Int, name: String) -> JournalError {
        JournalError(
            .newerVersion,
            "the journal \(name) is at schema version \(version), newer than this Pushcamp knows (\(schemaVersion)): "
                + "a newer Pushcamp migrated it; upgrade this node to use it"
        )
    }

    static func version(on connection: PostgresConnection, logger: Logger) async throws -> Int? {
        let exists = try await rows(
            "SELECT to_regclass('pushcamp_schema') IS NOT NULL AS present",
            on: connection,
            logger: logger
        )
        guard try exists.first?["present"].decode(Bool.self) == true else { return nil }
        let version = try await rows(
            "SELECT max(version) AS version FROM pushcamp_schema",
            on: connection,
            logger: logger
        )
        return try version.first?["version"].decode(Int?.self) ?? 0
    }
}
