/// The attribute names of a source (a CSV header, a query's columns), shared by all of its rows so a
/// row is a plain array of values.
public final class AttributeSchema: Sendable, Hashable {
    public let names: [String]
    public let indexes: [String: Int]

    public init(names: [String]) {
        self.names = names
        var indexes: [String: Int] = [:]
        for (index, name) in names.enumerated() where indexes[name] == nil {
            indexes[name] = index
        }
        self.indexes = indexes
    }

    public static func == (lhs: AttributeSchema, rhs: AttributeSchema) -> Bool {
        lhs === rhs || lhs.names == rhs.names
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(names)
    }
}

/// A recipient's attributes: values by position in a shared schema; `nil` is an absent attribute.
public struct Attributes: Sendable, Hashable {
    public var schema: AttributeSchema
    public var values: [AttributeValue?]

    public init(schema: AttributeSchema, values: [AttributeValue?]) {
        precondition(schema.names.count == values.count, "one value per attribute name")
        self.schema = schema
        self.values = values
    }

    public init(_ pairs: KeyValuePairs<String, AttributeValue>) {
        self.init(schema: AttributeSchema(names: pairs.map(\.key)), values: pairs.map(\.value))
    }

    public static let empty = Attributes(schema: AttributeSchema(names: []), values: [])

    @inlinable
    public subscript(name: String) -> AttributeValue? {
        guard let index = schema.indexes[name] else { return nil }
        return values[index]
    }
}

/// One row of an audience: a normalized device token, its attributes, and where it came from
/// (the 1-based row or line of its source, for locating problems).
public struct Recipient: Sendable, Hashable {
    public var token: String
    public var attributes: Attributes
    public var row: Int

    public init(token: String, attributes: Attributes, row: Int) {
        self.token = token
        self.attributes = attributes
        self.row = row
    }
}
