/* Many servers (issue 14): a daemon with n servers besides the bench one, timed from its
 * start until all are ready, through a reload that changes one server and one that changes
 * all, and to its exit on SIGTERM; another client pings the daemon throughout, which says
 * how long its loop stalls. Starting 1,000 servers once took 27 s while every state change
 * rebuilt the whole registry. */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SERVERS_TIMEOUT_NS (600 * (int64_t)1000000000)

void servers_config(FILE *f, const char *server, unsigned n, unsigned changed, unsigned gen) {
        for (unsigned i = 0; i < n; i++) {
                fprintf(f, ", \"s%04u\": {\"command\": \"%s\"", i, server);
                if (i < changed)
                        fprintf(f, ", \"env\": {\"BENCH_GEN\": \"%u\"}", gen);
                fprintf(f, "}");
        }
}

static int rewrite_config(const struct daemon_run *d, const struct daemon_opts *o, unsigned changed, unsigned gen) {
        char path[128];
        FILE *f;

        snprintf(path, sizeof path, "%s/mcpvisor.json", d->dir);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "{\"mcpvisor\": {%s}, \"mcpServers\": {\"%s\": {\"command\": \"%s\"}", o->settings ? o->settings : "",
                BENCH_SERVER_NAME, o->server);
        servers_config(f, o->server, o->servers, changed, gen);
        fprintf(f, "}}\n");
        return fclose(f) == 0 ? 0 : -errno;
}

static int ping(struct conn *b, struct daemon_run *d, struct phase_figures *p) {
        int64_t elapsed;
        int r = conn_ping(b, d, SERVERS_TIMEOUT_NS, &elapsed);

        if (r >= 0 && p->n_samples < PHASE_SAMPLES)
                p->samples[p->n_samples++] = elapsed;
        return r;
}

/* All n + 1 servers ready, after at least one was not (a reload's restarts) if asked. */
static bool all_ready(const struct daemon_run *d, unsigned total, bool after_unready) {
        char want[64];

        snprintf(want, sizeof want, "%u/%u servers ready", total, total);
        return strncmp(d->status, want, strlen(want)) == 0 && (!after_unready || d->saw_unready);
}

/* Pings until every server is ready; the phase's time counts from t0. */
static int ping_until_ready(struct conn *b, struct daemon_run *d, unsigned total, bool after_unready, int64_t t0,
                            struct phase_figures *p) {
        int r = 0;

        while (r >= 0 && !all_ready(d, total, after_unready)) {
                if (now_ns() - t0 > SERVERS_TIMEOUT_NS)
                        return -ETIMEDOUT;
                r = ping(b, d, p);
                daemon_pump(d);
        }
        p->seconds = (double)(now_ns() - t0) / 1e9;
        if (p->n_samples > 0) {
                qsort(p->samples, p->n_samples, sizeof *p->samples, cmp_i64);
                p->p99 = percentile(p->samples, p->n_samples, 99);
                p->max = p->samples[p->n_samples - 1];
        }
        p->ok = r >= 0;
        return r;
}

static int reload(struct conn *b, struct daemon_run *d, const struct daemon_opts *o, unsigned changed, unsigned gen,
                  struct phase_figures *p) {
        int r = rewrite_config(d, o, changed, gen);
        int64_t t0 = now_ns();

        if (r < 0)
                return r;
        d->saw_unready = false;
        if (kill(d->pid, SIGHUP) < 0)
                return -errno;
        return ping_until_ready(b, d, o->servers + 1, true, t0, p);
}

int measure_servers(const struct daemon_opts *o, struct servers_figures *ret) {
        struct daemon_run d;
        struct conn b = { .rfd = -1, .wfd = -1 };
        unsigned total = o->servers + 1;
        int64_t t0;
        int r = daemon_start(&d, o), status;

        *ret = (struct servers_figures){ .n = o->servers };
        if (r >= 0)
                r = daemon_wait_ready(&d, 600000);
        ret->to_ready_s = r >= 0 ? (double)(d.ready_ns - d.spawned_ns) / 1e9 : 0;
        /* The first answer after READY=1, a sample of its own: the loop may be busy with starts. */
        t0 = now_ns();
        if (r >= 0 && (r = conn_unix(&b, d.sock)) >= 0)
                r = conn_initialize(&b, &d, t0 + SERVERS_TIMEOUT_NS);
        if (r >= 0)
                ret->start.samples[ret->start.n_samples++] = now_ns() - t0;
        if (r >= 0)
                r = ping_until_ready(&b, &d, total, false, d.spawned_ns, &ret->start);
        if (r >= 0)
                r = reload(&b, &d, o, 1, 1, &ret->reload_one);
        if (r >= 0)
                r = reload(&b, &d, o, o->servers, 2, &ret->reload_all);
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: servers: %s; last status: %s; log: %s\n", strerror(-r), d.status, d.log);
        conn_close(&b);
        t0 = now_ns();
        status = daemon_stop(&d, 600000);
        ret->stop_s = (double)(now_ns() - t0) / 1e9;
        ret->stop_ok = status == 0;
        return r < 0 ? r : status == 0 ? 0 : -ECHILD;
}
