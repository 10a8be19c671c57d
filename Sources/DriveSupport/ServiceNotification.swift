import Glibc

/// systemd's readiness protocol (`sd_notify(3)`) without libsystemd: one datagram such as
/// `READY=1` to the `AF_UNIX` socket named by `$NOTIFY_SOCKET` (a path, or `@name` for the
/// abstract namespace).
///
/// Contracts: without `$NOTIFY_SOCKET` (not started by systemd, or not `Type=notify`) it does
/// nothing and says so (`false`); a failed send is not an error for the caller (the service manager
/// will time the start out and say why), it is only reported. Never blocks.
public enum ServiceNotification {
    /// Sends `state` (newline-separated `KEY=VALUE` lines) to `socketName`; true when sent.
    @discardableResult
    public static func send(_ state: String, socketName: String?) -> Bool {
        guard let socketName, !socketName.isEmpty, socketName.hasPrefix("/") || socketName.hasPrefix("@") else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketName.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs room for its NUL; an abstract name is counted by length, without one.
        guard path.count < capacity || (abstract && path.count <= capacity) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.enumerated() { raw[i] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))

        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { raw in
                    try? SystemCall.retrying("sendto") {
                        sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length)
                    }
                }
            }
        }
        return sent == bytes.count
    }

    /// `send(state)` to `$NOTIFY_SOCKET` of `environment`.
    @discardableResult
    public static func send(_ state: String, environment: [String: String]) -> Bool {
        send(state, socketName: environment["NOTIFY_SOCKET"])
    }
}
