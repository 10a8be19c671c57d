import CommandLineKit
import DriveSupport
import Foundation

/// `drivefs debug man`: the manual page drivefs(1), generated from the command tree (packaging
/// runs it; `man -l <(drivefs debug man)` reads it).
extension DebugCommand {
    static func manPage() -> Command {
        Command(
            name: "man", summary: "Print the drivefs(1) manual page (roff)",
            discussion: """
                Prints drivefs(1) in roff, generated from the same option tables as --help. The date
                is $SOURCE_DATE_EPOCH's when it is set (reproducible builds), else today's.
                """,
            examples: [("debug man > drivefs.1 && man -l drivefs.1", "Write the page and read it")],
            run: { invocation in
                Output.standardOutput(ManPageFormatter.page(for: invocation.command.root, version: DriveFSVersion.current,
                                                            date: pageDate(invocation.environment), generator: "drivefs debug man",
                                                            extraSections: manSections))
                return ExitStatus.success
            })
    }

    static func pageDate(_ environment: [String: String]) -> String { Roff.pageDate(environment) }

    /// What the page says beyond the command tree.
    static let manSections: [(String, String)] = [
        ("Files", """
            ~/.config/drivefs/PROFILE/ holds each profile's configuration and credential;
            ~/.cache/drivefs/PROFILE/ its block cache and metadata index; ~/.local/state/drivefs/PROFILE.log
            the daemon's log (each under the matching $XDG_*_HOME when set).
            """),
        ("Extended attributes", """
            Every file and folder of a mount has read-only attributes: user.drive.id, user.drive.md5
            (files with bytes), user.drive.mime_type, user.drive.web_view_link, user.drive.modified_by,
            and user.drive.shortcut_target_id on shortcuts. Read them with getfattr -d FILE.
            """),
        ("See also", "fusermount3(1), mount.fuse3(8), getfattr(1), drivefs-emulator(1)"),
    ]
}
