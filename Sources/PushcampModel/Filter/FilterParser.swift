/// Parses the `where:` language. Errors carry the 0-based offset (in characters) of the problem
/// inside the expression, which the campaign reader turns into a file column.
public struct FilterParser {
    public struct ParseError: Error, Hashable, Sendable {
        public var message: String
        public var offset: Int
    }

    enum Token: Equatable {
        case identifier(String)
        case string(String)
        case number(Double)
        case symbol(String)
        case end
    }

    var tokens: [(token: Token, offset: Int)] = []
    var position = 0
    /// How deep `(` and `!` nest here, and how many comparisons the condition has so far: both are
    /// bounded, so neither parsing nor evaluating a hostile condition can exhaust the stack.
    var depth = 0
    var comparisons = 0

    /// The deepest nesting of parentheses and `!` a condition may have.
    public static let maximumDepth = 64
    /// The most comparisons a condition may join with `&&` and `||`.
    public static let maximumComparisons = 500

    public static func parse(_ text: String) -> Result<FilterExpression, ParseError> {
        do {
            var parser = FilterParser()
            parser.tokens = try tokenize(Array(text))
            let expression = try parser.parseOr()
            guard parser.current == .end else {
                throw ParseError(
                    message:
                        "unexpected \(parser.describeCurrent) after a complete condition; join conditions with && or ||",
                    offset: parser.currentOffset
                )
            }
            return .success(expression)
        } catch let error as ParseError {
            return .failure(error)
        } catch {
            return .failure(ParseError(message: "\(error)", offset: 0))
        }
    }

    var current: Token { tokens[position].token }
    var currentOffset: Int { tokens[position].offset }

    var describeCurrent: String {
        switch current {
        case .identifier(let name): return "'\(name)'"
        case .string(let text): return "'\(text)'"
        case .number(let number): return JSONWriter.format(number)
        case .symbol(let symbol): return "'\(symbol)'"
        case .end: return "end of condition"
        }
    }

    mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    func isKeyword(_ word: String) -> Bool {
        if case .identifier(let name) = current, name == word { return true }
        return false
    }

    mutating func parseOr() throws(ParseError) -> FilterExpression {
        var left = try parseAnd()
        while current == .symbol("||") || isKeyword("or") {
            advance()
            left = .or(left, try parseAnd())
        }
        return left
    }

    mutating func parseAnd() throws(ParseError) -> FilterExpression {
        var left = try parseUnary()
        while current == .symbol("&&") || isKeyword("and") {
            advance()
            left = .and(left, try parseUnary())
        }
        return left
    }

