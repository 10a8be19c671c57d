// C shim over libfuse3 (low-level API). Only FuseBridge imports this module.
// FUSE_USE_VERSION must be defined here: a cSettings define is not seen by the Swift importer.
#ifndef DRIVEFS_CFUSE_H
#define DRIVEFS_CFUSE_H
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <stdio.h>
#include <sys/types.h>

// Swift 6 rejects the C global; hand it out through a function.
FILE *cfuse_stderr(void);

// fuse_session_loop_mt is a macro (mapped to a versioned symbol) in some builds of fuse3.
int cfuse_session_loop_mt(struct fuse_session *se, struct fuse_loop_config *config);

// The bit fields of fuse_file_info, set from Swift without relying on how they import.
void cfuse_fi_set_keep_cache(struct fuse_file_info *fi, int on);
void cfuse_fi_set_direct_io(struct fuse_file_info *fi, int on);

// fuse_reply_data with one buffer that is `size` bytes of `fd` from `pos` (FUSE_BUFVEC_INIT is a
// macro): libfuse splices or reads them into the reply without a copy through Swift.
int cfuse_reply_fd(fuse_req_t req, int fd, off_t pos, size_t size);

// The connection guard (cfuse.c): a daemon that dies uncleanly still frees its mount.
// Opens fusectl's `abort` file of the connection and handles the fatal signals (SIGSEGV, SIGBUS,
// SIGILL, SIGTRAP, SIGFPE, SIGABRT, SIGSYS) by writing it first; 0, or -errno from the open.
int cfuse_guard_arm(const char *abort_path);
// Restores the previous handlers and closes the file.
void cfuse_guard_disarm(void);
// Forks the watcher that writes the file once the calling thread ends (call it from the thread
// that serves the mount, after daemonizing): its pid, or -errno.
pid_t cfuse_guard_start_watcher(void);

#endif
