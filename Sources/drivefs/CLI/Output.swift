import Glibc

/// Unbuffered writes to the standard streams (the process may exec, fork or exit right after).
enum Output {
    static func standardOutput(_ text: String) { write(1, text) }
    static func standardError(_ text: String) { write(2, text) }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            bytes = bytes.dropFirst(n)
        }
    }
}
