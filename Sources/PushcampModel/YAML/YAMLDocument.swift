import Foundation
import Yams

/// A YAML (or JSON) file parsed to a node tree that remembers where each node came from.
public struct YAMLDocument {
    /// The path as printed in diagnostics.
    public var path: String
    public var root: Node?
    /// The raw bytes, for hashing into a campaign revision.
    public var bytes: [UInt8]

    /// Reads and parses `fileURL`; problems come back as located diagnostics, never as a crash.
    public static func load(_ fileURL: URL, displayPath: String) -> (YAMLDocument?, [Diagnostic]) {
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(fileURL)
        } catch {
            return (nil, [.error(error.description, at: SourceLocation(path: displayPath))])
        }
        return parse(bytes, path: displayPath)
    }

    /// Parses bytes already read; `path` is used for diagnostics only.
    public static func parse(_ bytes: [UInt8], path: String) -> (YAMLDocument?, [Diagnostic]) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let (line, column) = FileBytes.firstInvalidUTF8(in: bytes)
            return (
                nil, [.error("file is not valid UTF-8", at: SourceLocation(path: path, line: line, column: column))]
            )
        }
        do {
            let root = try Yams.compose(yaml: text)
            if let root, let problem = bounds(of: root, path: path) { return (nil, [problem]) }
            return (YAMLDocument(path: path, root: root, bytes: bytes), [])
        } catch let error as YamlError {
            return (nil, [diagnostic(for: error, path: path)])
        } catch {
            return (nil, [.error("cannot parse YAML: \(error)", at: SourceLocation(path: path))])
        }
    }

    /// The most nodes a document may expand to, aliases expanded (a campaign has hundreds; ten
    /// nested aliases of ten would make ten billion).
    public static let maximumNodes = 100_000
    /// The deepest nesting of mappings and sequences a document may have.
    public static let maximumDepth = 64

    /// Walks the tree as readers will see it — every alias expanded — without recursion, and stops
    /// at the first node beyond `maximumNodes` or `maximumDepth`.
    static func bounds(of root: Node, path: String) -> Diagnostic? {
        var pending: [(node: Node, depth: Int)] = [(root, 0)]
        var count = 0
        while let (node, depth) = pending.popLast() {
            count += 1
            let location = SourceLocation(path: path, line: node.mark?.line ?? 0, column: node.mark?.column ?? 0)
            guard count <= maximumNodes else {
                return .error(
                    "the document expands to more than \(maximumNodes) values (YAML aliases that repeat aliases?); "
                        + "write the values out",
                    at: location
                )
            }
            guard depth <= maximumDepth else {
                return .error("mappings and lists nest more than \(maximumDepth) deep", at: location)
            }
            switch node {
            case .mapping(let mapping):
                for (key, value) in mapping.reversed() {
                    pending.append((value, depth + 1))
                    pending.append((key, depth + 1))
                }
            case .sequence(let sequence):
                for item in sequence.reversed() { pending.append((item, depth + 1)) }
            default:
                break
            }
        }
        return nil
    }

    static func diagnostic(for error: YamlError, path: String) -> Diagnostic {
        func at(_ mark: Mark) -> SourceLocation { SourceLocation(path: path, line: mark.line, column: mark.column) }
        switch error {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = "invalid YAML: \(problem)"
            if let context { message += " (\(context.text) at line \(context.mark.line))" }
            return .error(message, at: at(mark))
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            return .error("duplicate key \(keys) in one mapping", at: at(context.mark))
        case .reader(let problem, _, _, _):
            return .error("cannot read YAML: \(problem)", at: SourceLocation(path: path))
        default:
            return .error("invalid YAML: \(error)", at: SourceLocation(path: path))
        }
    }
}
