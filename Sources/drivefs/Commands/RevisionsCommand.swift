import CommandLineKit
import DriveFSCore
import Foundation
import Glibc

/// `drivefs revisions PATH [--restore ID [--to NEWPATH]]`: a file's revisions on Drive, read through
/// the mount (`user.drive.revisions`: one revisions.list by the daemon, with its credentials and
/// pacing), and one brought back (`user.drivefs.restore`, set on the file that takes the content).
enum RevisionsCommand {
    static func make() -> Command {
        Command(
            name: "revisions", summary: "List the revisions Drive keeps of a file, or bring one back",
            discussion: """
                Lists the revisions Drive keeps of the content of PATH, a file on a drivefs mount,
                oldest first: the revision's ID, when it was made, its size, its md5, whether
                Drive keeps it forever ('forever') or may prune it ('auto': Drive drops old
                revisions of a file after 30 days or 100 revisions), and who made it. The last is
                the file's current content on Drive; what was written here and is not uploaded yet
                is not among them.

                The same list as 'getfattr -n user.drive.revisions PATH' (a line a revision, the
                fields separated by tabs). Each listing costs one request to Drive.

                --restore ID makes that revision PATH's content again, as saving the whole file
                would: it reads back at once, and reaches Drive as a new revision (the one restored
                stays in the list). With --to NEWPATH, a new file on the same mount takes it
                instead and PATH is left as it is. A file open for writing is not restored (busy).

                Google Docs, Sheets and Slides have revisions too, without a size, an md5 or a
                choice to keep them ('-'). --restore ID --to NEWPATH writes the document as it was
                at that revision, exported in the format the mount shows it in (--export-formats of
                'drivefs mount'), as a new regular file. --restore without --to is refused for
                them: Drive's API cannot make an old revision of a Google Docs file its current one
                (the version history in Google Docs can).
                """,
            options: [.flag("ids", help: "Print only the revisions' IDs, one a line"),
                      .value("restore", valueName: "ID", help: "Make revision ID the file's content again"),
                      .value("to", valueName: "NEWPATH", help: "With --restore: into a new file NEWPATH instead")],
            arguments: [ArgumentSpec(name: "PATH", help: "A file on a drivefs mount")],
            examples: [("revisions ~/gdrive/report.odt", "When report.odt changed, and by whom"),
                       ("revisions ~/gdrive/report.odt --restore 0B3xQ --to ~/gdrive/report-old.odt", "Bring an old version back beside it")],
            run: run)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        guard let path = invocation.arguments("PATH").first else {
            throw CLIError.usage("missing PATH", command: invocation.command.fullPath)
        }
        if let revision = invocation.value("restore") {
            return try restore(path, revision: revision, to: invocation.value("to"))
        }
        if invocation.value("to") != nil {
            throw CLIError.usage("--to needs --restore", command: invocation.command.fullPath)
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
        return Output.columns(rows).joined(separator: "\n") + "\n"
    }

    /// `--restore ID [--to NEWPATH]`: the daemon fetches the revision and writes it as the file's
    /// content (into NEWPATH, made empty first, when given; it goes again if the restore fails).
    static func restore(_ path: String, revision: String, to newPath: String?) throws -> Int32 {
        guard !revision.isEmpty, !revision.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }) else {
            throw CLIError.failure("'\(revision)' is not a revision ID", hint: "'drivefs revisions --ids PATH' lists them.")
        }
        let fileID: String
        switch PathAttributes.read(path, ExtendedAttributes.id) {
        case .success(let id): fileID = id
        case .failure(let error):
            if error.errno == ENOENT { throw CLIError.failure("'\(path)': no such file or directory") }
            throw CLIError.failure("'\(path)' is not on a drivefs mount", hint: "'drivefs status' lists the mounts.")
        }
        let document = (try? PathAttributes.read(path, ExtendedAttributes.mimeType).get())?.hasPrefix(googleAppsPrefix) == true
        if document && newPath == nil {
            throw CLIError.failure("cannot restore revision \(revision) of '\(path)': Drive's API cannot make an old revision of a Google Docs file its current one",
                                   hint: "Add --to NEWPATH to get that revision as a new file, exported as the mount shows the document; "
                                       + "or restore it from the version history in Google Docs.")
        }
        var target = path
        var value = revision
        if let newPath {
            let fd = open(newPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                let e = errno
                throw CLIError.failure("cannot make '\(newPath)': \(String(cString: strerror(e)))")
            }
            close(fd)
            target = newPath
            value = "\(fileID) \(revision)"
        }
        do {
            try PathAttributes.write(target, ExtendedAttributes.restore, value)
        } catch {
            if newPath != nil { unlink(target) }
            let reason: String
            switch error.errno {
            case ENOENT: reason = "Drive has no revision \(revision) of '\(path)'"
            case EBUSY: reason = "'\(target)' is open for writing"
            case EOPNOTSUPP, ENOTSUP:
                reason = "Drive's API cannot make an old revision of a Google Docs file its current one (or '\(target)' is not on a drivefs mount)"
            case EROFS: reason = "the mount is read-only"
            case EPERM: reason = "'\(target)' is not on the same drivefs mount, or that mount cannot restore"
            default: reason = "\(error)"
            }
            throw CLIError.failure("cannot restore revision \(revision) into '\(target)': \(reason)")
        }
        if document {
            Output.standardOutput("Exported revision \(revision) of \(path) into \(target); it reaches Drive as a new file.\n")
        } else {
            Output.standardOutput("Restored revision \(revision) into \(target); it reaches Drive as a new revision.\n")
        }
        return ExitStatus.success
    }

    /// The MIME types of Google Docs Editors files (and folders, shortcuts: never restored here).
    static let googleAppsPrefix = "application/vnd.google-apps."
}
