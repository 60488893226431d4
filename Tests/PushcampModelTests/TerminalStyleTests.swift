import PushcampModel
import Testing

@Suite("Terminal colour")
struct TerminalStyleTests {
    @Test func severitiesAreColouredWhereDiagnosticsSayThem() {
        #expect(
            TerminalStyle.diagnostics("campaigns/a.yaml:3:5: error: unknown key 'colour'")
                == "campaigns/a.yaml:3:5: \u{1B}[1;31merror:\u{1B}[0m unknown key 'colour'"
        )
        #expect(TerminalStyle.diagnostics("warning: old journal") == "\u{1B}[1;33mwarning:\u{1B}[0m old journal")
        #expect(TerminalStyle.diagnostics("note: kept apart") == "\u{1B}[1;36mnote:\u{1B}[0m kept apart")
        // A word inside a sentence is not a severity.
        #expect(TerminalStyle.diagnostics("3 campaigns valid, no error: none") == "3 campaigns valid, no error: none")
    }

    @Test func headingsAreTheLinesInTheFirstColumn() {
        #expect(
            TerminalStyle.headings("Variants\n  control  10\n\n") == "\u{1B}[1mVariants\u{1B}[0m\n  control  10\n\n"
        )
    }

    @Test func onlyATerminalWithoutNoColorIsStyled() {
        #expect(TerminalStyle.enabled(isTerminal: true, environment: [:]))
        #expect(TerminalStyle.enabled(isTerminal: true, environment: ["NO_COLOR": ""]))
        #expect(!TerminalStyle.enabled(isTerminal: true, environment: ["NO_COLOR": "1"]))
        #expect(!TerminalStyle.enabled(isTerminal: true, environment: ["TERM": "dumb"]))
        #expect(!TerminalStyle.enabled(isTerminal: false, environment: [:]))
    }
}
