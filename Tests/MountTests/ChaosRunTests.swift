import Foundation
import XCTest

/// The short chaos run (docs/testing.md, "The chaos run"): `Tests/tools/chaos.py` drives a mount with
/// random operations from 3 processes for 50 s while its seeded schedule throws every kind of fault
/// (5xx, 403/429/401 bursts, resets mid-upload and mid-download, stalls, 10-second tokens, an
/// emulator restart, `kill -9` of drivefs and a new mount, Drive unreachable, the cache disk full as
/// root), with a second mount of the same account up part of the time, then compares Drive, through
/// its API, with what every successful close, fsync and rename promised. A fixed seed and a random one (printed; `DRIVEFS_CHAOS_SEED=N` replays one). `make chaos`
/// is the 30-minute run.
///
/// No timing is asserted: the script's waits are bounded (a hung worker or a `drivefs unmount` that
/// does not return is a failure it reports), and the test's own bound is generous.
final class ChaosRunTests: XCTestCase {
    private static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("tools/chaos.py").path
    }

    func testFixedSeed() throws {
        try run(seed: 1)
    }

    /// A new seed each run, printed (in `make test` and CI since the 30-minute replay of seed
    /// 663910146966 came back clean: docs/chaos-findings.md, 35). A failure is a bug to find from
    /// its seed: `DRIVEFS_CHAOS_SEED=N` replays it here, `chaos.py --seed N` by hand.
    func testRandomSeed() throws {
        let seed = ProcessInfo.processInfo.environment["DRIVEFS_CHAOS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1 << 40)
        print("ChaosRunTests: seed \(seed) (replay with DRIVEFS_CHAOS_SEED=\(seed), or chaos.py --seed \(seed) --duration 50)")
        try run(seed: seed)
    }

    private func run(seed: UInt64, duration: Int = 50) throws {
        // Both seeds run in `make test` (and CI); DRIVEFS_CHAOS=0 skips them on a developer's machine,
        // never in CI.
        if ProcessInfo.processInfo.environment["DRIVEFS_CHAOS"] == "0" && ProcessInfo.processInfo.environment["CI"] == nil {
            throw XCTSkip("DRIVEFS_CHAOS=0: the short chaos run is skipped")
        }
        _ = try MountedDriveFS.requireFuse()
        let bin = URL(fileURLWithPath: try DriveFSBinary.path()).deletingLastPathComponent().path
        let workdir = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-chaos-\(UUID().uuidString)")
        // The script mounts, kills and unmounts on its own, and always cleans up (atexit, finally); the
        // bound here only keeps a wedged run from hanging the suite.
        let result = try ExternalCommand.tool("python3", [Self.script, "--bin", bin, "--seed", String(seed), "--duration", String(duration),
                                                          "--processes", "3", "--workdir", workdir.path], timeout: 900)
        print(result.output)
        XCTAssertEqual(result.status, 0, "chaos run, seed \(seed): \(result.output.suffix(6000))\(result.errorOutput.suffix(3000))"
                       + "\n(the run's logs are kept in \(workdir.path))")
        XCTAssertTrue(result.output.contains("VERDICT: PASS"), "seed \(seed): no PASS verdict")
        XCTAssertNil(MountedDriveFS.mountEntry(for: workdir.appendingPathComponent("mnt").path), "the chaos run left its mount behind")
        XCTAssertNil(MountedDriveFS.mountEntry(for: workdir.appendingPathComponent("mnt2").path), "the chaos run left its second mount behind")
        if result.status == 0 && MountedDriveFS.mountEntry(for: workdir.appendingPathComponent("mnt").path) == nil
            && MountedDriveFS.mountEntry(for: workdir.appendingPathComponent("mnt2").path) == nil
            && MountedDriveFS.mountEntry(for: workdir.appendingPathComponent("cachefs").path) == nil {
            try? FileManager.default.removeItem(at: workdir)
        }
    }
}
