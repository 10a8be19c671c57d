import CommandLineKit
import DriveClient

/// The endpoint and profile options of every command that talks to Drive, declared once.
///
/// Precedence for each endpoint: the option, then the environment variable, then the profile's
/// configuration, then Google's default. `resolve` applies the first two; the command, once it has
/// loaded the profile, finishes with `DriveEndpointChoice.driveEndpoints(profile:)` /
/// `oauthEndpoints(profile:)`.
enum DriveOptions {
    static let defaultAPIURL = DriveEndpoints.googleAPIRoot
    static let defaultTokenURL = DriveEndpoints.googleTokenURL
    static let defaultAuthURL = DriveEndpoints.googleAuthURL
    static let defaultProfile = "default"

    /// Every command that talks to Drive takes these (`Command.sharedOptions`).
    static let group = OptionGroup(
        name: "Drive options", purpose: "for the emulator or a proxy; the defaults talk to Google",
        takers: "Commands that talk to Drive", specs: specs)

    static let specs: [OptionSpec] = [
        .value("api-url", valueName: "URL",
               help: "Drive API root; drive/v3/ and upload/drive/v3/ are appended\n(env DRIVEFS_API_URL; default \(defaultAPIURL))",
               validate: validateURL),
        .value("token-url", valueName: "URL",
               help: "OAuth 2.0 token endpoint (env DRIVEFS_TOKEN_URL;\ndefault \(defaultTokenURL))",
               validate: validateURL),
        .value("auth-url", valueName: "URL",
               help: "OAuth 2.0 consent endpoint (env DRIVEFS_AUTH_URL;\ndefault \(defaultAuthURL))",
               validate: validateURL),
        .value("profile", valueName: "NAME",
               help: "Account profile under ~/.config/drivefs/ (env DRIVEFS_PROFILE;\ndefault '\(defaultProfile)')",
               validate: validateProfile),
        .value("ca-file", valueName: "FILE",
               help: "PEM file of CA certificates to trust instead of the system store",
               validate: { $0.isEmpty ? "it must name a file" : nil }),
    ]

    /// What the command line and environment chose. `nil` endpoints are left for the profile.
    static func resolve(_ invocation: Invocation) throws(CLIError) -> DriveEndpointChoice {
        precondition(invocation.command.sharedOptions?.name == group.name, "'\(invocation.command.displayPath)' does not take Drive options")
        let env = invocation.environment
        func pick(_ option: String, _ variable: String) throws(CLIError) -> String? {
            if let value = invocation.value(option) { return value }
            guard let value = env[variable], !value.isEmpty else { return nil }
            if let problem = validateURL(value) {
                throw .usage("invalid value '\(value)' in \(variable): \(problem)", command: invocation.command.fullPath)
            }
            return value
        }
        let profile = invocation.value("profile") ?? env["DRIVEFS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultProfile
        if let problem = validateProfile(profile) {
            throw .usage("invalid profile name '\(profile)': \(problem)", command: invocation.command.fullPath)
        }
        return DriveEndpointChoice(
            apiURL: try pick("api-url", "DRIVEFS_API_URL"),
            tokenURL: try pick("token-url", "DRIVEFS_TOKEN_URL"),
            authURL: try pick("auth-url", "DRIVEFS_AUTH_URL"),
            profile: profile,
            caFile: invocation.value("ca-file"))
    }

    static func validateURL(_ text: String) -> String? {
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            return "expected an http:// or https:// URL"
        }
        let rest = text.drop { $0 != "/" }.dropFirst(2)
        let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if host.isEmpty { return "the URL has no host" }
        if text.contains(where: { $0 == " " || $0.isNewline }) { return "a URL cannot contain spaces" }
        if let problem = CleartextPolicy.problem(with: text) { return problem }
        return nil
    }

    /// Profiles name directories: letters, digits, `.`, `_`, `-`; not starting with `.`.
    static func validateProfile(_ name: String) -> String? {
        if name.isEmpty { return "it cannot be empty" }
        if name.hasPrefix(".") { return "it cannot start with '.'" }
        let allowed = name.unicodeScalars.allSatisfy { s in
            (s.value < 128) && (s.properties.isAlphabetic || ("0"..."9").contains(Character(s)) || "._-".unicodeScalars.contains(s))
        }
        return allowed ? nil : "use letters, digits, '.', '_' and '-'"
    }
}
