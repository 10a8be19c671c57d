import CommandLineKit
import DriveClient
import DriveSupport
import Foundation

/// `drivefs auth status`: the profile's credential kind, account, scopes and a fresh access
/// token's expiry, checked against the token endpoint (and Drive's about.get for the account).
/// Never prints a token or a secret.
enum AuthStatusCommand {
    static func make() -> Command {
        Command(
            name: "status", summary: "Show who is signed in, with which scopes, and the token's expiry",
            discussion: """
                Reads the profile's credentials, obtains an access token to prove they still work,
                and asks Drive (about.get) who the account is. Exit status 1 when the profile has no
                working credentials. Tokens and secrets are never printed.
                """,
            examples: [("auth status", "The default profile"), ("auth status --profile work", "Another profile")],
            sharedOptions: DriveOptions.group,
            run: run)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        let choice = try DriveOptions.resolve(invocation)
        let store = AuthCommand.store(invocation)
        let signedIn = try SignedInProfile.load(invocation, choice: choice)
        let credential = signedIn.credential
        let resolved = signedIn.endpoints
        var lines = ["profile: \(choice.profile)"]
        switch credential.kind {
        case .oauth:
            lines.append("kind: OAuth user (client \(credential.clientID ?? "?"))")
        case .serviceAccount:
            lines.append("kind: service account (key \(credential.serviceAccountKeyPath ?? "?"))")
            if let who = credential.impersonate { lines.append("impersonating: \(who)") }
        }
        lines.append("scopes: \(credential.scopes.joined(separator: " "))")
        if let created = credential.created { lines.append("signed in: \(created)") }
        lines.append("token endpoint: \(signedIn.tokenURL)")
        lines.append("credentials: \((try? store.tokenFile(profile: choice.profile).path) ?? "?")")

        let transport = try AuthCommand.transport(caFile: resolved.caFile)
        let token: AccessToken
        do {
            let grant = try signedIn.grant(transport: transport)
            token = try grant.fetchToken()
        } catch {
            Output.standardOutput(lines.joined(separator: "\n") + "\n")
            throw AuthCommand.failure(error, doing: "the credentials do not work")
        }
        let now = Date().timeIntervalSince1970
        lines.append("access token: valid for \(AuthCommand.duration(token.expiresAt - now)) (until \(AuthCommand.timestamp(token.expiresAt)))")
        if let granted = token.scope, !granted.isEmpty, Set(granted.split(separator: " ").map(String.init)) != Set(credential.scopes) {
            lines.append("granted scopes: \(granted)")
        }
        lines.append("account: " + account(token: token, apiURL: resolved.apiURL, transport: transport, fallback: credential.account))
        Output.standardOutput(lines.joined(separator: "\n") + "\n")
        return ExitStatus.success
    }

    /// The account's e-mail address from about.get, or nil when it cannot be had.
    static func emailAddress(token: AccessToken, apiURL: String, transport: any HTTPTransport) -> String? {
        try? aboutAPI(token: token, apiURL: apiURL, transport: transport).about().emailAddress
    }

    private static func aboutAPI(token: AccessToken, apiURL: String, transport: any HTTPTransport) -> DriveAPI {
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: FixedGrant(token: token)), pacer: nil,
                                            retryPolicy: RetryPolicy(maxAttempts: 1))
        return DriveAPI(executor: executor, endpoints: DriveEndpoints(apiRoot: apiURL))
    }

    /// `Name <email>` from about.get, or what is known without it.
    static func account(token: AccessToken, apiURL: String, transport: any HTTPTransport, fallback: String?) -> String {
        let api = aboutAPI(token: token, apiURL: apiURL, transport: transport)
        do {
            let about = try api.about()
            switch (about.displayName, about.emailAddress) {
            case let (name?, email?): return "\(name) <\(email)>"
            case let (nil, email?): return email
            case let (name?, nil): return name
            default: return fallback ?? "unknown"
            }
        } catch {
            return (fallback ?? "unknown") + " (about.get failed: \(error))"
        }
    }
}

/// Hands out one token already obtained (status asks about.get with the token it just fetched).
struct FixedGrant: TokenGrant {
    let token: AccessToken
    func fetchToken() throws -> AccessToken { token }
}
