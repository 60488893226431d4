import PushcampJournal
import PushcampModel
import PushcampTemplates

extension LoadedCampaign {
    /// The campaign with the built-in variables its templates read among every variant's
    /// variables: `channels` (declared name → Apple's id, as `journal` records them; a name not
    /// created yet is absent, and the push fails its rendering naming `channels.NAME`) and `now`
    /// (`now`, in seconds: a Live Activity's `aps.timestamp`), unless a variable of the campaign
    /// has that name. A recipient's column of the same name wins, as for any variable.
    public func resolvingBuiltins(
        in journal: (any Journal)?,
        now: Double
    ) async throws(JournalError)
        -> LoadedCampaign
    {
        func reads(_ name: String) -> Bool {
            variants.contains { variant in
                !variant.variables.schema.names.contains(name)
                    && variant.payload.leaves.contains { leaf in
                        leaf.template.references.contains { $0.name == name }
                    }
            }
        }
        var added: [(String, AttributeValue)] = []
        if reads(Self.channelsVariable), let journal {
            let channels = try await journal.channels()
            added.append(
                (
                    Self.channelsVariable,
                    .object(AttributeObject(keys: channels.map(\.name), values: channels.map { .string($0.channelID) }))
                )
            )
        }
        if reads(Self.nowVariable) { added.append((Self.nowVariable, .integer(Int64(now)))) }
        guard !added.isEmpty else { return self }
        var resolved = self
        for index in resolved.variants.indices {
            let variables = resolved.variants[index].variables
            let fresh = added.filter { !variables.schema.names.contains($0.0) }
            resolved.variants[index].variables = Attributes(
                schema: AttributeSchema(names: variables.schema.names + fresh.map(\.0)),
                values: variables.values + fresh.map(\.1)
            )
        }
        return resolved
    }
}
