import CFuse
import DriveFSCore
import Glibc

/// `FileAttributes` as the `struct stat` libfuse replies with.
enum StatConversion {
    static func stat(_ attributes: FileAttributes) -> Glibc.stat {
        var st = Glibc.stat()
        st.st_ino = UInt(attributes.inode.rawValue)
        st.st_mode = attributes.mode
        st.st_nlink = UInt(attributes.linkCount)
        st.st_uid = attributes.userID
        st.st_gid = attributes.groupID
        st.st_rdev = UInt(attributes.deviceNumber)
        st.st_size = Int(clamping: attributes.size)
        st.st_blksize = 4096
        st.st_blocks = Int(clamping: (attributes.size + 511) / 512)
        st.st_atim = timespec(millis: attributes.accessedMillis)
        st.st_mtim = timespec(millis: attributes.modifiedMillis)
        st.st_ctim = timespec(millis: attributes.changedMillis)
        return st
    }

    /// Only the type bits and the inode number count in a directory entry.
    static func stat(_ entry: DirectoryEntry) -> Glibc.stat {
        var st = Glibc.stat()
        st.st_ino = UInt(entry.inode.rawValue)
        st.st_mode = entry.kind.modeTypeBits
        return st
    }

    static func statvfs(_ stats: FilesystemStatistics) -> Glibc.statvfs {
        var s = Glibc.statvfs()
        s.f_bsize = UInt(stats.blockSize)
        s.f_frsize = UInt(stats.blockSize)
        s.f_blocks = UInt(stats.totalBlocks)
        s.f_bfree = UInt(stats.freeBlocks)
        s.f_bavail = UInt(stats.freeBlocks)
        s.f_files = UInt(stats.totalFiles)
        s.f_ffree = UInt(stats.freeFiles)
        s.f_favail = UInt(stats.freeFiles)
        s.f_namemax = UInt(stats.maximumNameLength)
        return s
    }
}

extension timespec {
    init(millis: Int64) {
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        self.init(tv_sec: Int(seconds), tv_nsec: Int((millis - seconds * 1000) * 1_000_000))
    }
}
