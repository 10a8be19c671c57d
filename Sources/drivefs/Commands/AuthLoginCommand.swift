import CommandLineKit
import DriveClient
import DriveSupport
import Foundation

/// `drivefs auth login`: the installed-app flow (browser, loopback redirect, PKCE), or a service
/// account's JWT grant. Leaves `tokens/PROFILE.json` (0600) and remembers the client and any
/// endpoint given as an option in the profile's config.
enum AuthLoginCommand {
    static func make() -> Command {
        Command(
            name: "login", summary: "Sign in and store the profile's credentials",
            discussion: """
                Without --service-account: opens Google's consent page (in a browser when one can be
                started, and always prints its URL), receives the redirect on a one-shot listener on
                127.0.0.1, checks its state and exchanges the code (PKCE S256) for a refresh token.
                The OAuth client is yours: create a "Desktop app" client in the Google Cloud console
                (see docs/auth.md) and pass --client-id and --client-secret once; they are kept in
                the profile's config.json.

                The secret can stay off the command line (where ps and the shell's history would
                show it): --client-secret-file FILE reads it from the file's first line, and
                DRIVEFS_CLIENT_SECRET gives it in the environment. The first of --client-secret,
                --client-secret-file and DRIVEFS_CLIENT_SECRET that is given is used.

                --no-browser is for machines without one: open the printed URL on any machine. If
                that browser runs here, the redirect arrives by itself; if it runs elsewhere, its
                final page fails to load: copy the URL from its address bar and paste it here.

                With --service-account KEY.json: signs a JWT with the key (RS256) and obtains tokens
                for the service account, or for --impersonate USER when the account has domain-wide
                delegation. The key file stays where it is and must be mode 0600.
                """,
            options: [
                .value("client-id", valueName: "ID", help: "OAuth client ID (default: the profile's)"),
                .value("client-secret", valueName: "SECRET", help: "OAuth client secret (shown by ps: prefer --client-secret-file\nor env DRIVEFS_CLIENT_SECRET; default: the profile's)"),
                .value("client-secret-file", valueName: "FILE", help: "Read the client secret from FILE's first line (before env\nDRIVEFS_CLIENT_SECRET, after --client-secret)",
                       validate: { $0.isEmpty ? "it must name a file" : nil }),
                .value("scope", valueName: "SCOPE", help: "drive (default), drive.readonly or drive.file", validate: AuthCommand.validateScope),
                .flag("no-browser", help: "Do not start a browser; print the URL and accept a pasted redirect URL"),
                .value("service-account", valueName: "KEY.json", help: "Sign in as a service account with this JSON key",
                       validate: { $0.isEmpty ? "it must name a file" : nil }),
                .value("impersonate", valueName: "USER", help: "With --service-account: act as this user (domain-wide delegation)",
                       validate: { $0.contains("@") ? nil : "expected an email address" }),
                .value("timeout", valueName: "SECONDS", help: "How long to wait for the browser's redirect (default 300)",
                       validate: { Double($0).map { $0 > 0 } == true ? nil : "expected a positive number of seconds" }),
            ],
            examples: [
                ("auth login --client-id 123-abc.apps.googleusercontent.com --client-secret GOCSPX-...", "Sign in (browser)"),
                ("auth login --client-id 123-abc.apps.googleusercontent.com --client-secret-file ~/secret.txt",
                 "Sign in, the secret kept off the command line"),
                ("auth login --no-browser", "Sign in from a headless machine"),
                ("auth login --scope drive.readonly --profile ro", "A read-only profile"),
                ("auth login --service-account sa.json --impersonate me@example.com", "A service account acting as a user"),
                ("auth login --api-url http://127.0.0.1:8080/ --token-url http://127.0.0.1:8080/token --auth-url http://127.0.0.1:8080/o/oauth2/v2/auth --client-id x --client-secret y",
                 "Sign in to drivefs-emulator (all three endpoints are remembered in the profile)"),
            ],
            sharedOptions: DriveOptions.group,
            run: run)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        let choice = try DriveOptions.resolve(invocation)
        let store = AuthCommand.store(invocation)
        let profile: ProfileConfig?
        do { profile = try store.profile(choice.profile) } catch { throw AuthCommand.failure(error, doing: "cannot read the configuration") }
        let resolved = choice.apply(profileDefaults: AuthCommand.profileDefaults(profile))
        let transport = try AuthCommand.transport(caFile: resolved.caFile)
        let scope = AuthCommand.scopeURL(invocation.value("scope"))

        if invocation.value("impersonate") != nil && invocation.value("service-account") == nil {
            throw CLIError.usage("--impersonate needs --service-account", command: invocation.command.fullPath)
        }
        if let keyPath = invocation.value("service-account") {
            if invocation.value("client-id") != nil || invocation.value("client-secret") != nil
                || invocation.value("client-secret-file") != nil || invocation.flag("no-browser") {
                throw CLIError.usage("--client-id, --client-secret, --client-secret-file and --no-browser do not apply to --service-account",
                                     command: invocation.command.fullPath)
            }
            return try serviceAccountLogin(invocation, store: store, profileName: choice.profile, keyPath: keyPath,
                                           tokenURL: choice.tokenURL ?? profile?.tokenURL, scope: scope, transport: transport)
        }

        guard let clientID = invocation.value("client-id") ?? profile?.clientID, !clientID.isEmpty else {
            throw CLIError.usage("no OAuth client ID: pass --client-id and --client-secret (a \"Desktop app\" client; docs/auth.md says how to create one)",
                                 command: invocation.command.fullPath)
        }
        let clientSecret = try givenClientSecret(invocation)
            ?? (invocation.value("client-id") == nil ? profile?.clientSecret : nil)
        let endpoints = OAuthEndpoints(tokenURL: resolved.tokenURL, authURL: resolved.authURL,
                                       revokeURL: invocation.environment["DRIVEFS_REVOKE_URL"] ?? profile?.revokeURL)
        let timeout = invocation.value("timeout").flatMap(Double.init) ?? 300
        let login = InstalledAppLogin(options: .init(clientID: clientID, clientSecret: clientSecret, scopes: [scope],
                                                     endpoints: endpoints, timeout: timeout), transport: transport)
        let noBrowser = invocation.flag("no-browser")
        let env = invocation.environment
        let hasDisplay = !(env["DISPLAY"] ?? "").isEmpty || !(env["WAYLAND_DISPLAY"] ?? "").isEmpty
        var openBrowser: (@Sendable (String) -> Void)? = nil
        if !noBrowser && hasDisplay { openBrowser = { @Sendable url in BrowserLauncher.open(url) } }
        // Without a browser opened here (no display, or --no-browser) the browser is elsewhere: offer
        // the paste path whenever someone can type.
        let canPaste = openBrowser == nil && isatty(0) == 1
        var pasted: (@Sendable () -> String?)? = nil
        if canPaste { pasted = { @Sendable in readLine(strippingNewline: true) } }
        let willOpen = openBrowser != nil

        let result: InstalledAppLogin.Result
        do {
            result = try login.run(announce: { url in
                var text = "Open this URL in a browser to sign in to Google Drive:\n\n    \(url)\n\n"
                if willOpen { text += "(a browser is being opened for you)\n" }
                if canPaste {
                    text += "If that browser is on another machine, its last page will fail to load: copy the URL from\n"
                    text += "its address bar (it starts with http://127.0.0.1:) and paste it here, then press Enter.\n"
                }
                text += "Waiting for the sign-in to complete...\n"
                Output.standardError(text)
            }, openBrowser: openBrowser, pastedURL: pasted, notice: { @Sendable text in Output.standardError(text) })
        } catch {
            throw AuthCommand.failure(error, doing: "sign-in failed")
        }

        // The account's address, for `drivefs status` and the mount's name (one about.get; a
        // failure only leaves it unknown).
        let account = AuthStatusCommand.emailAddress(token: result.accessToken, apiURL: resolved.apiURL, transport: transport)
        do {
            // What was given as an option is remembered for the profile; the environment is not.
            try store.updateProfile(choice.profile, with: ProfileConfig(
                clientID: clientID, clientSecret: clientSecret, apiURL: invocation.value("api-url"),
                tokenURL: invocation.value("token-url"), authURL: invocation.value("auth-url"),
                caFile: AuthCommand.absolutePath(invocation.value("ca-file"))))
            try store.saveCredential(StoredCredential(
                kind: .oauth, refreshToken: result.refreshToken, clientID: clientID, clientSecret: clientSecret,
                scopes: result.scopes, account: account, tokenURL: resolved.tokenURL, created: AuthCommand.timestamp(Date().timeIntervalSince1970)),
                profile: choice.profile)
        } catch {
            throw AuthCommand.failure(error, doing: "cannot save the credentials")
        }
        let file = (try? store.tokenFile(profile: choice.profile).path) ?? "?"
        Output.standardOutput("Signed in (profile '\(choice.profile)', scopes: \(result.scopes.joined(separator: " "))).\nCredentials saved in \(file)\n")
        return ExitStatus.success
    }

