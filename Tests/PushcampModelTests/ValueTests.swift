import PushcampModel
import Testing

@Suite("Durations, rates, shares, times, tokens")
struct ValueTests {
    @Test(arguments: [("24h", 86_400), ("90s", 90), ("15m", 900), ("1h30m", 5400), ("7d", 604_800), ("0", 0)])
    func durations(_ text: String, _ seconds: Int64) throws {
        #expect(try TimeSpan.parse(text).get().seconds == seconds)
    }

    @Test(arguments: ["24", "h", "1.5h", "24 hours", "-1h"])
    func badDurations(_ text: String) {
        #expect((try? TimeSpan.parse(text).get()) == nil)
    }

    @Test(arguments: [("2000/s", 2000.0), ("90000/min", 1500.0), ("3600000/h", 1000.0), ("0.5/s", 0.5)])
    func rates(_ text: String, _ perSecond: Double) throws {
        #expect(try Rate.parse(text).get().perSecond == perSecond)
    }

    @Test func badRates() {
        #expect((try? Rate.parse("2000").get()) == nil)
        #expect((try? Rate.parse("0/s").get()) == nil)
        #expect((try? Rate.parse("fast/s").get()) == nil)
    }

    @Test(arguments: [("5%", 500), ("2.5%", 250), ("0%", 0), ("100%", 10_000)])
    func shares(_ text: String, _ basisPoints: Int) throws {
        #expect(try Share.parse(text).get().basisPoints == basisPoints)
    }

    @Test func badShares() {
        #expect((try? Share.parse("5").get()) == nil)
        #expect((try? Share.parse("101%").get()) == nil)
        #expect((try? Share.parse("0.001%").get()) == nil)
    }

    @Test func invalidTokenLimits() throws {
        #expect(try InvalidLimit.parse("0").get() == .count(0))
        #expect(try InvalidLimit.parse(" 25 ").get() == .count(25))
        #expect(try InvalidLimit.parse("2%").get() == .share(Share(basisPoints: 200)))
        for bad in ["-1", "lots", "2.5", "101%", ""] {
            #expect(throws: ValueError.self, "\(bad)") { try InvalidLimit.parse(bad).get() }
        }
        // Within a limit when at or under it; a share of the rows read, compared exactly.
        #expect(InvalidLimit.count(3).allows(3, of: 8) && !InvalidLimit.count(3).allows(4, of: 8))
        #expect(InvalidLimit.share(Share(basisPoints: 5_000)).allows(4, of: 8))
        #expect(!InvalidLimit.share(Share(basisPoints: 4_999)).allows(4, of: 8))
        #expect(InvalidLimit.share(Share(basisPoints: 0)).allows(0, of: 0))
        #expect(!InvalidLimit.count(0).allows(1, of: 1_000_000))
        #expect("\(InvalidLimit.share(Share(basisPoints: 250)))" == "2.5%" && "\(InvalidLimit.count(7))" == "7")
    }

    @Test(arguments: [
        ("2027-03-20T09:00:00Z", 1_805_533_200, "2027-03-20T09:00:00Z"),
        ("2027-03-20T09:00+01:00", 1_805_529_600, "2027-03-20T08:00:00Z"),
        ("1970-01-01T00:00:00Z", 0, "1970-01-01T00:00:00Z"),
        ("2024-02-29T23:59:59-05:30", 1_709_270_999, "2024-03-01T05:29:59Z"),
    ])
    func timestamps(_ text: String, _ seconds: Int64, _ utc: String) throws {
        let timestamp = try Timestamp.parse(text).get()
        #expect(timestamp.secondsSince1970 == seconds)
        #expect(timestamp.description == utc)
    }

    @Test(arguments: ["2027-03-20T09:00", "2027-02-30T09:00Z", "2027-03-20", "tomorrow"])
    func badTimestamps(_ text: String) {
        #expect((try? Timestamp.parse(text).get()) == nil)
    }

    /// Issue 43: a time before 1970 (year 0001, a typo) would make a negative `apns-expiration`.
    @Test func timesBefore1970AreRefused() {
        guard case .failure(let error) = Timestamp.parse("0001-01-01T00:00:00Z") else {
            Issue.record("year 0001 was accepted")
            return
        }
        #expect(error.message.contains("is in the year 1; times run from 1970"), "\(error.message)")
        #expect((try? Timestamp.parse("1969-12-31T23:59:59Z").get()) == nil)
        #expect((try? Timestamp.parse("1970-01-01T00:30+01:00").get()) == nil)
        #expect((try? LocalDateTime.parse("0001-01-01T09:00").get()) == nil)
        #expect((try? LocalDateTime.parse("2027-03-20T09:00").get()) != nil)
    }

