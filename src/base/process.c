/* Spawning, watching, signalling and reaping a server process; see process.h. */
#include "process.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "run-as.h"

void process_init(struct process *p) {
        *p = (struct process){ .pidfd = -1, .failure_fd = -1 };
}

/* The child runs on the daemon's memory until it execs (CLONE_VM): the sanitizer's
 * bookkeeping of its stack frames would be left behind in the daemon's, so it has none. */
#define _child_code_ __attribute__((no_sanitize("address", "undefined")))

/* The child's stack, in the daemon's memory while it lasts: enough for the calls below. */
#define CHILD_STACK_SIZE (64 * 1024)

/* Puts fd on target for exec: dup2() onto itself would keep O_CLOEXEC. */
_child_code_ static int move_fd(int fd, int target) {
        if (fd == target)
                return fcntl(fd, F_SETFD, 0);
        return dup2(fd, target) < 0 ? -1 : 0;
}

/* The child shares the daemon's descriptor table (CLONE_FILES, but under valgrind) until
 * here, then takes a copy of it only up to the highest descriptor it keeps: not a copy of
 * all of them (thousands with many servers running) to close one by one after. Without
 * CLONE_FILES its table is its own already, and this merely closes what is above. */
_child_code_ static int unshare_fds(const int stdio[3], int error_fd) {
        int top = error_fd;

        for (int k = 0; k < 3; k++)
                if (stdio[k] > top)
                        top = stdio[k];
        return close_range((unsigned)top + 1, ~0U, CLOSE_RANGE_UNSHARE);
}

/* The child takes on another user's groups, gid and uid, in that order (each needs the
 * privilege the next one gives up). Raw system calls, not glibc's wrappers: those change
 * the credentials of every thread glibc knows of (a reload's read, in the daemon), which a
 * child made by clone() is none of. */
#ifdef SYS_setgroups32
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETRESUID SYS_setresuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETRESUID SYS_setresuid
#endif

_child_code_ static enum process_step become(const struct run_as *as) {
        /* Its own user: nothing to drop (and an unprivileged daemon could not set groups). */
        if (as->uid == geteuid())
                return PROCESS_STEP_NONE;
        /* -1 would mean "leave it as it is": root. */
        if (as->uid == (uid_t)-1 || as->gid == (gid_t)-1) {
                errno = EINVAL;
                return PROCESS_STEP_UID;
        }
        if (syscall(SYS_SETGROUPS, as->n_groups, as->groups) < 0)
                return PROCESS_STEP_GROUPS;
        if (syscall(SYS_SETRESGID, as->gid, as->gid, as->gid) < 0)
                return PROCESS_STEP_GID;
        if (syscall(SYS_SETRESUID, as->uid, as->uid, as->uid) < 0)
                return PROCESS_STEP_UID;
        /* Not merely trusted: a uid it could take back would be no drop at all. */
        if (syscall(SYS_SETRESUID, 0, 0, 0) == 0 && as->uid != 0) {
                errno = EPERM;
                return PROCESS_STEP_UID;
        }
        return PROCESS_STEP_NONE;
}

/* Its working directory: cwd; else, as another user, that user's home, or "/" when the
 * home cannot be entered (as login(1) does, and the service manager for
 * WorkingDirectory=-~); else the daemon's. Entered as the user, after the drop. */
_child_code_ static int enter_cwd(const char *cwd, const struct run_as *as) {
        if (cwd)
                return chdir(cwd);
        if (as && chdir(as->home) < 0)
                return chdir("/");
        return 0;
}

/* In the child, between clone and exec: async-signal-safe calls only. Own process group, so
 * the close sequence signals the server and all it started; no descriptor of the daemon's
 * once it may be another user's to stop (a stopped child would hold them open); its user
 * (as), before PR_SET_PDEATHSIG, which a change of credentials clears; PR_SET_PDEATHSIG,
 * so it dies with the daemon even when the daemon is SIGKILLed; the daemon's mask and
 * handlers (SIGPIPE ignored, libevent's) do not leak into it. Returns only on failure,
 * with errno set, and the step that failed. */