    /// The secret given for this login: --client-secret, else the first line of
    /// --client-secret-file, else DRIVEFS_CLIENT_SECRET (an empty one counts as unset); nil when
    /// none is given (the profile's may apply). The file is read even when the option wins, so
    /// that a wrong path is reported rather than silently ignored.
    static func givenClientSecret(_ invocation: Invocation) throws -> String? {
        var fromFile: String?
        if let path = invocation.value("client-secret-file") {
            let command = invocation.command.fullPath
            let text: String
            do { text = try readSmallFile(path) } catch {
                throw CLIError.usage("cannot read --client-secret-file \(path): \(error.reason)", command: command)
            }
            var line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            if line.hasSuffix("\r") { line.removeLast() }
            guard !line.isEmpty else {
                throw CLIError.usage("--client-secret-file \(path) is empty: the secret is its first line", command: command)
            }
            fromFile = line
        }
        let fromEnvironment = invocation.environment["DRIVEFS_CLIENT_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        return invocation.value("client-secret") ?? fromFile ?? fromEnvironment
    }

    /// A file's text (at most 64 KiB: a secret file is one line); the failed call when it cannot be read.
    private static func readSmallFile(_ path: String) throws(SystemCallError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open", errno: errno) }
        defer { close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 1)
        defer { buffer.deallocate() }
        let count = try SystemCall.readFully(fd, into: buffer)
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[0..<count]), as: UTF8.self)
    }

    static func serviceAccountLogin(_ invocation: Invocation, store: CredentialStore, profileName: String, keyPath: String,
                                    tokenURL: String?, scope: String, transport: CurlTransport) throws -> Int32 {
        let absolute = URL(fileURLWithPath: keyPath, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
        let subject = invocation.value("impersonate")
        let key: ServiceAccountKey
        do {
            try CredentialStore.requirePrivateFile(absolute)
            key = try ServiceAccountKey.load(path: absolute)
            let grant = ServiceAccountGrant(key: key, scopes: [scope], subject: subject, tokenURL: tokenURL, transport: transport)
            _ = try grant.fetchToken()
            try store.updateProfile(profileName, with: ProfileConfig(apiURL: invocation.value("api-url"), tokenURL: invocation.value("token-url"),
                                                                     caFile: AuthCommand.absolutePath(invocation.value("ca-file"))))
            try store.saveCredential(StoredCredential(
                kind: .serviceAccount, serviceAccountKeyPath: absolute, impersonate: subject, scopes: [scope],
                account: subject ?? key.clientEmail, tokenURL: grant.tokenURL, created: AuthCommand.timestamp(Date().timeIntervalSince1970)),
                profile: profileName)
        } catch {
            throw AuthCommand.failure(error, doing: "service-account sign-in failed")
        }
        let file = (try? store.tokenFile(profile: profileName).path) ?? "?"
        Output.standardOutput("Signed in as \(subject ?? key.clientEmail) (service account \(key.clientEmail), profile '\(profileName)', scope: \(scope)).\nCredentials saved in \(file)\n")
        return ExitStatus.success
    }
}

/// Starts the desktop's browser with `xdg-open`, without waiting for it; failures are silent
/// (the URL is printed anyway).
enum BrowserLauncher {
    static func open(_ url: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["xdg-open", url]
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try? p.run()
    }
}
