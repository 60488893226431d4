// swift-tools-version:6.1
import PackageDescription

// Module rules (README.md lists the modules): the model, templates, audiences and planner never import NIO;
// the `pushcamp` executable only parses arguments, builds the pipeline and prints.
// Our own targets build with warnings as errors: a warning in our sources fails the build (never
// the dependencies', which keep their own settings).
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .unsafeFlags(["-warnings-as-errors"]),
]

let package = Package(
    name: "pushcamp",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushcamp", targets: ["pushcamp"]),
        .library(name: "PushcampPlanner", targets: ["PushcampPlanner"]),
        // For the fuzz targets (fuzz/Package.swift), which link the readers alone.
        .library(name: "PushcampModel", targets: ["PushcampModel"]),
        .library(name: "PushcampTemplates", targets: ["PushcampTemplates"]),
        .library(name: "PushcampAudience", targets: ["PushcampAudience"]),
        .library(name: "PushcampJournal", targets: ["PushcampJournal"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // The version and the git commit of the build (the commit written by BuildInfoPlugin).
        .target(name: "PushcampBuildInfo", swiftSettings: strict, plugins: ["BuildInfoPlugin"]),
        .plugin(name: "BuildInfoPlugin", capability: .buildTool()),
        // What the APNs client, the simulator and the journal share without knowing each other: APNs
        // reasons and what to do about them, provider-token JWTs, the clock.
        .target(
            name: "PushcampAPNsCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // What the FCM client, the simulator and the planner share without knowing each other: service
        // accounts and the OAuth 2.0 assertion, FCM's errors and what to do about them, the rules a
        // message must pass. Pure: no sockets.
        .target(
            name: "PushcampFCMCore",
            dependencies: [
                "PushcampAPNsCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Campaign and project files: schema, located diagnostics, durations, rates, filters.
        .target(
            name: "PushcampModel",
            dependencies: ["PushcampAPNsCore", .product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),
        // Payload templates: Mustache leaves in JSON/YAML structures, localized strings.
        .target(
            name: "PushcampTemplates",
            dependencies: ["PushcampModel", .product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),
        // Audience sources, streamed: CSV, JSON Lines, inline lists, SQLite queries.
        .target(
            name: "PushcampAudience",
            dependencies: ["PushcampModel", "PushcampAPNsCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        // Campaign → Plan: loading, deterministic expansion, pre-flight checks, plan reports.
        .target(
            name: "PushcampPlanner",
            dependencies: [
                "PushcampModel", "PushcampTemplates", "PushcampAudience", "PushcampAPNsCore", "PushcampFCMCore",
                "PushcampJournal", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // The run journal: every recipient's state, runs, dead tokens. SQLite (GRDB) and in-memory.
        .target(
            name: "PushcampJournal",
            dependencies: [
                "PushcampModel", "PushcampAPNsCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for binding the hot insert directly.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                // Each run's latency distribution.
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: strict
        ),
        // The journal on PostgreSQL (postgres-nio): several machines on one journal; and audiences read
        // from PostgreSQL queries. A target of its own
        // so that what links the journal alone (the fuzz targets) does not build a database client.
        .target(
            name: "PushcampPostgres",
            dependencies: [
                "PushcampJournal", "PushcampModel", "PushcampAudience",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The one place that knows the three kinds of journal (a SQLite file, PostgreSQL, memory):
        // what the commands and `serve` open, and the scope a one-shot command uses it in; and what
        // opens audiences kept in PostgreSQL.
        .target(
            name: "PushcampJournalAccess",
            dependencies: [
                "PushcampJournal", "PushcampPostgres", "PushcampModel", "PushcampAudience",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // libnghttp2, found through pkg-config: the HTTP/2 codec of the APNs client.
        .systemLibrary(
            name: "CNghttp2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"]), .brew(["nghttp2"])]
        ),
        // The APNs transport: a pool of HTTP/2 connections (NIO + NIOSSL, nghttp2 as codec), provider tokens.
        // Knows requests and responses, never campaigns.
        .target(
            name: "PushcampAPNs",
            dependencies: [
                "CNghttp2", "PushcampAPNsCore", "PushcampFCMCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // The FCM HTTP v1 client's own parts over the shared HTTP/2 transport: the token endpoint and the
        // access tokens of a service account, shared through the journal.
        .target(
            name: "PushcampFCM",
            dependencies: [
                "PushcampFCMCore", "PushcampAPNs", "PushcampAPNsCore", .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // An APNs stand-in on swift-nio-http2's server side, for rehearsals and tests.
        .target(
            name: "PushcampSimulator",
            dependencies: [
                "PushcampAPNsCore", "PushcampModel", "PushcampFCMCore",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // A run's report from the journal: outcomes, retries, latency, throughput; text, JSON, Markdown,
        // HTML with inline SVG charts. Pure: reads a JournalStore, prints strings.
        .target(
            name: "PushcampReport",
            dependencies: ["PushcampJournal", "PushcampModel"],
            swiftSettings: strict
        ),
        // Plan → outcomes: the run factory (SendRun), the executor state machine and its driver (a
        // Service), pacing and retry policies, the send report.
        .target(
            name: "PushcampSend",
            dependencies: [
                "PushcampPlanner", "PushcampModel", "PushcampAPNs", "PushcampAPNsCore",
                "PushcampJournal", "PushcampFCM", "PushcampFCMCore", "PushcampTemplates",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // `pushcamp rehearse`: the simulator with throwaway credentials, and a SendRun against it.
        .target(
            name: "PushcampRehearsal",
            dependencies: [
                "PushcampSend", "PushcampSimulator", "PushcampAPNs", "PushcampAPNsCore", "PushcampPlanner",
                "PushcampModel", "PushcampJournal",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // App Store Server Notifications: signed payloads verified to Apple's root, decoded facts.
        .target(
            name: "PushcampAppStore",
            dependencies: [
                "PushcampAPNsCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // `pushcamp serve`: the scheduler (a state machine and the Service that carries out its actions),
        // the HTTP server (hummingbird 2: health, readiness, Prometheus metrics), the metrics themselves.
        .target(
            name: "PushcampServe",
            dependencies: [
                "PushcampSend", "PushcampPlanner", "PushcampModel", "PushcampJournal", "PushcampAPNsCore",
                "PushcampAPNs", "PushcampAppStore", "PushcampBuildInfo", "PushcampReport", "PushcampPostgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                // The App Store Server API's client (HTTP/1.1 over TLS).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "pushcamp",
            dependencies: [
                "PushcampPlanner", "PushcampModel", "PushcampAudience", "PushcampSend", "PushcampRehearsal",
                "PushcampAPNsCore", "PushcampSimulator", "PushcampJournal", "PushcampReport", "PushcampServe",
                "PushcampAppStore", "PushcampBuildInfo", "PushcampJournalAccess", "PushcampAPNs", "PushcampFCMCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "PushcampTestSupport",
            dependencies: [
                "PushcampAPNsCore", "PushcampAPNs",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            path: "Tests/PushcampTestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "PushcampModelTests", dependencies: ["PushcampModel"], swiftSettings: strict),
        .testTarget(
            name: "PushcampTemplatesTests",
            dependencies: ["PushcampTemplates", "PushcampModel"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampAudienceTests",
            dependencies: [
                "PushcampAudience", "PushcampModel", "PushcampTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampPlannerTests",
            dependencies: [
                "PushcampPlanner", "PushcampModel", "PushcampTemplates", "PushcampAudience", "PushcampTestSupport",
                "PushcampFCMCore",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampAPNsTests",
            dependencies: [
                "PushcampAPNs", "PushcampAPNsCore", "PushcampSimulator", "PushcampTestSupport", "PushcampFCMCore",
                "PushcampModel", "CNghttp2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampFCMTests",
            dependencies: [
                "PushcampFCMCore", "PushcampSimulator", "PushcampAPNsCore", "PushcampFCM", "PushcampJournal",
                "PushcampAPNs",
                "PushcampTestSupport",
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampSendTests",
            dependencies: [
                "PushcampSend", "PushcampRehearsal", "PushcampAPNs", "PushcampAPNsCore", "PushcampSimulator",
                "PushcampFCMCore", "PushcampFCM",
                "PushcampPlanner", "PushcampModel", "PushcampJournal",
                "PushcampTestSupport", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampJournalTests",
            dependencies: [
                "PushcampJournal", "PushcampModel", "PushcampTestSupport", "PushcampPostgres", "PushcampAPNsCore",
                "PushcampAudience",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampAppStoreTests",
            dependencies: [
                "PushcampAppStore", "PushcampTestSupport", "PushcampAPNsCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            resources: [.copy("Vectors")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampServeTests",
            dependencies: [
                "PushcampServe", "PushcampModel", "PushcampJournal", "PushcampTestSupport", "PushcampAppStore",
                "PushcampPlanner", "PushcampAPNs", "PushcampAPNsCore", "PushcampSend",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampReportTests",
            dependencies: ["PushcampReport", "PushcampJournal", "PushcampModel", "PushcampTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampCLITests",
            dependencies: [
                "pushcamp", "PushcampJournal", "PushcampTestSupport", "PushcampAPNsCore", "PushcampFCMCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The CI workflow `init` writes, read to run its steps.
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
    ]
)
