import DriveClient
import DriveEmulator
import DriveSupport
import Foundation

/// An `HTTPTransport` that hands requests straight to an emulator `RouteProvider` (no sockets):
/// the real OAuth server logic, in process.
final class RouteProviderTransport: HTTPTransport, @unchecked Sendable {
    let provider: any RouteProvider
    private let seen = Locked<[TransportRequest]>([])

    init(_ provider: any RouteProvider) { self.provider = provider }

    var requests: [TransportRequest] { seen.withLock { $0 } }

    func perform(_ request: TransportRequest) throws -> TransportResponse {
        seen.withLock { $0.append(request) }
        guard let c = URLComponents(string: request.url), let scheme = c.scheme, let host = c.host else {
            throw TransportError.invalidURL("bad url")
        }
        let base = "\(scheme)://\(host)" + (c.port.map { ":\($0)" } ?? "")
        let target = c.percentEncodedPath + (c.percentEncodedQuery.map { "?" + $0 } ?? "")
        var body: [UInt8] = []
        if case .bytes(let b) = request.body { body = b }
        let httpRequest = HTTPRequest(method: request.method, target: target, headers: HTTPHeaders(request.headers),
                                      body: BufferedRequestBody(body), baseURL: base)
        guard let route = provider.route(for: httpRequest) else {
            return TransportResponse(status: 404, headers: [:], body: Array("not found".utf8), bodyBytes: 9)
        }
        let response = try route.handle(httpRequest)
        var headers: [String: String] = [:]
        for field in response.headers { headers[field.name.lowercased()] = field.value }
        var out: [UInt8] = []
        if case .bytes(let b) = response.body { out = b }
        return TransportResponse(status: response.status, headers: headers, body: out, bodyBytes: Int64(out.count))
    }
}

enum AuthTestFiles {
    static func temporaryDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func mode(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}

extension TransportRequest {
    /// The form fields of a url-encoded body.
    var formFields: [String: String] {
        guard case .bytes(let b) = body else { return [:] }
        var out: [String: String] = [:]
        for pair in HTTPRequest.parseQuery(String(decoding: b, as: UTF8.self)) { out[pair.name] = pair.value }
        return out
    }
}
