import Foundation
import PushcampAPNsCore
import Yams

/// Reads a campaign file into a `Campaign`, reporting every problem of the file at once.
public enum CampaignReader {
    static let topKeys = [
        "campaign", "description", "app", "variables", "audience", "message", "schedule", "quiet_hours", "throttle",
        "retry", "frequency_cap", "trigger", "channel", "readout",
    ]
    static let audienceKeys = [
        "source", "where", "exclude", "registered_at", "subscriptions", "user_key", "platform", "max_invalid",
        "sample",
    ]
    static let messageKeys = [
        "push_type", "priority", "expiration", "collapse_id", "topic", "payload", "strings", "locale", "variants",
        "holdout", "title", "body", "image", "data", "android",
    ]
    static let androidKeys = [
        "title", "body", "image", "channel_id", "tag", "click_action", "sound", "icon", "color", "notification_count",
        "ttl", "collapse_key", "priority", "data", "restricted_package_name",
    ]
    static let variantKeys = ["name", "weight", "payload", "strings", "variables"]

    /// The campaign, or nil when the file has errors; diagnostics hold every problem found.
    public static func read(_ document: YAMLDocument) -> (Campaign?, [Diagnostic]) {
        let reader = YAMLReader(path: document.path)
        guard let root = document.root else {
            reader.error(
                "the campaign file is empty; it needs at least 'campaign', 'app', 'audience' and 'message'",
                at: SourceLocation(path: document.path, line: 1, column: 1)
            )
            return (nil, reader.diagnostics)
        }
        guard
            let top = reader.mapping(
                root,
                in: "campaign file",
                allowed: topKeys,
                required: ["campaign", "app", "message"]
            )
        else {
            return (nil, reader.diagnostics)
        }
        // A broadcast campaign names a channel instead of an audience: one request reaches every
        // device subscribed to it.
        let channel = top["channel"].flatMap { node -> (name: String, location: SourceLocation)? in
            reader.string(node, "channel").map { ($0, reader.location(node)) }
        }
        switch (top.keyNode("channel"), top["audience"]) {
        case (.some(let channelNode), .some):
            reader.error(
                "a campaign sends to an 'audience' (each device) or to a 'channel' (one broadcast), not both",
                at: channelNode
            )
        case (nil, nil):
            reader.error(
                "'campaign file' is missing required key 'audience' (the devices to send to) or 'channel' (a broadcast channel of pushcamp.yaml)",
                at: root
            )
        default:
            break
        }
        let id = top["campaign"].flatMap { readID($0, reader) }
        let description = top["description"].flatMap { reader.scalar($0, "description") }
        let apps = top["app"].map { readApps($0, reader) } ?? []
        let app = apps.first?.name
        let variables = top["variables"].map { readVariables($0, "variables", reader) } ?? []
        let audience =
            channel != nil
            ? AudienceSpec.none(at: reader.location(top["channel"]))
            : top["audience"].flatMap { readAudience($0, reader) }
        let message = top["message"].flatMap { readMessage($0, reader) }
        let schedule = top["schedule"].flatMap { readSchedule($0, reader) }
        let trigger = top["trigger"].flatMap { readTrigger($0, reader) }
        if let triggerNode = top.keyNode("trigger"), top["schedule"] != nil {
            reader.error(
                "a campaign has a 'schedule' or a 'trigger', not both: a trigger sends when its event arrives",
                at: triggerNode
            )
        }
        let quietHours = top["quiet_hours"].flatMap { readQuietHours($0, schedule: schedule, reader) }
        let throttle = top["throttle"].map { readThrottle($0, reader) } ?? ThrottleSpec()
        let retry = top["retry"].map { readRetry($0, reader) } ?? RetrySpec()
        let frequencyCap = top["frequency_cap"].flatMap { readFrequencyCap($0, reader) }
        let readout = top["readout"].flatMap { readReadout($0, reader) }
        if let readoutNode = top.keyNode("readout"), channel != nil {
            reader.error(
                "a broadcast has no readout: one request to a channel has no recipients to compare",
                at: readoutNode
            )
        }

        guard !reader.diagnostics.hasErrors, let id, let app, let audience, let message else {
            return (nil, reader.diagnostics)
        }
        let campaign = Campaign(
            id: id,
            description: description,
            app: app,
            variables: variables,
            audience: audience,
            message: message,
            schedule: schedule,
            trigger: trigger,
            quietHours: quietHours,
            throttle: throttle,
            retry: retry,
            frequencyCap: frequencyCap,
            path: document.path,
            appLocation: reader.location(top["app"]),
            channel: channel
        )
        var result = campaign
        result.apps = apps
        result.readout = readout
        return (result, reader.diagnostics)
    }

