import PushcampModel
import Yams

/// Localized strings by locale, each a Mustache template that payloads include with `{{> key}}`.
///
/// A recipient's locale falls back from the most specific to the least and then to the default:
/// `fr-CA → fr → en`, key by key, so a regional table needs only the strings that differ.
/// Locales match without regard to case or to `_` versus `-` (`pt_BR` is `pt-BR`).
public struct LocalizedStrings: Sendable {
    /// Tables by normalized locale (`fr-ca`), with the locale as written.
    let tables: [String: (name: String, strings: [String: MustacheTemplate])]
    public let defaultLocale: String
    /// Where each key is first defined, for static checks.
    public let keyLocations: [String: SourceLocation]
    /// Every string's template with its location, for static checks.
    public let entries: [(locale: String, key: String, template: MustacheTemplate, location: NodeLocationBox)]

    /// The locales with a table, as written.
    public var locales: [String] { tables.values.map(\.name).sorted() }

    public func hasKey(_ key: String) -> Bool { keyLocations[key] != nil }

    /// The chain a locale falls back along: `fr-CA` gives `fr-ca`, `fr`, then the default.
    public static func chain(for locale: String?, defaultLocale: String) -> [String] {
        var chain: [String] = []
        if let locale {
            var parts = normalize(locale).split(separator: "-").map(String.init)
            while !parts.isEmpty {
                chain.append(parts.joined(separator: "-"))
                parts.removeLast()
            }
        }
        let fallback = normalize(defaultLocale)
        if !chain.contains(fallback) { chain.append(fallback) }
        return chain
    }

    /// The table (as written) that gives `key` to a recipient of `locale`, along its fallback chain.
    public func supplier(of key: String, for locale: String) -> String? {
        Self.chain(for: locale, defaultLocale: defaultLocale).lazy.compactMap { self.tables[$0] }
            .first { $0.strings[key] != nil }?.name
    }

    /// A locale's language: `pt` for `pt-BR`.
    public static func language(_ locale: String) -> String {
        String(normalize(locale).split(separator: "-").first ?? "")
    }

    public static func normalize(_ locale: String) -> String {
        String(locale.lowercased().map { $0 == "_" ? "-" : $0 })
    }

    /// The strings a recipient with `locale` sees, key by key along the fallback chain, and the locale
    /// that supplied most of them (the first in the chain with a table), for reports.
    public func resolve(_ locale: String?) -> (locale: String, strings: [String: MustacheTemplate]) {
        let chain = Self.chain(for: locale, defaultLocale: defaultLocale)
        var merged: [String: MustacheTemplate] = [:]
        var resolved: String?
        for name in chain.reversed() {
            guard let table = tables[name] else { continue }
            merged.merge(table.strings) { _, specific in specific }
        }
        for name in chain where tables[name] != nil {
            resolved = tables[name]!.name
            break
        }
        return (resolved ?? defaultLocale, merged)
    }
}

/// A Sendable wrapper around a template's place in its file.
public struct NodeLocationBox: Sendable {
    let value: NodeLocation

    public func location(offset: Int) -> SourceLocation { value.location(offset: offset) }
}

extension LocalizedStrings {
    /// Compiles a string table: a mapping from locale to a mapping from key to string.
    public static func compile(_ root: Node, path: String, defaultLocale: String) -> (LocalizedStrings?, [Diagnostic]) {
        let reader = YAMLReader(path: path)
        var tables: [String: (name: String, strings: [String: MustacheTemplate])] = [:]
        var keyLocations: [String: SourceLocation] = [:]
        var entries: [(locale: String, key: String, template: MustacheTemplate, location: NodeLocationBox)] = []
        guard let locales = reader.freeMapping(root, in: "strings") else { return (nil, reader.diagnostics) }
        for (locale, localeNode, tableNode) in locales {
            let valid =
                !locale.isEmpty
                && locale.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
            guard valid else {
                reader.error(
                    "'\(locale)' is not a locale; write a language code with an optional region, like en, fr or pt-BR",
                    at: localeNode
                )
                continue
            }
            let normalized = normalize(locale)
            if tables[normalized] != nil {
                reader.error("locale '\(locale)' is listed twice", at: localeNode)
                continue
            }
            guard let pairs = reader.freeMapping(tableNode, in: "strings.\(locale)") else { continue }
            var strings: [String: MustacheTemplate] = [:]
            for (key, keyNode, valueNode) in pairs {
                guard let text = reader.scalar(valueNode, "strings.\(locale).\(key)") else { continue }
                switch TemplateLocation.compile(valueNode, text: text, path: path) {
                case .success(let template):
                    strings[key] = template
                    if keyLocations[key] == nil { keyLocations[key] = reader.location(keyNode) }
                    entries.append((locale, key, template, NodeLocationBox(value: NodeLocation(valueNode, path: path))))
                case .failure(let failure):
                    reader.append(failure.diagnostics)
                }
            }
            tables[normalized] = (locale, strings)
        }
        if tables[normalize(defaultLocale)] == nil, !reader.diagnostics.hasErrors {
            let listed = tables.values.map(\.name).sorted().joined(separator: ", ")
            reader.error(
                "the default locale '\(defaultLocale)' has no strings (tables: \(listed.isEmpty ? "none" : listed)); every key needs a default to fall back to",
                at: root
            )
        }
        // Every key falls back to the default: one missing there refuses, at plan time, every
        // recipient whose locale lacks it too.
        if let defaults = tables[normalize(defaultLocale)] {
            for (key, location) in keyLocations.sorted(by: { $0.key < $1.key }) where defaults.strings[key] == nil {
                let holders = tables.values.filter { $0.strings[key] != nil }.map(\.name).sorted()
                reader.error(
                    "localized string '\(key)' is missing from the default locale '\(defaultLocale)' (it is in \(holders.joined(separator: ", "))): recipients of other locales would be refused (missing-string); add it to \(defaultLocale)",
                    at: location
                )
            }
        }
        guard !reader.diagnostics.hasErrors else { return (nil, reader.diagnostics) }
        let strings = LocalizedStrings(
            tables: tables,
            defaultLocale: defaultLocale,
            keyLocations: keyLocations,
            entries: entries
        )
        return (strings, reader.diagnostics)
    }
}
