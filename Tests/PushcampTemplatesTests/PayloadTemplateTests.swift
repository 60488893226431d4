import Foundation
import PushcampModel
import PushcampTemplates
import Testing
import Yams

@Suite("Payload templates")
struct PayloadTemplateTests {
    func compile(_ yaml: String) throws -> (PayloadTemplate?, [Diagnostic]) {
        let node = try #require(try Yams.compose(yaml: yaml))
        return PayloadTemplate.compile(node, path: "templates/p.yaml")
    }

    func render(_ payload: PayloadTemplate, _ attributes: Attributes) throws -> String {
        var writer = JSONWriter()
        var context = RenderContext(attributes: attributes, variables: .empty, strings: [:])
        try payload.render(into: &writer, context: &context)
        return writer.string
    }

    /// JSON strings written a run of plain bytes at a time read back as written, whatever they
    /// hold: every ASCII character (controls, quotes, backslashes), runs of them at either end, and
    /// non-ASCII text.
    @Test func everyStringReadsBackAsWritten() throws {
        let ascii = String((0..<128).map { Character(Unicode.Scalar(UInt8($0))) })
        let texts = [
            "", "plain", ascii, "\"", "\\", "\n\nx", "x\t", "\u{1F}\u{0}ü", "ünï 💥 \"quoted\" end\\", ascii + ascii,
            String(repeating: "a", count: 300) + "\"",
        ]
        for text in texts {
            var writer = JSONWriter()
            writer.string(text)
            let back = try JSONSerialization.jsonObject(with: Data(writer.bytes), options: .fragmentsAllowed)
            #expect(back as? String == text, "\(writer.string)")
        }
    }

    @Test func rendersValidJSONWhateverTheDataHolds() throws {
        let (payload, diagnostics) = try compile(
            """
            aps:
              alert: { title: "Hi {{name}}", body: "{{name}} said \\"{{quote}}\\"" }
              badge: "{{count}}"
              sound: default
            ids: [1, "{{id}}"]
            flag: true
            none: null
            """
        )
        #expect(diagnostics.isEmpty)
        let hostile = "\"}\n\t\\ ünï 💥 \u{01}"
        let json = try render(
            try #require(payload),
            Attributes([
                "name": .string(hostile), "quote": .string("</script>"), "count": .integer(4), "id": .string("x"),
            ])
        )
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let aps = try #require(parsed?["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: String])
        #expect(alert["title"] == "Hi " + hostile)
        #expect(aps["badge"] as? Int == 4)
        #expect(json.hasPrefix(#"{"aps":{"alert":{"title":"Hi \"}\n\t\\ ünï 💥 \u0001""#))
        #expect(json.hasSuffix(#","sound":"default"},"ids":[1,"x"],"flag":true,"none":null}"#))
    }

    @Test func shapeRecordsKeysAndConstants() throws {
        let (payload, _) = try compile("aps: { content-available: 1, alert: '{{x}}' }\nextra: { a: b }")
        let shape = try #require(payload).shape
        #expect(shape.value("aps.content-available") == .constant(.integer(1)))
        #expect(shape.value("aps.alert") == .templated)
        #expect(shape.keys(under: "aps") == ["alert", "content-available"])
        #expect(shape.has("extra.a"))
    }

    @Test func problemsAreLocatedInTheTemplateFile() throws {
        let (payload, diagnostics) = try compile("aps:\n  alert: \"Hi {{name\"\n  list: [1, 2]\n")
        #expect(payload == nil)
        #expect(
            diagnostics.first?.description
                == "templates/p.yaml:2:14: error: template: tag '{{' is never closed with '}}'"
        )
    }

    @Test func aPayloadIsADictionary() throws {
        let (_, diagnostics) = try compile("- a\n- b")
        #expect(
            diagnostics.map(\.description) == [
                "templates/p.yaml:1:1: error: a payload must be a dictionary (APNs takes a JSON object), like {aps: {alert: …}}"
            ]
        )
    }
}

@Suite("Localized strings")
struct LocalizedStringsTests {
    static let yaml = """
        en: { title: Spring sale, body: "Hi {{name}}" }
        fr: { title: Soldes, body: "Bonjour {{name}}" }
        fr-CA: { title: Soldes du printemps }
        pt_BR: { title: Liquidação }
        """

    func strings() throws -> LocalizedStrings {
        let node = try #require(try Yams.compose(yaml: Self.yaml))
        let (strings, diagnostics) = LocalizedStrings.compile(node, path: "s.yaml", defaultLocale: "en")
        #expect(diagnostics.isEmpty)
        return try #require(strings)
    }

    @Test(arguments: [
        ("fr-CA", "fr-CA", "Soldes du printemps", "Bonjour {{name}}"),
        ("fr_ca", "fr-CA", "Soldes du printemps", "Bonjour {{name}}"),
        ("fr-FR", "fr", "Soldes", "Bonjour {{name}}"),
        ("fr", "fr", "Soldes", "Bonjour {{name}}"),
        ("pt-BR", "pt_BR", "Liquidação", "Hi {{name}}"),
        ("de-DE", "en", "Spring sale", "Hi {{name}}"),
        (nil, "en", "Spring sale", "Hi {{name}}"),
    ])
    func fallsBackKeyByKey(_ locale: String?, _ resolved: String, _ title: String, _ body: String) throws {
        let result = try strings().resolve(locale)
        #expect(result.locale == resolved)
        #expect(result.strings["title"]?.text == title)
        #expect(result.strings["body"]?.text == body)
    }

    @Test func chain() {
        #expect(
            LocalizedStrings.chain(for: "zh-Hant-TW", defaultLocale: "en") == ["zh-hant-tw", "zh-hant", "zh", "en"]
        )
    }

    @Test func theDefaultLocaleMustHaveStrings() throws {
        let node = try #require(try Yams.compose(yaml: "fr: { title: Soldes }"))
        let (_, diagnostics) = LocalizedStrings.compile(node, path: "s.yaml", defaultLocale: "en")
        #expect(
            diagnostics.map(\.description) == [
                "s.yaml:1:1: error: the default locale 'en' has no strings (tables: fr); every key needs a default to fall back to"
            ]
        )
    }
}
