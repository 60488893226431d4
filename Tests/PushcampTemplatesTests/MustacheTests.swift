import PushcampModel
import PushcampTemplates
import Testing

@Suite("Mustache leaves")
struct MustacheTests {
    static let attributes = Attributes([
        "first_name": .string("Zoë \"Z\" <O'Neil>\n"), "tier": .string("gold"), "count": .integer(3),
        "vip": .string("false"), "items": .list([.string("a"), .string("b")]),
        "address": .object(AttributeObject(keys: ["city"], values: [.string("Lyon")])),
    ])
    static let variables = Attributes(["discount": .string("-20%"), "tier": .string("ignored: attributes win")])

    func render(_ text: String, strings: [String: MustacheTemplate] = [:]) throws -> String {
        let template = try MustacheTemplate(text)
        var context = RenderContext(attributes: Self.attributes, variables: Self.variables, strings: strings)
        return try template.renderText(context: &context)
    }

    @Test(arguments: [
        ("Hi {{first_name}}", "Hi Zoë \"Z\" <O'Neil>\n"),
        ("{{{tier}}} {{& tier}} {{discount}}", "gold gold -20%"),
        ("{{#vip}}VIP{{/vip}}{{^vip}}regular{{/vip}}", "regular"),
        ("{{#items}}[{{.}}]{{/items}}", "[a][b]"),
        ("{{address.city}} {{#address}}{{city}}/{{tier}}{{/address}}", "Lyon Lyon/gold"),
        ("{{#nothing}}x{{/nothing}}{{^nothing}}none{{/nothing}}", "none"),
        ("{{! a comment }}{{count}} items", "3 items"),
    ])
    func renders(_ template: String, _ expected: String) throws {
        #expect(try render(template) == expected)
    }

    @Test func aMissingVariableIsAnErrorNotAnEmptyString() throws {
        #expect(throws: RenderError.missingVariable("last_name")) { try render("Hi {{last_name}}") }
        #expect(throws: RenderError.missingVariable("address.zip")) { try render("{{address.zip}}") }
    }

    @Test func localizedStringsAreRenderedInTheRecipientsContext() throws {
        let strings = ["greeting": try MustacheTemplate("Bonjour {{first_name}}")]
        #expect(try render("{{> greeting}}!", strings: strings) == "Bonjour Zoë \"Z\" <O'Neil>\n!")
        #expect(throws: RenderError.missingString("farewell")) { try render("{{> farewell}}", strings: strings) }
    }

    @Test(arguments: [
        ("Hi {{name", "tag '{{' is never closed with '}}'", 3),
        ("{{#a}}x", "section '{{#a}}' is never closed with '{{/a}}'", 0),
        ("{{#a}}x{{/b}}", "'{{/b}}' does not match the open section '{{#a}}'", 7),
        ("x{{/a}}", "'{{/a}}' closes a section that was never opened", 1),
        ("{{=<% %>=}}", "changing delimiters ({{= =}}) is not supported", 0),
        ("{{first name}}", "'first name' is not a name; names are letters, digits, '_', '-' and '.' between parts", 0),
        ("{{}}", "empty tag '{{}}'", 0),
    ])
    func parseErrorsSayWhere(_ text: String, _ message: String, _ offset: Int) {
        #expect(throws: MustacheTemplate.ParseError(message: message, offset: offset)) { try MustacheTemplate(text) }
    }

    @Test func referencesAndLocalizedKeys() throws {
        let template = try MustacheTemplate("{{a}} {{#b}}{{c}}{{/b}} {{> d}} {{a.x}}")
        #expect(template.references.map(\.name) == ["a", "b", "c"])
        #expect(template.references.map(\.isNested) == [false, false, true])
        #expect(template.localizedKeys.map(\.key) == ["d"])
    }
}
