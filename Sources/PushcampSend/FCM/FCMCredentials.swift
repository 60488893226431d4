import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCM
import PushcampFCMCore
import PushcampModel
import PushcampPlanner

/// An FCM app's credentials, read from `pushcamp.yaml`'s settings: the service account's key (a file,
/// or the key's JSON itself in a `${env:…}` variable), the project sends go to, the CA to trust.
public struct FCMCredentials: Sendable {
    public var account: ServiceAccount
    /// The project sends go to: the app's `project_id`, else the key file's.
    public var projectID: String
    /// Where the key came from, as a person would name it: a path, or "the variable NAME".
    public var source: String
    /// The key file can be read by its group or by others (a key should be its owner's alone).
    public var sharedReadable: Bool
    public var caFile: String?

    /// The largest key file read: Google's are about 2.3 KB.
    static let keyFileLimit = 64 << 10

    /// Reads `app`'s credentials; a problem names the setting (and where it is written) and never
    /// prints the key.
    public static func load(
        _ app: FCMAppConfig,
        paths: ProjectPaths,
        environment: [String: String]
    ) throws(SendRun.CredentialsProblem) -> FCMCredentials {
        func problem(_ setting: ConfigString?, _ message: String) -> SendRun.CredentialsProblem {
            SendRun.CredentialsProblem(location: setting?.location, message: "app \(app.name): \(message)")
        }
        let setting = app.serviceAccount
        let resolved: String
        switch setting.resolvePath(environment) {
        case .success(let text): resolved = text
        case .failure(let error): throw problem(setting, "service_account: \(error.message)")
        }
        var bytes: [UInt8]
        var source: String
        var sharedReadable = false
        if resolved.drop(while: \.isWhitespace).hasPrefix("{") {
            // A CI secret holding the key file's text.
            bytes = Array(resolved.utf8)
            source = "the variable \(setting.environmentNames.first ?? "service_account")"
        } else {
            let path = paths.url(resolved).path
            source = path
            do {
                bytes = try InputFile.read(path, limit: keyFileLimit)
            } catch {
                throw problem(setting, "service_account \(path) \(error.description)")
            }
            var info = stat()
            if stat(path, &info) == 0 { sharedReadable = info.st_mode & 0o044 != 0 }
        }
        let account: ServiceAccount
        do {
            account = try ServiceAccount(json: bytes)
        } catch {
            throw problem(setting, "service_account \(source) \(error.description)")
        }
        bytes.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        let caFile: String?
        if let value = app.caFile {
            switch value.resolvePath(environment) {
            case .success(let text):
                let path = paths.url(text).path
                if let fileProblem = InputFile.check(path) { throw problem(value, "ca_file \(path) \(fileProblem)") }
                caFile = path
            case .failure(let error):
                throw problem(value, "ca_file: \(error.message)")
            }
        } else {
            caFile = nil
        }
        return FCMCredentials(
            account: account,
            projectID: app.projectID ?? account.projectID,
            source: source,
            sharedReadable: sharedReadable,
            caFile: caFile
        )
    }
}
