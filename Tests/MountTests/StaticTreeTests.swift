import DriveFSCore
import Glibc
import XCTest

/// The smoke tree through `FilesystemOperations`, without a kernel: lookup counting, listings that
/// resume at a cookie, reads at the edges, and the read-only rules.
final class StaticTreeTests: XCTestCase {
    private let tree = SmokeTree.make(userID: 1000, groupID: 1000)

    private func inode(_ path: String) throws -> Inode {
        var current = Inode.root
        for name in path.split(separator: "/") { current = try tree.lookup(parent: current, name: String(name)).inode }
        return current
    }

    func testLookupCountsFollowLibfuseRules() throws {
        let hello = try tree.lookup(parent: .root, name: "hello.txt").inode
        _ = try tree.lookup(parent: .root, name: "hello.txt")
        _ = try tree.lookup(parent: .root, name: "hello.txt")
        XCTAssertEqual(tree.lookupCount(of: hello), 3)
        tree.forget(hello, count: 2)
        XCTAssertEqual(tree.lookupCount(of: hello), 1)
        tree.forget(hello, count: 1)
        XCTAssertEqual(tree.lookupCount(of: hello), 0)
        _ = try tree.lookup(parent: .root, name: "docs")
        _ = try tree.lookup(parent: .root, name: "hello.txt")
        tree.forgetAll()
        XCTAssertEqual(tree.lookupCount(of: hello), 0)
        XCTAssertEqual(tree.lookupCount(of: try tree.lookup(parent: .root, name: "docs").inode), 1)
    }

    func testFailedLookupCountsNothing() throws {
        XCTAssertThrowsError(try tree.lookup(parent: .root, name: "missing")) { XCTAssertEqual($0 as? FilesystemError, .notFound) }
        let hello = try inode("hello.txt")
        tree.forget(hello, count: 1)
        XCTAssertThrowsError(try tree.lookup(parent: hello, name: "x")) { XCTAssertEqual($0 as? FilesystemError, .notADirectory) }
        XCTAssertEqual(tree.lookupCount(of: hello), 0)
        XCTAssertThrowsError(try tree.attributes(of: Inode(999))) { XCTAssertEqual($0 as? FilesystemError, .notFound) }
    }

    func testAttributes() throws {
        let hello = try tree.attributes(of: try inode("hello.txt"))
        XCTAssertEqual(hello.kind, .regular)
        XCTAssertEqual(hello.mode, 0o100444)
        XCTAssertEqual(hello.size, 19)
        XCTAssertEqual(hello.userID, 1000)
        XCTAssertEqual(hello.modifiedMillis, 1_767_225_600_000)
        let root = try tree.attributes(of: .root)
        XCTAssertEqual(root.mode, 0o040555)
        XCTAssertEqual(root.linkCount, 4) // ".", "..", and two subdirectories
    }

    func testListingIncludesDotEntriesInByteOrderAndResumesAtACookie() throws {
        let handle = try tree.openDirectory(.root)
        let all = try tree.readDirectory(.root, handle: handle, after: 0)
        XCTAssertEqual(all.map(\.name), [".", "..", "data", "docs", "empty.txt", "hello.txt"])
        XCTAssertEqual(all.map(\.nextOffset), [1, 2, 3, 4, 5, 6])
        let rest = try tree.readDirectory(.root, handle: handle, after: all[2].nextOffset)
        XCTAssertEqual(rest.map(\.name), ["docs", "empty.txt", "hello.txt"])
        XCTAssertEqual(try tree.readDirectory(.root, handle: handle, after: 6), [])
        tree.releaseDirectory(.root, handle: handle)
        XCTAssertThrowsError(try tree.readDirectory(.root, handle: handle, after: 0)) {
            XCTAssertEqual($0 as? FilesystemError, .badHandle)
        }
        XCTAssertThrowsError(try tree.openDirectory(try inode("hello.txt"))) {
            XCTAssertEqual($0 as? FilesystemError, .notADirectory)
        }
    }

