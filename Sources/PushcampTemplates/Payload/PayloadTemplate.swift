import PushcampModel
import Yams

/// A payload written as a JSON or YAML structure whose string leaves are Mustache templates.
/// Rendering fills the leaves and encodes JSON, so every payload is valid JSON whatever the data holds.
/// Parts without templates are encoded once, when the template is compiled.
public struct PayloadTemplate: Sendable {
    indirect enum Element: Sendable {
        /// Encoded JSON that does not depend on the recipient.
        case constant([UInt8])
        /// Keys are encoded with their quotes and the colon.
        case object([(key: [UInt8], value: Element)])
        case array([Element])
        case leaf(MustacheTemplate)
    }

    /// A templated leaf and where it is written, for static checks.
    public struct Leaf: Sendable {
        public var template: MustacheTemplate
        /// The key path to the leaf, such as `aps.alert.title`.
        public var keyPath: String
        let node: NodeLocation

        /// Where character `offset` of the template is in its file.
        public func location(offset: Int) -> SourceLocation { node.location(offset: offset) }
    }

    /// The payload as rendering runs it: constant JSON bytes and templated leaves, in output order.
    let program: Program
    /// Every templated leaf, in file order.
    public let leaves: [Leaf]
    /// The constant structure, for pre-flight checks: key paths and the constant values at them.
    public let shape: PayloadShape
    public let path: String

    init(root: Element, leaves: [Leaf], shape: PayloadShape, path: String) {
        program = Program(root)
        self.leaves = leaves
        self.shape = shape
        self.path = path
    }

    /// Renders the payload for one recipient, appending JSON to `writer`.
    public func render(into writer: inout JSONWriter, context: inout RenderContext) throws(RenderError) {
        try Self.render(program, into: &writer, context: &context)
    }

    /// The payload's renderer on its own: one reference to hold per variant, so rendering for each
    /// recipient copies no template structure.
    public var renderer: Renderer { Renderer(program) }

    public final class Renderer: Sendable {
        let program: Program

        init(_ program: Program) {
            self.program = program
        }

        public func render(into writer: inout JSONWriter, context: inout RenderContext) throws(RenderError) {
            try PayloadTemplate.render(program, into: &writer, context: &context)
        }
    }

    static func render(
        _ program: Program,
        into writer: inout JSONWriter,
        context: inout RenderContext
    )
        throws(RenderError)
    {
        for index in program.steps.indices {
            let step = program.steps[index]
            writer.bytes.append(contentsOf: program.constants[step.constant])
            if step.leaf >= 0 { try program.templates[step.leaf].renderLeaf(into: &writer, context: &context) }
        }
    }

    /// A payload flattened for rendering: whatever its nesting, a payload is constant bytes (braces,
    /// keys, constant values) with templated leaves between them, so rendering is one loop over plain
    /// values, with no recursion and no reference counting per element.
    struct Program: Sendable {
        struct Step: Sendable {
            /// Constant bytes written first (a range of `constants`).
            var constant: Range<Int>
            /// Then this leaf of `templates`, unless negative.
            var leaf: Int
        }

        var constants: [UInt8] = []
        var steps: [Step] = []
        var templates: [MustacheTemplate] = []

        init(_ root: Element) {
            var start = 0
            func emit(leaf: Int) {
                steps.append(Step(constant: start..<constants.count, leaf: leaf))
                start = constants.count
            }
            func visit(_ element: Element) {
                switch element {
                case .constant(let bytes):
                    constants += bytes
                case .leaf(let template):
                    templates.append(template)
                    emit(leaf: templates.count - 1)
                case .object(let members):
                    constants.append(0x7B)
                    for (index, member) in members.enumerated() {
                        if index > 0 { constants.append(0x2C) }
                        constants += member.key
                        visit(member.value)
                    }
                    constants.append(0x7D)
                case .array(let items):
                    constants.append(0x5B)
                    for (index, item) in items.enumerated() {
                        if index > 0 { constants.append(0x2C) }
                        visit(item)
                    }
                    constants.append(0x5D)
                }
            }
            visit(root)
            if start < constants.count { emit(leaf: -1) }
        }
    }
}

/// A node's place in a file, kept without the (non-Sendable) node itself.
struct NodeLocation: Sendable {
    var path: String
    var line: Int?
    var column: Int?
    /// Offsets map to columns only in one-line scalars.
    var columnsFollowText: Bool
    var quoteWidth: Int
    var text: String

    init(_ node: Node, path: String) {
        self.path = path
        self.line = node.mark?.line
        self.column = node.mark?.column
        if case .scalar(let scalar) = node {
            columnsFollowText = [.plain, .singleQuoted, .doubleQuoted].contains(scalar.style)
            quoteWidth = scalar.style == .plain ? 0 : 1
            text = scalar.string
        } else {
            columnsFollowText = false
            quoteWidth = 0
            text = ""
        }
    }

    func location(offset: Int) -> SourceLocation {
        guard let column, columnsFollowText, !text.unicodeScalars.prefix(offset).contains("\n") else {
            return SourceLocation(path: path, line: line, column: column)
        }
        return SourceLocation(path: path, line: line, column: column + quoteWidth + offset)
    }
}

/// The constant facts of a payload that pre-flight rules read: which keys exist, and their values
/// where those do not depend on the recipient.
public struct PayloadShape: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        case constant(AttributeValue?)
        case templated
        case structure
    }

    /// Every key path (`aps`, `aps.alert`, `aps.alert.title`…) with its value.
    public var values: [String: Value]

    public func has(_ keyPath: String) -> Bool { values[keyPath] != nil }

    public func value(_ keyPath: String) -> Value? { values[keyPath] }

    /// Keys directly under `keyPath`.
    public func keys(under keyPath: String) -> [String] {
        let prefix = keyPath.isEmpty ? "" : keyPath + "."
        return values.keys.filter { $0.hasPrefix(prefix) && !$0.dropFirst(prefix.count).contains(".") }
            .map { String($0.dropFirst(prefix.count)) }.sorted()
    }
}
