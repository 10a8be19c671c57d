import CCurl
import Foundation

/// The state of one `curl_easy_perform`: the request body source, the response status and headers,
/// and where body bytes go. libcurl's callbacks reach it through their userdata pointer
/// (`Unmanaged`, unretained: `CurlTransport.perform` keeps it alive for the whole transfer).
/// Used by exactly one thread at a time (the one inside `curl_easy_perform`).
final class CurlTransfer {
    let request: TransportRequest
    let maxErrorBody: Int

    // Request body.
    private(set) var bodyLength: Int64 = 0
    private var bodyFD: Int32 = -1
    private var bodyFileOffset: Int64 = 0
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
        case .none:
            bodyLength = 0
        case .bytes(let bytes):
            bodyLength = Int64(bytes.count)
        case .file(let path, let offset, let length):
            guard offset >= 0, length >= 0 else { throw TransportError.other(code: -1, message: "invalid file range") }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw TransportError.other(code: -1, message: "cannot open upload source \(path): \(String(cString: strerror(errno)))")
            }
            bodyFD = fd
            bodyFileOffset = offset
            bodyLength = length
        }
    }

    func close() {
        if bodyFD >= 0 { _ = Foundation.close(bodyFD); bodyFD = -1 }
    }

    /// Fills `buffer` with the next request body bytes; 0 at the end; `nil` to abort.
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let remaining = bodyLength - bodySent
        let want = Int(min(Int64(buffer.count), remaining))
        guard want > 0 else { return 0 }
        switch request.body {
        case .none:
            return 0
        case .bytes(let bytes):
            let start = Int(bodySent)
            bytes.withUnsafeBytes { src in
                buffer.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: want)
            }
            bodySent += Int64(want)
            return want
        case .file:
            var n: Int
            repeat { n = pread(bodyFD, buffer.baseAddress, want, off_t(bodyFileOffset + bodySent)) } while n < 0 && errno == EINTR
            if n < 0 { readError = "cannot read upload source: \(String(cString: strerror(errno)))"; return nil }
            if n == 0 { readError = "upload source is shorter than announced (\(bodySent) of \(bodyLength) bytes)"; return nil }
            bodySent += Int64(n)
            return n
        }
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
            var done = 0
            while done < chunk.count {
                let n = pwrite(fd, chunk.baseAddress! + done, chunk.count - done, off_t(offset + delivered + Int64(done)))
                if n < 0 {
                    if errno == EINTR { continue }
                    sinkError = "cannot write download: \(String(cString: strerror(errno)))"
                    return false
                }
                done += n
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
