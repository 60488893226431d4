import Foundation
import PushcampSend
import Testing

@Suite("The progress line")
struct ProgressLineTests {
    static let busy = SendProgress(
        planned: 50_000,
        planFinished: true,
        delivered: 21_000,
        failed: 340,
        waitingToRetry: 120,
        nextRetryIn: 42,
        inFlight: 800,
        onTheWire: 600,
        queued: 3_000,
        seconds: 10,
        topFailures: [("Unregistered", 300), ("BadDeviceToken", 40)],
        retries: [("TooManyRequests", 150), ("ServiceUnavailable", 30)]
    )

    @Test(arguments: [20, 40, 60, 79, 120, 200])
    func itNeverOutgrowsTheTerminal(width: Int) {
        let line = Self.busy.line(width: width, color: false)
        #expect(line.count <= width, "\(line)")
        #expect(line.hasPrefix("21340/50000"))
    }

    /// A worker on a run cut into slices shows the whole run first, then its own part.
    @Test func aSliceWorkerShowsTheWholeRunFirst() {
        var progress = Self.busy
        progress.run = SendProgress.RunWide(
            answered: 120_000,
            planned: 300_000,
            slicesDone: 12,
            slices: 36,
            slicesHeld: 3
        )
        #expect(
            progress.line(width: 79, color: false)
                == "run 120000/300000 · slices 12/36 done, 3 sending · here 21340/50000"
        )
        #expect(progress.line(width: 20, color: false).hasPrefix("run 120000/300000"))
    }

    @Test func atEightyColumnsTheEssentialsStayAndTheRestGoesInOrder() {
        // An 80-column terminal leaves 79 for the line (the cursor must not wrap).
        #expect(
            Self.busy.line(width: 79, color: false)
                == "21340/50000 · delivered 21000 · failed 340 · retrying 120 in 42 s · ETA 42 s"
        )
        #expect(Self.busy.line(width: 42, color: false) == "21340/50000 · delivered 21000 · failed 340")
        #expect(
            Self.busy.line(width: nil, color: false)
                == "21340/50000 · delivered 21000 · failed 340 · retrying 120 in 42 s · ETA 42 s · in flight 800 · 2134/s · retries: TooManyRequests 150, ServiceUnavailable 30 · failed: Unregistered 300, BadDeviceToken 40 · queued 3000"
        )
    }

    @Test func theETACountsTheBackOffOfWaitingRetries() {
        // 100 left at 100/s is one second, but a retry waits 30 s more: the send cannot end before.
        let waiting = SendProgress(
            planned: 1_000,
            planFinished: true,
            delivered: 900,
            failed: 0,
            waitingToRetry: 100,
            nextRetryIn: 30,
            seconds: 9
        )
        #expect(waiting.eta == 30)
        let plain = SendProgress(planned: 1_000, planFinished: true, delivered: 900, failed: 0, seconds: 9)
        #expect(plain.eta == 1)
        // Without the whole plan, or before the first answer, there is no ETA.
        #expect(SendProgress(planned: 1_000, planFinished: false, delivered: 900, failed: 0, seconds: 9).eta == nil)
        #expect(SendProgress(planned: 1_000, planFinished: true, delivered: 0, failed: 0, seconds: 0).eta == nil)
    }

    /// While the plan is being read, the line shows what was handed over with a "+"; once the
    /// counting pass has the total, it shows that, and an ETA against it.
    @Test func aTotalCountedAheadOfThePlanGivesTheLineItsTotalAndAnETA() {
        let reading = SendProgress(planned: 2_000, planFinished: false, delivered: 900, failed: 100, seconds: 10)
        #expect(reading.line(width: nil, color: false).hasPrefix("1000/2000+ · delivered 900"))
        #expect(reading.eta == nil)
        var counted = reading
        counted.expected = 50_000
        #expect(counted.line(width: nil, color: false).hasPrefix("1000/50000 · delivered 900"))
        // 49,000 left at 100/s.
        #expect(counted.eta == 490)
        // Once the plan is finished its own total counts.
        counted.planFinished = true
        counted.planned = 49_000
        #expect(counted.total == 49_000)
    }

    @Test func aResumedRunCountsWhatItHadAnsweredAndTheRateIsTheLastSeconds() {
        // 11,844 answered before the resume, 20 since: the line shows the run, not this process.
        var resumed = SendProgress(planned: 11_875, planFinished: true, delivered: 20, failed: 0, seconds: 40)
        resumed.settledBefore = 11_844
        #expect(resumed.line(width: nil, color: false).hasPrefix("11864/11875 · delivered 20 · failed 0 · "))
        // 11 left at the recent 5/s: about 2 s; the average since the start (0.5/s) would say 22.
        resumed.recentRate = 5
        #expect(resumed.eta.map { ($0 * 10).rounded() / 10 } == 2.2)
        #expect(resumed.line(width: nil, color: false).contains(" · 5/s"))

        // 1,000 a second for 10 s, then nothing: the rate of the last 5 s falls to 0 once the
        // window has passed, where the average since the start still said 500/s at 20 s.
        var window = RateWindow(seconds: 5)
        var rates: [Double?] = []
        for second in 0...20 {
            rates.append(window.add(at: Double(second), answered: min(second, 10) * 1_000))
        }
        #expect(rates[0] == nil)
        #expect(rates[5] == 1_000)
        #expect(rates[10] == 1_000)
        #expect(rates[13] == 400)
        #expect(rates[15] == 0)
        #expect(rates[20] == 0)
    }

    @Test func colourOnlyWhenAsked() {
        #expect(!Self.busy.line(width: nil, color: false).contains("\u{1B}["))
        let coloured = Self.busy.line(width: 79, color: true)
        #expect(coloured.contains("\u{1B}[32m21000\u{1B}[0m"))
        // Colour codes take no columns: the visible text is the uncoloured line.
        var visible = coloured
        for code in ["\u{1B}[32m", "\u{1B}[31m", "\u{1B}[33m", "\u{1B}[0m"] {
            visible = visible.replacingOccurrences(of: code, with: "")
        }
        #expect(visible == Self.busy.line(width: 79, color: false))
    }
}
