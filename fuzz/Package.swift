// swift-tools-version:6.1
import PackageDescription

// Coverage-guided fuzz targets (libFuzzer), one executable each, apart from the main package so
// its build is unaffected. Build and run one with `scripts/fuzz.sh TARGET SECONDS`; each input
// must give a value or located errors, never a trap, a hang or unbounded memory.
let targets = ["fuzz-campaign", "fuzz-filter", "fuzz-template", "fuzz-csv", "fuzz-jsonl", "fuzz-run-stats"]

let package = Package(
    name: "pushcamp-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "pushcamp", path: "..")],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "PushcampModel", package: "pushcamp"),
                .product(name: "PushcampTemplates", package: "pushcamp"),
                .product(name: "PushcampAudience", package: "pushcamp"),
                .product(name: "PushcampJournal", package: "pushcamp"),
            ]
        )
    ]
        + targets.map { name in
            .executableTarget(
                name: name,
                dependencies: ["FuzzSupport"],
                // libFuzzer brings main(); the target only defines LLVMFuzzerTestOneInput.
                swiftSettings: [.unsafeFlags(["-parse-as-library"])]
            )
        }
)
