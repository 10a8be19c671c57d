import CFuse
import DriveFSCore

/// The Swift state behind a FUSE session, reached from C callbacks through `fuse_req_userdata`
/// (and the `userdata` of init/destroy) as an unretained `Unmanaged` pointer. `FuseMount` keeps it
/// alive for the whole session.
final class FuseSessionContext: Sendable {
    let filesystem: any FilesystemOperations
    /// Every open file bypasses the page cache: each read reaches the filesystem.
    let directIO: Bool

    init(filesystem: any FilesystemOperations, directIO: Bool) {
        self.filesystem = filesystem
        self.directIO = directIO
    }

    var opaquePointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> FuseSessionContext? {
        guard let userdata else { return nil }
        return Unmanaged<FuseSessionContext>.fromOpaque(userdata).takeUnretainedValue()
    }

    static func from(request: fuse_req_t?) -> FuseSessionContext? { from(fuse_req_userdata(request)) }
}
