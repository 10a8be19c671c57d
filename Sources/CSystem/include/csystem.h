// C shim for the few Linux calls Glibc's Swift overlay does not show (they need _GNU_SOURCE).
// Only DriveFSCore imports this module.
#ifndef DRIVEFS_CSYSTEM_H
#define DRIVEFS_CSYSTEM_H
#include <sys/types.h>

// fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length): frees the disk blocks
// of a range, which then reads as zeros. 0, or -1 with errno set.
int csystem_punch_hole(int fd, off_t offset, off_t length);

// copy_file_range(in, &inOffset, out, &outOffset, length, 0): copies in the kernel (a reflink
// where the filesystem can). Bytes copied, or -1 with errno set.
ssize_t csystem_copy_file_range(int in, off_t *inOffset, int out, off_t *outOffset, size_t length);

// lseek(fd, offset, SEEK_DATA) and lseek(fd, offset, SEEK_HOLE): the next data, or the next hole,
// at or after offset (ENXIO past the last data). The offset, or -1 with errno set.
off_t csystem_seek_data(int fd, off_t offset);
off_t csystem_seek_hole(int fd, off_t offset);

// malloc_trim(0): hands the allocator's free pages back to the system (every arena). 1 when it
// released memory, 0 when there was none to release.
int csystem_malloc_trim(void);

// getxattr(path, name, value, size) and setxattr(path, name, value, size, flags) (sys/xattr.h):
// the value's length, or 0; -1 with errno set.
ssize_t csystem_getxattr(const char *path, const char *name, void *value, size_t size);
int csystem_setxattr(const char *path, const char *name, const void *value, size_t size, int flags);

#endif
