import Foundation

extension EmulatorServices {
    /// The OAuth and Drive services the real emulator serves, built from its config.
    /// (Wired here once `OAuthService` and `DriveService` exist; until then, none.)
    public static func standard(config: EmulatorConfig) throws -> EmulatorServices {
        EmulatorServices(providers: [])
    }
}
