import DriveClient
import DriveSupport
import Foundation
import XCTest

final class AuthCredentialStoreTests: XCTestCase {
    private var root: URL!
    private var store: CredentialStore!

    override func setUpWithError() throws {
        root = try AuthTestFiles.temporaryDirectory("drivefs-store")
        store = CredentialStore(directories: DrivefsDirectories.fromEnvironment(["HOME": root.path, "XDG_CONFIG_HOME": root.appendingPathComponent("cfg").path]))
    }

    override func tearDown() { try? FileManager.default.removeItem(at: root) }

    private let credential = StoredCredential(kind: .oauth, refreshToken: "1//secret-refresh", clientID: "cid", clientSecret: "csecret",
                                              scopes: ["https://www.googleapis.com/auth/drive"], tokenURL: "http://127.0.0.1:1/token")

    func testXDGDirectories() {
        let d = DrivefsDirectories.fromEnvironment(["HOME": "/home/u", "XDG_CONFIG_HOME": "/x/cfg", "XDG_CACHE_HOME": "/x/cache"])
        XCTAssertEqual(d.config.path, "/x/cfg/drivefs")
        XCTAssertEqual(d.cache.path, "/x/cache/drivefs")
        let defaults = DrivefsDirectories.fromEnvironment(["HOME": "/home/u", "XDG_CONFIG_HOME": "relative/ignored"])
        XCTAssertEqual(defaults.config.path, "/home/u/.config/drivefs")
        XCTAssertEqual(defaults.cache.path, "/home/u/.cache/drivefs")
    }

