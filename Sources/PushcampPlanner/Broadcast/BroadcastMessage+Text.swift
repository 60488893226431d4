import PushcampModel

extension BroadcastMessage {
    /// Where the request goes, as plans name it first.
    public var destination: Destination {
        let apple = "https://\(channel.environment.host)"
        return Destination(environment: channel.environment, customEndpoint: endpoint == apple ? nil : endpoint)
    }

    /// The request for people: the destination, the channel, then the request as it goes.
    public func text() -> String {
        var text = "\(destination.text)\n"
        text +=
            "Broadcast \(campaign): one request to channel \(channel.name) (\(bundleID), storage \(channel.storage.rawValue))\n"
        text += "  POST \(path)\n"
        for (name, value) in headers { text += "  \(name): \(value)\n" }
        text += "  \(String(decoding: payload, as: UTF8.self))\n"
        text += "  \(payload.count) of \(Self.maxPayload) bytes\n"
        return text
    }

    public func markdown() -> String {
        var text = "### Broadcast `\(campaign)`\n\n"
        let where_ = destination.isProduction ? "**\(destination.text)**" : destination.text
        text +=
            "\(where_)\n\nOne request to channel `\(channel.name)` (\(bundleID), storage \(channel.storage.rawValue)):\n\n"
        text += "```\nPOST \(path)\n"
        for (name, value) in headers { text += "\(name): \(value)\n" }
        text += "\n\(String(decoding: payload, as: UTF8.self))\n```\n"
        return text
    }

    public func json() -> String {
        JSONValue.members([
            ("campaign", .string(campaign)), ("kind", .string("broadcast")),
            ("environment", .string(channel.environment.rawValue)), ("endpoint", .string(endpoint)),
            ("channel", .string(channel.name)), ("channel_id", channelID.map(JSONValue.string)),
            ("storage", .string(channel.storage.rawValue)), ("method", .string("POST")), ("path", .string(path)),
            ("headers", .object(headers.map { ($0.name, JSONValue.string($0.value)) })),
            ("payload", .encoded(payload)), ("payload_bytes", .integer(payload.count)),
        ]).text + "\n"
    }
}
