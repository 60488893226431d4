/// What this build of pushcamp is: its version, and (written before each build by
/// `BuildInfoPlugin`) the git commit it was built from, when it was built, and whether it is a
/// packaged release (scripts/package.sh) or a build from source. `pushcamp --version` and serve's
/// `pushcamp_build_info` say them.
public enum BuildInfo {
    public static let version = "0.1.0"

    /// One line: `0.1.0 (commit 91a3e46c1f2e, built 2026-11-27T05:00:00Z, release)`.
    public static var summary: String {
        "\(version) (commit \(commit), built \(built), \(packaged ? "release" : "source build"))"
    }
}