    /// `readout: { primary: converted, guardrails: [unsubscribed], not_in_holdout: [opened], window: 72h }`.
    static func readReadout(_ node: Node, _ reader: YAMLReader) -> ReadoutSpec? {
        guard
            let map = reader.mapping(
                node,
                in: "readout",
                allowed: ["primary", "guardrails", "not_in_holdout", "window"]
            )
        else { return nil }
        /// A list of event names (one name alone is a list of one), each once.
        func events(_ key: String) -> [String]? {
            guard let value = map[key] else { return nil }
            let items = if case .sequence = value { reader.sequence(value, "readout.\(key)") ?? [] } else { [value] }
            var names: [String] = []
            for (index, item) in items.enumerated() {
                guard let name = reader.string(item, "readout.\(key)[\(index)]") else { continue }
                if names.contains(name) {
                    reader.error("readout.\(key) names event '\(name)' twice", at: item)
                    continue
                }
                names.append(name)
            }
            return names
        }
        var spec = ReadoutSpec()
        spec.primary = map["primary"].flatMap { reader.string($0, "readout.primary") }
        spec.guardrails = events("guardrails") ?? []
        spec.notInHoldout = events("not_in_holdout") ?? ReadoutSpec.defaultNotInHoldout
        if let primary = spec.primary, spec.guardrails.contains(primary), let guardrails = map["guardrails"] {
            reader.error(
                "readout.guardrails names '\(primary)', the primary event: a guardrail is an event the winner must not harm",
                at: guardrails
            )
        }
        if let windowNode = map["window"], let window = reader.parsed(windowNode, "readout.window", TimeSpan.parse) {
            if window.seconds < 60 || window.seconds > 90 * 86_400 {
                reader.error("readout.window is between 1m and 90d (for example 72h)", at: windowNode)
            } else {
                spec.window = window.seconds
            }
        }
        return spec
    }

    /// `app: shop-ios`, or `app: [shop-ios, shop-android]` for a campaign reaching both platforms.
    static func readApps(_ node: Node, _ reader: YAMLReader) -> [(name: String, location: SourceLocation)] {
        guard case .sequence = node else {
            return reader.string(node, "app").map { [($0, reader.location(node))] } ?? []
        }
        let items = reader.sequence(node, "app") ?? []
        guard (1...2).contains(items.count) else {
            reader.error(
                "'app' lists \(items.count) apps; a campaign names one app, or an iOS app and an Android app",
                at: node
            )
            return []
        }
        var apps: [(name: String, location: SourceLocation)] = []
        for (index, item) in items.enumerated() {
            guard let name = reader.string(item, "app[\(index)]") else { continue }
            if apps.contains(where: { $0.name == name }) {
                reader.error("app '\(name)' is named twice", at: item)
                continue
            }
            apps.append((name, reader.location(item)))
        }
        return apps
    }

    static func readID(_ node: Node, _ reader: YAMLReader) -> String? {
        guard let id = reader.string(node, "campaign") else { return nil }
        let allowed = id.utf8.allSatisfy { byte in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F || byte == 0x2E
        }
        guard allowed, id.utf8.count <= 64, let first = id.utf8.first, first != 0x2D, first != 0x2E else {
            reader.error(
                "campaign id '\(id)' must be 1 to 64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit (it keys the journal, so keep it stable)",
                at: node
            )
            return nil
        }
        return id
    }

    // MARK: Audience

