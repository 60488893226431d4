import FuzzSupport
import PushcampAudience
import PushcampModel

/// A CSV audience: every row read, or an error at a line of the file.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let path = writeInput(bytes(start, count), suffix: ".csv")
    let source = CSVSource(path: path, name: "a.csv", location: SourceLocation(path: "c.yaml", line: 4, column: 11))
    do {
        _ = try source.columns()
        try source.forEachRow(tokensOnly: false) { _ in }
    } catch let error as AudienceError {
        requireLocated([error.diagnostic], "CSV")
    } catch {
        preconditionFailure("CSV: an error that is not an AudienceError: \(error)")
    }
    return 0
}
