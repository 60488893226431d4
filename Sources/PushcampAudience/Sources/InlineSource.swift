import PushcampModel

/// Recipients written in the campaign file itself (`inline:`), for tests, seed lists and small sends.
public struct InlineSource: AudienceSource {
    public let name: String
    public let tokenColumn: String
    public let rows: [InlineRow]

    public init(rows: [InlineRow], name: String, tokenColumn: String = "token") {
        self.rows = rows
        self.name = name
        self.tokenColumn = tokenColumn
    }

    /// Inline rows each have their own keys.
    public func columns() throws(AudienceError) -> [String]? { nil }

    public func forEachRow(tokensOnly: Bool, _ body: (SourceRow) throws -> Void) throws {
        for row in rows {
            let names = row.values.map(\.name)
            let values = row.values.map { Optional($0.value) }
            let token = row.values.first { $0.name == tokenColumn }?.value.text
            let attributes = Attributes(schema: AttributeSchema(names: names), values: values)
            try body(SourceRow(token: token, attributes: attributes, row: row.line))
        }
    }
}
