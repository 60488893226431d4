import Foundation
import PackagePlugin

/// Writes the git commit the package is built from into `BuildCommit.swift` before every build
/// (`PushcampBuildInfo.BuildInfo.commit`, `pushcamp_build_info` in serve's metrics); `unknown`
/// outside a git checkout. The file is rewritten only when the commit changes, so a build at the
/// same commit compiles nothing again.
@main
struct BuildInfoPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("generated")
        let file = output.appendingPathComponent("BuildCommit.swift")
        let script = """
            mkdir -p "$2"
            commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
            printf '// Written by BuildInfoPlugin before each build.\\nextension BuildInfo {\\n    public static let commit = "%s"\\n}\\n' "$commit" > "$3.new"
            if cmp -s "$3.new" "$3"; then rm -f "$3.new"; else mv "$3.new" "$3"; fi
            """
        return [
            .prebuildCommand(
                displayName: "Recording the git commit of the build",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "sh", context.package.directoryURL.path, output.path, file.path],
                outputFilesDirectory: output
            )
        ]
    }
}
