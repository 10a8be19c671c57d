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

    func testRandomSeed() throws {
        // Opt-in (DRIVEFS_CHAOS=1) while the 30-minute runs still find read mismatches after a restart
        // (docs/chaos-findings.md, 32 and 34) that a random short seed may hit now and then; the fixed
        // seed above runs in `make test` and CI. DRIVEFS_CHAOS_SEED replays one.
        guard ProcessInfo.processInfo.environment["DRIVEFS_CHAOS"] == "1"
                || ProcessInfo.processInfo.environment["DRIVEFS_CHAOS_SEED"] != nil else {
            throw XCTSkip("the random-seed chaos run is opt-in (DRIVEFS_CHAOS=1) until the 30-minute run is clean (docs/chaos-findings.md)")
        }
        let seed = ProcessInfo.processInfo.environment["DRIVEFS_CHAOS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1 << 40)
        print("ChaosRunTests: seed \(seed) (replay with DRIVEFS_CHAOS_SEED=\(seed), or chaos.py --seed \(seed) --duration 50)")
        try run(seed: seed)
    }

    private func run(seed: UInt64, duration: Int = 50) throws {
        // The fixed seed in `make test` (and CI) since a long series of random seeds passed
        // (docs/chaos-findings.md, "Runs"); DRIVEFS_CHAOS=0 skips it on a developer's machine, never in CI.
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
