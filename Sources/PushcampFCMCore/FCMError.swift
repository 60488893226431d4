import Foundation

/// An FCM HTTP v1 error body: `{"error": {"code", "message", "status", "details": [...]}}`, with FCM's own
/// code in an `FcmError` detail and the fields at fault in a `BadRequest` detail (`reference/FCM.md`,
/// section 3). The client reads it; the simulator writes it.
public struct FCMError: Sendable, Equatable, CustomStringConvertible {
    public static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    public static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    public struct FieldViolation: Sendable, Equatable {
        /// The field's path in the request (`message.token`, `message.data[0].value`).
        public var field: String
        public var description: String

        public init(field: String, description: String) {
            self.field = field
            self.description = description
        }
    }

    /// The HTTP status, repeated in the body.
    public var code: Int
    public var message: String
    /// The canonical status (`INVALID_ARGUMENT`, `NOT_FOUND`, `UNAUTHENTICATED`…).
    public var status: String
    /// The `FcmError` detail's `errorCode`, when there is one.
    public var errorCode: String?
    public var fieldViolations: [FieldViolation]

    public init(
        code: Int,
        message: String,
        status: String,
        errorCode: String?,
        fieldViolations: [FieldViolation] = []
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.errorCode = errorCode
        self.fieldViolations = fieldViolations
    }

    /// An error FCM answers with `reason`'s status and code.
    public init(_ reason: FCMReason, message: String, fieldViolations: [FieldViolation] = []) {
        let (code, status) = reason.status
        let withDetail = FCMReason.errorCodes.contains(reason)
        self.init(
            code: code,
            message: message,
            status: status,
            errorCode: withDetail ? reason.description : nil,
            fieldViolations: fieldViolations
        )
    }

    /// What FCM answers a registration token it cannot use: malformed, or not one of its tokens.
    public static let invalidToken = FCMError(
        .invalidArgument,
        message: "The registration token is not a valid FCM registration token",
        fieldViolations: [
            .init(field: "message.token", description: "The registration token is not a valid FCM registration token")
        ]
    )

    /// The reason: the `FcmError` code, else the canonical status.
    public var reason: FCMReason { FCMReason(errorCode ?? status) }

    /// The error names the registration token as the field at fault (a malformed or foreign token).
    public var concernsToken: Bool { fieldViolations.contains { $0.field == "message.token" } }

    /// What to do about it. `INVALID_ARGUMENT` about the token drops the token only when the rest of the
    /// message is known to be valid (Google checked a message of the same shape, or Pushcamp's own rules
    /// passed it): else the fault may be the message's, and a good token would be lost.
    public func reaction(payloadKnownValid: Bool) -> FCMReason.Reaction {
        if reason == .invalidArgument, concernsToken, payloadKnownValid { return .dropToken }
        return reason.reaction
    }

    public var description: String {
        "\(code) \(reason): \(message)"
    }

    /// Reads an error body; nil when it is not one (an HTML page from a proxy, say).
    public static func parse(_ body: [UInt8]) -> FCMError? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return nil }
        var result = FCMError(
            code: (error["code"] as? NSNumber)?.intValue ?? 0,
            message: error["message"] as? String ?? "",
            status: error["status"] as? String ?? "UNKNOWN",
            errorCode: nil
        )
        for detail in error["details"] as? [[String: Any]] ?? [] {
            switch detail["@type"] as? String {
            case fcmErrorType:
                result.errorCode = detail["errorCode"] as? String
            case badRequestType:
                for violation in detail["fieldViolations"] as? [[String: Any]] ?? [] {
                    result.fieldViolations.append(
                        FieldViolation(
                            field: violation["field"] as? String ?? "",
                            description: violation["description"] as? String ?? ""
                        )
                    )
                }
            default:
                break
            }
        }
        return result
    }

    /// The body, laid out as Google's are.
    public var json: [UInt8] {
        var details: [[String: Any]] = []
        if let errorCode { details.append(["@type": Self.fcmErrorType, "errorCode": errorCode]) }
        if !fieldViolations.isEmpty {
            details.append([
                "@type": Self.badRequestType,
                "fieldViolations": fieldViolations.map { ["field": $0.field, "description": $0.description] },
            ])
        }
        var error: [String: Any] = ["code": code, "message": message, "status": status]
        if !details.isEmpty { error["details"] = details }
        let data = try! JSONSerialization.data(
            withJSONObject: ["error": error],
            options: [.sortedKeys, .withoutEscapingSlashes]
        )
        return Array(data)
    }
}
