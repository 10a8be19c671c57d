import DriveSupport
import Foundation

extension DriveAPI {
    /// Downloads bytes `[offset, offset + length)` of a binary file (to its end when `length` is nil)
    /// into `sink`, and returns how many bytes were delivered.
    ///
    /// - A transfer cut mid-body is resumed with a `Range` from the first byte not yet received,
    ///   so the sink sees every byte exactly once, in order.
    /// - A request that starts past byte 0 (a ranged read, or the resume of a cut transfer) must be
    ///   answered 206 with a `Content-Range` that starts at that byte; anything else (e.g. a 200 with
    ///   the whole file) is refused before a byte reaches the sink: `DriveError.malformedResponse`.
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
        let received = Locked<Int64>(0)
        let writeError = Locked<String?>(nil)
        // The current attempt's first byte, and why its answer was refused (if it was).
        let attemptStart = Locked<Int64>(offset)
        let refusal = Locked<String?>(nil)
        let counting: ResponseSink
        switch sink {
        case .memory:
            throw DriveError.malformedResponse("download needs a file or callback sink (use downloadData)")
        case .fileDescriptor(let fd, let base):
            counting = .callback { chunk in
                if refusal.withLock({ $0 }) != nil { return false }
                let at = received.withLock { $0 }
                var done = 0
                while done < chunk.count {
                    let n = pwrite(fd, chunk.baseAddress! + done, chunk.count - done, off_t(base + at + Int64(done)))
                    if n < 0 {
                        if errno == EINTR { continue }
                        let reason = String(cString: strerror(errno))
                        writeError.withLock { $0 = reason }
                        return false
                    }
                    done += n
                }
                received.withLock { $0 += Int64(chunk.count) }
                return true
            }
        case .callback(let deliver):
            counting = .callback { chunk in
                if refusal.withLock({ $0 }) != nil { return false }
                guard deliver(chunk) else { return false }
                received.withLock { $0 += Int64(chunk.count) }
                return true
            }
        }
        let response: TransportResponse
        do {
            response = try executor.execute(method, accept: [416]) { _ in
                let start = offset + received.withLock { $0 }
                attemptStart.withLock { $0 = start }
                let range = length.map { "bytes=\(start)-\(offset + $0 - 1)" } ?? "bytes=\(start)-"
                var request = TransportRequest(method: "GET", url: apiURL(path, [("alt", "media")]),
                                               headers: [("Range", range)], sink: counting)
                request.onResponseHead = { status, headers in
                    if let problem = Self.rangeProblem(start: start, status: status, headers: headers) {
                        refusal.withLock { $0 = problem }
                    }
                }
                return request
            }
        } catch DriveError.cancelled {
            if let problem = refusal.withLock({ $0 }) { throw DriveError.malformedResponse(problem) }
            if let reason = writeError.withLock({ $0 }) {
                throw DriveError.transport(.other(code: -1, message: "cannot write the download: \(reason)"))
            }
            throw DriveError.cancelled
        }
        // 416: the range starts at or past the end; nothing (more) to deliver.
        if response.status != 416,
           let problem = Self.rangeProblem(start: attemptStart.withLock { $0 }, status: response.status, headers: response.headers) {
            throw DriveError.malformedResponse(problem)
        }
        return received.withLock { $0 }
    }

    /// Why an answer to a download starting at byte `start` cannot be appended to what the sink
    /// holds, or nil when it can. From byte 0 any 2xx will do; past it only a 206 whose
    /// `Content-Range: bytes a-b/N` has a == start.
    static func rangeProblem(start: Int64, status: Int, headers: [String: String]) -> String? {
        guard start > 0 else { return nil }
        guard status == 206 else {
            return "asked for bytes from \(start) and got HTTP \(status) instead of 206 Partial Content"
        }
        guard let range = headers["content-range"] else {
            return "asked for bytes from \(start) and got a 206 without Content-Range"
        }
        let spec = range.trimmingCharacters(in: .whitespaces)
        guard spec.hasPrefix("bytes "), let dash = spec.firstIndex(of: "-"),
              let first = Int64(spec[spec.index(spec.startIndex, offsetBy: 6)..<dash].trimmingCharacters(in: .whitespaces)) else {
            return "asked for bytes from \(start) and got an unreadable Content-Range '\(range)'"
        }
        guard first == start else {
            return "asked for bytes from \(start) and got Content-Range '\(range)'"
        }
        return nil
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
