import Crypto
import Foundation

/// What `pushcamp init` writes: a project that validates, plans and rehearses as it is — pushcamp.yaml
/// with an iOS app and an Android app and every key commented, one campaign to both with its iOS
/// template and a tiny audience of both platforms, a .gitignore for the journal and credentials, and
/// a GitHub Actions workflow that checks campaigns and posts their plan on pull requests.
public enum ProjectScaffold {
    /// The pushcamp release the CI workflow installs: the tarball's URL, and the SHA-256 of the
    /// binary in it (the workflow refuses any other binary).
    public struct Release: Sendable, Hashable {
        public var version: String
        public var url: String
        public var binarySHA256: String
        /// Who signs the release: an `allowed_signers` line (`PRINCIPAL ssh-ed25519 KEY`) that
        /// `ssh-keygen -Y verify` checks the tarball's signature against; nil when unsigned.
        public var signer: String?

        public init(version: String, url: String? = nil, binarySHA256: String, signer: String? = nil) {
            self.version = version
            self.url = url ?? Self.url(version: version)
            self.binarySHA256 = binarySHA256
            self.signer = signer
        }

        /// The release of the binary running now (version `version`), pinned by its own SHA-256, and
        /// signed by `signer`, else by whom its release's SIGNERS file names (the folder above
        /// bin/ of an unpacked release; none for a binary built from source).
        public static func running(version: String, url: String?, signer: String?) throws -> Release {
            let executable = (Bundle.main.executableURL ?? URL(fileURLWithPath: "/proc/self/exe"))
                .resolvingSymlinksInPath()
            let data = try Data(contentsOf: executable)
            let hash = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
            let signers = executable.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("SIGNERS")
            let released = (try? String(contentsOf: signers, encoding: .utf8)).flatMap { text in
                text.split(separator: "\n").map(String.init).first { !$0.hasPrefix("#") && isSigner($0) }
            }
            return Release(version: version, url: url, binarySHA256: hash, signer: signer ?? released)
        }

        /// Whether `line` is one `allowed_signers` entry as the workflow writes it: a principal and
        /// an SSH public key, with nothing a YAML string or a shell could misread.
        public static func isSigner(_ line: String) -> Bool {
            let fields = line.split(separator: " ")
            guard fields.count >= 3, fields[1].hasPrefix("ssh-") || fields[1].hasPrefix("ecdsa-") else { return false }
            return line.unicodeScalars.allSatisfy {
                $0.isASCII && $0.value >= 0x20 && !"\"'\\`$".unicodeScalars.contains($0)
            }
        }

        /// Said when the binary pinning the workflow was built from source: no release has it.
        public static let sourceBuildWarning = """
            warning: this pushcamp is built from source, so the CI workflow pins the checksum of this \
            binary, which the release's binary does not match; run init with a packaged pushcamp, or put \
            the checksum from the release's SHA256SUMS in PUSHCAMP_SHA256 (.github/workflows/pushcamp.yml)
            """

        /// Where releases are published: `scripts/package.sh`'s tarball, attached to the
        /// release tagged `v`VERSION.
        public static func url(version: String) -> String {
            "https://github.com/pushcamp/pushcamp/releases/download/v\(version)/pushcamp-\(version)-linux-x86_64.tar.gz"
        }
    }

    /// The files, by path relative to the project.
    public static func files(bundleID: String = "com.example.app", release: Release) -> [(path: String, text: String)] {
        [
            ("pushcamp.yaml", projectFile(bundleID: bundleID)),
            ("campaigns/welcome.yaml", campaign),
            ("templates/welcome.yaml", template),
            ("audiences/welcome.csv", audience),
            (".gitignore", gitignore),
            (".github/workflows/pushcamp.yml", workflow(release)),
        ]
    }

    /// The journal, and credentials, which never go in git: Apple's keys and certificates, and
    /// Firebase service-account keys as Google names their downloads.
    static let gitignore = """
        .pushcamp/
        # Credentials: Apple's .p8 keys and .p12 certificates, Firebase service-account keys.
        *.p8
        *.p12
        *.pfx
        *service-account*.json
        *firebase-adminsdk*.json

        """

