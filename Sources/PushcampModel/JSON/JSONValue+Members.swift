import Foundation

extension JSONValue {
    /// An object of the list commands' style: the members present (nil ones left out, so an
    /// unknown value is an absent key), keys sorted.
    public static func members(_ members: [(String, JSONValue?)]) -> JSONValue {
        .object(members.compactMap { key, value in value.map { (key, $0) } }.sorted { $0.0 < $1.0 })
    }
}

/// Rows as aligned columns, two spaces apart: cells left-aligned, except columns from
/// `rightAlignedFrom` on (numbers); the last column is not padded. One line per row. The tables
/// of `runs` and the `appstore` lists.
public enum TextColumns {
    public static func render(_ lines: [[String]], rightAlignedFrom: Int = .max) -> String {
        guard let first = lines.first else { return "" }
        let widths = (0..<first.count).map { column in lines.map { $0[column].count }.max() ?? 0 }
        return lines.map { line in
            var cells: [String] = []
            for (column, cell) in line.enumerated() {
                let padding = String(repeating: " ", count: max(0, widths[column] - cell.count))
                if column >= rightAlignedFrom {
                    cells.append(padding + cell)
                } else {
                    cells.append(column < widths.count - 1 ? cell + padding : cell)
                }
            }
            var text = cells.joined(separator: "  ")
            while text.last == " " { text.removeLast() }
            while text.first == " " { text.removeFirst() }
            return text
        }.joined(separator: "\n") + "\n"
    }
}

/// One CSV field as RFC 4180 wants it: quoted (quotes doubled) when it holds a comma, a quote or a
/// line break.
public func csvField(_ text: String) -> String {
    guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
    return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
