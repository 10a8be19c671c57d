import DriveSupport
import Foundation

extension DriveAPI {
    /// Downloads bytes `[offset, offset + length)` of a binary file (to its end when `length` is nil)
    /// into `sink`, and returns how many bytes were delivered.
    ///
    /// - A transfer cut mid-body is resumed with a `Range` from the first byte not yet received,
    ///   so the sink sees every byte exactly once, in order.
    /// - Answers are checked before a byte reaches the sink (`rangeCheck`): a 206 must cover exactly
    ///   the range asked (or stop where the file ends: a range clamped at the end, and then fewer
    ///   bytes are returned); a 200 only from byte 0 and not longer than asked; the file size every
    ///   answer states must agree across the attempts of one call. Otherwise
    ///   `DriveError.malformedResponse`.
    /// - The sink never receives more than `length` bytes, even from a server that sends more.
    /// - A range starting at or past the end (416, e.g. any range on an empty file) delivers 0 bytes.
    /// - `.memory` sinks are not accepted (use `downloadData`); `.fileDescriptor(fd, base)` receives
    ///   byte `offset + k` at file position `base + k`; a `.callback` returning false cancels
    ///   (`DriveError.cancelled`).
    @discardableResult
    public func download(_ id: String, offset: Int64 = 0, length: Int64? = nil, to sink: ResponseSink) throws -> Int64 {
        try download(id, revision: nil, offset: offset, length: length, to: sink)
    }