    static func readAudience(_ node: Node, _ reader: YAMLReader) -> AudienceSpec? {
        guard let map = reader.mapping(node, in: "audience", allowed: audienceKeys, required: ["source"]) else {
            return nil
        }
        let source = map["source"].flatMap { readSource($0, "audience.source", reader) }
        var filter: FilterExpression?
        var filterText: String?
        var filterLocation: SourceLocation?
        if let whereNode = map["where"], let text = reader.string(whereNode, "where") {
            filterText = text
            filterLocation = reader.location(whereNode)
            switch FilterParser.parse(text) {
            case .success(let expression): filter = expression
            case .failure(let error):
                reader.error(
                    "invalid filter: \(error.message)",
                    at: column(of: whereNode, offset: error.offset, reader)
                )
            }
        }
        var exclude: [SourceSpec] = []
        if let excludeNode = map["exclude"] {
            let items: [Node]
            if case .sequence = excludeNode {
                items = reader.sequence(excludeNode, "audience.exclude") ?? []
            } else {
                items = [excludeNode]
            }
            for (index, item) in items.enumerated() {
                if let spec = readSource(item, "audience.exclude[\(index)]", reader) { exclude.append(spec) }
            }
        }
        let registeredAt = map["registered_at"].flatMap { reader.string($0, "registered_at") }
        let subscriptions = map["subscriptions"].flatMap { readSubscriptions($0, reader) }
        let userKey = map["user_key"].flatMap { reader.string($0, "audience.user_key") }
        let platformColumn = map["platform"].flatMap { reader.string($0, "audience.platform") }
        let maxInvalid = map["max_invalid"].flatMap { reader.parsed($0, "audience.max_invalid", InvalidLimit.parse) }
        let sample = map["sample"].flatMap { readSource($0, "audience.sample", reader) }
        guard let source else { return nil }
        var spec = AudienceSpec(
            source: source,
            filter: filter,
            filterText: filterText,
            filterLocation: filterLocation,
            exclude: exclude,
            registeredAt: registeredAt,
            subscriptions: subscriptions,
            userKey: userKey
        )
        spec.platformColumn = platformColumn
        spec.maxInvalid = maxInvalid
        spec.sample = sample
        return spec
    }

    /// `audience.subscriptions: { status, product, auto_renew, attribute, by }`.
    static func readSubscriptions(_ node: Node, _ reader: YAMLReader) -> SubscriptionAudienceSpec? {
        let context = "audience.subscriptions"
        guard
            let map = reader.mapping(
                node,
                in: context,
                allowed: ["status", "product", "auto_renew", "attribute", "by"]
            )
        else { return nil }
        var spec = SubscriptionAudienceSpec(location: reader.location(node))
        if let statusNode = map["status"] {
            for (item, status) in strings(statusNode, "\(context).status", reader) {
                guard SubscriptionAudienceSpec.statuses.contains(status) else {
                    let hint = Suggestion.didYouMean(status, in: SubscriptionAudienceSpec.statuses)
                    let known =
                        hint.isEmpty
                        ? " (expected one of: \(SubscriptionAudienceSpec.statuses.joined(separator: ", ")))" : hint
                    reader.error("unknown subscription status '\(status.excerpt())'\(known)", at: item)
                    continue
                }
                spec.statuses.append(status)
            }
        }
        if let productNode = map["product"] {
            spec.products = strings(productNode, "\(context).product", reader).map(\.text)
        }
        spec.autoRenew = map["auto_renew"].flatMap { reader.bool($0, "\(context).auto_renew") }
        if let attribute = map["attribute"].flatMap({ reader.string($0, "\(context).attribute") }) {
            spec.attribute = attribute
        }
        if let byNode = map["by"], let by = reader.string(byNode, "\(context).by") {
            guard let key = SubscriptionAudienceSpec.Key(rawValue: by) else {
                let keys = SubscriptionAudienceSpec.Key.allCases.map(\.rawValue)
                reader.error(
                    "'\(context).by' must be \(keys.joined(separator: " or ")), found '\(by.excerpt())'",
                    at: byNode
                )
                return nil
            }
            spec.key = key
            if map["attribute"] == nil { spec.attribute = key.rawValue }
        }
        return spec
    }

    /// `trigger: { app_store: TYPE, subtype: SUBTYPE or [..], delay: SPAN }`.
    static func readTrigger(_ node: Node, _ reader: YAMLReader) -> TriggerSpec? {
        guard
            let map = reader.mapping(
                node,
                in: "trigger",
                allowed: ["app_store", "subtype", "delay"],
                required: ["app_store"]
            )
        else { return nil }
        guard let typeNode = map["app_store"], let type = reader.string(typeNode, "trigger.app_store") else {
            return nil
        }
        let known = TriggerSpec.appStoreTypes[type]
        if known == nil {
            let hint = Suggestion.didYouMean(type, in: TriggerSpec.appStoreTypes.keys.sorted())
            reader.warning(
                "'\(type.excerpt())' is not an App Store notification type Apple documents (the trigger fires only if Apple sends one)\(hint)",
                at: typeNode
            )
        }
        var spec = TriggerSpec(appStoreType: type, location: reader.location(node))
        if let subtypeNode = map["subtype"] {
            for (item, subtype) in strings(subtypeNode, "trigger.subtype", reader) {
                if let known, !known.contains(subtype) {
                    let documented = known.isEmpty ? "none" : known.joined(separator: ", ")
                    reader.warning(
                        "Apple documents no subtype '\(subtype.excerpt())' for \(type) (documented: \(documented)); the trigger fires only if Apple sends one",
                        at: item
                    )
                }
                spec.subtypes.append(subtype)
            }
        }
        if let delayNode = map["delay"], let delay = reader.parsed(delayNode, "trigger.delay", TimeSpan.parse) {
            guard delay.seconds <= 7 * 86_400 else {
                reader.error("'trigger.delay' is \(delay); a trigger waits at most 7d", at: delayNode)
                return nil
            }
            spec.delay = delay
        }
        return spec
    }

