import CommandLineKit
import DriveFSCore
import DriveSupport
import Foundation
import Glibc

/// `drivefs trash list [PATH]`, `drivefs trash restore PATH...`, `drivefs trash empty`: Drive's
/// trash, through the mount as `drivefs revisions` is (docs/semantics.md, "The trash"): the list
/// is `user.drive.trash` read on a folder, a restore `user.drivefs.untrash` set on the mount's
/// root, emptying `user.drivefs.empty_trash` set there. The daemon asks Drive with its own
/// credentials and pacing.
enum TrashCommand {
    static func make() -> Command {
        let trash = Command(
            name: "trash", summary: "List Drive's trash, restore from it, or empty it",
            discussion: """
                Drive keeps what is removed through the mount ('rm', 'rmdir', a file replaced by a
                rename) in its trash for 30 days, unless the mount was made with
                --delete-permanently. These commands show it, bring items back, and empty it, for
                the drive of the mount they are given (My Drive, or the shared drive mounted with
                --shared-drive). The mount is the one PATH is on; without PATH, the one the current
                directory is on, or the only drivefs mount there is.

                The trash lists what was trashed itself, as Drive's web Trash view does: a folder's
                contents are in the trash with it and come back with it.
                """,
            examples: [
                ("trash list ~/gdrive", "What is in the trash of the drive mounted on ~/gdrive"),
                ("trash restore ~/gdrive/Projects/plan.txt", "Bring a file back where it was"),
                ("trash empty ~/gdrive", "Delete the trash for good (asks first)"),
            ])
        trash.add(Command(
            name: "list", summary: "List the items in Drive's trash",
            discussion: """
                Lists the items in the trash of the mount's drive: where each was (its path on the
                mount, a folder with a trailing '/'), its size, and when it was trashed (Drive says
                when only for items in shared drives). With PATH, a folder on the mount, only what
                was in it or below it. An item whose folder is in the trash too says so; one whose
                folder the mount does not know is shown by its name alone.

                The same list as 'getfattr -n user.drive.trash FOLDER' (a line an item, the fields
                separated by tabs). A listing costs one request to Drive for each 1,000 items in
                the trash. A listing holds at most 64 KiB (about 700 items); name a folder to see
                the rest.
                """,
            options: [.flag("ids", help: "Add a column with each item's Drive ID")],
            arguments: [ArgumentSpec(name: "PATH", help: "A folder on a drivefs mount (default: the mount's root)", optional: true)],
            examples: [("trash list ~/gdrive/Projects", "What was trashed from Projects"),
                       ("trash list --ids", "With the IDs that 'trash restore --id' takes")],
            run: list))
        trash.add(Command(
            name: "restore", summary: "Bring items back from Drive's trash",
            discussion: """
                Brings each PATH back from the trash into the folder it was in. PATH is where the
                item was, as 'drivefs trash list' shows it; --id ID names an item by its Drive ID
                (for two items of one path, or one whose folder the mount does not know). Every
                PATH is looked up before anything is restored: a PATH that is not in the trash, or
                names more than one item, restores nothing.

                The item shows in its folder at once. When its name is taken there, the mount's rule
                for two items of one name applies (the older keeps the name, the other shows with
                part of its ID: docs/semantics.md) and this command says which name each has. An
                item whose folder is in the trash too leaves the trash, but shows only once its
                folder is restored.
                """,
            options: [.value("id", valueName: "ID", repeatable: true, help: "Restore the item with this Drive ID")],
            arguments: [ArgumentSpec(name: "PATH", help: "Where the item was on a drivefs mount", optional: true, variadic: true)],
            examples: [("trash restore ~/gdrive/Projects/plan.txt", "Bring plan.txt back into Projects"),
                       ("trash restore --id 1a2B3c ~/gdrive", "Bring back the item with that ID")],
            run: restore))
        trash.add(Command(
            name: "empty", summary: "Delete everything in Drive's trash for good",
            discussion: """
                Deletes every item in the trash of the mount's drive for good: Drive cannot bring
                them back. Asks first on a terminal ('Delete N items in the trash for good?
                [y/N]'); nothing is deleted when the trash changed between the question and the
                answer. --yes does not ask (for scripts); without a terminal and without --yes
                nothing is deleted. In a shared drive, only a manager may empty the trash.

                One write to Drive (files.emptyTrash); asking costs two reads of the trash (1,000
                items a request): the count for the question, and the daemon's count again just
                before it empties, so that nothing trashed since the question is deleted.
                """,
            options: [.flag("yes", short: "y", help: "Do not ask: delete for good at once")],
            arguments: [ArgumentSpec(name: "PATH", help: "The mount, or a path on it", optional: true)],
            examples: [("trash empty ~/gdrive", "Asks, then empties the trash"),
                       ("trash empty --yes ~/gdrive", "Empties it without asking")],
            run: empty))
        return trash
    }

