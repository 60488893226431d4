import Foundation
import Synchronization

/// A throwaway project directory with a `pushcamp.yaml`, for tests that need real files.
public struct TemporaryProject: Sendable {
    public let root: URL

    public static let defaultProjectFile = """
        apps:
          shop:
            topic: com.example.shop
            team_id: ABCDE12345
            key_id: KEY1234567
            key_file: ${env:SHOP_KEY}
        """

    /// `defaultProjectFile` whose `shop` app receives App Store notifications (production) signed
    /// by the test chain whose root is written to `test-root.pem`.
    public static let appStoreProjectFile =
        defaultProjectFile + """

                app_store:
                  bundle_id: com.example.shop
                  app_apple_id: 1234567890
                  trusted_roots: [test-root.pem]
            """

    public init(projectFile: String? = defaultProjectFile) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pushcamp-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        if let projectFile { try write("pushcamp.yaml", projectFile) }
    }

    /// Writes a file (creating directories), returning its absolute path.
    @discardableResult
    public func write(_ path: String, _ text: String) throws -> String {
        try write(path, bytes: Array(text.utf8))
    }

    @discardableResult
    public func write(_ path: String, bytes: [UInt8]) throws -> String {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url.path
    }

    /// Adds `text` at the end of a file written before.
    public func append(_ path: String, _ text: String) throws {
        let old = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
        try write(path, old + text)
    }

    public func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    public func remove() {
        let cleanups = Self.cleanups.withLock { $0.removeValue(forKey: root.path) } ?? []
        for cleanup in cleanups.reversed() { cleanup() }
        try? FileManager.default.removeItem(at: root)
    }

    /// Runs `cleanup` when the project is removed: for what a test started beside it (a database
    /// client's task, say).
    public func onRemove(_ cleanup: @escaping @Sendable () -> Void) {
        Self.cleanups.withLock { $0[root.path, default: []].append(cleanup) }
    }

    private static let cleanups = Mutex<[String: [@Sendable () -> Void]]>([:])

    /// A deterministic valid device token.
    /// An FCM registration token's shape (letters, digits, `:`, `_`, `-`; never hexadecimal alone),
    /// distinct per index and starting with it: `fcm000007:APA91b…`.
    public static func fcmToken(_ index: Int) -> String {
        "fcm\(String(format: "%06d", index)):APA91b" + String(repeating: "Xy_-", count: 30)
    }

    public static func token(_ index: Int) -> String {
        var value = UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15 &+ 0x1234_5678
        var hex = ""
        for _ in 0..<4 {
            value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let word = String(value, radix: 16)
            hex += String(repeating: "0", count: 16 - word.count) + word
        }
        return hex
    }

    /// A CSV audience of `count` rows with the given extra columns filled by `row`.
    public static func csv(count: Int, columns: [String], row: (Int) -> [String]) -> String {
        var lines = ["token," + columns.joined(separator: ",")]
        for index in 0..<count {
            lines.append(([token(index)] + row(index)).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
