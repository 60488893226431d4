import PushcampFCMCore
import PushcampModel
import PushcampTemplates

/// What a campaign sends to its Android recipients: the FCM app and the message's texts compiled as
/// templates, the platform-neutral part and `message.android:` merged (Android's own field wins).
/// Rendering one recipient's `FCMMessage` reads the same context as the APNs payload (attributes,
/// variables, localized strings), so variants and locales work alike on both platforms.
public struct AndroidTarget: Sendable {
    /// A compiled text and where it is written.
    public struct Text: Sendable {
        public var template: MustacheTemplate
        public var location: SourceLocation
        /// The field it fills, as diagnostics name it (`android.channel_id`).
        public var field: String
    }

    public var app: FCMAppConfig
    public var title: Text?
    public var body: Text?
    public var image: Text?
    /// `message.data`, or `android.data` when written (FCM's `android.data` would replace it anyway).
    public var data: [(key: String, value: Text)]
    public var channelID: Text?
    public var tag: Text?
    public var clickAction: Text?
    public var sound: Text?
    public var icon: Text?
    public var color: Text?
    public var collapseKey: Text?
    public var notificationCount: Int?
    public var priority: FCMMessage.Priority
    /// `android.ttl`, else the message's expiration.
    public var expiration: ExpirationSpec?
    public var restrictedPackageName: String?

    /// Every text, for name checks against the audience's columns.
    public var texts: [Text] {
        [title, body, image, channelID, tag, clickAction, sound, icon, color, collapseKey].compactMap { $0 }
            + data.map(\.value)
    }

    /// The message for one recipient; a template that cannot be rendered throws, naming its field.
    func render(context: inout RenderContext) throws(AndroidRenderError) -> FCMMessage {
        func text(_ text: Text?) throws(AndroidRenderError) -> String? {
            guard let text else { return nil }
            do throws(RenderError) {
                return try text.template.renderText(context: &context)
            } catch {
                throw AndroidRenderError(field: text.field, error: error)
            }
        }
        var message = FCMMessage(priority: priority, expiration: nil)
        message.title = try text(title)
        message.body = try text(body)
        message.image = try text(image)
        for (key, value) in data {
            message.data.append(FCMMessage.Pair(key, try text(value) ?? ""))
        }
        message.collapseKey = try text(collapseKey)
        message.restrictedPackageName = restrictedPackageName
        message.notification.channelID = try text(channelID)
        message.notification.tag = try text(tag)
        message.notification.clickAction = try text(clickAction)
        message.notification.sound = try text(sound)
        message.notification.icon = try text(icon)
        message.notification.color = try text(color)
        message.notification.notificationCount = notificationCount
        return message
    }
}

/// A text of the Android message that could not be rendered for a recipient.
struct AndroidRenderError: Error {
    var field: String
    var error: RenderError
}