_child_code_ static enum process_step child_exec(pid_t daemon, const char *program, char *const *argv,
                                                 char *const *envp, const char *cwd, const struct run_as *as,
                                                 const int stdio[3], int error_fd) {
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        enum process_step step;
        sigset_t none;

        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)sigaction(sig, &dfl, NULL);
        if (setpgid(0, 0) < 0)
                return PROCESS_STEP_SETUP;
        if (unshare_fds(stdio, error_fd) < 0)
                return PROCESS_STEP_SETUP;
        for (int k = 0; k < 3; k++)
                if (move_fd(stdio[k], k) < 0)
                        return PROCESS_STEP_SETUP;
        /* Everything else from 3 up but error_fd, which closes itself at exec. */
        if ((error_fd > 3 && close_range(3, (unsigned)error_fd - 1, 0) < 0) ||
            close_range((unsigned)error_fd + 1, ~0U, 0) < 0)
                return PROCESS_STEP_SETUP;
        if (as && (step = become(as)) != PROCESS_STEP_NONE)
                return step;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return PROCESS_STEP_SETUP;
        /* The daemon died before prctl() took effect: nobody would ever end us. */
        if (getppid() != daemon) {
                errno = ESRCH;
                return PROCESS_STEP_SETUP;
        }
        if (enter_cwd(cwd, as) < 0)
                return PROCESS_STEP_CWD;
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                return PROCESS_STEP_SETUP;
        execve(program, argv, envp);
        return PROCESS_STEP_EXEC;
}

/* What the child writes to error_fd when it fails: the step and its errno. */
struct child_failure {
        int step;
        int error;
};

/* The child's failure, its error positive; error 0 once it exec'd: error_fd reads EOF then. */
static struct child_failure exec_error(int error_fd) {
        struct child_failure f = { 0 };
        ssize_t n;

        do
                n = read(error_fd, &f, sizeof f);
        while (n < 0 && errno == EINTR);
        return n == (ssize_t)sizeof f ? f : (struct child_failure){ 0 };
}

/* valgrind runs a vfork as a fork, but aborts on a clone() that shares the descriptor
 * table without being a thread: under it (its preload library says so), no CLONE_FILES.
 * A child that is not waited for (another user's) is a fork: memory and descriptors of its
 * own. */
static int clone_flags(bool wait) {
        const char *preload = getenv("LD_PRELOAD");
        int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;

        if (!wait)
                return SIGCHLD;
        if (!preload || !strstr(preload, "/vgpreload_"))
                flags |= CLONE_FILES;
        return flags;
}

struct child_args {
        pid_t daemon;
        const char *program;
        char *const *argv, *const *envp;
        const char *cwd;
        const struct run_as *as;
        const int *stdio;
        int error_fd;
};

_child_code_ static int child_main(void *userdata) {
        struct child_args *a = userdata;
        struct child_failure f;

        f.step = (int)child_exec(a->daemon, a->program, a->argv, a->envp, a->cwd, a->as, a->stdio, a->error_fd);
        f.error = errno;
        (void)!write(a->error_fd, &f, sizeof f);
        _exit(127);
}

/* clone(CLONE_VM | CLONE_VFORK), as posix_spawn() does, rather than fork(): the daemon's
 * page tables are not copied for a child that execs at once (1,000 servers restarted
 * together spent their time there), and the daemon waits until the exec. Not
 * posix_spawn() itself: PR_SET_PDEATHSIG must be set in the child. Signals stay blocked
 * across clone() so no handler of the daemon's runs in the child, on the daemon's memory,
 * before its reset.
 *
 * Not for a child that becomes another user (wait false): once its uid is the user's, the
 * user may stop it (SIGSTOP to their own processes), and its home may be theirs to stall
 * (a FUSE mount); a daemon waiting for its exec would wait as long. That child is a fork
 * of its own, not waited for: its failure report stays in *failure_fd, read at its end. */
static int spawn_with(pid_t *pid, enum process_step *step, const char *program, char *const *argv,
                      char *const *envp, const char *cwd, const struct run_as *as, const int stdio[3], bool wait,
                      int *failure_fd) {
        _cleanup_close_ int error_read = -1, error_write = -1;
        _Alignas(16) char stack[CHILD_STACK_SIZE];
        struct child_args args;
        struct child_failure f;
        sigset_t all, old;
        int pipe_fds[2], error;

        if (pipe2(pipe_fds, O_CLOEXEC) < 0)
                return -errno;
        error_read = pipe_fds[0];
        error_write = pipe_fds[1];
        args = (struct child_args){ .daemon = getpid(), .program = program, .argv = argv, .envp = envp,
                                    .cwd = cwd, .as = as, .stdio = stdio, .error_fd = error_write };
        sigfillset(&all);
        sigprocmask(SIG_SETMASK, &all, &old);
        *pid = clone(child_main, stack + sizeof stack, clone_flags(wait), &args);
        error = *pid < 0 ? errno : 0;
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (*pid < 0)
                return -error;
        closep(&error_write);
        if (!wait) {
                *failure_fd = TAKE_FD(error_read);
                return 0;
        }
        f = exec_error(error_read);
        if (f.error != 0) {
                (void)waitpid(*pid, NULL, 0);
                *step = (enum process_step)f.step;
                return -f.error;
        }
        return 0;
}

