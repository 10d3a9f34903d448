/* Spawning, watching, signalling and reaping a server process; see process.h. */
#include "process.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"

void process_init(struct process *p) {
        *p = (struct process){ .pidfd = -1 };
}

static void closep_pair(int fds[2]) {
        for (int i = 0; i < 2; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        fds[0] = fds[1] = -1;
}

/* Three pipes: [0] stdin, [1] stdout, [2] stderr; each [k][0] read end, [k][1] write end. */
static int make_pipes(int fds[3][2]) {
        for (int k = 0; k < 3; k++)
                if (pipe2(fds[k], O_CLOEXEC) < 0)
                        return -errno;
        return 0;
}

static int setup_attributes(posix_spawnattr_t *attr) {
        sigset_t none, all;

        sigemptyset(&none);
        sigfillset(&all);
        /* Own process group: the close sequence signals the server and all it started. The
         * daemon's mask and SIG_IGN dispositions (SIGPIPE) must not leak into the server. */
        if (posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) ||
            posix_spawnattr_setpgroup(attr, 0) || posix_spawnattr_setsigmask(attr, &none) ||
            posix_spawnattr_setsigdefault(attr, &all))
                return -ENOMEM;
        return 0;
}

static int setup_file_actions(posix_spawn_file_actions_t *fa, int fds[3][2], const char *cwd) {
        if (posix_spawn_file_actions_adddup2(fa, fds[0][0], STDIN_FILENO) ||
            posix_spawn_file_actions_adddup2(fa, fds[1][1], STDOUT_FILENO) ||
            posix_spawn_file_actions_adddup2(fa, fds[2][1], STDERR_FILENO) ||
            posix_spawn_file_actions_addclosefrom_np(fa, 3))
                return -ENOMEM;
        if (cwd && posix_spawn_file_actions_addchdir_np(fa, cwd))
                return -ENOMEM;
        return 0;
}

static int spawn_with(pid_t *pid, const char *program, char *const *argv, char *const *envp, const char *cwd,
                      int fds[3][2]) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        int r;

        if (posix_spawn_file_actions_init(&fa))
                return -ENOMEM;
        if (posix_spawnattr_init(&attr)) {
                posix_spawn_file_actions_destroy(&fa);
                return -ENOMEM;
        }
        r = setup_attributes(&attr);
        if (r == 0)
                r = setup_file_actions(&fa, fds, cwd);
        /* glibc's posix_spawn returns the exec (or chdir) error itself. */
        if (r == 0)
                r = -posix_spawn(pid, program, &fa, &attr, argv, envp);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        return r;
}

static void on_pidfd(evutil_socket_t fd, short what, void *userdata) {
        struct process *p = userdata;

        p->on_exit(p, p->userdata);
}

static int watch(struct process *p, struct event_base *base) {
        p->pidfd = (int)pidfd_open(p->pid, 0);
        if (p->pidfd < 0) /* pidfd_open always sets close-on-exec */
                return -errno;
        p->exit_event = event_new(base, p->pidfd, EV_READ | EV_PERSIST, on_pidfd, p);
        if (!p->exit_event || event_add(p->exit_event, NULL) < 0)
                return -ENOMEM;
        return 0;
}

int process_spawn(struct process *p, struct event_base *base, const char *program, char *const *argv,
                  char *const *envp, const char *cwd, struct process_pipes *ret, process_exit_fn on_exit,
                  void *userdata) {
        int fds[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
        int r;

        process_init(p);
        p->on_exit = on_exit;
        p->userdata = userdata;
        r = make_pipes(fds);
        if (r == 0)
                r = spawn_with(&p->pid, program, argv, envp, cwd, fds);
        if (r < 0) {
                for (int k = 0; k < 3; k++)
                        closep_pair(fds[k]);
                p->pid = 0;
                return r;
        }
        close(fds[0][0]);
        close(fds[1][1]);
        close(fds[2][1]);
        *ret = (struct process_pipes){ .in = fds[0][1], .out = fds[1][0], .err = fds[2][0] };
        for (int k = 0; k < 3; k++)
                (void)fcntl(k == 0 ? ret->in : k == 1 ? ret->out : ret->err, F_SETFL, O_NONBLOCK);
        r = watch(p, base);
        if (r < 0) {
                /* Without a pidfd we cannot watch it safely: end it now rather than leak it. */
                kill(p->pid, SIGKILL);
                (void)waitpid(p->pid, NULL, 0);
                p->reaped = true;
                p->code = CLD_KILLED;
                p->status = SIGKILL;
                close(ret->in);
                close(ret->out);
                close(ret->err);
                return r;
        }
        return 0;
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
}
