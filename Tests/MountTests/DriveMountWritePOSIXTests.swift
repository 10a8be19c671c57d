import DriveClient
import Foundation
import TestSupport
import XCTest

/// POSIX behaviours of the writable mount (issue 7, "Operations" and "Done when"): renames and
/// removals of files and folders (the replaced file and removed trees go to Drive's trash), an
/// editor's save through a temporary file, concurrent `>>` appenders, truncate and sparse files,
/// an mmap writer, hard links (EPERM), modes and symbolic links kept on Drive.
final class DriveMountWritePOSIXTests: XCTestCase {
    /// `stat -c FORMAT PATH`, trimmed.
    private func stat(_ format: String, _ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try ExternalCommand.tool("stat", ["-c", format, path], file: file, line: line)
        return result.status == 0 ? result.output.trimmingCharacters(in: .whitespacesAndNewlines) : "stat failed: \(result.errorOutput)"
    }

    private func cat(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try ExternalCommand.tool("cat", [path], file: file, line: line)
        return result.status == 0 ? result.output : "cat failed: \(result.errorOutput)"
    }

    /// The bytes of a Drive file, through the other client.
    private func driveContent(_ drive: EmulatedDrive, _ file: DriveFile) throws -> [UInt8] {
        try drive.api().downloadData(file.id)
    }

    // MARK: mv, rm -r, rmdir