    mutating func parseUnary() throws(ParseError) -> FilterExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            throw ParseError(
                message: "the condition nests parentheses and '!' more than \(Self.maximumDepth) deep",
                offset: currentOffset
            )
        }
        if current == .symbol("!") || isKeyword("not") {
            advance()
            return .not(try parseUnary())
        }
        if current == .symbol("(") {
            let open = currentOffset
            advance()
            let inner = try parseOr()
            guard current == .symbol(")") else {
                throw ParseError(
                    message: "'(' at offset \(open + 1) is never closed; expected ')' but found \(describeCurrent)",
                    offset: currentOffset
                )
            }
            advance()
            return inner
        }
        return try parseComparison()
    }

    mutating func parseComparison() throws(ParseError) -> FilterExpression {
        comparisons += 1
        guard comparisons <= Self.maximumComparisons else {
            throw ParseError(
                message:
                    "the condition has more than \(Self.maximumComparisons) comparisons; filter the audience at its source",
                offset: currentOffset
            )
        }
        guard case .identifier(let name) = current, !["and", "or", "not", "in", "true", "false", "null"].contains(name)
        else {
            throw ParseError(message: "expected an attribute name but found \(describeCurrent)", offset: currentOffset)
        }
        advance()
        if case .symbol(let symbol) = current, let op = FilterExpression.ComparisonOperator(rawValue: symbol) {
            advance()
            let literal = try parseLiteral(after: symbol)
            if case .null = literal, op != .equal, op != .notEqual {
                throw ParseError(message: "only == and != can compare with null", offset: tokens[position - 1].offset)
            }
            return .compare(name, op, literal)
        }
        if current == .symbol("=") {
            throw ParseError(message: "'=' is not a comparison; write '=='", offset: currentOffset)
        }
        var negated = false
        if isKeyword("not") {
            let saved = position
            advance()
            guard isKeyword("in") else {
                position = saved
                return .truthy(name)
            }
            negated = true
        }
        if isKeyword("in") {
            advance()
            let list = try parseList()
            return negated ? .not(.compare(name, .equal, .null)).and(.not(.isIn(name, list))) : .isIn(name, list)
        }
        return .truthy(name)
    }

    mutating func parseList() throws(ParseError) -> [FilterLiteral] {
        guard current == .symbol("[") else {
            throw ParseError(
                message: "expected a list like ['FR', 'BE'] after 'in' but found \(describeCurrent)",
                offset: currentOffset
            )
        }
        advance()
        var items: [FilterLiteral] = []
        while current != .symbol("]") {
            items.append(try parseLiteral(after: items.isEmpty ? "[" : ","))
            if current == .symbol(",") {
                advance()
            } else if current != .symbol("]") {
                throw ParseError(
                    message: "expected ',' or ']' in a list but found \(describeCurrent)",
                    offset: currentOffset
                )
            }
        }
        advance()
        return items
    }

    mutating func parseLiteral(after what: String) throws(ParseError) -> FilterLiteral {
        defer { advance() }
        switch current {
        case .string(let text): return .string(text)
        case .number(let number): return .number(number)
        case .identifier("true"): return .bool(true)
        case .identifier("false"): return .bool(false)
        case .identifier("null"): return .null
        case .identifier(let name):
            throw ParseError(
                message: "expected a value after '\(what)' but found attribute '\(name)'; quote text like '\(name)'",
                offset: currentOffset
            )
        default:
            throw ParseError(
                message: "expected a value after '\(what)' but found \(describeCurrent)",
                offset: currentOffset
            )
        }
    }

    static func tokenize(_ characters: [Character]) throws(ParseError) -> [(token: Token, offset: Int)] {
        var tokens: [(token: Token, offset: Int)] = []
        var index = 0
        while index < characters.count {
            let character = characters[index]
            let start = index
            if character == " " || character == "\t" || character == "\n" {
                index += 1
                continue
            }
            if character.isLetter || character == "_" {
                var name = ""
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber || characters[index] == "_"
                        || characters[index] == "." || characters[index] == "-"
                {
                    name.append(characters[index])
                    index += 1
                }
                tokens.append((.identifier(name), start))
                continue
            }
            if character.isNumber
                || (character == "-" && index + 1 < characters.count && characters[index + 1].isNumber)
            {
                var text = String(character)
                index += 1
                while index < characters.count, characters[index].isNumber || characters[index] == "." {
                    text.append(characters[index])
                    index += 1
                }
                guard let number = Double(text) else {
                    throw ParseError(message: "'\(text)' is not a number", offset: start)
                }
                tokens.append((.number(number), start))
                continue
            }
            if character == "'" || character == "\"" {
                var text = ""
                index += 1
                while index < characters.count, characters[index] != character {
                    if characters[index] == "\\", index + 1 < characters.count {
                        index += 1
                    }
                    text.append(characters[index])
                    index += 1
                }
                guard index < characters.count else {
                    throw ParseError(message: "text starting here is never closed with \(character)", offset: start)
                }
                index += 1
                tokens.append((.string(text), start))
                continue
            }
            let two = index + 1 < characters.count ? String([character, characters[index + 1]]) : ""
            if ["==", "!=", "<=", ">=", "&&", "||"].contains(two) {
                tokens.append((.symbol(two), start))
                index += 2
                continue
            }
            if "<>!()[],=".contains(character) {
                tokens.append((.symbol(String(character)), start))
                index += 1
                continue
            }
            if character == "&" || character == "|" {
                throw ParseError(
                    message: "'\(character)' alone is not an operator; write '\(character)\(character)'",
                    offset: start
                )
            }
            throw ParseError(message: "unexpected character '\(character)'", offset: start)
        }
        tokens.append((.end, characters.count))
        return tokens
    }
}

extension FilterExpression {
    func and(_ other: FilterExpression) -> FilterExpression { .and(self, other) }
}
