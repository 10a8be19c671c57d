import Foundation
@testable import DriveEmulator
import TestSupport

/// A RouteProvider made of closures, for tests that need a server with known handlers.
final class TestRoutes: RouteProvider {
    struct Entry: Sendable {
        var method: String
        var path: String
        var handler: @Sendable (HTTPRequest) throws -> HTTPResponse
    }
    let entries: [Entry]

    init(_ entries: [Entry]) { self.entries = entries }

    func route(for request: HTTPRequest) -> Route? {
        guard let entry = entries.first(where: { $0.path == request.path }) else { return nil }
        return Route(method: entry.method, handle: entry.handler)
    }

    /// Routes every test suite finds useful: `/echo` (body back), `/hello`, `/discard` (reads and
    /// counts the body), `/chunked` (a streamed body), `/throws`.
    static func standard() -> TestRoutes {
        TestRoutes([
            Entry(method: "test.hello", path: "/hello") { _ in
                HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/plain")]), body: .bytes(Array("hello".utf8)))
            },
            Entry(method: "test.echo", path: "/echo") { request in
                let body = try request.body.readAll(limit: 16 << 20)
                return HTTPResponse(status: 200, body: .bytes(body))
            },
            Entry(method: "test.discard", path: "/discard") { request in
                var total: Int64 = 0
                var chunk = [UInt8](repeating: 0, count: 256 * 1024)
                while true {
                    let n = try chunk.withUnsafeMutableBytes { try request.body.read(into: $0) }
                    if n == 0 { break }
                    total += Int64(n)
                }
                return .json(200, ["bytes": total])
            },
            Entry(method: "test.chunked", path: "/chunked") { request in
                let count = Int(request.param("chunks") ?? "3") ?? 3
                let size = Int(request.param("size") ?? "10") ?? 10
                var sent = 0
                return HTTPResponse(status: 200, body: .stream({
                    guard sent < count else { return nil }
                    sent += 1
                    return [UInt8](repeating: UInt8(ascii: "a") + UInt8(sent % 26), count: size)
                }))
            },
            Entry(method: "test.bytes", path: "/bytes") { request in
                let size = Int(request.param("size") ?? "1024") ?? 1024
                return HTTPResponse(status: 200, body: .bytes((0..<size).map { UInt8(truncatingIfNeeded: $0) }))
            },
            Entry(method: "test.throws", path: "/throws") { request in
                if request.param("google") != nil { throw GoogleError.invalidParameter("q", "Invalid Value") }
                struct Boom: Error {}
                throw Boom()
            },
        ])
    }
}

/// An emulator serving `TestRoutes.standard()` (plus anything extra), started on a free port.
func startTestEmulator(_ config: EmulatorConfig = EmulatorConfig(), extra: [TestRoutes.Entry] = [],
                       revoke: @escaping @Sendable (String?) -> Void = { _ in }) throws -> Emulator {
    let routes = TestRoutes(extra + TestRoutes.standard().entries)
    let emulator = try Emulator(config: config, services: EmulatorServices(providers: [routes], revoke: revoke))
    try emulator.start()
    return emulator
}

/// A request is counted (with its status) before its response is sent, but its byte counts and a
/// changed outcome (reset, aborted) are added once the exchange is over, which a client that has
/// read its answer may not wait for: for those, wait (bounded) until the predicate holds.
func waitForStats(_ emulator: Emulator, timeout: Double = 5, file: StaticString = #filePath, line: UInt = #line,
                  until predicate: (EmulatorStatsSnapshot) -> Bool) -> EmulatorStatsSnapshot {
    var snapshot = emulator.stats()
    waitUntil("the emulator's stats: \(snapshot)", timeout: timeout, file: file, line: line) {
        snapshot = emulator.stats()
        return predicate(snapshot)
    }
    return snapshot
}
