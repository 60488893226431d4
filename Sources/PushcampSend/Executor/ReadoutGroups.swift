import Synchronization

/// Names the variant and locale of each request with a small number (`APNsRequest.group`), so the
/// executor counts outcomes per variant and per locale with no string per push: the variant's
/// index in the high 16 bits, the locale's (as first seen, plus one; 0 for none) in the low 16.
/// Registering a new name takes a lock; the planner caches the last group.
public final class ReadoutGroups: Sendable {
    private let names = Mutex<(variants: [String], locales: [String], index: [String: UInt32])>(([], [], [:]))

    public init() {}

    public func group(variant: String, locale: String?) -> UInt32 {
        names.withLock { names in
            func index(_ key: String, in list: inout [String]) -> UInt32 {
                if let known = names.index[key] { return known }
                list.append(key)
                let index = UInt32(min(list.count - 1, 0xFFFE))
                names.index[key] = index
                return index
            }
            let variantIndex = index("v:" + variant, in: &names.variants)
            let localeIndex = locale.map { index("l:" + $0, in: &names.locales) + 1 } ?? 0
            return variantIndex << 16 | localeIndex
        }
    }

    /// The variant and locale of `group`.
    public func names(of group: UInt32) -> (variant: String?, locale: String?) {
        names.withLock { names in
            let variant = Int(group >> 16)
            let locale = Int(group & 0xFFFF)
            return (
                variant < names.variants.count ? String(names.variants[variant].dropFirst(2)) : nil,
                locale > 0 && locale - 1 < names.locales.count ? String(names.locales[locale - 1].dropFirst(2)) : nil
            )
        }
    }
}
