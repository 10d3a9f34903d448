/* Child subreaper and the end of left-behind processes; see reaper.h. */
#include "reaper.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "environment.h"
#include "log.h"
#include "macro.h"
#include "process.h"
#include "time-util.h"

/* Enough for the environment of any sane server; the markers are near its end. */
#define ENVIRON_MAX (256 * 1024)
#define DEFAULT_KILL_TIMEOUT 3.0

static void leftover_free(struct reaper *r, struct leftover *l) {
        TAILQ_REMOVE(&r->leftovers, l, entry);
        r->n_leftovers--;
        if (l->timer)
                event_free(l->timer);
        if (l->pidfd >= 0)
                close(l->pidfd);
        free(l);
}

static struct leftover *find_leftover(struct reaper *r, pid_t pid) {
        struct leftover *l;

        TAILQ_FOREACH(l, &r->leftovers, entry)
                if (l->pid == pid)
                        return l;
        return NULL;
}

/* Signals the process, and its group when it leads one (a setsid escapee's helpers). */
static void signal_leftover(struct leftover *l, int sig) {
        (void)pidfd_signal(l->pidfd, l->pid, sig);
        if (getpgid(l->pid) == l->pid)
                (void)killpg(l->pid, sig);
        if (sig == SIGTERM) {
                (void)pidfd_signal(l->pidfd, l->pid, SIGCONT);
                if (getpgid(l->pid) == l->pid)
                        (void)killpg(l->pid, SIGCONT);
        }
}

static void on_leftover_timer(evutil_socket_t fd, short what, void *userdata) {
        struct leftover *l = userdata;
        struct timeval tv = timeval_from_seconds(10);

        log_emit(l->reaper->log, LOG_WARNING, &(struct log_subject){ .server = l->server[0] ? l->server : NULL },
                 "pid %d, left behind by its server, ignored SIGTERM; sending SIGKILL", (int)l->pid);
        signal_leftover(l, SIGKILL);
        l->killed = true;
        evtimer_add(l->timer, &tv);
}

unsigned reaper_reap(struct reaper *r) {
        unsigned n = 0;

        for (;;) {
                siginfo_t si = { 0 };
                struct leftover *l;

                /* Peek first: a server's own process is reaped through its pidfd instead. */
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
                        break;
                if (r->ops->server_exited(si.si_pid, r->userdata)) {
                        n++;
                        continue;
                }
                if (waitpid(si.si_pid, NULL, WNOHANG) <= 0)
                        break;
                n++;
                l = find_leftover(r, si.si_pid);
                if (l)
                        leftover_free(r, l);
                else
                        log_emit(r->log, LOG_DEBUG, NULL, "reaped pid %d, a process re-parented to mcpvisord",
                                 (int)si.si_pid);
        }
        return n;
}

static void on_sigchld(evutil_socket_t sig, short what, void *userdata) {
        reaper_reap(userdata);
}

int reaper_init(struct reaper *r, struct event_base *base, const struct logger *log, const struct reaper_ops *ops,
                void *userdata) {
        *r = (struct reaper){ .base = base, .log = log, .ops = ops, .userdata = userdata };
        TAILQ_INIT(&r->leftovers);
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                log_warning(log, "cannot become a child subreaper (%s); processes that leave their server's "
                            "process group will not be cleaned up", strerror(errno));
        r->sigchld = evsignal_new(base, SIGCHLD, on_sigchld, r);
        if (!r->sigchld || event_add(r->sigchld, NULL) < 0)
                return -ENOMEM;
        return 0;
}

void reaper_done(struct reaper *r) {
        struct leftover *l;

        while ((l = TAILQ_FIRST(&r->leftovers)))
                leftover_free(r, l);
        if (r->sigchld)
                event_free(r->sigchld);
        r->sigchld = NULL;
}

