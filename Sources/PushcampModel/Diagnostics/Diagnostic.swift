/// A place in a file: 1-based line and, where known, 1-based column.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var column: Int?

    public init(path: String, line: Int? = nil, column: Int? = nil) {
        self.path = path
        self.line = line
        self.column = column
    }

    /// `path:line:col`, `path:line` or `path`, as compilers print it.
    public var description: String {
        var text = path
        if let line {
            text += ":\(line)"
            if let column { text += ":\(column)" }
        }
        return text
    }
}

/// One problem found in a campaign, project, template or audience file, printed like a compiler's:
/// `campaigns/spring.yaml:12:5: error: unknown key 'colapse_id' in 'message'; did you mean 'collapse_id'?`
public struct Diagnostic: Hashable, Sendable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable, Codable {
        case error
        case warning
    }

    public var severity: Severity
    public var location: SourceLocation?
    public var message: String

    public init(_ severity: Severity, _ message: String, at location: SourceLocation?) {
        self.severity = severity
        self.message = message
        self.location = location
    }

    public static func error(_ message: String, at location: SourceLocation?) -> Diagnostic {
        Diagnostic(.error, message, at: location)
    }

    public static func warning(_ message: String, at location: SourceLocation?) -> Diagnostic {
        Diagnostic(.warning, message, at: location)
    }

    /// One line: the message's control characters are escaped, so no input can forge output.
    public var description: String {
        let message = message.escapingControlCharacters
        if let location {
            return "\(location): \(severity.rawValue): \(message)"
        }
        return "\(severity.rawValue): \(message)"
    }
}

extension Array where Element == Diagnostic {
    public var hasErrors: Bool { contains { $0.severity == .error } }

    /// Diagnostics in file order: by path, line, column, then message, so output is stable.
    public func sortedByLocation() -> [Diagnostic] {
        enumerated().sorted { left, right in
            let l = left.element.location
            let r = right.element.location
            let lk = (l?.path ?? "", l?.line ?? 0, l?.column ?? 0)
            let rk = (r?.path ?? "", r?.line ?? 0, r?.column ?? 0)
            if lk != rk { return lk < rk }
            return left.offset < right.offset
        }.map(\.element)
    }
}

/// Thrown where work cannot go on: carries every diagnostic found so far.
public struct DiagnosticsError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]

    public init(_ diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics
    }

    public init(_ diagnostic: Diagnostic) {
        self.diagnostics = [diagnostic]
    }

    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}
