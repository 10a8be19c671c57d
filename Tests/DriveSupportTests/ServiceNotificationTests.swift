import DriveSupport
import Foundation
import Glibc
import XCTest

/// sd_notify's datagram: received as sent on a path socket and an abstract one; nothing without
/// `$NOTIFY_SOCKET`.
final class ServiceNotificationTests: XCTestCase {
    /// A bound datagram socket standing in for systemd; returns the descriptor.
    private func listen(_ name: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(name.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.enumerated() { raw[i] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        XCTAssertEqual(bound, 0, String(cString: strerror(errno)))
        // Bounded: a datagram that never came fails the test instead of hanging it.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    private func receive(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n < 0 ? nil : String(decoding: buffer.prefix(n), as: UTF8.self)
    }

    func testAPathSocketReceivesTheState() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-notify-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("notify").path
        let fd = try listen(path)
        defer { close(fd) }
        XCTAssertTrue(ServiceNotification.send("READY=1\nSTATUS=mounted", environment: ["NOTIFY_SOCKET": path]))
        XCTAssertEqual(receive(fd), "READY=1\nSTATUS=mounted")
    }

    func testAnAbstractSocketReceivesTheState() throws {
        let name = "@drivefs-notify-test-\(UUID().uuidString)"
        let fd = try listen(name)
        defer { close(fd) }
        XCTAssertTrue(ServiceNotification.send("READY=1", socketName: name))
        XCTAssertEqual(receive(fd), "READY=1")
    }

    func testWithoutASocketNothingIsSent() {
        XCTAssertFalse(ServiceNotification.send("READY=1", environment: [:]))
        XCTAssertFalse(ServiceNotification.send("READY=1", socketName: ""))
        XCTAssertFalse(ServiceNotification.send("READY=1", socketName: "relative/path"))
        XCTAssertFalse(ServiceNotification.send("READY=1", socketName: "/nonexistent/drivefs/notify"), "nobody listens")
        XCTAssertFalse(ServiceNotification.send("READY=1", socketName: "/" + String(repeating: "x", count: 200)), "too long")
    }
}
