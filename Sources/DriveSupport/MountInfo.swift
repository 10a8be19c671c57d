/// The kernel's mount table as `/proc/self/mountinfo` gives it, one `Entry` a line:
/// `36 35 0:45 / /mnt/point rw,nosuid shared:1 - fuse.drivefs drivefs rw,user_id=0`.
public enum MountInfo {
    public struct Entry: Equatable, Sendable {
        /// The device's major and minor numbers (field 3); FUSE mounts have major 0.
        public let major: UInt32
        public let minor: UInt32
        /// Where it is mounted (field 5, its octal escapes decoded).
        public let mountPoint: String
        /// The filesystem type (the first field after ` - `): `fuse`, `fuse.drivefs`, `ext4`, ...
        public let type: String

        public init(major: UInt32, minor: UInt32, mountPoint: String, type: String) {
            self.major = major
            self.minor = minor
            self.mountPoint = mountPoint
            self.type = type
        }

        /// Whether it is a FUSE mount (`fuse`, or `fuse.` and a subtype; not `fuseblk`).
        public var isFuse: Bool { type == "fuse" || type.hasPrefix("fuse.") }
    }

    /// The entries of `text` (lines it cannot read are left out), in its order: the newest mount last.
    public static func entries(_ text: String) -> [Entry] {
        var out: [Entry] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash > 4, dash + 1 < fields.count else { continue }
            let device = fields[2].split(separator: ":")
            guard device.count == 2, let major = UInt32(device[0]), let minor = UInt32(device[1]) else { continue }
            out.append(Entry(major: major, minor: minor, mountPoint: unescaped(fields[4]), type: String(fields[dash + 1])))
        }
        return out
    }

    /// This process's mount table (empty when it cannot be read).
    public static func current() -> [Entry] {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
        return entries(text)
    }

    /// mountinfo writes space, tab, newline and backslash as three octal digits after a backslash.
    public static func unescaped(_ field: Substring) -> String {
        let raw = Array(field.utf8)
        var bytes: [UInt8] = []
        var i = 0
        while i < raw.count {
            if raw[i] == UInt8(ascii: "\\"), i + 4 <= raw.count,
               let value = UInt8(String(decoding: raw[(i + 1)..<(i + 4)], as: UTF8.self), radix: 8) {
                bytes.append(value)
                i += 4
            } else {
                bytes.append(raw[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
