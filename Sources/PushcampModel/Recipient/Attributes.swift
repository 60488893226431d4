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

    /// The position of attribute `name`. Audiences have a handful of columns, looked up several times
    /// per recipient (filter, templates, locale): up to 16 names, comparing is cheaper than hashing
    /// (short names are compared as two machine words); more names use the dictionary.
    @inlinable
    public func index(of name: String) -> Int? {
        if names.count <= 16 {
            // The first match, as `indexes` keeps the first of a repeated name.
            // Lengths first: for short names they are stored inline, and most names differ in length.
            let length = name.utf8.count
            for index in names.indices where names[index].utf8.count == length && names[index] == name { return index }
            return nil
        }
        return indexes[name]
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
        guard let index = schema.index(of: name) else { return nil }
        return values[index]
    }
}

/// One row of an audience: a normalized device token, its attributes, and where it came from
/// (the 1-based row or line of its source, for locating problems).
public struct Recipient: Sendable, Hashable {
    public var token: String
    public var attributes: Attributes
    public var row: Int
    public var platform: Platform

    public init(token: String, attributes: Attributes, row: Int, platform: Platform = .ios) {
        self.token = token
        self.attributes = attributes
        self.row = row
        self.platform = platform
    }
}