    // MARK: list

    static func list(_ invocation: Invocation) throws -> Int32 {
        let given = invocation.argument("PATH")
        let mount = try Mount.find(given)
        let folder = given ?? mount.root
        let (items, omitted) = try mount.trash(in: folder)
        guard !items.isEmpty || omitted > 0 else {
            let whole = given.map { mount.relative(StatusCommand.canonical($0)) == [] } ?? true
            Output.standardOutput(whole ? "The trash is empty.\n" : "Nothing in the trash was in '\(folder)'.\n")
            return ExitStatus.success
        }
        Output.standardOutput(table(items, mount: mount, ids: invocation.flag("ids")))
        if omitted > 0 {
            Output.standardOutput("… and \(omitted) more, not shown: name a folder to see what was in it.\n")
        }
        return ExitStatus.success
    }

    /// The items as an aligned table.
    static func table(_ items: [ExtendedAttributes.TrashLine], mount: Mount, ids: Bool) -> String {
        var rows = [(ids ? ["ID"] : []) + ["PATH", "SIZE", "TRASHED", "NOTE"]]
        for item in items {
            let note: String
            switch item.folder {
            case .present: note = ""
            case .trashed: note = "its folder is in the trash too"
            case .unknown: note = "its folder is not on this mount: restore it with --id"
            }
            let size = item.size.map(StatusCommand.bytes) ?? "-"
            let time = item.trashedTime.map { RFC3339.format(millis: $0) } ?? "-"
            rows.append((ids ? [item.id] : []) + [mount.shown(item), size, time, note])
        }
        return Output.columns(rows).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n") + "\n"
    }

    // MARK: restore

    static func restore(_ invocation: Invocation) throws -> Int32 {
        let paths = invocation.arguments("PATH")
        let ids = invocation.values("id")
        guard !paths.isEmpty || !ids.isEmpty else { throw CLIError.usage("missing PATH (or --id ID)", command: invocation.command.fullPath) }
        let mount = try Mount.find(paths.first)
        // Everything looked up before anything is restored.
        var chosen: [ExtendedAttributes.TrashLine] = []
        for path in paths {
            guard let relative = mount.relative(StatusCommand.canonical(path)) else {
                throw CLIError.failure("'\(path)' is not on the same drivefs mount as '\(paths[0])'")
            }
            if relative.isEmpty { continue }  // the mount itself, given to name it beside --id
            // Read in the nearest folder that exists: a narrower listing.
            let (items, _) = try mount.trash(in: mount.nearestFolder(of: relative))
            let matches = items.filter { $0.folder != .unknown && $0.path == relative }
            guard !matches.isEmpty else {
                throw CLIError.failure("'\(path)' is not in the trash", hint: "'drivefs trash list' shows what is; nothing was restored.")
            }
            guard matches.count == 1 else {
                throw CLIError.failure("'\(path)' names \(matches.count) items in the trash: \(matches.map(\.id).joined(separator: ", "))",
                                       hint: "Give the one to restore with --id ID; nothing was restored.")
            }
            chosen.append(matches[0])
        }
        if !ids.isEmpty {
            let (all, omitted) = try mount.trash(in: mount.root)
            for id in ids {
                if let item = all.first(where: { $0.id == id }) {
                    chosen.append(item)
                } else if omitted > 0 {
                    // Perhaps among those the listing left out: Drive says.
                    chosen.append(ExtendedAttributes.TrashLine(id: id, trashedTime: nil, size: nil, mimeType: "", folder: .unknown, path: [id]))
                } else {
                    throw CLIError.failure("no item with ID \(id) is in the trash",
                                           hint: "'drivefs trash list --ids' shows the IDs; nothing was restored.")
                }
            }
        }
        guard !chosen.isEmpty else { throw CLIError.usage("missing PATH (or --id ID)", command: invocation.command.fullPath) }
        for (i, item) in chosen.enumerated() {
            let holder = item.folder == .present ? mount.id(of: mount.path(item.path)) : nil
            do {
                try PathAttributes.write(mount.root, ExtendedAttributes.untrash, item.id)
            } catch {
                let done = i == 0 ? "" : " (\(i) restored before it)"
                throw CLIError.failure("cannot restore '\(mount.shown(item))'\(done): \(mount.reason(error, undone: "it was not restored"))")
            }
            Output.standardOutput(mount.report(item, holder: holder))
        }
        return ExitStatus.success
    }

