import CommandLineKit
import DriveFSCore
import Foundation
import Glibc

/// `drivefs pin PATH...`, `drivefs pin --list`, `drivefs unpin PATH...`: files and folders kept
/// offline (docs/semantics.md, "Offline"). Pinning is `user.drivefs.pinned` set through the mount
/// (no channel to the daemon but the filesystem itself); the list comes from the daemons' status
/// files (`drivefs status`), asked for fresh.
enum PinCommand {
    static func make() -> Command {
        Command(
            name: "pin", summary: "Keep files and folders available offline",
            discussion: """
                Pins each PATH on a drivefs mount: its content is fetched in the background, fetched
                again when it changes on Drive, and never evicted from the cache, so it can be read
                with Drive unreachable (the mount then starts offline from its saved index). A
                pinned folder covers everything in it, including what is added to it later. Pins
                are kept by Drive file ID in the cache directory (pins.json): renames and remounts
                keep them.

                The same as 'setfattr -n user.drivefs.pinned -v 1 PATH' (a file manager can set
                it); 'getfattr -n user.drivefs.pinned PATH' says whether a path is pinned, and
                'getfattr -n user.drivefs.state PATH' whether it is all local ('offline').

                The cache's cap (--cache-size) counts pinned content: when pins alone exceed it,
                'drivefs status' says so and only what is not pinned is evicted.

                --list shows, for each live mount, what is pinned, how many files it covers and
                how much of them is local now.
                """,
            options: [.flag("list", short: "l", help: "Show what is pinned and how much of it is local")],
            arguments: [ArgumentSpec(name: "PATH", help: "A file or folder on a drivefs mount", optional: true, variadic: true)],
            examples: [
                ("pin ~/gdrive/Projects", "Keep a folder offline"),
                ("pin --list", "What is pinned, and how much is local"),
            ],
            run: { try run($0, pin: true) })
    }

    static func makeUnpin() -> Command {
        Command(
            name: "unpin", summary: "Stop keeping files and folders offline",
            discussion: """
                Unpins each PATH (a folder with everything in it): its content stays cached but may
                be evicted again like any other. Unpinning something inside a pinned folder keeps
                the rest of the folder pinned. The same as 'setfattr -n user.drivefs.pinned -v 0 PATH'.
                """,
            arguments: [ArgumentSpec(name: "PATH", help: "A file or folder on a drivefs mount", variadic: true)],
            examples: [("unpin ~/gdrive/Projects/old", "Let a folder go")],
            run: { try run($0, pin: false) })
    }

    static func run(_ invocation: Invocation, pin: Bool) throws -> Int32 {
        let paths = invocation.arguments("PATH")
        if pin && invocation.flag("list") {
            guard paths.isEmpty else { throw CLIError.usage("--list takes no PATH", command: invocation.command.fullPath) }
            return list(invocation)
        }
        guard !paths.isEmpty else { throw CLIError.usage("missing PATH", command: invocation.command.fullPath) }
        for path in paths {
            if case .failure(let error) = PathAttributes.read(path, ExtendedAttributes.state) {
                if error.errno == ENOENT { throw CLIError.failure("'\(path)': no such file or directory") }
                throw CLIError.failure("'\(path)' is not on a drivefs mount", hint: "'drivefs status' lists the mounts.")
            }
            do {
                try PathAttributes.write(path, ExtendedAttributes.pinned, pin ? "1" : "0")
            } catch {
                let reason = error.errno == EROFS ? "the mount is read-only" : "\(error)"
                throw CLIError.failure("cannot \(pin ? "pin" : "unpin") '\(path)': \(reason)")
            }
        }
        return ExitStatus.success
    }

    /// `pin --list`: one line per pinned item of each live mount.
    static func list(_ invocation: Invocation) -> Int32 {
        let directory = StatusDirectory.resolve(invocation.environment)
        let statuses = StatusCommand.refreshed(directory.entries(), in: directory).map(\.status)
        var lines: [String] = []
        for status in statuses {
            for pin in status.pins ?? [] {
                let shown = pin.found ? status.mountpoint + (pin.path == "/" ? "" : pin.path) : "\(status.mountpoint): \(pin.path)"
                let percent = pin.bytes > 0 ? Int((Double(pin.localBytes) / Double(pin.bytes) * 100).rounded(.down)) : 100
                let documents = pin.documentsNotExported
                // A document's bytes are known once exported: until then it is what is not local.
                let state = documents > 0 ? "\(percent) % local, \(documents) document\(documents == 1 ? "" : "s") not exported yet"
                    : pin.localBytes >= pin.bytes ? "all local" : "\(percent) % local"
                lines.append("\(shown)  \(pin.files) file\(pin.files == 1 ? "" : "s"), "
                             + "\(StatusCommand.bytes(pin.localBytes)) of \(StatusCommand.bytes(pin.bytes)) local (\(state))")
            }
        }
        Output.standardOutput(lines.isEmpty ? "Nothing is pinned.\n" : lines.joined(separator: "\n") + "\n")
        return ExitStatus.success
    }
}
