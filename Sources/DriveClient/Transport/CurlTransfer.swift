import CCurl
import DriveSupport
import Foundation

/// The state of one `curl_easy_perform`: the request body source, the response status and headers,
/// and where body bytes go. libcurl's callbacks reach it through their userdata pointer
/// (`Unmanaged`, unretained: `CurlTransport.perform` keeps it alive for the whole transfer).
/// Used by exactly one thread at a time (the one inside `curl_easy_perform`).
final class CurlTransfer {
    let request: TransportRequest
    let maxErrorBody: Int

    // Request body: its pieces, each file piece with its descriptor; `part` and `partSent` say
    // where the next byte comes from.
    private(set) var bodyLength: Int64 = 0
    private var parts: [TransportRequest.BodyPart] = []
    private var partFDs: [Int32] = []
    private var part = 0
    private var partSent: Int64 = 0
    private var bodySent: Int64 = 0
    var readError: String?

    // Response.
    var status = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var delivered: Int64 = 0
    var sinkAborted = false
    private var headReported = false
    var sinkError: String?
    var setupError: TransportError?

    init(request: TransportRequest, maxErrorBody: Int) {
        self.request = request
        self.maxErrorBody = maxErrorBody
    }

    func openBody() throws {
        switch request.body {
        case .none: parts = []
        case .bytes(let bytes): parts = [.bytes(bytes)]
        case .file(let path, let offset, let length): parts = [.file(path: path, offset: offset, length: length)]
        case .parts(let pieces): parts = pieces
        }
        bodyLength = 0
        for piece in parts {
            switch piece {
            case .bytes(let bytes):
                partFDs.append(-1)
                bodyLength += Int64(bytes.count)
            case .file(let path, let offset, let length):
                guard offset >= 0, length >= 0 else { throw TransportError.other(code: -1, message: "invalid file range") }
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    throw TransportError.other(code: -1, message: "cannot open upload source \(path): \(String(cString: strerror(errno)))")
                }
                partFDs.append(fd)
                bodyLength += length
            }
        }
        request.bodyObserver?.begin()
    }

    func close() {
        for fd in partFDs where fd >= 0 { _ = Foundation.close(fd) }
        partFDs = []
    }

    /// Fills `buffer` with the next request body bytes (from one piece); 0 at the end; `nil` to abort.
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while part < parts.count {
            let length: Int64
            switch parts[part] {
            case .bytes(let bytes): length = Int64(bytes.count)
            case .file(_, _, let l): length = l
            }
            let want = Int(min(Int64(buffer.count), length - partSent))
            guard want > 0 else {
                part += 1
                partSent = 0
                continue
            }
            switch parts[part] {
            case .bytes(let bytes):
                let start = Int(partSent)
                bytes.withUnsafeBytes { src in
                    buffer.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: want)
                }
                partSent += Int64(want)
                bodySent += Int64(want)
                return want
            case .file(_, let offset, _):
                let n: Int
                do throws(SystemCallError) {
                    n = try SystemCall.read(partFDs[part], into: UnsafeMutableRawBufferPointer(start: buffer.baseAddress, count: want),
                                            at: offset + partSent)
                } catch {
                    readError = "cannot read upload source: \(error.reason)"
                    return nil
                }
                if n == 0 {
                    readError = "upload source is shorter than announced (\(bodySent) of \(bodyLength) bytes)"
                    return nil
                }
                request.bodyObserver?.read(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                partSent += Int64(n)
                bodySent += Int64(n)
                return n
            }
        }
        return 0
    }

    /// One raw header line (status lines included). A new status line (after `100 Continue`,
    /// or a proxy's `200 Connection established`) starts a fresh header set.
    func header(line: UnsafeRawBufferPointer) {
        // ("\r\n" is one Character in Swift: trim by scalars.)
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .newlines)
        if text.hasPrefix("HTTP/") {
            headers = [:]
            let parts = text.split(separator: " ", maxSplits: 2)
            status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
            return
        }
        guard let colon = text.firstIndex(of: ":") else { return }
        let name = text[..<colon].lowercased()
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        if let existing = headers[name] { headers[name] = existing + ", " + value } else { headers[name] = value }
    }

    /// Body bytes as they arrive; false aborts the transfer.
    func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard (200..<300).contains(status) else {
            let room = max(0, maxErrorBody - body.count)
            if room > 0 { body.append(contentsOf: chunk.prefix(room)) }
            return true
        }
        if !headReported {
            headReported = true
            request.onResponseHead?(status, headers)
        }
        switch request.sink {
        case .memory:
            if body.isEmpty, let length = headers["content-length"].flatMap(Int.init), length > 0 {
                body.reserveCapacity(min(length, 64 << 20))
            }
            body.append(contentsOf: chunk)
        case .fileDescriptor(let fd, let offset):
            do throws(SystemCallError) { try SystemCall.writeAll(fd, UnsafeRawBufferPointer(chunk), at: offset + delivered) } catch {
                sinkError = "cannot write download: \(error.reason)"
                return false
            }
        case .callback(let deliver):
            guard deliver(chunk) else { sinkAborted = true; return false }
        }
        delivered += Int64(chunk.count)
        return true
    }
}

// C callbacks: plain functions that capture nothing; the transfer comes through the userdata pointer.

func curlWriteCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let total = size * count
    guard total > 0, let data else { return 0 }
    return transfer.write(UnsafeRawBufferPointer(start: data, count: total)) ? total : ccurl_writefunc_abort()
}

func curlHeaderCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let total = size * count
    if total > 0, let data { transfer.header(line: UnsafeRawBufferPointer(start: data, count: total)) }
    return total
}

func curlReadCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let userdata, let data else { return ccurl_readfunc_abort() }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let buffer = UnsafeMutableRawBufferPointer(start: data, count: size * count)
    return transfer.readBody(into: buffer) ?? ccurl_readfunc_abort()
}


func curlProgressCallback(_ userdata: UnsafeMutableRawPointer?, _ dltotal: curl_off_t, _ dlnow: curl_off_t,
                          _ ultotal: curl_off_t, _ ulnow: curl_off_t) -> Int32 {
    guard let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.request.cancellation?.isCancelled == true ? 1 : 0
}
