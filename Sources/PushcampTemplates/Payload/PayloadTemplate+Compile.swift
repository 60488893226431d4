import PushcampModel
import Yams

extension PayloadTemplate {
    /// Compiles a payload structure; every problem (a template that does not parse, a YAML alias, a
    /// payload that is not a dictionary) is reported, located.
    public static func compile(_ root: Node, path: String) -> (PayloadTemplate?, [Diagnostic]) {
        var diagnostics: [Diagnostic] = []
        var leaves: [Leaf] = []
        var shape: [String: PayloadShape.Value] = [:]
        guard case .mapping = root else {
            let at = SourceLocation(path: path, line: root.mark?.line, column: root.mark?.column)
            return (
                nil,
                [.error("a payload must be a dictionary (APNs takes a JSON object), like {aps: {alert: …}}", at: at)]
            )
        }

        func compile(_ node: Node, keyPath: String) -> Element? {
            switch node {
            case .mapping(let mapping):
                var members: [(key: [UInt8], value: Element)] = []
                var seen: Set<String> = []
                for (keyNode, valueNode) in mapping {
                    guard let key = keyNode.scalar?.string else {
                        diagnostics.append(.error("payload keys must be strings", at: location(keyNode)))
                        continue
                    }
                    guard seen.insert(key).inserted else {
                        diagnostics.append(.error("duplicate key '\(key)' in the payload", at: location(keyNode)))
                        continue
                    }
                    let childPath = keyPath.isEmpty ? key : keyPath + "." + key
                    var writer = JSONWriter(capacity: key.utf8.count + 3)
                    writer.string(key)
                    writer.bytes.append(0x3A)
                    if let element = compile(valueNode, keyPath: childPath) {
                        members.append((writer.bytes, element))
                    }
                }
                if !keyPath.isEmpty { shape[keyPath] = .structure }
                return fold(.object(members))
            case .sequence(let sequence):
                shape[keyPath] = .structure
                let items = sequence.enumerated().compactMap {
                    compile($0.element, keyPath: keyPath + "[\($0.offset)]")
                }
                return fold(.array(items))
            case .scalar(let scalar):
                if scalar.style == .plain, ["~", "null", "Null", "NULL", ""].contains(scalar.string) {
                    shape[keyPath] = .constant(nil)
                    return .constant(Array("null".utf8))
                }
                let reader = YAMLReader(path: path)
                if scalar.style == .plain, let value = CampaignReader.attributeValue(node, keyPath, reader) {
                    if case .string = value {
                    } else {
                        shape[keyPath] = .constant(value)
                        var writer = JSONWriter()
                        writer.value(value)
                        return .constant(writer.bytes)
                    }
                }
                switch TemplateLocation.compile(node, text: scalar.string, path: path) {
                case .failure(let failure):
                    diagnostics += failure.diagnostics
                    return nil
                case .success(let template):
                    if template.isConstant {
                        shape[keyPath] = .constant(.string(scalar.string))
                        var writer = JSONWriter()
                        writer.string(scalar.string)
                        return .constant(writer.bytes)
                    }
                    shape[keyPath] = .templated
                    leaves.append(Leaf(template: template, keyPath: keyPath, node: NodeLocation(node, path: path)))
                    return .leaf(template)
                }
            case .alias:
                diagnostics.append(.error("YAML aliases are not supported in payloads", at: location(node)))
                return nil
            }
        }

        func location(_ node: Node) -> SourceLocation {
            SourceLocation(path: path, line: node.mark?.line, column: node.mark?.column)
        }

        let element = compile(root, keyPath: "")
        guard let element, !diagnostics.hasErrors else { return (nil, diagnostics) }
        return (
            PayloadTemplate(root: element, leaves: leaves, shape: PayloadShape(values: shape), path: path), diagnostics
        )
    }

    /// Joins members that are all constant into one constant, so rendering copies bytes.
    static func fold(_ element: Element) -> Element {
        switch element {
        case .object(let members):
            guard members.allSatisfy({ if case .constant = $0.value { true } else { false } }) else { return element }
            var bytes: [UInt8] = [0x7B]
            for (index, member) in members.enumerated() {
                if index > 0 { bytes.append(0x2C) }
                bytes += member.key
                if case .constant(let value) = member.value { bytes += value }
            }
            bytes.append(0x7D)
            return .constant(bytes)
        case .array(let items):
            guard items.allSatisfy({ if case .constant = $0 { true } else { false } }) else { return element }
            var bytes: [UInt8] = [0x5B]
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(0x2C) }
                if case .constant(let value) = item { bytes += value }
            }
            bytes.append(0x5D)
            return .constant(bytes)
        default:
            return element
        }
    }
}