    /// One string, or a list of them, with the node each came from.
    static func strings(_ node: Node, _ what: String, _ reader: YAMLReader) -> [(node: Node, text: String)] {
        let items: [Node]
        if case .sequence = node {
            items = reader.sequence(node, what) ?? []
        } else {
            items = [node]
        }
        return items.enumerated().compactMap { index, item in
            reader.string(item, items.count == 1 ? what : "\(what)[\(index)]").map { (item, $0) }
        }
    }

    /// Where character `offset` of a one-line scalar is in the file.
    static func column(of node: Node, offset: Int, _ reader: YAMLReader) -> SourceLocation {
        var location = reader.location(node)
        if let column = location.column, case .scalar(let scalar) = node {
            let quoted = scalar.style == .singleQuoted || scalar.style == .doubleQuoted
            location.column = column + offset + (quoted ? 1 : 0)
        }
        return location
    }

    static func readSource(_ node: Node, _ context: String, _ reader: YAMLReader) -> SourceSpec? {
        let kinds = ["csv", "jsonl", "sqlite", "postgres", "inline"]
        guard let map = reader.mapping(node, in: context, allowed: kinds + ["query", "token_column", "delimiter"])
        else {
            return nil
        }
        let present = map.entries.map(\.key).filter { kinds.contains($0) }
        guard present.count == 1, let kindKey = present.first, let value = map[kindKey] else {
            let found = present.isEmpty ? "none" : present.joined(separator: " and ")
            reader.error(
                "'\(context)' needs exactly one of csv, jsonl, sqlite, postgres or inline (found \(found))",
                at: node
            )
            return nil
        }
        let tokenColumn = map["token_column"].flatMap { reader.string($0, "\(context).token_column") } ?? "token"
        if kindKey != "sqlite", kindKey != "postgres", let query = map["query"] {
            reader.error(
                "'query' belongs to a sqlite or postgres source, not \(kindKey)",
                at: map.keyNode("query") ?? query
            )
        }
        if kindKey != "csv", let delimiter = map["delimiter"] {
            reader.error(
                "'delimiter' belongs to a csv source, not \(kindKey)",
                at: map.keyNode("delimiter") ?? delimiter
            )
        }
        let kind: SourceSpec.Kind
        switch kindKey {
        case "csv":
            guard let path = filePath(value, "\(context).csv", reader) else { return nil }
            var delimiter: UInt8 = 0x2C
            if let node = map["delimiter"], let text = reader.scalar(node, "\(context).delimiter") {
                let allowed: [String: UInt8] = [",": 0x2C, ";": 0x3B, "\t": 0x09, "\\t": 0x09, "|": 0x7C, "tab": 0x09]
                if let byte = allowed[text] {
                    delimiter = byte
                } else {
                    reader.error("delimiter must be one of , ; | or tab, found '\(text.excerpt())'", at: node)
                }
            }
            kind = .csv(path: path, delimiter: delimiter)
        case "jsonl":
            guard let path = filePath(value, "\(context).jsonl", reader) else { return nil }
            kind = .jsonLines(path: path)
        case "sqlite":
            guard let path = filePath(value, "\(context).sqlite", reader) else { return nil }
            guard let queryNode = map["query"] else {
                reader.error(
                    "a sqlite source needs 'query', like query: \"SELECT token, locale FROM devices\"",
                    at: node
                )
                return nil
            }
            guard let query = reader.string(queryNode, "\(context).query") else { return nil }
            kind = .sqlite(path: path, query: query)
        case "postgres":
            guard let url = postgresURL(value, "\(context).postgres", reader) else { return nil }
            guard let queryNode = map["query"] else {
                reader.error(
                    "a postgres source needs 'query', like query: \"SELECT token, locale FROM devices\"",
                    at: node
                )
                return nil
            }
            guard let query = reader.string(queryNode, "\(context).query") else { return nil }
            kind = .postgres(url: url, query: query)
        default:
            guard let rows = readInline(value, "\(context).inline", tokenColumn: tokenColumn, reader) else {
                return nil
            }
            kind = .inline(rows)
        }
        return SourceSpec(kind: kind, tokenColumn: tokenColumn, location: reader.location(node))
    }

