/// The transport's one error type: a code to branch on and a message for people.
public struct APNsClientError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// Key, certificate or token unusable or refused.
        public static let credentials = Code("credentials")
        /// TCP, TLS or ALPN failed.
        public static let connect = Code("connect")
        /// The peer broke HTTP/2.
        public static let protocolError = Code("protocol")
        /// The pool is shut down, or the request's task was cancelled.
        public static let shutdown = Code("shutdown")
        /// The request went out and no answer came (the connection ended, or the answer was late):
        /// the server may have processed it.
        public static let unanswered = Code("unanswered")
        /// The server did not process the request (refused after its GOAWAY, or never sent) on a
        /// connection that answered nothing: safe to send again, on another connection; counted,
        /// so a server that refuses everything ends the request.
        public static let notProcessed = Code("not-processed")
        /// The request did not go because its connection, which answered others, was going away
        /// (GOAWAY after N requests, as APNs does): sent again on another connection, uncounted.
        public static let notSent = Code("not-sent")
        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
