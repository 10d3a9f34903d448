/* One server process: spawned directly (no shell) in its own process group with a reset
 * signal state, fds >= 3 closed, the fds it is given on 0/1/2, and SIGKILL as its parent-death signal
 * (the daemon is single-threaded, so that is the daemon's death); watched through a pidfd,
 * so its pid can never be mistaken for a recycled one; signalled and reaped exactly once. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct event_base;
struct event;
struct run_as;

/* The daemon's loop has three event priorities; everything runs at libevent's default (1)
 * but what spawns servers: a process's exit and SIGCHLD (which restart it), a server's
 * timer (a restart after backoff), the first start of every server (supervisor.h) and the
 * reaper's scan. The loop polls again after each of those, and SIGCHLD and the first
 * starts take at most PROCESS_SPAWNS_PER_POLL servers a turn, so a client is answered
 * between spawns, not after a thousand of them. One: a spawn waits until the child has
 * exec'd, which on a busy machine is a wait for a CPU (5 ms and more with 1,000 servers
 * starting on two CPUs shared with other work, where 8 a turn kept a ping waiting 40 ms). */
#define EVENT_PRIORITIES 3
#define EVENT_PRIORITY_SPAWN 2
#define PROCESS_SPAWNS_PER_POLL 1

struct process;
typedef void (*process_exit_fn)(struct process *p, void *userdata);

/* Where a spawn failed, for the words of its error. */
enum process_step {
        PROCESS_STEP_NONE,
        PROCESS_STEP_SETUP,  /* the child's own setup: process group, parent-death signal, descriptors */
        PROCESS_STEP_GROUPS, /* taking the user's groups (setgroups) */
        PROCESS_STEP_GID,    /* its gid (setresgid) */
        PROCESS_STEP_UID,    /* its uid (setresuid) */
        PROCESS_STEP_CWD,    /* entering the working directory */
        PROCESS_STEP_EXEC,   /* execve() */
};

struct process {
        pid_t pid;               /* 0: nothing spawned; kept after reaping for logs */
        int pidfd;               /* -1 once reaped */
        struct event *exit_event;
        bool reaped;
        int code;                /* CLD_EXITED, CLD_KILLED, CLD_DUMPED once reaped */
        int status;              /* exit status or signal number */
        enum process_step failed_step; /* a spawn that failed: where */
        int failed_error;        /* a child not waited for (another user's) that failed before its
                                  * exec: its errno, positive, once reaped; 0 otherwise */
        int failure_fd;          /* that child's report, read when it is reaped; -1 */
        process_exit_fn on_exit;
        void *userdata;
};

void process_init(struct process *p);

/* Spawns argv[0]=program with envp, with stdio[0], [1] and [2] as its fds 0, 1 and 2;
 * they are closed here whatever happens (the daemon keeps no copy of the server's ends).
 * as (run-as.h; NULL: the daemon's own user) is the user it runs as: its groups, gid and
 * uid taken in that order before anything else the child does, each checked. Its working
 * directory is cwd, else as's home (or "/" when the home cannot be entered), else the
 * daemon's. On success on_exit fires when the process ends; call process_reap() from it.
 * Returns the error itself (-ENOENT, -EACCES, -EAGAIN, -EPERM, ...), and p->failed_step
 * says at which step.
 *
 * A child that becomes another user (as, not the daemon's own uid) is not waited for: the
 * user could stop it, or stall it in a home of theirs, and the daemon with it. It is a
 * fork of its own, and what fails before its exec is told at its end instead: it exits
 * with status 127, and once reaped p->failed_step and p->failed_error say why. */
int process_spawn(struct process *p, struct event_base *base, const char *program, char *const *argv,
                  char *const *envp, const char *cwd, const struct run_as *as, const int stdio[3],
                  process_exit_fn on_exit, void *userdata);

/* Collects the exit status if the process has ended. 1: reaped now or before; 0: running. */
int process_reap(struct process *p);

/* Signals a child of ours through its pidfd; where pidfd_send_signal() is missing (ENOSYS:
 * a seccomp filter, valgrind), by pid, which is safe only because the caller has not reaped
 * that child yet, so its pid cannot be reused. 0 or -errno. */
int pidfd_signal(int pidfd, pid_t pid, int sig);

/* Sends sig (and SIGCONT, so a stopped process can act on it) to the whole process group.
 * Only while the leader is unreaped, so the group id cannot belong to anyone else. */
int process_signal_group(struct process *p, int sig);

/* Releases the pidfd and event of a reaped process. */
void process_done(struct process *p);

/* How a reaped process ended (its code and status): "exit status 1", "killed by SIGKILL",
 * "dumped core on SIGSEGV". */
const char *process_describe_exit(int code, int status, char *buf, size_t size);
