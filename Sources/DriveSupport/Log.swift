import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's one logging facade: a level threshold and one destination (standard error, or a
/// file opened for appending). Used at decision points (a retry, a rate-limit slowdown, a token
/// refresh, an error turned into an errno), never with a token or a secret in the message.
///
/// Lines look like `2026-12-01T19:49:34.123Z WARN  client: files.list: retry 2 after HTTP 503 (…)`.
/// Writes are single `write(2)` calls of whole lines, so lines from many threads never interleave.
public final class Log: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case debug = 0, info, warning, error

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }

        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        public var description: String {
            switch self {
            case .debug: return "debug"
            case .info: return "info"
            case .warning: return "warning"
            case .error: return "error"
            }
        }

        var tag: String {
            switch self {
            case .debug: return "DEBUG"
            case .info: return "INFO "
            case .warning: return "WARN "
            case .error: return "ERROR"
            }
        }
    }

    private struct Destination: Sendable {
        var level: Level
        var descriptor: Int32
        var ownsDescriptor: Bool
    }

    private let destination: Locked<Destination>
    /// Messages already said once (for `once`), bounded so that a flood cannot grow memory.
    private let said = Locked<Set<String>>([])

    /// The last warning or error given (written or not: the threshold may hide it, and `once`
    /// writes a repeated message only the first time), for `drivefs status`.
    public struct Problem: Sendable, Equatable {
        /// Milliseconds since the epoch.
        public let millis: Int64
        public let level: Level
        public let area: String
        public let message: String
    }
    private let problem = Locked<Problem?>(nil)
    public var lastProblem: Problem? { problem.withLock { $0 } }

    /// Standard error at `.warning`: what a process logs before it is configured.
    public static let shared = Log(level: .warning, descriptor: 2)

    public init(level: Level, descriptor: Int32) {
        destination = Locked(Destination(level: level, descriptor: descriptor, ownsDescriptor: false))
    }

    /// Sends every later line to `path` (created with mode 0600, appended to), or standard error when nil.
    public func configure(level: Level, path: String?) throws {
        var fd: Int32 = 2
        if let path {
            fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            if fd < 0 { throw LogFileError(path: path, errno: errno) }
        }
        let old = destination.withLock { d -> Destination in
            let old = d
            d = Destination(level: level, descriptor: fd, ownsDescriptor: path != nil)
            return old
        }
        if old.ownsDescriptor { close(old.descriptor) }
    }

    public struct LogFileError: Error, CustomStringConvertible {
        public let path: String
        public let errno: Int32
        public var description: String { "cannot open the log file '\(path)': \(String(cString: strerror(errno)))" }
    }

    public var level: Level { destination.withLock { $0.level } }

    public func isEnabled(_ level: Level) -> Bool { level >= self.level }

    public func debug(_ area: String, _ message: @autoclosure () -> String) { write(.debug, area, message) }
    public func info(_ area: String, _ message: @autoclosure () -> String) { write(.info, area, message) }
    public func warning(_ area: String, _ message: @autoclosure () -> String) { write(.warning, area, message) }
    public func error(_ area: String, _ message: @autoclosure () -> String) { write(.error, area, message) }

    /// Logs `message` the first time it is given (per process), at `level`: for conditions that
    /// would otherwise repeat on every call (a revoked grant).
    public func once(_ level: Level, _ area: String, _ message: String) {
        note(level, area, message)
        let first = said.withLock { set -> Bool in
            if set.contains(message) { return false }
            if set.count < 1024 { set.insert(message) }
            return true
        }
        if first { write(level, area, { message }, noted: true) }
    }

    private func note(_ level: Level, _ area: String, _ message: String) {
        guard level >= .warning else { return }
        let recorded = Problem(millis: Self.nowMillis(), level: level, area: area, message: message.replacingOccurrences(of: "\n", with: " "))
        problem.withLock { $0 = recorded }
    }

    private static func nowMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    private func write(_ level: Level, _ area: String, _ message: () -> String, noted: Bool = false) {
        let (threshold, fd) = destination.withLock { ($0.level, $0.descriptor) }
        let shown = level >= threshold
        // A debug or info message below the threshold is never rendered.
        guard shown || (level >= .warning && !noted) else { return }
        let text = message()
        if !noted { note(level, area, text) }
        guard shown else { return }
        let stamp = RFC3339.format(millis: Self.nowMillis())
        var line = "\(stamp) \(level.tag) \(area): \(text)"
        line = line.replacingOccurrences(of: "\n", with: " ") + "\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                done += n
            }
        }
    }
}
