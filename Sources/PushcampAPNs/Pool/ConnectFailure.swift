import NIOCore
import NIOPosix
import NIOSSL

/// A failed connection attempt in words: what went wrong and what to check first, then the
/// library's own text as the detail (NIO's and BoringSSL's messages name the mechanism, not the
/// cause a mobile backend engineer can act on).
enum ConnectFailure {
    /// "its TLS certificate is not trusted; give its CA… (detail: …)"; the caller names the endpoint.
    static func explain(_ error: any Error, connectTimeout: TimeAmount) -> String {
        let detail = "\(error)"
        let lowered = detail.lowercased()
        let what: String
        if let connection = error as? NIOConnectionError {
            if connection.connectionErrors.isEmpty, connection.dnsAError != nil || connection.dnsAAAAError != nil {
                what =
                    "its name does not resolve (DNS); check the host name in pushcamp.yaml and this machine's network"
            } else if connection.connectionErrors.contains(where: { ($0.error as? IOError)?.errnoCode == ECONNREFUSED })
            {
                what =
                    "nothing accepts connections there (connection refused); check the endpoint's host and port, and that the server runs"
            } else {
                what = "no address of it could be reached; check this machine's network, firewall and proxy"
            }
        } else if case ChannelError.connectTimeout = error {
            let seconds = connectTimeout.nanoseconds / 1_000_000_000
            what =
                "no answer within \(seconds) s; a firewall or proxy may drop the traffic (APNs needs outbound TCP 443)"
        } else if lowered.contains("certificate_verify_failed") || lowered.contains("certificate verify failed") {
            what =
                "its TLS certificate is not trusted; for a custom endpoint (a simulator, a proxy) give its CA with ca_file in pushcamp.yaml"
        } else if error is NIOSSLExtraError || lowered.contains("hostname") {
            what = "its TLS certificate does not name this host; check the endpoint's host name"
        } else if error is NIOSSLError || lowered.contains("ssl") || lowered.contains("tls") {
            what =
                "the TLS handshake failed; check that the endpoint speaks HTTPS (TLS 1.2 or later) and, for a client certificate, that it is valid"
        } else if let io = error as? IOError, io.errnoCode == ECONNRESET {
            what = "the server closed the connection during set-up; check that the endpoint is an HTTP/2 (APNs) server"
        } else {
            return detail
        }
        return "\(what) (detail: \(detail))"
    }

    /// A short name for why a connection ended during set-up, for the report's list of ended
    /// connections (the full text is in the stop message).
    static func reason(_ error: any Error) -> String {
        let lowered = "\(error)".lowercased()
        if lowered.contains("certificate_verify_failed") { return "TLS: certificate not trusted" }
        if error is NIOSSLExtraError { return "TLS: certificate names another host" }
        if error is NIOSSLError { return "TLS handshake failed" }
        if let io = error as? IOError, io.errnoCode == ECONNRESET { return "connection reset" }
        return "\(error)"
    }
}