    // MARK: empty

    static func empty(_ invocation: Invocation) throws -> Int32 {
        let mount = try Mount.find(invocation.argument("PATH"))
        if invocation.flag("yes") {
            try mount.empty("all")
            Output.standardOutput("Emptied the trash of \(mount.root).\n")
            return ExitStatus.success
        }
        guard isatty(0) == 1 else {
            throw CLIError.failure("not emptying the trash of \(mount.root): there is no terminal to ask on",
                                   hint: "Give --yes to delete everything in the trash for good without being asked.")
        }
        let (items, omitted) = try mount.trash(in: mount.root)
        let count = items.count + omitted
        guard count > 0 else {
            Output.standardOutput("The trash is empty.\n")
            return ExitStatus.success
        }
        Output.standardError("Delete \(count) item\(count == 1 ? "" : "s") in the trash of \(mount.root) for good? [y/N] ")
        let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard answer == "y" || answer == "yes" else {
            Output.standardError("Nothing was deleted.\n")
            return ExitStatus.failure
        }
        try mount.empty(String(count))
        Output.standardOutput("Deleted \(count) item\(count == 1 ? "" : "s") for good.\n")
        return ExitStatus.success
    }

    // MARK: The mount

    /// A drivefs mount found from a path: its root, and how to speak to it.
    struct Mount {
        /// The mount point, as the kernel's mount table has it.
        let root: String

        /// The mount PATH is on; without PATH, the one the current directory is on, else the only
        /// drivefs mount.
        static func find(_ path: String?) throws -> Mount {
            let mounts = MountInfo.current().filter { $0.type == "fuse.drivefs" }.map(\.mountPoint)
            func containing(_ absolute: String) -> String? {
                mounts.filter { absolute == $0 || absolute.hasPrefix($0 == "/" ? "/" : $0 + "/") }.max { $0.count < $1.count }
            }
            let root: String
            if let path {
                guard let found = containing(StatusCommand.canonical(path)) else {
                    throw CLIError.failure("'\(path)' is not on a drivefs mount", hint: "'drivefs status' lists the mounts.")
                }
                root = found
            } else if let found = containing(FileManager.default.currentDirectoryPath) {
                root = found
            } else {
                let live = mounts.filter { if case .success = PathAttributes.read($0, ExtendedAttributes.id) { return true }; return false }
                guard live.count == 1 else {
                    throw CLIError.failure(live.isEmpty ? "there is no drivefs mount" : "there are \(live.count) drivefs mounts: \(live.joined(separator: ", "))",
                                           hint: live.isEmpty ? "'drivefs mount DIR' makes one." : "Name one (a path on it).")
                }
                root = live[0]
            }
            switch PathAttributes.read(root, ExtendedAttributes.id) {
            case .success: return Mount(root: root)
            case .failure(let error):
                if error.errno == ENOTCONN { throw CLIError.failure("the drivefs mount on \(root) is gone (its daemon ended)",
                                                                    hint: "'fusermount -u \(root)' frees the mount point.") }
                throw CLIError.failure("'\(root)' is not a drivefs mount this user can use: \(error)")
            }
        }

        /// The trash as `user.drive.trash` on `folder` says it.
        func trash(in folder: String) throws -> (items: [ExtendedAttributes.TrashLine], omitted: Int) {
            switch PathAttributes.read(folder, ExtendedAttributes.trash) {
            case .success(let text): return ExtendedAttributes.parseTrashLines(text)
            case .failure(let error):
                switch error.errno {
                case ENOENT: throw CLIError.failure("'\(folder)': no such folder")
                case ENODATA: throw CLIError.failure("'\(folder)' is not a folder")
                case ENOTSUP, EOPNOTSUPP: throw CLIError.failure("'\(folder)' is not on a drivefs mount", hint: "'drivefs status' lists the mounts.")
                default: throw CLIError.failure("cannot list the trash: \(reason(error, undone: "nothing was listed"))")
                }
            }
        }

