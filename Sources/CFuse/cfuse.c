#include "cfuse.h"

FILE *cfuse_stderr(void) { return stderr; }

int cfuse_session_loop_mt(struct fuse_session *se, struct fuse_loop_config *config) {
    return fuse_session_loop_mt(se, config);
}

void cfuse_fi_set_keep_cache(struct fuse_file_info *fi, int on) { fi->keep_cache = on ? 1 : 0; }
void cfuse_fi_set_direct_io(struct fuse_file_info *fi, int on) { fi->direct_io = on ? 1 : 0; }

int cfuse_reply_fd(fuse_req_t req, int fd, off_t pos, size_t size) {
    struct fuse_bufvec bufv = FUSE_BUFVEC_INIT(size);
    bufv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    bufv.buf[0].fd = fd;
    bufv.buf[0].pos = pos;
    return fuse_reply_data(req, &bufv, FUSE_BUF_SPLICE_MOVE);
}
