import ArgumentParser
import Foundation
import PushcampJournal
import PushcampJournalAccess
import PushcampPlanner
import PushcampSend
import ServiceLifecycle

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send again to the recipients of a run whose push failed for the given reasons.",
        discussion: """
            After fixing what made pushes fail (the app's topic or key in pushcamp.yaml, an outage that outlasted the \
            retries), replay sends the same notification to exactly those recipients: the ones \
            whose final outcome in run RUN had one of the --reason values (APNs reasons such as \
            TopicDisallowed or ServiceUnavailable, FCM's as the report names them, such as \
            fcm/UNAVAILABLE, or Pushcamp's connection-lost; in any case). \
            Nobody else is sent anything. Recipients held back by refused credentials are not \
            failures: sending the campaign again resumes its run and sends them. Reasons APNs \
            never retries (DeviceTokenNotForTopic, Forbidden, PayloadTooLarge) need --force, given \
            once their cause is fixed, as do FCM's fcm/SENDER_ID_MISMATCH, fcm/INVALID_ARGUMENT and \
            fcm/THIRD_PARTY_AUTH_ERROR; dead tokens (BadDeviceToken, Unregistered, ExpiredToken, \
            fcm/UNREGISTERED) reach nobody and need it too.

            The replay plans the campaign file RUN was sent from again, so that file, its \
            templates and its audience must be unchanged (the same revision). It is a run of its \
            own in the journal (`pushcamp runs` shows it); a replay \
            killed part-way resumes when the same replay is started again. Dead-token suppression \
            and the frequency cap do not apply: the recipients are named by the run.

            Exit status as for `pushcamp send`; 1 also when no recipient of RUN failed for those \
            reasons.

            Examples:
              pushcamp replay 12 --reason ServiceUnavailable --reason connection-lost
              pushcamp replay 12 --reason DeviceTokenNotForTopic --force   # topic fixed
            """
    )

    @OptionGroup var journalOption: JournalOption

    @Argument(help: ArgumentHelp("The run to replay, as `pushcamp runs` shows it.", valueName: "run"))
    var number: Int64

    @Option(
        name: .customLong("reason"),
        help: ArgumentHelp("Required: a failure reason to replay (repeat it for several).", valueName: "reason")
    )
    var reasons: [String] = []

    @Flag(
        help: ArgumentHelp(
            "Replay reasons APNs never retries (DeviceTokenNotForTopic, PayloadTooLarge, dead tokens…).",
            discussion: "After fixing their cause: the same push would fail the same way."
        )
    )
    var force = false

    @Flag(name: .shortAndLong, help: "No progress line, only the report.")
    var quiet = false

    @OptionGroup var confirm: ConfirmOption

    @OptionGroup var stall: StallOption

    @OptionGroup var format: SendFormatOption

    func validate() throws {
        if reasons.isEmpty {
            throw ValidationError("name at least one --reason (an APNs reason such as ServiceUnavailable)")
        }
    }

    func run() async throws {
        try await journalOption.withJournal(forWriting: true) { journal, path in
            let selection = try await ReplaySelection.select(
                run: RunID(number),
                reasons: reasons,
                force: force,
                in: journal,
                path: path
            )
            let (campaign, paths) = try loadCampaign(selection.file)
            var options = SendRun.Options(
                try journalOption.location.access(campaign.journal),
                journal: journal,
                setting: journalOption.location.setting(campaign.journal)
            )
            options.kind = .replay(selection)
            options.stallTimeout = stall.stallTimeout
            try await confirmDeliberate(
                campaign,
                paths: paths,
                kind: options.kind,
                ignoreSchedule: false,
                planFile: false,
                confirm: confirm,
                preview: { selection.preview(of: campaign.id) }
            )
            try await sendToApp(
                campaign,
                paths: paths,
                options: options,
                quiet: quiet,
                format: format,
                announce: { send in send.note ?? selection.announcement(of: campaign.id, as: send.run.id) }
            )
        }
    }
}
