import DriveSupport
import Foundation
import Glibc

/// A named table of POSIX checks for any read-only drivefs mount (after go-fuse's `posixtest`):
/// each row makes real system calls on the mount and says what went wrong, or nil.
///
/// Run it through `run(timeout:)`: the calls happen on a separate thread, so a hung mount fails
/// the test instead of hanging it (the mount's teardown then aborts the stuck call).
struct ReadOnlyPOSIXTable: Sendable {
    /// A regular file with known content, a directory, and the mountpoint.
    let mountpoint: String
    let file: String
    let fileContent: [UInt8]
    let directory: String

    typealias Check = (name: String, run: @Sendable () -> String?)

    private func expectErrno(_ expected: Int32, _ what: String, _ call: () -> Int32) -> String? {
        errno = 0
        let result = call()
        if result >= 0 { return "\(what) succeeded (\(result)); expected \(Self.name(expected))" }
        return errno == expected ? nil : "\(what): \(Self.name(errno)); expected \(Self.name(expected))"
    }

    static func name(_ code: Int32) -> String { "errno \(code) (\(String(cString: strerror(code))))" }

    var checks: [Check] {
        let file = mountpoint + "/" + self.file
        let directory = mountpoint + "/" + self.directory
        let missing = mountpoint + "/no-such-name"
        let size = fileContent.count
        return [
            ("open O_WRONLY is EROFS", { expectErrno(EROFS, "open(O_WRONLY)") { open(file, O_WRONLY) } }),
            ("open O_RDWR is EROFS", { expectErrno(EROFS, "open(O_RDWR)") { open(file, O_RDWR) } }),
            ("create is EROFS", { expectErrno(EROFS, "open(O_CREAT)") { open(missing, O_WRONLY | O_CREAT, 0o644) } }),
            ("mkdir is EROFS", { expectErrno(EROFS, "mkdir") { mkdir(missing, 0o755) } }),
            ("rmdir is EROFS", { expectErrno(EROFS, "rmdir") { rmdir(directory) } }),
            ("unlink is EROFS", { expectErrno(EROFS, "unlink") { unlink(file) } }),
            ("rename is EROFS", { expectErrno(EROFS, "rename") { rename(file, missing) } }),
            ("symlink is EROFS", { expectErrno(EROFS, "symlink") { symlink("target", missing) } }),
            ("link is EROFS", { expectErrno(EROFS, "link") { link(file, missing) } }),
            ("chmod is EROFS", { expectErrno(EROFS, "chmod") { chmod(file, 0o600) } }),
            ("truncate is EROFS", { expectErrno(EROFS, "truncate") { truncate(file, 0) } }),
            ("utimensat is EROFS", { expectErrno(EROFS, "utimensat") { utimensat(AT_FDCWD, file, nil, 0) } }),
            ("access W_OK is EROFS", { expectErrno(EROFS, "access(W_OK)") { access(file, W_OK) } }),
            ("stat of a missing name is ENOENT", {
                var st = stat()
                return expectErrno(ENOENT, "stat") { stat(missing, &st) }
            }),
            ("a path through a file is ENOTDIR", {
                var st = stat()
                return expectErrno(ENOTDIR, "stat") { stat(file + "/x", &st) }
            }),
            ("O_DIRECTORY on a file is ENOTDIR", { expectErrno(ENOTDIR, "open(O_DIRECTORY)") { open(file, O_RDONLY | O_DIRECTORY) } }),
            ("read on a directory is EISDIR", {
                let fd = open(directory, O_RDONLY)
                guard fd >= 0 else { return "open(directory): \(Self.name(errno))" }
                defer { close(fd) }
                var byte: UInt8 = 0
                return expectErrno(EISDIR, "read(directory)") { Int32(read(fd, &byte, 1)) }
            }),
            ("read returns the content, then 0 at EOF", {
                let fd = open(file, O_RDONLY)
                guard fd >= 0 else { return "open: \(Self.name(errno))" }
                defer { close(fd) }
                var buffer = [UInt8](repeating: 0, count: size + 4096)
                var total = 0
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + total, $0.count - total) }
                    if n < 0 { return "read: \(Self.name(errno))" }
                    if n == 0 { break }
                    total += n
                }
                return Array(buffer[0..<total]) == fileContent ? nil : "read \(total) bytes that differ from the content"
            }),
            ("pread past EOF returns 0", {
                let fd = open(file, O_RDONLY)
                guard fd >= 0 else { return "open: \(Self.name(errno))" }
                defer { close(fd) }
                var buffer = [UInt8](repeating: 0, count: 16)
                let n = pread(fd, &buffer, 16, off_t(size + 100))
                return n == 0 ? nil : "pread past EOF returned \(n)"
            }),
            ("pread in the middle returns that range", {
                let fd = open(file, O_RDONLY)
                guard fd >= 0 else { return "open: \(Self.name(errno))" }
                defer { close(fd) }
                let offset = size / 3, length = min(5000, size - offset)
                var buffer = [UInt8](repeating: 0, count: length)
                let n = pread(fd, &buffer, length, off_t(offset))
                return n == length && buffer == Array(fileContent[offset..<offset + length]) ? nil : "pread returned \(n) wrong bytes"
            }),
            ("lseek SEEK_END is the size, fstat agrees with stat", {
                let fd = open(file, O_RDONLY)
                guard fd >= 0 else { return "open: \(Self.name(errno))" }
                defer { close(fd) }
                let end = lseek(fd, 0, SEEK_END)
                var a = stat(), b = stat()
                guard fstat(fd, &a) == 0, stat(file, &b) == 0 else { return "fstat/stat: \(Self.name(errno))" }
                if end != off_t(size) { return "SEEK_END \(end), size \(size)" }
                return a.st_size == b.st_size && a.st_ino == b.st_ino && a.st_mode == b.st_mode ? nil : "fstat and stat differ"
            }),
            ("mmap shows the content", {
                let fd = open(file, O_RDONLY)
                guard fd >= 0 else { return "open: \(Self.name(errno))" }
                defer { close(fd) }
                guard let map = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else {
                    return "mmap: \(Self.name(errno))"
                }
                defer { munmap(map, size) }
                let bytes = UnsafeRawBufferPointer(start: map, count: size)
                return Array(bytes) == fileContent ? nil : "mapped bytes differ"
            }),
            ("readdir lists . and .., and its d_ino match stat", {
                guard let dir = opendir(mountpoint) else { return "opendir: \(Self.name(errno))" }
                defer { closedir(dir) }
                var names: [String] = []
                while let entry = readdir(dir) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                    names.append(name)
                    if name == "." || name == ".." { continue }
                    var st = stat()
                    guard stat(mountpoint + "/" + name, &st) == 0 else { return "stat \(name): \(Self.name(errno))" }
                    if UInt64(st.st_ino) != UInt64(entry.pointee.d_ino) { return "\(name): d_ino \(entry.pointee.d_ino), st_ino \(st.st_ino)" }
                }
                if !names.contains(".") || !names.contains("..") { return "no . or .. in \(names)" }
                return names.contains(self.file.split(separator: "/").first.map(String.init) ?? "") ? nil : "listing \(names) lacks the file"
            }),
            ("seekdir to a telldir position resumes the listing", {
                guard let dir = opendir(mountpoint) else { return "opendir: \(Self.name(errno))" }
                defer { closedir(dir) }
                func nextName() -> String? {
                    guard let entry = readdir(dir) else { return nil }
                    return withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                }
                _ = nextName()
                _ = nextName()
                let position = telldir(dir)
                var rest: [String] = []
                while let name = nextName() { rest.append(name) }
                seekdir(dir, position)
                var again: [String] = []
                while let name = nextName() { again.append(name) }
                return !rest.isEmpty && rest == again ? nil : "after seekdir: \(again), first time: \(rest)"
            }),
            ("statvfs says read-only, names up to 255 bytes", {
                var s = statvfs()
                guard statvfs(mountpoint, &s) == 0 else { return "statvfs: \(Self.name(errno))" }
                if s.f_flag & UInt(ST_RDONLY) == 0 { return "ST_RDONLY not set (f_flag \(s.f_flag))" }
                return s.f_namemax == 255 ? nil : "f_namemax \(s.f_namemax)"
            }),
            ("a directory's nlink is 2 + its subdirectories", {
                var st = stat()
                guard stat(directory, &st) == 0 else { return "stat: \(Self.name(errno))" }
                return st.st_mode & S_IFMT == S_IFDIR && st.st_nlink >= 2 ? nil : "mode \(String(st.st_mode, radix: 8)), nlink \(st.st_nlink)"
            }),
        ]
    }

    /// Runs every check on a separate thread; the failures, by name. Nil when the run did not end
    /// within `timeout` (a hung mount).
    func run(timeout: TimeInterval) -> [String]? {
        let result = Locked<[String]?>(nil)
        let done = DispatchSemaphore(value: 0)
        let checks = self.checks
        let thread = Thread {
            var failures: [String] = []
            for check in checks {
                if let problem = check.run() { failures.append("\(check.name): \(problem)") }
            }
            result.withLock { $0 = failures }
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return result.withLock { $0 }
    }
}
