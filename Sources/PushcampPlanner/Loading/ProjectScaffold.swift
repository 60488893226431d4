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

        public init(version: String, url: String? = nil, binarySHA256: String) {
            self.version = version
            self.url = url ?? Self.url(version: version)
            self.binarySHA256 = binarySHA256
        }

        /// The release of the binary running now (version `version`), pinned by its own SHA-256.
        public static func running(version: String, url: String?) throws -> Release {
            let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: "/proc/self/exe")
            let data = try Data(contentsOf: executable.resolvingSymlinksInPath())
            let hash = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
            return Release(version: version, url: url, binarySHA256: hash)
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

    /// The GitHub Actions workflow: installs the pinned release, checks the project and every
    /// campaign, posts their plans on the pull request, and fails when a campaign is invalid or has
    /// pushes APNs or FCM would refuse. Its `run:` steps use no `${{ }}` expressions (values come in through
    /// `env:`), so a pull request's text never becomes shell, and a test runs them as written.
    static func workflow(_ release: Release) -> String {
        """
        # Checks the project and every campaign on pull requests, and posts what each campaign would
        # send. The job fails when a campaign is invalid (validate, or plan exit 1) or would send
        # pushes that APNs or FCM refuses (plan exit 3), so such a change cannot be merged unnoticed.
        name: pushcamp
        on:
          pull_request:
            paths:
              - "campaigns/**"
              - "templates/**"
              - "strings/**"
              - "audiences/**"
              - "pushcamp.yaml"
              - ".github/workflows/pushcamp.yml"
        permissions:
          contents: read
          pull-requests: write
        env:
          # The pushcamp this project was set up with (`pushcamp init`): its release tarball and the
          # SHA-256 of the binary in it. To upgrade, change the three together: a release's
          # SHA256SUMS holds the checksum of its bin/pushcamp.
          PUSHCAMP_VERSION: "\(release.version)"
          PUSHCAMP_URL: "\(release.url)"
          PUSHCAMP_SHA256: "\(release.binarySHA256)"
        jobs:
          plan:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/checkout@v4
              - name: Install pushcamp
                run: |
                  mkdir -p "$RUNNER_TEMP/pushcamp"
                  curl --fail --silent --show-error --location --retry 3 "$PUSHCAMP_URL" \\
                    | tar -xz -C "$RUNNER_TEMP/pushcamp" --strip-components=1
                  echo "$PUSHCAMP_SHA256  $RUNNER_TEMP/pushcamp/bin/pushcamp" | sha256sum --check --strict
                  "$RUNNER_TEMP/pushcamp/bin/pushcamp" --version
                  echo "$RUNNER_TEMP/pushcamp/bin" >> "$GITHUB_PATH"
              - name: Validate and plan
                run: |
                  status=0
                  pushcamp validate --format github || status=1
                  plan="$RUNNER_TEMP/plan.md"
                  : > "$plan"
                  for campaign in campaigns/*.yaml campaigns/*.yml; do
                    [ -e "$campaign" ] || continue
                    code=0
                    pushcamp plan --format markdown "$campaign" >> "$plan" || code=$?
                    case "$code" in
                      0) ;;
                      3) echo "**$campaign: APNs or FCM would refuse some of these pushes (plan exit 3).**" >> "$plan"; status=1 ;;
                      *) echo "**$campaign: not planned (plan exit $code); the job's log says why.**" >> "$plan"; status=1 ;;
                    esac
                    echo >> "$plan"
                  done
                  cat "$plan" >> "$GITHUB_STEP_SUMMARY"
                  exit "$status"
              - name: Post the plans on the pull request
                if: always() && github.event_name == 'pull_request'
                env:
                  GH_TOKEN: ${{ github.token }}
                  PR: ${{ github.event.pull_request.number }}
                run: |
                  plan="$RUNNER_TEMP/plan.md"
                  [ -s "$plan" ] || exit 0
                  gh pr comment "$PR" --edit-last --body-file "$plan" 2>/dev/null \\
                    || gh pr comment "$PR" --body-file "$plan"

        """
    }
}
