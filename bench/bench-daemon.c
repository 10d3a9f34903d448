/* The daemon under measurement: started the way tests/integration/harness.c starts it (its
 * own sockets in a private directory, NOTIFY_SOCKET a datagram socket of ours), and read
 * from /proc. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORDS 32

int64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ms_left(int64_t deadline_ns) {
        int64_t left = deadline_ns - now_ns();

        return left > 0 ? (int)((left + 999999) / 1000000) : 0;
}

static int write_config(const char *path, const struct daemon_opts *o) {
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        /* Defaults everywhere (what an installed daemon runs with) unless a part says. */
        fprintf(f, "{\"mcpvisor\": {%s}, \"mcpServers\": {\"%s\": {\"%s\": \"%s\"", o->settings ? o->settings : "",
                BENCH_SERVER_NAME, o->url ? "url" : "command", o->url ? o->url : o->server);
        if (o->server_tools)
                fprintf(f, ", \"args\": [\"--tools\", \"%u\"]", o->server_tools);
        if (o->server_members)
                fprintf(f, ", %s", o->server_members);
        fprintf(f, "}");
        if (o->more_entries)
                fprintf(f, ", %s", o->more_entries);
        servers_config(f, o->server, o->servers, 0, 0);
        fprintf(f, "}}\n");
        return fclose(f) == 0 ? 0 : -errno;
}

static int open_notify(struct daemon_run *d, char *path, size_t size) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int one = 1;

        snprintf(path, size, "%s/notify.sock", d->dir);
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (d->notify_fd < 0)
                return -errno;
        /* SO_PASSCRED: READY=1 names its sender, the daemon even behind a prefix command. */
        if (bind(d->notify_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
            setsockopt(d->notify_fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0)
                return -errno;
        return 0;
}

/* Splits the prefix command at spaces into argv (in place of a copy of it). */
static int add_prefix(const char **argv, int *n, char *words) {
        for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                if (*n >= MAX_WORDS - 12)
                        return -E2BIG;
                argv[(*n)++] = w;
        }
        return 0;
}

