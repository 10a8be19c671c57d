import CFuse
import DriveFSCore
import DriveSupport
import Glibc

// libfuse's low-level callbacks. Rules every function here keeps:
// - exactly one reply per request (forget/forget_multi: `fuse_reply_none`), sent by the `Reply`
//   the callback hands the filesystem: at once, or later from one of the filesystem's threads
//   (libfuse allows a reply from any thread once the callback has returned);
// - no Swift error escapes: a `FilesystemError` becomes `fuse_reply_err(errno)`;
// - a reply that fails (the request was interrupted) undoes what the reply would have handed the
//   kernel (a lookup count, an open handle), as fuse_lowlevel.h asks;
// - requests that may wait on the network register an interrupt callback, so Ctrl-C on the
//   waiting process cancels the Drive transfer behind it;
// - they are plain functions (not closures in main.swift) because libfuse calls them on its own
//   worker threads.

enum LowLevelCallbacks {
    /// The operation table passed to `fuse_session_new`. Operations left nil get ENOSYS from libfuse.
    /// Every write operation is set (a read-only mount answers EROFS from the kernel first, or from
    /// the filesystem); extended attributes too: an ENOSYS there would turn into EOPNOTSUPP for
    /// the rest of the mount.
    static func operations() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = drivefsInit
        ops.destroy = drivefsDestroy
        ops.lookup = drivefsLookup
        ops.forget = drivefsForget
        ops.forget_multi = drivefsForgetMulti
        ops.getattr = drivefsGetattr
        ops.readlink = drivefsReadlink
        ops.opendir = drivefsOpendir
        ops.readdir = drivefsReaddir
        ops.readdirplus = drivefsReaddirplus
        ops.releasedir = drivefsReleasedir
        ops.open = drivefsOpen
        ops.read = drivefsRead
        ops.release = drivefsRelease
        ops.statfs = drivefsStatfs
        ops.getxattr = drivefsGetxattr
        ops.listxattr = drivefsListxattr
        ops.setxattr = drivefsSetxattr
        ops.removexattr = drivefsRemovexattr
        ops.create = drivefsCreate
        ops.mknod = drivefsMknod
        ops.mkdir = drivefsMkdir
        ops.symlink = drivefsSymlink
        ops.link = drivefsLink
        ops.unlink = drivefsUnlink
        ops.rmdir = drivefsRmdir
        ops.rename = drivefsRename
        ops.setattr = drivefsSetattr
        ops.write = drivefsWrite
        ops.flush = drivefsFlush
        ops.fsync = drivefsFsync
        ops.fsyncdir = drivefsFsyncdir
        return ops
    }
}

/// A `fuse_req_t` that a reply closure carries to whichever thread answers. Safe to send: libfuse
/// accepts the one reply from any thread, and `Reply` guarantees there is exactly one.
struct RequestHandle: @unchecked Sendable {  // @unchecked: libfuse takes the one reply from any thread (see above)
    let raw: fuse_req_t?
}

private func replyError(_ request: fuse_req_t?, _ errno: Int32) { _ = fuse_reply_err(request, errno) }

/// A `Reply` for `request` whose success is sent by `send` (which returns libfuse's result: non-zero
/// when the kernel no longer waits, so the callback can undo). With `interruptible`, an interrupt
/// from the kernel cancels the reply's `cancellation` flag until the reply is sent.
private func makeReply<Value: Sendable>(
    _ request: fuse_req_t?, _ context: FuseSessionContext, interruptible: Bool,
    onFailure: @escaping @Sendable (fuse_req_t?, FilesystemError) -> Void = { replyError($0, $1.errno) },
    _ send: @escaping @Sendable (fuse_req_t?, Value) -> Void
) -> Reply<Value> {
    let handle = RequestHandle(raw: request)
    let caller = fuse_req_ctx(request).map { RequestCaller(userID: $0.pointee.uid, groupID: $0.pointee.gid) }
    guard interruptible else {
        return Reply(caller: caller) { result in
            switch result {
            case .success(let value): send(handle.raw, value)
            case .failure(let error): onFailure(handle.raw, error)
            }
        }
    }
    let flag = CancellationFlag()
    let id = context.interrupts.register(flag)
    let interrupts = context.interrupts
    let reply = Reply<Value>(cancellation: flag, caller: caller) { result in
        interrupts.remove(id)
        switch result {
        case .success(let value): send(handle.raw, value)
        case .failure(let error): onFailure(handle.raw, error)
        }
    }
    // Calls drivefsInterrupt at once if the request was interrupted already.
    fuse_req_interrupt_func(request, drivefsInterrupt, UnsafeMutableRawPointer(bitPattern: id))
    return reply
}