    func testRenamesAndRemovalsOfFilesAndFolders() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("work/a/one.txt", in: seed, text: "one\n")
            try tree.file("work/a/two.txt", in: seed, text: "two\n")
            try tree.file("work/a/sub/deep.txt", in: seed, text: "deep\n")
            try tree.file("work/b/keep.txt", in: seed, text: "keep\n")
            try tree.file("work/target.txt", in: seed, text: "the old target\n")
            try tree.file("work/replacement.txt", in: seed, text: "the replacement\n")
            try tree.file("work/full/inner.txt", in: seed, text: "inner\n")
            try tree.file("work/gone/x1.txt", in: seed, text: "x1\n")
            try tree.file("work/gone/nested/x2.txt", in: seed, text: "x2\n")
        }
        defer { drive.stop() }
        let oldTarget = try drive.file(at: "work/target.txt")
        let gone = try drive.file(at: "work/gone"), x1 = try drive.file(at: "work/gone/x1.txt")
        let x2 = try drive.file(at: "work/gone/nested/x2.txt")
        let mount = try drive.mount()
        let w = mount.path("work")

        // A file renamed within its folder, then moved across folders: same inode throughout.
        let inode = try stat("%i", "\(w)/a/one.txt")
        try ExternalCommand.tool("mv", ["\(w)/a/one.txt", "\(w)/a/uno.txt"]).requireSuccess("mv a/one.txt a/uno.txt")
        XCTAssertEqual(try stat("%i", "\(w)/a/uno.txt"), inode, "a rename within a folder keeps the inode number")
        try ExternalCommand.tool("mv", ["\(w)/a/uno.txt", "\(w)/b/uno.txt"]).requireSuccess("mv a/uno.txt b/uno.txt")
        XCTAssertEqual(try stat("%i", "\(w)/b/uno.txt"), inode, "a move across folders keeps the inode number")
        XCTAssertEqual(try cat("\(w)/b/uno.txt"), "one\n")

        // A folder renamed, then moved into another folder, with its content.
        let folderInode = try stat("%i", "\(w)/a/sub")
        try ExternalCommand.tool("mv", ["\(w)/a/sub", "\(w)/a/sub2"]).requireSuccess("mv a/sub a/sub2")
        try ExternalCommand.tool("mv", ["\(w)/a/sub2", "\(w)/b/moved"]).requireSuccess("mv a/sub2 b/moved")
        XCTAssertEqual(try stat("%i", "\(w)/b/moved"), folderInode, "a folder keeps its inode number across renames")
        XCTAssertEqual(try cat("\(w)/b/moved/deep.txt"), "deep\n", "a moved folder's file")

        // A rename over an existing file replaces it (POSIX); the replaced file goes to the trash.
        try ExternalCommand.tool("mv", ["\(w)/replacement.txt", "\(w)/target.txt"]).requireSuccess("mv replacement.txt target.txt")
        XCTAssertEqual(try cat("\(w)/target.txt"), "the replacement\n", "the target shows the renamed file's content")

        // rmdir of a folder that is not empty: ENOTEMPTY, and nothing removed.
        let rmdir = try WriteTests.python("""
            import errno, os, sys
            try:
                os.rmdir(sys.argv[1])
                print("removed")
            except OSError as e:
                print(errno.errorcode.get(e.errno, e.errno))
            """, ["\(w)/full"])
        XCTAssertEqual(rmdir.output, "ENOTEMPTY\n", "rmdir of a non-empty folder must answer ENOTEMPTY: \(rmdir.summary)")
        XCTAssertEqual(try cat("\(w)/full/inner.txt"), "inner\n", "the non-empty folder is untouched")

        // rm -r of a tree; a new folder with a new file, renamed right away (its upload may be queued).
        try ExternalCommand.tool("rm", ["-r", "\(w)/gone"]).requireSuccess("rm -r gone")
        try ExternalCommand.shell("mkdir '\(w)/new' && printf 'fresh\\n' > '\(w)/new/f.txt' && mv '\(w)/new' '\(w)/b/new2'")
            .requireSuccess("mkdir new, write new/f.txt, mv new b/new2")
        // An empty folder created and removed.
        try ExternalCommand.shell("mkdir '\(w)/scratch' && rmdir '\(w)/scratch'").requireSuccess("mkdir and rmdir of an empty folder")

        let expectedFiles: [String: String] = [
            "a/two.txt": "two\n", "b/keep.txt": "keep\n", "b/uno.txt": "one\n", "b/moved/deep.txt": "deep\n",
            "target.txt": "the replacement\n", "full/inner.txt": "inner\n", "b/new2/f.txt": "fresh\n",
        ]
        let expectedFolders = ["a", "b", "b/moved", "b/new2", "full"]
        let find = try ExternalCommand.tool("find", [w, "-mindepth", "1", "-printf", "%y %P\n"])
        let listed = find.output.split(separator: "\n").map(String.init).sorted()
        let expectedListing = (expectedFiles.keys.map { "f " + $0 } + expectedFolders.map { "d " + $0 }).sorted()
        XCTAssertEqual(listed, expectedListing, "the tree in the mount after the renames and removals")

        try drive.drivefsUnmount(mount)
        let remote = try RemoteTree.read(drive, at: "work")
        let problems = remote.problems(comparedWith: expectedFiles.mapValues { WriteTests.md5(Array($0.utf8)) })
        XCTAssertTrue(problems.isEmpty, "Drive after the renames and removals:\n" + WriteTests.describe(problems))
        XCTAssertEqual(remote.folders.map(\.path).sorted(), expectedFolders, "the folders on Drive")
        let api = try drive.api()
        func trashState(_ id: String) -> String {
            do { return try api.getFile(id).trashed ? "in the trash" : "not trashed" } catch { return "not on Drive any more (\(error))" }
        }
        XCTAssertEqual(trashState(oldTarget.id), "in the trash", "the file replaced by a rename must go to Drive's trash")
        XCTAssertEqual(trashState(gone.id), "in the trash", "a folder removed with rm -r must go to Drive's trash (not be deleted)")
        XCTAssertEqual(trashState(x1.id), "in the trash", "a file removed with rm -r must go to Drive's trash")
        XCTAssertEqual(trashState(x2.id), "in the trash", "a nested file removed with rm -r must go to Drive's trash")
        XCTAssertFalse(remote.entries.contains { $0.path.hasSuffix("scratch") }, "the folder created and removed is not on Drive")
    }

    // MARK: An editor's save

    /// `rm f`, then `f` written again and closed (as some tools save), twice: within the upload
    /// delay each is one content update of the original, which keeps its Drive ID; nothing is
    /// created or trashed, counted by the emulator.
    func testAFileRemovedAndWrittenAgainUnderItsNameKeepsItsID() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("docs/report.txt", in: seed, text: "version 1\n") }
        defer { drive.stop() }
        let original = try XCTUnwrap(try RemoteTree.read(drive, at: "docs").file("report.txt"))
        // A minute's window: the removal never goes before the file is written again here.
        let mount = try drive.mount(extraArguments: ["--upload-delay", "60s"])
        let report = mount.path("docs/report.txt")
        let before = drive.emulator.stats()
        for version in 2...3 {
            try ExternalCommand.shell("rm '\(report)' && printf 'version \(version)\\n' > '\(report)'")
                .requireSuccess("rm, then the file written again")
            XCTAssertEqual(try cat(report), "version \(version)\n")
        }
        let ls = try ExternalCommand.tool("ls", ["-A", mount.path("docs")])
        XCTAssertEqual(ls.output, "report.txt\n", ls.summary)
        try drive.drivefsUnmount(mount)
        let remote = try RemoteTree.read(drive, at: "docs")
        XCTAssertEqual(remote.entries.map(\.path), ["report.txt"])
        let final = try XCTUnwrap(remote.file("report.txt"))
        XCTAssertEqual(final.id, original.id, "the file keeps its Drive ID")
        XCTAssertEqual(final.md5Checksum, WriteTests.md5(Array("version 3\n".utf8)))
        XCTAssertEqual(try drive.trashedChildren(of: try drive.file(at: "docs").id).count, 0, "nothing trashed")
        let after = drive.emulator.stats()
        func count(_ method: String) -> Int {
            (after.methods[method]?.requests ?? 0) - (before.methods[method]?.requests ?? 0)
        }
        XCTAssertEqual(count("files.create") + count("files.create.upload"), 0, "nothing created: \(drive.statsSummary())")
        XCTAssertEqual(count("files.update"), 0, "no trash: \(drive.statsSummary())")
        XCTAssertEqual(count("files.delete"), 0, "nothing deleted: \(drive.statsSummary())")
        XCTAssertLessThanOrEqual(count("files.update.upload"), 2, "at most one update a save: \(drive.statsSummary())")
    }

    /// Write a temporary file, fsync it, rename it over the original (vim's `backupcopy=no`,
    /// gedit and GLib's g_file_replace, most IDEs), twice in a row. The fsync answers once the
    /// temporary file is kept here (a new file waits its upload delay, for this rename): each save
    /// is one content update of the original, which keeps its Drive ID; nothing is created or trashed.
    func testEditorStyleSaveThroughATemporaryFile() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("docs/notes.txt", in: seed, text: "first draft\n") }
        defer { drive.stop() }
        let original = try XCTUnwrap(try RemoteTree.read(drive, at: "docs").file("notes.txt"))
        // A minute's delay before a new file goes up: the renames never race the uploads here (the
        // default 2 s would almost always do; an unmount does not wait for it).
        let mount = try drive.mount(extraArguments: ["--upload-delay", "60s"])
        let save = """
            import os, sys
            path, tmp, content, rename = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "rename"
            data = open(content, "rb").read()
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            if os.write(fd, data) != len(data):
                sys.exit("short write")
            os.fsync(fd)
            os.close(fd)
            if rename:
                os.rename(tmp, path)
            """
        let second = "second draft\n" + String(repeating: "a line of the second draft\n", count: 4_000)
        let third = "third draft\n" + String(repeating: "a line of the third draft, saved right after the second\n", count: 2_000)
        let notes = mount.path("docs/notes.txt"), tmp = mount.path("docs/.notes.txt.swp")
        // The editor's buffers, handed to the writer as local files (200 KB is too long for argv).
        let buffers = try WriteTests.directory(drive.temp, "buffers")
        try Data(second.utf8).write(to: buffers.appendingPathComponent("second"))
        try Data(third.utf8).write(to: buffers.appendingPathComponent("third"))
        let before = drive.emulator.stats()

        // The fsync answers with the temporary file kept here, not sent: its rename comes next.
        try WriteTests.python(save, [notes, tmp, buffers.appendingPathComponent("second").path, "no-rename"]).requireSuccess("write and fsync the temporary file")
        XCTAssertNil(try RemoteTree.read(drive, at: "docs").file(".notes.txt.swp"),
                     "the fsynced temporary file waits its upload delay, not sent as a file of its own")
        XCTAssertEqual(try cat(tmp), second, "the fsynced temporary file in the mount")
        try ExternalCommand.tool("mv", [tmp, notes]).requireSuccess("rename the temporary file over the original")
        XCTAssertEqual(try cat(notes), second, "the saved content in the mount right after the rename")
        // The next save at once, in one go.
        try WriteTests.python(save, [notes, mount.path("docs/.notes.txt.swx"), buffers.appendingPathComponent("third").path, "rename"]).requireSuccess("the second save")
        XCTAssertEqual(try cat(notes), third, "the second save's content in the mount")
        let ls = try ExternalCommand.tool("ls", ["-A", mount.path("docs")])
        XCTAssertEqual(ls.output, "notes.txt\n", "no temporary file left in the mount: \(ls.summary)")

        try drive.drivefsUnmount(mount)
        let remote = try RemoteTree.read(drive, at: "docs")
        XCTAssertEqual(remote.entries.map(\.path), ["notes.txt"], "on Drive the folder holds notes.txt alone: no temporary file left")
        let final = try XCTUnwrap(remote.file("notes.txt"), "notes.txt on Drive")
        XCTAssertEqual(final.id, original.id, "the original keeps its Drive ID through fsynced saves")
        XCTAssertEqual(final.md5Checksum, WriteTests.md5(Array(third.utf8)), "notes.txt on Drive has the last save's bytes")
        let after = drive.emulator.stats()
        func count(_ method: String) -> Int {
            (after.methods[method]?.requests ?? 0) - (before.methods[method]?.requests ?? 0)
        }
        XCTAssertEqual(count("files.create") + count("files.create.upload"), 0, "nothing created: \(drive.statsSummary())")
        XCTAssertEqual(count("files.update"), 0, "no rename, no trash: \(drive.statsSummary())")
        XCTAssertEqual(count("files.delete"), 0, "nothing deleted: \(drive.statsSummary())")
        XCTAssertLessThanOrEqual(count("files.update.upload"), 2, "at most one update a save: \(drive.statsSummary())")
    }

    /// The way rsync, `sed -i` and editors that do not fsync save: write a temporary file, close
    /// it, rename it over the original; three times. Each save is one content update of the
    /// original file, which keeps its Drive ID (sharing, comments, revisions): nothing created,
    /// nothing trashed, counted by the emulator.
    func testSavesThroughATemporaryFileKeepTheOriginalsDriveID() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("docs/report.txt", in: seed, text: "draft 0\n") }
        defer { drive.stop() }
        let original = try XCTUnwrap(try RemoteTree.read(drive, at: "docs").file("report.txt"))
        // A minute's delay before a new file goes up: the renames never race the uploads here (the
        // default 2 s would almost always do; an unmount does not wait for it).
        let mount = try drive.mount(extraArguments: ["--upload-delay", "60s"])
        let save = """
            import os, sys
            path, tmp, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
            data = ("draft %d\\n" % n).encode() * (1000 * n)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            if os.write(fd, data) != len(data):
                sys.exit("short write")
            os.close(fd)
            os.rename(tmp, path)
            """
        let before = drive.emulator.stats()
        for n in 1...3 {
            try WriteTests.python(save, [mount.path("docs/report.txt"), mount.path("docs/.report.txt.tmp\(n)"), "\(n)"])
                .requireSuccess("save \(n)")
            XCTAssertEqual(try cat(mount.path("docs/report.txt")), String(repeating: "draft \(n)\n", count: 1000 * n), "save \(n) in the mount")
        }
        try drive.drivefsUnmount(mount)
        let remote = try RemoteTree.read(drive, at: "docs")
        XCTAssertEqual(remote.entries.map(\.path), ["report.txt"], "no temporary file left on Drive")
        let final = try XCTUnwrap(remote.file("report.txt"))
        XCTAssertEqual(final.id, original.id, "the original keeps its Drive ID")
        XCTAssertEqual(final.md5Checksum, WriteTests.md5(Array(String(repeating: "draft 3\n", count: 3000).utf8)))
        let after = drive.emulator.stats()
        func count(_ method: String) -> Int {
            (after.methods[method]?.requests ?? 0) - (before.methods[method]?.requests ?? 0)
        }
        XCTAssertEqual(count("files.create") + count("files.create.upload"), 0, "nothing created: \(drive.statsSummary())")
        XCTAssertLessThanOrEqual(count("files.update.upload"), 3, "at most one content update per save: \(drive.statsSummary())")
        XCTAssertGreaterThanOrEqual(count("files.update.upload"), 1, drive.statsSummary())
        XCTAssertEqual(count("files.update"), 0, "no rename, no trash: \(drive.statsSummary())")
        XCTAssertEqual(count("files.delete"), 0, drive.statsSummary())
    }

    // MARK: Appenders

    /// 4 processes append 100 lines each to one file, each line by its own open(O_APPEND),
    /// write, close (what `echo ... >> file` in a loop does): every line once, none torn, each
    /// writer's lines in its order; on Drive too.
    func testFourConcurrentAppendersLoseNoLine() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let mount = try drive.mount()
        try ExternalCommand.tool("mkdir", [mount.path("logs")]).requireSuccess("mkdir logs")
        let writers = 4, lines = 100
        func line(_ writer: Int, _ n: Int) -> String {
            let head = String(format: "appender %d line %04d ", writer, n)
            let fill = Character(UnicodeScalar(UInt8(ascii: "a") + UInt8((writer * 7 + n) % 26)))
            return head + String(repeating: fill, count: 100 - head.count) + "\n"
        }
        let appenders = """
            import os, sys
            path, writers, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
            def line(w, n):
                head = "appender %d line %04d " % (w, n)
                return head + chr(ord("a") + (w * 7 + n) % 26) * (100 - len(head)) + "\\n"
            children = []
            for w in range(writers):
                pid = os.fork()
                if pid == 0:
                    try:
                        for n in range(lines):
                            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                            data = line(w, n).encode()
                            if os.write(fd, data) != len(data):
                                os._exit(3)
                            os.close(fd)
                        os._exit(0)
                    except OSError as e:
                        print("appender", w, "failed:", e, flush=True)
                        os._exit(2)
                children.append(pid)
            failed = [pid for pid in children if os.waitpid(pid, 0)[1] != 0]
            sys.exit(1 if failed else 0)
            """
        let path = mount.path("logs/appends.txt")
        try WriteTests.python(appenders, [path, String(writers), String(lines)], timeout: 180).requireSuccess("4 concurrent appenders")

        func problems(_ text: String) -> [String] {
            var problems: [String] = []
            var next = [Int](repeating: 0, count: writers)
            let all = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            for (i, got) in all.enumerated() {
                let fields = got.split(separator: " ")
                guard fields.count == 5, let w = Int(fields[1]), let n = Int(fields[3]), (0..<writers).contains(w),
                      String(got) + "\n" == line(w, n) else {
                    problems.append("line \(i + 1) is torn or foreign: \(got.prefix(120))")
                    continue
                }
                if n != next[w] { problems.append("line \(i + 1): appender \(w)'s line \(n), expected its line \(next[w])") }
                next[w] = n + 1
            }
            if !text.isEmpty && !text.hasSuffix("\n") { problems.append("the file does not end with a newline") }
            for w in 0..<writers where next[w] != lines { problems.append("appender \(w): last line seen \(next[w] - 1), expected \(lines - 1)") }
            if all.count != writers * lines { problems.append("\(all.count) lines, expected \(writers * lines)") }
            return problems
        }
        let inMount = try cat(path)
        let mountProblems = problems(inMount)
        XCTAssertTrue(mountProblems.isEmpty, "the appended file in the mount:\n" + WriteTests.describe(mountProblems))

        try drive.drivefsUnmount(mount)
        let remote = try RemoteTree.read(drive, at: "logs")
        XCTAssertEqual(remote.entries.map(\.path), ["appends.txt"], "one file on Drive")
        let file = try XCTUnwrap(remote.file("appends.txt"))
        let onDrive = String(decoding: try driveContent(drive, file), as: UTF8.self)
        let driveProblems = problems(onDrive)
        XCTAssertTrue(driveProblems.isEmpty, "the appended file on Drive after drivefs unmount:\n" + WriteTests.describe(driveProblems))
    }

    // MARK: truncate, sparse files

    func testTruncateAndSparseFilesHaveTheRightSizesAndZeros() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("t/seeded.bin", in: seed, size: 300 << 10, seed: 6_000) }
        defer { drive.stop() }
        let seeded = try Data(contentsOf: drive.seed.appendingPathComponent("t/seeded.bin"))
        let mount = try drive.mount()
        let t = mount.path("t")

        // A file from Drive grown, shrunk and grown again: what was cut off comes back as zeros.
        for size in ["1M", "100K", "200K"] {
            try ExternalCommand.tool("truncate", ["-s", size, "\(t)/seeded.bin"]).requireSuccess("truncate -s \(size) seeded.bin")
        }
        // A new file grown from nothing; a sparse file written at offsets past its end; ftruncate of
        // an open file followed by a write at the old offset (the gap must read as zeros).
        try ExternalCommand.tool("truncate", ["-s", "5M", "\(t)/grown.bin"]).requireSuccess("truncate -s 5M of a new file")
        try WriteTests.python("""
            import os, sys
            d = sys.argv[1]
            fd = os.open(d + "/sparse.bin", os.O_WRONLY | os.O_CREAT, 0o644)
            os.pwrite(fd, b"head", 0)
            os.pwrite(fd, b"tail-marker", 3 * 1024 * 1024 + 17)
            os.close(fd)
            fd = os.open(d + "/shrunk-open.bin", os.O_RDWR | os.O_CREAT, 0o644)
            os.write(fd, b"x" * 65536)
            os.ftruncate(fd, 10000)
            os.write(fd, b"after the gap")
            os.close(fd)
            """, [t]).requireSuccess("the sparse and ftruncate writer")

        var expected: [String: [UInt8]] = [:]
        expected["seeded.bin"] = Array(seeded.prefix(100 << 10)) + [UInt8](repeating: 0, count: 100 << 10)
        expected["grown.bin"] = [UInt8](repeating: 0, count: 5 << 20)
        var sparse = [UInt8](repeating: 0, count: 3 * (1 << 20) + 17 + 11)
        sparse.replaceSubrange(0..<4, with: Array("head".utf8))
        sparse.replaceSubrange((3 * (1 << 20) + 17)..., with: Array("tail-marker".utf8))
        expected["sparse.bin"] = sparse
        expected["shrunk-open.bin"] = [UInt8](repeating: UInt8(ascii: "x"), count: 10_000) + [UInt8](repeating: 0, count: 65_536 - 10_000)
            + Array("after the gap".utf8)

        let local = try WriteTests.directory(drive.temp, "expected")
        for (name, bytes) in expected.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(try stat("%s", "\(t)/\(name)"), String(bytes.count), "\(name): its size in the mount")
            let path = local.appendingPathComponent(name).path
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            let cmp = try ExternalCommand.tool("cmp", [path, "\(t)/\(name)"])
            XCTAssertEqual(cmp.status, 0, "\(name): its bytes in the mount (zeros where nothing was written): \(cmp.summary)")
        }

        try drive.drivefsUnmount(mount)
        let problems = try RemoteTree.read(drive, at: "t").problems(comparedWith: expected.mapValues { WriteTests.md5($0) })
        XCTAssertTrue(problems.isEmpty, "the truncated and sparse files on Drive:\n" + WriteTests.describe(problems))
        let remote = try RemoteTree.read(drive, at: "t")
        for (name, bytes) in expected {
            XCTAssertEqual(remote.file(name)?.size, Int64(bytes.count), "\(name): its size on Drive")
        }
    }

    // MARK: mmap

    /// A shared writable mapping changes a file from Drive in place (pages at and across block
    /// edges, the last byte) and fills a new file; one mapping is msynced, one only closed. The
    /// same script does the same to local copies, which the mount and Drive must then equal.
    func testAnMmapWriterChangesFilesInPlace() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("m/data.bin", in: seed, size: 1 << 20, seed: 7_000)
            try tree.file("m/unsynced.bin", in: seed, size: 200_000, seed: 7_001)
        }
        defer { drive.stop() }
        let local = try WriteTests.directory(drive.temp, "local")
        for name in ["data.bin", "unsynced.bin"] {
            try FileManager.default.copyItem(at: drive.seed.appendingPathComponent("m/\(name)"), to: local.appendingPathComponent(name))
        }
        let mount = try drive.mount()
        let writer = """
            import mmap, os, sys
            d = sys.argv[1]
            def change(path, sync):
                with open(path, "r+b") as f:
                    mm = mmap.mmap(f.fileno(), 0)
                    size = len(mm)
                    for offset in (0, 4095, 4096, 131071, 131072, 500000, size - 1):
                        if offset < size:
                            mm[offset] = (mm[offset] + 101) % 256
                    mm[200000 % size:200000 % size + 5000] = b"M" * 5000
                    if sync:
                        mm.flush()
                    mm.close()
            change(d + "/data.bin", True)
            change(d + "/unsynced.bin", False)
            fd = os.open(d + "/new.bin", os.O_RDWR | os.O_CREAT, 0o644)
            os.ftruncate(fd, 300000)
            mm = mmap.mmap(fd, 300000)
            for i in range(0, 300000, 1000):
                mm[i:i + 10] = b"%010d" % i
            mm.flush()
            mm.close()
            os.close(fd)
            """
        try WriteTests.python(writer, [local.path]).requireSuccess("the mmap writer on local copies")
        try WriteTests.python(writer, [mount.path("m")]).requireSuccess("the mmap writer on the mount")
        for name in ["data.bin", "unsynced.bin", "new.bin"] {
            let cmp = try ExternalCommand.tool("cmp", [local.appendingPathComponent(name).path, mount.path("m/\(name)")])
            XCTAssertEqual(cmp.status, 0, "\(name): after close, the mount shows what the mmap writer wrote: \(cmp.summary)")
        }

        try drive.drivefsUnmount(mount)
        let problems = try RemoteTree.read(drive, at: "m").problems(comparedWith: try WriteTests.localMD5s(local))
        XCTAssertTrue(problems.isEmpty, "the mmap-written files on Drive:\n" + WriteTests.describe(problems))
    }

    // MARK: Links and modes

    /// `ln` answers EPERM; `chmod +x` and symbolic links are kept on Drive: another mount sees
    /// them while this one runs, and a remount with an empty cache shows them too.
    func testHardLinksAreRefusedModesAndSymlinksAreKept() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("l/seeded.sh", in: seed, text: "#!/bin/sh\necho seeded runs\n") }
        defer { drive.stop() }
        let mount = try drive.mount()
        let l = mount.path("l")
        try ExternalCommand.shell("umask 022 && printf '#!/bin/sh\\necho new runs\\n' > '\(l)/new.sh' && chmod +x '\(l)/new.sh' '\(l)/seeded.sh'"
                                  + " && chmod 600 '\(l)/seeded.sh' && chmod 750 '\(l)/seeded.sh'")
            .requireSuccess("write new.sh, chmod +x it and the seeded file")
        try ExternalCommand.tool("ln", ["-s", "new.sh", "\(l)/link-to-new"]).requireSuccess("ln -s new.sh link-to-new")
        try ExternalCommand.tool("ln", ["-s", "../elsewhere/missing.txt", "\(l)/dangling"]).requireSuccess("ln -s of a dangling target")

        let hard = try WriteTests.python("""
            import errno, os, sys
            try:
                os.link(sys.argv[1], sys.argv[2])
                print("linked")
            except OSError as e:
                print(errno.errorcode.get(e.errno, e.errno))
            """, ["\(l)/new.sh", "\(l)/hard"])
        XCTAssertEqual(hard.output, "EPERM\n", "a hard link must answer EPERM: \(hard.summary)")
        let ln = try ExternalCommand.tool("ln", ["\(l)/new.sh", "\(l)/hard2"])
        XCTAssertNotEqual(ln.status, 0, "ln must fail")
        XCTAssertTrue(ln.errorOutput.contains("Operation not permitted"), "ln says why: \(ln.summary)")

        func check(_ root: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
            XCTAssertEqual(try stat("%a", root + "/new.sh", file: file, line: line), "755", "\(what): new.sh's mode after chmod +x", file: file, line: line)
            XCTAssertEqual(try stat("%a", root + "/seeded.sh", file: file, line: line), "750", "\(what): the seeded file's mode after chmod", file: file, line: line)
            let run = try ExternalCommand.run(root + "/new.sh", [], timeout: 30)
            XCTAssertEqual(run.output, "new runs\n", "\(what): new.sh runs: \(run.summary)", file: file, line: line)
            let seeded = try ExternalCommand.run(root + "/seeded.sh", [], timeout: 30)
            XCTAssertEqual(seeded.output, "seeded runs\n", "\(what): the seeded file runs after chmod: \(seeded.summary)", file: file, line: line)
            let links = try ExternalCommand.tool("readlink", [root + "/link-to-new", root + "/dangling"], file: file, line: line)
            XCTAssertEqual(links.output, "new.sh\n../elsewhere/missing.txt\n", "\(what): readlink of both symlinks: \(links.summary)", file: file, line: line)
            XCTAssertEqual(try stat("%F", root + "/link-to-new", file: file, line: line), "symbolic link", "\(what): the link's type", file: file, line: line)
            let through = try ExternalCommand.tool("cat", [root + "/link-to-new"], file: file, line: line)
            XCTAssertEqual(through.output, "#!/bin/sh\necho new runs\n", "\(what): reading through the link", file: file, line: line)
            let ls = try ExternalCommand.tool("ls", ["-A", root], file: file, line: line)
            XCTAssertEqual(ls.output, "dangling\nlink-to-new\nnew.sh\nseeded.sh\n", "\(what): no hard link was made: \(ls.summary)",
                           file: file, line: line)
        }
        try check(l, "on the mount that made them")

        // Another machine, while this mount is live: the change feed brings the links and modes.
        let other = try drive.mountFresh()
        let seen = poll(timeout: 60, interval: 0.2) {
            let links = try? ExternalCommand.runTool("readlink", [other.path("l/link-to-new"), other.path("l/dangling")], timeout: 10)
            let modes = try? ExternalCommand.runTool("stat", ["-c", "%a", other.path("l/new.sh"), other.path("l/seeded.sh")], timeout: 10)
            return links?.output == "new.sh\n../elsewhere/missing.txt\n" && modes?.output == "755\n750\n"
        }
        XCTAssertTrue(seen, "another mount must see both symlinks and both modes within 60 s (uploaded in the background, 1 s polls)")
        try check(other.path("l"), "on another mount")

        try drive.drivefsUnmount(mount)
        try drive.drivefsUnmount(other)
        let fresh = try drive.mountFresh()
        try check(fresh.path("l"), "after a remount with an empty cache")
    }
}
