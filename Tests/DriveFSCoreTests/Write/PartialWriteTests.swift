@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// Found by the chaos run (docs/chaos-findings.md, 19): a write that failed partway (the cache disk
/// full: `pwrite` wrote some bytes, then ENOSPC) left those bytes in the staging file past the
/// copy's size. The next `open(O_TRUNC)` had nothing to truncate (the copy's size was 0), a
/// shorter write followed, and the upload sent the staging file whole: the failed write's tail
/// was on Drive after the file's end. Here the partial write is made by RLIMIT_FSIZE (the write
/// stops at the limit, then EFBIG), the same path as a full disk.
final class PartialWriteTests: XCTestCase {
    func testAWriteThatFailedPartwayLeavesNothingPastTheFilesEndForTheUpload() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        try h.mount()
        let created = try h.create(.root, "partial.bin")
        let inode = created.attributes.inode
        let big = [UInt8](repeating: 0xEE, count: 300_000)
        // Only this write passes the limit: journals, the ID reserve and the cache index stay far below it.
        var saved = rlimit()
        getrlimit(RLIMIT_FSIZE_CONSTANT, &saved)
        let previousHandler = signal(SIGXFSZ, SIG_IGN)
        var limited = saved
        limited.rlim_cur = 53_248
        setrlimit(RLIMIT_FSIZE_CONSTANT, &limited)
        let failed = Result { try h.write(inode, created.opened.handle, big, at: 0) }
        setrlimit(RLIMIT_FSIZE_CONSTANT, &saved)
        signal(SIGXFSZ, previousHandler)
        XCTAssertThrowsError(try failed.get(), "the write past the limit fails")

        let text = Array("what the file holds in the end\n".utf8)
        try h.close(inode, created.opened.handle)
        try h.rewrite(inode, text)
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        let id = try XCTUnwrap(h.fs.table.node(inode)?.file.id)
        XCTAssertEqual(h.backend.content(of: id), text, "Drive holds the last write and nothing after it")
        XCTAssertEqual(try h.read(inode), text)
    }
}

/// `RLIMIT_FSIZE` as Glibc's Swift import spells it (an enum case in the C header).
private let RLIMIT_FSIZE_CONSTANT = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
