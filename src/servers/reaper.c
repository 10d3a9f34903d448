/* Child subreaper and the end of left-behind processes; see reaper.h. */
#include "reaper.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "environment.h"
#include "log.h"
#include "macro.h"
#include "proc-tree.h"
#include "process.h"
#include "time-util.h"

/* Enough for the environment of any sane server; the markers are near its end. */
#define ENVIRON_MAX (256 * 1024)

static void leftover_free(struct reaper *r, struct leftover *l) {
        TAILQ_REMOVE(&r->leftovers, l, entry);
        r->n_leftovers--;
        if (l->timer)
                event_free(l->timer);
        if (l->gone)
                event_free(l->gone);
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
        bool more;

        return reaper_reap_some(r, UINT_MAX, &more);
}

unsigned reaper_reap_some(struct reaper *r, unsigned max, bool *ret_more) {
        unsigned n = 0, servers = 0;

        *ret_more = false;
        for (;;) {
                siginfo_t si = { 0 };
                struct leftover *l;

                /* Peek first: a server's own process is reaped through its pidfd instead. */
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
                        break;
                if (servers == max) {
                        *ret_more = true;
                        break;
                }
                if (r->ops->server_exited(si.si_pid, r->userdata)) {
                        n++;
                        servers++;
                        continue;
                }
                if (waitpid(si.si_pid, NULL, WNOHANG) <= 0)
                        break;
                n++;
                r->rescan = true;
                l = find_leftover(r, si.si_pid);
                if (l)
                        leftover_free(r, l);
                else
                        log_emit(r->log, LOG_DEBUG, NULL, "reaped pid %d, a process re-parented to mcpvisord",
                                 (int)si.si_pid);
        }
        return n;
}

/* A burst of exits (a reload that changed every server) is taken a few at a time, each
 * turn at the priority of spawns (process.h), so clients are answered between turns. */
static void on_sigchld(evutil_socket_t sig, short what, void *userdata) {
        struct reaper *r = userdata;
        bool more;

        (void)reaper_reap_some(r, PROCESS_SPAWNS_PER_POLL, &more);
        if (more)
                event_active(r->more, 0, 0);
}

static int descendant_by_pid(const void *a, const void *b);
static void on_scan_step(evutil_socket_t fd, short what, void *userdata);
static void scan_cancel(struct reaper *r);

/* What the process that exec'd into the daemon had started is not a server's leftover. */
static void record_inherited(struct reaper *r) {
        _cleanup_(proc_tree_done) struct proc_tree t = { 0 };
        pid_t self = getpid();

        if (proc_tree_read(&t, REAPER_SCAN_MAX) < 0 || !(r->inherited = calloc(t.n + 1, sizeof *r->inherited)))
                return;
        for (size_t i = 0; i < t.n; i++)
                if (t.procs[i].ppid == self)
                        r->inherited[r->n_inherited++] = (struct descendant){ .pid = t.procs[i].pid,
                                                                             .start = t.procs[i].start };
        qsort(r->inherited, r->n_inherited, sizeof *r->inherited, descendant_by_pid);
        if (r->n_inherited)
                log_info(r->log, "%zu process%s started before the daemon are its children; they are left alone",
                         r->n_inherited, r->n_inherited == 1 ? "" : "es");
}

int reaper_init(struct reaper *r, struct event_base *base, const struct logger *log, const struct reaper_ops *ops,
                void *userdata) {
        *r = (struct reaper){ .base = base, .log = log, .ops = ops, .userdata = userdata };
        TAILQ_INIT(&r->leftovers);
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                log_warning(log, "cannot become a child subreaper (%s); processes that leave their server's "
                            "process group will not be cleaned up", strerror(errno));
        r->sigchld = evsignal_new(base, SIGCHLD, on_sigchld, r);
        r->more = event_new(base, -1, 0, on_sigchld, r);
        r->scan_step = event_new(base, -1, 0, on_scan_step, r);
        if (!r->sigchld || !r->more || !r->scan_step || event_add(r->sigchld, NULL) < 0)
                return -ENOMEM;
        (void)event_priority_set(r->sigchld, EVENT_PRIORITY_SPAWN); /* fails only on a base without them */
        (void)event_priority_set(r->more, EVENT_PRIORITY_SPAWN);
        (void)event_priority_set(r->scan_step, EVENT_PRIORITY_SPAWN);
        record_inherited(r);
        return 0;
}

