import Foundation

/// A setting that may name an environment variable, like `${env:SHOP_APNS_KEY}`, so secret paths stay
/// out of git. References are checked for syntax when the file is read and resolved only when used,
/// so `validate` and `plan` work where the secrets are not set (CI, a reviewer's laptop).
public struct ConfigString: Hashable, Sendable, CustomStringConvertible {
    public enum Part: Hashable, Sendable {
        case text(String)
        case environment(String)
    }

    public var parts: [Part]
    public var raw: String
    /// Where it is written (pushcamp.yaml's line and column), for errors about its value; not part
    /// of what makes two settings equal.
    public var location: SourceLocation?

    public static func == (lhs: ConfigString, rhs: ConfigString) -> Bool {
        lhs.parts == rhs.parts && lhs.raw == rhs.raw
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(parts)
        hasher.combine(raw)
    }

    /// `self`, located at `location`.
    public func located(_ location: SourceLocation) -> ConfigString {
        var copy = self
        copy.location = location
        return copy
    }

    public static func parse(_ raw: String) -> Result<ConfigString, ValueError> {
        var parts: [Part] = []
        var rest = Substring(raw)
        while let start = rest.range(of: "${") {
            if start.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<start.lowerBound]))) }
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                return .failure(ValueError("unclosed '${' in '\(raw)'; write ${env:NAME}"))
            }
            let inner = rest[start.upperBound..<end]
            guard inner.hasPrefix("env:") else {
                return .failure(ValueError("'${\(inner)}' is not a reference Pushcamp knows; write ${env:NAME}"))
            }
            let name = inner.dropFirst(4)
            guard let first = name.first, first == "_" || first.isLetter,
                name.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) })
            else {
                return .failure(ValueError("'\(name)' is not an environment variable name"))
            }
            parts.append(.environment(String(name)))
            rest = rest[rest.index(after: end)...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        return .success(ConfigString(parts: parts, raw: raw))
    }

    /// The environment variables this setting needs.
    public var environmentNames: [String] {
        parts.compactMap { if case .environment(let name) = $0 { name } else { nil } }
    }

    /// The value with references filled from `environment`; a variable that is not set is an error
    /// naming it.
    public func resolve(_ environment: [String: String]) -> Result<String, ValueError> {
        var text = ""
        for part in parts {
            switch part {
            case .text(let literal): text += literal
            case .environment(let name):
                guard let value = environment[name], !value.isEmpty else {
                    return .failure(ValueError("environment variable \(name) is not set (needed by '\(raw)')"))
                }
                text += value
            }
        }
        return .success(text)
    }

    /// `resolve` for a file's path: a leading `~` (alone or before `/`) is the home folder
    /// (`HOME` in `environment`), as a shell would expand it; there is no shell to do it here.
    public func resolvePath(_ environment: [String: String]) -> Result<String, ValueError> {
        resolve(environment).flatMap { path in
            guard path == "~" || path.hasPrefix("~/") else { return .success(path) }
            guard let home = environment["HOME"], !home.isEmpty else {
                return .failure(ValueError("'\(raw)' starts with ~ but HOME is not set"))
            }
            return .success(home + path.dropFirst())
        }
    }

    public var description: String { raw }
}