    func testSavedCredentialIsPrivateAndRoundTrips() throws {
        try store.saveCredential(credential, profile: "default")
        let file = try store.tokenFile(profile: "default")
        XCTAssertEqual(file.path, root.appendingPathComponent("cfg/drivefs/tokens/default.json").path)
        XCTAssertEqual(AuthTestFiles.mode(file), 0o600)
        XCTAssertEqual(AuthTestFiles.mode(store.tokensDirectory), 0o700)
        XCTAssertEqual(AuthTestFiles.mode(store.directories.config), 0o700)
        XCTAssertEqual(try store.loadCredential(profile: "default"), credential)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: store.tokensDirectory.path)
        XCTAssertEqual(leftovers, ["default.json"], "no temporary files left behind")
        // Overwrite keeps the mode.
        var changed = credential
        changed.scopes = ["x"]
        try store.saveCredential(changed, profile: "default")
        XCTAssertEqual(AuthTestFiles.mode(file), 0o600)
        XCTAssertEqual(try store.loadCredential(profile: "default")?.scopes, ["x"])
    }

    func testReadableTokenFileIsRefusedWithTheFix() throws {
        try store.saveCredential(credential, profile: "work")
        let file = try store.tokenFile(profile: "work")
        chmod(file.path, 0o644)
        XCTAssertThrowsError(try store.loadCredential(profile: "work")) { error in
            XCTAssertEqual(error as? OAuthError, .insecureCredentialFile(path: file.path))
            XCTAssertTrue("\(error)".contains("chmod 600 \(file.path)"), "\(error)")
            XCTAssertFalse("\(error)".contains("secret-refresh"))
        }
        chmod(file.path, 0o640)
        XCTAssertThrowsError(try store.loadCredential(profile: "work"))
        chmod(file.path, 0o600)
        XCTAssertNotNil(try store.loadCredential(profile: "work"))
    }

    func testMissingCorruptAndDeletedCredentials() throws {
        XCTAssertNil(try store.loadCredential(profile: "none"))
        try store.saveCredential(credential, profile: "p")
        try CredentialFileWriterProbe.write("{garbage", to: try store.tokenFile(profile: "p"))
        XCTAssertThrowsError(try store.loadCredential(profile: "p")) { XCTAssertTrue("\($0)".contains("drivefs auth login")) }
        XCTAssertTrue(try store.deleteCredential(profile: "p"))
        XCTAssertFalse(try store.deleteCredential(profile: "p"))
    }

    /// What `auth status` and `mount` read: the profile and its credential, or `notLoggedIn`.
    func testSignedInReadsTheProfileAndItsCredential() throws {
        XCTAssertThrowsError(try store.signedIn(profile: "none")) { error in
            guard case .notLoggedIn(let profile)? = error as? OAuthError else { return XCTFail("\(error)") }
            XCTAssertEqual(profile, "none")
        }
        try store.saveCredential(credential, profile: "p")
        XCTAssertNil(try store.signedIn(profile: "p").profile)
        try store.updateProfile("p", with: ProfileConfig(tokenURL: "http://127.0.0.1:9/token"))
        let signedIn = try store.signedIn(profile: "p")
        XCTAssertEqual(signedIn.credential, credential)
        XCTAssertEqual(signedIn.profile?.tokenURL, "http://127.0.0.1:9/token")
    }

    func testProfileNamesAreValidated() {
        for bad in ["", "../x", "a/b", ".hidden", String(repeating: "a", count: 65), "sp ace"] {
            XCTAssertThrowsError(try store.tokenFile(profile: bad), bad)
        }
        XCTAssertNoThrow(try store.tokenFile(profile: "work-2.me_x"))
    }

    func testProfileConfigMergesAndIsPrivate() throws {
        try store.updateProfile("default", with: ProfileConfig(clientID: "id1", clientSecret: "s1"))
        try store.updateProfile("default", with: ProfileConfig(tokenURL: "http://127.0.0.1:9/token"))
        try store.updateProfile("other", with: ProfileConfig(apiURL: "http://x/"))
        let p = try XCTUnwrap(try store.profile("default"))
        XCTAssertEqual(p, ProfileConfig(clientID: "id1", clientSecret: "s1", tokenURL: "http://127.0.0.1:9/token"))
        XCTAssertEqual(try store.profile("other")?.apiURL, "http://x/")
        XCTAssertEqual(AuthTestFiles.mode(store.configFile), 0o600)
        let text = try String(contentsOf: store.configFile, encoding: .utf8)
        XCTAssertTrue(text.contains("\"client_id\""), "snake_case keys on disk")
        XCTAssertTrue(text.contains("\"token_url\""))
    }

    func testEndpointResolutionOrder() {
        let profile = ProfileConfig(tokenURL: "http://profile/token", authURL: "http://profile/auth")
        var e = OAuthEndpoints.resolve(environment: [:])
        XCTAssertEqual(e, OAuthEndpoints(tokenURL: "https://oauth2.googleapis.com/token", authURL: "https://accounts.google.com/o/oauth2/v2/auth"))
        XCTAssertEqual(e.revokeURL, "https://oauth2.googleapis.com/revoke")
        e = OAuthEndpoints.resolve(environment: [:], profile: profile)
        XCTAssertEqual(e.tokenURL, "http://profile/token")
        XCTAssertEqual(e.revokeURL, "http://profile/revoke")
        e = OAuthEndpoints.resolve(environment: ["DRIVEFS_TOKEN_URL": "http://env:1/token", "DRIVEFS_AUTH_URL": "http://env:1/auth"], profile: profile)
        XCTAssertEqual(e.tokenURL, "http://env:1/token")
        XCTAssertEqual(e.authURL, "http://env:1/auth")
        e = OAuthEndpoints.resolve(tokenURL: "http://flag:2/o/oauth2/token", environment: ["DRIVEFS_TOKEN_URL": "http://env:1/token"], profile: profile)
        XCTAssertEqual(e.tokenURL, "http://flag:2/o/oauth2/token")
        XCTAssertEqual(e.revokeURL, "http://flag:2/o/oauth2/revoke")
        e = OAuthEndpoints.resolve(environment: ["DRIVEFS_REVOKE_URL": "http://env/rv"])
        XCTAssertEqual(e.revokeURL, "http://env/rv")
    }

    func testScopeNames() {
        XCTAssertEqual(OAuthScope(name: "drive")?.url, "https://www.googleapis.com/auth/drive")
        XCTAssertEqual(OAuthScope(name: "drive.readonly")?.url, "https://www.googleapis.com/auth/drive.readonly")
        XCTAssertEqual(OAuthScope(name: "https://www.googleapis.com/auth/drive.file"), .driveFile)
        XCTAssertNil(OAuthScope(name: "gmail"))
    }

    func testServiceAccountKeyFileMustBePrivateToo() throws {
        let key = root.appendingPathComponent("key.json")
        try Data("{}".utf8).write(to: key)
        chmod(key.path, 0o644)
        let sa = StoredCredential(kind: .serviceAccount, serviceAccountKeyPath: key.path, scopes: ["s"])
        XCTAssertThrowsError(try sa.makeGrant(tokenURL: nil, transport: ScriptedTransport())) {
            XCTAssertEqual($0 as? OAuthError, .insecureCredentialFile(path: key.path))
        }
    }
}

/// Writes raw text into a file (to corrupt it in tests), keeping mode 0600.
enum CredentialFileWriterProbe {
    static func write(_ text: String, to url: URL) throws {
        try Data(text.utf8).write(to: url)
        chmod(url.path, 0o600)
    }
}
