import DriveClient
import Foundation
import XCTest

/// The write side under the programs people run on a disk (issue 7, "Done when"): `tar x` of an
/// archive with modes and symbolic links and `tar c` of it matching, `git clone` and `git fsck`,
/// a C program compiled on the mount and run from it, a sqlite3 database updated in place. Each
/// is checked again through a second mount with an empty cache, which knows only what is on Drive.
final class DriveMountWriteToolTests: XCTestCase {
    // MARK: tar

    /// `tar tvf` lines without the date and time: mode, owner, size, name (and `-> target`),
    /// what must survive the mount.
    private func tarListing(_ archive: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let list = try ExternalCommand.tool("tar", ["--numeric-owner", "-tvf", archive], timeout: 60, file: file, line: line)
            .requireSuccess("tar tvf \(archive)")
        return list.output.split(separator: "\n").map { entry in
            let fields = entry.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true).map(String.init)
            guard fields.count == 6 else { return String(entry) }
            return [fields[0], fields[1], fields[2], fields[5]].joined(separator: " ")
        }
    }

    /// `tar c` as the tests make it: sorted, owner 0:0 (drivefs shows one owner for everything).
    private func tarCreate(_ archive: String, from directory: String, _ name: String) throws -> ExternalCommand.Result {
        try ExternalCommand.tool("tar", ["--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-cf", archive, "-C", directory, name],
                                 timeout: 120)
    }

    /// Writes Google counts (creates, updates, trashes, deletes), from the emulator's stats.
    private func writes(_ drive: EmulatedDrive) -> Int {
        drive.emulator.stats().methods.filter { $0.key.hasPrefix("files.create") || $0.key.hasPrefix("files.update")
            || $0.key == "files.delete" || $0.key == "files.copy" }.values.reduce(0) { $0 + $1.requests }
    }

    /// `tar xpf` of folders that each get a time and a mode after their files (as tar sets them),
    /// within the upload delay: one write a folder and one a file (the floor), not a create, a
    /// chmod and a utime a folder; the times and modes are on Drive.
    func testTarExtractOfFoldersCostsOneWriteAFolder() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let count = 12
        let source = try WriteTests.directory(drive.temp, "source").path
        try ExternalCommand.shell("""
            set -e; cd '\(source)'; umask 022; mkdir tree
            for i in $(seq 0 \(count - 1)); do
              mkdir tree/d$i; printf 'a %s\\n' $i > tree/d$i/a; printf 'b %s\\n' $i > tree/d$i/b
              chmod 750 tree/d$i; touch -d "2020-01-0$(( i % 9 + 1 )) 12:00:00 UTC" tree/d$i
            done
            chmod 700 tree; touch -d '2019-06-01 08:00:00 UTC' tree
            tar -C '\(source)' -cf '\(drive.temp.path)/tree.tar' tree
            """).requireSuccess("make the source tree and its archive")
        let mount = try drive.mount(extraArguments: ["--posix-metadata", "--upload-delay", "60s"])
        let before = writes(drive)
        try ExternalCommand.tool("tar", ["-C", mount.mountpoint, "-xpf", "\(drive.temp.path)/tree.tar"], timeout: 120)
            .requireSuccess("tar xpf onto the mount")
        try drive.drivefsUnmount(mount)
        XCTAssertEqual(writes(drive) - before, (count + 1) + 2 * count, "one write a folder, one a file: \(drive.statsSummary())")
        let tree = try drive.file(at: "tree")
        XCTAssertEqual(tree.appProperties?["drivefs.mode"], "700")
        XCTAssertEqual(tree.modifiedTime, 1_559_376_000_000, "2019-06-01 08:00:00 UTC")
        for i in 0..<count {
            let folder = try drive.file(at: "tree/d\(i)")
            XCTAssertEqual(folder.appProperties?["drivefs.mode"], "750", folder.name)
            XCTAssertEqual(folder.modifiedTime, 1_577_880_000_000 + Int64(i % 9) * 86_400_000, folder.name)
        }
    }

    func testTarExtractKeepsModesAndSymlinksAndTarCreateMatches() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let fm = FileManager.default
        let source = try WriteTests.directory(drive.temp, "source")
        let pkg = try WriteTests.directory(source, "pkg")
        func write(_ path: String, _ data: Data, mode: Int) throws {
            let url = pkg.appendingPathComponent(path)
            try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
            try fm.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        }
        try write("bin/run.sh", Data("#!/bin/sh\necho tar-run-ok\n".utf8), mode: 0o755)
        try write("secret.key", Data("only for the owner\n".utf8), mode: 0o600)
        try write("data/readme.txt", Data("read me\n".utf8), mode: 0o644)
        try write("data/blob.bin", Data(TestContent.bytes(count: 300_000, seed: 4_000)), mode: 0o640)
        try write("empty", Data(), mode: 0o644)
        try fm.createSymbolicLink(atPath: pkg.appendingPathComponent("latest").path, withDestinationPath: "data/readme.txt")
        try fm.createSymbolicLink(atPath: pkg.appendingPathComponent("bin/data").path, withDestinationPath: "../data")
        try fm.createSymbolicLink(atPath: pkg.appendingPathComponent("dangling").path, withDestinationPath: "does/not/exist")
        try fm.createDirectory(at: pkg.appendingPathComponent("private"), withIntermediateDirectories: true)
        try fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: pkg.appendingPathComponent("private").path)
        let archive = drive.temp.appendingPathComponent("pkg.tar").path
        try tarCreate(archive, from: source.path, "pkg").requireSuccess("tar c of the local source")
        let original = try tarListing(archive)
        XCTAssertEqual(original.count, 12, "the source archive: \(original)")

        let mount = try drive.mount()
        try ExternalCommand.tool("tar", ["-xf", archive, "-C", mount.mountpoint], timeout: 120).requireSuccess("tar x of the archive into the mount")
        let run = try ExternalCommand.run(mount.path("pkg/bin/run.sh"), [], timeout: 30)
        XCTAssertEqual(run.output, "tar-run-ok\n", "the extracted 0755 script must run from the mount: \(run.summary)")
        let readlink = try ExternalCommand.tool("readlink", [mount.path("pkg/latest")])
        XCTAssertEqual(readlink.output, "data/readme.txt\n", "readlink of an extracted symlink: \(readlink.summary)")
        let viaLink = try ExternalCommand.tool("cat", [mount.path("pkg/bin/data/readme.txt")])
        XCTAssertEqual(viaLink.output, "read me\n", "reading through an extracted symlink to a folder: \(viaLink.summary)")

        let again = drive.temp.appendingPathComponent("again.tar").path
        try tarCreate(again, from: mount.mountpoint, "pkg").requireSuccess("tar c of the extracted tree in the mount")
        XCTAssertEqual(try tarListing(again), original, "tar c of the extracted tree must list the same names, modes, sizes and link targets")

        try drive.drivefsUnmount(mount)
        let fresh = try drive.mountFresh()
        let fromDrive = drive.temp.appendingPathComponent("fresh.tar").path
        try tarCreate(fromDrive, from: fresh.mountpoint, "pkg").requireSuccess("tar c of the tree through a fresh mount")
        XCTAssertEqual(try tarListing(fromDrive), original,
                       "through a second mount with an empty cache, tar c must list the same names, modes, sizes and link targets")
        let runFresh = try ExternalCommand.run(fresh.path("pkg/bin/run.sh"), [], timeout: 30)
        XCTAssertEqual(runFresh.output, "tar-run-ok\n", "the 0755 script must run from a fresh mount (mode kept on Drive): \(runFresh.summary)")
        let cmp = try ExternalCommand.tool("cmp", [pkg.appendingPathComponent("data/blob.bin").path, fresh.path("pkg/data/blob.bin")])
        XCTAssertEqual(cmp.status, 0, "the extracted 300 KB file through a fresh mount: \(cmp.summary)")
    }

    // MARK: git

    /// git without the machine's or the user's configuration.
    private func git(_ arguments: [String], in directory: String, home: URL, timeout: TimeInterval = 120) throws -> ExternalCommand.Result {
        guard let git = ExternalCommand.which("git") else { throw StepFailed(description: "git is not installed") }
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = home.path
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_AUTHOR_NAME"] = "Mount Test"; env["GIT_AUTHOR_EMAIL"] = "mount-test@example.com"
        env["GIT_COMMITTER_NAME"] = "Mount Test"; env["GIT_COMMITTER_EMAIL"] = "mount-test@example.com"
        let result = try ExternalCommand.run(git, ["-C", directory] + arguments, timeout: timeout, environment: env)
        XCTAssertFalse(result.timedOut, "git \(arguments) timed out after \(Int(timeout)) s")
        return result
    }

    /// `git fsck --full --strict` passes, `git status` shows nothing, HEAD is `head`.
    private func assertCleanClone(_ clone: String, head: String, home: URL, _ what: String,
                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let fsck = try git(["fsck", "--full", "--strict"], in: clone, home: home)
        XCTAssertEqual(fsck.status, 0, "\(what): git fsck must pass: \(fsck.summary)", file: file, line: line)
        let status = try git(["status", "--porcelain=v1", "--untracked-files=all"], in: clone, home: home)
        XCTAssertEqual(status.status, 0, "\(what): git status: \(status.summary)", file: file, line: line)
        XCTAssertEqual(status.output, "", "\(what): git status must show a clean tree (contents and exec bits kept)", file: file, line: line)
        let rev = try git(["rev-parse", "HEAD"], in: clone, home: home)
        XCTAssertEqual(rev.output.trimmingCharacters(in: .whitespacesAndNewlines), head, "\(what): HEAD", file: file, line: line)
    }

    func testGitCloneOntoTheMountPassesFsckAndStaysClean() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let home = try WriteTests.directory(drive.temp, "home")
        let repo = try WriteTests.directory(drive.temp, "repo")
        let fm = FileManager.default
        func write(_ path: String, _ text: String, mode: Int = 0o644) throws {
            let url = repo.appendingPathComponent(path)
            try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
            try fm.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        }
        try git(["init", "-q", "-b", "main"], in: repo.path, home: home).requireSuccess("git init")
        try write("README.md", "# A repository cloned onto drivefs\n")
        try write("src/main.c", "int main(void) { return 0; }\n")
        try write("src/util.h", "#define UTIL 1\n")
        try git(["add", "-A"], in: repo.path, home: home).requireSuccess("git add")
        try git(["commit", "-q", "-m", "first"], in: repo.path, home: home).requireSuccess("git commit 1")
        try write("tools/build.sh", "#!/bin/sh\necho building\n", mode: 0o755)
        try write("docs/guide.txt", "How to build.\n")
        try fm.createSymbolicLink(atPath: repo.appendingPathComponent("docs/latest").path, withDestinationPath: "guide.txt")
        try Data(TestContent.bytes(count: 1 << 20, seed: 5_000)).write(to: repo.appendingPathComponent("assets.bin"))
        try git(["add", "-A"], in: repo.path, home: home).requireSuccess("git add")
        try git(["commit", "-q", "-m", "second"], in: repo.path, home: home).requireSuccess("git commit 2")
        try write("README.md", "# A repository cloned onto drivefs\n\nEdited in the third commit.\n")
        try git(["mv", "docs/guide.txt", "docs/manual.txt"], in: repo.path, home: home).requireSuccess("git mv")
        try fm.removeItem(at: repo.appendingPathComponent("docs/latest"))
        try fm.createSymbolicLink(atPath: repo.appendingPathComponent("docs/latest").path, withDestinationPath: "manual.txt")
        try git(["rm", "-q", "src/util.h"], in: repo.path, home: home).requireSuccess("git rm")
        try git(["add", "-A"], in: repo.path, home: home).requireSuccess("git add")
        try git(["commit", "-q", "-m", "third"], in: repo.path, home: home).requireSuccess("git commit 3")

        let mount = try drive.mount()
        let clone = mount.path("clone")
        try git(["clone", "-q", "file://" + repo.path, clone], in: drive.temp.path, home: home).requireSuccess("git clone onto the mount")
        let head = try git(["rev-parse", "HEAD"], in: repo.path, home: home).output.trimmingCharacters(in: .whitespacesAndNewlines)
        try assertCleanClone(clone, head: head, home: home, "right after git clone")
        let count = try git(["rev-list", "--count", "HEAD"], in: clone, home: home)
        XCTAssertEqual(count.output, "3\n", "the clone's history: \(count.summary)")
        let exec = try ExternalCommand.run(clone + "/tools/build.sh", [], timeout: 30)
        XCTAssertEqual(exec.output, "building\n", "the cloned 0755 script runs from the mount: \(exec.summary)")

        // A commit made on the mount (index.lock and ref locks renamed into place, new objects).
        try ExternalCommand.shell("printf 'changed on the mount\\n' >> '\(clone)/README.md'").requireSuccess("append to README.md in the clone")
        try git(["commit", "-q", "-am", "fourth, on the mount"], in: clone, home: home).requireSuccess("git commit on the mount")
        let newHead = try git(["rev-parse", "HEAD"], in: clone, home: home).output.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertNotEqual(newHead, head, "the commit on the mount moved HEAD")
        try assertCleanClone(clone, head: newHead, home: home, "after a commit on the mount")

        try drive.drivefsUnmount(mount)
        let fresh = try drive.mountFresh()
        try assertCleanClone(fresh.path("clone"), head: newHead, home: home, "through a second mount with an empty cache")
    }

    // MARK: A C program

    func testACProgramCompiledOnTheMountRunsFromIt() throws {
        _ = try MountedDriveFS.requireFuse()
        guard let gcc = ExternalCommand.which("gcc") ?? ExternalCommand.which("cc") else {
            throw MountedDriveFS.missingRequirement("gcc is missing: the C compile mount test needs a C compiler")
        }
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = try WriteTests.directory(drive.temp, "source/cprog")
        try Data("const char *greeting(void);\nint answer(void);\n".utf8).write(to: source.appendingPathComponent("greeting.h"))
        try Data("#include \"greeting.h\"\nconst char *greeting(void) { return \"hello from a binary built on drivefs\"; }\nint answer(void) { return 42; }\n".utf8)
            .write(to: source.appendingPathComponent("greeting.c"))
        try Data("#include <stdio.h>\n#include \"greeting.h\"\nint main(void) { printf(\"%s: %d\\n\", greeting(), answer()); return 0; }\n".utf8)
            .write(to: source.appendingPathComponent("hello.c"))

        let mount = try drive.mount()
        try ExternalCommand.tool("cp", ["-r", source.path, mount.path("cprog")]).requireSuccess("cp of the C sources into the mount")
        let dir = mount.path("cprog")
        // The compiler's temporary files on the mount too: created, written, read and removed
        // before any upload of theirs need start.
        try ExternalCommand.tool("mkdir", [mount.path("tmp")]).requireSuccess("mkdir tmp on the mount")
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = mount.path("tmp")
        let compile = try ExternalCommand.run(gcc, ["-c", "-o", dir + "/greeting.o", dir + "/greeting.c"], timeout: 120, environment: env)
        try compile.requireSuccess("gcc -c greeting.c on the mount")
        let link = try ExternalCommand.run(gcc, ["-o", dir + "/hello", dir + "/hello.c", dir + "/greeting.o"], timeout: 120, environment: env)
        try link.requireSuccess("gcc -o hello (compile and link) on the mount")
        let expected = "hello from a binary built on drivefs: 42\n"
        let run = try ExternalCommand.run(dir + "/hello", [], timeout: 30)
        XCTAssertEqual(run.status, 0, "the program built on the mount must run from it: \(run.summary)")
        XCTAssertEqual(run.output, expected, "its output")
        let mask = umask(0)
        umask(mask)
        let mode = try ExternalCommand.tool("stat", ["-c", "%a", dir + "/hello"])
        XCTAssertEqual(mode.output, String(0o777 & ~Int(mask), radix: 8) + "\n",
                       "the linker's output is executable (0777 minus the umask): \(mode.summary)")
        let leftovers = try ExternalCommand.tool("find", [mount.path("tmp"), "-mindepth", "1"])
        XCTAssertEqual(leftovers.output, "", "the compiler removed its temporary files: \(leftovers.summary)")
        let md5 = try ExternalCommand.tool("md5sum", [dir + "/hello"]).output.prefix(32)

        try drive.drivefsUnmount(mount)
        let binary = try drive.file(at: "cprog/hello")
        XCTAssertEqual(binary.md5Checksum.map { Substring($0) }, md5, "the binary's md5 on Drive")
        let tmpOnDrive = try RemoteTree.read(drive, at: "tmp")
        XCTAssertEqual(tmpOnDrive.entries.map(\.path), [], "no compiler temporary file may be left on Drive")

        let fresh = try drive.mountFresh()
        let again = try ExternalCommand.run(fresh.path("cprog/hello"), [], timeout: 30)
        XCTAssertEqual(again.output, expected, "the binary runs from a second mount with an empty cache (bytes and exec bits from Drive): \(again.summary)")
    }

    // MARK: sqlite3

    func testSqliteDatabaseUpdatedOnTheMountPassesIntegrityCheckAfterARemount() throws {
        _ = try MountedDriveFS.requireFuse()
        guard let sqlite = ExternalCommand.which("sqlite3") else {
            throw MountedDriveFS.missingRequirement("sqlite3 is missing: install it ('make deps') to run the sqlite mount test")
        }
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let mount = try drive.mount()
        try ExternalCommand.tool("mkdir", [mount.path("db")]).requireSuccess("mkdir db on the mount")
        let db = mount.path("db/app.sqlite")
        @discardableResult
        func sql(_ statements: String, on path: String, _ step: String) throws -> ExternalCommand.Result {
            try ExternalCommand.run(sqlite, ["-bail", path, statements], timeout: 120).requireSuccess(step)
        }
        try sql("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, payload BLOB NOT NULL);", on: db, "create the table")
        // Five transactions of 200 rows, each its own sqlite3 run (open, journal, write in place, close).
        for batch in 1...5 {
            try sql("""
                BEGIN;
                WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 200)
                INSERT INTO items(name, payload) SELECT 'batch\(batch)-' || x, randomblob(400 + x) FROM n;
                COMMIT;
                """, on: db, "insert batch \(batch)")
        }
        try sql("BEGIN; UPDATE items SET name = name || '-u' WHERE id % 10 = 0; COMMIT;", on: db, "update every tenth row")
        try sql("BEGIN; DELETE FROM items WHERE id % 7 = 0; COMMIT;", on: db, "delete every seventh row")

        let ids = (1...1000).filter { $0 % 7 != 0 }
        let expected = "ok\n\(ids.count)|\(ids.reduce(0, +))|\(ids.filter { $0 % 10 == 0 }.count)\n"
        let query = "PRAGMA integrity_check; SELECT count(*), sum(id), sum(name LIKE '%-u') FROM items;"
        XCTAssertEqual(try sql(query, on: db, "query on the mount").output, expected,
                       "integrity_check ok, then count|sum(id)|updated rows, on the mount")

        try drive.drivefsUnmount(mount)
        let onDrive = try RemoteTree.read(drive, at: "db")
        XCTAssertEqual(onDrive.entries.map(\.path), ["app.sqlite"],
                       "on Drive the folder holds the database alone (its rollback journals were removed before or after upload)")

        let fresh = try drive.mountFresh()
        XCTAssertEqual(try sql(query, on: fresh.path("db/app.sqlite"), "query through a fresh mount").output, expected,
                       "through a second mount with an empty cache: PRAGMA integrity_check says ok and every row is there")
    }
}
