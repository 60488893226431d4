import Crypto
import Foundation
import PushcampAPNsCore
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#endif

/// Throwaway credentials for a rehearsal: a signing key for provider tokens, and a CA with a
/// `localhost`/`127.0.0.1` server certificate (and any other addresses it is reached at) for TLS
/// (and, for certificate auth, client certificates). Made on the spot, never reused.
public struct SimulatorCredentials: Sendable {
    /// The `.p8`-style provider-token key (PKCS#8 PEM); the simulator verifies with its public half.
    public var signingKey: P256.Signing.PrivateKey
    public var caCertificatePEM: String
    public var serverCertificatePEM: String
    public var serverKeyPEM: String
    /// The CA's key: it signs client certificates for certificate-auth rehearsals.
    private var caKey: P256.Signing.PrivateKey

    /// `addresses`: IPv4 addresses besides 127.0.0.1 the server certificate names (where the
    /// simulator listens when it is not on loopback).
    public static func generate(
        clock: any WallClock = SystemWallClock(),
        addresses: [IPv4Address] = []
    ) throws -> SimulatorCredentials {
        let now = Date(timeIntervalSince1970: clock.now())
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("Pushcamp simulator CA") }
        let ca = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(30 * 86400),
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(caKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(30 * 86400),
            issuer: caName,
            subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(
                    [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]
                        + addresses.map { .ipAddress(ASN1OctetString(contentBytes: ArraySlice($0.bytes))) }
                )
            },
            issuerPrivateKey: .init(caKey)
        )
        return SimulatorCredentials(
            signingKey: P256.Signing.PrivateKey(),
            caCertificatePEM: try ca.serializeAsPEM().pemString,
            serverCertificatePEM: try server.serializeAsPEM().pemString,
            serverKeyPEM: serverKey.pemRepresentation,
            caKey: caKey
        )
    }

    /// A client certificate for `topic` signed by this CA, with its key, in one PEM file's text: what
    /// a certificate-auth app would hold (Apple's carry the bundle id in the subject's UID).
    public func clientCertificatePEM(topic: String, clock: any WallClock = SystemWallClock()) throws -> String {
        let now = Date(timeIntervalSince1970: clock.now())
        let key = P256.Signing.PrivateKey()
        let ca = try Certificate(pemEncoded: caCertificatePEM)
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(30 * 86400),
            issuer: ca.subject,
            subject: try DistinguishedName { CommonName("Apple Push Services: \(topic)") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            },
            issuerPrivateKey: .init(caKey)
        )
        return try certificate.serializeAsPEM().pemString + "\n" + key.pemRepresentation + "\n"
    }

    /// Writes `ca.pem` (the CA a client trusts) and `key.p8` (the provider-token key) into `directory`.
    public func write(to directory: String) throws -> (caFile: String, keyFile: String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let caFile = (directory as NSString).appendingPathComponent("ca.pem")
        let keyFile = (directory as NSString).appendingPathComponent("key.p8")
        try caCertificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        try Self.writePrivate(signingKey.pemRepresentation, to: keyFile)
        return (caFile, keyFile)
    }

    /// Writes `text` to `path` readable and writable by its owner only (0600) from the first byte,
    /// then moves it in place: a private key is never readable by others, not even for an instant.
    public static func writePrivate(_ text: String, to path: String) throws {
        let temporary = "\(path).\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: Data(text.utf8))
            try handle.close()
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let code = POSIXErrorCode(rawValue: errno) ?? .EIO
            unlink(temporary)
            throw POSIXError(code)
        }
    }
}

/// A dotted IPv4 address (`10.0.0.1`), for a certificate's names.
public struct IPv4Address: Sendable, Hashable, CustomStringConvertible {
    public var bytes: [UInt8]

    /// Nil unless `text` is four decimal numbers 0–255 separated by dots.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }), let byte = UInt8(part)
            else {
                return nil
            }
            bytes.append(byte)
        }
        self.bytes = bytes
    }

    public var description: String { bytes.map(String.init).joined(separator: ".") }
}