    func testReadsAtTheEdges() throws {
        let hello = try inode("hello.txt")
        let file = try tree.open(hello, flags: O_RDONLY)
        XCTAssertEqual(try tree.read(hello, handle: file.handle, offset: 0, size: 5), Array("hello".utf8))
        XCTAssertEqual(try tree.read(hello, handle: file.handle, offset: 14, size: 100), Array("vefs\n".utf8))
        XCTAssertEqual(try tree.read(hello, handle: file.handle, offset: 19, size: 10), [])
        XCTAssertEqual(try tree.read(hello, handle: file.handle, offset: 1 << 40, size: 10), [])
        XCTAssertThrowsError(try tree.read(hello, handle: file.handle, offset: -1, size: 1)) {
            XCTAssertEqual($0 as? FilesystemError, .invalidArgument)
        }
        XCTAssertEqual(tree.openHandleCount, 1)
        tree.release(hello, handle: file.handle)
        XCTAssertEqual(tree.openHandleCount, 0)
        XCTAssertThrowsError(try tree.read(hello, handle: file.handle, offset: 0, size: 1)) {
            XCTAssertEqual($0 as? FilesystemError, .badHandle)
        }
    }

    func testOpeningForWriteIsReadOnlyAndDirectoriesAreNotFiles() throws {
        let hello = try inode("hello.txt")
        for flags in [O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC] {
            XCTAssertThrowsError(try tree.open(hello, flags: flags)) { XCTAssertEqual($0 as? FilesystemError, .readOnly) }
        }
        XCTAssertThrowsError(try tree.open(.root, flags: O_RDONLY)) { XCTAssertEqual($0 as? FilesystemError, .isADirectory) }
        XCTAssertEqual(tree.openHandleCount, 0)
    }

    func testLargeFileIsDeterministic() {
        let content = SmokeTree.largeFileContent()
        XCTAssertEqual(content.count, 1 << 20)
        // First SplitMix64 output from seed "drivefs!", little-endian (checked against a Python implementation).
        XCTAssertEqual(Array(content.prefix(8)), [0xb0, 0xa6, 0xe3, 0xee, 0xfa, 0xf8, 0x5b, 0xcd])
        XCTAssertEqual(tree.statistics().maximumNameLength, 255)
    }
}

extension StaticTreeTests {
    func testReadDirectoryPlusCountsOneLookupPerEntryButNotDots() throws {
        let handle = try tree.openDirectory(.root)
        let entries = try tree.listPlus(.root, handle: handle, after: 0)
        XCTAssertEqual(entries.map(\.entry.name), [".", "..", "data", "docs", "empty.txt", "hello.txt"])
        XCTAssertNil(entries[0].attributes)
        XCTAssertNil(entries[1].attributes)
        XCTAssertEqual(entries[5].attributes?.size, 19)
        XCTAssertEqual(tree.lookupCount(of: .root), 0)
        for item in entries.dropFirst(2) {
            XCTAssertEqual(tree.lookupCount(of: item.entry.inode), 1, item.entry.name)
        }
        let tail = try tree.listPlus(.root, handle: handle, after: 5)
        XCTAssertEqual(tail.map(\.entry.name), ["hello.txt"])
        XCTAssertEqual(tree.lookupCount(of: tail[0].entry.inode), 2)
        tree.releaseDirectory(.root, handle: handle)
    }

    /// The reply's size budget: entries that do not fit are neither added nor counted.
    func testReadDirectoryPlusCountsOnlyWhatFits() throws {
        let handle = try tree.openDirectory(.root)
        let first = try tree.listPlus(.root, handle: handle, after: 0, capacity: 3)
        XCTAssertEqual(first.map(\.entry.name), [".", "..", "data"])
        XCTAssertEqual(tree.lookupCount(of: first[2].entry.inode), 1)
        let docs = try tree.lookup(parent: .root, name: "docs").inode
        tree.forget(docs, count: 1)
        XCTAssertEqual(tree.lookupCount(of: docs), 0, "an entry that did not fit counted nothing")
        let rest = try tree.listPlus(.root, handle: handle, after: first[2].entry.nextOffset)
        XCTAssertEqual(rest.map(\.entry.name), ["docs", "empty.txt", "hello.txt"])
        tree.releaseDirectory(.root, handle: handle)
    }
}
