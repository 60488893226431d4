import Crypto

/// Name-based UUIDs (RFC 9562 version 5, SHA-1), so a recipient's `apns-id` is the same every time
/// the same campaign revision is planned.
public enum UUIDv5 {
    /// RFC 9562's URL namespace.
    static let urlNamespace: [UInt8] = [
        0x6B, 0xA7, 0xB8, 0x11, 0x9D, 0xAD, 0x11, 0xD1, 0x80, 0xB4, 0x00, 0xC0, 0x4F, 0xD4, 0x30, 0xC8,
    ]

    /// Pushcamp's namespace: the version-5 UUID of the URL `https://pushcamp.dev/apns-id`.
    public static let pushcampNamespace: [UInt8] = make(
        namespace: urlNamespace,
        name: Array("https://pushcamp.dev/apns-id".utf8)
    )

    /// The namespace of one campaign revision: every `apns-id` of the run is derived from it.
    public static func runNamespace(campaign: String, revision: String) -> [UInt8] {
        make(namespace: pushcampNamespace, name: Array("\(campaign)\n\(revision)".utf8))
    }

    public static func make(namespace: [UInt8], name: [UInt8]) -> [UInt8] {
        var hasher = Insecure.SHA1()
        hasher.update(data: namespace)
        hasher.update(data: name)
        var bytes = Array(hasher.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return bytes
    }

    public static func make(namespace: [UInt8], name: String) -> APNsID {
        var hasher = Insecure.SHA1()
        hasher.update(data: namespace)
        var name = name
        name.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        // Read the digest in place: this runs once per recipient.
        var id = hasher.finalize().withUnsafeBytes { digest in
            APNsID(
                high: UInt64(bigEndian: digest.loadUnaligned(as: UInt64.self)),
                low: UInt64(bigEndian: digest.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        id.bytes.0 = (id.bytes.0 & ~(0xF000 as UInt64)) | 0x5000
        id.bytes.1 = (id.bytes.1 & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return id
    }
}
