import DriveClient
import Foundation
import XCTest

/// `getfattr` / `setfattr` on the mount: the `user.drive.*` attributes equal what Drive says, and
/// what the kernel answers for unknown names and writes.
final class DriveMountXattrTests: XCTestCase {
    private func requireAttrTools() throws {
        for tool in ["getfattr", "setfattr"] where ExternalCommand.which(tool) == nil {
            throw MountedDriveFS.missingRequirement("\(tool) is missing: install the attr package ('make deps')")
        }
    }

    /// Parses `getfattr -d --absolute-names` output: `name="value"` lines.
    private func attributes(_ output: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in output.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            var value = String(line[line.index(after: equals)...])
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            result[String(line[..<equals])] = value
        }
        return result
    }

    func testGetfattrShowsDriveIDsAndChecksums() throws {
        _ = try MountedDriveFS.requireFuse()
        try requireAttrTools()
        let drive = try EmulatedDrive { seed in
            try Data("hello from the emulator\n".utf8).write(to: seed.appendingPathComponent("hello.txt"))
            try FileManager.default.createDirectory(at: seed.appendingPathComponent("docs"), withIntermediateDirectories: true)
        }
        defer { drive.stop() }
        let hello = try drive.file(at: "hello.txt")
        let docs = try drive.file(at: "docs")
        try drive.createShortcut(name: "link", parent: docs.id, target: hello.id)
        let mount = try drive.mount()

        let file = try ExternalCommand.tool("getfattr", ["-d", "--absolute-names", mount.path("hello.txt")])
        XCTAssertEqual(file.status, 0, file.summary)
        let shown = attributes(file.output)
        XCTAssertEqual(shown["user.drive.id"], hello.id, file.output)
        XCTAssertEqual(shown["user.drive.md5"], try XCTUnwrap(hello.md5Checksum), file.output)
        XCTAssertEqual(shown["user.drive.mime_type"], hello.mimeType, file.output)
        XCTAssertEqual(shown["user.drive.web_view_link"], "https://drive.google.com/file/d/\(hello.id)/view?usp=drivesdk", file.output)
        XCTAssertEqual(shown["user.drive.modified_by"], "user@drivefs-emulator.test", file.output)
        XCTAssertEqual(Set(shown.keys), ["user.drive.id", "user.drive.md5", "user.drive.mime_type", "user.drive.web_view_link",
                                         "user.drive.modified_by", "user.drivefs.state"], file.output)
        XCTAssertEqual(shown["user.drivefs.state"], "cloud", "nothing of it was read: \(file.output)")

        let folder = try ExternalCommand.tool("getfattr", ["-d", "--absolute-names", mount.path("docs")])
        XCTAssertEqual(attributes(folder.output)["user.drive.id"], docs.id, folder.summary)
        XCTAssertNil(attributes(folder.output)["user.drive.md5"], folder.output)

        // getfattr follows the link: the shortcut's path shows its target's attributes.
        let followed = try ExternalCommand.tool("getfattr", ["-n", "user.drive.id", "--only-values", mount.path("docs/link")])
        XCTAssertEqual(followed.output, hello.id, followed.summary)
        // Without following, the kernel allows no user.* attribute on a symbolic link (ENODATA),
        // whatever the filesystem lists: the shortcut's own attributes stay inside drivefs.
        let own = try ExternalCommand.tool("getfattr", ["-h", "-n", "user.drive.shortcut_target_id", mount.path("docs/link")])
        XCTAssertNotEqual(own.status, 0, own.summary)
        XCTAssertTrue(own.output.contains("No such attribute") || own.errorOutput.contains("No such attribute"), own.summary)

        let unknown = try ExternalCommand.tool("getfattr", ["-n", "user.drive.nope", mount.path("hello.txt")])
        XCTAssertNotEqual(unknown.status, 0, unknown.summary)
        XCTAssertTrue(unknown.errorOutput.contains("No such attribute"), "ENODATA: \(unknown.summary)")

        // No ACLs or security labels: "not supported", which `ls -l` remembers for the whole mount.
        for name in ["system.posix_acl_access", "security.selinux"] {
            let other = try ExternalCommand.tool("getfattr", ["-n", name, mount.path("hello.txt")])
            XCTAssertNotEqual(other.status, 0, other.summary)
            XCTAssertTrue(other.errorOutput.contains("Operation not supported"), "EOPNOTSUPP for \(name): \(other.summary)")
        }
        let long = try ExternalCommand.tool("ls", ["-l", mount.mountpoint])
        XCTAssertEqual(long.status, 0, long.summary)
        XCTAssertFalse(long.output.contains("+"), "no file shows an ACL: \(long.output)")

        // The attributes are Drive's: drivefs refuses to change them (EPERM) on the writable mount.
        let set = try ExternalCommand.tool("setfattr", ["-n", "user.drive.id", "-v", "x", mount.path("hello.txt")])
        XCTAssertNotEqual(set.status, 0, set.summary)
        XCTAssertTrue(set.errorOutput.contains("Operation not permitted"), set.summary)
        let remove = try ExternalCommand.tool("setfattr", ["-x", "user.drive.id", mount.path("hello.txt")])
        XCTAssertTrue(remove.errorOutput.contains("Operation not permitted"), remove.summary)
        XCTAssertEqual(attributes(try ExternalCommand.tool("getfattr", ["-d", "--absolute-names", mount.path("hello.txt")]).output)["user.drive.id"],
                       hello.id)
        // drivefs's own pin is the one attribute that can be set: 1 pins, 0 unpins.
        func pinned() throws -> String {
            try ExternalCommand.tool("getfattr", ["-n", "user.drivefs.pinned", "--only-values", mount.path("hello.txt")]).output
        }
        XCTAssertEqual(try pinned(), "0")
        let pin = try ExternalCommand.tool("setfattr", ["-n", "user.drivefs.pinned", "-v", "1", mount.path("hello.txt")])
        XCTAssertEqual(pin.status, 0, pin.summary)
        XCTAssertEqual(try pinned(), "1")
        let state = try ExternalCommand.tool("getfattr", ["-n", "user.drivefs.state", "--only-values", mount.path("hello.txt")])
        XCTAssertTrue(["synced", "offline"].contains(state.output), "pinned, fetched or being fetched: \(state.summary)")
        XCTAssertEqual(try ExternalCommand.tool("setfattr", ["-n", "user.drivefs.pinned", "-v", "0", mount.path("hello.txt")]).status, 0)
        XCTAssertEqual(try pinned(), "0")
    }
}