static int spawn(struct daemon_run *d, const struct daemon_opts *o, const char *config, const char *notify_path) {
        const char *argv[MAX_WORDS] = { 0 };
        char notify_env[300], path_env[1024], cred_env[300], control[160], *prefix = o->prefix ? strdup(o->prefix) : NULL;
        char *envp[] = { path_env, notify_env, o->credentials ? cred_env : NULL, NULL };
        posix_spawn_file_actions_t fa;
        int n = 0, r;

        snprintf(notify_env, sizeof notify_env, "NOTIFY_SOCKET=%s", notify_path);
        snprintf(cred_env, sizeof cred_env, "CREDENTIALS_DIRECTORY=%s", o->credentials ? o->credentials : "");
        snprintf(path_env, sizeof path_env, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        snprintf(control, sizeof control, "%s/control.sock", d->dir);
        if (prefix && (r = add_prefix(argv, &n, prefix)) < 0) {
                free(prefix);
                return r;
        }
        const char *rest[] = { o->daemon, "--socket", d->sock, "--control-socket", control, "--config", config, NULL };
        for (const char **a = rest; *a; a++)
                argv[n++] = *a;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        d->spawned_ns = now_ns();
        r = posix_spawnp(&d->spawned, argv[0], &fa, NULL, (char **)argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        free(prefix);
        return -r;
}

int daemon_start(struct daemon_run *d, const struct daemon_opts *o) {
        char config[128], notify_path[128];
        int r;

        *d = (struct daemon_run){ .notify_fd = -1 };
        strcpy(d->dir, "/tmp/mcpvisor-bench-XXXXXX");
        if (!mkdtemp(d->dir))
                return -errno;
        snprintf(config, sizeof config, "%s/mcpvisor.json", d->dir);
        snprintf(d->sock, sizeof d->sock, "%s/mcp.sock", d->dir);
        snprintf(d->log, sizeof d->log, "%s/daemon.log", d->dir);
        r = write_config(config, o);
        if (r >= 0)
                r = open_notify(d, notify_path, sizeof notify_path);
        if (r >= 0)
                r = spawn(d, o, config, notify_path);
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: cannot start %s: %s\n", o->daemon, strerror(-r));
        return r;
}

static void note(struct daemon_run *d, char *text, pid_t sender) {
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                if (strcmp(l, "READY=1") == 0 && !d->ready) {
                        d->ready = true;
                        d->ready_ns = now_ns();
                        d->pid = sender;
                } else if (strncmp(l, "STATUS=", 7) == 0) {
                        unsigned ready, total;
                        snprintf(d->status, sizeof d->status, "%s", l + 7);
                        if (sscanf(l + 7, "%u/%u servers ready", &ready, &total) == 2 && ready < total)
                                d->saw_unready = true;
                }
        }
}

void daemon_pump(struct daemon_run *d) {
        for (;;) {
                char buf[4096];
                union {
                        struct cmsghdr h;
                        char space[CMSG_SPACE(sizeof(struct ucred))];
                } ctl;
                struct iovec iov = { buf, sizeof buf - 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof ctl };
                ssize_t len = recvmsg(d->notify_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                pid_t sender = 0;

                if (len < 0)
                        return;
                buf[len] = '\0';
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
                                sender = ((struct ucred *)CMSG_DATA(c))->pid;
                note(d, buf, sender);
        }
}

static int wait_for(struct daemon_run *d, bool (*done)(struct daemon_run *, const char *), const char *arg,
                    int timeout_ms) {
        int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;

        for (;;) {
                struct pollfd p = { d->notify_fd, POLLIN, 0 };
                daemon_pump(d);
                if (done(d, arg))
                        return 0;
                if (waitpid(d->spawned, NULL, WNOHANG) == d->spawned) {
                        d->spawned = 0; /* it exited before saying so: see its log */
                        return -ECHILD;
                }
                if (ms_left(deadline) == 0)
                        return -ETIMEDOUT;
                poll(&p, 1, ms_left(deadline) < 100 ? ms_left(deadline) : 100); /* 100: notice an early exit */
        }
}

static bool is_ready(struct daemon_run *d, const char *unused) {
        return d->ready;
}

static bool has_status(struct daemon_run *d, const char *needle) {
        return strstr(d->status, needle) != NULL;
}

int daemon_wait_ready(struct daemon_run *d, int timeout_ms) {
        return wait_for(d, is_ready, NULL, timeout_ms);
}

int daemon_wait_status(struct daemon_run *d, const char *needle, int timeout_ms) {
        return wait_for(d, has_status, needle, timeout_ms);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* Waits for what we spawned to exit, reading notifications meanwhile (a stop sends some). */
static int wait_exit(struct daemon_run *d, int timeout_ms) {
        int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
        int pidfd = pidfd_open(d->spawned, 0), status;

        while (waitpid(d->spawned, &status, WNOHANG) != d->spawned) {
                struct pollfd p[2] = { { pidfd, POLLIN, 0 }, { d->notify_fd, POLLIN, 0 } };
                int left = ms_left(deadline);
                if (left == 0) {
                        if (pidfd >= 0)
                                close(pidfd);
                        return -ETIMEDOUT;
                }
                /* Without a pidfd nothing says when it exits: look again shortly. */
                poll(p, 2, pidfd >= 0 ? left : (left < 10 ? left : 10));
                daemon_pump(d);
        }
        if (pidfd >= 0)
                close(pidfd);
        return status;
}

int daemon_stop(struct daemon_run *d, int timeout_ms) {
        int status = -1;

        if (d->spawned > 0) {
                kill(d->pid > 0 ? d->pid : d->spawned, SIGTERM);
                status = wait_exit(d, timeout_ms);
                if (status < 0) {
                        kill(d->spawned, SIGKILL);
                        if (d->pid > 0)
                                kill(d->pid, SIGKILL);
                        wait_exit(d, 5000);
                }
                d->spawned = 0;
        }
        if (d->notify_fd >= 0)
                close(d->notify_fd);
        d->notify_fd = -1;
        if (d->dir[0] && !getenv("BENCH_KEEP"))
                nftw(d->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        d->dir[0] = '\0';
        return status;
}


int pin_processes(const pid_t *pids, unsigned n, const cpu_set_t *set) {
        for (unsigned i = 0; i < n; i++)
                if (pids[i] > 0 && sched_setaffinity(pids[i], sizeof *set, set) < 0)
                        return -errno;
        return 0;
}
