import NIOCore
import PushcampJournal
import PushcampModel

/// A page of a run's snapshot as PostgreSQL keeps it: one `bytea` for the pushes one
/// `appendSnapshot` wrote, instead of a row each. PostgreSQL's cost was per row (parsing a `COPY`
/// line, a tuple, an index entry); a page costs one of each (its bytes compressed with lz4 where
/// the server has it).
///
/// The format (integers big-endian, as `int2send`/`int4send`/`int8send` write them, so the
/// schema's migration and its `pushcamp_snapshot(run)` function read and write the same):
///
///     version: 1 byte (1)          count: 4 bytes
///     per push, in seq order:
///       seq: 8                      flags: 1 (1 locale, 2 collapse id, 4 expiration, 8 Android, 16 due)
///       token: 2 + UTF-8            payload: 4 + bytes         variant: 2 + UTF-8
///       [locale: 2 + UTF-8]         [collapse id: 2 + UTF-8]   [expiration: 8]
///       [due: 8]
enum SnapshotPage {
    static let version: UInt8 = 1

    static func encode(_ pushes: [SnapshotPush]) -> ByteBuffer {
        var size = 5
        for push in pushes {
            size += 8 + 1 + 2 + push.token.utf8.count + 4 + push.payload.count + 2 + push.variant.utf8.count
            size += (push.locale.map { 2 + $0.utf8.count } ?? 0) + (push.collapseID.map { 2 + $0.utf8.count } ?? 0)
            size += (push.expiration == nil ? 0 : 8) + (push.due == nil ? 0 : 8)
        }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(size)
        buffer.writeInteger(version)
        buffer.writeInteger(UInt32(pushes.count))
        for push in pushes {
            buffer.writeInteger(Int64(push.seq))
            var flags: UInt8 = 0
            if push.locale != nil { flags |= 1 }
            if push.collapseID != nil { flags |= 2 }
            if push.expiration != nil { flags |= 4 }
            if push.platform == .android { flags |= 8 }
            if push.due != nil { flags |= 16 }
            buffer.writeInteger(flags)
            short(push.token, into: &buffer)
            buffer.writeInteger(UInt32(push.payload.count))
            buffer.writeBytes(push.payload)
            short(push.variant, into: &buffer)
            if let locale = push.locale { short(locale, into: &buffer) }
            if let collapseID = push.collapseID { short(collapseID, into: &buffer) }
            if let expiration = push.expiration { buffer.writeInteger(expiration) }
            if let due = push.due { buffer.writeInteger(due) }
        }
        return buffer
    }

    /// A text of at most 65,535 bytes (tokens, variants, locales and collapse ids are far shorter:
    /// APNs allows a collapse id of 64 bytes) with its length.
    private static func short(_ text: String, into buffer: inout ByteBuffer) {
        let bytes = text.utf8
        precondition(bytes.count <= Int(UInt16.max), "a snapshot's text field is at most 65,535 bytes")
        buffer.writeInteger(UInt16(bytes.count))
        buffer.writeString(text)
    }

    /// The pushes of a page, or an error naming what is wrong with it.
    static func decode(_ page: ByteBuffer) throws(JournalError) -> [SnapshotPush] {
        var page = page
        func damaged() -> JournalError { JournalError(.corrupt, "a page of a run's snapshot is damaged") }
        guard let version = page.readInteger(as: UInt8.self), version == Self.version else {
            throw JournalError(.corrupt, "a page of a run's snapshot is of a format this build does not know")
        }
        guard let count = page.readInteger(as: UInt32.self) else { throw damaged() }
        func short() throws(JournalError) -> String {
            guard let length = page.readInteger(as: UInt16.self), let text = page.readString(length: Int(length))
            else { throw damaged() }
            return text
        }
        var pushes: [SnapshotPush] = []
        pushes.reserveCapacity(Int(min(count, 100_000)))
        for _ in 0..<count {
            guard let seq = page.readInteger(as: Int64.self), let flags = page.readInteger(as: UInt8.self) else {
                throw damaged()
            }
            let token = try short()
            guard let length = page.readInteger(as: UInt32.self), let payload = page.readBytes(length: Int(length))
            else { throw damaged() }
            let variant = try short()
            let locale = flags & 1 == 0 ? nil : try short()
            let collapseID = flags & 2 == 0 ? nil : try short()
            var (expiration, due): (Int64?, Int64?)
            if flags & 4 != 0 {
                guard let value = page.readInteger(as: Int64.self) else { throw damaged() }
                expiration = value
            }
            if flags & 16 != 0 {
                guard let value = page.readInteger(as: Int64.self) else { throw damaged() }
                due = value
            }
            pushes.append(
                SnapshotPush(
                    seq: Int(seq),
                    token: token,
                    payload: payload,
                    variant: variant,
                    locale: locale,
                    collapseID: collapseID,
                    expiration: expiration,
                    platform: flags & 8 == 0 ? .ios : .android,
                    due: due
                )
            )
        }
        guard page.readableBytes == 0 else { throw damaged() }
        return pushes
    }
}
