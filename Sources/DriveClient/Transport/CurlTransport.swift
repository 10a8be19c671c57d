import CCurl
import DriveSupport
import Foundation

/// `HTTPTransport` over libcurl's easy interface.
///
/// Contracts:
/// - `perform` blocks the calling thread until the exchange ends. Call it from the filesystem's own
///   threads or a `Thread`, never from a Swift concurrency Task (the cooperative pool is tiny).
/// - Connections are reused: finished easy handles go back to a pool (`curl_easy_reset` keeps a
///   handle's connection cache, DNS cache and TLS sessions), so sequential requests to one host
///   ride one keep-alive connection.
/// - TLS is always verified (system store, or `caFile`). Redirects are never followed.
/// - A dead connection never hangs: connect has a timeout, and a transfer that moves fewer than
///   `stallBytesPerSecond` for `stallTimeout` seconds fails with `TransportError.timedOut`.
///   There is deliberately no overall timeout: a 10 GiB upload may take hours.
/// - A request body is never resent by libcurl on its own (no seek callback: a body that was sent
///   on a connection that then died fails with `connectionLost`, CURLE_SEND_FAIL_REWIND), so the
///   layer above decides: the executor's retry policy, or the resumable protocol's status probe.
/// - Bodies stream: a `.file` request body is read with `pread` as libcurl asks for it; 2xx
///   response bodies go to the sink as they arrive; non-2xx bodies are collected in memory, bounded
///   by `maxErrorBodyBytes` (the rest is dropped), for the layer above to parse.
/// @unchecked Sendable: idle curl handles (raw pointers) are reached only under `idle`'s lock, each used by
/// one transfer at a time
public final class CurlTransport: HTTPTransport, @unchecked Sendable {
    public struct Options: Sendable {
        /// Seconds to establish TCP + TLS.
        public var connectTimeout: Double = 15
        /// A transfer slower than `stallBytesPerSecond` for this many seconds is abandoned.
        public var stallTimeout: Int = 30
        public var stallBytesPerSecond: Int = 1
        /// PEM bundle of trusted CAs; nil means the system store.
        public var caFile: String?
        /// Idle easy handles kept for reuse, each with its live connection: size it to the
        /// requests that run at once (`DriveAPI.make(concurrency:)`), or connections made by a busy
        /// moment are torn down when it passes and opened again (TCP + TLS) by the next one.
        public var maxIdleHandles: Int = 16
        public var maxErrorBodyBytes: Int = 1 << 20
        public var userAgent: String = "drivefs/0.1"
        /// How an http:// host name is resolved to judge it (CleartextPolicy); tests inject one.
        public var resolver: CleartextPolicy.Resolver = CleartextPolicy.systemResolver

        public init(connectTimeout: Double = 15, stallTimeout: Int = 30, caFile: String? = nil) {
            self.connectTimeout = connectTimeout
            self.stallTimeout = stallTimeout
            self.caFile = caFile
        }

        /// Options for `concurrency` requests at once (FUSE threads + read-ahead streams + uploads).
        public init(concurrency: Int, connectTimeout: Double = 15, stallTimeout: Int = 30, caFile: String? = nil) {
            self.init(connectTimeout: connectTimeout, stallTimeout: stallTimeout, caFile: caFile)
            self.maxIdleHandles = max(1, concurrency)
        }
    }

    public let options: Options
    // INVARIANT: every handle in `idle` is owned by the pool and used by no thread.
    private let idle = Locked<[UnsafeMutableRawPointer]>([])
    private let opened = Locked<Int64>(0)

    public init(options: Options = Options()) throws {
        let rc = ccurl_global_init_once()
        guard rc == CURLE_OK else {
            throw TransportError.other(code: Int(rc.rawValue), message: "libcurl global init failed")
        }
        self.options = options
    }

    deinit {
        for handle in idle.withLock({ $0 }) { curl_easy_cleanup(handle) }
    }

    /// New connections opened so far (keep-alive reuse keeps this low): for counters and tests.
    public var connectionsOpened: Int64 { opened.withLock { $0 } }

    /// libcurl's version line, e.g. `libcurl/7.88.1 OpenSSL/3.0.11 ...`.
    public static var libcurlVersion: String { String(cString: ccurl_version()) }

