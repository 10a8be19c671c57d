import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Files kept offline: `drivefs pin` of a folder through a live mount, `drivefs pin --list` until
/// all of it is local (a Google Doc in it as its export), `drivefs status PATH` with each file's
/// state; a pinned file changed on Drive is fetched again; a new file's `user.drivefs.state` walks
/// `local` → … → `synced`; then the emulator stops and the drive is mounted again offline: every
/// pinned file (one added to the folder after the pin too, the Doc, the changed file's new bytes)
/// reads whole, and an unpinned file that was never read fails at once with EIO.
final class DriveMountPinTests: XCTestCase {
    func testAPinnedFolderIsReadableInAMountThatStartsOffline() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("keep/a.txt", in: seed, text: "kept offline\n")
            try Data("The plan, kept offline.\n".utf8).write(to: seed.appendingPathComponent("keep/Plan.gdoc"))
            try tree.file("keep/sub/b.bin", in: seed, size: 300_000, seed: 5)
            try tree.file("loose.bin", in: seed, size: 300_000, seed: 6)
        }
        defer { drive.stop() }
        func shell(_ script: String) throws -> ExternalCommand.Result { try ExternalCommand.shell(script, timeout: 60) }
        func drivefs(_ arguments: [String]) throws -> ExternalCommand.Result {
            try DriveFSBinary.run(arguments, timeout: 30, environment: drive.environment)
        }

        var mount = try drive.mount()
        let pin = try drivefs(["pin", mount.path("keep")])
        XCTAssertEqual(pin.status, 0, pin.summary)
        XCTAssertEqual(try shell("echo 'added after the pin' > '\(mount.path("keep/later.txt"))'").status, 0)
        var listed = ""
        let local = try poll(timeout: 120, interval: 0.2) {
            listed = try drivefs(["pin", "--list"]).output
            return listed.contains("\(mount.path("keep"))  4 files") && listed.contains("(all local)")
        }
        XCTAssertTrue(local, "drivefs pin --list says the folder is all local:\n\(listed)\n\(mount.log.suffix(2000))")
        let states = try drivefs(["status", mount.path("keep")])
        XCTAssertEqual(states.status, 0, states.summary)
        let line = states.output.split(separator: "\n").first { $0.hasPrefix(mount.path("keep/a.txt") + " ") }
        XCTAssertEqual(line?.split(separator: " ").last, "offline", "pinned and all local: \(states.output)")
        let loose = try drivefs(["status", mount.path("loose.bin")])
        XCTAssertTrue(loose.output.contains("cloud"), "nothing of an unread, unpinned file is local: \(loose.output)")
        let overview = try drivefs(["status"])
        let pinnedLine = overview.output.split(separator: "\n").first { $0.contains("pinned: ") }.map(String.init) ?? ""
        let figures = pinnedLine.firstMatch(of: /pinned: ([0-9.]+ [KMG]?i?B) \(([0-9.]+ [KMG]?i?B) local\) against the cache's cap of/)
        XCTAssertNotNil(figures, overview.output)
        XCTAssertEqual(figures.map { String($0.1) }, figures.map { String($0.2) }, "all of it local: \(pinnedLine)")
        XCTAssertFalse(overview.output.contains("the pins alone need more"), overview.output)
        let md5 = try drive.file(at: "keep/sub/b.bin").md5Checksum
        let docx = try drive.api().export(try drive.file(at: "keep/Plan").id, mimeType: DriveMountNamesTests.docxMime)

        // Changed on Drive by someone else: the poll shows the new size, the keeper fetches it.
        let changed = [UInt8](repeating: 0x5A, count: 200_000)
        _ = try drive.api().updateContent(try drive.file(at: "keep/a.txt").id, source: .bytes(changed))
        func state(_ path: String) throws -> String {
            try ExternalCommand.tool("getfattr", ["-n", "user.drivefs.state", "--only-values", mount.path(path)], timeout: 30).output
        }
        let refetched = try poll(timeout: 120, interval: 0.2) {
            try ExternalCommand.tool("stat", ["-c", "%s", mount.path("keep/a.txt")]).output == "200000\n" && (try state("keep/a.txt")) == "offline"
        }
        let shown = try state("keep/a.txt")
        XCTAssertTrue(refetched, "the pinned file's new version is local: \(shown)\n\(mount.log.suffix(2000))")

        // A new file: local while open and written, then (queued, uploading) to synced, in order.
        let open = try shell("""
            exec 3> '\(mount.path("fresh.txt"))'; printf 'fresh\\n' >&3
            getfattr -n user.drivefs.state --only-values '\(mount.path("fresh.txt"))'; exec 3>&-
            """)
        XCTAssertEqual(open.output, "local", "written and still open: \(open.summary)")
        var seen = ["local"]
        let synced = try poll(timeout: 120, interval: 0.05) {
            let now = try state("fresh.txt")
            if now != seen.last { seen.append(now) }
            return now == "synced"
        }
        XCTAssertTrue(synced, "the new file ends synced: \(seen)")
        // In order, as seen from outside: local, then queued and uploading (an empty create whose
        // settle ran out before the close may be uploading while the content queues behind it),
        // synced last. The exact walk is PinTests.testAFileWalksLocalQueuedUploadingSynced's.
        XCTAssertEqual(Set(seen).subtracting(["local", "queued", "uploading", "synced"]), [], "only a new file's states: \(seen)")
        XCTAssertEqual(seen.filter { $0 == "local" }.count, 1, "local until closed, never again: \(seen)")
        XCTAssertEqual(seen.filter { $0 == "synced" }, ["synced"], "synced once, at the end: \(seen)")
        try drive.drivefsUnmount(mount)

        drive.stopEmulator()
        mount = try drive.mount()
        XCTAssertTrue(mount.log.contains("offline: Google Drive cannot be reached"), mount.log)
        XCTAssertEqual(try shell("cat '\(mount.path("keep/later.txt"))'").output, "added after the pin\n")
        let copied = drive.temp.appendingPathComponent("Plan-offline.docx").path
        let cp = try ExternalCommand.tool("cp", [mount.path("keep/Plan.docx"), copied], timeout: 60)
        XCTAssertEqual(cp.status, 0, "the pinned Doc opens offline: \(cp.summary)")
        XCTAssertEqual(FileManager.default.contents(atPath: copied).map { [UInt8]($0) }, docx, "as the export made online")
        let newBytes = try shell("md5sum < '\(mount.path("keep/a.txt"))'").output.split(separator: " ").first.map(String.init)
        XCTAssertEqual(newBytes, Digest.hex(.md5, of: changed), "the changed file's new version, fetched while online")
        let sum = try shell("md5sum < '\(mount.path("keep/sub/b.bin"))'")
        XCTAssertEqual(sum.status, 0, sum.summary)
        XCTAssertEqual(sum.output.split(separator: " ").first.map(String.init), md5)
        let unpinned = try ExternalCommand.tool("cat", [mount.path("loose.bin")], timeout: 60)
        XCTAssertNotEqual(unpinned.status, 0)
        XCTAssertTrue(unpinned.errorOutput.contains("Input/output error"), unpinned.summary)
        try drive.drivefsUnmount(mount)
    }
}