/* The parent pid from /proc/PID/stat; the command name may hold spaces and ')'. */
static pid_t parent_of(pid_t pid) {
        char path[64], buf[512];
        _cleanup_close_ int fd = -1;
        ssize_t n;
        char *p, state;
        int ppid;

        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2 || state == 'Z')
                return -1;
        return ppid;
}

/* Reads MCPVISOR_SERVER and MCPVISOR_INSTANCE from a process's starting environment. */
static void attribution(pid_t pid, char *server, size_t size, uint64_t *instance) {
        char path[64];
        _cleanup_free_ char *buf = malloc(ENVIRON_MAX);
        _cleanup_close_ int fd = -1;
        size_t len = 0;
        ssize_t n;

        *instance = 0;
        server[0] = '\0';
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (!buf || fd < 0)
                return;
        while (len < ENVIRON_MAX - 1 && (n = read(fd, buf + len, ENVIRON_MAX - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
                if (strncmp(buf + i, ENV_SERVER "=", strlen(ENV_SERVER) + 1) == 0)
                        snprintf(server, size, "%s", buf + i + strlen(ENV_SERVER) + 1);
                else if (strncmp(buf + i, ENV_INSTANCE "=", strlen(ENV_INSTANCE) + 1) == 0)
                        *instance = strtoull(buf + i + strlen(ENV_INSTANCE) + 1, NULL, 10);
        }
}

static void end_leftover(struct reaper *r, pid_t pid, const char *server, double kill_timeout) {
        struct leftover *l = calloc(1, sizeof *l);
        struct timeval tv = timeval_from_seconds(kill_timeout);

        if (!l)
                return;
        *l = (struct leftover){ .reaper = r, .pid = pid };
        snprintf(l->server, sizeof l->server, "%s", server);
        l->pidfd = (int)pidfd_open(pid, 0);
        l->timer = evtimer_new(r->base, on_leftover_timer, l);
        TAILQ_INSERT_TAIL(&r->leftovers, l, entry);
        r->n_leftovers++;
        if (l->pidfd < 0 || !l->timer) {
                leftover_free(r, l);
                return;
        }
        log_emit(r->log, LOG_NOTICE, &(struct log_subject){ .server = server[0] ? server : NULL },
                 "pid %d was left behind by %s; sending SIGTERM", (int)pid,
                 server[0] ? "its server" : "a server that cleared its environment");
        signal_leftover(l, SIGTERM);
        evtimer_add(l->timer, &tv);
}

unsigned reaper_scan(struct reaper *r, bool all) {
        _cleanup_(closedirp) DIR *dir = NULL;
        pid_t self = getpid();
        struct dirent *de;
        unsigned ending = 0;

        reaper_reap(r);
        dir = opendir("/proc");
        if (!dir)
                return 0;
        while ((de = readdir(dir))) {
                char server[65];
                uint64_t instance;
                double kill_timeout = DEFAULT_KILL_TIMEOUT;
                pid_t pid;

                if (!isdigit((unsigned char)de->d_name[0]))
                        continue;
                pid = (pid_t)atoi(de->d_name);
                if (parent_of(pid) != self || find_leftover(r, pid) || r->ops->is_server(pid, r->userdata))
                        continue;
                attribution(pid, server, sizeof server, &instance);
                /* Unattributed: it cleared its environment; whose it was is unknowable, so it
                 * is ended only when everything is. */
                if (instance == 0 ? !all : !r->ops->left_behind(server, instance, &kill_timeout, r->userdata))
                        continue;
                end_leftover(r, pid, server, kill_timeout);
                ending++;
        }
        return ending;
}

void reaper_kill_all(struct reaper *r) {
        struct leftover *l;
        uint64_t deadline = now_usec() + USEC_PER_SEC;

        TAILQ_FOREACH(l, &r->leftovers, entry)
                signal_leftover(l, SIGKILL);
        while (r->n_leftovers > 0 && now_usec() < deadline) {
                if (reaper_reap(r) == 0)
                        usleep(10000);
        }
}