    public func perform(_ request: TransportRequest) throws -> TransportResponse {
        let handle = try checkOut()
        var reusable = true
        defer { checkIn(handle, reusable: reusable) }

        let transfer = CurlTransfer(request: request, maxErrorBody: options.maxErrorBodyBytes)
        defer { transfer.close() }
        try transfer.openBody()

        var headerList: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(headerList) }
        var resolveList: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(resolveList) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { errorBuf in
            let userdata = Unmanaged.passUnretained(transfer).toOpaque()
            do {
                try configure(handle, request: request, transfer: transfer, userdata: userdata,
                              headerList: &headerList, resolveList: &resolveList, errorBuffer: errorBuf.baseAddress!)
            } catch {
                transfer.setupError = error as? TransportError ?? .other(code: -1, message: "\(error)")
                return CURLE_FAILED_INIT
            }
            let rc = curl_easy_perform(handle)
            // The handle must not keep pointers into this frame.
            _ = ccurl_setopt_ptr(handle, CURLOPT_ERRORBUFFER, nil)
            return rc
        }
        withExtendedLifetime(transfer) {}
        var connects = 0
        if ccurl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK, connects > 0 {
            opened.withLock { $0 += Int64(connects) }
        }

        if let setupError = transfer.setupError { reusable = false; throw setupError }
        guard code == CURLE_OK else {
            let fromBuffer = String(decoding: errorBuffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let detail = fromBuffer.isEmpty ? String(cString: curl_easy_strerror(code)) : fromBuffer
            throw Self.map(code, detail: detail, transfer: transfer)
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return TransportResponse(status: status, headers: transfer.headers, body: transfer.body,
                                 bodyBytes: transfer.delivered)
    }

    private func configure(_ h: UnsafeMutableRawPointer, request: TransportRequest, transfer: CurlTransfer,
                           userdata: UnsafeMutableRawPointer, headerList: inout UnsafeMutablePointer<curl_slist>?,
                           resolveList: inout UnsafeMutablePointer<curl_slist>?,
                           errorBuffer: UnsafeMutablePointer<CChar>) throws {
        func check(_ rc: CURLcode, _ what: String) throws {
            guard rc == CURLE_OK else {
                throw TransportError.other(code: Int(rc.rawValue), message: "curl setopt \(what): \(String(cString: curl_easy_strerror(rc)))")
            }
        }
        try check(ccurl_setopt_ptr(h, CURLOPT_ERRORBUFFER, errorBuffer), "errorbuffer")
        let urlRC = ccurl_setopt_string(h, CURLOPT_URL, request.url)
        guard urlRC == CURLE_OK, request.url.hasPrefix("http://") || request.url.hasPrefix("https://") else {
            throw TransportError.invalidURL(Self.redactedURL(request.url))
        }
        let shown = Self.redactedURL(request.url)
        switch CleartextPolicy.check(shown, resolver: options.resolver) {
        case .refused(let problem):
            throw TransportError.invalidURL("\(shown): \(problem)")
        case .pinned(let pinned):
            // Connect to the addresses judged loopback, not to a later lookup's answer.
            let host = CleartextPolicy.host(of: shown)!
            let port = CleartextPolicy.port(of: shown) ?? 80
            let entry = "\(host):\(port):" + pinned.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
            resolveList = curl_slist_append(nil, entry)
            try check(ccurl_setopt_ptr(h, CURLOPT_RESOLVE, resolveList), "resolve")
        case .allowed:
            break
        }
        try check(ccurl_setopt_string(h, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        try check(ccurl_setopt_long(h, CURLOPT_NOSIGNAL, 1), "nosignal")
        try check(ccurl_setopt_long(h, CURLOPT_FOLLOWLOCATION, 0), "followlocation")
        try check(ccurl_setopt_long(h, CURLOPT_TCP_KEEPALIVE, 1), "keepalive")
        try check(ccurl_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, Int(options.connectTimeout * 1000)), "connecttimeout")
        try check(ccurl_setopt_long(h, CURLOPT_LOW_SPEED_LIMIT, options.stallBytesPerSecond), "low_speed_limit")
        try check(ccurl_setopt_long(h, CURLOPT_LOW_SPEED_TIME, options.stallTimeout), "low_speed_time")
        try check(ccurl_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 1), "verifypeer")
        try check(ccurl_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 2), "verifyhost")
        if let caFile = options.caFile { try check(ccurl_setopt_string(h, CURLOPT_CAINFO, caFile), "cainfo") }
        try check(ccurl_setopt_string(h, CURLOPT_USERAGENT, options.userAgent), "useragent")
        if request.acceptsCompressedResponse, !request.headers.contains(where: { $0.0.lowercased() == "range" }) {
            // "": every coding this libcurl decodes (gzip, deflate, br, zstd as built). Body bytes
            // and the counters are then the decoded ones.
            try check(ccurl_setopt_string(h, CURLOPT_ACCEPT_ENCODING, ""), "accept_encoding")
        }

        try check(ccurl_setopt_header(h, curlHeaderCallback), "headerfunction")
        try check(ccurl_setopt_ptr(h, CURLOPT_HEADERDATA, userdata), "headerdata")
        if request.cancellation != nil {
            // The progress callback runs at least once a second, even on a stalled connection.
            try check(ccurl_setopt_long(h, CURLOPT_NOPROGRESS, 0), "noprogress")
            try check(ccurl_setopt_xferinfo(h, curlProgressCallback), "xferinfofunction")
            try check(ccurl_setopt_ptr(h, CURLOPT_XFERINFODATA, userdata), "xferinfodata")
        }
        try check(ccurl_setopt_write(h, curlWriteCallback), "writefunction")
        try check(ccurl_setopt_ptr(h, CURLOPT_WRITEDATA, userdata), "writedata")

        let method = request.method.uppercased()
        switch method {
        case "GET":
            try check(ccurl_setopt_long(h, CURLOPT_HTTPGET, 1), "httpget")
        case "HEAD":
            try check(ccurl_setopt_long(h, CURLOPT_NOBODY, 1), "nobody")
        default:
            // Every other method sends a body of known length (possibly 0, so Content-Length: 0 is sent,
            // which Google requires on body-less POSTs).
            try check(ccurl_setopt_long(h, CURLOPT_UPLOAD, 1), "upload")
            try check(ccurl_setopt_off(h, CURLOPT_INFILESIZE_LARGE, curl_off_t(transfer.bodyLength)), "infilesize")
            try check(ccurl_setopt_read(h, curlReadCallback), "readfunction")
            try check(ccurl_setopt_ptr(h, CURLOPT_READDATA, userdata), "readdata")
            try check(ccurl_setopt_long(h, CURLOPT_UPLOAD_BUFFERSIZE, 256 * 1024), "upload_buffersize")
            try check(ccurl_setopt_string(h, CURLOPT_CUSTOMREQUEST, method), "customrequest")
        }

        var list: UnsafeMutablePointer<curl_slist>? = nil
        for (name, value) in request.headers {
            guard !name.contains(where: { $0 == "\r" || $0 == "\n" || $0 == ":" }),
                  !value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                throw TransportError.other(code: -1, message: "invalid header \(name)")
            }
            list = curl_slist_append(list, "\(name): \(value)")
        }
        // No `Expect: 100-continue` round trip: the layer above retries a rejected upload anyway.
        list = curl_slist_append(list, "Expect:")
        headerList = list
        try check(ccurl_setopt_ptr(h, CURLOPT_HTTPHEADER, list), "httpheader")
    }

    private func checkOut() throws -> UnsafeMutableRawPointer {
        if let handle = idle.withLock({ $0.popLast() }) {
            curl_easy_reset(handle)
            return handle
        }
        guard let handle = curl_easy_init() else {
            throw TransportError.other(code: -1, message: "curl_easy_init failed")
        }
        return handle
    }

    private func checkIn(_ handle: UnsafeMutableRawPointer, reusable: Bool) {
        let kept = reusable && idle.withLock { pool -> Bool in
            guard pool.count < options.maxIdleHandles else { return false }
            pool.append(handle)
            return true
        }
        if !kept { curl_easy_cleanup(handle) }
    }

    static func map(_ code: CURLcode, detail: String, transfer: CurlTransfer) -> TransportError {
        if transfer.sinkAborted || transfer.request.cancellation?.isCancelled == true { return .aborted }
        if let readError = transfer.readError { return .other(code: Int(code.rawValue), message: readError) }
        if let sinkError = transfer.sinkError { return .other(code: Int(code.rawValue), message: sinkError) }
        return classify(code, detail: detail)
    }

    /// A libcurl result as a `TransportError`. Transient (retried above): resolution and connect
    /// failures, timeouts, and a connection that broke: send/receive errors, nothing received,
    /// a truncated body, HTTP/2 stream errors, and a TLS handshake that failed
    /// (CURLE_SSL_CONNECT_ERROR: typically a reset mid-handshake). Not transient: certificate and
    /// TLS configuration failures (`tls`), bad URLs.
    static func classify(_ code: CURLcode, detail: String) -> TransportError {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return .couldNotConnect(detail)
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut(detail)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_SEND_FAIL_REWIND, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2,
             CURLE_HTTP2_STREAM, CURLE_BAD_CONTENT_ENCODING:
            return .connectionLost(detail)
        case CURLE_SSL_CONNECT_ERROR:
            return .connectionLost("TLS handshake failed: \(detail)")
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE:
            return .tls(detail)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .invalidURL(detail)
        case CURLE_ABORTED_BY_CALLBACK, CURLE_WRITE_ERROR, CURLE_READ_ERROR:
            return .aborted
        default:
            return .other(code: Int(code.rawValue), message: detail)
        }
    }

    /// A URL without its query (which may carry an upload id), for error messages.
    static func redactedURL(_ url: String) -> String {
        String(url.prefix(while: { $0 != "?" }))
    }
}
