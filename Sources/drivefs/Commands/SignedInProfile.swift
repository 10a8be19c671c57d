import CommandLineKit
import DriveClient
import DriveSupport

/// A profile's sign-in as the commands that use one read it (`auth status`, `mount`): the profile's
/// configuration, its stored credential, the endpoints with the profile's defaults applied, and
/// the token endpoint to refresh against.
struct SignedInProfile {
    let profile: ProfileConfig?
    let credential: StoredCredential
    let endpoints: (apiURL: String, tokenURL: String, authURL: String, caFile: String?)
    /// The token endpoint named explicitly (option, environment, profile); nil: the one used at
    /// login (refresh tokens belong to the server that issued them), else Google's / the key's.
    let explicitTokenURL: String?

    /// Reads the profile's sign-in; a CLI failure with the next step when there is none or it
    /// cannot be read.
    static func load(_ invocation: Invocation, choice: DriveEndpointChoice) throws -> SignedInProfile {
        let signedIn: (profile: ProfileConfig?, credential: StoredCredential)
        do {
            signedIn = try AuthCommand.store(invocation).signedIn(profile: choice.profile)
        } catch {
            throw AuthCommand.failure(error, doing: "cannot read the credentials")
        }
        return SignedInProfile(profile: signedIn.profile, credential: signedIn.credential,
                               endpoints: choice.apply(profileDefaults: AuthCommand.profileDefaults(signedIn.profile)),
                               explicitTokenURL: choice.tokenURL ?? signedIn.profile?.tokenURL)
    }

    /// The token endpoint refreshes go to.
    var tokenURL: String { explicitTokenURL ?? credential.tokenURL ?? endpoints.tokenURL }

    /// The grant that turns the credential into access tokens.
    func grant(transport: any HTTPTransport) throws -> any TokenGrant {
        try credential.makeGrant(tokenURL: explicitTokenURL, transport: transport)
    }
}
