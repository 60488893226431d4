import ArgumentParser
import Foundation
import PushcampBuildInfo
import PushcampPlanner

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start a project: pushcamp.yaml, a campaign, its template and audience, CI.",
        discussion: """
            Writes, into DIR (default: the current folder), a project that validates, plans and \
            rehearses as it is: pushcamp.yaml with an iOS app (app-ios) and an Android app \
            (app-android, sent through FCM) and their keys commented, campaigns/welcome.yaml to \
            both with templates/welcome.yaml (the iOS payload; Android phones show the campaign's \
            title and body) and a six-row audiences/welcome.csv of both platforms, a .gitignore for \
            the journal (.pushcamp/), and .github/workflows/pushcamp.yml. A team without an Android \
            app deletes app-android and names app-ios alone in the campaign. On each pull request that \
            workflow installs this very pushcamp (the release tarball of this version, its signature \
            checked against the signer of this release, its binary against the SHA-256 of the binary \
            running init), runs `validate --review --format github`, plans the campaigns the pull \
            request touches with `pushcamp review` (samples instead of real audiences, tokens \
            masked), posts the plan as a comment, keeps it in full as the job's artifact and fails \
            when a campaign is invalid or would send pushes APNs or FCM refuse. It never \
            overwrites: a folder that holds anything is refused and nothing is written.

            A team that mirrors releases inside its network passes the mirror's URL with \
            --release-url; one that signs its mirror with its own SSH key passes that key's \
            allowed_signers line with --release-signer (docs/release.md).

            Examples:
              pushcamp init my-pushes && cd my-pushes
              pushcamp rehearse campaigns/welcome.yaml
              pushcamp init --bundle-id com.example.shop
              pushcamp init --release-url https://mirror.internal/pushcamp-0.1.0.tar.gz
            """
    )

    @Argument(help: ArgumentHelp("The folder to create the project in.", valueName: "dir"))
    var directory: String = "."

    @Option(help: ArgumentHelp("The app's bundle id, written as its topic.", valueName: "id"))
    var bundleID: String = "com.example.app"

    @Option(
        help: ArgumentHelp(
            "Where the CI workflow downloads pushcamp's release tarball (default: this version's release).",
            discussion: "For a mirror of the release inside your network; any URL curl reads.",
            valueName: "url"
        )
    )
    var releaseURL: String?

    @Option(
        help: ArgumentHelp(
            "Who signs the release the workflow installs: an allowed_signers line, 'PRINCIPAL ssh-ed25519 KEY' (default: the signer of this release).",
            valueName: "line"
        )
    )
    var releaseSigner: String?

    func validate() throws {
        if let releaseSigner, !ProjectScaffold.Release.isSigner(releaseSigner) {
            throw ValidationError(
                "--release-signer takes an allowed_signers line: a principal, then an SSH public key (ssh-ed25519 AAAA…), without quotes or $"
            )
        }
        guard !bundleID.isEmpty,
            bundleID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-".contains($0)) })
        else { throw ValidationError("--bundle-id takes a bundle id like com.example.shop") }
        if let releaseURL {
            let schemes = ["https://", "http://", "file://"]
            guard schemes.contains(where: releaseURL.lowercased().hasPrefix),
                releaseURL.unicodeScalars.allSatisfy({
                    $0.isASCII && $0.value > 0x20 && !"\"'\\`$".unicodeScalars.contains($0)
                })
            else {
                throw ValidationError(
                    "--release-url takes an https://, http:// or file:// URL without spaces, quotes or $ (it is written into the workflow)"
                )
            }
        }
    }

    func run() throws {
        let url = URL(
            fileURLWithPath: directory,
            relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        ).standardizedFileURL
        let release: ProjectScaffold.Release
        do {
            release = try .running(version: BuildInfo.version, url: releaseURL, signer: releaseSigner)
        } catch {
            throw Failure(
                "error: cannot read this pushcamp's own binary to pin it in the CI workflow: \(error)",
                exitCode: 1
            )
        }
        let written: [String]
        do {
            written = try ProjectScaffold.write(into: url, bundleID: bundleID, release: release)
        } catch let refusal as ProjectScaffold.Refusal {
            throw Failure("error: \(refusal)", exitCode: 1)
        } catch {
            throw Failure("error: cannot write the project into \(directory): \(error)", exitCode: 1)
        }
        print("Created a Pushcamp project in \(directory == "." ? "this folder" : directory):")
        for path in written { print("  \(path)") }
        print(ProjectScaffold.nextSteps(directory: directory))
        if !BuildInfo.packaged { printError(ProjectScaffold.Release.sourceBuildWarning) }
    }
}
