import DriveClient
import Foundation
import XCTest

/// The model checker of one file (Tests/tools/fs_model_check.py: random pwrites, preads,
/// ftruncates, sizes, closes and reopens, mmap stores and loads, copy_file_range, fsyncs, each
/// checked against a model) run on a default mount, where uploads land while the file is open
/// again. Then `drivefs unmount` and two checks the mount cannot fake: the file on Drive, through
/// the API, and through a second mount with an empty cache, both equal the model.
///
/// A fixed seed and a random one that it prints (`DRIVEFS_MODEL_SEED=N` replays one).
final class DriveMountModelCheckTests: XCTestCase {
    private static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("tools/fs_model_check.py").path
    }

    func testFixedSeed() throws {
        try run(seed: 1)
    }

    func testRandomSeed() throws {
        let seed = ProcessInfo.processInfo.environment["DRIVEFS_MODEL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1 << 40)
        print("DriveMountModelCheckTests: seed \(seed) (replay with DRIVEFS_MODEL_SEED=\(seed))")
        try run(seed: seed)
    }

    private func run(seed: UInt64, operations: Int = 2_000) throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let mount = try drive.mount()
        defer { _ = try? mount.unmount() }
        let modelOut = drive.temp.appendingPathComponent("model-\(seed).bin").path
        let result = try ExternalCommand.tool("python3", [Self.script, mount.path("model.bin"), String(seed), String(operations), modelOut],
                                              timeout: 600)
        XCTAssertEqual(result.status, 0, "seed \(seed): \(result.output)\(result.errorOutput)\ndaemon log:\n\(mount.log.suffix(3000))")
        guard result.status == 0 else { return }
        let model = try XCTUnwrap(FileManager.default.contents(atPath: modelOut).map { [UInt8]($0) })

        try drive.drivefsUnmount(mount)
        let files = try drive.api().list(query: "name contains 'model' and trashed = false")
        XCTAssertEqual(files.map(\.name), ["model.bin"], "seed \(seed): Drive holds \(files.map(\.name)) (a conflicted copy is a false conflict)")
        let onDrive = try drive.api().downloadData(try XCTUnwrap(files.first).id)
        XCTAssertEqual(onDrive.count, model.count, "seed \(seed): Drive's size")
        XCTAssertTrue(onDrive == model, "seed \(seed): Drive's bytes differ from the model's")

        let fresh = try drive.mountFresh()
        defer { _ = try? fresh.unmount() }
        XCTAssertEqual(try WriteTests.md5(ofFile: fresh.path("model.bin")), WriteTests.md5(model),
                       "seed \(seed): a mount with an empty cache reads other bytes")
    }
}
