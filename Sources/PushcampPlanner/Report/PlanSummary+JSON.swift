import PushcampAudience
import PushcampModel

extension PlanSummary {
    /// The plan as JSON for scripts and dashboards; keys and their order are stable
    /// (see docs/plan-json.md).
    public func json() -> String {
        let invalidByProblem = audience.invalid.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { ($0.key.rawValue, JSONValue.integer($0.value)) }
        let invalidExamples = audience.invalidExamples.map { example -> JSONValue in
            .object([
                ("location", .string(example.location.description)), ("token", .string(example.token)),
                ("problem", .string(example.problem.rawValue)),
            ])
        }
        let audienceJSON: JSONValue = .object([
            ("source", .string(source)), ("filter", .optional(filter)), ("read", .integer(audience.read)),
            ("invalid_tokens", .integer(audience.invalidTotal)), ("invalid_by_problem", .object(invalidByProblem)),
            ("invalid_examples", .array(invalidExamples)), ("duplicates", .integer(audience.duplicates)),
            ("filtered_out", .integer(audience.filteredOut)), ("excluded", .integer(audience.excluded)),
            ("no_subscription", .integer(unsubscribed)), ("suppressed", .integer(suppressed)),
            ("capped", .integer(capped)), ("held_out", .integer(heldOut)),
            ("holdout_percent", .number(Double(holdout.basisPoints) / 100)),
            (
                "other_platform",
                .object(audience.otherPlatform.sorted { $0.key < $1.key }.map { ($0.key.rawValue, .integer($0.value)) })
            ),
        ])
        let failuresJSON = sortedFailures.map { reason, stat -> JSONValue in
            .object([
                ("reason", .string(reason.rawValue)), ("summary", .string(reason.summary)),
                ("count", .integer(stat.count)),
                (
                    "examples",
                    .array(
                        stat.examples.map { example in
                            .object([
                                ("location", .string(example.location.description)), ("token", .string(example.token)),
                                ("detail", .string(example.detail)),
                            ])
                        }
                    )
                ),
            ])
        }
        let samplesJSON = samples.map { push -> JSONValue in
            .object([
                ("token", .string(push.token)), ("platform", .string(push.platform.rawValue)),
                ("row", .integer(push.row)), ("variant", .string(push.variant)),
                ("locale", .optional(push.locale)),
                ("headers", .object(headers(of: push).map { ($0.0, JSONValue.string($0.1)) })),
                ("payload", .encoded(sampleBody(of: push))),
            ])
        }
        let journalJSON: JSONValue =
            journal.map { status in
                .object([
                    ("state", .string(status.state.rawValue)), ("run", status.run.map { .integer(Int($0)) } ?? .null),
                    ("at", .optional(status.at)), ("delivered", .integer(status.delivered)),
                    ("failed", .integer(status.failed)), ("left", status.left.map { .integer($0) } ?? .null),
                    ("text", .string(status.text)),
                ])
            } ?? .null
        let platformsJSON: JSONValue = .object(
            Platform.allCases.filter { $0 == .ios ? destination != nil : android != nil }.map { platform in
                let sizes = platform == .ios ? payloadSizes : androidPayloadSizes
                let app = platform == .ios ? self.app.split(separator: "+").first.map(String.init) : android?.app
                return (
                    platform.rawValue,
                    .object([
                        ("app", .optional(app)), ("planned", .integer(platforms[platform] ?? 0)),
                        ("payload_bytes_max", .integer(sizes.maximum)),
                    ])
                )
            }
        )
        let head: [(String, JSONValue)] = [
            ("environment", destination.map { .string($0.environment.rawValue) } ?? .null),
            ("endpoint", destination.map { .string($0.endpoint) } ?? .null),
        ]
        let document: JSONValue = .object(
            head + [
                ("campaign", .string(campaign)), ("description", .optional(description)),
                ("revision", .string(revision)),
                ("journal", journalJSON), ("app", .string(app)), ("push_type", .string(pushType.rawValue)),
                ("priority", .integer(priority)),
                ("topic", .string(topic)), ("expiration", .string(expirationText)),
                ("collapse_id", .optional(collapseID)),
                ("send_time", .optional(sendTime?.description)), ("audience", audienceJSON),
                ("planned", .integer(planned)),
                ("refused", .integer(failed)), ("platforms", platformsJSON),
                ("assignment_unit", .string(assignmentUnit)),
                (
                    "variants",
                    .array(
                        variants.map {
                            .object([
                                ("name", .string($0.name)), ("weight", .integer($0.weight)),
                                ("planned", .integer($0.planned)),
                            ])
                        }
                    )
                ),
                (
                    "locales",
                    .array(
                        locales.map { .object([("locale", .string($0.locale)), ("planned", .integer($0.planned))]) }
                    )
                ),
                (
                    "payload_bytes",
                    .object([
                        ("min", .integer(payloadSizes.total > 0 ? payloadSizes.minimum : 0)),
                        ("median", .integer(payloadSizes.median)),
                        ("max", .integer(payloadSizes.maximum)), ("limit", .integer(pushType.payloadLimit)),
                    ])
                ),
                ("preflight_failures", .array(failuresJSON)), ("samples", .array(samplesJSON)),
                ("review_notes", review == nil ? .null : .array(reviewLines.map { .string($0) })),
                (
                    "throttle",
                    .object([
                        ("rate", .string(rate.text)), ("rate_per_second", .number(rate.perSecond)),
                        ("default", .bool(rateIsDefault)),
                        ("connections", .integer(connections)),
                    ])
                ),
                ("estimated_seconds", .number((estimatedSeconds * 10).rounded(.up) / 10)),
                (
                    "schedule",
                    schedule.map { schedule in
                        .object([
                            ("description", .string(schedule.description)),
                            (
                                "next_slots",
                                .array(nextSlots.map { .string(Timestamp(secondsSince1970: $0).description) })
                            ),
                        ])
                    } ?? .null
                ),
                ("quiet_hours", quietHours.map { .string($0.description) } ?? .null),
                (
                    "timeline",
                    timing.map { timing in
                        .object([
                            (
                                "by_hour",
                                .array(
                                    timing.hours.map {
                                        .object([
                                            ("hour", .string(Timestamp(secondsSince1970: $0.start).description)),
                                            ("pushes", .integer($0.count)),
                                        ])
                                    }
                                )
                            ),
                            ("fell_back", .integer(timing.fellBack)), ("deferred", .integer(timing.deferred)),
                            (
                                "dropped",
                                .object(
                                    PlanSummary.Timing.Drop.allCases.map {
                                        ($0.rawValue, .integer(timing.dropped[$0] ?? 0))
                                    }
                                )
                            ),
                        ])
                    } ?? .null
                ),
                (
                    "frequency_cap",
                    frequencyCap.map {
                        .object([
                            ("max", .integer($0.max)), ("per", .string($0.per.description)),
                            ("per_seconds", .integer(Int($0.per.seconds))),
                        ])
                    } ?? .null
                ),
                (
                    "subscriptions",
                    subscriptionRow.map { row in
                        let join = subscriptions ?? SubscriptionAudienceSpec(location: SourceLocation(path: ""))
                        return .object([
                            ("status", .array(join.statuses.map { .string($0) })),
                            ("product", .array(join.products.map { .string($0) })),
                            ("auto_renew", join.autoRenew.map { .bool($0) } ?? .null),
                            ("attribute", .string(join.attribute)), ("by", .string(join.key.rawValue)),
                            ("matched", subscriptionsMatched.map { .integer($0) } ?? .null),
                            ("no_subscription", .integer(row.count)),
                        ])
                    } ?? .null
                ),
                (
                    "trigger",
                    trigger.map { trigger in
                        .object([
                            ("app_store", .string(trigger.appStoreType)),
                            ("subtype", .array(trigger.subtypes.map { .string($0) })),
                            ("delay_seconds", .integer(Int(trigger.delay.seconds))),
                            ("days", triggerHistory.map { .integer($0.days) } ?? .null),
                            ("would_have_fired", triggerHistory.map { .integer($0.events) } ?? .null),
                            ("subscriptions", triggerHistory.map { .integer($0.subscriptions) } ?? .null),
                        ])
                    } ?? .null
                ),
            ]
        )
        return document.text + "\n"
    }
}
