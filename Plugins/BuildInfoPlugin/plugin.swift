import Foundation
import PackagePlugin

/// Writes what the package is built from into `BuildCommit.swift` before every build
/// (`PushcampBuildInfo.BuildInfo`: `pushcamp --version`, `pushcamp_build_info` in serve's
/// metrics): the git commit (`unknown` outside a git checkout, `-dirty` after it when tracked files
/// differ from it), the time of the build, and whether it is a packaged release: a build into
/// `.build-dist`, scripts/package.sh's build folder. The file is rewritten only when the commit or
/// the kind changes, so a build at the same commit compiles nothing again; the time is that of the
/// first build at this commit (scripts/package.sh removes the file, so a package says when it was
/// built).
@main
struct BuildInfoPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("generated")
        let file = output.appendingPathComponent("BuildCommit.swift")
        let script = """
            mkdir -p "$2"
            commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
            if [ "$commit" != unknown ] && [ -n "$(git -C "$1" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
                commit="$commit-dirty"
            fi
            packaged=$4
            key="// Written by BuildInfoPlugin: $commit packaged=$packaged"
            if [ -f "$3" ] && [ "$(head -n 1 "$3")" = "$key" ]; then exit 0; fi
            built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
            printf '%s\\nextension BuildInfo {\\n    public static let commit = "%s"\\n    public static let built = "%s"\\n    public static let packaged = %s\\n}\\n' "$key" "$commit" "$built" "$packaged" > "$3.new"
            mv "$3.new" "$3"
            """
        return [
            .prebuildCommand(
                displayName: "Recording the git commit of the build",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [
                    "-c", script, "sh", context.package.directoryURL.path, output.path, file.path,
                    context.pluginWorkDirectoryURL.path.contains("/.build-dist/") ? "true" : "false",
                ],
                outputFilesDirectory: output
            )
        ]
    }
}
