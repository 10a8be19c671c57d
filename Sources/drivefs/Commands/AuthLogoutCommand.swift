import CommandLineKit
import DriveClient
import DriveSupport
import Foundation

/// `drivefs auth logout`: revokes the profile's refresh token at the revoke endpoint and deletes
/// the token file. The local copy is deleted even when revocation fails (the message says so).
enum AuthLogoutCommand {
    static func make() -> Command {
        Command(
            name: "logout", summary: "Revoke and forget the profile's credentials",
            discussion: """
                Revokes the refresh token (POST to the revoke endpoint: Google's, or the one next to
                --token-url, or --revoke-url / DRIVEFS_REVOKE_URL), then deletes tokens/PROFILE.json.
                A service account has nothing to revoke: only drivefs's record of it is removed; the
                key file is left alone. The OAuth client in config.json is kept for the next login.
                """,
            options: [
                .value("revoke-url", valueName: "URL", help: "OAuth 2.0 revoke endpoint (env DRIVEFS_REVOKE_URL;\ndefault: derived from the token URL)",
                       validate: DriveOptions.validateURL),
            ],
            examples: [("auth logout", "Sign the default profile out"), ("auth logout --profile work", "Another profile")],
            sharedOptions: DriveOptions.group,
            run: run)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        let choice = try DriveOptions.resolve(invocation)
        let store = AuthCommand.store(invocation)
        let profile = try? store.profile(choice.profile)
        let file = (try? store.tokenFile(profile: choice.profile).path) ?? "?"
        let credential: StoredCredential
        do {
            guard let c = try store.loadCredential(profile: choice.profile) else {
                Output.standardOutput("No credentials for profile '\(choice.profile)': nothing to do.\n")
                return ExitStatus.success
            }
            credential = c
        } catch OAuthError.insecureCredentialFile(let path) {
            // Its secrets may already be exposed: delete it, but do not send them anywhere.
            _ = try? store.deleteCredential(profile: choice.profile)
            Output.standardError("drivefs: \(path) was readable by other users; deleted it without revoking.\n"
                + "Revoke drivefs's access at https://myaccount.google.com/permissions to be safe.\n")
            return ExitStatus.success
        } catch {
            throw AuthCommand.failure(error, doing: "cannot read the credentials")
        }
        let resolved = choice.apply(profileDefaults: AuthCommand.profileDefaults(profile))
        var notes: [String] = []
        if credential.kind == .oauth, let refresh = credential.refreshToken {
            let tokenURL = choice.tokenURL ?? profile?.tokenURL ?? credential.tokenURL ?? resolved.tokenURL
            let endpoints = OAuthEndpoints.resolve(tokenURL: tokenURL, authURL: resolved.authURL,
                                                   revokeURL: invocation.value("revoke-url"), environment: invocation.environment,
                                                   profile: profile)
            do {
                let transport = try AuthCommand.transport(caFile: resolved.caFile)
                switch try TokenRevocation.revoke(token: refresh, revokeURL: endpoints.revokeURL, transport: transport) {
                case .revoked: notes.append("Revoked the refresh token at \(endpoints.revokeURL).")
                case .alreadyInvalid: notes.append("The refresh token was already invalid.")
                }
            } catch {
                notes.append("Could not revoke the refresh token (\(error)); revoke drivefs's access at https://myaccount.google.com/permissions.")
            }
        } else if credential.kind == .serviceAccount {
            notes.append("Service account: nothing to revoke; the key file \(credential.serviceAccountKeyPath ?? "") is left alone.")
        }
        do {
            try store.deleteCredential(profile: choice.profile)
        } catch {
            throw AuthCommand.failure(error, doing: "cannot delete \(file)")
        }
        notes.append("Deleted \(file).")
        Output.standardOutput(notes.joined(separator: "\n") + "\n")
        return ExitStatus.success
    }
}
