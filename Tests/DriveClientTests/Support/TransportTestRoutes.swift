import DriveEmulator
import DriveSupport
import Foundation

/// Plain HTTP routes for testing `CurlTransport` over the emulator's HTTP server (no Drive semantics):
/// - `GET /blob?size=N`: N deterministic bytes (`TransportTestRoutes.byte(at:)`), streamed. Fault name `test.blob`.
/// - `PUT|POST|PATCH /sink`: reads the body as it arrives; answers `{"size":..,"md5":..,"method":..}`. Fault name `test.sink`.
/// - `GET /status/N`: status N with a Google error body. Fault name `test.status`.
/// - `GET /headers`: the request headers as JSON. Fault name `test.headers`.
/// - `GET /gate?key=K&n=N`: answers only once N requests with key K are in (at most 10 s), so N
///   requests are surely in flight at once. Fault name `test.gate`.
final class TransportTestRoutes: RouteProvider, @unchecked Sendable {
    // Guarded by `gate`: arrivals per key.
    private let gate = NSCondition()
    private var arrived: [String: Int] = [:]

    static func byte(at index: Int64) -> UInt8 { UInt8(truncatingIfNeeded: (index &* 31) ^ (index >> 9)) }

    static func bytes(_ range: Range<Int64>) -> [UInt8] { range.map(byte(at:)) }

    func route(for request: HTTPRequest) -> Route? {
        switch (request.method, request.path) {
        case ("GET", "/blob"):
            return Route(method: "test.blob") { request in
                let size = Int64(request.param("size") ?? "0") ?? 0
                var sent: Int64 = 0
                return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/octet-stream"),
                                                                       ("Content-Length", String(size))]),
                                    body: .stream {
                                        guard sent < size else { return nil }
                                        let n = min(Int64(64 * 1024), size - sent)
                                        defer { sent += n }
                                        return TransportTestRoutes.bytes(sent..<(sent + n))
                                    })
            }
        case (_, "/sink"):
            return Route(method: "test.sink") { request in
                var digest = Digest(.md5)
                var size = 0
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let n = try buffer.withUnsafeMutableBytes { try request.body.read(into: $0) }
                    if n == 0 { break }
                    size += n
                    buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                }
                return .json(200, ["size": size, "md5": digest.hexDigest(), "method": request.method])
            }
        case ("GET", let path) where path.hasPrefix("/status/"):
            return Route(method: "test.status") { request in
                let code = Int(path.dropFirst("/status/".count)) ?? 500
                return .json(code, ["error": ["code": code, "message": "scripted \(code)",
                                              "errors": [["domain": "global", "reason": "scripted", "message": "scripted \(code)"]]]])
            }
        case ("GET", "/gate"):
            return Route(method: "test.gate") { [self] request in
                let key = request.param("key") ?? ""
                let n = Int(request.param("n") ?? "1") ?? 1
                let limit = Date(timeIntervalSinceNow: 10)
                gate.lock()
                arrived[key, default: 0] += 1
                gate.broadcast()
                while arrived[key, default: 0] < n, gate.wait(until: limit) {}
                let all = arrived[key, default: 0] >= n
                gate.unlock()
                return .json(all ? 200 : 504, ["arrived": all])
            }
        case ("GET", "/headers"):
            return Route(method: "test.headers") { request in
                var object: [String: String] = [:]
                for field in request.headers { object[field.name.lowercased()] = field.value }
                return .json(200, object)
            }
        default:
            return nil
        }
    }
}