func drivefsInterrupt(_ request: fuse_req_t?, _ data: UnsafeMutableRawPointer?) {
    guard let context = FuseSessionContext.from(request: request) else { return }
    context.interrupts.interrupt(UInt(bitPattern: data))
}

/// The session is live (after daemonizing): say what the kernel should do, then start the
/// filesystem's threads.
func drivefsInit(_ userdata: UnsafeMutableRawPointer?, _ connection: UnsafeMutablePointer<fuse_conn_info>?) {
    guard let context = FuseSessionContext.from(userdata) else { return }
    if let connection {
        let capable = connection.pointee.capable
        var want = connection.pointee.want
        // Reads may be sent in parallel and out of order; lookups and listings of one folder too.
        // readdirplus always (attributes come with every listing: `ls -l` costs no lookups);
        // replies from the cache file are spliced when the kernel can.
        // O_TRUNC comes with the open (not as a separate truncate first), so a file opened to be
        // rewritten is never fetched or uploaded twice.
        for flag in [FUSE_CAP_ASYNC_READ, FUSE_CAP_PARALLEL_DIROPS, FUSE_CAP_READDIRPLUS, FUSE_CAP_SPLICE_WRITE,
                     FUSE_CAP_SPLICE_MOVE, FUSE_CAP_ATOMIC_O_TRUNC] where capable & UInt32(flag) != 0 {
            want |= UInt32(flag)
        }
        // The filesystem decides when content changed (kernel notifications); mtime alone must not.
        want &= ~UInt32(FUSE_CAP_AUTO_INVAL_DATA)
        // Adaptive readdirplus would fall back to plain readdir plus a lookup per name.
        want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO)
        connection.pointee.want = want
        connection.pointee.max_readahead = min(connection.pointee.max_readahead, context.maxReadahead)
        connection.pointee.max_background = 64
        connection.pointee.congestion_threshold = 48
    }
    context.filesystem.start(notifier: context.notifier)
}

/// Unmount: the kernel sends no forgets, so every lookup count drops to zero here.
func drivefsDestroy(_ userdata: UnsafeMutableRawPointer?) {
    guard let context = FuseSessionContext.from(userdata) else { return }
    context.notifier.attach(nil)
    context.filesystem.forgetAll()
    context.filesystem.stop()
}

private func entryParam(_ attributes: FileAttributes, _ fs: any FilesystemOperations) -> fuse_entry_param {
    var entry = fuse_entry_param()
    entry.ino = attributes.inode.rawValue
    entry.generation = 1
    entry.attr = StatConversion.stat(attributes)
    entry.attr_timeout = fs.attributeTimeout
    entry.entry_timeout = fs.entryTimeout
    return entry
}

func drivefsLookup(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    let fs = context.filesystem
    // Names that are not UTF-8 cannot exist in this tree (Drive names are Unicode).
    guard let name, let text = String(validatingCString: name) else { return replyError(request, ENOENT) }
    let negativeTimeout = fs.negativeEntryTimeout
    let reply = makeReply(request, context, interruptible: true, onFailure: { request, error in
        guard error == .notFound, negativeTimeout > 0 else { return replyError(request, error.errno) }
        // A name known not to exist: an entry with inode 0 lets the kernel remember that for a while.
        var entry = fuse_entry_param()
        entry.entry_timeout = negativeTimeout
        _ = fuse_reply_entry(request, &entry)
    }) { (request, attributes: FileAttributes) in
        var entry = entryParam(attributes, fs)
        if fuse_reply_entry(request, &entry) != 0 { fs.forget(attributes.inode, count: 1) }
    }
    fs.lookup(parent: Inode(parent), name: text, reply: reply)
}