void reaper_done(struct reaper *r) {
        struct leftover *l;

        while ((l = TAILQ_FIRST(&r->leftovers)))
                leftover_free(r, l);
        scan_cancel(r);
        if (r->scan_step)
                event_free(r->scan_step);
        r->scan_step = NULL;
        free(r->known);
        r->known = NULL;
        r->n_known = 0;
        free(r->children);
        r->children = NULL;
        r->n_children = 0;
        free(r->inherited);
        r->inherited = NULL;
        r->n_inherited = 0;
        if (r->sigchld)
                event_free(r->sigchld);
        r->sigchld = NULL;
        if (r->more)
                event_free(r->more);
        r->more = NULL;
}

static pid_t parent_of(pid_t pid) {
        struct proc_entry e;

        return proc_stat_read(pid, &e) < 0 ? -1 : e.ppid;
}

/* The MCPVISOR_* markers of a process's starting environment. */
struct marks {
        char server[65];
        uint64_t instance;      /* 0: none */
        char daemon[128];       /* a socket path fits sun_path's 108 bytes */
};

static bool take_mark(const char *entry, const char *name, char *value, size_t size) {
        size_t len = strlen(name);

        if (strncmp(entry, name, len) != 0 || entry[len] != '=')
                return false;
        snprintf(value, size, "%s", entry + len + 1);
        return true;
}

