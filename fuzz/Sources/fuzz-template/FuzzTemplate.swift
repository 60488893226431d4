import FuzzSupport
import PushcampModel
import PushcampTemplates

/// A template: parsed (or an error at an offset), then rendered within its budget.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: bytes(start, count), as: UTF8.self)
    let template: MustacheTemplate
    do {
        template = try MustacheTemplate(text)
    } catch {
        precondition(error.offset >= 0 && error.offset <= text.unicodeScalars.count, "offset outside the text")
        return 0
    }
    let items = AttributeValue.list((0..<20).map { .integer($0) })
    var context = RenderContext(
        attributes: Attributes(["name": .string("Ann"), "items": items, "x": .bool(true)]),
        variables: Attributes([:]),
        strings: ["greeting": template]
    )
    var output: [UInt8] = []
    do {
        try template.render(into: &output, context: &context)
        precondition(output.count <= RenderContext.maximumBytes + 65_536, "rendering went past its budget")
    } catch {
        // missing variables, strings or an exhausted budget: reasons, not traps
    }
    return 0
}