    @Test func environmentReferences() throws {
        let value = try ConfigString.parse("${env:KEYS}/shop-${env:ENV_NAME}.p8").get()
        #expect(value.environmentNames == ["KEYS", "ENV_NAME"])
        #expect(try value.resolve(["KEYS": "/secrets", "ENV_NAME": "prod"]).get() == "/secrets/shop-prod.p8")
        guard case .failure(let error) = value.resolve(["KEYS": "/secrets"]) else {
            Issue.record("resolved without ENV_NAME")
            return
        }
        #expect(
            error.message
                == "environment variable ENV_NAME is not set (needed by '${env:KEYS}/shop-${env:ENV_NAME}.p8')"
        )
        #expect((try? ConfigString.parse("${KEYS}").get()) == nil)
        #expect((try? ConfigString.parse("${env:KEYS").get()) == nil)
    }

    @Test func aPathsLeadingTildeIsTheHomeFolder() throws {
        let home = ["HOME": "/home/ada"]
        #expect(try ConfigString.parse("~/keys/a.p8").get().resolvePath(home).get() == "/home/ada/keys/a.p8")
        #expect(try ConfigString.parse("~").get().resolvePath(home).get() == "/home/ada")
        // Only a leading ~ alone or before /: ~bob and a ~ inside are names, as a shell with no user bob.
        #expect(try ConfigString.parse("~bob/a.p8").get().resolvePath(home).get() == "~bob/a.p8")
        #expect(try ConfigString.parse("keys/~/a.p8").get().resolvePath(home).get() == "keys/~/a.p8")
        // From the environment too, and never for values that are not paths.
        let fromEnvironment = try ConfigString.parse("${env:KEY_FILE}").get()
        #expect(try fromEnvironment.resolvePath(home.merging(["KEY_FILE": "~/k.p8"]) { $1 }).get() == "/home/ada/k.p8")
        #expect(try ConfigString.parse("~secret").get().resolve(home).get() == "~secret")
        guard case .failure(let error) = try ConfigString.parse("~/a.p8").get().resolvePath([:]) else {
            Issue.record("expanded without HOME")
            return
        }
        #expect(error.message == "'~/a.p8' starts with ~ but HOME is not set")
    }

    @Test func deviceTokens() throws {
        let token = String(repeating: "ab", count: 32)
        #expect(try DeviceToken.normalize(token).get() == token)
        #expect(try DeviceToken.normalize(" " + token.uppercased() + " ").get() == token)
        #expect(DeviceToken.normalize("") == .failure(.empty))
        #expect(DeviceToken.normalize(String(repeating: "zz", count: 32)) == .failure(.notHex))
        #expect(DeviceToken.normalize(token + "a") == .failure(.oddLength))
        #expect(DeviceToken.normalize("abcd") == .failure(.tooShort))
        #expect(DeviceToken.normalize(String(repeating: "ab", count: 101)) == .failure(.tooLong))
        // Two mistakes said as themselves: Xcode's description of the token's Data, and an Android
        // device's FCM registration token in a row read as iOS.
        #expect(DeviceToken.normalize("<3f1d6f0c 4a8e77b1 9c0d51e3>") == .failure(.xcodeDescription))
        #expect(DeviceToken.normalize(" <\(token)> ") == .failure(.xcodeDescription))
        #expect(DeviceToken.normalize("<not hex>") == .failure(.notHex))
        let fcm = "cR6r3wXcT0qN7yLhE2vKpZ:" + "APA91b" + String(repeating: "Hx7_kQ-2", count: 18)
        #expect(DeviceToken.normalize(fcm) == .failure(.registrationToken))
        #expect(DeviceToken.Problem.registrationToken.explanation.contains("platform column saying android"))
        #expect(DeviceToken.Problem.xcodeDescription.explanation.contains("String(format: \"%02x\", $0)"))
    }

    @Test func suggestions() {
        #expect(Suggestion.closest(to: "colapse_id", in: ["collapse_id", "priority"]) == "collapse_id")
        #expect(Suggestion.closest(to: "xyz", in: ["collapse_id", "priority"]) == nil)
    }

    @Test func jsonParser() throws {
        let value = try JSONParser.parse(Array(#"{"a": [1, 2.5, "x\u00e9\n"], "b": null, "c": {"d": true}}"#.utf8))
        guard case .object(let object)? = value else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == ["a", "c"])
        #expect(object["a"] == .list([.integer(1), .number(2.5), .string("xé\n")]))
        #expect(throws: JSONParser.ParseError.self) { try JSONParser.parse(Array(#"{"a": }"#.utf8)) }
    }
}
