import DriveSupport
import Foundation

extension DriveAPI {
    /// Downloads bytes `[offset, offset + length)` of a binary file (to its end when `length` is nil)
    /// into `sink`, and returns how many bytes were delivered.
    ///
    /// - A transfer cut mid-body is resumed with a `Range` from the first byte not yet received,
    ///   so the sink sees every byte exactly once, in order.
    /// - A range starting at or past the end (416, e.g. any range on an empty file) delivers 0 bytes.
    /// - `.memory` sinks are not accepted (use `downloadData`); `.fileDescriptor(fd, base)` receives
    ///   byte `offset + k` at file position `base + k`; a `.callback` returning false cancels
    ///   (`DriveError.cancelled`).
    @discardableResult
    public func download(_ id: String, offset: Int64 = 0, length: Int64? = nil, to sink: ResponseSink) throws -> Int64 {
        guard offset >= 0, (length ?? 0) >= 0 else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "invalidRange", message: "a download range must not be negative"))
        }
        if length == 0 { return 0 }
        let received = Locked<Int64>(0)
        let writeError = Locked<String?>(nil)
        let counting: ResponseSink
        switch sink {
        case .memory:
            throw DriveError.malformedResponse("download needs a file or callback sink (use downloadData)")
        case .fileDescriptor(let fd, let base):
            counting = .callback { chunk in
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
                guard deliver(chunk) else { return false }
                received.withLock { $0 += Int64(chunk.count) }
                return true
            }
        }
        let response: TransportResponse
        do {
            response = try executor.execute("files.get.media", accept: [416]) { _ in
                let start = offset + received.withLock { $0 }
                let range = length.map { "bytes=\(start)-\(offset + $0 - 1)" } ?? "bytes=\(start)-"
                return TransportRequest(method: "GET", url: apiURL(Self.filePath(id), [("alt", "media")]),
                                        headers: [("Range", range)], sink: counting)
            }
        } catch DriveError.cancelled {
            if let reason = writeError.withLock({ $0 }) {
                throw DriveError.transport(.other(code: -1, message: "cannot write the download: \(reason)"))
            }
            throw DriveError.cancelled
        }
        // 416: the range starts at or past the end; nothing (more) to deliver.
        _ = response
        return received.withLock { $0 }
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