func drivefsForget(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ count: UInt64) {
    FuseSessionContext.from(request: request)?.filesystem.forget(Inode(inode), count: count)
    fuse_reply_none(request)
}

func drivefsForgetMulti(_ request: fuse_req_t?, _ count: Int, _ forgets: UnsafeMutablePointer<fuse_forget_data>?) {
    if let fs = FuseSessionContext.from(request: request)?.filesystem, let forgets {
        for item in UnsafeBufferPointer(start: forgets, count: count) {
            fs.forget(Inode(item.ino), count: item.nlookup)
        }
    }
    fuse_reply_none(request)
}

func drivefsGetattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    let fs = context.filesystem
    let timeout = fs.attributeTimeout
    fs.attributes(of: Inode(inode), reply: makeReply(request, context, interruptible: true) { request, attributes in
        var st = StatConversion.stat(attributes)
        _ = fuse_reply_attr(request, &st, timeout)
    })
}

func drivefsReadlink(_ request: fuse_req_t?, _ inode: fuse_ino_t) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    context.filesystem.readLink(Inode(inode), reply: makeReply(request, context, interruptible: true) { request, target in
        _ = target.withCString { fuse_reply_readlink(request, $0) }
    })
}

func drivefsOpendir(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request), let info else { return replyError(request, EIO) }
    let fs = context.filesystem
    // fuse_file_info is copied: the caller's struct lives only until the callback returns.
    let flags = FileInfoCopy(info.pointee)
    fs.openDirectory(Inode(inode), reply: makeReply(request, context, interruptible: true) { request, handle in
        var copy = flags.value
        copy.fh = handle
        if fuse_reply_open(request, &copy) != 0 { fs.releaseDirectory(Inode(inode), handle: handle) }
    })
}

/// A `fuse_file_info` carried to the replying thread (a plain C struct; its pointers are unused).
struct FileInfoCopy: Sendable {
    let value: fuse_file_info
    init(_ value: fuse_file_info) { self.value = value }
}

/// The reply buffer of one readdir(plus) request: entries are encoded with libfuse's own functions
/// as they are added, so nothing is computed for an entry that does not fit.
/// @unchecked Sendable: filled by one thread at a time: the reply's, after the callback handed it over
final class FuseDirectoryBuffer: DirectoryBuffer, @unchecked Sendable {
    // @unchecked: used by one thread at a time (the filesystem fills it, then the same or a later
    // thread sends it), as the DirectoryBuffer contract says.
    let request: RequestHandle
    let capacity: Int
    let plus: Bool
    let buffer: UnsafeMutablePointer<CChar>
    var used = 0
    /// Inodes handed out with attributes (each counted as one lookup by the filesystem).
    var counted: [Inode] = []
    let attributeTimeout: Double
    let entryTimeout: Double

    init(request: RequestHandle, capacity: Int, plus: Bool, attributeTimeout: Double, entryTimeout: Double) {
        self.request = request
        self.capacity = max(0, capacity)
        self.plus = plus
        self.buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, capacity))
        self.attributeTimeout = attributeTimeout
        self.entryTimeout = entryTimeout
    }

    deinit { buffer.deallocate() }

    func add(_ entry: DirectoryEntry, attributes: FileAttributes?) -> Bool {
        let room = capacity - used
        guard room > 0 else { return false }
        let needed: Int
        if plus {
            var param = fuse_entry_param()
            if let attributes {
                param.ino = attributes.inode.rawValue
                param.generation = 1
                param.attr = StatConversion.stat(attributes)
                param.attr_timeout = attributeTimeout
                param.entry_timeout = entryTimeout
            } else {
                // `.` and `..`: ino 0 tells the kernel not to make a dentry (and count nothing).
                param.attr = StatConversion.stat(entry)
            }
            needed = fuse_add_direntry_plus(request.raw, buffer + used, room, entry.name, &param, off_t(entry.nextOffset))
        } else {
            var st = StatConversion.stat(entry)
            needed = fuse_add_direntry(request.raw, buffer + used, room, entry.name, &st, off_t(entry.nextOffset))
        }
        // fuse_add_direntry* return the space the entry needs and write only when that fits.
        guard needed <= room else { return false }
        used += needed
        if plus, let attributes { counted.append(attributes.inode) }
        return true
    }
}

