import Glibc

/// The kernel's size protocol for `getxattr` and `listxattr`, decided once for the bridge: a
/// request of size 0 asks for the length; a buffer too small for the answer gets `ERANGE`;
/// otherwise the bytes.
public enum ExtendedAttributeReply: Equatable, Sendable {
    /// Answer with `fuse_reply_xattr(length)`.
    case length(Int)
    /// Answer with `fuse_reply_buf(bytes)`.
    case bytes([UInt8])
    case failure(FilesystemError)

    public init(_ answer: [UInt8], bufferSize: Int) {
        if bufferSize == 0 {
            self = .length(answer.count)
        } else if answer.count > bufferSize {
            self = .failure(FilesystemError(errno: ERANGE))
        } else {
            self = .bytes(answer)
        }
    }

    /// `listxattr`'s encoding: each name followed by a NUL.
    public static func encodeNames(_ names: [String]) -> [UInt8] {
        names.flatMap { Array($0.utf8) + [0] }
    }
}