    /// What to do next in a project written into `directory` (as the user typed it).
    public static func nextSteps(directory: String) -> String {
        let cd = directory == "." ? "" : "cd \(directory) && "
        return """

            Next:
              \(cd)pushcamp plan campaigns/welcome.yaml        # what would be sent, to whom
              pushcamp rehearse campaigns/welcome.yaml              # the whole send, against a local APNs and FCM simulator
            Then put your team id, key id and key file in pushcamp.yaml, your Firebase service account's \
            key in FCM_SERVICE_ACCOUNT (docs/android.md), and `pushcamp send`.
            """
    }

    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
    }

    /// Writes the files into `directory` (created if missing). Refuses, writing nothing, when the
    /// directory holds anything already (hidden files included): init never overwrites.
    public static func write(
        into directory: URL,
        bundleID: String = "com.example.app",
        release: Release
    ) throws
        -> [String]
    {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw Refusal(description: "\(directory.path) is a file, not a folder; nothing was written")
            }
            let contents = try manager.contentsOfDirectory(atPath: directory.path)
            guard contents.isEmpty else {
                let shown = contents.sorted().prefix(3).joined(separator: ", ")
                throw Refusal(
                    description: """
                        \(directory.path) is not empty (\(shown)\(contents.count > 3 ? ", …" : "")); pushcamp init never \
                        overwrites anything, so nothing was written. Run it in a new or empty folder: pushcamp init DIR
                        """
                )
            }
        }
        var written: [String] = []
        for (path, text) in files(bundleID: bundleID, release: release) {
            let url = directory.appendingPathComponent(path)
            try manager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url, options: .withoutOverwriting)
            written.append(path)
        }
        return written
    }

    /// The team id and key id the scaffold's pushcamp.yaml holds until the team puts its own:
    /// `serve` refuses to be ready with them when an app sends to Apple.
    public static let placeholderTeamID = "ABCDE12345"
    public static let placeholderKeyID = "KEY1234567"

    static func projectFile(bundleID: String) -> String {
        """
        # Pushcamp project file: what the campaigns of this repository share (docs/campaign-format.md).
        # Paths are relative to this file. Secrets stay out of git: name them with ${env:NAME}.
        apps:
          app-ios:
            topic: \(bundleID)                # the bundle id; push types add their suffix
            team_id: \(placeholderTeamID)               # your Apple developer team id
            key_id: \(placeholderKeyID)                # the id of your APNs auth key
            key_file: ${env:APNS_KEY_FILE}    # the .p8 key, read only when sending
            environment: sandbox              # production once you are ready
            # certificate: ${env:APNS_CERT}   # instead of a key: a .p12 or PEM client certificate
            # app_store:                      # receive App Store Server Notifications (docs/app-store.md)
            #   bundle_id: \(bundleID)
            #   app_apple_id: 1234567890
            #   environments: [production, sandbox]
          app-android:
            service_account: ${env:FCM_SERVICE_ACCOUNT}   # the Firebase service account's JSON key (a path, or
                                                          # the JSON itself), read only when sending
            # project_id: my-project          # default: the service account's project
            # quota: 600000/min               # the project's FCM quota: no run sends faster

        journal:
          path: .pushcamp/journal.sqlite      # every run, dead tokens, schedule slots (git-ignored)

        defaults:
          throttle: { rate: 1000/s, connections: 1 }
          expiration: 24h                     # how long APNs and FCM keep trying an offline device
          # frequency_cap: { max: 2, per: 24h }

        # serve:                              # `pushcamp serve`: scheduled campaigns, health, metrics
        #   listen: 127.0.0.1:8080
        #   campaigns: [campaigns]

        """
    }

    static let campaign = """
        # A first campaign: `pushcamp validate`, `pushcamp plan` and `pushcamp rehearse` work on it as it is.
        campaign: welcome
        description: Say hello to new users
        app: [app-ios, app-android]                # one app, or an iOS app and an Android app

        audience:
          source: { csv: audiences/welcome.csv }   # a token column, a platform column and any attributes
          where: "opted_in"                        # optional filter on attributes
          # Real audiences stay out of git: name the file through the environment, and commit a
          # sample (made-up rows, the real columns) that pull requests are planned against:
          # source: { csv: "${env:AUDIENCES}/welcome.csv" }
          # sample: { csv: audiences/welcome.sample.csv }

        message:
          payload: templates/welcome.yaml          # what iPhones get (APNs JSON)
          title: "Welcome{{#first_name}}, {{.}}{{/first_name}}!"   # what Android phones show
          body: "Thanks for joining. Here is what is new this week."
          android: { channel_id: news }            # FCM's own fields (docs/android.md)
          collapse_id: welcome

        # schedule: { cron: "0 9 * * MON", timezone: Europe/Paris }   # sent by `pushcamp serve`
        # quiet_hours: { from: "21:00", to: "08:00", timezone: Europe/Paris }

        """

    static let template = """
        # The payload, with Mustache tags filled from each recipient's attributes.
        aps:
          alert:
            title: "Welcome{{#first_name}}, {{.}}{{/first_name}}!"
            body: "Thanks for joining. Here is what is new this week."
          sound: default

        """

    static let audience = """
        token,platform,first_name,opted_in
        3f1d6f0c2b9a4e7d8c5b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d,ios,Ada,true
        8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b,ios,Grace,true
        0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0,ios,,true
        c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00,ios,Linus,false
        eHcV1xQ0TlqG3zFw8mRk2p:APA91bFq7Kx2Nw5Yt8Jr3Lc6Vb9Hs1Dp4Gm7Qz0Xe3Wa6Ru9Ti2Oy5Pk8Lj1Mh4Nf7Bd0Cs3,android,Hedy,true
        dK8sLq2Wm5Xp0Ry3Tz6Vb:APA91bHn4Qe7Ur0Ix3Ok6Pl9As2Df5Gh8Jk1Lz4Xc7Vb0Nm3Qw6Er9Ty2Ui5Op8As1Dg4Fh7,android,,true

        """

    /// The GitHub Actions workflow: installs the pinned release (its signature checked against the
    /// pinned signer, its binary against the pinned checksum), checks every campaign as a pull
    /// request's CI can (`validate --review`), plans the campaigns the pull request touches
    /// (`pushcamp review`), keeps the full plan as the job's artifact and posts a comment that fits
    /// GitHub's limit; it fails when a campaign is invalid or has pushes APNs or FCM would refuse.
    /// Its `run:` steps use no `${{ }}` expressions (values come in through `env:`), so a pull
    /// request's text never becomes shell, and a test runs them as written.
    static func workflow(_ release: Release) -> String {
        """
        # On pull requests: checks every campaign `pushcamp serve` watches, plans those the pull
        # request touches (a campaign, a template, strings or audience it reads, pushcamp.yaml) and
        # posts what they would send. Real audiences stay out of git: a campaign plans against its
        # audience.sample (made-up rows with the real columns), tokens are masked and copy is rendered
        # for made-up or masked recipients only. The job fails when a campaign is invalid (exit 1) or
        # would send pushes APNs or FCM refuse, or too many invalid tokens (exit 3).
        name: pushcamp
        on:
          pull_request:
            # Every change runs it: campaign folders are wherever serve.campaigns says. To save minutes,
            # list them: paths: ["campaigns/**", "templates/**", "strings/**", "audiences/**", "pushcamp.yaml"]
        permissions:
          contents: read
          pull-requests: write
        env:
          # The pushcamp this project was set up with (`pushcamp init`): its release tarball, the
          # SHA-256 of the binary in it, and who signs its releases (an SSH key; the tarball's
          # signature is the URL with .sig). To upgrade, change the first three together: a
          # release's SHA256SUMS holds the checksum of its bin/pushcamp. docs/release.md says more.
          PUSHCAMP_VERSION: "\(release.version)"
          PUSHCAMP_URL: "\(release.url)"
          PUSHCAMP_SHA256: "\(release.binarySHA256)"
          PUSHCAMP_SIGNER: "\(release.signer ?? "")"
        jobs:
          review:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/checkout@v4
                with:
                  # The pull request's merge commit and the base it is made on: what it changes.
                  fetch-depth: 2
              - name: Install pushcamp
                run: |
                  mkdir -p "$RUNNER_TEMP/pushcamp"
                  tarball="$RUNNER_TEMP/pushcamp.tar.gz"
                  curl --fail --silent --show-error --location --retry 3 --output "$tarball" "$PUSHCAMP_URL"
                  if [ -n "$PUSHCAMP_SIGNER" ]; then
                    curl --fail --silent --show-error --location --retry 3 --output "$tarball.sig" "$PUSHCAMP_URL.sig"
                    echo "$PUSHCAMP_SIGNER" > "$RUNNER_TEMP/allowed_signers"
                    ssh-keygen -Y verify -f "$RUNNER_TEMP/allowed_signers" -I "${PUSHCAMP_SIGNER%% *}" \\
                      -n pushcamp-release -s "$tarball.sig" < "$tarball"
                  else
                    echo "::warning::no release signer is pinned (PUSHCAMP_SIGNER): only the binary's checksum is checked"
                  fi
                  tar -xzf "$tarball" -C "$RUNNER_TEMP/pushcamp" --strip-components=1
                  echo "$PUSHCAMP_SHA256  $RUNNER_TEMP/pushcamp/bin/pushcamp" | sha256sum --check --strict
                  "$RUNNER_TEMP/pushcamp/bin/pushcamp" --version
                  echo "$RUNNER_TEMP/pushcamp/bin" >> "$GITHUB_PATH"
              - name: Validate and plan
                run: |
                  status=0
                  pushcamp validate --format github --review || status=1
                  git diff --name-only HEAD^1 HEAD > "$RUNNER_TEMP/changed.txt"
                  code=0
                  pushcamp review --changed "$RUNNER_TEMP/changed.txt" \\
                    --comment "$RUNNER_TEMP/comment.md" --full "$RUNNER_TEMP/plan.md" || code=$?
                  [ "$code" -eq 0 ] || status=$code
                  cat "$RUNNER_TEMP/plan.md" >> "$GITHUB_STEP_SUMMARY"
                  exit "$status"
              - name: Keep the full plan
                if: always()
                uses: actions/upload-artifact@v4
                with:
                  name: pushcamp-plan
                  path: ${{ runner.temp }}/plan.md
                  if-no-files-found: ignore
              - name: Post the plans on the pull request
                if: always() && github.event_name == 'pull_request'
                env:
                  GH_TOKEN: ${{ github.token }}
                  PR: ${{ github.event.pull_request.number }}
                run: |
                  comment="$RUNNER_TEMP/comment.md"
                  [ -s "$comment" ] || exit 0
                  gh pr comment "$PR" --edit-last --body-file "$comment" 2>/dev/null \\
                    || gh pr comment "$PR" --body-file "$comment"

        """
    }
}