private func readDirectory(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
                           _ info: UnsafeMutablePointer<fuse_file_info>?, plus: Bool) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    let fs = context.filesystem
    let buffer = FuseDirectoryBuffer(request: RequestHandle(raw: request), capacity: size, plus: plus,
                                     attributeTimeout: fs.attributeTimeout, entryTimeout: fs.entryTimeout)
    let reply = makeReply(request, context, interruptible: true) { (request, _: Void) in
        if fuse_reply_buf(request, buffer.buffer, buffer.used) != 0 {
            for inode in buffer.counted { fs.forget(inode, count: 1) }
        }
    }
    // A failed listing gives back what was counted for entries that will never reach the kernel.
    let guarded = Reply<Void>(cancellation: reply.cancellation) { result in
        if case .failure = result { for inode in buffer.counted { fs.forget(inode, count: 1) } }
        reply.complete(result)
    }
    fs.readDirectory(Inode(inode), handle: info.pointee.fh, after: Int64(offset), plus: plus, into: buffer, reply: guarded)
}

func drivefsReaddir(
    _ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    readDirectory(request, inode, size, offset, info, plus: false)
}

func drivefsReaddirplus(
    _ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    readDirectory(request, inode, size, offset, info, plus: true)
}

func drivefsReleasedir(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    if let fs = FuseSessionContext.from(request: request)?.filesystem, let info {
        fs.releaseDirectory(Inode(inode), handle: info.pointee.fh)
    }
    replyError(request, 0)
}

func drivefsOpen(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request), let info else { return replyError(request, EIO) }
    let fs = context.filesystem
    let directIO = context.directIO
    let copy = FileInfoCopy(info.pointee)
    fs.open(Inode(inode), flags: info.pointee.flags, reply: makeReply(request, context, interruptible: true) { request, opened in
        var fi = copy.value
        fi.fh = opened.handle
        if directIO || opened.directIO {
            cfuse_fi_set_direct_io(&fi, 1)
        } else {
            cfuse_fi_set_keep_cache(&fi, opened.keepCache ? 1 : 0)
        }
        if fuse_reply_open(request, &fi) != 0 { fs.release(Inode(inode), handle: opened.handle) }
    })
}

func drivefsRead(
    _ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    context.filesystem.read(Inode(inode), handle: info.pointee.fh, offset: Int64(offset), size: size,
                            reply: makeReply(request, context, interruptible: true) { request, data in
        switch data {
        case .bytes(let bytes):
            bytes.withUnsafeBytes { raw in
                _ = fuse_reply_buf(request, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
            }
        case .file(let descriptor, let at, let length):
            _ = cfuse_reply_fd(request, descriptor, off_t(at), length)
        }
    })
}

func drivefsRelease(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    if let fs = FuseSessionContext.from(request: request)?.filesystem, let info {
        fs.release(Inode(inode), handle: info.pointee.fh)
    }
    replyError(request, 0)
}

func drivefsStatfs(_ request: fuse_req_t?, _ inode: fuse_ino_t) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    context.filesystem.statistics(reply: makeReply(request, context, interruptible: true) { request, statistics in
        var stats = StatConversion.statvfs(statistics)
        _ = fuse_reply_statfs(request, &stats)
    })
}

// Extended attributes. The size protocol (0 asks for the length, ERANGE for a small buffer) is
// ExtendedAttributeReply's; answering ENOSYS here would make the kernel answer EOPNOTSUPP for
// the rest of the mount, so every request gets a real answer.