static void on_pidfd(evutil_socket_t fd, short what, void *userdata) {
        struct process *p = userdata;

        p->on_exit(p, p->userdata);
}

static int watch(struct process *p, struct event_base *base) {
        p->pidfd = (int)pidfd_open(p->pid, 0);
        if (p->pidfd < 0) /* pidfd_open always sets close-on-exec */
                return -errno;
        /* Edge-triggered: a pidfd becomes readable once, at the exit, and is not reported again
         * by every poll while its turn waits behind other exits (priority, process.h). */
        p->exit_event = event_new(base, p->pidfd, EV_READ | EV_PERSIST | EV_ET, on_pidfd, p);
        if (!p->exit_event)
                return -ENOMEM;
        (void)event_priority_set(p->exit_event, EVENT_PRIORITY_SPAWN); /* fails only on a base without them */
        if (event_add(p->exit_event, NULL) < 0)
                return -ENOMEM;
        return 0;
}

int process_spawn(struct process *p, struct event_base *base, const char *program, char *const *argv,
                  char *const *envp, const char *cwd, const struct run_as *as, const int stdio[3],
                  process_exit_fn on_exit, void *userdata) {
        int r;

        process_init(p);
        p->on_exit = on_exit;
        p->userdata = userdata;
        r = spawn_with(&p->pid, &p->failed_step, program, argv, envp, cwd, as, stdio, !(as && as->uid != geteuid()),
                       &p->failure_fd);
        /* The program has its own copies now, or failed. */
        for (int k = 0; k < 3; k++)
                close(stdio[k]);
        if (r < 0) {
                p->pid = 0;
                return r;
        }
        r = watch(p, base);
        if (r < 0) {
                /* Without a pidfd we cannot watch it safely: end it now rather than leak it. */
                kill(p->pid, SIGKILL);
                (void)waitpid(p->pid, NULL, 0);
                p->reaped = true;
                p->code = CLD_KILLED;
                p->status = SIGKILL;
                return r;
        }
        return 0;
}

/* A child not waited for failed before its exec: why, as it wrote it before its exit. */
static void read_failure(struct process *p) {
        _cleanup_close_ int fd = TAKE_FD(p->failure_fd);
        struct child_failure f;

        if (fd >= 0 && p->code == CLD_EXITED && p->status == 127 && read(fd, &f, sizeof f) == (ssize_t)sizeof f &&
            f.error != 0) {
                p->failed_step = (enum process_step)f.step;
                p->failed_error = f.error;
        }
}

int process_reap(struct process *p) {
        siginfo_t si = { 0 };

        if (p->reaped)
                return 1;
        if (p->pidfd < 0)
                return 0;
        if (waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG) < 0) {
                if (errno != ECHILD)
                        return 0;
                /* Someone else reaped it (never us, by design); treat it as gone. */
                si.si_pid = p->pid;
                si.si_code = CLD_KILLED;
                si.si_status = 0;
        }
        if (si.si_pid == 0)
                return 0;
        p->reaped = true;
        p->code = si.si_code;
        p->status = si.si_status;
        read_failure(p);
        if (p->exit_event)
                event_del(p->exit_event);
        return 1;
}

int pidfd_signal(int pidfd, pid_t pid, int sig) {
        if (pidfd_send_signal(pidfd, sig, NULL, 0) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;
        return kill(pid, sig) < 0 ? -errno : 0;
}

int process_signal_group(struct process *p, int sig) {
        if (p->reaped || p->pidfd < 0)
                return -ESRCH;
        /* The pidfd reaches the leader even if it left its group; killpg reaches the rest. */
        (void)pidfd_signal(p->pidfd, p->pid, sig);
        if (killpg(p->pid, sig) < 0 && errno != ESRCH)
                return -errno;
        if (sig != SIGKILL && sig != SIGCONT) {
                (void)pidfd_signal(p->pidfd, p->pid, SIGCONT);
                (void)killpg(p->pid, SIGCONT);
        }
        return 0;
}

void process_done(struct process *p) {
        if (p->exit_event)
                event_free(p->exit_event);
        p->exit_event = NULL;
        if (p->pidfd >= 0)
                close(p->pidfd);
        p->pidfd = -1;
        closep(&p->failure_fd);
        p->failure_fd = -1;
}
