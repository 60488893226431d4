/// What this build of pushcamp is: its version, and the git commit it was built from (written
/// before each build by `BuildInfoPlugin`). `pushcamp --version` and serve's `pushcamp_build_info`
/// say them.
public enum BuildInfo {
    public static let version = "0.1.0"
}
