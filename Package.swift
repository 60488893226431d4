// swift-tools-version:6.1
import PackageDescription

// Module rules (see DESIGN.md): the model, templates, audiences and planner never import NIO;
// the `pushcamp` executable only parses arguments, builds the pipeline and prints.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "pushcamp",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushcamp", targets: ["pushcamp"]),
        .library(name: "PushcampPlanner", targets: ["PushcampPlanner"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        // Campaign and project files: schema, located diagnostics, durations, rates, filters.
        .target(
            name: "PushcampModel",
            dependencies: [.product(name: "Yams", package: "Yams")],
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
            dependencies: ["PushcampModel", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        // Campaign → Plan: loading, deterministic expansion, pre-flight checks, plan reports.
        .target(
            name: "PushcampPlanner",
            dependencies: [
                "PushcampModel", "PushcampTemplates", "PushcampAudience",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "pushcamp",
            dependencies: [
                "PushcampPlanner", "PushcampModel", "PushcampAudience",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .target(name: "PushcampTestSupport", path: "Tests/PushcampTestSupport", swiftSettings: strict),
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
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushcampCLITests",
            dependencies: ["pushcamp", "PushcampTestSupport"],
            swiftSettings: strict
        ),
    ]
)
