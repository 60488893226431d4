import ArgumentParser
import Foundation
import NIOCore
import PushcampSimulator

/// Simulator options shared by `sim` and `rehearse`.
struct SimulatorFaults: ParsableArguments {
    @Option(help: ArgumentHelp("Device behaviours: a file of `TOKEN BEHAVIOUR` lines.", valueName: "file"))
    var tokens: String?

    @Option(help: "The stream limit announced after the first authenticated request.")
    var maxStreams: Int = 500

    @Option(help: ArgumentHelp("Send GOAWAY after this many requests on each connection.", valueName: "n"))
    var goawayAfter: Int?

    @Option(help: ArgumentHelp("Drop each connection, streams in flight, after this many requests.", valueName: "n"))
    var dropAfter: Int?

    @Option(help: ArgumentHelp("Delay before every answer, in milliseconds.", valueName: "ms"))
    var latency: Int = 0

    @Option(help: ArgumentHelp("Share of requests answered 500 InternalServerError (0…1).", valueName: "share"))
    var errorRate: Double = 0

    func validate() throws {
        if maxStreams < 1 { throw ValidationError("--max-streams must be 1 or more") }
        if !(0...1).contains(errorRate) { throw ValidationError("--error-rate must be between 0 and 1") }
        if latency < 0 { throw ValidationError("--latency must be 0 or more") }
        if let goawayAfter, goawayAfter < 1 { throw ValidationError("--goaway-after must be 1 or more") }
        if let dropAfter, dropAfter < 1 { throw ValidationError("--drop-after must be 1 or more") }
    }

    func tokenRules() throws -> [String: TokenBehaviour] {
        guard let tokens else { return [:] }
        let text: String
        do {
            text = try String(contentsOfFile: tokens, encoding: .utf8)
        } catch {
            printError("\(tokens): error: cannot read the tokens file")
            throw ExitCode(1)
        }
        do {
            return try TokenBehaviour.parseFile(text, path: tokens)
        } catch {
            printError(error.description)
            throw ExitCode(1)
        }
    }

    func apply(to configuration: inout SimulatorConfiguration) {
        configuration.maxConcurrentStreams = UInt32(maxStreams)
        configuration.goawayAfter = goawayAfter
        configuration.dropAfter = dropAfter
        configuration.latency = .milliseconds(Int64(latency))
        configuration.errorRate = errorRate
    }
}
