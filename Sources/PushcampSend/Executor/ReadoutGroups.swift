import PushcampModel
import Synchronization

/// Names the variant, locale and platform of each request with a small number
/// (`APNsRequest.group`), so the executor counts outcomes per variant, per locale and per platform
/// with no string per push: Android in the top bit, the variant's index in the next 15, the
/// locale's (as first seen, plus one; 0 for none) in the low 16. Registering a new name takes a
/// lock; the planner caches the last group.
public final class ReadoutGroups: Sendable {
    private let names = Mutex<(variants: [String], locales: [String], index: [String: UInt32])>(([], [], [:]))

    /// The bit that marks an Android request's group.
    static let android: UInt32 = 1 << 31

    public init() {}

    public func group(variant: String, locale: String?, platform: Platform = .ios) -> UInt32 {
        names.withLock { names in
            func index(_ key: String, in list: inout [String], most: Int) -> UInt32 {
                if let known = names.index[key] { return known }
                list.append(key)
                let index = UInt32(min(list.count - 1, most))
                names.index[key] = index
                return index
            }
            let variantIndex = index("v:" + variant, in: &names.variants, most: 0x7FFE)
            let localeIndex = locale.map { index("l:" + $0, in: &names.locales, most: 0xFFFE) + 1 } ?? 0
            return (platform == .android ? Self.android : 0) | variantIndex << 16 | localeIndex
        }
    }

    /// The platform of `group` (or of a variant-latency key, `group >> 16`, shifted back).
    public static func platform(of group: UInt32) -> Platform { group & android != 0 ? .android : .ios }

    /// The variant, locale and platform of `group`.
    public func names(of group: UInt32) -> (variant: String?, locale: String?, platform: Platform) {
        names.withLock { names in
            let variant = Int((group & ~Self.android) >> 16)
            let locale = Int(group & 0xFFFF)
            return (
                variant < names.variants.count ? String(names.variants[variant].dropFirst(2)) : nil,
                locale > 0 && locale - 1 < names.locales.count ? String(names.locales[locale - 1].dropFirst(2)) : nil,
                Self.platform(of: group)
            )
        }
    }
}
