#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "csystem.h"

int csystem_punch_hole(int fd, off_t offset, off_t length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}

ssize_t csystem_copy_file_range(int in, off_t *inOffset, int out, off_t *outOffset, size_t length) {
    return copy_file_range(in, inOffset, out, outOffset, length, 0);
}

int csystem_malloc_trim(void) {
    return malloc_trim(0);
}

off_t csystem_seek_data(int fd, off_t offset) { return lseek(fd, offset, SEEK_DATA); }

off_t csystem_seek_hole(int fd, off_t offset) { return lseek(fd, offset, SEEK_HOLE); }

ssize_t csystem_getxattr(const char *path, const char *name, void *value, size_t size) {
    return getxattr(path, name, value, size);
}

int csystem_setxattr(const char *path, const char *name, const void *value, size_t size, int flags) {
    return setxattr(path, name, value, size, flags);
}
