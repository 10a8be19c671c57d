import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import XCTest

/// `drivefs auth login|status|logout` as a user runs them: the built binary, against an in-process
/// emulator, with its own XDG_CONFIG_HOME. The test plays the browser.
final class AuthCommandTests: XCTestCase {
    private var emulator: Emulator!
    private var home: URL!
    private var keyFile: URL!

    override func setUpWithError() throws {
        home = try AuthTestFiles.temporaryDirectory("drivefs-auth-cli")
        keyFile = home.appendingPathComponent("sa.json")
        emulator = try Emulator(config: EmulatorConfig(port: 0, writeServiceAccount: keyFile))
        try emulator.start()
    }

    override func tearDown() {
        emulator.stop()
        try? FileManager.default.removeItem(at: home)
    }

    private var environment: [String: String] {
        ["HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "PATH": "/usr/bin:/bin"]
    }

    private var emulatorOptions: [String] {
        ["--token-url", emulator.baseURL + "/token", "--auth-url", emulator.baseURL + "/o/oauth2/v2/auth", "--api-url", emulator.baseURL + "/"]
    }

    private var tokenFile: URL { home.appendingPathComponent("config/drivefs/tokens/default.json") }

    func testLoginStatusLogoutOverTheEmulator() throws {
        let browser = TestBrowser(transport: try CurlTransport())
        let caFile = home.appendingPathComponent("ca.pem").path
        try Data("# a CA bundle (unused over loopback http)\n".utf8).write(to: URL(fileURLWithPath: caFile))
        let login = try DrivefsProcess.start(["auth", "login", "--no-browser", "--client-id", "cli-client", "--client-secret", "cli-secret",
                                              "--scope", "drive.readonly", "--timeout", "20", "--ca-file", caFile] + emulatorOptions,
                                             environment: environment)
        let url = try XCTUnwrap(login.waitForStandardError(matching: "http://127.0.0.1:[0-9]+/o/oauth2/v2/auth\\?[^ \\n]+", timeout: 20),
                                login.standardError)
        _ = try browser.deliver(try browser.consent(url))
        let status = login.wait(timeout: 20)
        XCTAssertEqual(status, 0, "stdout: \(login.standardOutput) stderr: \(login.standardError)")
        XCTAssertTrue(login.standardOutput.contains("Signed in (profile 'default', scopes: https://www.googleapis.com/auth/drive.readonly)"),
                      login.standardOutput)
        XCTAssertEqual(AuthTestFiles.mode(tokenFile), 0o600)
        let stored = try XCTUnwrap(try JSONDecoder().decode(StoredCredential.self, from: Data(contentsOf: tokenFile)))
        let refresh = try XCTUnwrap(stored.refreshToken)
        XCTAssertEqual(stored.account, "user@drivefs-emulator.test", "login remembers the account's address (about.get)")
        XCTAssertFalse(login.standardOutput.contains(refresh) || login.standardError.contains(refresh), "no token on screen")

        let profile = try XCTUnwrap(try CredentialStore(directories: DrivefsDirectories.fromEnvironment(environment)).profile("default"))
        XCTAssertEqual(profile.caFile, caFile, "--ca-file is remembered in the profile")
        XCTAssertEqual(profile.apiURL, emulator.baseURL + "/")

        // status: no options needed any more (the endpoints were remembered in the profile).
        let st = try DrivefsProcess.run(["auth", "status"], environment: environment)
        XCTAssertEqual(st.status, 0, st.summary)
        XCTAssertTrue(st.out.contains("kind: OAuth user (client cli-client)"), st.out)
        XCTAssertTrue(st.out.contains("scopes: https://www.googleapis.com/auth/drive.readonly"), st.out)
        XCTAssertTrue(st.out.contains("access token: valid for 59m"), st.out)
        XCTAssertTrue(st.out.contains("account: ") && st.out.contains("@") && !st.out.contains("about.get failed"),
                      "the account comes from Drive's about.get: \(st.out)")
        XCTAssertFalse(st.out.contains(refresh) || st.out.contains("ya29.") || st.out.contains("cli-secret"), st.out)

        // A token file others can read is refused, with the fix.
        chmod(tokenFile.path, 0o644)
        let refused = try DrivefsProcess.run(["auth", "status"], environment: environment)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("chmod 600 \(tokenFile.path)"), refused.err)
        chmod(tokenFile.path, 0o600)

        // logout revokes at the emulator and deletes the file.
        let out = try DrivefsProcess.run(["auth", "logout"], environment: environment)
        XCTAssertEqual(out.status, 0, out.summary)
        XCTAssertTrue(out.out.contains("Revoked the refresh token at \(emulator.baseURL)/revoke"), out.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tokenFile.path))
        let grant = RefreshTokenGrant(tokenURL: emulator.baseURL + "/token", clientID: "cli-client", clientSecret: "cli-secret",
                                      refreshToken: refresh, transport: try CurlTransport())
        XCTAssertThrowsError(try grant.fetchToken()) { XCTAssertTrue(($0 as? OAuthError)?.requiresLogin == true, "\($0)") }