private func sendExtendedAttribute(_ request: fuse_req_t?, _ answer: ExtendedAttributeReply) {
    switch answer {
    case .length(let count): _ = fuse_reply_xattr(request, count)
    case .bytes(let bytes):
        bytes.withUnsafeBytes { raw in
            _ = fuse_reply_buf(request, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
        }
    case .failure(let error): replyError(request, error.errno)
    }
}

func drivefsGetxattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ size: Int) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    // A name that is not UTF-8 is not one of ours.
    guard let name, let text = String(validatingCString: name) else { return replyError(request, ENODATA) }
    context.filesystem.extendedAttribute(Inode(inode), named: text, reply: makeReply(request, context, interruptible: false) {
        request, value in
        sendExtendedAttribute(request, ExtendedAttributeReply(value, bufferSize: size))
    })
}

func drivefsListxattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    context.filesystem.extendedAttributeNames(Inode(inode), reply: makeReply(request, context, interruptible: false) {
        request, names in
        sendExtendedAttribute(request, ExtendedAttributeReply(ExtendedAttributeReply.encodeNames(names), bufferSize: size))
    })
}

func drivefsSetxattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                     _ size: Int, _ flags: Int32) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let name, let text = String(validatingCString: name) else { return replyError(request, EPERM) }
    let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
    context.filesystem.setExtendedAttribute(Inode(inode), named: text, value: bytes, flags: flags,
                                            reply: makeReply(request, context, interruptible: false) { request, _ in
        replyError(request, 0)
    })
}

func drivefsRemovexattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let name, let text = String(validatingCString: name) else { return replyError(request, ENODATA) }
    context.filesystem.removeExtendedAttribute(Inode(inode), named: text,
                                               reply: makeReply(request, context, interruptible: false) { request, _ in
        replyError(request, 0)
    })
}

// MARK: Writes

/// A name from the kernel: names that are not UTF-8 cannot be kept on Drive (its names are Unicode).
private func utf8Name(_ name: UnsafePointer<CChar>?) -> String? {
    guard let name else { return nil }
    return String(validatingCString: name)
}

/// A `Reply<FileAttributes>` for operations that make a name: an entry reply, whose failure gives
/// back the lookup the filesystem counted.
private func entryReply(_ request: fuse_req_t?, _ context: FuseSessionContext) -> Reply<FileAttributes> {
    let fs = context.filesystem
    return makeReply(request, context, interruptible: true) { (request, attributes: FileAttributes) in
        var entry = entryParam(attributes, fs)
        if fuse_reply_entry(request, &entry) != 0 { fs.forget(attributes.inode, count: 1) }
    }
}

private func voidReply(_ request: fuse_req_t?, _ context: FuseSessionContext, interruptible: Bool = true) -> Reply<Void> {
    makeReply(request, context, interruptible: interruptible) { (request, _: Void) in replyError(request, 0) }
}

func drivefsCreate(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t,
                   _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request), let info else { return replyError(request, EIO) }
    guard let text = utf8Name(name) else { return replyError(request, EILSEQ) }
    let fs = context.filesystem
    let directIO = context.directIO
    let copy = FileInfoCopy(info.pointee)
    fs.create(parent: Inode(parent), name: text, mode: UInt32(mode), flags: info.pointee.flags,
              reply: makeReply(request, context, interruptible: true) { request, created in
        var entry = entryParam(created.attributes, fs)
        var fi = copy.value
        fi.fh = created.opened.handle
        if directIO || created.opened.directIO { cfuse_fi_set_direct_io(&fi, 1) }
        if fuse_reply_create(request, &entry, &fi) != 0 {
            fs.release(created.attributes.inode, handle: created.opened.handle)
            fs.forget(created.attributes.inode, count: 1)
        }
    })
}

func drivefsMknod(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t, _ rdev: dev_t) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let text = utf8Name(name) else { return replyError(request, EILSEQ) }
    context.filesystem.makeNode(parent: Inode(parent), name: text, mode: UInt32(mode), device: UInt64(rdev),
                                reply: entryReply(request, context))
}

func drivefsMkdir(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let text = utf8Name(name) else { return replyError(request, EILSEQ) }
    context.filesystem.makeDirectory(parent: Inode(parent), name: text, mode: UInt32(mode), reply: entryReply(request, context))
}