    /// `download` pinned to one revision (`revisions.get?alt=media`, counted as
    /// `revisions.get.media`) when `revision` is set, so bytes of different versions can never mix.
    @discardableResult
    public func download(_ id: String, revision: String?, offset: Int64 = 0, length: Int64? = nil,
                         to sink: ResponseSink) throws -> Int64 {
        let path = revision.map { Self.filePath(id) + "/revisions/" + URLBuilder.encode($0) } ?? Self.filePath(id)
        let method = revision == nil ? "files.get.media" : "revisions.get.media"
        guard offset >= 0, (length ?? 0) >= 0 else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "invalidRange", message: "a download range must not be negative"))
        }
        if length == 0 { return 0 }
        let askedEnd = length.map { offset + $0 - 1 }
        // Across attempts: bytes delivered, the file size answers gave, the current attempt's first
        // byte, why its answer was refused (if it was), and whether the asked length is complete.
        let state = Locked<DownloadState>(DownloadState(attemptStart: offset))
        let writeError = Locked<String?>(nil)
        /// The part of `chunk` the sink may still take (never more than asked); nil once refused.
        @Sendable func admit(_ chunk: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
            state.withLock { s in
                if s.refusal != nil { return nil }
                guard let length else { return chunk }
                let room = Int(max(0, min(Int64(chunk.count), length - s.received)))
                if room < chunk.count { s.complete = true }
                return UnsafeRawBufferPointer(rebasing: chunk[0..<room])
            }
        }
        let counting: ResponseSink
        switch sink {
        case .memory:
            throw DriveError.malformedResponse("download needs a file or callback sink (use downloadData)")
        case .fileDescriptor(let fd, let base):
            counting = .callback { chunk in
                guard let part = admit(chunk) else { return false }
                let at = state.withLock { $0.received }
                do throws(SystemCallError) { try SystemCall.writeAll(fd, part, at: base + at) } catch {
                    writeError.withLock { $0 = error.reason }
                    return false
                }
                return state.withLock { s in
                    s.received += Int64(part.count)
                    return !s.complete
                }
            }
        case .callback(let deliver):
            counting = .callback { chunk in
                guard let part = admit(chunk) else { return false }
                guard part.isEmpty || deliver(part) else { return false }
                return state.withLock { s in
                    s.received += Int64(part.count)
                    return !s.complete
                }
            }
        }
        /// Checks an answer's head against what this attempt asked; records the file size it states.
        @Sendable func check(start: Int64, status: Int, headers: [String: String]) -> String? {
            state.withLock { s in
                switch Self.rangeCheck(start: start, end: askedEnd, status: status, headers: headers, knownTotal: s.total) {
                case .failure(let problem):
                    s.refusal = s.refusal ?? problem.message
                    return s.refusal
                case .success(let total):
                    if let total { s.total = total }
                    return nil
                }
            }
        }
        let response: TransportResponse
        do {
            response = try executor.execute(method, accept: [416]) { _ in
                let start = offset + state.withLock { $0.received }
                state.withLock { $0.attemptStart = start }
                let range = askedEnd.map { "bytes=\(start)-\($0)" } ?? "bytes=\(start)-"
                var request = TransportRequest(method: "GET", url: apiURL(path, [("alt", "media")] + (revision == nil ? scope.fileQuery : [])),
                                               headers: [("Range", range)], sink: counting)
                // Byte ranges must be exact: no content coding on media.
                request.acceptsCompressedResponse = false
                request.onResponseHead = { status, headers in _ = check(start: start, status: status, headers: headers) }
                return request
            }
        } catch DriveError.cancelled {
            let s = state.withLock { $0 }
            if let problem = s.refusal { throw DriveError.malformedResponse(problem) }
            if let reason = writeError.withLock({ $0 }) {
                throw DriveError.transport(.other(code: -1, message: "cannot write the download: \(reason)"))
            }
            // The server sent more than asked: the sink has every byte it asked for.
            if s.complete { return s.received }
            throw DriveError.cancelled
        }
        let s = state.withLock { $0 }
        if response.status == 416 {
            // The range starts at or past the end: nothing (more) to deliver, unless the size it
            // states contradicts an earlier answer (the file changed between attempts).
            if let known = s.total, let total = Self.contentRange(response.headers["content-range"])?.total,
               total != known {
                throw DriveError.malformedResponse("a resumed download met a file of \(total) bytes, earlier \(known): the file changed")
            }
        } else if let problem = check(start: s.attemptStart, status: response.status, headers: response.headers) {
            throw DriveError.malformedResponse(problem)
        }
        return state.withLock { $0.received }
    }

    struct DownloadState: Sendable {
        var received: Int64 = 0
        var total: Int64?
        var attemptStart: Int64
        var refusal: String?
        var complete = false
    }

    struct RangeProblem: Error, Equatable {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// Whether an answer to `Range: bytes=start-end` (`end` nil: to the end of the file) can be
    /// appended to what the sink holds; on success, the file size the answer states (if any).
    ///
    /// - 206: `Content-Range: bytes a-b/N` with a == start; b == end, or b < end only where the file
    ///   ends (b == N - 1: a range clamped at the end); without `end`, b == N - 1.
    /// - 200 (the whole file): only from byte 0, and not longer (`Content-Length`) than asked.
    /// - Other 2xx: only from byte 0 (nothing to check).
    /// - In every case N must equal `knownTotal` (what an earlier attempt of the same call said):
    ///   otherwise the file changed between attempts, and its bytes must not be mixed.
    static func rangeCheck(start: Int64, end: Int64?, status: Int, headers: [String: String],
                           knownTotal: Int64?) -> Result<Int64?, RangeProblem> {
        let asked = "bytes \(start)-\(end.map(String.init) ?? "")"
        func sameFile(_ total: Int64?) -> Result<Int64?, RangeProblem> {
            if let total, let knownTotal, total != knownTotal {
                return .failure(RangeProblem("asked for \(asked) of a file of \(knownTotal) bytes, and an answer says \(total): the file changed"))
            }
            return .success(total ?? knownTotal)
        }
        switch status {
        case 206:
            guard let header = headers["content-range"] else {
                return .failure(RangeProblem("asked for \(asked) and got a 206 without Content-Range"))
            }
            guard let range = contentRange(header), let first = range.first, let last = range.last, last >= first else {
                return .failure(RangeProblem("asked for \(asked) and got an unreadable Content-Range '\(header)'"))
            }
            if let total = range.total, last >= total {
                return .failure(RangeProblem("asked for \(asked) and got Content-Range '\(header)', past the file's end"))
            }
            guard first == start else {
                return .failure(RangeProblem("asked for \(asked) and got Content-Range '\(header)'"))
            }
            let endsAtFileEnd = range.total.map { last == $0 - 1 } ?? false
            if let end {
                guard last == end || (last < end && endsAtFileEnd) else {
                    return .failure(RangeProblem("asked for \(asked) and got Content-Range '\(header)', which ends elsewhere"))
                }
            } else if range.total != nil && !endsAtFileEnd {
                return .failure(RangeProblem("asked for \(asked) and got Content-Range '\(header)', which stops before the file's end"))
            }
            return sameFile(range.total)
        case 200:
            guard start == 0 else {
                return .failure(RangeProblem("asked for \(asked) and got HTTP 200 instead of 206 Partial Content"))
            }
            let length = headers["content-length"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
            if let end, let length, length > end + 1 {
                return .failure(RangeProblem("asked for \(asked) and got the whole file (HTTP 200, \(length) bytes)"))
            }
            return sameFile(length)
        default:
            guard start == 0 else {
                return .failure(RangeProblem("asked for \(asked) and got HTTP \(status) instead of 206 Partial Content"))
            }
            return .success(knownTotal)
        }
    }

    /// `bytes a-b/N`, `bytes a-b/*` or `bytes */N`; nil if unreadable.
    static func contentRange(_ header: String?) -> (first: Int64?, last: Int64?, total: Int64?)? {
        guard let header else { return nil }
        let spec = header.trimmingCharacters(in: .whitespaces)
        guard spec.lowercased().hasPrefix("bytes "), let slash = spec.lastIndex(of: "/") else { return nil }
        let rangePart = spec[spec.index(spec.startIndex, offsetBy: 6)..<slash].trimmingCharacters(in: .whitespaces)
        let totalPart = spec[spec.index(after: slash)...].trimmingCharacters(in: .whitespaces)
        var total: Int64?
        if totalPart != "*" {
            guard let n = Int64(totalPart), n >= 0 else { return nil }
            total = n
        }
        if rangePart == "*" { return (nil, nil, total) }
        let bounds = rangePart.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0 else { return nil }
        return (first, last, total)
    }

    /// Downloads a range into memory (small reads).
    public func downloadData(_ id: String, offset: Int64 = 0, length: Int64? = nil) throws -> [UInt8] {
        let buffer = Locked<[UInt8]>([])
        try download(id, offset: offset, length: length, to: .callback { chunk in
            buffer.withLock { $0.append(contentsOf: chunk) }
            return true
        })
        return buffer.withLock { $0 }
    }

    /// files.export of a Google Workspace document (at most 10 MB; no ranges, so a failed transfer
    /// starts over: the result is collected in memory).
    public func export(_ id: String, mimeType: String) throws -> [UInt8] {
        let url = apiURL(Self.filePath(id) + "/export", [("mimeType", mimeType)])
        return try executor.execute("files.export", TransportRequest(method: "GET", url: url)).body
    }
}
