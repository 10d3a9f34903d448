/* Idle clients: how much of the daemon's memory each one holds, and whether it holds
 * them all. Clients connect in batches below the listen backlog, so connect() never
 * blocks while the daemon waits for us to read its notifications (one STATUS= per
 * connection). */
#include "bench.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define BATCH 256
#define BATCH_TIMEOUT_NS (30 * (int64_t)1000000000)

static const char PING[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";

int raise_nofile(unsigned n) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (rl.rlim_max < n) {
                /* Only root may raise the hard limit; the daemon we start inherits it. */
                rl.rlim_max = n;
                if (setrlimit(RLIMIT_NOFILE, &(struct rlimit){ n, n }) < 0)
                        return -errno;
                return 0;
        }
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        return -errno;
        }
        return 0;
}

/* Waits for one answer with id on each of conns[0, n); how many came. */
static unsigned await_answers(struct daemon_run *d, struct conn *conns, unsigned n, uint64_t id) {
        struct pollfd p[BATCH + 1];
        bool got[BATCH] = { false };
        unsigned answered = 0;
        int64_t deadline = now_ns() + BATCH_TIMEOUT_NS;

        while (answered < n && ms_left(deadline) > 0) {
                unsigned np = 0, map[BATCH];
                for (unsigned i = 0; i < n; i++)
                        if (!got[i] && conns[i].rfd >= 0) {
                                map[np] = i;
                                p[np++] = (struct pollfd){ conns[i].rfd, POLLIN, 0 };
                        }
                if (np == 0)
                        break;
                p[np] = (struct pollfd){ d->notify_fd, POLLIN, 0 };
                poll(p, np + 1, ms_left(deadline));
                daemon_pump(d);
                for (unsigned k = 0; k < np; k++) {
                        struct conn *c = &conns[map[k]];
                        struct line l;
                        if (!p[k].revents)
                                continue;
                        ssize_t r = conn_fill(c);
                        if (conn_take_line(c, &l) && line_is_result(l, id)) {
                                got[map[k]] = true;
                                answered++;
                        } else if (r == 0 || (r < 0 && r != -EAGAIN)) {
                                got[map[k]] = true; /* gone: not held */
                        }
                }
        }
        return answered;
}

/* Connects and initializes conns[0, n); how many are initialized. */
static unsigned connect_batch(struct daemon_run *d, struct conn *conns, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                int r = conn_unix(&conns[i], d->sock);
                if (r >= 0)
                        r = conn_set_nonblocking(&conns[i]);
                if (r >= 0)
                        r = conn_send_initialize(&conns[i]);
                if (r < 0) {
                        fprintf(stderr, "mcpvisor-bench: idle client: %s\n", strerror(-r));
                        conn_close(&conns[i]);
                }
                daemon_pump(d);
        }
        return await_answers(d, conns, n, 0);
}

/* A ping on every client: the ones that answer are held. */
static unsigned ping_all(struct daemon_run *d, struct conn *conns, unsigned n) {
        unsigned held = 0;

        for (unsigned at = 0; at < n; at += BATCH) {
                unsigned b = n - at < BATCH ? n - at : BATCH;
                for (unsigned i = at; i < at + b; i++)
                        if (conns[i].rfd >= 0 && conn_write(&conns[i], PING, sizeof PING - 1) < 0)
                                conn_close(&conns[i]);
                held += await_answers(d, conns + at, b, 1);
        }
        return held;
}

static void close_all(struct daemon_run *d, struct conn *conns, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                conn_close(&conns[i]);
                if (i % BATCH == 0)
                        daemon_pump(d);
        }
}

unsigned connect_idle(struct daemon_run *d, struct conn *conns, unsigned from, unsigned to) {
        unsigned initialized = 0;

        while (from < to) {
                unsigned b = to - from < BATCH ? to - from : BATCH;
                unsigned ok = connect_batch(d, conns + from, b);
                from += b;
                initialized += ok;
                if (ok < b)
                        fprintf(stderr, "mcpvisor-bench: %u of %u clients of a batch were not initialized\n", b - ok, b);
        }
        return initialized;
}

static int measure_level(struct daemon_run *d, struct conn *conns, unsigned *connected, unsigned want,
                         long rss_before, struct idle *ret) {
        char needle[64];

        (void)connect_idle(d, conns, *connected, want);
        *connected = want;
        /* The daemon has counted them all once its STATUS= says so. */
        snprintf(needle, sizeof needle, "; %u clients connected", want);
        if (daemon_wait_status(d, needle, 30000) < 0)
                fprintf(stderr, "mcpvisor-bench: the daemon's status never said \"%s\" (last: %s)\n", needle, d->status);
        ret->wanted = want;
        ret->rss_kib = proc_rss_kib(d->pid);
        ret->kib_per_client = (double)(ret->rss_kib - rss_before) / (double)want;
        ret->held = ping_all(d, conns, want);
        ret->ok = ret->held == want;
        return ret->ok ? 0 : -EIO;
}

int measure_idle(struct daemon_run *d, const unsigned *counts, unsigned n_counts, long rss_before, struct idle *ret) {
        unsigned most = 0, connected = 0;
        struct conn *conns;
        int r = 0;

        for (unsigned k = 0; k < n_counts; k++)
                most = counts[k] > most ? counts[k] : most;
        conns = calloc(most, sizeof *conns);
        if (!conns)
                return -ENOMEM;
        for (unsigned i = 0; i < most; i++)
                conns[i] = (struct conn){ .rfd = -1, .wfd = -1 };
        for (unsigned k = 0; k < n_counts; k++) {
                ret[k] = (struct idle){ .wanted = counts[k] };
                if (counts[k] < connected)
                        continue; /* counts go up: the caller sorted them */
                int q = measure_level(d, conns, &connected, counts[k], rss_before, &ret[k]);
                r = r < 0 ? r : q;
        }
        close_all(d, conns, most);
        free(conns);
        return r;
}
