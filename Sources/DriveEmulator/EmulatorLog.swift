import Foundation

/// Lines to stderr. Never given tokens, `Authorization` values or query strings.
struct EmulatorLog: Sendable {
    var level: EmulatorLogLevel

    func info(_ message: String) { write(message) }

    func debug(_ message: @autoclosure () -> String) {
        guard level == .debug else { return }
        write(message())
    }

    private func write(_ message: String) {
        // One write(2) per line keeps lines from different threads whole.
        FileHandle.standardError.write(Data("drivefs-emulator: \(message)\n".utf8))
    }
}
