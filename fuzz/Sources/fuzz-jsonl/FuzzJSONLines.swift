import FuzzSupport
import PushcampAudience
import PushcampModel

/// A JSON Lines audience, and the JSON parser on the whole input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = bytes(start, count)
    do {
        _ = try JSONParser.parse(Array(input))
    } catch {
        precondition(error.offset >= 0 && error.offset <= count, "offset outside the input")
    }
    let path = writeInput(input, suffix: ".jsonl")
    let source = JSONLinesSource(
        path: path,
        name: "a.jsonl",
        location: SourceLocation(path: "c.yaml", line: 4, column: 11)
    )
    do {
        try source.forEachRow(tokensOnly: false) { _ in }
    } catch let error as AudienceError {
        requireLocated([error.diagnostic], "JSON Lines")
    } catch {
        preconditionFailure("JSON Lines: an error that is not an AudienceError: \(error)")
    }
    return 0
}
