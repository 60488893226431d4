import PushcampFCMCore
import Testing

/// FCM's error bodies and the reaction to each reason (`reference/FCM.md`, section 3).
@Suite("FCM errors and reactions")
struct FCMErrorTests {
    /// The body Google answers a dead token with, as the Admin SDKs' maintainers quote it.
    static let unregistered = """
        {
          "error": {
            "code": 404,
            "message": "Requested entity was not found.",
            "status": "NOT_FOUND",
            "details": [
              {
                "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                "errorCode": "UNREGISTERED"
              }
            ]
          }
        }
        """

    @Test func theFCMErrorCodeInDetailsWinsOverTheCanonicalStatus() throws {
        let error = try #require(FCMError.parse(Array(Self.unregistered.utf8)))
        #expect(error.code == 404)
        #expect(error.status == "NOT_FOUND")
        #expect(error.reason == .unregistered)
        #expect(error.reaction(payloadKnownValid: false) == .dropToken)
        #expect(FCMError.parse(error.json) == error)
    }

    /// A 401 without an FcmError detail is the access token; THIRD_PARTY_AUTH_ERROR is also 401
    /// but is Apple's or Web Push's credentials uploaded to Firebase: no reason to mint.
    @Test func unauthenticatedMintsAndThirdPartyAuthDoesNot() throws {
        let unauthenticated = try #require(
            FCMError.parse(
                Array(
                    #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#
                        .utf8
                )
            )
        )
        #expect(unauthenticated.reason == .unauthenticated)
        #expect(unauthenticated.reaction(payloadKnownValid: true) == .refreshAccessToken)
        let thirdParty = FCMError(.thirdPartyAuthError, message: "Auth error from APNS or Web Push Service")
        #expect(thirdParty.code == 401)
        #expect(thirdParty.status == "UNAUTHENTICATED")
        #expect(FCMError.parse(thirdParty.json)?.reason == .thirdPartyAuthError)
        #expect(thirdParty.reaction(payloadKnownValid: true) == .neverRetry)
    }

    /// INVALID_ARGUMENT about the token drops the token only when the payload is known valid.
    @Test func anInvalidTokenIsDroppedOnlyWhenThePayloadIsKnownValid() throws {
        let error = FCMError.invalidToken
        let parsed = try #require(FCMError.parse(error.json))
        #expect(parsed.concernsToken)
        #expect(parsed.reaction(payloadKnownValid: true) == .dropToken)
        #expect(parsed.reaction(payloadKnownValid: false) == .requestBug)
        let aboutData = FCMError(
            .invalidArgument,
            message: "Invalid data payload key",
            fieldViolations: [.init(field: "message.data[0].key", description: "reserved")]
        )
        #expect(aboutData.reaction(payloadKnownValid: true) == .requestBug)
    }

    /// The digest's table, row by row: HTTP status and what the sender does.
    @Test(arguments: [
        (FCMReason.unspecifiedError, 500, FCMReason.Reaction.neverRetry),
        (.invalidArgument, 400, .requestBug),
        (.unregistered, 404, .dropToken),
        (.senderIDMismatch, 403, .neverRetry),
        (.quotaExceeded, 429, .slowRun),
        (.unavailable, 503, .serverError),
        (.internalError, 500, .serverError),
        (.thirdPartyAuthError, 401, .neverRetry),
        (.unauthenticated, 401, .refreshAccessToken),
        (.permissionDenied, 403, .credentials),
    ])
    func eachReasonHasItsStatusAndReaction(reason: FCMReason, status: Int, reaction: FCMReason.Reaction) {
        #expect(reason.status.code == status)
        #expect(reason.reaction == reaction)
        #expect(FCMReason(reason.description) == reason)
    }

    @Test func anUnknownCodeIsKeptByName() throws {
        let error = try #require(
            FCMError.parse(
                Array(
                    #"{"error":{"code":400,"message":"m","status":"FAILED_PRECONDITION","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"NEW_CODE"}]}}"#
                        .utf8
                )
            )
        )
        #expect(error.reason == .unknown("NEW_CODE"))
        #expect("\(error.reason)" == "NEW_CODE")
        #expect(FCMError.parse(Array("<html>502</html>".utf8)) == nil)
    }
}