func drivefsSymlink(_ request: fuse_req_t?, _ target: UnsafePointer<CChar>?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let text = utf8Name(name), let link = utf8Name(target) else { return replyError(request, EILSEQ) }
    context.filesystem.symbolicLink(parent: Inode(parent), name: text, target: link, reply: entryReply(request, context))
}

func drivefsLink(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ newParent: fuse_ino_t, _ newName: UnsafePointer<CChar>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let text = utf8Name(newName) else { return replyError(request, EILSEQ) }
    context.filesystem.link(Inode(inode), newParent: Inode(newParent), newName: text, reply: entryReply(request, context))
}

func drivefsUnlink(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let text = utf8Name(name) else { return replyError(request, ENOENT) }
    context.filesystem.removeFile(parent: Inode(parent), name: text, reply: voidReply(request, context))
}

func drivefsRmdir(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let text = utf8Name(name) else { return replyError(request, ENOENT) }
    context.filesystem.removeDirectory(parent: Inode(parent), name: text, reply: voidReply(request, context))
}

func drivefsRename(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ newParent: fuse_ino_t,
                   _ newName: UnsafePointer<CChar>?, _ flags: UInt32) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let from = utf8Name(name) else { return replyError(request, ENOENT) }
    guard let to = utf8Name(newName) else { return replyError(request, EILSEQ) }
    context.filesystem.rename(parent: Inode(parent), name: from, newParent: Inode(newParent), newName: to, flags: flags,
                              reply: voidReply(request, context))
}

func drivefsSetattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ attr: UnsafeMutablePointer<stat>?, _ toSet: Int32,
                    _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request), let attr else { return replyError(request, EIO) }
    let fs = context.filesystem
    let st = attr.pointee
    var changes = AttributeChanges()
    func has(_ flag: Int32) -> Bool { toSet & flag != 0 }
    if has(FUSE_SET_ATTR_SIZE) { changes.size = Int64(st.st_size) }
    if has(FUSE_SET_ATTR_MODE) { changes.permissions = UInt32(st.st_mode) & 0o7777 }
    if has(FUSE_SET_ATTR_UID) { changes.userID = st.st_uid }
    if has(FUSE_SET_ATTR_GID) { changes.groupID = st.st_gid }
    func millis(_ t: timespec) -> Int64 { Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000 }
    if has(FUSE_SET_ATTR_ATIME_NOW) { changes.accessed = .now } else if has(FUSE_SET_ATTR_ATIME) { changes.accessed = .millis(millis(st.st_atim)) }
    if has(FUSE_SET_ATTR_MTIME_NOW) { changes.modified = .now } else if has(FUSE_SET_ATTR_MTIME) { changes.modified = .millis(millis(st.st_mtim)) }
    let timeout = fs.attributeTimeout
    fs.setAttributes(Inode(inode), changes, handle: info.map { $0.pointee.fh },
                     reply: makeReply(request, context, interruptible: true) { request, attributes in
        var out = StatConversion.stat(attributes)
        _ = fuse_reply_attr(request, &out, timeout)
    })
}

func drivefsWrite(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ buffer: UnsafePointer<CChar>?, _ size: Int, _ offset: off_t,
                  _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    let data = buffer.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
    context.filesystem.write(Inode(inode), handle: info.pointee.fh, offset: Int64(offset), data: data,
                             reply: makeReply(request, context, interruptible: true) { request, count in
        _ = fuse_reply_write(request, count)
    })
}

func drivefsFlush(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    // Not interruptible: what close(2) accepted must be made durable even if the caller is killed.
    context.filesystem.flush(Inode(inode), handle: info.pointee.fh, reply: voidReply(request, context, interruptible: false))
}

func drivefsFsync(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ datasync: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    context.filesystem.synchronize(Inode(inode), handle: info.pointee.fh, dataOnly: datasync != 0,
                                   reply: voidReply(request, context))
}

func drivefsFsyncdir(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ datasync: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let context = FuseSessionContext.from(request: request) else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    context.filesystem.synchronizeDirectory(Inode(inode), handle: info.pointee.fh, reply: voidReply(request, context))
}
