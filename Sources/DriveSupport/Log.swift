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
/// Every message is escaped in one place (`escaped`): its control characters (a Drive name may
/// hold a newline, a carriage return or a terminal escape) are written as `\n`, `\r`, `\t` or
/// `\u{XX}`, so no message can forge a line of its own or rewrite one on a terminal.
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
            // Never through a symbolic link (a link planted in a shared directory would send the
            // daemon's lines into a file of the planter's choosing), and only into a regular file.
            fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
            if fd < 0 { throw LogFileError(path: path, errno: errno) }
            var info = stat()
            if fstat(fd, &info) != 0 || info.st_mode & S_IFMT != S_IFREG {
                close(fd)
                throw LogFileError(path: path, errno: EINVAL)
            }
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
        let recorded = Problem(millis: Self.nowMillis(), level: level, area: area, message: Self.escaped(message))
        problem.withLock { $0 = recorded }
    }

    /// `text` with every control character (C0, DEL, C1) and line or paragraph separator written
    /// as an escape: one line whatever the text holds.
    public static func escaped(_ text: String) -> String {
        func needsEscape(_ s: Unicode.Scalar) -> Bool {
            switch s.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: return true
            default: return false
            }
        }
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else { result.append(scalar); continue }
            let escape: String
            switch scalar {
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            default: escape = "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
            result.append(contentsOf: escape.unicodeScalars)
        }
        return String(result)
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
        let line = "\(stamp) \(level.tag) \(Self.escaped(area)): \(Self.escaped(text))\n"
        // A log that cannot be written has nowhere to say so.
        try? SystemCall.writeAll(fd, Array(line.utf8))
    }
}
