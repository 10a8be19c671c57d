#define _GNU_SOURCE
#include <fcntl.h>
#include "csystem.h"

int csystem_punch_hole(int fd, off_t offset, off_t length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}
