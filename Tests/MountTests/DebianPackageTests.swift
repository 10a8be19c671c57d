import Foundation
import XCTest

/// The Debian package `make deb` builds (docs/packaging.md): its control fields and contents, the
/// binaries it holds (Debian's libraries only, the right version), and, as root, a real install
/// into a clean Debian root where apt pulls the dependencies and the installed drivefs mounts the
/// installed emulator's Drive (`Tests/packaging/debian_install_test.sh`).
///
/// The package is `$DRIVEFS_DEB` (`make test` sets it, after `make deb`), else
/// `.build/deb/drivefs_VERSION_ARCH.deb`. Without it the tests skip, or fail with
/// `DRIVEFS_MOUNT_REQUIRED=1` (CI), like the mount tests.
final class DebianPackageTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private var temp: URL!

    override func setUpWithError() throws {
        temp = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-deb-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let temp { try? FileManager.default.removeItem(at: temp) }
        super.tearDown()
    }

    /// drivefs's version, as Sources/drivefs/Version.swift has it.
    static func version() throws -> String {
        let source = try String(contentsOf: packageRoot.appendingPathComponent("Sources/drivefs/Version.swift"), encoding: .utf8)
        let match = try XCTUnwrap(source.firstMatch(of: /static let current = "([^"]+)"/), "no version in Version.swift")
        return String(match.1)
    }

    static func package() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["DRIVEFS_DEB"], !explicit.isEmpty {
            guard FileManager.default.fileExists(atPath: explicit) else {
                throw Missing(description: "DRIVEFS_DEB=\(explicit) does not exist: run 'make deb'")
            }
            return explicit
        }
        let arch = try ExternalCommand.tool("dpkg", ["--print-architecture"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let path = packageRoot.appendingPathComponent(".build/deb/drivefs_\(try version())_\(arch).deb").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw MountedDriveFS.missingRequirement("no package at \(path): run 'make deb' (make test does) to test it")
        }
        return path
    }

    struct Missing: Error, CustomStringConvertible { let description: String }

    private func field(_ name: String, of deb: String) throws -> String {
        let result = try ExternalCommand.tool("dpkg-deb", ["-f", deb, name])
        XCTAssertEqual(result.status, 0, result.summary)
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testThePackagesFieldsContentsAndBinaries() throws {
        let deb = try Self.package()
        let version = try Self.version()
        XCTAssertEqual(try field("Package", of: deb), "drivefs")
        XCTAssertEqual(try field("Version", of: deb), version, "the package's version is drivefs --version's")
        XCTAssertEqual(try field("Architecture", of: deb),
                       try ExternalCommand.tool("dpkg", ["--print-architecture"]).output.trimmingCharacters(in: .whitespacesAndNewlines))
        let depends = try field("Depends", of: deb).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let names = Set(depends.map { String($0.split(separator: " ").first ?? "") })
        for needed in ["libc6", "libcurl4", "libfuse3-3", "libssl3", "fuse3", "ca-certificates"] {
            XCTAssertTrue(names.contains(needed), "Depends lacks \(needed): \(depends)")
        }
        XCTAssertFalse(names.contains { $0.contains("swift") }, "no Swift runtime package: \(depends)")

        let listing = try ExternalCommand.tool("dpkg-deb", ["-c", deb])
        XCTAssertEqual(listing.status, 0, listing.summary)
        for path in ["./usr/bin/drivefs", "./usr/bin/drivefs-emulator", "./usr/lib/systemd/user/drivefs@.service",
                     "./usr/share/man/man1/drivefs.1.gz", "./usr/share/man/man1/drivefs-emulator.1.gz",
                     "./usr/share/bash-completion/completions/drivefs", "./usr/share/zsh/vendor-completions/_drivefs",
                     "./usr/share/doc/drivefs/copyright", "./usr/share/doc/drivefs/packaging.md",
                     "./sbin/mount.fuse.drivefs -> /usr/bin/drivefs", "./sbin/mount.drivefs -> /usr/bin/drivefs"] {
            XCTAssertTrue(listing.output.split(separator: "\n").contains { $0.hasSuffix(" " + path) || $0.hasSuffix(" " + path + ".gz") },
                          "the package lacks \(path)")
        }

        // Unpacked: the binaries run, need only Debian's libraries, and carry what the sources say.
        let unpacked = temp.appendingPathComponent("root")
        let extract = try ExternalCommand.tool("dpkg-deb", ["-x", deb, unpacked.path], timeout: 120)
        XCTAssertEqual(extract.status, 0, extract.summary)
        let bin = unpacked.appendingPathComponent("usr/bin")
        let ldd = try ExternalCommand.tool("ldd", [bin.appendingPathComponent("drivefs").path, bin.appendingPathComponent("drivefs-emulator").path])
        XCTAssertEqual(ldd.status, 0, ldd.summary)
        for line in ldd.output.split(separator: "\n") where line.contains("=>") {
            let target = line.split(separator: " ").dropFirst(2).first.map(String.init) ?? ""
            XCTAssertTrue(target.hasPrefix("/lib/") || target.hasPrefix("/usr/lib/"), "not a Debian library: \(line)")
            XCTAssertFalse(line.contains("libswift") || line.contains("libFoundation") || line.contains("libdispatch"), "\(line)")
        }
        let shown = try ExternalCommand.run(bin.appendingPathComponent("drivefs").path, ["--version"])
        XCTAssertEqual(shown.output, "drivefs \(version)\n", shown.summary)
        let emulator = try ExternalCommand.run(bin.appendingPathComponent("drivefs-emulator").path, ["--version"])
        XCTAssertEqual(emulator.status, 0, emulator.summary)

        // Generated pages and completion are those of the packaged binaries; packaged files are the sources'.
        let page = try ExternalCommand.tool("gzip", ["-dc", unpacked.appendingPathComponent("usr/share/man/man1/drivefs.1.gz").path])
        XCTAssertTrue(page.output.contains(".SS \"drivefs status\""), "drivefs(1) documents drivefs status")
        let emulatorPage = try ExternalCommand.tool("gzip", ["-dc", unpacked.appendingPathComponent("usr/share/man/man1/drivefs-emulator.1.gz").path])
        XCTAssertTrue(emulatorPage.output.hasPrefix(#".\" Generated by 'drivefs-emulator --man'"#), String(emulatorPage.output.prefix(100)))
        XCTAssertTrue(try String(contentsOf: unpacked.appendingPathComponent("usr/share/bash-completion/completions/drivefs"), encoding: .utf8)
            .contains(" status"), "the completion knows drivefs status")
        for (packaged, source) in [("usr/lib/systemd/user/drivefs@.service", "packaging/drivefs@.service"),
                                   ("usr/share/doc/drivefs/copyright", "packaging/copyright")] {
            XCTAssertEqual(FileManager.default.contents(atPath: unpacked.appendingPathComponent(packaged).path),
                           FileManager.default.contents(atPath: Self.packageRoot.appendingPathComponent(source).path),
                           "\(packaged) is not \(source)")
        }
        for link in ["sbin/mount.fuse.drivefs", "sbin/mount.drivefs"] {
            XCTAssertEqual(try? FileManager.default.destinationOfSymbolicLink(atPath: unpacked.appendingPathComponent(link).path),
                           "/usr/bin/drivefs", link)
        }

        // apt on this machine resolves the package's dependencies (nothing is installed).
        let simulate = try ExternalCommand.tool("apt-get", ["install", "--simulate", "--no-install-recommends", deb], timeout: 120)
        XCTAssertEqual(simulate.status, 0, simulate.summary)
        XCTAssertTrue(simulate.output.contains("Inst drivefs") || simulate.output.contains("drivefs is already the newest version"),
                      simulate.summary)
    }

    func testInstallsInACleanDebianRootAndMountsTheDemo() throws {
        let deb = try Self.package()
        _ = try MountedDriveFS.requireFuse()
        let script = Self.packageRoot.appendingPathComponent("Tests/packaging/debian_install_test.sh").path
        let cache = Self.packageRoot.appendingPathComponent(".build/package-test-cache").path
        let run = try ExternalCommand.run("/bin/bash", [script, "--deb", deb, "--seed", Self.packageRoot.appendingPathComponent("scripts/demo-seed").path,
                                                        "--cache", cache, "--workdir", temp.appendingPathComponent("work").path,
                                                        "--version", try Self.version()],
                                          timeout: 600)
        print(run.output)
        if run.status == 2 { throw MountedDriveFS.missingRequirement("the package install test cannot run here: \(run.output)") }
        XCTAssertFalse(run.timedOut, "the install test took more than 600 s: \(run.output)")
        XCTAssertEqual(run.status, 0, "\(run.output)\n\(run.errorOutput.suffix(2000))")
        XCTAssertTrue(run.output.contains("package test passed"), run.output)
    }
}
