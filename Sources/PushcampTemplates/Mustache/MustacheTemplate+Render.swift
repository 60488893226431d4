import PushcampModel

/// Why a template could not be rendered for one recipient.
public enum RenderError: Error, Sendable, Hashable, CustomStringConvertible {
    case missingVariable(String)
    case missingString(String)
    case tooDeep(String)
    /// Rendering went beyond `RenderContext.maximumBytes` or `maximumSteps`.
    case overBudget

    public var description: String {
        switch self {
        case .overBudget:
            return
                "rendering goes beyond \(RenderContext.maximumBytes) bytes or \(RenderContext.maximumSteps) steps (sections over long lists, nested)"
        case .missingVariable(let name): return "missing variable '\(name)'"
        case .missingString(let key): return "no localized string '\(key)' for the recipient's locale or the default"
        case .tooDeep(let key): return "localized string '\(key)' includes itself"
        }
    }
}

/// What a template is rendered against: the recipient's attributes first, then the campaign's (and
/// variant's) variables, with the localized strings of the recipient's locale for `{{> key}}`.
public struct RenderContext {
    public var attributes: Attributes
    public var variables: Attributes
    public var strings: [String: MustacheTemplate]
    var stack: [AttributeValue] = []
    /// Parts rendered so far for this recipient.
    var steps = 0

    /// A push body is at most 5 KB; rendering stops long before it could cost real time or memory.
    public static let maximumBytes = 65_536
    public static let maximumSteps = 100_000

    public init(attributes: Attributes, variables: Attributes, strings: [String: MustacheTemplate]) {
        self.attributes = attributes
        self.variables = variables
        self.strings = strings
    }

    /// Ready for the next recipient, keeping the section stack's storage (one allocation less per
    /// recipient when templates have sections).
    public mutating func reset(attributes: Attributes, variables: Attributes, strings: [String: MustacheTemplate]) {
        self.attributes = attributes
        self.variables = variables
        self.strings = strings
        stack.removeAll(keepingCapacity: true)
        steps = 0
    }

    @inline(__always)
    func lookup(_ name: MustacheTemplate.Name) -> AttributeValue? {
        // The common case: a plain name outside any section.
        if stack.isEmpty, name.parts.count == 1 {
            return attributes[name.parts[0]] ?? variables[name.parts[0]]
        }
        guard let first = name.parts.first else { return stack.last }
        var value: AttributeValue?
        for frame in stack.reversed() {
            if case .object(let object) = frame, let found = object[first] {
                value = found
                break
            }
        }
        if value == nil { value = attributes[first] ?? variables[first] }
        guard var current = value else { return nil }
        for part in name.parts.dropFirst() {
            guard case .object(let object) = current, let next = object[part] else { return nil }
            current = next
        }
        return current
    }
}

extension MustacheTemplate {
    /// Appends the rendered text, escaped for the inside of a JSON string, to `output`.
    public func render(into output: inout [UInt8], context: inout RenderContext) throws(RenderError) {
        try Self.render(parts, into: &output, context: &context, depth: 0)
    }

    /// The rendered text, unescaped (for headers such as `apns-collapse-id`).
    public func renderText(context: inout RenderContext) throws(RenderError) -> String {
        if case .text(let bytes)? = parts.first, parts.count == 1, !bytes.contains(0x5C) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var output: [UInt8] = []
        try render(into: &output, context: &context)
        // Templates render JSON-escaped; headers want the plain text back.
        return JSONUnescape.string(output)
    }

    /// Renders a whole payload leaf: a leaf that is exactly one `{{variable}}` keeps the value's JSON
    /// type; any other leaf becomes a JSON string.
    func renderLeaf(into writer: inout JSONWriter, context: inout RenderContext) throws(RenderError) {
        if let name = singleVariable {
            guard let value = context.lookup(name) else { throw .missingVariable(name.text) }
            writer.value(value)
            return
        }
        writer.bytes.append(0x22)
        try render(into: &writer.bytes, context: &context)
        writer.bytes.append(0x22)
    }

    static func render(
        _ parts: [Part],
        into output: inout [UInt8],
        context: inout RenderContext,
        depth: Int
    ) throws(RenderError) {
        for part in parts {
            context.steps += 1
            guard context.steps <= RenderContext.maximumSteps, output.count <= RenderContext.maximumBytes else {
                throw .overBudget
            }
            switch part {
            case .text(let bytes):
                output.append(contentsOf: bytes)
            case .variable(let name):
                guard let value = context.lookup(name) else { throw .missingVariable(name.text) }
                if case .string(let text) = value {
                    JSONWriter.appendEscaped(text, to: &output)
                } else {
                    JSONWriter.appendEscaped(value.text, to: &output)
                }
            case .section(let name, let inner, let inverted):
                let value = context.lookup(name)
                if inverted {
                    if !(value?.isTruthy ?? false) {
                        try render(inner, into: &output, context: &context, depth: depth)
                    }
                    continue
                }
                guard let value, value.isTruthy else { continue }
                if case .list(let items) = value {
                    for item in items {
                        context.stack.append(item)
                        defer { context.stack.removeLast() }
                        try render(inner, into: &output, context: &context, depth: depth)
                    }
                } else {
                    context.stack.append(value)
                    defer { context.stack.removeLast() }
                    try render(inner, into: &output, context: &context, depth: depth)
                }
            case .localized(let key, _):
                guard depth < 8 else { throw .tooDeep(key) }
                guard let template = context.strings[key] else { throw .missingString(key) }
                try render(template.parts, into: &output, context: &context, depth: depth + 1)
            }
        }
    }
}

/// Turns JSON-escaped string content back into text (for the few places that need plain text).
enum JSONUnescape {
    static func string(_ bytes: [UInt8]) -> String {
        guard bytes.contains(0x5C) else { return String(decoding: bytes, as: UTF8.self) }
        var quoted: [UInt8] = [0x22]
        quoted += bytes
        quoted.append(0x22)
        var parser = JSONParser(quoted)
        if case .string(let text)? = try? parser.parseValue() { return text }
        return String(decoding: bytes, as: UTF8.self)
    }
}
