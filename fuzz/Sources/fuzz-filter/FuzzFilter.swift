import FuzzSupport
import PushcampModel

/// A `where:` condition: parsed to an expression (then evaluated) or an error at an offset inside it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: bytes(start, count), as: UTF8.self)
    switch FilterParser.parse(text) {
    case .success(let expression):
        let attributes = Attributes(["tier": .string("gold"), "n": .integer(3), "opted_in": .bool(true)])
        _ = expression.matches(attributes)
    case .failure(let error):
        precondition(error.offset >= 0 && error.offset <= text.count + 1, "offset \(error.offset) outside the text")
        precondition(!error.message.isEmpty)
    }
    return 0
}