        func empty(_ value: String) throws {
            do {
                try PathAttributes.write(root, ExtendedAttributes.emptyTrash, value)
            } catch {
                if error.errno == EAGAIN {
                    throw CLIError.failure("the trash changed since the question: nothing was deleted", hint: "Run 'drivefs trash empty' again.")
                }
                throw CLIError.failure("cannot empty the trash of \(root): \(reason(error, undone: "nothing was deleted"))")
            }
        }

        /// Why the daemon refused, in words; `nothing` says what was left undone.
        func reason(_ error: FilesystemError, undone nothing: String) -> String {
            switch error.errno {
            case ENETUNREACH: return "Google Drive cannot be reached (the mount is offline); \(nothing)"
            case EACCES, EPERM: return "Drive refused: you may not do this here (in a shared drive, restoring needs the content manager role and emptying the trash the manager role); \(nothing)"
            case ENOENT: return "Drive has no such item (deleted for good?)"
            case EROFS: return "the mount is read-only"
            case ENOTCONN: return "the mount's daemon is gone"
            case EIO: return "Drive did not answer; \(nothing) (the mount's log says why: 'drivefs status')"
            default: return "\(error)"
            }
        }

        /// `absolute`'s names below the root; nil when it is not on this mount.
        func relative(_ absolute: String) -> [String]? {
            if absolute == root { return [] }
            let prefix = root == "/" ? "/" : root + "/"
            guard absolute.hasPrefix(prefix) else { return nil }
            return absolute.dropFirst(prefix.count).split(separator: "/").map(String.init)
        }

        func path(_ names: [String]) -> String { names.isEmpty ? root : (root == "/" ? "" : root) + "/" + names.joined(separator: "/") }

        /// Where an item was, as the list shows it.
        func shown(_ item: ExtendedAttributes.TrashLine) -> String {
            let folder = item.mimeType == "application/vnd.google-apps.folder" ? "/" : ""
            return (item.folder == .unknown ? item.path.joined(separator: "/") : path(item.path)) + folder
        }

        /// The deepest folder of `names`' ancestors that exists on the mount.
        func nearestFolder(of names: [String]) -> String {
            var folder = Array(names.dropLast())
            while !folder.isEmpty {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: path(folder), isDirectory: &isDirectory), isDirectory.boolValue { break }
                folder.removeLast()
            }
            return path(folder)
        }

        /// The Drive ID of what `path` shows, if anything.
        func id(of path: String) -> String? { try? PathAttributes.read(path, ExtendedAttributes.id).get() }

        /// What became of a restored item: where it shows, under which name, and what became of
        /// an item that held its name.
        func report(_ item: ExtendedAttributes.TrashLine, holder: String?) -> String {
            let was = shown(item)
            switch item.folder {
            case .trashed:
                return "Restored \(was) out of the trash, but its folder is in the trash too: it shows once "
                    + "'\(path(Array(item.path.dropLast())))' is restored ('drivefs trash restore' it).\n"
            case .unknown:
                return "Restored \(item.path.last ?? item.id) (\(item.id)) out of the trash; its folder is not on this mount.\n"
            case .present:
                break
            }
            let folder = path(Array(item.path.dropLast()))
            let original = item.path.last ?? ""
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            let stem = original.split(separator: ".", omittingEmptySubsequences: false).first.map(String.init) ?? original
            func named(_ id: String) -> String? {
                if self.id(of: folder + "/" + original) == id { return original }
                return names.first { $0.hasPrefix(stem) && self.id(of: folder + "/" + $0) == id }
            }
            guard let now = named(item.id) else {
                return "Restored \(was) out of the trash (not shown in its folder yet).\n"
            }
            if now != original {
                return "Restored \(was) as '\(now)': another item holds the name '\(original)' there.\n"
            }
            if let holder, holder != item.id {
                let moved = named(holder).map { "'\($0)'" } ?? "another name"
                return "Restored \(was); the item that held the name, the newer of the two, now shows as \(moved).\n"
            }
            return "Restored \(was)\n"
        }
    }
}
