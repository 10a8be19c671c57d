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

// ---- The connection guard: a daemon that dies uncleanly still frees its mount ----
//
// A thread of the daemon in fuse_lowlevel_notify_inval_entry waits for the folder's lock, which a
// process's request in that folder holds while it waits for the daemon's answer. If the daemon
// dies then (a trap, kill -9), that thread never ends: the /dev/fuse descriptor it writes to stays
// open, the connection is never ended, the dump of a trap waits for it, and every access to the
// mount hangs. Only the connection's `abort` file in fusectl ends it from outside. The guard keeps
// that file open and writes it when the daemon dies: from the fatal signal's handler (before the
// core dump waits for every thread), and from a small child process told by the kernel when the
// daemon's main thread ends (kill -9 cannot be caught).

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int guard_abort_fd = -1;
static struct sigaction guard_previous[NSIG];
static const int guard_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT, SIGSYS };
#define GUARD_SIGNAL_COUNT (sizeof(guard_signals) / sizeof(guard_signals[0]))

static void guard_abort_connection(void) {
    int fd = guard_abort_fd;
    if (fd >= 0) {
        ssize_t written = write(fd, "1", 1);
        (void)written;
    }
}

// Async-signal-safe: a write, then whatever handled the signal before (Swift's backtracer, if
// installed), then the default action.
static void guard_handler(int sig, siginfo_t *info, void *context) {
    guard_abort_connection();
    struct sigaction *previous = &guard_previous[sig];
    if ((previous->sa_flags & SA_SIGINFO) && previous->sa_sigaction) {
        previous->sa_sigaction(sig, info, context);
    } else if (!(previous->sa_flags & SA_SIGINFO) && previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
        previous->sa_handler(sig);
    }
    // Delivered once this returns (a fault re-executes and takes it): the process ends as it would have.
    signal(sig, SIG_DFL);
    raise(sig);
}

int cfuse_guard_arm(const char *abort_path) {
    int fd = open(abort_path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    guard_abort_fd = fd;
    for (size_t i = 0; i < GUARD_SIGNAL_COUNT; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = guard_handler;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        sigaction(guard_signals[i], &action, &guard_previous[guard_signals[i]]);
    }
    return 0;
}

void cfuse_guard_disarm(void) {
    int fd = guard_abort_fd;
    if (fd < 0) return;
    for (size_t i = 0; i < GUARD_SIGNAL_COUNT; i++) sigaction(guard_signals[i], &guard_previous[guard_signals[i]], NULL);
    guard_abort_fd = -1;
    close(fd);
}

static void guard_close_all_but(int keep) {
    // Above all the /dev/fuse descriptor: held here, it would keep the connection alive.
    if (syscall(SYS_close_range, 0u, (unsigned)keep - 1, 0u) == 0 && syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0) return;
    long last = sysconf(_SC_OPEN_MAX);
    if (last < 0 || last > (1L << 20)) last = 1L << 20;
    for (long fd = 0; fd < last; fd++) if (fd != keep) close((int)fd);
}

pid_t cfuse_guard_start_watcher(void) {
    int fd = guard_abort_fd;
    if (fd < 0) return -EBADF;
    pid_t daemon = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid != 0) {
        int saved = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return pid < 0 ? -saved : pid;
    }
    // The child: only async-signal-safe calls from here (the daemon has other threads).
    guard_close_all_but(fd);
    prctl(PR_SET_NAME, (unsigned long)"drivefs-guard", 0, 0, 0);
    // Sent when the thread that forked this one (the daemon's main thread, which serves the mount
    // until it ends) exits, however it exits.
    prctl(PR_SET_PDEATHSIG, SIGUSR2, 0, 0, 0);
    if (getppid() == daemon) {
        sigset_t wanted;
        sigemptyset(&wanted);
        sigaddset(&wanted, SIGUSR2);
        sigaddset(&wanted, SIGTERM);
        sigaddset(&wanted, SIGINT);
        sigaddset(&wanted, SIGHUP);
        for (;;) {
            int sig = sigwaitinfo(&wanted, NULL);
            if (sig == SIGUSR2) break;
            // Stopped on its own (a `killall`, systemd stopping the unit): the daemon unmounts itself.
            if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) _exit(0);
        }
    }
    // The daemon's main thread is gone. After a clean unmount the connection is gone too and this
    // write does nothing (the open file no longer names a connection).
    guard_abort_connection();
    _exit(0);
}
