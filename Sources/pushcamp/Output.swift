import Foundation

/// Writes a line to standard error.
func printError(_ line: String) {
    FileHandle.standardError.write(Array((line + "\n").utf8).withUnsafeBufferPointer { Data(buffer: $0) })
}

/// Rows as aligned columns, two spaces apart: cells left-aligned, except columns from
/// `rightAlignedFrom` on (numbers); the last column is not padded. One line per row.
func columns(_ lines: [[String]], rightAlignedFrom: Int = .max) -> String {
    guard let first = lines.first else { return "" }
    let widths = (0..<first.count).map { column in lines.map { $0[column].count }.max() ?? 0 }
    return lines.map { line in
        line.enumerated().map { column, cell in
            if column >= rightAlignedFrom { return String(repeating: " ", count: widths[column] - cell.count) + cell }
            return column < widths.count - 1
                ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0) : cell
        }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }.joined(separator: "\n") + "\n"
}
