import Foundation
import DriveSupport
#if canImport(Glibc)
import Glibc
#endif

/// Why a socket operation gave up.
enum SocketError: Error, Equatable {
    /// The peer closed (or reset) the connection.
    case closed
    /// Nothing arrived within the allowed time.
    case timedOut
    case system(errno: Int32)
}

/// A connected stream socket with a read buffer, owned by exactly one connection thread.
///
/// Reads wait with `poll` so that a timeout (or `shutdown` from `HTTPServer.stop`) ends them;
/// writes use `MSG_NOSIGNAL` and a send timeout. Bytes read and written pass through the
/// connection's `BandwidthThrottle` when one is set (its own rate, the rate all connections share).
final class SocketStream {
    let fd: Int32
    /// Raw bytes moved, headers included.
    private(set) var bytesRead: Int64 = 0
    private(set) var bytesWritten: Int64 = 0
    var throttle: BandwidthThrottle?

    private var buffer: [UInt8]
    private var start = 0
    private var end = 0

    init(fd: Int32, bufferSize: Int, sendTimeoutSeconds: Int) {
        self.fd = fd
        self.buffer = [UInt8](repeating: 0, count: bufferSize)
        var tv = timeval(tv_sec: sendTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Bytes already received and not yet consumed.
    var buffered: ArraySlice<UInt8> { buffer[start..<end] }
    var bufferedCount: Int { end - start }
    var capacity: Int { buffer.count }

    func consume(_ n: Int) {
        start += min(n, end - start)
        if start == end { start = 0; end = 0 }
    }

    /// Waits until the socket is readable. False on timeout.
    func waitReadable(timeoutMs: Int32) throws -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        do throws(SystemCallError) {
            return try SystemCall.retrying("poll") { poll(&p, 1, timeoutMs) } > 0
        } catch {
            throw SocketError.system(errno: error.errno)
        }
    }

    /// Receives more bytes into the buffer (compacting it first). Throws `.closed` at end of
    /// stream, `.timedOut` when nothing arrives in time. Returns how many bytes arrived.
    @discardableResult
    func fill(timeoutMs: Int32) throws -> Int {
        if start > 0 {
            let n = end - start
            if n > 0 {
                buffer.withUnsafeMutableBytes { raw in
                    let base = raw.baseAddress!
                    memmove(base, base + start, n)
                }
            }
            start = 0
            end = n
        }
        guard end < buffer.count else { return 0 }
        let room = buffer.count - end
        let limit = throttle.map { min(room, $0.chunkSize) } ?? room
        let n = try buffer.withUnsafeMutableBytes { raw in
            try receive(into: UnsafeMutableRawBufferPointer(rebasing: raw[end..<(end + limit)]), timeoutMs: timeoutMs)
        }
        end += n
        return n
    }

    /// Reads up to `into.count` bytes: buffered ones first, then straight from the socket.
    /// Throws `.closed` at end of stream.
    func read(into target: UnsafeMutableRawBufferPointer, timeoutMs: Int32) throws -> Int {
        guard target.count > 0 else { return 0 }
        if end > start {
            let n = min(target.count, end - start)
            buffer.withUnsafeBytes { raw in
                target.baseAddress!.copyMemory(from: raw.baseAddress! + start, byteCount: n)
            }
            consume(n)
            return n
        }
        let limit = throttle.map { min(target.count, $0.chunkSize) } ?? target.count
        return try receive(into: UnsafeMutableRawBufferPointer(rebasing: target[0..<limit]), timeoutMs: timeoutMs)
    }

    private func receive(into target: UnsafeMutableRawBufferPointer, timeoutMs: Int32) throws -> Int {
        while true {
            guard try waitReadable(timeoutMs: timeoutMs) else { throw SocketError.timedOut }
            let n: Int
            do throws(SystemCallError) {
                n = try SystemCall.retrying("recv") { recv(fd, target.baseAddress, target.count, 0) }
            } catch {
                // Readable, yet nothing to read (a spurious wakeup): wait again.
                if error.errno == EAGAIN { continue }
                if error.errno == ECONNRESET || error.errno == EPIPE { throw SocketError.closed }
                throw SocketError.system(errno: error.errno)
            }
            if n == 0 { throw SocketError.closed }
            bytesRead += Int64(n)
            throttle?.pace(n)
            return n
        }
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    func write(_ string: String) throws {
        try write(Array(string.utf8))
    }

    /// Writes every byte or throws (`.closed` when the peer went away).
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            var piece = bytes.count - offset
            if let throttle { piece = min(piece, throttle.chunkSize) }
            let n: Int
            do throws(SystemCallError) {
                n = try SystemCall.retrying("send") { send(fd, bytes.baseAddress! + offset, piece, Int32(MSG_NOSIGNAL)) }
            } catch {
                if error.errno == EAGAIN || error.errno == EWOULDBLOCK { throw SocketError.timedOut }
                throw SocketError.closed
            }
            guard n > 0 else { throw SocketError.closed }
            offset += n
            bytesWritten += Int64(n)
            throttle?.pace(n)
        }
    }

    /// Ends the connection with a TCP reset (SO_LINGER 0), as a crashed or cut-off peer would.
    /// A reset drops whatever still sits in our send queue, so first wait (up to 2 s) until the
    /// peer has acknowledged every byte written: the client then sees exactly what was sent.
    func closeWithReset() {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ 2_000_000_000
        var pending: Int32 = 0
        while ioctl(fd, UInt(TIOCOUTQ), &pending) == 0, pending > 0, DispatchTime.now().uptimeNanoseconds < deadline {
            usleep(1_000)
        }
        var lin = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, socklen_t(MemoryLayout<linger>.size))
        _ = Glibc.close(fd)
    }

    /// An orderly close: our side shuts down writing, then the descriptor is closed.
    ///
    /// `lingering`: the peer may still be sending (a refused request, an unread body). Closing with
    /// unread input makes the kernel send a RST, which can destroy our answer before the client reads
    /// it; so read and discard for a while (up to 2 s, 8 MiB) until the peer closes its side. A peer
    /// slow to read our answer (a loaded machine) is waited for the whole time, not given up on at
    /// its first pause.
    func close(lingering: Bool = false) {
        _ = shutdown(fd, Int32(SHUT_WR))
        if lingering {
            throttle = nil
            let deadline = DispatchTime.now().uptimeNanoseconds &+ 2_000_000_000
            var discarded = 0
            var scratch = [UInt8](repeating: 0, count: 64 * 1024)
            while discarded < 8 << 20 {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { break }
                let left = Int32(max(1, min(2_000, (deadline - now) / 1_000_000)))
                guard (try? waitReadable(timeoutMs: left)) == true else { break }
                let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                discarded += n
            }
        }
        _ = Glibc.close(fd)
    }
}
