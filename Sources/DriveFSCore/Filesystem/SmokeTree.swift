import DriveSupport
/// The tree `drivefs debug smoke-mount` serves: small enough to check by eye, with one file large
/// enough to need many FUSE reads.
///
///     /hello.txt        "hello from drivefs\n"
///     /empty.txt        0 bytes
///     /docs/readme.md   a short Markdown text
///     /data/1MiB.bin    1,048,576 bytes of SplitMix64 output (seed `largeFileSeed`, little-endian)
public enum SmokeTree {
    public static let hello = "hello from drivefs\n"
    public static let readme = """
        # drivefs smoke tree

        This read-only tree is served by `drivefs debug smoke-mount`. It proves that the FUSE
        bridge works; the Google Drive filesystem comes with its own issue.

        """
    public static let largeFileSize = 1 << 20
    public static let largeFileSeed: UInt64 = 0x6472_6976_6566_7321 // "drivefs!"
    /// 2026-01-01T00:00:00Z.
    public static let modifiedMillis: Int64 = 1_767_225_600_000

    public static func make(userID: UInt32, groupID: UInt32) -> StaticTree {
        StaticTree(
            entries: [
                .file("/hello.txt", Array(hello.utf8)),
                .file("/empty.txt", []),
                .file("/docs/readme.md", Array(readme.utf8)),
                .file("/data/1MiB.bin", largeFileContent()),
            ],
            userID: userID, groupID: groupID, modifiedMillis: modifiedMillis)
    }

    /// SplitMix64 from `largeFileSeed`, each 64-bit output written little-endian.
    public static func largeFileContent() -> [UInt8] {
        var generator = SplitMix64(seed: largeFileSeed)
        var out = [UInt8]()
        out.reserveCapacity(largeFileSize)
        while out.count < largeFileSize {
            let z = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: z >> UInt64(shift))) }
        }
        return out
    }
}
