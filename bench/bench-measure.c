/* Latency, throughput, the large result and start-up: each one measurement over live
 * processes, returning its figures; bench-main.c decides what they mean. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define ECHO_ARGUMENTS "{\"text\":\"hello\"}"
#define CALL_TIMEOUT_NS (10 * (int64_t)1000000000)
#define NOTIFY_KEY UINT32_MAX

/* ---- latency: one client, one call in flight ---- */

static int timed_call(struct conn *c, const char *tool, struct daemon_run *d, int64_t *ret) {
        uint64_t id = c->next_id;
        int64_t t0 = now_ns();
        struct line l;
        int r = conn_send_call(c, tool, ECHO_ARGUMENTS);

        if (r >= 0)
                r = conn_read_line(c, d, t0 + CALL_TIMEOUT_NS, &l);
        if (r < 0)
                return r;
        *ret = now_ns() - t0;
        return line_is_result(l, id) ? 0 : -EPROTO;
}

int measure_latency(struct conn *c, const char *tool, unsigned calls, struct daemon_run *d, struct latency *ret) {
        unsigned warmup = calls / 10 < 50 ? 50 : calls / 10;
        int64_t *samples = calloc(calls, sizeof *samples), took, total = 0;
        int r = 0;

        *ret = (struct latency){ 0 };
        if (!samples)
                return -ENOMEM;
        for (unsigned i = 0; i < warmup + calls && r >= 0; i++) {
                r = timed_call(c, tool, d, &took);
                if (r >= 0 && i >= warmup) {
                        samples[i - warmup] = took;
                        total += took;
                }
        }
        if (r >= 0) {
                qsort(samples, calls, sizeof *samples, cmp_i64);
                *ret = (struct latency){ .p50 = percentile(samples, calls, 50), .p90 = percentile(samples, calls, 90),
                                         .p99 = percentile(samples, calls, 99), .max = samples[calls - 1],
                                         .calls_per_s = (double)calls * 1e9 / (double)total, .ok = true };
        }
        free(samples);
        return r;
}

/* ---- throughput: many clients, each keeping in_flight calls going ---- */

struct load_run {
        struct daemon_run *d;
        struct conn *conns;
        unsigned n, in_flight;
        uint64_t done, errors, outstanding;
        bool sending;
};

struct snapshot {
        int64_t at, daemon, daemon_user, daemon_sys, server, bench;
        uint64_t done;
};

static void snap(const struct load_run *lr, pid_t server, struct snapshot *s) {
        struct proc_stat st = { 0 };

        (void)proc_stat(lr->d->pid, &st);
        *s = (struct snapshot){ .at = now_ns(), .server = proc_cpu_ticks(server), .bench = proc_cpu_ticks(getpid()),
                                .daemon_user = st.utime, .daemon_sys = st.stime, .daemon = st.utime + st.stime,
                                .done = lr->done };
}

static int connect_all(struct load_run *lr) {
        int64_t deadline = now_ns() + 30 * (int64_t)1000000000;

        for (unsigned i = 0; i < lr->n; i++) {
                int r = conn_unix(&lr->conns[i], lr->d->sock);
                if (r >= 0)
                        r = conn_initialize(&lr->conns[i], lr->d, deadline);
                if (r < 0) {
                        fprintf(stderr, "mcpvisor-bench: client %u of %u: %s\n", i + 1, lr->n, strerror(-r));
                        return r;
                }
        }
        return 0;
}

static int send_call(struct load_run *lr, struct conn *c) {
        int r = conn_send_call(c, BENCH_TOOL_PREFIX "echo", ECHO_ARGUMENTS);

        if (r >= 0)
                lr->outstanding++;
        return r;
}

/* Every answer that arrived on c; each one, while sending, makes room for the next call. */
static int take_answers(struct load_run *lr, struct conn *c) {
        struct line l;
        /* One read per wakeup: epoll is level-triggered, whatever is left wakes us again. */
        ssize_t n = conn_fill(c);

        while (conn_take_line(c, &l)) {
                uint64_t errors = c->errors;
                conn_count_answer(c, l);
                lr->errors += c->errors - errors;
                lr->done++;
                lr->outstanding--;
                if (lr->sending && send_call(lr, c) < 0)
                        return -EIO;
        }
        return n > 0 || n == -EAGAIN ? 0 : n == 0 ? -ECONNRESET : (int)n;
}

