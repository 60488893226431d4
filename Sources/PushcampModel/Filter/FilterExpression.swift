/// An audience filter (`where:`), such as `opted_in && platform == 'ios' && country in ['FR', 'BE']`.
///
/// Missing attributes: a comparison involving an absent attribute is false (`!=` included), a bare
/// name is true only when the attribute is present and truthy, and `name == null` / `name != null`
/// test for absence and presence. `not` / `!` negates the result of what follows.
public indirect enum FilterExpression: Hashable, Sendable {
    case truthy(String)
    case compare(String, ComparisonOperator, FilterLiteral)
    case isIn(String, [FilterLiteral])
    case not(FilterExpression)
    case and(FilterExpression, FilterExpression)
    case or(FilterExpression, FilterExpression)

    public enum ComparisonOperator: String, Hashable, Sendable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    /// Attribute names the expression reads, in order of first appearance.
    public var attributeNames: [String] {
        var names: [String] = []
        func visit(_ expression: FilterExpression) {
            switch expression {
            case .truthy(let name), .compare(let name, _, _), .isIn(let name, _):
                if !names.contains(name) { names.append(name) }
            case .not(let inner): visit(inner)
            case .and(let left, let right), .or(let left, let right):
                visit(left)
                visit(right)
            }
        }
        visit(self)
        return names
    }

    public func matches(_ attributes: Attributes) -> Bool {
        switch self {
        case .truthy(let name):
            return attributes[name]?.isTruthy ?? false
        case .compare(let name, let op, let literal):
            guard let value = attributes[name] else {
                if case .null = literal { return op == .equal }
                return false
            }
            return Self.compare(value, op, literal)
        case .isIn(let name, let literals):
            guard let value = attributes[name] else { return false }
            return literals.contains { Self.compare(value, .equal, $0) }
        case .not(let inner):
            return !inner.matches(attributes)
        case .and(let left, let right):
            return left.matches(attributes) && right.matches(attributes)
        case .or(let left, let right):
            return left.matches(attributes) || right.matches(attributes)
        }
    }

    static func compare(_ value: AttributeValue, _ op: ComparisonOperator, _ literal: FilterLiteral) -> Bool {
        switch literal {
        case .null:
            return op == .notEqual
        case .number(let number):
            guard let left = value.numericValue else { return false }
            return op.holds(left, number)
        case .string(let text):
            let left: String
            switch value {
            case .string(let string): left = string
            case .integer, .number, .bool: left = value.text
            case .list, .object: return false
            }
            return op.holds(left, text)
        case .bool(let flag):
            let left: Bool
            switch value {
            case .bool(let bool): left = bool
            case .integer(let integer) where integer == 0 || integer == 1: left = integer == 1
            case .string(let string):
                switch string.lowercased() {
                case "true", "yes", "1", "on": left = true
                case "false", "no", "0", "off": left = false
                default: return false
                }
            default: return false
            }
            switch op {
            case .equal: return left == flag
            case .notEqual: return left != flag
            default: return false
            }
        }
    }
}

/// A literal value in a filter.
public enum FilterLiteral: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    public var description: String {
        switch self {
        case .string(let text): return "'\(text)'"
        case .number(let number): return JSONWriter.format(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        }
    }
}

extension FilterExpression.ComparisonOperator {
    func holds<T: Comparable>(_ left: T, _ right: T) -> Bool {
        switch self {
        case .equal: return left == right
        case .notEqual: return left != right
        case .less: return left < right
        case .lessOrEqual: return left <= right
        case .greater: return left > right
        case .greaterOrEqual: return left >= right
        }
    }
}
