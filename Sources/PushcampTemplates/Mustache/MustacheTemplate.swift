import PushcampModel

/// A Mustache template compiled for payload leaves: variables (`{{name}}`, `{{{name}}}`, `{{& name}}`,
/// dotted names), sections and inverted sections, comments, and `{{> key}}` for a localized string.
///
/// Two rules differ from general-purpose Mustache engines, on purpose:
/// - nothing is HTML-escaped: output goes into JSON strings and is JSON-escaped there;
/// - a variable that exists nowhere (not in the recipient's attributes, not in the campaign's
///   variables, not in an enclosing section) is an error for that recipient, never an empty string.
///   A missing name in a section tag is simply false, as in Mustache.
public struct MustacheTemplate: Sendable, Hashable {
    // Not `indirect`: sections hold their parts in an array already, and a boxed part would cost a
    // reference count each time rendering looks at it.
    enum Part: Sendable, Hashable {
        /// Literal text, already escaped for the inside of a JSON string.
        case text([UInt8])
        case variable(Name)
        case section(Name, [Part], inverted: Bool)
        case localized(String, offset: Int)
    }

    struct Name: Sendable, Hashable {
        var parts: [String]
        /// Offset of the tag in the template, for locating problems.
        var offset: Int
        var text: String { parts.isEmpty ? "." : parts.joined(separator: ".") }
    }

    let parts: [Part]
    /// The source text.
    public let text: String

    /// True when the template has no tags, so it renders to itself.
    public var isConstant: Bool { parts.allSatisfy { if case .text = $0 { true } else { false } } }

    /// True when the template is exactly one variable tag, such as `{{badge}}`: the payload then takes
    /// the value with its own JSON type (a number stays a number).
    var singleVariable: Name? {
        if parts.count == 1, case .variable(let name) = parts[0] { return name }
        return nil
    }

    /// A name the template reads: the first part of a dotted name, where it is used, whether it is a
    /// section's name, and whether it sits inside a section (where it may come from the section's value).
    public struct Reference: Sendable, Hashable {
        public var name: String
        public var offset: Int
        public var isSection: Bool
        public var isNested: Bool
    }

    /// The names the template reads, first use of each, in order of appearance.
    public var references: [Reference] {
        var result: [Reference] = []
        func visit(_ parts: [Part], nested: Bool) {
            for part in parts {
                switch part {
                case .variable(let name):
                    if let first = name.parts.first, !result.contains(where: { $0.name == first }) {
                        result.append(Reference(name: first, offset: name.offset, isSection: false, isNested: nested))
                    }
                case .section(let name, let inner, _):
                    if let first = name.parts.first, !result.contains(where: { $0.name == first }) {
                        result.append(Reference(name: first, offset: name.offset, isSection: true, isNested: nested))
                    }
                    visit(inner, nested: true)
                case .text, .localized: break
                }
            }
        }
        visit(parts, nested: false)
        return result
    }

    /// Keys of localized strings the template includes with `{{> key}}`.
    public var localizedKeys: [(key: String, offset: Int)] {
        var result: [(key: String, offset: Int)] = []
        func visit(_ parts: [Part]) {
            for part in parts {
                switch part {
                case .localized(let key, let offset): result.append((key, offset))
                case .section(_, let inner, _): visit(inner)
                case .text, .variable: break
                }
            }
        }
        visit(parts)
        return result
    }

    public static func == (lhs: MustacheTemplate, rhs: MustacheTemplate) -> Bool { lhs.text == rhs.text }
    public func hash(into hasher: inout Hasher) { hasher.combine(text) }
}