static int pump_until(struct load_run *lr, int epfd, int64_t until, bool until_drained) {
        struct epoll_event ev[64];

        while (now_ns() < until && !(until_drained && lr->outstanding == 0)) {
                int n = epoll_wait(epfd, ev, 64, ms_left(until));
                for (int i = 0; i < n; i++) {
                        if (ev[i].data.u32 == NOTIFY_KEY) {
                                daemon_pump(lr->d);
                                continue;
                        }
                        int r = take_answers(lr, &lr->conns[ev[i].data.u32]);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int watch_all(struct load_run *lr, int epfd) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = NOTIFY_KEY };

        if (epoll_ctl(epfd, EPOLL_CTL_ADD, lr->d->notify_fd, &ev) < 0)
                return -errno;
        for (unsigned i = 0; i < lr->n; i++) {
                ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = i };
                if (epoll_ctl(epfd, EPOLL_CTL_ADD, lr->conns[i].rfd, &ev) < 0)
                        return -errno;
        }
        return 0;
}

static double per_second(int64_t ticks, int64_t ns) {
        return (double)ticks / (double)sysconf(_SC_CLK_TCK) * 1e9 / (double)ns;
}

static void load_figures(const struct load_run *lr, const struct snapshot *a, const struct snapshot *b,
                         struct load *ret) {
        int64_t ns = b->at - a->at;
        uint64_t calls = b->done - a->done;
        double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK);

        *ret = (struct load){ .clients = lr->n, .in_flight = lr->in_flight, .calls = calls, .errors = lr->errors,
                              .calls_per_s = (double)calls * 1e9 / (double)ns,
                              .daemon_cpu_us = calls ? (double)(b->daemon - a->daemon) * tick_us / (double)calls : 0,
                              .daemon_user_us = calls ? (double)(b->daemon_user - a->daemon_user) * tick_us / (double)calls : 0,
                              .daemon_sys_us = calls ? (double)(b->daemon_sys - a->daemon_sys) * tick_us / (double)calls : 0,
                              .daemon_util = per_second(b->daemon - a->daemon, ns),
                              .server_util = per_second(b->server - a->server, ns),
                              .bench_util = per_second(b->bench - a->bench, ns), .ok = lr->errors == 0 && calls > 0 };
}

static int run_load(struct load_run *lr, double seconds, struct load *ret) {
        int64_t warmup_ns = (int64_t)(seconds * 1e8) + 50000000, run_ns = (int64_t)(seconds * 1e9);
        pid_t server = proc_first_child(lr->d->pid);
        struct snapshot a, b;
        int epfd = epoll_create1(EPOLL_CLOEXEC), r;

        if (epfd < 0)
                return -errno;
        r = watch_all(lr, epfd);
        lr->sending = true;
        for (unsigned i = 0; i < lr->n && r >= 0; i++)
                for (unsigned k = 0; k < lr->in_flight && r >= 0; k++)
                        r = send_call(lr, &lr->conns[i]);
        if (r >= 0)
                r = pump_until(lr, epfd, now_ns() + warmup_ns, false);
        snap(lr, server, &a);
        if (r >= 0)
                r = pump_until(lr, epfd, a.at + run_ns, false);
        snap(lr, server, &b);
        lr->sending = false;
        if (r >= 0)
                r = pump_until(lr, epfd, now_ns() + CALL_TIMEOUT_NS, true);
        if (r >= 0 && lr->outstanding > 0)
                r = -ETIMEDOUT;
        load_figures(lr, &a, &b, ret);
        close(epfd);
        return r;
}

int measure_load(struct daemon_run *d, unsigned clients, unsigned in_flight, double seconds, struct load *ret) {
        struct load_run lr = { .d = d, .n = clients, .in_flight = in_flight, .conns = calloc(clients, sizeof(struct conn)) };
        int r;

        *ret = (struct load){ .clients = clients, .in_flight = in_flight };
        if (!lr.conns)
                return -ENOMEM;
        for (unsigned i = 0; i < clients; i++)
                lr.conns[i] = (struct conn){ .rfd = -1, .wfd = -1 };
        r = connect_all(&lr);
        if (r >= 0)
                r = run_load(&lr, seconds, ret);
        if (r < 0)
                ret->ok = false;
        for (unsigned i = 0; i < clients; i++)
                conn_close(&lr.conns[i]);
        free(lr.conns);
        daemon_pump(d);
        return r;
}

