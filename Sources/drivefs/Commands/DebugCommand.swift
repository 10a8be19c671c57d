import CommandLineKit
import DriveFSCore
import FuseBridge
import DriveClient
import Foundation

/// `drivefs debug ...`: developer tools, hidden from the top-level help.
enum DebugCommand {
    static func make() -> Command {
        let debug = Command(
            name: "debug", summary: "Developer tools (self-tests)", hidden: true)
        debug.add(smokeMount())
        debug.add(endpoints())
        debug.add(manPage())
        debug.add(indexRestore())
        return debug
    }

    /// Shows what the Drive options select, so that a user can check an emulator or proxy setup.
    static func endpoints() -> Command {
        Command(
            name: "endpoints",
            summary: "Show the Drive endpoints and profile the options select",
            discussion: """
                Prints the API root, token and consent endpoints, profile and CA file that a Drive
                command given the same options would use, from the options, the environment
                (DRIVEFS_API_URL, DRIVEFS_TOKEN_URL, DRIVEFS_AUTH_URL, DRIVEFS_REVOKE_URL, DRIVEFS_PROFILE) and
                Google's defaults. Profile configuration files are not read by this command.
                """,
            examples: [("debug endpoints --api-url=http://127.0.0.1:8080/", "What a command pointed at a local emulator uses")],
            sharedOptions: DriveOptions.group,
            run: { invocation in
                let choice = try DriveOptions.resolve(invocation)
                let endpoints = choice.driveEndpoints(profile: nil)
                let oauth = choice.oauthEndpoints(profile: nil, environment: invocation.environment)
                Output.standardOutput("""
                    api-url: \(endpoints.apiRoot)
                    token-url: \(endpoints.tokenURL)
                    auth-url: \(endpoints.authURL)
                    revoke-url: \(oauth.revokeURL)
                    profile: \(choice.profile)
                    ca-file: \(choice.caFile ?? "(system store)")

                    """)
                return ExitStatus.success
            })
    }

    /// Mounts `SmokeTree`: proves the FUSE bridge, libfuse and the kernel work together, without Drive.
    static func smokeMount() -> Command {
        Command(
            name: "smoke-mount",
            summary: "Mount a small fixed read-only tree (FUSE self-test)",
            discussion: """
                Serves a fixed read-only tree through the FUSE bridge: /hello.txt, /empty.txt,
                /docs/readme.md and /data/1MiB.bin (deterministic bytes). It proves that libfuse,
                /dev/fuse and the bridge work on this machine; it does not talk to Drive.

                Without --foreground the command returns once the tree is mounted, leaving a
                daemon behind. Stop it with 'fusermount -u MOUNTPOINT' (or Ctrl-C in the foreground).
                """,
            options: [
                .flag("foreground", short: "f", help: "Stay in the foreground (Ctrl-C unmounts)"),
                .value("options", short: "o", valueName: "OPTS", repeatable: true,
                       help: "Extra mount options, comma-separated (e.g. allow_other);\nthe tree is always read-only",
                       validate: validateMountOptions),
                .flag("debug", short: "d", help: "Log every FUSE request on standard error (implies --foreground)"),
                .flag("single-threaded", help: "Serve every request on one thread"),
                .flag("direct-io", help: "Bypass the page cache: every read reaches drivefs (for benchmarks)"),
            ],
            arguments: [ArgumentSpec(name: "MOUNTPOINT", help: "An existing empty directory")],
            examples: [
                ("debug smoke-mount /tmp/m -f", "Mount in the foreground; Ctrl-C or 'fusermount -u /tmp/m' ends it"),
                ("debug smoke-mount /tmp/m -o allow_other", "Mount in the background, visible to other users"),
            ],
            run: run)
    }

    static func validateMountOptions(_ text: String) -> String? {
        FuseMountOptions.validate(text, readOnlyReason: "the smoke tree is read-only")
    }

    private static func run(_ invocation: Invocation) throws -> Int32 {
        let mountpoint = invocation.argument("MOUNTPOINT")!
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: mountpoint, isDirectory: &isDirectory) else {
            throw CLIError.failure("mountpoint '\(mountpoint)' does not exist", hint: "Create it first: mkdir -p '\(mountpoint)'")
        }
        guard isDirectory.boolValue else {
            throw CLIError.failure("mountpoint '\(mountpoint)' is not a directory", hint: "Mount on an empty directory.")
        }
        let debug = invocation.flag("debug")
        let configuration = FuseMountConfiguration(
            mountpoint: mountpoint, options: invocation.values("options"), readOnly: true,
            foreground: invocation.flag("foreground") || debug, debug: debug,
            singleThreaded: invocation.flag("single-threaded"), directIO: invocation.flag("direct-io"))
        let tree = SmokeTree.make(userID: getuid(), groupID: getgid())
        do {
            try FuseMount.run(tree, configuration: configuration) {
                Output.standardError("drivefs: smoke tree mounted at \(mountpoint); unmount with 'fusermount -u \(mountpoint)'\n")
            }
        } catch {
            throw mountFailure(error, mountpoint: mountpoint)
        }
        return ExitStatus.success
    }

    private static func mountFailure(_ error: FuseMountError, mountpoint: String) -> CLIError {
        FuseMountOptions.failure(error, mountpoint: mountpoint, command: "drivefs debug smoke-mount", unmountHint: "fusermount -u")
    }
}
