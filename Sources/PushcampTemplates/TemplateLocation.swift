import PushcampModel
import Yams

public enum TemplateLocation {
    /// Compiles the text of a YAML scalar; a parse error is located at its character in the file.
    public static func compile(_ node: Node, text: String, path: String) -> Result<MustacheTemplate, DiagnosticsError> {
        do throws(MustacheTemplate.ParseError) {
            return .success(try MustacheTemplate(text))
        } catch {
            let at = NodeLocation(node, path: path).location(offset: error.offset)
            return .failure(DiagnosticsError(.error("template: \(error.message)", at: at)))
        }
    }
}
