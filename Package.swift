// swift-tools-version:6.3
// drivefs: a FUSE filesystem for Google Drive, and the Drive v3 emulator it is tested against.
//
// Layers import only downward:
//   drivefs (CLI) → FuseBridge → DriveFSCore → DriveClient → DriveSupport → C shims
//   drivefs-emulator → DriveEmulator → DriveSupport → CCrypto
//   both executables → CommandLineKit → DriveSupport
// Each C library is touched by exactly one Swift module: CFuse by FuseBridge, CCurl by DriveClient,
// CCrypto by DriveSupport; CSystem (libc calls the Glibc overlay hides) by DriveFSCore. No
// production target imports DriveEmulator.
import PackageDescription

let package = Package(
    name: "drivefs",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "drivefs", targets: ["drivefs"]),
        .executable(name: "drivefs-emulator", targets: ["drivefs-emulator"]),
        .library(name: "DriveEmulator", targets: ["DriveEmulator"]),
    ],
    targets: [
        // C interop: one small target per C library, with typed wrappers for macros and variadics.
        .target(name: "CFuse", linkerSettings: [.linkedLibrary("fuse3")]),
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("curl")]),
        .target(name: "CCrypto", linkerSettings: [.linkedLibrary("crypto")]),
        // Linux calls that Glibc's overlay hides (fallocate's hole punching).
        .target(name: "CSystem"),

        // Shared ground: locks, clocks, RFC 3339 times, digests and signatures.
        .target(name: "DriveSupport", dependencies: ["CCrypto"]),
        // Drive v3 over libcurl: auth, pacing, retries, typed errors.
        .target(name: "DriveClient", dependencies: ["DriveSupport", "CCurl"]),
        // Inodes, handles, folder-ID cache, block cache, write-back. No kernel needed.
        .target(name: "DriveFSCore", dependencies: ["DriveClient", "DriveSupport", "CSystem"]),
        // The only code that touches libfuse.
        .target(name: "FuseBridge", dependencies: ["DriveFSCore", "DriveSupport", "CFuse"]),
        // The one command-line framework of both executables: command tree, option and argument
        // specs, the parser, help, manual pages and completions. Knows nothing of Drive.
        .target(name: "CommandLineKit", dependencies: ["DriveSupport"]),
        .executableTarget(name: "drivefs", dependencies: ["CommandLineKit", "FuseBridge", "DriveFSCore", "DriveClient", "DriveSupport"]),

        // The Drive v3 + OAuth 2.0 emulator: a product of its own.
        .target(name: "DriveEmulator", dependencies: ["DriveSupport"]),
        .executableTarget(name: "drivefs-emulator", dependencies: ["CommandLineKit", "DriveEmulator", "DriveSupport"]),

        // What every test target shares (the bounded wait); a library only the tests depend on.
        .target(name: "TestSupport", dependencies: ["DriveSupport"], path: "Tests/TestSupport"),
        .testTarget(name: "DriveSupportTests", dependencies: ["DriveSupport"]),
        .testTarget(name: "CommandLineKitTests", dependencies: ["CommandLineKit"]),
        .testTarget(name: "DriveEmulatorTests", dependencies: ["TestSupport", "DriveEmulator", "DriveSupport"]),
        .testTarget(name: "DriveClientTests", dependencies: ["TestSupport", "DriveClient", "DriveEmulator", "DriveSupport"]),
        .testTarget(name: "DriveFSCoreTests", dependencies: ["TestSupport", "DriveFSCore", "DriveClient", "DriveEmulator", "DriveSupport"]),
        .testTarget(name: "MountTests", dependencies: ["TestSupport", "DriveFSCore", "DriveClient", "DriveEmulator", "DriveSupport"]),
        .testTarget(name: "InteropTests", dependencies: ["DriveEmulator", "DriveSupport"]),
    ]
)