    /// A PostgreSQL audience's URL: `${env:NAME}` (the whole URL, password included, from the
    /// environment) or a `postgres://user@host:5432/database` without a password (which then comes
    /// from `PGPASSWORD`). A password written in the campaign is refused without repeating it.
    static func postgresURL(_ node: Node, _ what: String, _ reader: YAMLReader) -> String? {
        guard let url = reader.string(node, what) else { return nil }
        switch ConfigString.parse(url) {
        case .failure(let error):
            reader.error("'\(what)': \(error.message)", at: node)
            return nil
        case .success(let reference):
            let literal = reference.parts.allSatisfy { if case .text = $0 { true } else { false } }
            guard literal else { return url }
            guard let components = URLComponents(string: url),
                components.scheme == "postgres" || components.scheme == "postgresql"
            else {
                reader.error(
                    "'\(what)' must be a postgres://user@host:5432/database URL, or ${env:NAME} naming the variable that holds one",
                    at: node
                )
                return nil
            }
            guard components.password == nil else {
                reader.error(
                    "'\(what)' carries a password, which must not be in a campaign file (git, reviews, logs): "
                        + "write the URL as ${env:NAME}, or set PGPASSWORD",
                    at: node
                )
                return nil
            }
            return url
        }
    }

    /// An audience file's path, which may name environment variables (`${env:AUDIENCES}/all.csv`):
    /// checked for their syntax here, resolved when the campaign is loaded.
    static func filePath(_ node: Node, _ what: String, _ reader: YAMLReader) -> String? {
        guard let path = reader.string(node, what) else { return nil }
        guard case .failure(let error) = ConfigString.parse(path) else { return path }
        reader.error("'\(what)': \(error.message)", at: node)
        return nil
    }

    static func readInline(_ node: Node, _ context: String, tokenColumn: String, _ reader: YAMLReader) -> [InlineRow]? {
        guard let items = reader.sequence(node, context) else { return nil }
        var rows: [InlineRow] = []
        for (index, item) in items.enumerated() {
            let line = item.mark?.line ?? 0
            if case .scalar = item {
                guard let token = reader.string(item, "\(context)[\(index)]") else { continue }
                rows.append(InlineRow(values: [(tokenColumn, .string(token))], line: line))
                continue
            }
            guard let pairs = reader.freeMapping(item, in: "\(context)[\(index)]") else { continue }
            guard pairs.contains(where: { $0.key == tokenColumn }) else {
                reader.error("'\(context)[\(index)]' has no '\(tokenColumn)'", at: item)
                continue
            }
            let values = pairs.compactMap { pair in
                attributeValue(pair.value, "\(context)[\(index)].\(pair.key)", reader).map { (pair.key, $0) }
            }
            rows.append(InlineRow(values: values, line: line))
        }
        return rows
    }

    // MARK: Message

