/// The Drive scopes `drivefs auth login --scope` accepts, by short name.
public enum OAuthScope: String, Sendable, CaseIterable {
    case drive = "drive"
    case driveReadonly = "drive.readonly"
    case driveFile = "drive.file"

    public var url: String { "https://www.googleapis.com/auth/" + rawValue }

    /// A short name (`drive.readonly`) or a full scope URL; nil when it is neither.
    public init?(name: String) {
        let short = name.hasPrefix("https://www.googleapis.com/auth/") ? String(name.dropFirst("https://www.googleapis.com/auth/".count)) : name
        self.init(rawValue: short)
    }
}