/* ---- a large result ---- */

static int large_call(struct conn *c, const char *tool, size_t bytes, struct daemon_run *d, int64_t *ret) {
        char arguments[64];
        uint64_t id = c->next_id;
        int64_t t0 = now_ns();
        struct line l;
        int r;

        snprintf(arguments, sizeof arguments, "{\"bytes\":%zu}", bytes);
        r = conn_send_call(c, tool, arguments);
        if (r >= 0)
                r = conn_read_line(c, d, t0 + 6 * CALL_TIMEOUT_NS, &l);
        if (r < 0)
                return r;
        *ret = now_ns() - t0;
        return line_is_result(l, id) && l.len > bytes ? 0 : -EPROTO;
}

int measure_large(struct conn *c, const char *tool, size_t bytes, unsigned runs, struct daemon_run *d,
                  struct large *ret) {
        int64_t *took = calloc(runs, sizeof *took), warm;
        struct proc_stat st0 = { 0 }, st1, b0 = { 0 }, b1;
        pid_t bridge = d ? c->child : 0; /* through the daemon, the process at our end is mcpvisorctl */
        double tick_ms = 1000.0 / (double)sysconf(_SC_CLK_TCK);
        int r;

        *ret = (struct large){ .bytes = bytes };
        if (!took)
                return -ENOMEM;
        /* One unmeasured call first: both ends grow their buffers once. */
        r = large_call(c, tool, bytes, d, &warm);
        if (d)
                (void)proc_stat(d->pid, &st0);
        if (bridge > 0)
                (void)proc_stat(bridge, &b0);
        for (unsigned i = 0; i < runs && r >= 0; i++)
                r = large_call(c, tool, bytes, d, &took[i]);
        if (r >= 0) {
                qsort(took, runs, sizeof *took, cmp_i64);
                ret->mb_per_s = (double)bytes / 1e6 / ((double)percentile(took, runs, 50) / 1e9);
                ret->slowest_mb_per_s = (double)bytes / 1e6 / ((double)took[runs - 1] / 1e9);
                ret->fastest_mb_per_s = (double)bytes / 1e6 / ((double)took[0] / 1e9);
                if (d && proc_stat(d->pid, &st1)) {
                        ret->daemon_user_ms = (double)(st1.utime - st0.utime) * tick_ms / (double)runs;
                        ret->daemon_sys_ms = (double)(st1.stime - st0.stime) * tick_ms / (double)runs;
                        ret->daemon_cpu_ms = ret->daemon_user_ms + ret->daemon_sys_ms;
                }
                if (bridge > 0 && proc_stat(bridge, &b1))
                        ret->bridge_cpu_ms = (double)(b1.utime + b1.stime - b0.utime - b0.stime) * tick_ms / (double)runs;
                ret->ok = true;
        }
        free(took);
        return r;
}

/* ---- start-up: posix_spawn to READY=1 ---- */

int measure_startup(const struct daemon_opts *o, unsigned runs, struct startup *ret) {
        int64_t *took = calloc(runs, sizeof *took);
        int r = 0;

        *ret = (struct startup){ .runs = runs };
        if (!took)
                return -ENOMEM;
        for (unsigned i = 0; i < runs && r >= 0; i++) {
                struct daemon_run d;
                r = daemon_start(&d, o);
                if (r >= 0)
                        r = daemon_wait_ready(&d, 10000);
                if (r >= 0)
                        took[i] = d.ready_ns - d.spawned_ns;
                if (daemon_stop(&d, 10000) != 0 && r >= 0)
                        r = -ECHILD; /* a clean stop is exit status 0 */
        }
        if (r >= 0) {
                qsort(took, runs, sizeof *took, cmp_i64);
                *ret = (struct startup){ .p50 = percentile(took, runs, 50), .max = took[runs - 1], .runs = runs,
                                         .ok = true };
        }
        free(took);
        return r;
}
