/* Many connections closed at once (issue 14): n clients, each initialized, close in one
 * burst; another client pings the daemon in a loop until the daemon's STATUS= counts only
 * it. What the daemon did per closed client once grew with the number of clients. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLOSE_TIMEOUT_NS (300 * (int64_t)1000000000)


/* Pings until the status counts b alone, at most max_samples times. */
static int ping_until_freed(struct conn *b, struct daemon_run *d, int64_t *samples, unsigned max_samples,
                            unsigned *n) {
        int64_t deadline = now_ns() + CLOSE_TIMEOUT_NS;
        int r = 0;

        while (r >= 0 && !strstr(d->status, "; 1 client connected") && *n < max_samples)
                if ((r = now_ns() < deadline ? conn_ping(b, d, CLOSE_TIMEOUT_NS, &samples[*n]) : -ETIMEDOUT) >= 0)
                        (*n)++;
        return r;
}

static int close_burst(struct daemon_run *d, struct conn *conns, unsigned n, struct conn *b, struct closes *ret) {
        unsigned max_samples = 1000000, n_samples = 0;
        int64_t *samples = calloc(max_samples, sizeof *samples), t0;
        int r;

        if (!samples)
                return -ENOMEM;
        t0 = now_ns();
        for (unsigned i = 0; i < n; i++)
                conn_close(&conns[i]);
        r = ping_until_freed(b, d, samples, max_samples, &n_samples);
        ret->freed_s = (double)(now_ns() - t0) / 1e9;
        if (r >= 0 && n_samples > 0) {
                qsort(samples, n_samples, sizeof *samples, cmp_i64);
                ret->p50 = percentile(samples, n_samples, 50);
                ret->p99 = percentile(samples, n_samples, 99);
                ret->max = samples[n_samples - 1];
                ret->pings = n_samples;
                ret->ok = true;
        }
        free(samples);
        return r;
}

int measure_closes(struct daemon_run *d, unsigned n, struct closes *ret) {
        struct conn b, *conns = calloc(n, sizeof *conns);
        char needle[64];
        int r;

        *ret = (struct closes){ .n = n };
        if (!conns)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                conns[i].rfd = conns[i].wfd = -1;
        r = conn_unix(&b, d->sock);
        if (r >= 0)
                r = conn_initialize(&b, d, now_ns() + 10 * (int64_t)1000000000);
        if (r >= 0 && connect_idle(d, conns, 0, n) < n)
                r = -EIO;
        snprintf(needle, sizeof needle, "; %u clients connected", n + 1);
        if (r >= 0 && (r = daemon_wait_status(d, needle, 60000)) < 0)
                fprintf(stderr, "mcpvisor-bench: the daemon's status never said \"%s\" (last: %s)\n", needle, d->status);
        if (r >= 0)
                r = close_burst(d, conns, n, &b, ret);
        for (unsigned i = 0; i < n; i++)
                conn_close(&conns[i]);
        free(conns);
        conn_close(&b);
        return r;
}
