/* Notifications from a server with many calls in flight (issue 14): one client holds n
 * calls the server never answers, then asks it for n notifications, which the daemon sends
 * to the one client with calls in flight; another client pings the daemon until the last
 * one has arrived. Finding that client once walked every call in flight per notification. */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOTIFY_TIMEOUT_NS (600 * (int64_t)1000000000)
#define MAX_PINGS 1000000


/* Reads what a has; 1 once the answer to id came, counting the notifications before it. */
static int drain(struct conn *a, uint64_t id, uint64_t *notes) {
        struct line l;
        ssize_t n;

        for (;;) {
                while (conn_take_line(a, &l)) {
                        if (line_is_result(l, id))
                                return 1;
                        (*notes)++;
                }
                n = conn_fill(a);
                if (n == 0)
                        return -ECONNRESET;
                if (n < 0)
                        return n == -EAGAIN ? 0 : (int)n;
        }
}

/* a's calls, then a ping answered once the daemon has forwarded them all. */
static int hold(struct conn *a, struct daemon_run *d, unsigned n) {
        uint64_t id;
        char text[96];
        struct line l;
        int r = 0, len;

        for (unsigned i = 0; i < n && r >= 0; i++)
                r = conn_send_call(a, BENCH_TOOL_PREFIX "hold", "{}");
        id = a->next_id++;
        len = snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"ping\"}\n", id);
        if (r >= 0)
                r = conn_write(a, text, (size_t)len);
        while (r >= 0 && (r = conn_read_line(a, d, now_ns() + NOTIFY_TIMEOUT_NS, &l)) >= 0 && !line_is_result(l, id))
                a->errors++; /* a call refused */
        return r < 0 ? r : conn_set_nonblocking(a);
}

static int notify_phase(struct conn *a, struct conn *b, struct daemon_run *d, unsigned n, struct notifies *ret) {
        int64_t *samples = calloc(MAX_PINGS, sizeof *samples), t0 = now_ns(), ticks0 = proc_cpu_ticks(d->pid);
        uint64_t id = a->next_id, notes = 0;
        unsigned n_samples = 0;
        char args[64];
        int r, done = 0;

        if (!samples)
                return -ENOMEM;
        snprintf(args, sizeof args, "{\"count\":%u}", n);
        r = conn_send_call(a, BENCH_TOOL_PREFIX "notify", args);
        while (r >= 0 && !done && (r = now_ns() - t0 < NOTIFY_TIMEOUT_NS ? 0 : -ETIMEDOUT) >= 0)
                if ((r = conn_ping(b, d, NOTIFY_TIMEOUT_NS, &samples[n_samples])) >= 0) {
                        n_samples += n_samples < MAX_PINGS - 1;
                        r = done = drain(a, id, &notes);
                }
        if (r >= 0 && n_samples > 0) {
                qsort(samples, n_samples, sizeof *samples, cmp_i64);
                *ret = (struct notifies){ .n = n, .seconds = (double)(now_ns() - t0) / 1e9,
                                          .daemon_cpu_s = (double)(proc_cpu_ticks(d->pid) - ticks0) / (double)sysconf(_SC_CLK_TCK),
                                          .p50 = percentile(samples, n_samples, 50), .p99 = percentile(samples, n_samples, 99),
                                          .max = samples[n_samples - 1], .delivered = notes, .refused = a->errors,
                                          .ok = notes == n && a->errors == 0 };
        }
        free(samples);
        return r;
}

int measure_notifies(struct daemon_run *d, unsigned n, struct notifies *ret) {
        struct conn a, b;
        int r = conn_two(d, &a, &b);

        *ret = (struct notifies){ .n = n };
        if (r >= 0)
                r = hold(&a, d, n);
        if (r >= 0)
                r = notify_phase(&a, &b, d, n, ret);
        conn_close(&a);
        conn_close(&b);
        return r;
}