        let after = try DrivefsProcess.run(["auth", "status"], environment: environment)
        XCTAssertEqual(after.status, 1)
        XCTAssertTrue(after.err.contains("drivefs auth login"), after.err)
    }

    func testServiceAccountLoginAndStatus() throws {
        XCTAssertEqual(AuthTestFiles.mode(keyFile), 0o600)
        let login = try DrivefsProcess.run(["auth", "login", "--service-account", keyFile.path, "--impersonate", "boss@example.com",
                                            "--api-url", emulator.baseURL + "/"], environment: environment)
        XCTAssertEqual(login.status, 0, login.summary)
        XCTAssertTrue(login.out.contains("Signed in as boss@example.com"), login.out)
        let st = try DrivefsProcess.run(["auth", "status"], environment: environment)
        XCTAssertEqual(st.status, 0, st.summary)
        XCTAssertTrue(st.out.contains("kind: service account"), st.out)
        XCTAssertTrue(st.out.contains("impersonating: boss@example.com"), st.out)
        XCTAssertFalse(st.out.contains("PRIVATE KEY"))

        chmod(keyFile.path, 0o644)
        let refused = try DrivefsProcess.run(["auth", "login", "--service-account", keyFile.path], environment: environment)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("chmod 600 \(keyFile.path)"), refused.err)

        let out = try DrivefsProcess.run(["auth", "logout"], environment: environment)
        XCTAssertEqual(out.status, 0, out.summary)
        XCTAssertTrue(out.out.contains("nothing to revoke"), out.out)
        XCTAssertTrue(FileManager.default.fileExists(atPath: keyFile.path), "the key file is left alone")
    }

    func testUsageErrors() throws {
        for (args, expected) in [
            (["auth", "login"], "no OAuth client ID"),
            (["auth", "login", "--scope", "all"], "expected drive, drive.readonly or drive.file"),
            (["auth", "login", "--impersonate", "a@b.c", "--client-id", "x"], "--impersonate needs --service-account"),
            (["auth", "login", "--service-account", "k.json", "--no-browser"], "do not apply to --service-account"),
            (["auth", "logout", "--revoke-url", "ftp://x"], "http://"),
            (["auth", "status", "--token-url", "http://oauth2.example.com/token"], "use https://"),
            (["auth", "status", "--api-url", "http://10.1.2.3:8080/"], "allowed only for loopback hosts"),
        ] {
            let r = try DrivefsProcess.run(args, environment: environment)
            XCTAssertEqual(r.status, 2, "\(args): \(r.summary)")
            XCTAssertTrue(r.err.contains(expected), "\(args): \(r.err)")
        }
    }

    /// One browser login; the secret that ended in the token file.
    private func loginStoringSecret(_ arguments: [String], environment extra: [String: String] = [:]) throws -> String? {
        let browser = TestBrowser(transport: try CurlTransport())
        let login = try DrivefsProcess.start(["auth", "login", "--no-browser", "--timeout", "20"] + arguments + emulatorOptions,
                                             environment: environment.merging(extra) { $1 })
        let url = try XCTUnwrap(login.waitForStandardError(matching: "http://127.0.0.1:[0-9]+/o/oauth2/v2/auth\\?[^ \\n]+", timeout: 20),
                                login.standardError)
        _ = try browser.deliver(try browser.consent(url))
        XCTAssertEqual(login.wait(timeout: 20), 0, "\(arguments): \(login.standardError)")
        for secret in ["file-secret", "env-secret", "flag-secret"] {
            XCTAssertFalse(login.standardOutput.contains(secret) || login.standardError.contains(secret), "no secret on screen")
        }
        return try JSONDecoder().decode(StoredCredential.self, from: Data(contentsOf: tokenFile)).clientSecret
    }

    /// The secret kept out of `ps` and the shell's history: from a file (its first line) or from
    /// DRIVEFS_CLIENT_SECRET; the option beats the file, the file beats the environment.
    func testTheClientSecretComesFromAFileOrTheEnvironment() throws {
        let help = try DrivefsProcess.run(["auth", "login", "--help"], environment: environment)
        XCTAssertTrue(help.out.contains("--client-secret-file=FILE") && help.out.contains("DRIVEFS_CLIENT_SECRET"), help.out)

        let file = home.appendingPathComponent("secret.txt")
        try Data("file-secret\nsecond line\n".utf8).write(to: file)
        let env = ["DRIVEFS_CLIENT_SECRET": "env-secret"]
        XCTAssertEqual(try loginStoringSecret(["--client-id", "c-file", "--client-secret-file", file.path]), "file-secret")
        XCTAssertEqual(try loginStoringSecret(["--client-id", "c-env"], environment: env), "env-secret")
        XCTAssertEqual(try loginStoringSecret(["--client-id", "c-both", "--client-secret-file", file.path], environment: env), "file-secret")
        XCTAssertEqual(try loginStoringSecret(["--client-id", "c-all", "--client-secret", "flag-secret", "--client-secret-file", file.path],
                                              environment: env), "flag-secret")
        // The environment's secret is the client's: the emulator refreshes with it.
        XCTAssertEqual(try loginStoringSecret(["--client-id", "c-env2"], environment: env), "env-secret")
        let st = try DrivefsProcess.run(["auth", "status"], environment: environment)
        XCTAssertEqual(st.status, 0, st.summary)
        XCTAssertTrue(st.out.contains("kind: OAuth user (client c-env2)"), st.out)
        XCTAssertFalse(st.out.contains("env-secret"), st.out)
    }

    func testAMissingOrEmptySecretFileIsAUsageError() throws {
        let empty = home.appendingPathComponent("empty.txt")
        try Data().write(to: empty)
        let blank = home.appendingPathComponent("blank.txt")
        try Data("\nsecret on the second line\n".utf8).write(to: blank)
        let missing = home.appendingPathComponent("none.txt").path
        for (args, expected) in [
            (["--client-secret-file", empty.path], "--client-secret-file \(empty.path) is empty: the secret is its first line"),
            (["--client-secret-file", blank.path], "--client-secret-file \(blank.path) is empty: the secret is its first line"),
            (["--client-secret-file", missing], "cannot read --client-secret-file \(missing): No such file or directory"),
            (["--client-secret-file", home.path], "cannot read --client-secret-file \(home.path): Is a directory"),
        ] {
            let r = try DrivefsProcess.run(["auth", "login", "--no-browser", "--client-id", "x"] + args + emulatorOptions,
                                           environment: environment)
            XCTAssertEqual(r.status, 2, "\(args): \(r.summary)")
            XCTAssertEqual(r.err, "drivefs: \(expected) (see 'drivefs auth login --help')\n", "\(args)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: tokenFile.path), "\(args): nothing was stored")
        }
        let sa = try DrivefsProcess.run(["auth", "login", "--service-account", keyFile.path, "--client-secret-file", empty.path],
                                        environment: environment)
        XCTAssertEqual(sa.status, 2, sa.summary)
        XCTAssertTrue(sa.err.contains("do not apply to --service-account"), sa.err)
    }

    func testWrongClientSecretIsAnActionableFailure() throws {
        // Log in, then break the stored secret: the refresh is refused as invalid_client.
        let browser = TestBrowser(transport: try CurlTransport())
        let login = try DrivefsProcess.start(["auth", "login", "--no-browser", "--client-id", "c1", "--client-secret", "s1", "--timeout", "20"]
                                             + emulatorOptions, environment: environment)
        let url = try XCTUnwrap(login.waitForStandardError(matching: "http://127.0.0.1:[0-9]+/o/oauth2/v2/auth\\?[^ \\n]+", timeout: 20))
        _ = try browser.deliver(try browser.consent(url))
        XCTAssertEqual(login.wait(timeout: 20), 0, login.standardError)
        var stored = try JSONDecoder().decode(StoredCredential.self, from: Data(contentsOf: tokenFile))
        stored.clientSecret = "wrong-secret"
        try CredentialStore(directories: DrivefsDirectories.fromEnvironment(environment)).saveCredential(stored, profile: "default")
        let st = try DrivefsProcess.run(["auth", "status"], environment: environment)
        XCTAssertEqual(st.status, 1)
        XCTAssertTrue(st.err.contains("Check --client-id and --client-secret"), st.err)
        XCTAssertFalse(st.err.contains("wrong-secret"), st.err)
    }

    /// A token endpoint that cannot be reached: one line that says so, one that says what to check.
    func testUnreachableTokenEndpointReadsWell() throws {
        let stored = StoredCredential(kind: .oauth, refreshToken: "1//r", clientID: "c1", clientSecret: "s1",
                                      scopes: ["https://www.googleapis.com/auth/drive"], tokenURL: "http://127.0.0.1:1/token", created: nil)
        try CredentialStore(directories: DrivefsDirectories.fromEnvironment(environment)).saveCredential(stored, profile: "default")
        let st = try DrivefsProcess.run(["auth", "status", "--token-url", "http://127.0.0.1:1/token"], environment: environment)
        XCTAssertEqual(st.status, 1, st.summary)
        let lines = st.err.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, st.err)
        XCTAssertTrue(lines.first?.hasPrefix("drivefs: the credentials do not work: cannot reach the token endpoint: could not connect") == true, st.err)
        XCTAssertEqual(lines.last, "Check the network connection, and the endpoints if you set them (--api-url, --token-url).")
        // The environment and the profile go through the same gate (the transport refuses too).
        let env = try DrivefsProcess.run(["auth", "status"], environment: environment.merging(["DRIVEFS_TOKEN_URL": "http://192.0.2.1/token"]) { $1 })
        XCTAssertEqual(env.status, 2, env.summary)
        XCTAssertTrue(env.err.contains("invalid value 'http://192.0.2.1/token' in DRIVEFS_TOKEN_URL: plain http:// is allowed only for loopback hosts"), env.err)
    }
}