    static func readMessage(_ node: Node, _ reader: YAMLReader) -> MessageSpec? {
        guard let map = reader.mapping(node, in: "message", allowed: messageKeys) else { return nil }
        var pushType = PushType.alert
        if let typeNode = map["push_type"], let text = reader.string(typeNode, "push_type") {
            if let type = PushType(rawValue: text) {
                pushType = type
            } else {
                let names = PushType.allCases.map(\.rawValue)
                reader.error(
                    "unknown push_type '\(text)'\(Suggestion.didYouMean(text, in: names)) (APNs knows: \(names.joined(separator: ", ")))",
                    at: typeNode
                )
            }
        }
        var priority: Int?
        if let priorityNode = map["priority"], let value = reader.int(priorityNode, "priority", in: 1...10) {
            if [1, 5, 10].contains(value) {
                priority = value
            } else {
                reader.error(
                    "priority must be 10 (immediate), 5 (power-aware) or 1 (lowest), found \(value)",
                    at: priorityNode
                )
            }
        }
        let expiration = map["expiration"].flatMap { readExpiration($0, reader) }
        var collapseID: String?
        if let collapseNode = map["collapse_id"], let text = reader.string(collapseNode, "collapse_id") {
            collapseID = text
        }
        let topic = map["topic"].flatMap { reader.string($0, "topic") }
        let payload = map["payload"].flatMap { templateSource($0, "payload", reader) }
        let strings = map["strings"].flatMap { templateSource($0, "strings", reader) }
        let locale = map["locale"].flatMap { readLocale($0, reader) }
        var variants: [VariantSpec] = []
        if let variantsNode = map["variants"], let items = reader.sequence(variantsNode, "variants") {
            for (index, item) in items.enumerated() {
                if let variant = readVariant(item, index, reader) {
                    if variants.contains(where: { $0.name == variant.name }) {
                        reader.error("variant name '\(variant.name)' is used twice", at: item)
                    }
                    variants.append(variant)
                }
            }
            if items.isEmpty {
                reader.error("'variants' is empty; remove it or list at least one variant", at: variantsNode)
            }
        }
        let holdout = map["holdout"].flatMap { reader.parsed($0, "holdout", Share.parse) } ?? Share(basisPoints: 0)
        if let holdoutNode = map["holdout"], holdout.basisPoints == 10_000 {
            reader.error("a 100% holdout sends nothing", at: holdoutNode)
        }
        let title = map["title"].flatMap { readText($0, "message.title", reader) }
        let body = map["body"].flatMap { readText($0, "message.body", reader) }
        let image = map["image"].flatMap { readText($0, "message.image", reader) }
        let data = map["data"].flatMap { readData($0, "message.data", reader) } ?? []
        let android = map["android"].flatMap { readAndroid($0, reader) }
        let neutral = title != nil || body != nil || !data.isEmpty
        if neutral || android != nil {
            // The message's own title, body and data make the payload of variants without one.
        } else if payload == nil, map["payload"] == nil, !variants.isEmpty,
            variants.contains(where: { $0.payload == nil })
        {
            let missing = variants.filter { $0.payload == nil }.map(\.name).joined(separator: ", ")
            reader.error(
                "'message' has no payload (nor a title, body or data), and variant \(missing) names none either",
                at: node
            )
        } else if map["payload"] == nil, variants.isEmpty {
            reader.error(
                "'message' needs what to show: a 'title' and 'body' (for every platform), or a 'payload' (APNs JSON)",
                at: node
            )
        }
        var spec = MessageSpec(
            pushType: pushType,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            collapseIDLocation: map["collapse_id"].map { reader.location($0) },
            topic: topic,
            topicLocation: map["topic"].map { reader.location($0) },
            payload: payload,
            strings: strings,
            locale: locale,
            variants: variants,
            holdout: holdout,
            location: reader.location(node)
        )
        spec.title = title
        spec.body = body
        spec.image = image
        spec.data = data
        spec.android = android
        return spec
    }

    /// A templated text: a single value (a number or a boolean is taken as its text).
    static func readText(_ node: Node, _ what: String, _ reader: YAMLReader) -> TextSpec? {
        guard let text = reader.scalar(node, what) else { return nil }
        return TextSpec(text: text, node: node, location: reader.location(node))
    }

    /// `data:` — string keys to single values, in file order.
    static func readData(_ node: Node, _ what: String, _ reader: YAMLReader) -> [(key: String, value: TextSpec)]? {
        guard let entries = reader.freeMapping(node, in: what) else { return nil }
        var pairs: [(key: String, value: TextSpec)] = []
        for entry in entries {
            guard case .scalar = entry.value else {
                reader.error(
                    "'\(what).\(entry.key)' must be a single value (FCM's data values are strings), found \(reader.describe(entry.value))",
                    at: entry.value
                )
                continue
            }
            if let text = readText(entry.value, "\(what).\(entry.key)", reader) { pairs.append((entry.key, text)) }
        }
        return pairs
    }

    /// `message.android:` — FCM's fields for Android recipients.
    static func readAndroid(_ node: Node, _ reader: YAMLReader) -> AndroidSpec? {
        guard let map = reader.mapping(node, in: "message.android", allowed: androidKeys) else { return nil }
        var spec = AndroidSpec(location: reader.location(node))
        func text(_ key: String) -> TextSpec? { map[key].flatMap { readText($0, "android.\(key)", reader) } }
        spec.title = text("title")
        spec.body = text("body")
        spec.image = text("image")
        spec.channelID = text("channel_id")
        spec.tag = text("tag")
        spec.clickAction = text("click_action")
        spec.sound = text("sound")
        spec.icon = text("icon")
        spec.color = text("color")
        if let colorNode = map["color"], let color = spec.color?.text, !color.contains("{{"),
            !Self.isColor(color)
        {
            reader.error("'android.color' must be #rrggbb, as '#ff6600'", at: colorNode)
        }
        spec.notificationCount = map["notification_count"].flatMap {
            reader.int($0, "android.notification_count", in: 0...Int(Int32.max))
        }
        if let ttlNode = map["ttl"] {
            spec.ttl = readExpiration(ttlNode, reader)
            if case .after(let span)? = spec.ttl, span.seconds > 2_419_200 {
                reader.error("'android.ttl' is at most 28 days (2419200 seconds), FCM's longest", at: ttlNode)
            }
        }
        spec.collapseKey = text("collapse_key")
        if let priorityNode = map["priority"], let value = reader.string(priorityNode, "android.priority") {
            switch value.lowercased() {
            case "high": spec.highPriority = true
            case "normal": spec.highPriority = false
            default: reader.error("'android.priority' must be high or normal", at: priorityNode)
            }
        }
        spec.data = map["data"].flatMap { readData($0, "android.data", reader) }
        spec.restrictedPackageName = map["restricted_package_name"].flatMap {
            reader.string($0, "android.restricted_package_name")
        }
        return spec
    }

