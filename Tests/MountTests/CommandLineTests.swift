import Foundation
import XCTest

/// `drivefs`'s command line, run as a subprocess: help and version, and every kind of wrong
/// command line rejected with status 2 and a message that names the culprit.
final class CommandLineTests: XCTestCase {
    private func drivefs(_ arguments: String..., environment: [String: String] = [:]) throws -> ExternalCommand.Result {
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("DRIVEFS_") && key != "DRIVEFS_BIN" { env[key] = nil }
        env.merge(environment) { $1 }
        let result = try DriveFSBinary.run(arguments, timeout: 20, environment: env)
        XCTAssertFalse(result.timedOut, "drivefs \(arguments) timed out")
        return result
    }

    private func assertUsageError(_ result: ExternalCommand.Result, _ expected: String,
                                  file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 2, result.summary, file: file, line: line)
        XCTAssertEqual(result.errorOutput, expected + "\n", file: file, line: line)
        XCTAssertEqual(result.output, "", "errors go to standard error only", file: file, line: line)
    }

    func testVersion() throws {
        let result = try drivefs("--version")
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertNotNil(result.output.range(of: #"^drivefs \d+\.\d+\.\d+\n$"#, options: .regularExpression), result.output)
    }

    func testHelpShowsUsageCommandsAndExitStatuses() throws {
        let result = try drivefs("--help")
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.output.contains("Usage: drivefs COMMAND"), result.output)
        XCTAssertTrue(result.output.contains("Commands:"), result.output)
        XCTAssertTrue(result.output.contains("--version"), result.output)
        XCTAssertTrue(result.output.contains("Exit status"), result.output)
        XCTAssertFalse(result.output.contains("smoke-mount"), "developer commands stay out of the overview")
    }

    /// Walks the whole tree from the root's help (so commands added later are covered too):
    /// `--help` and `-h` on every command and subcommand show its usage and options.
    func testEveryCommandAnswersHelp() throws {
        var queue: [[String]] = [[], ["debug"]]
        var seen = 0
        while let path = queue.popLast() {
            let long = try DriveFSBinary.run(path + ["--help"])
            XCTAssertEqual(long.status, 0, "\(path): \(long.summary)")
            let usage = (["Usage: drivefs"] + path).joined(separator: " ")
            XCTAssertTrue(long.output.contains(usage), "\(path) help lacks '\(usage)': \(long.output)")
            XCTAssertTrue(long.output.contains("Options:"), "\(path): \(long.output)")
            XCTAssertTrue(long.output.contains("-h, --help"), "\(path): \(long.output)")
            let short = try DriveFSBinary.run(path + ["-h"])
            XCTAssertEqual(short.output, long.output, "\(path): -h and --help differ")
            if !path.isEmpty {
                let viaHelp = try DriveFSBinary.run(["help"] + path)
                XCTAssertEqual(viaHelp.output, long.output, "'drivefs help \(path)' differs from --help")
            }
            queue += Self.subcommands(inHelp: long.output).map { path + [$0] }.filter { $0 != ["debug"] }
            seen += 1
        }
        XCTAssertGreaterThanOrEqual(seen, 4, "expected at least the root, debug, smoke-mount, endpoints and help")
    }

    /// The names listed under "Commands:" in a help text.
    static func subcommands(inHelp text: String) -> [String] {
        var names: [String] = []
        var inCommands = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "Commands:" { inCommands = true; continue }
            if inCommands {
                if line.isEmpty { break }
                if let name = line.split(separator: " ").first { names.append(String(name)) }
            }
        }
        return names
    }

    func testNoCommandShowsTheOverviewAndExits2() throws {
        let result = try drivefs()
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.errorOutput.contains("Usage: drivefs COMMAND"), result.summary)
    }

    func testUnknownOptionIsNamed() throws {
        assertUsageError(try drivefs("debug", "smoke-mount", "/tmp", "--frob"),
                         "drivefs: unknown option '--frob' for 'debug smoke-mount' (see 'drivefs debug smoke-mount --help')")
        assertUsageError(try drivefs("--frob"), "drivefs: unknown option '--frob' for 'drivefs' (see 'drivefs --help')")
        assertUsageError(try drivefs("debug", "smoke-mount", "-x", "/tmp"),
                         "drivefs: unknown option '-x' for 'debug smoke-mount' (see 'drivefs debug smoke-mount --help')")
        assertUsageError(try drivefs("debug", "smoke-mount", "/tmp", "--frob=1"),
                         "drivefs: unknown option '--frob' for 'debug smoke-mount' (see 'drivefs debug smoke-mount --help')")
    }

    func testAnOptionBeforeItsCommandSaysWhereItGoes() throws {
        let result = try drivefs("--profile", "work", "auth", "status")
        XCTAssertEqual(result.status, 2, result.summary)
        XCTAssertTrue(result.errorOutput.hasPrefix("drivefs: option '--profile' goes after the command, as in 'drivefs "),
                      result.summary)
        XCTAssertTrue(result.errorOutput.contains("--profile=NAME'"), result.summary)
    }

    func testNearMissesGetASuggestion() throws {
        assertUsageError(try drivefs("debug", "smoke-mount", "/tmp", "--foregrund"),
                         "drivefs: unknown option '--foregrund' for 'debug smoke-mount'; did you mean '--foreground'?"
                         + " (see 'drivefs debug smoke-mount --help')")
        assertUsageError(try drivefs("debug", "smoke-mont"),
                         "drivefs: unknown command 'smoke-mont' for 'debug'; did you mean 'smoke-mount'? (see 'drivefs debug --help')")
    }

    func testUnknownCommandAndMissingSubcommand() throws {
        assertUsageError(try drivefs("frobnicate"), "drivefs: unknown command 'frobnicate' for 'drivefs' (see 'drivefs --help')")
        let group = try drivefs("debug")
        XCTAssertEqual(group.status, 2)
        XCTAssertTrue(group.errorOutput.contains("'drivefs debug' needs a command: smoke-mount, endpoints"), group.summary)
    }

    func testMissingAndExtraArguments() throws {
        assertUsageError(try drivefs("debug", "smoke-mount"),
                         "drivefs: missing argument MOUNTPOINT for 'debug smoke-mount' (see 'drivefs debug smoke-mount --help')")
        assertUsageError(try drivefs("debug", "smoke-mount", "/a", "/b"),
                         "drivefs: unexpected argument '/b' for 'debug smoke-mount' (see 'drivefs debug smoke-mount --help')")
    }

    func testMissingAndUnexpectedValues() throws {
        assertUsageError(try drivefs("debug", "smoke-mount", "/tmp", "-o"),
                         "drivefs: option '-o' needs a value (-o OPTS) (see 'drivefs debug smoke-mount --help')")
        assertUsageError(try drivefs("debug", "endpoints", "--api-url"),
                         "drivefs: option '--api-url' needs a value (--api-url=URL) (see 'drivefs debug endpoints --help')")
        // A value that looks like an option is not swallowed.
        assertUsageError(try drivefs("debug", "endpoints", "--api-url", "--profile", "x"),
                         "drivefs: option '--api-url' needs a value (--api-url=URL) (see 'drivefs debug endpoints --help')")
        assertUsageError(try drivefs("debug", "smoke-mount", "/tmp", "--foreground=yes"),
                         "drivefs: option '--foreground' does not take a value (see 'drivefs debug smoke-mount --help')")
        assertUsageError(try drivefs("--version=2"), "drivefs: option '--version' does not take a value (see 'drivefs --help')")
    }

    func testMalformedValuesAreRejected() throws {
        assertUsageError(try drivefs("debug", "endpoints", "--api-url=ftp://example.com/"),
                         "drivefs: invalid value 'ftp://example.com/' for '--api-url': expected an http:// or https:// URL"
                         + " (see 'drivefs debug endpoints --help')")
        assertUsageError(try drivefs("debug", "endpoints", "--profile", "../x"),
                         "drivefs: invalid value '../x' for '--profile': it cannot start with '.' (see 'drivefs debug endpoints --help')")
        assertUsageError(try drivefs("debug", "smoke-mount", "/tmp", "--options", "ro,rw"),
                         "drivefs: invalid value 'ro,rw' for '--options': the smoke tree is read-only (see 'drivefs debug smoke-mount --help')")
        assertUsageError(try drivefs("debug", "endpoints", "--profile=a", "--profile=b"),
                         "drivefs: option '--profile' was given more than once (see 'drivefs debug endpoints --help')")
        assertUsageError(try drivefs("debug", "endpoints", "--api-url=http://example.com/"),
                         "drivefs: invalid value 'http://example.com/' for '--api-url': plain http:// is allowed only for loopback hosts"
                         + " (127.0.0.0/8, ::1, or a name such as localhost that resolves only to them), so that tokens never cross a network in clear: use https://"
                         + " (see 'drivefs debug endpoints --help')")
        assertUsageError(try drivefs("mount", "/tmp", "--random-read-fill", "lots"),
                         "drivefs: invalid value 'lots' for '--random-read-fill': expected a size such as 1G, 256M or 0"
                         + " (see 'drivefs mount --help')")
        let env = try drivefs("debug", "endpoints", environment: ["DRIVEFS_TOKEN_URL": "nonsense"])
        XCTAssertEqual(env.status, 2, env.summary)
        XCTAssertTrue(env.errorOutput.contains("invalid value 'nonsense' in DRIVEFS_TOKEN_URL"), env.summary)
    }

    func testLongOptionsTakeEqualsOrSpaceAndEnvironmentIsTheFallback() throws {
        let defaults = try drivefs("debug", "endpoints")
        XCTAssertEqual(defaults.status, 0, defaults.summary)
        XCTAssertEqual(defaults.output, """
            api-url: https://www.googleapis.com/
            token-url: https://oauth2.googleapis.com/token
            auth-url: https://accounts.google.com/o/oauth2/v2/auth
            revoke-url: https://oauth2.googleapis.com/revoke
            profile: default
            ca-file: (system store)

            """)
        let withEquals = try drivefs("debug", "endpoints", "--api-url=http://127.0.0.1:8080/", "--profile=work",
                                     environment: ["DRIVEFS_API_URL": "http://10.0.0.1/", "DRIVEFS_AUTH_URL": "http://127.0.0.1:9/auth"])
        let withSpace = try drivefs("debug", "endpoints", "--api-url", "http://127.0.0.1:8080/", "--profile", "work",
                                    environment: ["DRIVEFS_API_URL": "http://10.0.0.1/", "DRIVEFS_AUTH_URL": "http://127.0.0.1:9/auth"])
        XCTAssertEqual(withEquals.output, withSpace.output)
        XCTAssertTrue(withEquals.output.contains("api-url: http://127.0.0.1:8080/\n"), withEquals.summary)
        XCTAssertTrue(withEquals.output.contains("auth-url: http://127.0.0.1:9/auth\n"), withEquals.summary)
        XCTAssertTrue(withEquals.output.contains("profile: work\n"), withEquals.summary)
        XCTAssertTrue(withEquals.output.contains("token-url: https://oauth2.googleapis.com/token\n"), withEquals.summary)
        let emulator = try drivefs("debug", "endpoints", "--token-url=http://127.0.0.1:9/token")
        XCTAssertTrue(emulator.output.contains("revoke-url: http://127.0.0.1:9/revoke\n"), emulator.summary)
    }

    func testMountOptionsLibfuseRejectsAreAUsageError() throws {
        let result = try drivefs("debug", "smoke-mount", NSTemporaryDirectory(), "-f", "-o", "no_such_option=1")
        XCTAssertEqual(result.status, 2, result.summary)
        XCTAssertTrue(result.errorOutput.contains("drivefs: libfuse rejected the mount options 'no_such_option=1'"), result.summary)
    }

    func testDoubleDashEndsOptions() throws {
        assertUsageError(try drivefs("debug", "smoke-mount", "-weird"),
                         "drivefs: unknown option '-weird' for 'debug smoke-mount' (see 'drivefs debug smoke-mount --help')")
        let result = try drivefs("debug", "smoke-mount", "--", "-weird-dir-that-does-not-exist")
        XCTAssertEqual(result.status, 1, result.summary)
        XCTAssertEqual(result.errorOutput, """
            drivefs: mountpoint '-weird-dir-that-does-not-exist' does not exist
            Create it first: mkdir -p '-weird-dir-that-does-not-exist'

            """)
    }
}
