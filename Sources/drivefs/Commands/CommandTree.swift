import CommandLineKit

/// The whole `drivefs` command tree. Adding a top-level command is one `root.add(...)` line here;
/// the command itself lives in its own file (`AuthCommand*.swift`, `DebugCommand.swift`, ...).
///
/// A group (`auth`) is a `Command` without `run`, with its subcommands `add`ed; a leaf has `run`.
/// Leaves that talk to Drive take `sharedOptions: DriveOptions.group` and read their endpoints with
/// `DriveOptions.resolve(invocation)`; they throw `CLIError.usage` for wrong input (exit 2) and
/// `CLIError.failure(message, hint:)` for failed work (exit 1).
enum CommandTree {
    static func make() -> Command {
        let root = Command(
            name: "drivefs",
            summary: "mount Google Drive as a Linux filesystem",
            discussion: """
                drivefs mounts a Google Drive account through FUSE. It talks to Google, or to
                drivefs-emulator (a local Drive v3 + OAuth 2.0 server) when the Drive options
                point there.

                Exit status: 0 on success, 1 when the work failed, 2 when the command line was wrong.
                """,
            examples: [
                ("--help", "Show this help"),
                ("help COMMAND", "Show the help of a command"),
            ])
        // One line per top-level command, in help order.
        root.add(MountCommand.make())
        root.add(UnmountCommand.make())
        root.add(StatusCommand.make())
        root.add(PinCommand.make())
        root.add(PinCommand.makeUnpin())
        root.add(RevisionsCommand.make())
        root.add(TrashCommand.make())
        root.add(AuthCommand.make())
        root.add(CompletionCommand.make())
        root.add(DebugCommand.make())
        root.add(HelpCommand.make())
        return root
    }
}
