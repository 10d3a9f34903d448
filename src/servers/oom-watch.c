/* OOM kills in a cgroup v1 memory cgroup; see oom-watch.h. */
#include "oom-watch.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cgroup-usage.h"
#include "macro.h"

struct oom_watch {
        struct event *ev;
        int efd;       /* the eventfd the kernel signals */
        int control;   /* memory.oom_control, open: read at each signal */
        char *event_control; /* the cgroup's cgroup.event_control, for another's registration */
        bool killed;
};

/* The value of key in memory.oom_control ("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n";
 * oom_kill since Linux 4.13); -1 when absent. */
static long long value_of(const char *text, const char *key) {
        size_t len = strlen(key);

        for (const char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, key, len) == 0 && line[len] == ' ')
                        return strtoll(line + len + 1, NULL, 10);
        return -1;
}

/* The kernel signals as the cgroup enters OOM, before its killer runs; under_oom is
 * cleared and oom_kill counted only later, so neither can be waited for: a signal while
 * the file can still be read is an OOM, and the killer acts unless oom_kill_disable says
 * it may not (systemd never sets it). At the cgroup's removal, which signals too, the
 * file can no longer be read (ENODEV). */
static void on_signal(evutil_socket_t fd, short what, void *userdata) {
        struct oom_watch *w = userdata;
        uint64_t events;
        char buf[256];
        ssize_t n;

        (void)!read(w->efd, &events, sizeof events);
        n = pread(w->control, buf, sizeof buf - 1, 0);
        if (n < 0) {
                event_del(w->ev); /* gone: nothing more will come */
                return;
        }
        buf[n] = '\0';
        if (value_of(buf, "oom_kill_disable") != 1)
                w->killed = true;
}

static int open_in(int dir, const char *name, int flags) {
        int fd = openat(dir, name, flags | O_CLOEXEC | O_NOCTTY);

        return fd < 0 ? -errno : fd;
}

/* "EFD CONTROL_FD" to cgroup.event_control: the v1 registration of an OOM listener. */
int oom_watch_register(struct oom_watch *w) {
        _cleanup_close_ int fd = open(w->event_control, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        char line[32];
        int len;

        if (fd < 0)
                return -errno;
        len = snprintf(line, sizeof line, "%d %d", w->efd, w->control);
        return write(fd, line, (size_t)len) == len ? 0 : -errno;
}

void oom_watch_handover(const struct oom_watch *w, int *ret_efd, int *ret_control, const char **ret_event_control) {
        *ret_efd = w->efd;
        *ret_control = w->control;
        *ret_event_control = w->event_control;
}

void oom_watch_registered(struct oom_watch *w) {
        /* The manager made the descriptor blocking for the helper's stdin: it is the same
         * open file, and the daemon's reads must not block. */
        int flags = fcntl(w->efd, F_GETFL);

        if (flags >= 0 && !(flags & O_NONBLOCK))
                (void)fcntl(w->efd, F_SETFL, flags | O_NONBLOCK);
}

int oom_watch_new(struct event_base *base, const char *root, const char *control_group, struct oom_watch **ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int dir = -1;
        struct oom_watch *w;
        int r;

        r = cgroup_usage_path(root, control_group, &path);
        if (r < 0)
                return r;
        dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->efd = w->control = -1;
        w->control = open_in(dir, "memory.oom_control", O_RDONLY);
        r = w->control < 0 ? w->control : 0;
        if (r == 0 && (w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
                r = -errno;
        if (r == 0 && asprintf(&w->event_control, "%s/cgroup.event_control", path) < 0) {
                w->event_control = NULL;
                r = -ENOMEM;
        }
        if (r == 0 && (!(w->ev = event_new(base, w->efd, EV_READ | EV_PERSIST, on_signal, w)) || event_add(w->ev, NULL) < 0))
                r = -ENOMEM;
        if (r < 0) {
                oom_watch_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

bool oom_watch_killed(const struct oom_watch *w) {
        return w && w->killed;
}

void oom_watch_free(struct oom_watch *w) {
        if (!w)
                return;
        if (w->ev)
                event_free(w->ev);
        if (w->efd >= 0)
                close(w->efd);
        if (w->control >= 0)
                close(w->control);
        free(w->event_control);
        free(w);
}
