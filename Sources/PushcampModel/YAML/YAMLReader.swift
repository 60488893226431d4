import Foundation
import Yams

/// Reads a YAML node tree into typed values, collecting located diagnostics instead of stopping at the
/// first problem, so `validate` reports every problem of a file at once.
public final class YAMLReader {
    public let path: String
    public private(set) var diagnostics: [Diagnostic] = []

    public init(path: String) {
        self.path = path
    }

    public func location(_ node: Node?) -> SourceLocation {
        guard let mark = node?.mark else { return SourceLocation(path: path) }
        return SourceLocation(path: path, line: mark.line, column: mark.column)
    }

    public func error(_ message: String, at node: Node?) {
        diagnostics.append(.error(message, at: location(node)))
    }

    public func error(_ message: String, at location: SourceLocation) {
        diagnostics.append(.error(message, at: location))
    }

    public func warning(_ message: String, at node: Node?) {
        diagnostics.append(.warning(message, at: location(node)))
    }

    public func append(_ more: [Diagnostic]) {
        diagnostics += more
    }

    // MARK: Mappings

    /// A mapping's entries in file order, with the node of each key for locating problems.
    public struct Mapping {
        public var node: Node
        public var entries: [(key: String, keyNode: Node, value: Node)]

        public subscript(key: String) -> Node? {
            entries.first { $0.key == key }?.value
        }

        public func keyNode(_ key: String) -> Node? {
            entries.first { $0.key == key }?.keyNode
        }
    }

    /// Reads a mapping whose keys must come from `allowed`; an unknown key is an error that names the
    /// key that was probably meant, and each key of `required` that is absent is an error at the mapping.
    public func mapping(
        _ node: Node,
        in context: String,
        allowed: [String],
        required: [String] = []
    ) -> Mapping? {
        guard let pairs = freeMapping(node, in: context) else { return nil }
        var entries: [(key: String, keyNode: Node, value: Node)] = []
        for entry in pairs {
            guard allowed.contains(entry.key) else {
                let hint = Suggestion.didYouMean(entry.key, in: allowed)
                let known = hint.isEmpty ? " (expected one of: \(allowed.joined(separator: ", ")))" : hint
                error("unknown key '\(entry.key)' in '\(context)'\(known)", at: entry.keyNode)
                continue
            }
            entries.append(entry)
        }
        for key in required where !entries.contains(where: { $0.key == key }) {
            error("'\(context)' is missing required key '\(key)'", at: node)
        }
        return Mapping(node: node, entries: entries)
    }

    /// A mapping with free-form string keys (variables, string tables).
    public func freeMapping(_ node: Node, in context: String) -> [(key: String, keyNode: Node, value: Node)]? {
        guard case .mapping(let pairs) = node else {
            error("'\(context)' must be a mapping, found \(describe(node))", at: node)
            return nil
        }
        var result: [(key: String, keyNode: Node, value: Node)] = []
        for (keyNode, value) in pairs {
            guard let key = keyNode.scalar?.string else {
                error("keys in '\(context)' must be plain strings", at: keyNode)
                continue
            }
            if result.contains(where: { $0.key == key }) {
                error("duplicate key '\(key)' in '\(context)'", at: keyNode)
                continue
            }
            result.append((key, keyNode, value))
        }
        return result
    }

    // MARK: Scalars

    /// The text of a scalar; a mapping or sequence where a scalar belongs is an error.
    public func scalar(_ node: Node, _ what: String) -> String? {
        guard case .scalar(let scalar) = node else {
            error("'\(what)' must be a single value, found \(describe(node))", at: node)
            return nil
        }
        return scalar.string
    }

    public func string(_ node: Node, _ what: String) -> String? {
        guard let text = scalar(node, what) else { return nil }
        if text.isEmpty || isNull(node) {
            error("'\(what)' must not be empty", at: node)
            return nil
        }
        return text
    }

    public func int(_ node: Node, _ what: String, in range: ClosedRange<Int>) -> Int? {
        guard let text = scalar(node, what) else { return nil }
        guard let value = Int(text) else {
            error("'\(what)' must be a whole number", at: node)
            return nil
        }
        guard range.contains(value) else {
            error("'\(what)' must be between \(range.lowerBound) and \(range.upperBound), found \(value)", at: node)
            return nil
        }
        return value
    }

    public func bool(_ node: Node, _ what: String) -> Bool? {
        guard let text = scalar(node, what) else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            error("'\(what)' must be true or false", at: node)
            return nil
        }
    }

    public func sequence(_ node: Node, _ what: String) -> [Node]? {
        guard case .sequence(let items) = node else {
            error("'\(what)' must be a list, found \(describe(node))", at: node)
            return nil
        }
        return Array(items)
    }

    /// A value parsed by `parse`, whose error message is reported at the node.
    public func parsed<T>(_ node: Node, _ what: String, _ parse: (String) -> Result<T, ValueError>) -> T? {
        guard let text = scalar(node, what) else { return nil }
        switch parse(text) {
        case .success(let value): return value
        case .failure(let failure):
            // Quote at most an excerpt of the value: it may be a secret from a file read by mistake.
            let message =
                text.count > 40 ? failure.message.replacingOccurrences(of: text, with: text.excerpt()) : failure.message
            error("'\(what)': \(message)", at: node)
            return nil
        }
    }

    public func isNull(_ node: Node) -> Bool {
        guard case .scalar(let scalar) = node, scalar.style == .plain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    /// What kind of node this is, for messages. Never its value: the file may be a secrets file
    /// named by mistake, and the location already points at the value.
    public func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar: return isNull(node) ? "nothing" : "a single value"
        case .alias: return "an alias"
        }
    }
}

/// Why a value (a duration, a rate, a percentage…) could not be read.
public struct ValueError: Error, Sendable, Equatable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }
}
