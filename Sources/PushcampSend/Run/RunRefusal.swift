/// Why a send (or a cancel, or a replay) does not start: its schedule, its credentials, a journal
/// that cannot be used, a campaign already sent or changed under an unfinished run, another
/// process sending it. Nothing is recorded when it is thrown. Callers branch on `code`, never on
/// the message.
public struct RunRefusal: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        /// The command's exit status for it.
        public let exitCode: Int32

        private init(_ name: String, exitCode: Int32) {
            self.name = name
            self.exitCode = exitCode
        }

        /// Refused on purpose: the campaign, the plan file or the run named does not allow it
        /// (scheduled for `serve`, sent already, changed since, nothing to replay…).
        public static let refused = Code("refused", exitCode: 1)
        /// The journal cannot be opened, read or written.
        public static let journal = Code("journal", exitCode: 1)
        /// The app's credentials or endpoint cannot be used.
        public static let credentials = Code("credentials", exitCode: 2)
        /// The app's credentials are held back for a while: APNs refused a provider token as too
        /// frequent, here or on a node sharing the journal, and no token may be minted yet. Not a
        /// reason to give a slot up: `serve` tries it again.
        public static let held = Code("held", exitCode: 2)
        /// Another process is sending the campaign.
        public static let busy = Code("busy", exitCode: 5)
        /// `cancel`: the sending process did not stop in time.
        public static let notStopped = Code("not-stopped", exitCode: 6)
        /// A schedule slot or trigger firing recorded already (fired or skipped, here or by another
        /// process): not an error for `serve`, which simply does not fire it again.
        public static let recorded = Code("recorded", exitCode: 1)
        /// A slot of a campaign whose run of an earlier slot is unfinished (its sender stopped, or
        /// lost the journal past its lease): that run is finished first (`serve` resumes it).
        public static let behind = Code("behind", exitCode: 5)
        /// The unfinished run of a recorded slot or firing was given up (the campaign changed since it
        /// was planned): the slot or firing is over.
        public static let givenUp = Code("given-up", exitCode: 1)

        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The command's exit status: 1 refused, or the journal; 2 credentials; 5 another process sends
    /// the campaign; 6 a cancel that did not stop the sender in time.
    public var exitCode: Int32 { code.exitCode }

    public var description: String { message }
}
