/* Fake processes and a reaper with nothing to reap; see fake-process.h. Test code: the
 * registry of fakes is file-level state, as the daemon's process.c has none to hang it on. */
#include "fake-process.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reaper.h"

/* Far above any real pid_max, so a stray waitpid() or kill() reaches nobody. */
#define FAKE_PID_BASE 1000000000

struct fake_registry {
        struct fake_process **items;
        size_t n, cap;
        unsigned spawned;
        int fail_next;
        const struct fake_process_hooks *hooks;
        void *userdata;
};

static struct fake_registry registry;

void fake_process_set_hooks(const struct fake_process_hooks *hooks, void *userdata) {
        registry.hooks = hooks;
        registry.userdata = userdata;
}

void fake_process_fail_next_spawn(int error) {
        registry.fail_next = error;
}

size_t fake_process_count(void) {
        return registry.n;
}

struct fake_process *fake_process_at(size_t i) {
        return i < registry.n ? registry.items[i] : NULL;
}

struct fake_process *fake_process_of(const struct process *p) {
        for (size_t i = 0; i < registry.n; i++)
                if (registry.items[i]->proc == p)
                        return registry.items[i];
        return NULL;
}

struct fake_process *fake_process_of_pid(pid_t pid) {
        for (size_t i = 0; i < registry.n; i++)
                if (registry.items[i]->proc->pid == pid)
                        return registry.items[i];
        return NULL;
}