static void read_marks(pid_t pid, struct marks *m) {
        char path[64], number[32];
        _cleanup_free_ char *buf = malloc(ENVIRON_MAX);
        _cleanup_close_ int fd = -1;
        size_t len = 0;
        ssize_t n;

        *m = (struct marks){ 0 };
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (!buf || fd < 0)
                return;
        while (len < ENVIRON_MAX - 1 && (n = read(fd, buf + len, ENVIRON_MAX - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
                if (!take_mark(buf + i, ENV_SERVER, m->server, sizeof m->server) &&
                    !take_mark(buf + i, ENV_DAEMON, m->daemon, sizeof m->daemon) &&
                    take_mark(buf + i, ENV_INSTANCE, number, sizeof number))
                        m->instance = strtoull(number, NULL, 10);
}

/* A process that is not our child (a dead predecessor's) is never reaped here: its pidfd
 * says when it is gone. */
static void on_leftover_gone(evutil_socket_t fd, short what, void *userdata) {
        struct leftover *l = userdata;

        log_emit(l->reaper->log, LOG_DEBUG, NULL, "pid %d, left by a previous mcpvisord, is gone", (int)l->pid);
        leftover_free(l->reaper, l);
}

/* Takes pidfd; why names who left it, for the log. */
static void end_leftover(struct reaper *r, pid_t pid, int pidfd, const char *server, double kill_timeout,
                         bool foreign, const char *why) {
        struct leftover *l = calloc(1, sizeof *l);
        struct timeval tv = timeval_from_seconds(kill_timeout);

        if (!l) {
                if (pidfd >= 0)
                        close(pidfd);
                return;
        }
        *l = (struct leftover){ .reaper = r, .pid = pid, .pidfd = pidfd, .foreign = foreign };
        snprintf(l->server, sizeof l->server, "%s", server);
        l->timer = evtimer_new(r->base, on_leftover_timer, l);
        if (foreign)
                l->gone = event_new(r->base, pidfd, EV_READ, on_leftover_gone, l);
        TAILQ_INSERT_TAIL(&r->leftovers, l, entry);
        r->n_leftovers++;
        if (l->pidfd < 0 || !l->timer || (foreign && (!l->gone || event_add(l->gone, NULL) < 0))) {
                leftover_free(r, l);
                return;
        }
        log_emit(r->log, LOG_NOTICE, &(struct log_subject){ .server = server[0] ? server : NULL },
                 "pid %d was left behind by %s; sending SIGTERM", (int)pid, why);
        signal_leftover(l, SIGTERM);
        evtimer_add(l->timer, &tv);
}

static int descendant_by_pid(const void *a, const void *b) {
        const struct descendant *x = a, *y = b;

        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The record of this very process (same pid and start) in list, or NULL. */
static const struct descendant *record_of(const struct descendant *list, size_t n, pid_t pid, uint64_t start) {
        struct descendant key = { .pid = pid };
        const struct descendant *d = n ? bsearch(&key, list, n, sizeof *list, descendant_by_pid) : NULL;

        return d && d->start == start ? d : NULL;
}

/* The attribution the last scan recorded for this very process, or NULL. */
static const struct descendant *known_of(const struct descendant *list, size_t n, const struct proc_entry *e) {
        return record_of(list, n, e->pid, e->start);
}

static int pid_cmp(const void *a, const void *b) {
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return (x > y) - (x < y);
}

/* The daemon's children now, from /proc/self/task/TID/children of the loop's thread, the
 * main one: it spawns every server (a reload's reading thread spawns nothing) and takes
 * what is re-parented to the daemon. A few bytes per child, read in one go. */
static void read_children(struct reaper *r) {
        char path[64];
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -1;
        size_t len = 0, size = 4096, n = 0;
        pid_t *pids;
        ssize_t got;

        free(r->children);
        r->children = NULL;
        r->n_children = 0;
        r->children_read = false;
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || !(buf = malloc(size)))
                return;
        while ((got = read(fd, buf + len, size - len - 1)) > 0) {
                char *bigger;

                len += (size_t)got;
                if (size - len > 1)
                        continue;
                if (!(bigger = realloc(buf, size * 2)))
                        return;
                buf = bigger;
                size *= 2;
        }
        if (got < 0)
                return;
        buf[len] = '\0';
        /* at most one pid per two bytes ("1 ") */
        if (!(pids = calloc(len / 2 + 1, sizeof *pids)))
                return;
        for (char *p = buf, *end; *p; p = end) {
                long v = strtol(p, &end, 10);

                if (end == p)
                        break;
                pids[n++] = (pid_t)v;
        }
        qsort(pids, n, sizeof *pids, pid_cmp);
        r->children = pids;
        r->n_children = n;
        r->children_read = true;
}

void reaper_scan_begin(struct reaper *r) {
        read_children(r);
        r->newest_run = r->ops->newest_run(r->userdata);
}

/* Our child pid was not when the scan began: its parent died while the scan read the tree,
 * maybe after the scan read that parent, maybe before, and what it was below is lost. */
static bool reparented_while_read(const struct reaper *r, pid_t pid) {
        return r->children_read && !bsearch(&pid, r->children, r->n_children, sizeof pid, pid_cmp);
}

/* Whose is our child e: a server's own process, attributed before, or marked; if none, and
 * it came to us while the tree was read, any run that was running then. */
static void attribute_child(struct reaper *r, const struct proc_entry *e, struct descendant *d) {
        const struct descendant *k = known_of(r->known, r->n_known, e);
        const char *server = NULL;
        struct marks m;

        *d = (struct descendant){ .pid = e->pid, .start = e->start };
        d->instance = r->ops->run_of(e->pid, &server, r->userdata);
        if (d->instance != 0) {
                snprintf(d->server, sizeof d->server, "%s", server);
        } else if (k && k->instance != 0) {
                d->instance = k->instance;
                memcpy(d->server, k->server, sizeof d->server);
        } else {
                read_marks(e->pid, &m);
                d->instance = m.instance;
                memcpy(d->server, m.server, sizeof d->server);
        }
        if (d->instance != 0)
                return;
        if (k && k->runs_up_to != 0)
                d->runs_up_to = k->runs_up_to;
        else if (reparented_while_read(r, e->pid))
                d->runs_up_to = r->newest_run;
}

/* The pidfd of our child d, the very process the scan saw (a scan read over several loop
 * turns may have seen one that we reaped since, its pid now another's), or -1. */
static int child_pidfd(const struct descendant *d) {
        int pidfd = (int)pidfd_open(d->pid, 0);
        struct proc_entry now;

        /* Our child stays ours until we reap it: then the pidfd is the process read here. */
        if (pidfd >= 0 && (proc_stat_read(d->pid, &now) < 0 || now.ppid != getpid() || now.start != d->start)) {
                close(pidfd);
                return -1;
        }
        return pidfd;
}

/* Ends our child d unless it is a server's own process or belongs to a live run. One
 * attributed to none is a leftover too: the daemon starts nothing but servers. */
static bool end_if_left(struct reaper *r, const struct descendant *d) {
        const char *server;
        int pidfd;

        if (r->ops->run_of(d->pid, &server, r->userdata) != 0 || find_leftover(r, d->pid) ||
            record_of(r->inherited, r->n_inherited, d->pid, d->start))
                return false;
        if (d->instance != 0 && !r->ops->left_behind(d->server, d->instance, r->userdata))
                return false;
        /* Not ended on a guess while the run it may belong to lives: a running server's
         * grandchild whose parent died while a scan read the tree is not taken for a leftover. */
        if (d->instance == 0 && d->runs_up_to != 0 && r->ops->run_up_to_running(d->runs_up_to, r->userdata))
                return false;
        pidfd = child_pidfd(d);
        if (pidfd < 0)
                return false;
        end_leftover(r, d->pid, pidfd, d->server, r->ops->kill_timeout(d->server, r->userdata), false,
                     d->server[0] ? "its server" : "a server that cleared its environment");
        return true;
}

/* Attributes a process below our child top (already in tops): to the nearest ancestor,
 * itself included, attributed by the last scan, else to top's run. False if to none. */
static bool attribute_below(const struct reaper *r, const struct proc_tree *t, const struct proc_entry *e,
                            const struct proc_entry *top, const struct descendant *tops, size_t n_tops,
                            struct descendant *d) {
        const struct descendant *owner = NULL;

        for (const struct proc_entry *a = e; a && a != top && !owner; a = proc_tree_find(t, a->ppid))
                owner = known_of(r->known, r->n_known, a);
        if (!owner)
                owner = known_of(tops, n_tops, top);
        if (!owner || owner->instance == 0)
                return false;
        *d = (struct descendant){ .pid = e->pid, .start = e->start, .instance = owner->instance };
        memcpy(d->server, owner->server, sizeof d->server);
        return true;
}

#define ANCESTRY_MAX 64

/* What a scan sees in the tree t, read since the scan began. */
unsigned reaper_scan_tree(struct reaper *r, const struct proc_tree *tree) {
        const struct proc_tree t = *tree;
        struct descendant *seen;
        size_t n_seen = 0, n_tops;
        pid_t self = getpid();
        unsigned ending = 0;

        if (!(seen = calloc(t.n + 1, sizeof *seen)))
                return 0;
        /* Our children first: each one's attribution is its subtree's when nothing nearer is known. */
        for (size_t i = 0; i < t.n; i++)
                if (t.procs[i].ppid == self) {
                        attribute_child(r, &t.procs[i], &seen[n_seen]);
                        ending += end_if_left(r, &seen[n_seen++]);
                }
        n_tops = n_seen;
        for (size_t i = 0; i < t.n; i++) {
                const struct proc_entry *top = proc_tree_below(&t, &t.procs[i], self, ANCESTRY_MAX);

                if (top && top != &t.procs[i] && attribute_below(r, &t, &t.procs[i], top, seen, n_tops, &seen[n_seen]))
                        n_seen++;
        }
        qsort(seen, n_seen, sizeof *seen, descendant_by_pid);
        free(r->known);
        r->known = reallocarray(seen, n_seen + 1, sizeof *seen) ?: seen; /* only what was kept */
        r->n_known = n_seen;
        return ending;
}

static void scan_begin(struct reaper *r) {
        reaper_reap(r);
        r->rescan = false;
        reaper_scan_begin(r);
}

static void scan_cancel(struct reaper *r) {
        if (!r->scanning)
                return;
        proc_tree_reader_done(r->scanning);
        free(r->scanning);
        r->scanning = NULL;
        r->scan_again = false;
        if (r->scan_step)
                event_del(r->scan_step);
}

unsigned reaper_scan(struct reaper *r) {
        _cleanup_(proc_tree_done) struct proc_tree t = { 0 };

        scan_cancel(r);
        scan_begin(r);
        if (proc_tree_read(&t, REAPER_SCAN_MAX) < 0)
                return 0;
        return reaper_scan_tree(r, &t);
}

/* Without reaping first: exits are taken a few a turn (on_sigchld, a server's pidfd), each
 * of which may spawn a restart, and a zombie is not in the tree anyway. */
static void scan_start(struct reaper *r) {
        r->rescan = false;
        reaper_scan_begin(r);
        r->scanning = malloc(sizeof *r->scanning);
        if (r->scanning && proc_tree_reader_open(r->scanning, REAPER_SCAN_MAX) < 0) {
                free(r->scanning);
                r->scanning = NULL;
        }
        if (!r->scanning) {
                (void)reaper_scan(r); /* at once, then */
                return;
        }
        event_active(r->scan_step, 0, 0);
}

/* A few processes read a turn, at the priority of spawns: the loop answers clients between. */
static void on_scan_step(evutil_socket_t fd, short what, void *userdata) {
        struct reaper *r = userdata;
        int done = proc_tree_reader_step(r->scanning, REAPER_SCAN_PER_TURN);

        if (done == 0) {
                event_active(r->scan_step, 0, 0);
                event_base_loopbreak(r->base); /* as supervisor.c's starts do */
                return;
        }
        if (done > 0)
                (void)reaper_scan_tree(r, &r->scanning->tree);
        proc_tree_reader_done(r->scanning);
        free(r->scanning);
        r->scanning = NULL;
        if (r->scan_again) {
                r->scan_again = false;
                scan_start(r);
        }
}

void reaper_scan_soon(struct reaper *r) {
        if (r->scanning)
                r->scan_again = true; /* what changed may have been read already */
        else
                scan_start(r);
}

bool reaper_scanning(const struct reaper *r) {
        return r->scanning != NULL;
}

/* Ours to end: our user's (any user's for a root daemon, whose servers may run as their
 * users: run-as.h), not us, and not ours. */
static bool may_end(pid_t pid, pid_t self) {
        char path[64];
        struct stat st;
        uid_t euid = geteuid();

        snprintf(path, sizeof path, "/proc/%d", (int)pid);
        return pid != self && stat(path, &st) == 0 && (euid == 0 || st.st_uid == euid) && parent_of(pid) != self;
}

unsigned reaper_end_predecessors(struct reaper *r, const char *daemon_id) {
        _cleanup_(closedirp) DIR *dir = opendir("/proc");
        pid_t self = getpid();
        struct dirent *de;
        unsigned ending = 0;

        while (dir && (de = readdir(dir))) {
                pid_t pid = isdigit((unsigned char)de->d_name[0]) ? (pid_t)atoi(de->d_name) : 0;
                struct marks m;
                int pidfd;

                if (pid <= 0 || !may_end(pid, self) || find_leftover(r, pid))
                        continue;
                /* The pidfd first: if its process still lives after the read, the environ
                 * read was its own, not that of a process that took over the pid. */
                pidfd = (int)pidfd_open(pid, 0);
                if (pidfd < 0)
                        continue;
                read_marks(pid, &m);
                if (strcmp(m.daemon, daemon_id) != 0 || pidfd_send_signal(pidfd, 0, NULL, 0) < 0) {
                        close(pidfd);
                        continue;
                }
                end_leftover(r, pid, pidfd, m.server, r->ops->kill_timeout(m.server, r->userdata), true,
                             "a previous mcpvisord on this socket");
                ending++;
        }
        return ending;
}

void reaper_kill_all(struct reaper *r) {
        struct leftover *l;
        uint64_t deadline = now_usec() + USEC_PER_SEC;

        struct leftover *next;

        for (l = TAILQ_FIRST(&r->leftovers); l; l = next) {
                next = TAILQ_NEXT(l, entry);
                signal_leftover(l, SIGKILL);
                if (l->foreign) /* not ours to reap */
                        leftover_free(r, l);
        }
        while (r->n_leftovers > 0 && now_usec() < deadline) {
                if (reaper_reap(r) == 0)
                        usleep(10000);
        }
}
