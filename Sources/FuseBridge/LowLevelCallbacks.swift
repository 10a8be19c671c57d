import CFuse
import DriveFSCore
import Glibc

// libfuse's low-level callbacks. Rules every function here keeps:
// - exactly one reply per request (forget/forget_multi: `fuse_reply_none`);
// - no Swift error escapes: a `FilesystemError` becomes `fuse_reply_err(errno)`;
// - a reply that fails (the request was interrupted) undoes what the reply would have handed the
//   kernel (a lookup count, an open handle), as fuse_lowlevel.h asks;
// - they are plain functions (not closures in main.swift) because libfuse calls them on its own
//   worker threads.

enum LowLevelCallbacks {
    /// The operation table passed to `fuse_session_new`. Operations left nil get ENOSYS from libfuse
    /// (every write operation, today: the mount is read-only, so the kernel answers EROFS first).
    static func operations() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.destroy = drivefsDestroy
        ops.lookup = drivefsLookup
        ops.forget = drivefsForget
        ops.forget_multi = drivefsForgetMulti
        ops.getattr = drivefsGetattr
        ops.opendir = drivefsOpendir
        ops.readdir = drivefsReaddir
        ops.readdirplus = drivefsReaddirplus
        ops.releasedir = drivefsReleasedir
        ops.open = drivefsOpen
        ops.read = drivefsRead
        ops.release = drivefsRelease
        ops.statfs = drivefsStatfs
        return ops
    }
}

private func replyError(_ request: fuse_req_t?, _ errno: Int32) { _ = fuse_reply_err(request, errno) }

/// Unmount: the kernel sends no forgets, so every lookup count drops to zero here.
func drivefsDestroy(_ userdata: UnsafeMutableRawPointer?) {
    FuseSessionContext.from(userdata)?.filesystem.forgetAll()
}

func drivefsLookup(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    guard let fs = FuseSessionContext.from(request: request)?.filesystem else { return replyError(request, EIO) }
    // Names that are not UTF-8 cannot exist in this tree (Drive names are Unicode).
    guard let name, let text = String(validatingCString: name) else { return replyError(request, ENOENT) }
    do throws(FilesystemError) {
        let attributes = try fs.lookup(parent: Inode(parent), name: text)
        var entry = fuse_entry_param()
        entry.ino = attributes.inode.rawValue
        entry.generation = 1
        entry.attr = StatConversion.stat(attributes)
        entry.attr_timeout = fs.attributeTimeout
        entry.entry_timeout = fs.entryTimeout
        if fuse_reply_entry(request, &entry) != 0 { fs.forget(attributes.inode, count: 1) }
    } catch {
        replyError(request, error.errno)
    }
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
    guard let fs = FuseSessionContext.from(request: request)?.filesystem else { return replyError(request, EIO) }
    do throws(FilesystemError) {
        var st = StatConversion.stat(try fs.attributes(of: Inode(inode)))
        _ = fuse_reply_attr(request, &st, fs.attributeTimeout)
    } catch {
        replyError(request, error.errno)
    }
}

func drivefsOpendir(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    guard let fs = FuseSessionContext.from(request: request)?.filesystem, let info else { return replyError(request, EIO) }
    do throws(FilesystemError) {
        let handle = try fs.openDirectory(Inode(inode))
        info.pointee.fh = handle
        if fuse_reply_open(request, info) != 0 { fs.releaseDirectory(Inode(inode), handle: handle) }
    } catch {
        replyError(request, error.errno)
    }
}

func drivefsReaddir(
    _ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let fs = FuseSessionContext.from(request: request)?.filesystem else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    do throws(FilesystemError) {
        let entries = try fs.readDirectory(Inode(inode), handle: info.pointee.fh, after: Int64(offset))
        guard size > 0, !entries.isEmpty else {
            _ = fuse_reply_buf(request, nil, 0)
            return
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        defer { buffer.deallocate() }
        var used = 0
        for entry in entries {
            var st = StatConversion.stat(entry)
            // fuse_add_direntry returns the space the entry needs; it writes only when that fits.
            let needed = fuse_add_direntry(request, buffer + used, size - used, entry.name, &st, off_t(entry.nextOffset))
            if needed > size - used { break }
            used += needed
        }
        _ = fuse_reply_buf(request, buffer, used)
    } catch {
        replyError(request, error.errno)
    }
}

/// Entries that do not fit in the reply, or a reply that fails, give back the lookup counts
/// `readDirectoryPlus` took for them.
func drivefsReaddirplus(
    _ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let fs = FuseSessionContext.from(request: request)?.filesystem else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    do throws(FilesystemError) {
        let entries = try fs.readDirectoryPlus(Inode(inode), handle: info.pointee.fh, after: Int64(offset))
        func giveBack(_ rest: ArraySlice<DirectoryEntryPlus>) {
            for item in rest { if let a = item.attributes { fs.forget(a.inode, count: 1) } }
        }
        guard size > 0, !entries.isEmpty else {
            giveBack(entries[...])
            _ = fuse_reply_buf(request, nil, 0)
            return
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        defer { buffer.deallocate() }
        var used = 0
        var sent = 0
        for item in entries {
            var param = fuse_entry_param()
            if let attributes = item.attributes {
                param.ino = attributes.inode.rawValue
                param.generation = 1
                param.attr = StatConversion.stat(attributes)
                param.attr_timeout = fs.attributeTimeout
                param.entry_timeout = fs.entryTimeout
            } else {
                // `.` and `..`: ino 0 tells the kernel not to make a dentry (and count nothing).
                param.attr = StatConversion.stat(item.entry)
            }
            let needed = fuse_add_direntry_plus(request, buffer + used, size - used, item.entry.name, &param,
                                                off_t(item.entry.nextOffset))
            if needed > size - used { break }
            used += needed
            sent += 1
        }
        giveBack(entries[sent...])
        if fuse_reply_buf(request, buffer, used) != 0 { giveBack(entries[..<sent]) }
    } catch {
        replyError(request, error.errno)
    }
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
    do throws(FilesystemError) {
        let opened = try fs.open(Inode(inode), flags: info.pointee.flags)
        info.pointee.fh = opened.handle
        if context.directIO {
            cfuse_fi_set_direct_io(info, 1)
        } else {
            cfuse_fi_set_keep_cache(info, opened.keepCache ? 1 : 0)
        }
        if fuse_reply_open(request, info) != 0 { fs.release(Inode(inode), handle: opened.handle) }
    } catch {
        replyError(request, error.errno)
    }
}

func drivefsRead(
    _ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let fs = FuseSessionContext.from(request: request)?.filesystem else { return replyError(request, EIO) }
    guard let info else { return replyError(request, EBADF) }
    do throws(FilesystemError) {
        let bytes = try fs.read(Inode(inode), handle: info.pointee.fh, offset: Int64(offset), size: size)
        bytes.withUnsafeBytes { raw in
            _ = fuse_reply_buf(request, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
        }
    } catch {
        replyError(request, error.errno)
    }
}

func drivefsRelease(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    if let fs = FuseSessionContext.from(request: request)?.filesystem, let info {
        fs.release(Inode(inode), handle: info.pointee.fh)
    }
    replyError(request, 0)
}

func drivefsStatfs(_ request: fuse_req_t?, _ inode: fuse_ino_t) {
    guard let fs = FuseSessionContext.from(request: request)?.filesystem else { return replyError(request, EIO) }
    var stats = StatConversion.statvfs(fs.statistics())
    _ = fuse_reply_statfs(request, &stats)
}