    /// `#rrggbb`.
    static func isColor(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 7 && bytes[0] == 0x23
            && bytes.dropFirst().allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
            }
    }

    static func readExpiration(_ node: Node, _ reader: YAMLReader) -> ExpirationSpec? {
        guard let text = reader.scalar(node, "expiration") else { return nil }
        if text == "0" || text == "now" { return .immediately }
        // A date and time: its own problem is the one to say (a year before 1970, a bad zone).
        if text.contains("-") && text.contains("T") {
            return reader.parsed(node, "expiration", Timestamp.parse).map { .at($0) }
        }
        if text.contains("-"), case .success(let timestamp) = Timestamp.parse(text) { return .at(timestamp) }
        switch TimeSpan.parse(text) {
        case .success(let span): return .after(span)
        case .failure:
            reader.error(
                "expiration '\(text)' must be a duration after the send (24h), an absolute time (2027-03-21T09:00:00Z) or 0 (deliver now or never)",
                at: node
            )
            return nil
        }
    }

    static func readLocale(_ node: Node, _ reader: YAMLReader) -> LocaleSpec? {
        if case .scalar = node {
            return reader.string(node, "locale").map { LocaleSpec(attribute: nil, defaultLocale: $0) }
        }
        guard let map = reader.mapping(node, in: "locale", allowed: ["from", "default"], required: ["default"]) else {
            return nil
        }
        let attribute = map["from"].flatMap { reader.string($0, "locale.from") }
        guard let defaultLocale = map["default"].flatMap({ reader.string($0, "locale.default") }) else { return nil }
        return LocaleSpec(attribute: attribute, defaultLocale: defaultLocale)
    }

    static func readVariant(_ node: Node, _ index: Int, _ reader: YAMLReader) -> VariantSpec? {
        let context = "variants[\(index)]"
        guard let map = reader.mapping(node, in: context, allowed: variantKeys, required: ["name", "weight"]) else {
            return nil
        }
        guard let name = map["name"].flatMap({ reader.string($0, "\(context).name") }),
            let weight = map["weight"].flatMap({ reader.int($0, "\(context).weight", in: 0...1_000_000) })
        else { return nil }
        return VariantSpec(
            name: name,
            weight: weight,
            payload: map["payload"].flatMap { templateSource($0, "\(context).payload", reader) },
            strings: map["strings"].flatMap { templateSource($0, "\(context).strings", reader) },
            variables: map["variables"].map { readVariables($0, "\(context).variables", reader) } ?? [],
            location: reader.location(node)
        )
    }

    static func templateSource(_ node: Node, _ what: String, _ reader: YAMLReader) -> TemplateSource? {
        switch node {
        case .mapping: return .inline(node, path: reader.path)
        case .scalar:
            return reader.string(node, what).map { .file(path: $0, location: reader.location(node)) }
        default:
            reader.error(
                "'\(what)' must be a file path or a mapping written in place, found \(reader.describe(node))",
                at: node
            )
            return nil
        }
    }

    // MARK: Throttle

    public static func readThrottle(_ node: Node, _ reader: YAMLReader) -> ThrottleSpec {
        guard let map = reader.mapping(node, in: "throttle", allowed: ["rate", "connections"]) else {
            return ThrottleSpec()
        }
        return ThrottleSpec(
            rate: map["rate"].flatMap { reader.parsed($0, "throttle.rate", Rate.parse) },
            connections: map["connections"].flatMap { reader.int($0, "throttle.connections", in: 1...64) }
        )
    }

    /// `frequency_cap: { max: 2, per: 24h }`, or `off` (campaigns only: no cap despite the project's).
    public static func readFrequencyCap(
        _ node: Node,
        _ reader: YAMLReader,
        allowOff: Bool = true
    ) -> FrequencyCapSetting? {
        let usage = "frequency_cap takes a mapping like { max: 2, per: 24h }\(allowOff ? " or off" : "")"
        if case .scalar = node {
            guard allowOff, reader.scalar(node, "frequency_cap") == "off" else {
                reader.error("\(usage), found \(reader.describe(node))", at: node)
                return nil
            }
            return .off
        }
        guard let map = reader.mapping(node, in: "frequency_cap", allowed: ["max", "per"], required: ["max", "per"])
        else { return nil }
        let max = map["max"].flatMap { reader.int($0, "frequency_cap.max", in: 1...10_000) }
        let per = map["per"].flatMap { reader.parsed($0, "frequency_cap.per", TimeSpan.parse) }
        guard let max, let per else { return nil }
        guard per.seconds > 0 else {
            reader.error("frequency_cap.per must be longer than 0 (for example 24h)", at: map["per"]!)
            return nil
        }
        return .cap(FrequencyCapSpec(max: max, per: per))
    }

    /// Reasons a campaign may give its own retry delay: those APNs asks to be retried later, and
    /// Pushcamp's own `timeout`.
    static let retryable =
        APNsReason.documented.filter { [.deviceBusy, .serverError].contains($0.disposition) }.map(\.description)
        + ["timeout"]
    static let neverRetried = APNsReason.neverRetried.map(\.description)

    public static func readRetry(_ node: Node, _ reader: YAMLReader) -> RetrySpec {
        guard let entries = reader.freeMapping(node, in: "retry") else { return RetrySpec() }
        var spec = RetrySpec()
        for (key, keyNode, value) in entries {
            if key == "max_attempts" {
                spec.maxAttempts = reader.int(value, "retry.max_attempts", in: 1...100)
            } else if key == "resend_unknown" {
                spec.resendUnknown = reader.bool(value, "retry.resend_unknown") ?? true
            } else if neverRetried.contains(key) {
                reader.error("Apple says never to retry \(key); it cannot be given a retry delay", at: keyNode)
            } else if retryable.contains(key) {
                guard let text = reader.string(value, "retry.\(key)") else { continue }
                if text == "never" {
                    spec.delays[key] = .never
                } else if let span = reader.parsed(value, "retry.\(key)", TimeSpan.parse) {
                    if span > RetrySpec.longestDelay {
                        reader.error(
                            "'retry.\(key)' is \(span); a retry delay is at most \(RetrySpec.longestDelay) (write never to not retry)",
                            at: value
                        )
                    } else {
                        spec.delays[key] = .after(span)
                    }
                }
            } else {
                let known = ["max_attempts", "resend_unknown"] + retryable
                reader.error(
                    "unknown key 'retry.\(key)'\(Suggestion.didYouMean(key, in: known)); "
                        + "known: \(known.joined(separator: ", "))",
                    at: keyNode
                )
            }
        }
        return spec
    }

    // MARK: Values

    static func readVariables(
        _ node: Node,
        _ context: String,
        _ reader: YAMLReader
    ) -> [(name: String, value: AttributeValue)] {
        guard let pairs = reader.freeMapping(node, in: context) else { return [] }
        return pairs.compactMap { pair in
            attributeValue(pair.value, "\(context).\(pair.key)", reader).map { (pair.key, $0) }
        }
    }

    /// A YAML value as an attribute: scalars by their YAML type, lists and mappings kept as such.
    public static func attributeValue(_ node: Node, _ what: String, _ reader: YAMLReader) -> AttributeValue? {
        switch node {
        case .scalar(let scalar):
            if reader.isNull(node) {
                reader.error("'\(what)' has no value", at: node)
                return nil
            }
            guard scalar.style == .plain else { return .string(scalar.string) }
            if let integer = Int64(scalar.string) { return .integer(integer) }
            if let bool = node.bool, ["true", "false", "True", "False", "TRUE", "FALSE"].contains(scalar.string) {
                return .bool(bool)
            }
            if scalar.string.contains("."), let number = Double(scalar.string), number.isFinite {
                return .number(number)
            }
            return .string(scalar.string)
        case .sequence(let items):
            let values = items.enumerated().compactMap { attributeValue($0.element, "\(what)[\($0.offset)]", reader) }
            return .list(values)
        case .mapping:
            guard let pairs = reader.freeMapping(node, in: what) else { return nil }
            var keys: [String] = []
            var values: [AttributeValue] = []
            for pair in pairs {
                guard let value = attributeValue(pair.value, "\(what).\(pair.key)", reader) else { continue }
                keys.append(pair.key)
                values.append(value)
            }
            return .object(AttributeObject(keys: keys, values: values))
        case .alias:
            reader.error("'\(what)': YAML aliases are not supported here", at: node)
            return nil
        }
    }
}
