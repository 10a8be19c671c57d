import Foundation

extension EmulatorServices {
    /// The OAuth and Drive services the real emulator serves, built from its config, in route
    /// order: OAuth, then Drive. (Drive is wired here once `DriveService` lands.)
    public static func standard(config: EmulatorConfig) throws -> EmulatorServices {
        let oauth = OAuthService(config: OAuthConfig(tokenLifetime: Double(config.tokenLifetime),
                                                     refreshToken: config.refreshToken,
                                                     stateDirectory: config.stateDirectory),
                                 clock: config.clock)
        return EmulatorServices(
            providers: [oauth],
            revoke: { token in _ = oauth.revoke(token: token) },
            writeServiceAccountKey: { url, tokenURL in try oauth.writeServiceAccountKey(to: url, tokenURL: tokenURL) })
    }
}