void fake_process_close_fd(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void registry_add(struct fake_process *fp) {
        if (registry.n == registry.cap) {
                size_t cap = registry.cap ? registry.cap * 2 : 8;
                struct fake_process **items = realloc(registry.items, cap * sizeof *items);
                if (!items)
                        abort();
                registry.items = items;
                registry.cap = cap;
        }
        registry.items[registry.n++] = fp;
}

static void registry_remove(struct fake_process *fp) {
        for (size_t i = 0; i < registry.n; i++)
                if (registry.items[i] == fp) {
                        memmove(&registry.items[i], &registry.items[i + 1], (registry.n - i - 1) * sizeof *registry.items);
                        registry.n--;
                        break;
                }
        if (registry.n == 0) {
                free(registry.items);
                registry.items = NULL;
                registry.cap = 0;
        }
}

static char **copy_argv(char *const *argv) {
        size_t n = 0;
        char **copy;

        while (argv && argv[n])
                n++;
        copy = calloc(n + 1, sizeof *copy);
        if (!copy)
                abort();
        for (size_t i = 0; i < n; i++)
                if (!(copy[i] = strdup(argv[i])))
                        abort();
        return copy;
}

static void free_argv(char **argv) {
        for (char **a = argv; a && *a; a++)
                free(*a);
        free(argv);
}

/* ---- process.h ---- */

void process_init(struct process *p) {
        *p = (struct process){ .pidfd = -1, .failure_fd = -1 };
}

static void on_exit_event(evutil_socket_t fd, short what, void *userdata) {
        struct process *p = userdata;

        p->on_exit(p, p->userdata);
}

/* The server's ends, taken as process.c takes them, kept as the harness's own:
 * non-blocking, so that the harness never blocks on a server that does not read. */
static void take_stdio(struct fake_process *fp, const int stdio[3]) {
        for (int k = 0; k < 3; k++)
                (void)fcntl(stdio[k], F_SETFL, O_NONBLOCK);
        fp->stdin_fd = stdio[0];
        fp->stdout_fd = stdio[1];
        fp->stderr_fd = stdio[2];
}

int process_spawn(struct process *p, struct event_base *base, const char *program, char *const *argv,
                  char *const *envp, const char *cwd, const struct run_as *as, const int stdio[3],
                  process_exit_fn on_exit, void *userdata) {
        struct fake_process *fp;
        int r;

        (void)program;
        (void)envp;
        (void)cwd;
        (void)as;
        process_init(p);
        p->on_exit = on_exit;
        p->userdata = userdata;
        if (registry.fail_next) {
                r = registry.fail_next;
                registry.fail_next = 0;
                for (int k = 0; k < 3; k++)
                        close(stdio[k]);
                return r;
        }
        fp = calloc(1, sizeof *fp);
        if (!fp)
                abort();
        p->exit_event = event_new(base, -1, 0, on_exit_event, p);
        if (!p->exit_event)
                abort();
        *fp = (struct fake_process){ .proc = p, .serial = ++registry.spawned, .argv = copy_argv(argv) };
        take_stdio(fp, stdio);
        p->pid = FAKE_PID_BASE + (pid_t)fp->serial;
        registry_add(fp);
        if (registry.hooks && registry.hooks->spawned)
                registry.hooks->spawned(fp, registry.userdata);
        return 0;
}

void fake_process_exit(struct fake_process *fp, int code, int status) {
        if (fp->exited)
                return;
        fp->exited = true;
        fp->code = code;
        fp->status = status;
        /* A real exit closes the process's ends of its pipes. */
        fake_process_close_fd(&fp->stdin_fd);
        fake_process_close_fd(&fp->stdout_fd);
        fake_process_close_fd(&fp->stderr_fd);
        event_active(fp->proc->exit_event, EV_READ, 1);
}

int process_reap(struct process *p) {
        struct fake_process *fp;

        if (p->reaped)
                return 1;
        fp = fake_process_of(p);
        if (!fp || !fp->exited)
                return 0;
        p->reaped = true;
        p->code = fp->code;
        p->status = fp->status;
        return 1;
}

int process_signal_group(struct process *p, int sig) {
        struct fake_process *fp = fake_process_of(p);

        if (p->reaped || !fp)
                return -ESRCH;
        if (sig > 0 && sig < 32)
                fp->signals |= 1u << sig;
        if (registry.hooks && registry.hooks->signalled)
                registry.hooks->signalled(fp, sig, registry.userdata);
        return 0;
}

/* A signal by pidfd (the systemd-creds child of the token key's load): no fake process
 * has a pidfd, so there is nothing to signal. */
int pidfd_signal(int pidfd, pid_t pid, int sig) {
        (void)pidfd;
        (void)pid;
        (void)sig;
        return -ESRCH;
}

void process_done(struct process *p) {
        struct fake_process *fp = fake_process_of(p);

        if (p->exit_event)
                event_free(p->exit_event);
        p->exit_event = NULL;
        if (!fp)
                return;
        if (registry.hooks && registry.hooks->gone)
                registry.hooks->gone(fp, registry.userdata);
        fake_process_close_fd(&fp->stdin_fd);
        fake_process_close_fd(&fp->stdout_fd);
        fake_process_close_fd(&fp->stderr_fd);
        registry_remove(fp);
        free_argv(fp->argv);
        free(fp);
}

/* ---- reaper.h: fake processes leave nothing behind, and nothing is re-parented ---- */

int reaper_init(struct reaper *r, struct event_base *base, const struct logger *log, const struct reaper_ops *ops,
                void *userdata) {
        *r = (struct reaper){ .base = base, .log = log, .ops = ops, .userdata = userdata };
        TAILQ_INIT(&r->leftovers);
        return 0;
}

void reaper_done(struct reaper *r) {
        (void)r;
}

unsigned reaper_reap(struct reaper *r) {
        (void)r;
        return 0;
}

unsigned reaper_scan(struct reaper *r) {
        (void)r;
        return 0;
}

void reaper_scan_soon(struct reaper *r) {
        (void)r;
}

bool reaper_scanning(const struct reaper *r) {
        (void)r;
        return false;
}

unsigned reaper_end_predecessors(struct reaper *r, const char *daemon_id) {
        (void)r;
        (void)daemon_id;
        return 0;
}

void reaper_kill_all(struct reaper *r) {
        (void)r;
}
