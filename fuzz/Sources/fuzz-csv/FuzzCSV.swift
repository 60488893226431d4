import FuzzSupport
import PushcampAudience
import PushcampModel

/// A CSV audience: every row read, or an error at a line of the file; and the token-only pass
/// (the duplicate search, with its own fast path for plain lines) reads the same tokens at the same
/// rows, or stops at the same error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let path = writeInput(bytes(start, count), suffix: ".csv")
    let source = CSVSource(path: path, name: "a.csv", location: SourceLocation(path: "c.yaml", line: 4, column: 11))
    func read(tokensOnly: Bool) -> [String] {
        var outline: [String] = []
        do {
            _ = try source.columns()
            try source.forEachRow(tokensOnly: tokensOnly) { outline.append("\($0.row):\($0.token ?? "-")") }
        } catch let error as AudienceError {
            requireLocated([error.diagnostic], "CSV")
            outline.append(error.description)
        } catch {
            preconditionFailure("CSV: an error that is not an AudienceError: \(error)")
        }
        return outline
    }
    let full = read(tokensOnly: false)
    precondition(read(tokensOnly: true) == full, "CSV: the token-only pass disagrees with a full read")
    return 0
}