/// The built `drivefs` binary as a child process, its output collected as it comes.
final class DrivefsProcess: @unchecked Sendable {
    private let process = Process()
    private let output = Locked<(out: String, err: String)>(("", ""))
    private let done = DispatchGroup()

    struct Result {
        let status: Int32
        let out: String
        let err: String
        var summary: String { "status \(status); stdout: \(out); stderr: \(err)" }
    }

    static func binary() throws -> String {
        var candidates: [String] = []
        for base in [Bundle.main.bundlePath, CommandLine.arguments.first ?? ""] where !base.isEmpty {
            var dir = URL(fileURLWithPath: base)
            for _ in 0..<3 {
                dir = dir.deletingLastPathComponent()
                candidates.append(dir.appendingPathComponent("drivefs").path)
            }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/drivefs").path)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw NSError(domain: "drivefs binary not built (looked in \(candidates))", code: 1)
        }
        return found
    }

    static func start(_ arguments: [String], environment: [String: String]) throws -> DrivefsProcess {
        let p = DrivefsProcess()
        p.process.executableURL = URL(fileURLWithPath: try binary())
        p.process.arguments = arguments
        p.process.environment = environment
        p.process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        p.process.standardOutput = out
        p.process.standardError = err
        for (pipe, isErr) in [(out, false), (err, true)] {
            p.done.enter()
            let handle = pipe.fileHandleForReading
            Thread {
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    let text = String(decoding: data, as: UTF8.self)
                    p.output.withLock { if isErr { $0.err += text } else { $0.out += text } }
                }
                p.done.leave()
            }.start()
        }
        try p.process.run()
        return p
    }

    static func run(_ arguments: [String], environment: [String: String], timeout: Double = 30) throws -> Result {
        let p = try start(arguments, environment: environment)
        let status = p.wait(timeout: timeout)
        return Result(status: status, out: p.standardOutput, err: p.standardError)
    }

    var standardOutput: String { output.withLock { $0.out } }
    var standardError: String { output.withLock { $0.err } }

    /// The first match of `pattern` in standard error, waiting for it up to `timeout` seconds.
    func waitForStandardError(matching pattern: String, timeout: Double) -> String? {
        let regex = try! NSRegularExpression(pattern: pattern)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = standardError
            if let m = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), let r = Range(m.range, in: text) {
                return String(text[r])
            }
            if !process.isRunning { return nil }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// The exit status; kills the process when it outlives `timeout` (status -9 then).
    func wait(timeout: Double) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            _ = done.wait(timeout: .now() + 5)
            return -9
        }
        process.waitUntilExit()
        _ = done.wait(timeout: .now() + 5)
        return process.terminationStatus
    }
}
