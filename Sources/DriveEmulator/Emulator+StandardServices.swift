import Foundation

extension EmulatorServices {
    /// The OAuth and Drive services the real emulator serves, built from its config, in route
    /// order: OAuth, then Drive (which asks OAuth about every bearer token). Both keep their state
    /// in `config.stateDirectory` (OAuth in `oauth.json`, Drive beside it); without one, OAuth lives
    /// in memory and Drive in a temporary directory removed at `stop()`.
    public static func standard(config: EmulatorConfig) throws -> EmulatorServices {
        let oauth = OAuthService(config: OAuthConfig(tokenLifetime: Double(config.tokenLifetime),
                                                     refreshToken: config.refreshToken,
                                                     stateDirectory: config.stateDirectory),
                                 clock: config.clock)
        let quirks = ListingQuirks(config.listingQuirks)
        let drive = try DriveService(stateDirectory: config.stateDirectory, seedDirectory: config.seedDirectory,
                                     validator: oauth, clock: config.clock, limits: config.listingLimits, quirks: quirks,
                                     driveLimits: config.driveLimits)
        return EmulatorServices(
            providers: [oauth, drive],
            revoke: { token in _ = oauth.revoke(token: token) },
            writeServiceAccountKey: { url, tokenURL in try oauth.writeServiceAccountKey(to: url, tokenURL: tokenURL) },
            close: { drive.close() },
            quirks: quirks,
            usage: { drive.usage() },
            control: { name, request in drive.controlResponse(name, request) })
    }
}
