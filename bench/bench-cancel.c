/* Cancellation at scale (issue 14): one client holds n calls the server never answers,
 * sends n cancellations for ids it never used, then cancels its n calls; another client
 * times one echo call after each batch of those messages. What it costs the daemon grew
 * with the square of n while cancellation walked a client's calls. */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BATCH 100
#define CANCEL_TIMEOUT_NS (600 * (int64_t)1000000000)
#define UNKNOWN_IDS (UINT64_C(1) << 40) /* far above any id the client used */

enum phase { PHASE_HOLD, PHASE_UNKNOWN, PHASE_CANCEL };

static int send_cancel(struct conn *c, uint64_t id) {
        char text[160];
        int n = snprintf(text, sizeof text,
                         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%" PRIu64
                         "}}\n",
                         id);

        return conn_write(c, text, (size_t)n);
}

static int send_one(struct conn *a, enum phase p, uint64_t first, uint64_t i) {
        switch (p) {
        case PHASE_HOLD:
                return conn_send_call(a, BENCH_TOOL_PREFIX "hold", "{}");
        case PHASE_UNKNOWN:
                return send_cancel(a, UNKNOWN_IDS + i);
        default:
                return send_cancel(a, first + i);
        }
}

/* The other client's call, timed into samples[*n]. */
static int other_call(struct conn *b, struct daemon_run *d, int64_t *samples, unsigned *n) {
        uint64_t id = b->next_id;
        int64_t t0 = now_ns();
        struct line l;
        int r = conn_send_call(b, BENCH_TOOL_PREFIX "echo", "{\"text\":\"hello\"}");

        if (r >= 0)
                r = conn_read_line(b, d, t0 + CANCEL_TIMEOUT_NS, &l);
        if (r < 0)
                return r;
        if (!line_is_result(l, id))
                return -EPROTO;
        samples[(*n)++] = now_ns() - t0;
        return 0;
}

/* a's ping, answered once the daemon has read everything a sent; a's other answers (calls
 * refused by maxInFlight) are counted as errors. */
static int settle(struct conn *a, struct daemon_run *d) {
        uint64_t id = a->next_id++;
        char text[96];
        struct line l;
        int r, n = snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"ping\"}\n", id);

        if ((r = conn_write(a, text, (size_t)n)) < 0)
                return r;
        for (;;) {
                if ((r = conn_read_line(a, d, now_ns() + CANCEL_TIMEOUT_NS, &l)) < 0)
                        return r;
                if (line_is_result(l, id))
                        return 0;
                a->errors++;
        }
}

static int run_phases(struct conn *a, struct conn *b, struct daemon_run *d, unsigned n, int64_t *samples,
                      unsigned *n_samples) {
        uint64_t first = a->next_id;
        int r = 0;

        for (enum phase p = PHASE_HOLD; p <= PHASE_CANCEL && r >= 0; p++)
                for (uint64_t i = 0; i < n && r >= 0; i++) {
                        r = send_one(a, p, first, i);
                        if (r >= 0 && (i + 1) % BATCH == 0)
                                r = other_call(b, d, samples, n_samples);
                }
        return r < 0 ? r : settle(a, d);
}

int measure_cancels(struct daemon_run *d, unsigned n, struct cancels *ret) {
        struct conn a, b;
        int64_t *samples = calloc(3 * (n / BATCH) + 1, sizeof *samples), t0, ticks0;
        unsigned n_samples = 0;
        int r = conn_two(d, &a, &b);

        *ret = (struct cancels){ .n = n };
        if (r >= 0 && !samples)
                r = -ENOMEM;
        t0 = now_ns();
        ticks0 = proc_cpu_ticks(d->pid);
        if (r >= 0)
                r = run_phases(&a, &b, d, n, samples, &n_samples);
        if (r >= 0 && n_samples > 0) {
                qsort(samples, n_samples, sizeof *samples, cmp_i64);
                *ret = (struct cancels){ .n = n, .seconds = (double)(now_ns() - t0) / 1e9,
                                         .daemon_cpu_s = (double)(proc_cpu_ticks(d->pid) - ticks0) / (double)sysconf(_SC_CLK_TCK),
                                         .p50 = percentile(samples, n_samples, 50), .p99 = percentile(samples, n_samples, 99),
                                         .max = samples[n_samples - 1], .errors = a.errors, .ok = a.errors == 0 };
        }
        free(samples);
        conn_close(&a);
        conn_close(&b);
        return r;
}
