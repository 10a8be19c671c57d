import DriveFSCore
import Foundation
import Glibc

/// `drivefs revisions PATH`: a file's revisions on Drive, read through the mount
/// (`user.drive.revisions`: one revisions.list by the daemon, with its credentials and pacing).
enum RevisionsCommand {
    static func make() -> Command {
        Command(
            name: "revisions", summary: "List the revisions Drive keeps of a file",
            discussion: """
                Lists the revisions Drive keeps of the content of PATH, a file on a drivefs mount,
                oldest first: the revision's ID, when it was made, its size, its md5, whether
                Drive keeps it forever ('forever') or may prune it ('auto': Drive drops old
                revisions of a file after 30 days or 100 revisions), and who made it. The last is
                the file's current content on Drive; what was written here and is not uploaded yet
                is not among them.

                The same list as 'getfattr -n user.drive.revisions PATH' (a line a revision, the
                fields separated by tabs). Each listing costs one request to Drive.
                """,
            options: [.flag("ids", help: "Print only the revisions' IDs, one a line")],
            arguments: [ArgumentSpec(name: "PATH", help: "A file on a drivefs mount")],
            examples: [("revisions ~/gdrive/report.odt", "When report.odt changed, and by whom")],
            run: run)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        guard let path = invocation.arguments("PATH").first else {
            throw CLIError.usage("missing PATH", command: invocation.command.fullPath)
        }
        let text: String
        switch PathAttributes.read(path, ExtendedAttributes.revisions) {
        case .success(let value): text = value
        case .failure(let error):
            switch error.errno {
            case ENOENT: throw CLIError.failure("'\(path)': no such file or directory")
            case ENODATA:
                throw CLIError.failure("'\(path)' has no revisions on Drive",
                                       hint: "Folders, shortcuts and files not uploaded yet have none.")
            case ENOTSUP, EOPNOTSUPP:
                throw CLIError.failure("'\(path)' is not on a drivefs mount", hint: "'drivefs status' lists the mounts.")
            default:
                throw CLIError.failure("cannot list the revisions of '\(path)': \(error)",
                                       hint: "The mount's log says why ('drivefs status' shows where it is).")
            }
        }
        let revisions = text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            .filter { $0.count >= 6 }
        if invocation.flag("ids") {
            Output.standardOutput(revisions.map { $0[0] + "\n" }.joined())
            return ExitStatus.success
        }
        Output.standardOutput(table(revisions))
        return ExitStatus.success
    }

    /// The revisions as an aligned table, the last marked as the current one.
    static func table(_ revisions: [[String]]) -> String {
        var rows = [["REVISION", "MODIFIED", "SIZE", "MD5", "KEPT", "BY"]]
        for (i, r) in revisions.enumerated() {
            let size = Int64(r[2]).map(StatusCommand.bytes) ?? r[2]
            let id = i == revisions.count - 1 ? r[0] + " (current)" : r[0]
            rows.append([id, r[1], size, r[3], r[4], r[5]])
        }
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
