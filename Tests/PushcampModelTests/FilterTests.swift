import PushcampModel
import Testing

@Suite("where: filters")
struct FilterTests {
    static let row = Attributes([
        "opted_in": .string("true"), "platform": .string("ios"), "age": .string("34"), "country": .string("FR"),
        "beta": .bool(false), "score": .integer(7),
    ])

    @Test(arguments: [
        ("opted_in", true),
        ("!opted_in", false),
        ("not opted_in", false),
        ("platform == 'ios'", true),
        ("platform != 'ios'", false),
        ("age >= 18 && age < 65", true),
        ("age > 40 or country == \"FR\"", true),
        ("country in ['BE', 'FR']", true),
        ("country not in ['BE', 'FR']", false),
        ("beta", false),
        ("beta == false", true),
        ("score > 5", true),
        ("(platform == 'android' || platform == 'ios') and not beta", true),
        // Missing attributes: comparisons are false, != included; null tests presence.
        ("locale == 'fr'", false),
        ("locale != 'fr'", false),
        ("locale == null", true),
        ("locale != null", false),
        ("platform != null", true),
        ("not (locale == 'fr')", true),
        ("locale not in ['fr']", false),
        ("locale", false),
        // A number compared with text that is not a number is false.
        ("platform > 3", false),
    ])
    func evaluates(_ expression: String, _ expected: Bool) throws {
        let filter = try FilterParser.parse(expression).get()
        #expect(filter.matches(Self.row) == expected)
    }

    @Test(arguments: [
        ("platform = 'ios'", "'=' is not a comparison; write '=='", 9),
        ("platform == ", "expected a value after '==' but found end of condition", 12),
        ("a & b", "'&' alone is not an operator; write '&&'", 2),
        ("(a || b", "'(' at offset 1 is never closed; expected ')' but found end of condition", 7),
        ("country in 'FR'", "expected a list like ['FR', 'BE'] after 'in' but found 'FR'", 11),
        ("name == 'x", "text starting here is never closed with '", 8),
        ("a b", "unexpected 'b' after a complete condition; join conditions with && or ||", 2),
        ("x == ios", "expected a value after '==' but found attribute 'ios'; quote text like 'ios'", 5),
        ("x > null", "only == and != can compare with null", 4),
    ])
    func reportsWhereItFails(_ expression: String, _ message: String, _ offset: Int) {
        guard case .failure(let error) = FilterParser.parse(expression) else {
            Issue.record("\(expression) parsed")
            return
        }
        #expect(error.message == message)
        #expect(error.offset == offset)
    }

    @Test func listsTheAttributesItReads() throws {
        let filter = try FilterParser.parse("a && (b == 1 || not c) && a in [1]").get()
        #expect(filter.attributeNames == ["a", "b", "c"])
    }
}
