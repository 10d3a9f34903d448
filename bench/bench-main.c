/* mcpvisor-bench: options, the order of the measurements, and the table. */
#include "bench.h"

#include <errno.h>
#include <pwd.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

/* The targets of issue 6 on the reference machine (2 cores). */
#define TARGET_ADDED_P50_NS 30000
#define TARGET_ADDED_P99_NS 150000
#define TARGET_CPU_US 10.0
#define TARGET_IDLE_RSS_KIB (8 * 1024)
#define TARGET_CLIENT_KIB 32.0
#define TARGET_HELD 10000
#define TARGET_LARGE_MB_S 200.0
#define TARGET_READY_NS 10000000
/* Issue 14: another client's p99 while one client's calls and cancellations pile up. */
#define TARGET_OTHER_P99_NS 10000000
/* The daemon's settings unless a part says: the defaults, but every client of the bench is
 * one uid, which the default maxClientsPerUser (256) would turn away past 256 clients. */
#define BENCH_SETTINGS "\"maxClientsPerUser\": 0"
/* Issue 15: what 50 access rules over 1,000 tools may add, to CPU per call and to memory
 * per idle client (a ratio). */
#define TARGET_ACCESS_CPU_US 1.0
#define TARGET_ACCESS_MEMORY 1.10
/* Issue 16: start to ready through a transient unit, at most this much more than exec. */
#define TARGET_LAUNCHER_ADDED_NS 30000000
#define ACCESS_RULES 50
#define ACCESS_TOOLS 1000
#define ACCESS_CLIENTS 16
#define MAX_ROUNDS 5
/* Issue 14, item 12: the daemon's memory per tool of a server's catalogue. */
#define TARGET_CATALOG_KIB_PER_TOOL 1.0

enum placement { PLACED_FREE, PLACED_ONE_CPU };

/* PART_CANCEL and everything after PART_ALL are run only when asked for (--only cancel). */
enum part { PART_LATENCY = 1, PART_LOAD = 2, PART_LARGE = 4, PART_IDLE = 8, PART_STARTUP = 16, PART_ALL = 31,
            PART_CANCEL = 32, PART_CLOSE = 64, PART_NOTIFY = 128, PART_SERVERS = 256, PART_ACCESS = 512,
            PART_LAUNCHER = 1024, PART_REMOTE = 2048 /* issue 17: a server reached by URL */,
            PART_HTTP = 4096 /* issue 18: clients over HTTP */,
            PART_CATALOG = 8192 /* memory per catalogue item */,
            PART_INSTANCES = 16384 /* a server of its own per client */,
            PART_SDK = 32768 /* the SDK's client against mcpvisord and the peers */,
            PART_JWT = 65536 /* HTTP calls with a JWT (http.oauth) vs a static token */,
            PART_MODERN = 131072 /* the 2026-07-28 era beside the initialize era, a multi round-trip request */ };
/* Instances: a call through one costs what a call to a shared server costs, within this. */
#define TARGET_INSTANCE_ADDED_NS 5000

/* The gateways the SDK's client is run against, each round in this order. */
enum sdk_target { SDK_MCPVISORD, SDK_COMPARED /* --sdk-compare */, SDK_HUB, SDK_SUPERGATEWAY, SDK_TARGETS };

struct sdk_figures {
        struct sdk_load run[SDK_TARGETS][MAX_ROUNDS];
        struct http_load raw[SDK_TARGETS][MAX_ROUNDS]; /* the bench's own C clients, as --only http's;
                                                        * none for mcp-hub (no Streamable HTTP) */
        const char *missing[SDK_TARGETS]; /* why it was not measured, or NULL */
        unsigned rounds, in_flight;
};

/* The access case's two daemons: no access settings, and ACCESS_RULES rules. */
enum access_mode { ACCESS_NONE, ACCESS_SOME, ACCESS_MODES };

struct access_figures {
        double cpu_us[ACCESS_MODES][MAX_ROUNDS];   /* daemon CPU per call, ACCESS_CLIENTS clients */
        double kib[ACCESS_MODES][MAX_ROUNDS];      /* RSS per idle client */
        double cpu_median[ACCESS_MODES], kib_median[ACCESS_MODES];
        unsigned rounds, idle;
        bool ok;
};

struct options {
        struct daemon_opts daemon;
        bool quick;
        unsigned parts;
        unsigned calls;
        double seconds;
        unsigned levels[MAX_LEVELS], n_levels;
        unsigned in_flight;
        unsigned idle[MAX_LEVELS], n_idle;
        size_t large_bytes;
        unsigned large_runs;
        const char *ctl;        /* mcpvisorctl, for the bridged large result */
        unsigned startup_runs;
        int pin_cpu;
        unsigned cancels;
        const char *cancel_settings;
        unsigned closes;
        unsigned notifies;
        unsigned servers;
        unsigned access_rounds;
        unsigned catalog[MAX_LEVELS], n_catalog; /* issue 14: tools besides the demo server's own */
        unsigned catalog_runs;
        const char *sdk_compare;    /* issue 28: another mcpvisord measured beside it, or NULL */
        unsigned sdk_rounds;
        unsigned mrtr_rounds;       /* issue 30: asks timed a path */
};

struct results {
        /* [PLACED_FREE]: where the scheduler puts each process; [PLACED_ONE_CPU]: all on one. */
        struct latency direct[2], via[2];
        struct load load[MAX_LEVELS];
        struct large large_direct, large_via, large_bridge;
        long idle_rss_kib;
        struct idle idle[MAX_LEVELS];
        struct startup startup;
        struct cancels cancels;
        struct closes closes;
        struct notifies notifies;
        struct servers_figures servers;
        struct access_figures access;
        struct launcher_figures launchers;
        struct remote_figures remote;
        struct http_load http[MAX_LEVELS], http_socket[MAX_LEVELS]; /* issue 18: HTTP, and the socket beside it */
        struct catalog_level catalog[MAX_LEVELS]; /* issue 14 */
        struct large http_large, http_large_socket;  /* issue 18: a large result over each, same daemon */
        struct instances_figures instances;          /* per-client servers */
        struct idle http_sessions;                   /* issue 18: sessions held, each with its stream */
        struct unauth_bodies http_unauth;            /* issue 25: bodies sent without a token */
        struct slow_heads http_slow;                 /* issue 25: heads never finished, at 200 descriptors */
        struct http_load peer[MAX_LEVELS];           /* issue 18: supergateway, measured as HTTP is */
        const char *peer_missing;                    /* why it was not measured, or NULL */
        struct sdk_figures sdk;                      /* the SDK client against the peers */
        struct http_load jwt_static[MAX_LEVELS], jwt[MAX_LEVELS]; /* --only jwt: the same calls, each token */
        struct modern_figures modern;                /* --only modern: both eras, one daemon */
        bool failed;
};

static void usage(FILE *f, const char *argv0) {
        fprintf(f,
                "usage: %s [OPTIONS]\n"
                "Measures mcpvisord: added latency per tools/call (vs the same server over pipes), throughput,\n"
                "daemon CPU per call, idle RSS and RSS per idle client, a large result, and start to READY=1.\n"
                "\n"
                "  --daemon PATH        mcpvisord to measure (default: the one built with this bench)\n"
                "  --server PATH        MCP server it runs (default: mcpvisor-bench-server)\n"
                "  --daemon-prefix CMD  run the daemon under CMD (words split at spaces), e.g. a profiler\n"
                "  --quick              a few seconds in all, small counts (figures only indicative)\n"
                "  --only LIST          some of: latency,load,large,idle,startup,cancel,close,notify,servers,\n"
                "                       access,launcher,remote,http,catalog,instances,sdk,jwt,modern (the last thirteen only\n"
                "                       when named;\n"
                "                       instances: per-client servers, first call, memory, cost; launcher:\n"
                "                       start to ready of a server, exec vs systemd, --startup-runs starts each;\n"
                "                       remote: calls to a server reached by URL; http: clients over HTTP;\n"
                "                       sdk: the TypeScript SDK's client, as many calls in flight as the last\n"
                "                       --clients level, against mcpvisord, mcp-hub and supergateway in turn;\n"
                "                       jwt: daemon CPU per HTTP call with a JWT (http.oauth) vs a static token;\n"
                "                       modern: calls of the 2026-07-28 era beside the initialize era's, socket\n"
                "                       and HTTP, --calls each, and a multi round-trip request, --mrtr-rounds each)\n"
                "  --mrtr-rounds N      modern: elicitations timed a path (default 300)\n"
                "  --sdk-rounds N       rounds of the sdk part (default 3, at most 5)\n"
                "  --sdk-compare PATH   another mcpvisord measured in the sdk part beside the first (a build before)\n"
                "  --calls N            latency samples per path (default 20000)\n"
                "  --seconds S          measured time per throughput level (default 3)\n"
                "  --clients LIST       concurrent clients per throughput level (default 1,16,64)\n"
                "  --in-flight N        calls each client keeps in flight (default 1)\n"
                "  --idle LIST          idle clients held at each memory level (default 1000,10000)\n"
                "  --large BYTES        size of the large tool result (default 10485760)\n"
                "  --large-runs N       measured large results per path (default 5)\n"
                "  --ctl PATH           the mcpvisorctl whose connect carries the bridged large result\n"
                "  --startup-runs N     daemon starts timed (default 20)\n"
                "  --cancels N          cancel: calls one client holds, then as many cancellations of\n"
                "                       unknown ids and of its calls (default 100000)\n"
                "  --cancel-settings S  cancel: the daemon's settings, as JSON members (default\n"
                "                       '\"maxInFlight\": 1000000'; '' for a daemon without maxInFlight)\n"
                "  --closes N           close: initialized clients closed at once (default 15000)\n"
                "  --notifies N         notify: calls one client holds, then notifications from the server\n"
                "                       (default 50000)\n"
                "  --servers N          servers: how many servers besides the bench one (default 1000)\n"
                "  --catalog-tools LIST catalog: tools the demo server offers besides its ten, a daemon each\n"
                "                       (default 10000,100000); VmRSS ready and after a restart, KiB per tool\n"
                "  --catalog-runs N     catalog: timed listings of every tool per daemon (default 5, at most 16)\n"
                "  --access-rounds N    access: daemons measured with and without 50 rules, alternating,\n"
                "                       N times each (default 3, at most 5); 1,000 tools, 16 clients, and\n"
                "                       the largest --idle count\n"
                "  --pin-cpu N          the CPU for the second latency run, all processes on it (default 0;\n"
                "                       -1: no second run)\n"
                "  --keep               keep each daemon's directory (config, log) under /tmp\n"
                "\n"
                "Holding 10000 clients needs RLIMIT_NOFILE above 10064: run as root, or raise ulimit -Hn first.\n",
                argv0);
}

static unsigned parse_list(const char *text, unsigned *out, unsigned max) {
        unsigned n = 0;
        char *end;

        for (const char *p = text; *p && n < max; p = *end ? end + 1 : end) {
                unsigned long v = strtoul(p, &end, 10);
                if (end == p || v == 0 || (*end && *end != ','))
                        return 0;
                out[n++] = (unsigned)v;
        }
        return n;
}

static unsigned parse_parts(const char *text) {
        static const char *const names[] = { "latency", "load", "large", "idle", "startup", "cancel", "close", "notify",
                                             "servers", "access", "launcher", "remote", "http", "catalog", "instances",
                                             "sdk", "jwt", "modern" };
        unsigned parts = 0;
        char *copy = strdup(text);

        for (char *save = NULL, *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                unsigned bit = 0;
                for (unsigned k = 0; k < sizeof names / sizeof names[0]; k++)
                        if (strcmp(w, names[k]) == 0)
                                bit = 1u << k;
                if (!bit) {
                        free(copy);
                        return 0;
                }
                parts |= bit;
        }
        free(copy);
        return parts;
}

static void quick_defaults(struct options *o) {
        o->calls = 500;
        o->seconds = 0.3;
        o->idle[0] = 100;
        o->idle[1] = 200;
        o->large_bytes = 1024 * 1024;
        o->large_runs = 2;
        o->startup_runs = 3;
        o->cancels = 2000;
        o->closes = 500;
        o->notifies = 2000;
        o->servers = 50;
        o->access_rounds = 1;
        o->catalog[0] = 100;
        o->catalog[1] = 1000;
        o->catalog_runs = 2;
        o->mrtr_rounds = 20;
}

static int parse_options(int argc, char **argv, struct options *o) {
        enum { O_DAEMON = 256, O_SERVER, O_PREFIX, O_QUICK, O_ONLY, O_CALLS, O_SECONDS, O_CLIENTS, O_IN_FLIGHT,
               O_IDLE, O_LARGE, O_LARGE_RUNS, O_STARTUP_RUNS, O_PIN_CPU, O_KEEP, O_CTL, O_CANCELS,
               O_CANCEL_SETTINGS, O_CLOSES, O_NOTIFIES, O_SERVERS, O_ACCESS_ROUNDS, O_CATALOG_TOOLS,
               O_CATALOG_RUNS, O_SDK_ROUNDS, O_SDK_COMPARE, O_MRTR_ROUNDS, O_HELP };
        static const struct option longopts[] = {
                { "daemon", required_argument, NULL, O_DAEMON }, { "server", required_argument, NULL, O_SERVER },
                { "daemon-prefix", required_argument, NULL, O_PREFIX }, { "quick", no_argument, NULL, O_QUICK },
                { "only", required_argument, NULL, O_ONLY }, { "calls", required_argument, NULL, O_CALLS },
                { "seconds", required_argument, NULL, O_SECONDS }, { "clients", required_argument, NULL, O_CLIENTS },
                { "in-flight", required_argument, NULL, O_IN_FLIGHT }, { "idle", required_argument, NULL, O_IDLE },
                { "large", required_argument, NULL, O_LARGE }, { "large-runs", required_argument, NULL, O_LARGE_RUNS },
                { "startup-runs", required_argument, NULL, O_STARTUP_RUNS }, { "keep", no_argument, NULL, O_KEEP },
                { "ctl", required_argument, NULL, O_CTL },
                { "pin-cpu", required_argument, NULL, O_PIN_CPU }, { "cancels", required_argument, NULL, O_CANCELS },
                { "cancel-settings", required_argument, NULL, O_CANCEL_SETTINGS },
                { "closes", required_argument, NULL, O_CLOSES }, { "notifies", required_argument, NULL, O_NOTIFIES },
                { "servers", required_argument, NULL, O_SERVERS },
                { "access-rounds", required_argument, NULL, O_ACCESS_ROUNDS },
                { "catalog-tools", required_argument, NULL, O_CATALOG_TOOLS },
                { "catalog-runs", required_argument, NULL, O_CATALOG_RUNS },
                { "sdk-rounds", required_argument, NULL, O_SDK_ROUNDS },
                { "sdk-compare", required_argument, NULL, O_SDK_COMPARE },
                { "mrtr-rounds", required_argument, NULL, O_MRTR_ROUNDS },
                { "help", no_argument, NULL, O_HELP }, { 0 },
        };
        int opt;

        /* --quick changes the defaults, not what is given beside it. */
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--quick") == 0)
                        quick_defaults(o);
        while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                bool bad = false;
                switch (opt) {
                case O_DAEMON: o->daemon.daemon = optarg; break;
                case O_SERVER: o->daemon.server = optarg; break;
                case O_PREFIX: o->daemon.prefix = optarg; break;
                case O_QUICK: o->quick = true; break;
                case O_ONLY: bad = !(o->parts = parse_parts(optarg)); break;
                case O_CALLS: bad = !(o->calls = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_SECONDS: bad = !((o->seconds = strtod(optarg, NULL)) > 0); break;
                case O_CLIENTS: bad = !(o->n_levels = parse_list(optarg, o->levels, MAX_LEVELS)); break;
                case O_IN_FLIGHT: bad = !(o->in_flight = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_IDLE: bad = !(o->n_idle = parse_list(optarg, o->idle, MAX_LEVELS)); break;
                case O_LARGE: bad = !(o->large_bytes = strtoul(optarg, NULL, 10)); break;
                case O_LARGE_RUNS: bad = !(o->large_runs = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_STARTUP_RUNS: bad = !(o->startup_runs = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_KEEP: o->daemon.keep = true; break;
                case O_CTL: o->ctl = optarg; break;
                case O_PIN_CPU: o->pin_cpu = (int)strtol(optarg, NULL, 10); break;
                case O_CANCELS: bad = !(o->cancels = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_CANCEL_SETTINGS: o->cancel_settings = optarg; break;
                case O_CLOSES: bad = !(o->closes = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_NOTIFIES: bad = !(o->notifies = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_SERVERS: bad = !(o->servers = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_ACCESS_ROUNDS:
                        o->access_rounds = (unsigned)strtoul(optarg, NULL, 10);
                        bad = o->access_rounds == 0 || o->access_rounds > MAX_ROUNDS;
                        break;
                case O_CATALOG_TOOLS: bad = !(o->n_catalog = parse_list(optarg, o->catalog, MAX_LEVELS)); break;
                case O_CATALOG_RUNS:
                        o->catalog_runs = (unsigned)strtoul(optarg, NULL, 10);
                        bad = o->catalog_runs == 0 || o->catalog_runs > 16;
                        break;
                case O_SDK_ROUNDS:
                        o->sdk_rounds = (unsigned)strtoul(optarg, NULL, 10);
                        bad = o->sdk_rounds == 0 || o->sdk_rounds > MAX_ROUNDS;
                        break;
                case O_SDK_COMPARE: o->sdk_compare = optarg; break;
                case O_MRTR_ROUNDS: bad = !(o->mrtr_rounds = (unsigned)strtoul(optarg, NULL, 10)); break;
                case O_HELP: usage(stdout, argv[0]); exit(0);
                default: usage(stderr, argv[0]); return -EINVAL;
                }
                if (bad) {
                        fprintf(stderr, "%s: bad value for %s: %s\n", argv[0], argv[optind - 1], optarg);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                usage(stderr, argv[0]);
                return -EINVAL;
        }
        if (o->daemon.keep)
                setenv("BENCH_KEEP", "1", 1);
        return 0;
}

/* ---- the measurements, in order ---- */

static void failed(struct results *res, const char *what, int r) {
        fprintf(stderr, "mcpvisor-bench: %s failed: %s\n", what, strerror(-r));
        res->failed = true;
}

/* A daemon whose one server is ready. */
static int start_ready(struct daemon_run *d, const struct options *o) {
        int r = daemon_start(d, &o->daemon);

        if (r >= 0)
                r = daemon_wait_ready(d, 30000);
        if (r >= 0)
                r = daemon_wait_status(d, "1/1 servers ready", 30000);
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: the daemon did not become ready (%s); last status: %s; log: %s\n",
                        strerror(-r), d->status, d->log);
        return r;
}

/* Latency with each process where the scheduler puts it, then with all of them on one
 * CPU: on a virtual machine a wake-up across CPUs can cost more than the daemon's work,
 * and the second figure is the daemon's work (and its extra context switches) alone. */
static int latency_both(const struct options *o, struct conn *c, const char *tool, struct daemon_run *d,
                        const pid_t *pids, unsigned n, struct latency ret[2]) {
        int r = measure_latency(c, tool, o->calls, d, &ret[PLACED_FREE]);

        if (r >= 0 && o->pin_cpu >= 0) {
                cpu_set_t one, before;
                CPU_ZERO(&one);
                CPU_SET(o->pin_cpu, &one);
                /* Back to what we were given (taskset, say), which the others inherited. */
                if (sched_getaffinity(0, sizeof before, &before) < 0)
                        return -errno;
                r = pin_processes(pids, n, &one);
                if (r >= 0)
                        r = measure_latency(c, tool, o->calls, d, &ret[PLACED_ONE_CPU]);
                int q = pin_processes(pids, n, &before);
                r = r < 0 ? r : q;
        }
        return r;
}

static void run_direct(const struct options *o, struct results *res) {
        struct conn c;
        int r = conn_spawn(&c, o->daemon.server);

        if (r >= 0)
                r = conn_initialize(&c, NULL, now_ns() + 10 * (int64_t)1000000000);
        if (r >= 0 && (o->parts & PART_LATENCY)) {
                pid_t pids[] = { getpid(), c.child };
                if ((r = latency_both(o, &c, "echo", NULL, pids, 2, res->direct)) < 0)
                        failed(res, "latency (direct)", r);
        }
        if (r >= 0 && (o->parts & PART_LARGE) &&
            (r = measure_large(&c, "blob", o->large_bytes, o->large_runs, NULL, &res->large_direct)) < 0)
                failed(res, "large result (direct)", r);
        if (r < 0 && !res->failed)
                failed(res, "starting the server directly", r);
        conn_close(&c);
}

/* The large result again, through `mcpvisorctl connect` as an agent gets it: one copy more
 * in a process of its own, and pipes instead of the socket. */
static void run_large_bridged(const struct options *o, struct daemon_run *d, struct results *res) {
        struct conn c;
        int r = conn_bridge(&c, o->ctl ? o->ctl : MCPVISORCTL_PATH, d->sock);

        if (r >= 0)
                r = conn_initialize(&c, d, now_ns() + 10 * (int64_t)1000000000);
        if (r >= 0)
                r = measure_large(&c, BENCH_TOOL_PREFIX "blob", o->large_bytes, o->large_runs, d, &res->large_bridge);
        if (r < 0)
                failed(res, "large result (through mcpvisorctl connect)", r);
        conn_close(&c);
}

static void run_calls(const struct options *o, struct daemon_run *d, struct results *res) {
        struct conn c;
        int r = conn_unix(&c, d->sock);

        if (r >= 0)
                r = conn_initialize(&c, d, now_ns() + 10 * (int64_t)1000000000);
        if (r < 0) {
                failed(res, "connecting to the daemon", r);
                conn_close(&c);
                return;
        }
        if (o->parts & PART_LATENCY) {
                pid_t pids[] = { getpid(), d->pid, proc_first_child(d->pid) };
                if ((r = latency_both(o, &c, BENCH_TOOL_PREFIX "echo", d, pids, 3, res->via)) < 0)
                        failed(res, "latency (through the daemon)", r);
        }
        for (unsigned k = 0; (o->parts & PART_LOAD) && k < o->n_levels; k++)
                if ((r = measure_load(d, o->levels[k], o->in_flight, o->seconds, &res->load[k])) < 0)
                        failed(res, "throughput", r);
        if ((o->parts & PART_LARGE) &&
            (r = measure_large(&c, BENCH_TOOL_PREFIX "blob", o->large_bytes, o->large_runs, d, &res->large_via)) < 0)
                failed(res, "large result (through the daemon)", r);
        conn_close(&c);
        if (o->parts & PART_LARGE)
                run_large_bridged(o, d, res);
}

static void run_daemon(const struct options *o, struct results *res, bool memory) {
        struct daemon_run d;
        int r = start_ready(&d, o);

        if (r < 0) {
                res->failed = true;
        } else if (memory) {
                res->idle_rss_kib = proc_rss_kib(d.pid);
                if ((r = measure_idle(&d, o->idle, o->n_idle, res->idle_rss_kib, res->idle)) < 0)
                        failed(res, "idle clients", r);
        } else {
                run_calls(o, &d, res);
        }
        if (daemon_stop(&d, 30000) != 0 && !res->failed)
                failed(res, "stopping the daemon (exit status not 0)", -ECHILD);
}

/* A scale case: a daemon of its own with settings (NULL: the defaults), one measurement. */
static void run_scale(const struct options *o, struct results *res, const char *settings, const char *what,
                      int (*measure)(struct daemon_run *d, unsigned n, void *ret), unsigned n, void *ret) {
        struct options with = *o;
        struct daemon_run d;
        int r;

        with.daemon.settings = settings;
        if ((r = start_ready(&d, &with)) < 0) {
                res->failed = true;
                return;
        }
        if ((r = measure(&d, n, ret)) < 0)
                failed(res, what, r);
        if (daemon_stop(&d, 30000) != 0 && !res->failed)
                failed(res, "stopping the daemon (exit status not 0)", -ECHILD);
}

static int cancels(struct daemon_run *d, unsigned n, void *ret) {
        return measure_cancels(d, n, ret);
}

static int closes(struct daemon_run *d, unsigned n, void *ret) {
        return measure_closes(d, n, ret);
}

static int notifies(struct daemon_run *d, unsigned n, void *ret) {
        return measure_notifies(d, n, ret);
}

static void run_servers(const struct options *o, struct results *res) {
        struct daemon_opts with = o->daemon;
        int r;

        with.servers = o->servers;
        if ((r = measure_servers(&with, &res->servers)) < 0)
                failed(res, "many servers", r);
}

/* One daemon of the access case, its server listing ACCESS_TOOLS more tools: daemon CPU
 * per call under load, or RSS per idle client (after one client listed the tools, so that
 * the registry and the view are built before the RSS the clients are counted from). */
static int access_once(const struct options *o, const char *settings, bool memory, double *ret) {
        struct options with = *o;
        struct daemon_run d;
        unsigned tools, idle = o->idle[o->n_idle - 1];
        int r, q;

        with.daemon.settings = settings;
        with.daemon.server_tools = ACCESS_TOOLS;
        if ((r = start_ready(&d, &with)) < 0)
                return r;
        if ((r = count_listed_tools(&d, &tools)) >= 0 && tools != ACCESS_TOOLS + BENCH_SERVER_TOOLS) {
                fprintf(stderr, "mcpvisor-bench: tools/list shows %u of the server's %u tools\n", tools,
                        ACCESS_TOOLS + BENCH_SERVER_TOOLS);
                r = -ENOENT;
        }
        if (r >= 0 && memory) {
                struct idle i;
                r = measure_idle(&d, &idle, 1, proc_rss_kib(d.pid), &i);
                *ret = i.kib_per_client;
        } else if (r >= 0) {
                struct load l;
                r = measure_load(&d, ACCESS_CLIENTS, o->in_flight, o->seconds, &l);
                *ret = l.daemon_cpu_us;
                /* A call the rules refused costs less than one served: it must not count. */
                if (r >= 0 && l.errors > 0) {
                        fprintf(stderr, "mcpvisor-bench: %llu of %llu calls were refused\n", (unsigned long long)l.errors,
                                (unsigned long long)l.calls);
                        r = -EPROTO;
                }
        }
        q = daemon_stop(&d, 30000);
        return r < 0 ? r : q != 0 ? -ECHILD : 0;
}

static double median(const double *v, unsigned n) {
        double s[MAX_ROUNDS];

        memcpy(s, v, n * sizeof *v);
        for (unsigned i = 1; i < n; i++)
                for (unsigned k = i; k > 0 && s[k - 1] > s[k]; k--) {
                        double t = s[k];
                        s[k] = s[k - 1];
                        s[k - 1] = t;
                }
        return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* With and without the rules in turn, each round in the other order, so that whatever else
 * the machine does falls on both alike. */
static void run_access(const struct options *o, struct results *res) {
        struct access_figures *a = &res->access;
        const char *base = o->daemon.settings ? o->daemon.settings : "";
        char *access = access_settings(ACCESS_RULES), *rules = NULL;
        const char *settings[ACCESS_MODES] = { base };
        int r = access && asprintf(&rules, "%s%s%s", base, *base ? ", " : "", access) >= 0 ? 0 : -ENOMEM;

        settings[ACCESS_SOME] = rules;
        a->rounds = o->access_rounds;
        a->idle = o->idle[o->n_idle - 1];
        for (int memory = 0; memory < 2 && r >= 0; memory++)
                for (unsigned k = 0; k < a->rounds && r >= 0; k++)
                        for (int i = 0; i < ACCESS_MODES && r >= 0; i++) {
                                int m = k % 2 ? ACCESS_MODES - 1 - i : i;
                                r = access_once(o, settings[m], memory, memory ? &a->kib[m][k] : &a->cpu_us[m][k]);
                        }
        for (int m = 0; m < ACCESS_MODES && r >= 0; m++) {
                a->cpu_median[m] = median(a->cpu_us[m], a->rounds);
                a->kib_median[m] = median(a->kib[m], a->rounds);
        }
        a->ok = r >= 0;
        if (r < 0)
                failed(res, "access rules at scale", r);
        free(access);
        free(rules);
}

/* ---- issue 18: the HTTP front door beside the Unix socket ---- */

#define HTTP_BENCH_TOKEN "bench-token-0123456789abcdef0123456789"
#define HTTP_UNAUTH_BODIES 50
#define HTTP_UNAUTH_BYTES ((size_t)16 << 20)
#define HTTP_SLOW_HEADS 300
#define HTTP_SLOW_NOFILE 200

static unsigned free_port(void) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof sa;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        unsigned port = 0;

        if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
                port = ntohs(sa.sin_port);
        if (fd >= 0)
                close(fd);
        return port;
}

/* supergateway serving the bench server, at the same levels, measured as the front door is;
 * with --quick at the first level only (a node process and a server per session: 64 of
 * them would load a test run's machine for half a minute). */
static unsigned peer_levels(const struct options *o) {
        return o->quick && o->n_levels > 1 ? 1 : o->n_levels;
}

static void run_peer_gateway(const struct options *o, struct results *res) {
        unsigned port = free_port();
        struct daemon_run g;
        int r = 0;

        res->peer_missing = peer_gateway_start(&g, port);
        for (unsigned k = 0; !res->peer_missing && r >= 0 && k < peer_levels(o); k++)
                r = measure_http(&g, port, "none", "echo", o->levels[k], o->seconds, &res->peer[k]);
        if (r < 0)
                failed(res, "supergateway", r);
        peer_gateway_stop(&g);
}

/* Sessions held (first: the large results' freed buffers would hold them unseen), then a
 * large result over HTTP and over the socket to the same daemon. */
static void run_http_sizes(const struct options *o, struct daemon_run *d, unsigned port, struct results *res) {
        struct conn c = { .rfd = -1, .wfd = -1 };
        int r = measure_http_sessions(d, port, HTTP_BENCH_TOKEN, o->quick ? 100 : 1000, proc_rss_kib(d->pid),
                                      &res->http_sessions);

        if (r < 0)
                failed(res, "HTTP sessions held", r);
        r = measure_http_large(d, port, HTTP_BENCH_TOKEN, o->large_bytes, o->large_runs, &res->http_large);
        if (r < 0)
                failed(res, "large result over HTTP", r);
        if ((r = conn_unix(&c, d->sock)) < 0 || (r = conn_initialize(&c, d, now_ns() + 10 * (int64_t)1000000000)) < 0 ||
            (r = measure_large(&c, BENCH_TOOL_PREFIX "blob", o->large_bytes, o->large_runs, d, &res->http_large_socket)) < 0)
                failed(res, "large result over the socket, beside HTTP", r);
        conn_close(&c);
        if ((r = measure_http_unauth_bodies(d, port, o->quick ? 10 : HTTP_UNAUTH_BODIES, HTTP_UNAUTH_BYTES, &res->http_unauth)) < 0)
                failed(res, "HTTP bodies without a token", r);
}

/* issue 25: another daemon of the same settings at RLIMIT_NOFILE 200 (prlimit before it),
 * 300 connections that never finish their heads held while a Unix socket client pings and
 * an authorized HTTP client opens a session. */
static void run_http_slow(const struct options *ho, unsigned port, struct results *res) {
        struct options so = *ho;
        struct daemon_run d;
        char *prefix = NULL;
        int r = asprintf(&prefix, "prlimit --nofile=%u:%u%s%s", HTTP_SLOW_NOFILE, HTTP_SLOW_NOFILE,
                         ho->daemon.prefix ? " " : "", ho->daemon.prefix ? ho->daemon.prefix : "") < 0 ? -ENOMEM : 0;

        so.daemon.prefix = prefix;
        if (r >= 0)
                r = start_ready(&d, &so);
        if (r >= 0)
                r = measure_http_slow_heads(&d, port, HTTP_BENCH_TOKEN, HTTP_SLOW_HEADS, &res->http_slow);
        res->http_slow.nofile = HTTP_SLOW_NOFILE;
        if (r < 0)
                failed(res, "HTTP heads never finished", r);
        if (r >= 0 || d.pid > 0)
                if (daemon_stop(&d, 30000) != 0 && r >= 0)
                        failed(res, "stopping the daemon (exit status not 0)", -ECHILD);
        free(prefix);
}

/* One daemon listening on both; at each level, the same number of clients on each, one call
 * in flight per client (what HTTP/1.1 allows a connection), the socket's measured the same way. */
/* The token file in creds (made here, a mkdtemp() template) and o's settings with HTTP on port
 * in *ret_settings (freed by the caller). */
static int http_options(const struct options *o, unsigned port, char *creds, char **ret_settings) {
        char path[64];
        FILE *f;

        if (!mkdtemp(creds))
                return -errno;
        snprintf(path, sizeof path, "%s/token", creds);
        if (!(f = fopen(path, "we")))
                return -errno;
        fputs(HTTP_BENCH_TOKEN, f);
        fclose(f);
        if (asprintf(ret_settings, "%s%s\"http\": {\"listen\": [\"127.0.0.1:%u\"], \"tokens\": [{\"token\": "
                     "{\"credential\": \"token\"}, \"user\": %u}]}, \"maxHttpSessions\": 4096",
                     o->daemon.settings ? o->daemon.settings : "", o->daemon.settings && *o->daemon.settings ? ", " : "",
                     port, (unsigned)getuid()) < 0) {
                *ret_settings = NULL;
                return -ENOMEM;
        }
        return 0;
}

static void remove_creds(const char *creds) {
        char path[64];

        snprintf(path, sizeof path, "%s/token", creds);
        unlink(path);
        rmdir(creds);
}

static void run_http(const struct options *o, struct results *res) {
        char creds[] = "/tmp/mcpvisor-bench-http-XXXXXX", *settings = NULL;
        struct options ho = *o;
        struct daemon_run d;
        unsigned port = free_port();
        int r = http_options(o, port, creds, &settings);

        ho.daemon.settings = settings;
        ho.daemon.credentials = creds;
        if (r >= 0)
                r = start_ready(&d, &ho);
        for (unsigned k = 0; r >= 0 && k < o->n_levels; k++) {
                struct load l;

                r = measure_http(&d, port, HTTP_BENCH_TOKEN, BENCH_TOOL_PREFIX "echo", o->levels[k], o->seconds, &res->http[k]);
                if (r >= 0)
                        r = measure_load(&d, o->levels[k], 1, o->seconds, &l);
                res->http_socket[k] = (struct http_load){ .clients = l.clients, .calls_per_s = l.calls_per_s,
                                                          .daemon_cpu_us = l.daemon_cpu_us, .ok = l.ok };
        }
        if (r < 0)
                failed(res, "HTTP beside the socket", r);
        else
                run_http_sizes(o, &d, port, res);
        if (r >= 0 || d.pid > 0)
                if (daemon_stop(&d, 30000) != 0 && r >= 0)
                        failed(res, "stopping the daemon (exit status not 0)", -ECHILD);
        run_http_slow(&ho, port, res);
        remove_creds(creds);
        free(settings);
}

/* --only modern: one daemon listening on both, each era's calls on each, one client a path. */
static void run_modern(const struct options *o, struct results *res) {
        char creds[] = "/tmp/mcpvisor-bench-modern-XXXXXX", *settings = NULL;
        struct options mo = *o;
        struct daemon_run d = { 0 };
        unsigned port = free_port();
        int r = http_options(o, port, creds, &settings);

        mo.daemon.settings = settings;
        mo.daemon.credentials = creds;
        if (r >= 0)
                r = start_ready(&d, &mo);
        if (r >= 0 && (r = measure_modern(&d, o->daemon.server, port, HTTP_BENCH_TOKEN, o->calls, o->mrtr_rounds,
                                          &res->modern)) < 0)
                failed(res, "the modern era", r);
        else if (r < 0)
                res->failed = true;
        if (d.pid > 0 && daemon_stop(&d, 30000) != 0 && !res->failed)
                failed(res, "stopping the daemon (exit status not 0)", -ECHILD);
        remove_creds(creds);
        free(settings);
}

/* --only jwt: one daemon with a static token and http.oauth for the bench's identity
 * provider; at each level the same calls with each token, alternately, rounds times; the
 * median round of each kept. */
static int cmp_cpu(const void *a, const void *b) {
        double x = ((const struct http_load *)a)->daemon_cpu_us, y = ((const struct http_load *)b)->daemon_cpu_us;

        return x < y ? -1 : x > y;
}

static void run_jwt(const struct options *o, struct results *res) {
        char creds[] = "/tmp/mcpvisor-bench-jwt-XXXXXX", *settings = NULL, *with = NULL, *token = NULL, aud[64];
        struct jwt_issuer *is = jwt_issuer_start();
        unsigned port = free_port(), rounds = o->quick ? 1 : 3;
        struct options ho = *o;
        struct daemon_run d;
        int r = is ? http_options(o, port, creds, &settings) : -ENOMEM;
        struct passwd *pw = getpwuid(getuid());

        snprintf(aud, sizeof aud, "http://127.0.0.1:%u/mcp", port);
        if (r >= 0 && (!pw || !(token = jwt_issuer_token(is, aud, pw->pw_name, 3600))))
                r = -ENOMEM;
        /* settings ends with the http object's closing brace and maxHttpSessions: oauth goes in the object */
        if (r >= 0 && asprintf(&with, "%s, \"http\": {\"listen\": [\"127.0.0.1:%u\"], \"tokens\": [{\"token\": "
                               "{\"credential\": \"token\"}, \"user\": %u}], \"oauth\": {\"issuer\": \"%s\"}}",
                               o->daemon.settings && *o->daemon.settings ? o->daemon.settings : "\"logLevel\": \"info\"",
                               port, (unsigned)getuid(), jwt_issuer_url(is)) < 0)
                r = -ENOMEM;
        ho.daemon.settings = with;
        ho.daemon.credentials = creds;
        if (r >= 0)
                r = start_ready(&d, &ho);
        usleep(200 * 1000); /* the keys, fetched at start */
        for (unsigned k = 0; r >= 0 && k < o->n_levels; k++) {
                struct http_load s[5], j[5];

                for (unsigned i = 0; r >= 0 && i < rounds; i++) {
                        r = measure_http(&d, port, HTTP_BENCH_TOKEN, BENCH_TOOL_PREFIX "echo", o->levels[k], o->seconds, &s[i]);
                        if (r >= 0)
                                r = measure_http(&d, port, token, BENCH_TOOL_PREFIX "echo", o->levels[k], o->seconds, &j[i]);
                }
                if (r < 0)
                        break;
                qsort(s, rounds, sizeof s[0], cmp_cpu);
                qsort(j, rounds, sizeof j[0], cmp_cpu);
                res->jwt_static[k] = s[rounds / 2];
                res->jwt[k] = j[rounds / 2];
        }
        if (r < 0)
                failed(res, "HTTP calls with a JWT", r);
        if (r >= 0 || d.pid > 0)
                if (daemon_stop(&d, 30000) != 0 && r >= 0)
                        failed(res, "stopping the daemon (exit status not 0)", -ECHILD);
        jwt_issuer_stop(is);
        if (settings)
                remove_creds(creds);
        free(settings);
        free(with);
        free(token);
}

/* ---- issue 28: the TypeScript SDK's client against mcpvisord and the peers ---- */

static void sdk_stop(enum sdk_target t, struct daemon_run *d, struct results *res) {
        if (t == SDK_MCPVISORD || t == SDK_COMPARED) {
                if (d->pid > 0 && daemon_stop(d, 30000) != 0)
                        failed(res, "stopping the daemon (exit status not 0)", -ECHILD);
        } else {
                peer_gateway_stop(d);
        }
}

/* Each gateway started once, then measured round after round, one after the other, so that
 * the machine's drifts fall on all of them alike. */
static void run_sdk(const struct options *o, struct results *res) {
        static const char *const names[SDK_TARGETS] = { "mcpvisord", "mcpvisord (compared)", "mcp-hub", "supergateway" };
        static const char *const tools[SDK_TARGETS] = { BENCH_TOOL_PREFIX "echo", BENCH_TOOL_PREFIX "echo",
                                                        BENCH_TOOL_PREFIX "echo", "echo" };
        char creds[2][32] = { "/tmp/mcpvisor-bench-sdk-XXXXXX", "/tmp/mcpvisor-bench-sdk-XXXXXX" };
        char *settings[2] = { NULL, NULL }, url[SDK_TARGETS][64];
        unsigned ports[SDK_TARGETS];
        struct daemon_run d[SDK_TARGETS];
        struct sdk_figures *f = &res->sdk;
        int r = 0;

        f->rounds = o->sdk_rounds;
        f->in_flight = o->levels[o->n_levels - 1];
        for (int t = 0; t < SDK_TARGETS; t++) {
                unsigned port = ports[t] = free_port();
                struct options ho = *o;

                d[t] = (struct daemon_run){ .notify_fd = -1 };
                snprintf(url[t], sizeof url[t], "http://127.0.0.1:%u/mcp", port);
                if ((f->missing[t] = sdk_missing()))
                        continue;
                switch (t) {
                case SDK_COMPARED:
                        if (!o->sdk_compare) {
                                f->missing[t] = "no --sdk-compare";
                                break;
                        }
                        ho.daemon.daemon = o->sdk_compare;
                        /* fall through */
                case SDK_MCPVISORD:
                        r = http_options(o, port, creds[t], &settings[t]);
                        ho.daemon.settings = settings[t];
                        ho.daemon.credentials = creds[t];
                        if (r >= 0)
                                r = start_ready(&d[t], &ho);
                        if (r < 0)
                                f->missing[t] = "did not start";
                        break;
                case SDK_HUB:
                        f->missing[t] = hub_gateway_start(&d[t], port);
                        break;
                case SDK_SUPERGATEWAY:
                        f->missing[t] = peer_gateway_start(&d[t], port);
                        break;
                }
        }
        for (unsigned k = 0; k < f->rounds; k++)
                for (int i = 0; i < SDK_TARGETS; i++) {
                        int t = (int)((k + (unsigned)i) % SDK_TARGETS); /* each round begins with another */

                        if (f->missing[t])
                                continue;
                        const char *token = t == SDK_MCPVISORD || t == SDK_COMPARED ? HTTP_BENCH_TOKEN : "";

                        r = measure_sdk(d[t].pid, url[t], tools[t], token, f->in_flight, o->seconds, &f->run[t][k]);
                        if (r < 0)
                                failed(res, names[t], r);
                        if (t != SDK_HUB &&
                            (r = measure_http(&d[t], ports[t], *token ? token : "none", tools[t], f->in_flight, o->seconds,
                                              &f->raw[t][k])) < 0)
                                failed(res, names[t], r);
                }
        for (int t = 0; t < SDK_TARGETS; t++)
                sdk_stop(t, &d[t], res);
        for (int t = SDK_MCPVISORD; t <= SDK_COMPARED; t++) {
                if (settings[t])
                        remove_creds(creds[t]);
                free(settings[t]);
        }
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

        return (x > y) - (x < y);
}

static unsigned most_descriptors(const struct options *o) {
        unsigned most = 0;

        for (unsigned k = 0; k < o->n_levels; k++)
                most = o->levels[k] > most ? o->levels[k] : most;
        for (unsigned k = 0; (o->parts & PART_IDLE) && k < o->n_idle; k++)
                most = o->idle[k] > most ? o->idle[k] : most;
        if (o->parts & PART_CLOSE)
                most = o->closes > most ? o->closes : most;
        /* Each server: its stdin, stdout and stderr pipes and a pidfd. */
        if ((o->parts & PART_SERVERS) && 4 * o->servers > most)
                most = 4 * o->servers;
        if ((o->parts & PART_ACCESS) && o->idle[o->n_idle - 1] > most)
                most = o->idle[o->n_idle - 1];
        return most + 64;
}

/* ---- the table ---- */

static const char *verdict(bool measured, bool met) {
        return !measured ? "n/a" : met ? "ok" : "MISSED";
}

static void row(const char *what, const char *via, const char *direct, const char *figure, const char *target,
                const char *judged) {
        printf("%-40s %14s %14s %14s %12s  %s\n", what, via, direct, figure, target, judged);
}

static const char *us(char *buf, int64_t ns) {
        snprintf(buf, 32, "%.1f us", (double)ns / 1000.0);
        return buf;
}

static void latency_rows(const struct options *o, const struct results *res, enum placement where) {
        const struct latency *v = &res->via[where], *dr = &res->direct[where];
        const char *names[] = { "p50", "p90", "p99" };
        int64_t via[] = { v->p50, v->p90, v->p99 }, direct[] = { dr->p50, dr->p90, dr->p99 };
        int64_t target[] = { TARGET_ADDED_P50_NS, 0, TARGET_ADDED_P99_NS };
        bool measured = v->ok && dr->ok;

        for (int k = 0; k < 3; k++) {
                char what[64], a[32], b[32], c[32], t[32];
                if (where == PLACED_FREE)
                        snprintf(what, sizeof what, "tools/call latency %s, any CPU", names[k]);
                else
                        snprintf(what, sizeof what, "tools/call latency %s, all on CPU %d", names[k], o->pin_cpu);
                snprintf(c, sizeof c, "%+.1f us", (double)(via[k] - direct[k]) / 1000.0);
                snprintf(t, sizeof t, "<= %.0f us", (double)target[k] / 1000.0);
                row(what, us(a, via[k]), us(b, direct[k]), c, target[k] ? t : "-",
                    target[k] ? verdict(measured, via[k] - direct[k] <= target[k]) : "-");
        }
}

static void load_rows(const struct options *o, const struct results *res) {
        for (unsigned k = 0; k < o->n_levels; k++) {
                const struct load *l = &res->load[k];
                char what[64], a[32];
                snprintf(what, sizeof what, "throughput, %u client%s x %u in flight", l->clients,
                         l->clients == 1 ? "" : "s", l->in_flight);
                snprintf(a, sizeof a, "%.0f/s", l->calls_per_s);
                row(what, a, "", "", "-", l->ok ? "-" : "n/a");
        }
        for (unsigned k = 0; k < o->n_levels; k++) {
                const struct load *l = &res->load[k];
                char what[64], c[32];
                snprintf(what, sizeof what, "daemon CPU per call, %u client%s", l->clients, l->clients == 1 ? "" : "s");
                snprintf(c, sizeof c, "%.2f us", l->daemon_cpu_us);
                row(what, "", "", c, "<= 10 us", verdict(l->ok, l->daemon_cpu_us <= TARGET_CPU_US));
        }
}

static void memory_rows(const struct options *o, const struct results *res) {
        char c[32];
        unsigned held_at = 0;

        snprintf(c, sizeof c, "%.2f MiB", (double)res->idle_rss_kib / KIB);
        row("idle RSS (1 server, after READY)", "", "", c, "<= 8 MiB",
            verdict(res->idle_rss_kib > 0, res->idle_rss_kib <= TARGET_IDLE_RSS_KIB));
        for (unsigned k = 0; k < o->n_idle; k++) {
                const struct idle *i = &res->idle[k];
                char what[64];
                snprintf(what, sizeof what, "RSS per idle client, %u clients", i->wanted);
                snprintf(c, sizeof c, "%.2f KiB", i->kib_per_client);
                row(what, "", "", c, "<= 32 KiB", verdict(i->rss_kib > 0, i->kib_per_client <= TARGET_CLIENT_KIB));
                held_at = k;
        }
        if (o->n_idle > 0) {
                const struct idle *i = &res->idle[held_at];
                char t[32];
                snprintf(c, sizeof c, "%u/%u", i->held, i->wanted);
                snprintf(t, sizeof t, "%u", TARGET_HELD);
                /* Fewer clients than the target asked for (--quick): nothing to judge. */
                row("idle clients held (each answers a ping)", "", "", c, t,
                    verdict(i->wanted >= TARGET_HELD, i->held == i->wanted));
        }
}

static void large_rows(const struct options *o, const struct results *res) {
        char what[64], a[32], b[32];

        snprintf(what, sizeof what, "%.1f MiB tool result (MB/s)", (double)o->large_bytes / MIB);
        snprintf(a, sizeof a, "%.0f MB/s", res->large_via.mb_per_s);
        snprintf(b, sizeof b, "%.0f MB/s", res->large_direct.mb_per_s);
        row(what, a, b, "", ">= 200 MB/s",
            verdict(res->large_via.ok, res->large_via.mb_per_s >= TARGET_LARGE_MB_S));
        /* The figure column holds the socket's figure, for comparison; no target of its own. */
        snprintf(what, sizeof what, "  the same via mcpvisorctl connect");
        snprintf(a, sizeof a, "%.0f MB/s", res->large_bridge.mb_per_s);
        snprintf(b, sizeof b, "socket %.0f", res->large_via.mb_per_s);
        row(what, a, "", b, "-", res->large_bridge.ok ? "-" : "n/a");
        snprintf(a, sizeof a, "%.1f ms", res->large_via.daemon_cpu_ms);
        snprintf(b, sizeof b, "bridged %.1f", res->large_bridge.daemon_cpu_ms);
        row("  daemon CPU per such result", a, "", b, "-", "-");
        snprintf(a, sizeof a, "%.1f ms", res->large_bridge.bridge_cpu_ms);
        row("  mcpvisorctl connect's CPU per result", a, "", "", "-", "-");
}

static void startup_rows(const struct results *res) {
        char c[48];

        snprintf(c, sizeof c, "%.2f ms", (double)res->startup.p50 / 1e6);
        row("start to READY=1, p50", "", "", c, "<= 10 ms", verdict(res->startup.ok, res->startup.p50 <= TARGET_READY_NS));
        snprintf(c, sizeof c, "%.2f ms", (double)res->startup.max / 1e6);
        row("start to READY=1, max", "", "", c, "-", "-");
}

/* A scale case's two rows: what it cost (in seconds), and the other client's p99. */
static void scale_rows(const char *what, double seconds, const char *other, int64_t p99, bool ok) {
        char a[32], c[32];

        snprintf(c, sizeof c, "%.2f s", seconds);
        row(what, "", "", c, "-", ok ? "-" : "n/a");
        snprintf(c, sizeof c, "%.2f ms", (double)p99 / 1e6);
        snprintf(a, sizeof a, "<= %.0f ms", TARGET_OTHER_P99_NS / 1e6);
        row(other, "", "", c, a, verdict(ok, p99 <= TARGET_OTHER_P99_NS));
}

static void scale_case_rows(const struct options *o, const struct results *res) {
        char what[64];

        if (o->parts & PART_CANCEL) {
                snprintf(what, sizeof what, "%u held, cancelled, unknown: daemon CPU", res->cancels.n);
                scale_rows(what, res->cancels.daemon_cpu_s, "  another client's p99 meanwhile", res->cancels.p99,
                           res->cancels.ok);
        }
        if (o->parts & PART_CLOSE) {
                snprintf(what, sizeof what, "%u closed at once: freed after", res->closes.n);
                scale_rows(what, res->closes.freed_s, "  another client's ping p99 meanwhile", res->closes.p99,
                           res->closes.ok);
        }
        if (o->parts & PART_NOTIFY) {
                snprintf(what, sizeof what, "%u held, %u notifications: daemon CPU", res->notifies.n, res->notifies.n);
                scale_rows(what, res->notifies.daemon_cpu_s, "  another client's ping p99 meanwhile", res->notifies.p99,
                           res->notifies.ok);
        }
}

static void phase_rows(const char *what, const struct phase_figures *p) {
        char c[32], w[64];

        snprintf(c, sizeof c, "%.2f s", p->seconds);
        row(what, "", "", c, "-", p->ok ? "-" : "n/a");
        snprintf(w, sizeof w, "  another client's ping p99 meanwhile");
        snprintf(c, sizeof c, "%.2f ms", (double)p->p99 / 1e6);
        row(w, "", "", c, "<= 10 ms", verdict(p->ok && p->n_samples > 0, p->p99 <= TARGET_OTHER_P99_NS));
}

/* Where the systemd launcher cannot run, the row says so and the note why. The target is
 * the launcher's own cost, the unit without a sandbox ("none"); the presets' rows say what
 * their sandbox adds, as information: confinement by default is worth its start cost. */
static void launcher_rows(const struct results *res) {
        static const char *const label[N_LAUNCHER_SANDBOXES] = {
                [LAUNCHER_SANDBOX_BASIC] = "  systemd, sandbox \"basic\" (default)",
                [LAUNCHER_SANDBOX_STRICT] = "  systemd, sandbox \"strict\"",
        };
        const struct launcher_figures *x = &res->launchers;
        const int64_t *p = x->systemd_p50;
        char a[32], b[32], c[32];

        if (x->unavailable) {
                row("server start to ready, systemd \"none\"", "", "", "skipped", "<= +30 ms", "n/a");
                return;
        }
        snprintf(a, sizeof a, "%.1f ms", (double)p[LAUNCHER_SANDBOX_NONE] / 1e6);
        snprintf(b, sizeof b, "exec %.1f ms", (double)x->exec_p50 / 1e6);
        snprintf(c, sizeof c, "%+.1f ms", (double)(p[LAUNCHER_SANDBOX_NONE] - x->exec_p50) / 1e6);
        row("server start to ready, systemd \"none\"", a, b, c, "<= +30 ms",
            verdict(x->ok, p[LAUNCHER_SANDBOX_NONE] - x->exec_p50 <= TARGET_LAUNCHER_ADDED_NS));
        for (unsigned i = 0; i < N_LAUNCHER_SANDBOXES; i++) {
                if (!label[i])
                        continue;
                snprintf(a, sizeof a, "%.1f ms", (double)p[i] / 1e6);
                snprintf(c, sizeof c, "%+.1f ms", (double)(p[i] - x->exec_p50) / 1e6);
                row(label[i], a, b, c, "-", "info");
        }
}

static void servers_rows(const struct results *res) {
        const struct servers_figures *x = &res->servers;
        char what[64], c[32];

        snprintf(what, sizeof what, "%u servers: start to READY=1", x->n);
        snprintf(c, sizeof c, "%.2f s", x->to_ready_s);
        row(what, "", "", c, "-", "-");
        phase_rows("  start to all ready", &x->start);
        phase_rows("  reload, one server changed", &x->reload_one);
        phase_rows("  reload, all servers changed", &x->reload_all);
        snprintf(c, sizeof c, "%.2f s", x->stop_s);
        row("  SIGTERM to exit", "", "", c, "-", x->stop_ok ? "-" : "n/a");
}

static void access_rows(const struct results *res) {
        const struct access_figures *a = &res->access;
        double cpu = a->cpu_median[ACCESS_SOME] - a->cpu_median[ACCESS_NONE];
        double ratio = a->kib_median[ACCESS_NONE] > 0 ? a->kib_median[ACCESS_SOME] / a->kib_median[ACCESS_NONE] : 0;
        char x[32], y[32], c[32];

        snprintf(x, sizeof x, "%.2f us", a->cpu_median[ACCESS_SOME]);
        snprintf(y, sizeof y, "%.2f us", a->cpu_median[ACCESS_NONE]);
        snprintf(c, sizeof c, "%+.2f us", cpu);
        row("access: daemon CPU per call, 50 rules vs none", x, y, c, "<= +1 us", verdict(a->ok, cpu <= TARGET_ACCESS_CPU_US));
        snprintf(x, sizeof x, "%.2f KiB", a->kib_median[ACCESS_SOME]);
        snprintf(y, sizeof y, "%.2f KiB", a->kib_median[ACCESS_NONE]);
        snprintf(c, sizeof c, "%+.1f %%", (ratio - 1) * 100);
        row("access: memory per idle client, 50 rules vs none", x, y, c, "<= +10 %",
            verdict(a->ok && ratio > 0, ratio <= TARGET_ACCESS_MEMORY));
}

static void access_notes(const struct results *res) {
        const struct access_figures *a = &res->access;

        printf("  access: %u round%s, %u tools, %u clients under load, %u idle; each round:", a->rounds,
               a->rounds == 1 ? "" : "s", ACCESS_TOOLS, ACCESS_CLIENTS, a->idle);
        for (int m = 0; m < ACCESS_MODES; m++) {
                printf("%s CPU us/call", m == ACCESS_NONE ? "\n    none:" : "\n    50 rules:");
                for (unsigned k = 0; k < a->rounds; k++)
                        printf(" %.2f", a->cpu_us[m][k]);
                printf("; KiB/idle client");
                for (unsigned k = 0; k < a->rounds; k++)
                        printf(" %.2f", a->kib[m][k]);
        }
        printf("\n");
}

/* issue 25: what connections that prove nothing cost: bodies without a token, and heads
 * never finished at 200 descriptors (with a Unix socket client's pings meanwhile). */
static void jwt_rows(const struct options *o, const struct results *res) {
        for (unsigned k = 0; k < o->n_levels; k++) {
                const struct http_load *j = &res->jwt[k], *s = &res->jwt_static[k];
                double change = s->daemon_cpu_us > 0 ? j->daemon_cpu_us / s->daemon_cpu_us - 1 : 0;
                char what[64], x[32], y[32], c[32];

                snprintf(what, sizeof what, "HTTP call, JWT vs static token (%u cl.)", j->clients);
                snprintf(x, sizeof x, "%.1f us", j->daemon_cpu_us);
                snprintf(y, sizeof y, "%.1f us", s->daemon_cpu_us);
                snprintf(c, sizeof c, "%+.1f %%", change * 100);
                row(what, x, y, c, "<= +10 %", verdict(j->ok && s->ok, change <= 0.10));
        }
}

static void http_admission_rows(const struct results *res) {
        const struct unauth_bodies *u = &res->http_unauth;
        const struct slow_heads *s = &res->http_slow;
        char what[80], a[32], b[48], c[32];

        snprintf(what, sizeof what, "HTTP: RSS, %u unauthenticated %zu MiB bodies", u->n, u->bytes >> 20);
        snprintf(a, sizeof a, "%ld KiB", u->rss_peak);
        snprintf(b, sizeof b, "%ld before, %ld after", u->rss_before, u->rss_after);
        snprintf(c, sizeof c, "%u of %u: 401", u->refused, u->n);
        row(what, a, "", b, c, u->ok ? "-" : "n/a");
        snprintf(what, sizeof what, "HTTP: RSS, %u heads never finished, nofile %u", s->n, s->nofile);
        snprintf(a, sizeof a, "%ld KiB", s->rss_kib);
        snprintf(b, sizeof b, "%d descriptors held", s->fds);
        row(what, a, "", b, "-", s->ok ? "-" : "n/a");
        snprintf(what, sizeof what, "HTTP: Unix client's ping meanwhile (p50/max)");
        snprintf(a, sizeof a, "%.1f us", (double)s->ping_p50 / 1000);
        snprintf(b, sizeof b, "max %.1f us, %u pings", (double)s->ping_max / 1000, s->pings);
        row(what, a, "", b, "-", s->ok ? "-" : "n/a");
        snprintf(what, sizeof what, "HTTP: authorized session opened meanwhile");
        snprintf(a, sizeof a, "%.1f ms", (double)s->session_ns / 1e6);
        row(what, a, "", "", "-", s->ok ? "-" : "n/a");
}

/* The large result over HTTP beside the socket's, and the memory of sessions held. */
static void http_size_rows(const struct options *o, const struct results *res) {
        const struct large *h = &res->http_large, *s = &res->http_large_socket;
        const struct idle *i = &res->http_sessions;
        char what[64], a[32], b[32], c[32];

        snprintf(what, sizeof what, "HTTP: %.1f MiB tool result (MB/s)", (double)o->large_bytes / MIB);
        snprintf(a, sizeof a, "%.0f MB/s", h->mb_per_s);
        snprintf(b, sizeof b, "socket %.0f", s->mb_per_s);
        row(what, a, "", b, "-", h->ok && s->ok ? "-" : "n/a");
        snprintf(what, sizeof what, "HTTP: daemon CPU per %.1f MiB result", (double)o->large_bytes / MIB);
        snprintf(a, sizeof a, "%.1f ms", h->daemon_cpu_ms);
        snprintf(b, sizeof b, "socket %.1f", s->daemon_cpu_ms);
        row(what, a, "", b, "-", h->ok && s->ok ? "-" : "n/a");
        snprintf(what, sizeof what, "HTTP: RSS per held session, %u (stream each)", i->wanted);
        snprintf(c, sizeof c, "%.2f KiB", i->kib_per_client);
        row(what, "", "", c, "-", i->ok && i->held == i->wanted ? "-" : "n/a");
        http_admission_rows(res);
}

/* supergateway's figures beside the front door's, at each level. */
static void peer_rows(const struct options *o, const struct results *res) {
        if (res->peer_missing) {
                row("supergateway (stateful, Streamable HTTP)", "", "", res->peer_missing, "-", "n/a");
                return;
        }
        for (unsigned k = 0; k < peer_levels(o); k++) {
                const struct http_load *p = &res->peer[k], *h = &res->http[k];
                char what[64], a[32], b[32];

                snprintf(what, sizeof what, "supergateway: throughput, %u client%s x 1", p->clients, p->clients == 1 ? "" : "s");
                snprintf(a, sizeof a, "%.0f/s", p->calls_per_s);
                snprintf(b, sizeof b, "mcpvisord %.0f/s", h->calls_per_s);
                row(what, a, "", b, "-", p->ok ? "-" : "n/a");
                snprintf(what, sizeof what, "supergateway: its CPU per call, %u client%s", p->clients, p->clients == 1 ? "" : "s");
                snprintf(a, sizeof a, "%.2f us", p->daemon_cpu_us);
                snprintf(b, sizeof b, "mcpvisord %.2f us", h->daemon_cpu_us);
                row(what, a, "", b, "-", p->ok ? "-" : "n/a");
                snprintf(what, sizeof what, "supergateway: round trip p50 / p99, %u client%s", p->clients, p->clients == 1 ? "" : "s");
                snprintf(a, sizeof a, "%.1f / %.1f us", (double)p->p50 / 1000, (double)p->p99 / 1000);
                row(what, a, "", "", "-", p->ok ? "-" : "n/a");
        }
}

/* The lowest and highest over the rounds of one figure of a target's runs, as "LO-HI" and a
 * unit; "-" when no round measured it. */
static void sdk_range(const struct sdk_figures *f, int t, size_t offset, const char *unit, char *buf, size_t size) {
        double lo = 0, hi = 0;
        bool any = false;

        for (unsigned k = 0; k < f->rounds; k++) {
                const struct sdk_load *l = &f->run[t][k];
                double v = *(const double *)((const char *)l + offset);

                if (!l->ok)
                        continue;
                lo = any && lo < v ? lo : v;
                hi = any && hi > v ? hi : v;
                any = true;
        }
        if (any)
                snprintf(buf, size, "%.0f-%.0f%s", lo, hi, unit);
        else
                snprintf(buf, size, "-");
}

/* Each gateway's calls/s, its CPU per call and the SDK client's, lowest to highest over the
 * rounds. */
static void sdk_rows(const struct sdk_figures *f) {
        static const char *const names[SDK_TARGETS] = { "mcpvisord", "mcpvisord --sdk-compare", "mcp-hub 4.2.1",
                                                        "supergateway 4.0.0" };

        for (int t = 0; t < SDK_TARGETS; t++) {
                char what[96], a[48], b[48], c[48];

                if (f->missing[t]) {
                        snprintf(what, sizeof what, "SDK client, %u in flight: %s", f->in_flight, names[t]);
                        row(what, "", "", t == SDK_COMPARED ? "not asked" : "skipped", "-", "n/a");
                        if (t != SDK_COMPARED)
                                printf("  %s: %s\n", names[t], f->missing[t]);
                        continue;
                }
                snprintf(what, sizeof what, "SDK client, %u in flight: %s (%s)", f->in_flight, names[t], f->run[t][0].transport);
                sdk_range(f, t, offsetof(struct sdk_load, calls_per_s), "/s", a, sizeof a);
                row(what, a, "", "", "-", "-");
                for (unsigned k = 0; k < f->rounds; k++) {
                        const struct sdk_load *l = &f->run[t][k];
                        const struct http_load *h = &f->raw[t][k];

                        if (l->ok)
                                printf("    round %u: %.0f calls/s, %.1f us its CPU, %.1f us the client's", k + 1,
                                       l->calls_per_s, l->gateway_cpu_us, l->client_cpu_us);
                        if (l->ok && h->ok)
                                printf("; C clients: %.0f calls/s, %.1f us its CPU", h->calls_per_s, h->daemon_cpu_us);
                        if (l->ok)
                                printf("\n");
                }
                snprintf(what, sizeof what, "  %s: its CPU / the client's CPU per call", names[t]);
                sdk_range(f, t, offsetof(struct sdk_load, gateway_cpu_us), " us", b, sizeof b);
                sdk_range(f, t, offsetof(struct sdk_load, client_cpu_us), " us", c, sizeof c);
                row(what, b, c, "", "-", "-");
        }
}

/* Issue 30: each era's figures side by side ("via daemon": the modern path, "direct": the
 * legacy one, "figure": the difference), then the multi round-trip request's. */
static void modern_pair(const char *what, const struct modern_path *m, const struct modern_path *l) {
        char name[80], a[32], b[32], c[32];
        bool ok = m->ok && l->ok;

        snprintf(name, sizeof name, "%s p50 / p99", what);
        snprintf(a, sizeof a, "%.1f / %.1f us", (double)m->p50 / 1000, (double)m->p99 / 1000);
        snprintf(b, sizeof b, "%.1f / %.1f us", (double)l->p50 / 1000, (double)l->p99 / 1000);
        snprintf(c, sizeof c, "%+.1f us p50", (double)(m->p50 - l->p50) / 1000);
        row(name, m->ok ? a : "-", l->ok ? b : "-", ok ? c : "-", "-", ok ? "-" : "n/a");
        snprintf(name, sizeof name, "%s daemon CPU", what);
        snprintf(a, sizeof a, "%.2f us", m->daemon_cpu_us);
        snprintf(b, sizeof b, "%.2f us", l->daemon_cpu_us);
        snprintf(c, sizeof c, "%+.2f us", m->daemon_cpu_us - l->daemon_cpu_us);
        row(name, m->ok ? a : "-", l->ok ? b : "-", ok ? c : "-", "-", ok ? "-" : "n/a");
}

static void modern_rows(const struct results *res) {
        const struct modern_path *p = res->modern.path;

        const struct modern_path *dr = &p[MODERN_DIRECT];
        char a[32], b[32], c[32];

        row("modern vs legacy (one daemon, 1 client, 1 in flight)", "modern", "legacy", "", "", "");
        snprintf(a, sizeof a, "%+.1f us", (double)(p[MODERN_SOCKET].p50 - dr->p50) / 1000);
        snprintf(b, sizeof b, "%+.1f us", (double)(p[MODERN_SOCKET_LEGACY].p50 - dr->p50) / 1000);
        snprintf(c, sizeof c, "direct %.1f us", (double)dr->p50 / 1000);
        row("  socket: tools/call added p50", a, b, c, "-", dr->ok && p[MODERN_SOCKET].ok ? "-" : "n/a");
        snprintf(a, sizeof a, "%+.1f us", (double)(p[MODERN_HTTP].p50 - dr->p50) / 1000);
        snprintf(b, sizeof b, "%+.1f us", (double)(p[MODERN_HTTP_LEGACY].p50 - dr->p50) / 1000);
        row("  HTTP: tools/call added p50", a, b, c, "-", dr->ok && p[MODERN_HTTP].ok ? "-" : "n/a");
        modern_pair("  socket: tools/call", &p[MODERN_SOCKET], &p[MODERN_SOCKET_LEGACY]);
        modern_pair("  HTTP: tools/call", &p[MODERN_HTTP], &p[MODERN_HTTP_LEGACY]);
        modern_pair("  socket: elicitation round trip", &p[MODERN_MRTR_SOCKET], &p[MODERN_ASK_LEGACY]);
        modern_pair("  HTTP MRTR vs socket legacy elicit.", &p[MODERN_MRTR_HTTP], &p[MODERN_ASK_LEGACY]);
}

static void http_rows(const struct options *o, const struct results *res) {
        http_size_rows(o, res);
        for (unsigned k = 0; k < o->n_levels; k++) {
                const struct http_load *h = &res->http[k], *s = &res->http_socket[k];
                double ratio = s->daemon_cpu_us > 0 ? h->daemon_cpu_us / s->daemon_cpu_us : 0;
                char what[64], a[32], b[32], c[32];

                snprintf(what, sizeof what, "HTTP vs socket: throughput, %u client%s x 1", h->clients, h->clients == 1 ? "" : "s");
                snprintf(a, sizeof a, "%.0f/s", h->calls_per_s);
                snprintf(b, sizeof b, "%.0f/s", s->calls_per_s);
                row(what, a, b, "", "-", h->ok && s->ok ? "-" : "n/a");
                snprintf(what, sizeof what, "HTTP vs socket: daemon CPU per call, %u client%s", h->clients, h->clients == 1 ? "" : "s");
                snprintf(a, sizeof a, "%.2f us", h->daemon_cpu_us);
                snprintf(b, sizeof b, "%.2f us", s->daemon_cpu_us);
                snprintf(c, sizeof c, "%.2fx", ratio);
                row(what, a, b, c, "<= 3x", verdict(h->ok && s->ok && ratio > 0, ratio <= 3));
                snprintf(what, sizeof what, "HTTP: round trip p50 / p99, %u client%s", h->clients, h->clients == 1 ? "" : "s");
                snprintf(a, sizeof a, "%.1f / %.1f us", (double)h->p50 / 1000, (double)h->p99 / 1000);
                row(what, a, "", "", "-", h->ok ? "-" : "n/a");
        }
}

/* Issue 14: what each tool of a catalogue costs, from the slope between the first and the
 * last level (the daemon's fixed part cancels out), and listing them all. */
static void catalog_rows(const struct options *o, const struct results *res) {
        const struct catalog_level *a = &res->catalog[0], *b = &res->catalog[o->n_catalog - 1];
        char what[64], x[32], y[32], c[32], t[32];

        for (unsigned k = 0; k < o->n_catalog; k++) {
                const struct catalog_level *l = &res->catalog[k];
                snprintf(what, sizeof what, "catalog: %u tools, VmRSS ready / restarted", l->tools);
                snprintf(x, sizeof x, "%.1f MiB", (double)l->rss_ready_kib / KIB);
                snprintf(y, sizeof y, "%.1f MiB", (double)l->rss_restarted_kib / KIB);
                row(what, x, y, "", "-", l->ok ? "-" : "n/a");
                snprintf(what, sizeof what, "catalog: %u tools, tools/list p50 (all pages)", l->tools);
                snprintf(c, sizeof c, "%.2f ms", (double)l->list_p50_ns / 1e6);
                row(what, "", "", c, "-", l->ok ? "-" : "n/a");
        }
        if (o->n_catalog < 2 || b->tools == a->tools)
                return;
        snprintf(x, sizeof x, "%.2f KiB", (double)(b->rss_ready_kib - a->rss_ready_kib) / (b->tools - a->tools));
        snprintf(y, sizeof y, "%.2f KiB", (double)(b->rss_restarted_kib - a->rss_restarted_kib) / (b->tools - a->tools));
        snprintf(t, sizeof t, "<= %.1f KiB", TARGET_CATALOG_KIB_PER_TOOL);
        row("catalog: per tool, ready / restarted", x, y, "", t,
            verdict(a->ok && b->ok, (double)(b->rss_restarted_kib - a->rss_restarted_kib) / (b->tools - a->tools) <=
                                            TARGET_CATALOG_KIB_PER_TOOL &&
                                    (double)(b->rss_ready_kib - a->rss_ready_kib) / (b->tools - a->tools) <=
                                            TARGET_CATALOG_KIB_PER_TOOL));
}

/* Per-client instances: a new client's first call, memory per instance, a call's cost. */
static void instances_rows(const struct results *res) {
        const struct instances_figures *x = &res->instances;
        int64_t added = x->instance.p50 - x->shared.p50;
        char a[32], b[32], c[32], t[32];

        snprintf(a, sizeof a, "%.2f ms", (double)x->first_p50[0] / 1e6);
        snprintf(b, sizeof b, "max %.2f ms", (double)x->first_max[0] / 1e6);
        row("instance: new client's 1st call p50", a, b, "no spare", "-", x->ok ? "info" : "n/a");
        snprintf(a, sizeof a, "%.2f ms", (double)x->first_p50[1] / 1e6);
        snprintf(b, sizeof b, "max %.2f ms", (double)x->first_max[1] / 1e6);
        row("instance: new client's 1st call p50", a, b, "1 spare", "-", x->ok ? "info" : "n/a");
        if (x->node_runs) {
                snprintf(a, sizeof a, "%.1f ms", (double)x->node_p50[0] / 1e6);
                snprintf(b, sizeof b, "max %.1f ms", (double)x->node_max[0] / 1e6);
                row("  server-memory (node), 1st call p50", a, b, "no spare", "-", "info");
                snprintf(a, sizeof a, "%.1f ms", (double)x->node_p50[1] / 1e6);
                snprintf(b, sizeof b, "max %.1f ms", (double)x->node_max[1] / 1e6);
                row("  server-memory (node), 1st call p50", a, b, "1 spare", "-", "info");
        }
        snprintf(a, sizeof a, "%ld KiB", x->rss_before_kib);
        snprintf(b, sizeof b, "%ld KiB", x->rss_after_kib);
        snprintf(c, sizeof c, "%.1f KiB", x->kib_per_instance);
        row("instance: daemon VmRSS per instance", b, a, c, "-", x->ok ? "info" : "n/a");
        snprintf(c, sizeof c, "%+.1f us", (double)added / 1000.0);
        snprintf(t, sizeof t, "<= +%.0f us", TARGET_INSTANCE_ADDED_NS / 1000.0);
        row("instance: call p50, vs shared", us(a, x->instance.p50), us(b, x->shared.p50), c, t,
            verdict(x->ok, added <= TARGET_INSTANCE_ADDED_NS));
        snprintf(a, sizeof a, "%.1f us", x->cpu_us_instance);
        snprintf(b, sizeof b, "%.1f us", x->cpu_us_shared);
        snprintf(c, sizeof c, "%+.1f us", x->cpu_us_instance - x->cpu_us_shared);
        row("instance: daemon CPU per call, vs shared", a, b, c, "-", x->ok ? "info" : "n/a");
}

static void print_notes(const struct options *o, const struct results *res) {
        for (int w = PLACED_FREE; (o->parts & PART_LATENCY) && w <= (o->pin_cpu >= 0 ? PLACED_ONE_CPU : PLACED_FREE); w++)
                printf("  one call in flight, %s: %.0f calls/s through the daemon, %.0f direct; max %.1f us vs %.1f us\n",
                       w == PLACED_FREE ? "any CPU" : "one CPU", res->via[w].calls_per_s, res->direct[w].calls_per_s,
                       (double)res->via[w].max / 1000.0, (double)res->direct[w].max / 1000.0);
        for (unsigned k = 0; (o->parts & PART_LOAD) && k < o->n_levels; k++) {
                const struct load *l = &res->load[k];
                printf("  %u client%s: CPU s/s: daemon %.2f, server %.2f, bench %.2f; daemon per call: user %.2f us, "
                       "system %.2f us; %llu calls, %llu errors\n",
                       l->clients, l->clients == 1 ? "" : "s", l->daemon_util, l->server_util, l->bench_util,
                       l->daemon_user_us, l->daemon_sys_us, (unsigned long long)l->calls, (unsigned long long)l->errors);
        }
        if (o->parts & PART_LARGE) {
                printf("  large result: daemon CPU %.1f ms per result (user %.1f, system %.1f)\n", res->large_via.daemon_cpu_ms,
                       res->large_via.daemon_user_ms, res->large_via.daemon_sys_ms);
                printf("  large result runs, slowest to fastest: socket %.0f-%.0f MB/s, bridge %.0f-%.0f, direct %.0f-%.0f\n",
                       res->large_via.slowest_mb_per_s, res->large_via.fastest_mb_per_s, res->large_bridge.slowest_mb_per_s,
                       res->large_bridge.fastest_mb_per_s, res->large_direct.slowest_mb_per_s,
                       res->large_direct.fastest_mb_per_s);
        }
        if (o->parts & PART_STARTUP)
                printf("  start-up: %u runs\n", res->startup.runs);
        if (o->parts & PART_CANCEL)
                printf("  cancel: %.2f s in all; the other client's calls p50 %.2f ms, max %.2f ms; %llu calls refused\n",
                       res->cancels.seconds, (double)res->cancels.p50 / 1e6, (double)res->cancels.max / 1e6,
                       (unsigned long long)res->cancels.errors);
        if (o->parts & PART_NOTIFY)
                printf("  notify: %.2f s in all; the other client's pings p50 %.2f ms, max %.2f ms; %llu notifications "
                       "delivered, %llu calls refused\n",
                       res->notifies.seconds, (double)res->notifies.p50 / 1e6, (double)res->notifies.max / 1e6,
                       (unsigned long long)res->notifies.delivered, (unsigned long long)res->notifies.refused);
        if (o->parts & PART_CLOSE)
                printf("  close: the other client's pings p50 %.2f ms, max %.2f ms; %u pings\n",
                       (double)res->closes.p50 / 1e6, (double)res->closes.max / 1e6, res->closes.pings);
        if (o->parts & PART_SERVERS)
                printf("  servers: pings max %.2f ms starting, %.2f ms reloading one, %.2f ms reloading all\n",
                       (double)res->servers.start.max / 1e6, (double)res->servers.reload_one.max / 1e6,
                       (double)res->servers.reload_all.max / 1e6);
        if (o->parts & PART_ACCESS)
                access_notes(res);
        if ((o->parts & PART_LAUNCHER) && res->launchers.unavailable)
                printf("  launcher: not measured: %s\n", res->launchers.unavailable);
        else if (o->parts & PART_LAUNCHER)
                printf("  launcher: %u starts each, p50 (max): exec %.1f ms (%.1f), systemd by sandbox none %.1f ms (%.1f), "
                       "basic %.1f ms (%.1f), strict %.1f ms (%.1f)\n",
                       res->launchers.runs, (double)res->launchers.exec_p50 / 1e6, (double)res->launchers.exec_max / 1e6,
                       (double)res->launchers.systemd_p50[0] / 1e6, (double)res->launchers.systemd_max[0] / 1e6,
                       (double)res->launchers.systemd_p50[1] / 1e6, (double)res->launchers.systemd_max[1] / 1e6,
                       (double)res->launchers.systemd_p50[2] / 1e6, (double)res->launchers.systemd_max[2] / 1e6);
        if (o->parts & PART_CATALOG)
                printf("  catalog: the server is %s --tools N --page-size 0 (N + 10 tools), not the one above; "
                       "%u listings timed per daemon\n",
                       DEMO_SERVER_PATH, o->catalog_runs);
        if (o->parts & PART_INSTANCES)
                printf("  instances: the bench server twice, shared and per-client; %u new clients one after the other "
                       "(connect to the first call's answer; with a spare, each once the next spare is ready); %u "
                       "clients holding an instance each; %u calls each way by one client\n",
                       res->instances.runs, res->instances.held, o->calls);
        if ((o->parts & PART_REMOTE) && res->remote.sdk_missing)
                printf("  remote: the SDK's client direct not measured: %s\n", res->remote.sdk_missing);
        if (o->quick)
                printf("  --quick: small counts; these figures say that the bench runs, not how fast the daemon is\n");
}

static void print_machine(const struct options *o) {
        char line[256], model[256] = "unknown";
        struct utsname u;
        FILE *f = fopen("/proc/cpuinfo", "re");

        while (f && fgets(line, sizeof line, f))
                if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
                        snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
                        model[strcspn(model, "\n")] = '\0';
                        break;
                }
        if (f)
                fclose(f);
        uname(&u);
        printf("mcpvisor-bench: %s, %ld CPUs, Linux %s; bench built %s\n", model, sysconf(_SC_NPROCESSORS_ONLN),
               u.release, BENCH_BUILD_TYPE);
        /* Anything else running skews every figure: say how busy the machine was. */
        f = fopen("/proc/loadavg", "re");
        if (f && fgets(line, sizeof line, f))
                printf("load average at start: %s", line);
        if (f)
                fclose(f);
        printf("daemon %s\nserver %s%s%s\n\n", o->daemon.daemon, o->daemon.server, o->daemon.prefix ? "\nprefix " : "",
               o->daemon.prefix ? o->daemon.prefix : "");
}

/* Issue 17: next to the stdio rows (--only latency,large,remote), the same call and the same large result from a
 * server reached by URL. */
static void remote_rows(const struct results *res) {
        const struct remote_figures *h = &res->remote;
        int64_t via[] = { h->via.p50, h->via.p99 }, direct[] = { h->direct.p50, h->direct.p99 };
        static const char *const names[] = { "p50", "p99" };
        char what[64], a[32], b[32], c[32];

        for (unsigned k = 0; k < 2; k++) {
                snprintf(what, sizeof what, "tools/call to an HTTP server (loopback) %s", names[k]);
                snprintf(c, sizeof c, "%+.1f us", (double)(via[k] - direct[k]) / 1000.0);
                row(what, us(a, via[k]), us(b, direct[k]), h->ok ? c : "-", "-", "-");
        }
        for (unsigned k = 0; k < 2 && h->sdk.ok; k++) {
                int64_t sdk[] = { h->sdk.p50, h->sdk.p99 };

                snprintf(what, sizeof what, "  the SDK's client direct, %s", names[k]);
                snprintf(c, sizeof c, "%+.1f us", (double)(via[k] - sdk[k]) / 1000.0);
                row(what, us(a, via[k]), us(b, sdk[k]), h->ok ? c : "-", "-", "-");
        }
        if (h->sdk_missing)
                row("  the SDK's client direct", "", "", "skipped", "-", "n/a");
        snprintf(c, sizeof c, "%.1f us", h->daemon_cpu_us);
        row("daemon CPU per call to an HTTP server", h->ok ? c : "-", "-", h->ok ? c : "-", "-", "-");
        if (!h->large_via.ok)
                return;
        /* next to the stdio figure of the same size, when "large" ran too */
        snprintf(what, sizeof what, "%.1f MiB tool result over HTTP (MB/s)", (double)h->large_via.bytes / MIB);
        snprintf(a, sizeof a, "%.0f MB/s", h->large_via.mb_per_s);
        snprintf(b, sizeof b, "%.0f MB/s", h->large_direct.mb_per_s);
        snprintf(c, sizeof c, "stdio %.0f", res->large_via.mb_per_s);
        row(what, a, b, res->large_via.ok ? c : "-", "-", "-");
        snprintf(a, sizeof a, "%.1f ms", h->large_via.daemon_cpu_ms);
        snprintf(c, sizeof c, "stdio %.1f ms", res->large_via.daemon_cpu_ms);
        row("  daemon CPU per such result", a, "", res->large_via.ok ? c : "-", "-", "-");
}

static void print_table(const struct options *o, const struct results *res) {
        row("measure", "via daemon", "direct", "figure", "target", "");
        if (o->parts & PART_LATENCY) {
                latency_rows(o, res, PLACED_FREE);
                if (o->pin_cpu >= 0)
                        latency_rows(o, res, PLACED_ONE_CPU);
        }
        if (o->parts & PART_LOAD)
                load_rows(o, res);
        if (o->parts & PART_IDLE)
                memory_rows(o, res);
        if (o->parts & PART_LARGE)
                large_rows(o, res);
        if (o->parts & PART_STARTUP)
                startup_rows(res);
        scale_case_rows(o, res);
        if (o->parts & PART_SERVERS)
                servers_rows(res);
        if (o->parts & PART_ACCESS)
                access_rows(res);
        if (o->parts & PART_LAUNCHER)
                launcher_rows(res);
        if (o->parts & PART_REMOTE)
                remote_rows(res);
        if (o->parts & PART_HTTP) {
                http_rows(o, res);
                peer_rows(o, res);
        }
        if (o->parts & PART_CATALOG)
                catalog_rows(o, res);
        if (o->parts & PART_INSTANCES)
                instances_rows(res);
        if (o->parts & PART_SDK)
                sdk_rows(&res->sdk);
        if (o->parts & PART_JWT)
                jwt_rows(o, res);
        if (o->parts & PART_MODERN)
                modern_rows(res);
        print_notes(o, res);
}

int main(int argc, char **argv) {
        struct options o = {
                .daemon = { .daemon = MCPVISORD_PATH, .server = BENCH_SERVER_PATH, .settings = BENCH_SETTINGS },
                .parts = PART_ALL, .calls = 20000, .seconds = 3, .levels = { 1, 16, 64 }, .n_levels = 3,
                .in_flight = 1, .idle = { 1000, 10000 }, .n_idle = 2, .large_bytes = 10 * 1024 * 1024,
                .large_runs = 5, .startup_runs = 20, .pin_cpu = 0, .cancels = 100000, .closes = 15000, .notifies = 50000,
                .cancel_settings = "\"maxInFlight\": 1000000",
                .servers = 1000, .access_rounds = 3,
                .catalog = { 10000, 100000 }, .n_catalog = 2, .catalog_runs = 5, .sdk_rounds = 3, .mrtr_rounds = 300,
        };
        struct results res = { 0 };
        int r;

        if (parse_options(argc, argv, &o) < 0)
                return 2;
        /* A peer that went away is an error to report, not a reason to die. */
        signal(SIGPIPE, SIG_IGN);
        qsort(o.idle, o.n_idle, sizeof o.idle[0], cmp_unsigned);
        /* What each row is about, measured or not. */
        for (unsigned k = 0; k < o.n_levels; k++)
                res.load[k] = (struct load){ .clients = o.levels[k], .in_flight = o.in_flight };
        for (unsigned k = 0; k < o.n_idle; k++)
                res.idle[k] = (struct idle){ .wanted = o.idle[k] };
        r = raise_nofile(most_descriptors(&o));
        if (r < 0) {
                fprintf(stderr, "mcpvisor-bench: cannot raise RLIMIT_NOFILE to %u: %s (run as root, or ulimit -Hn)\n",
                        most_descriptors(&o), strerror(-r));
                return 1;
        }
        print_machine(&o);
        fflush(stdout);
        if (o.parts & (PART_LATENCY | PART_LARGE))
                run_direct(&o, &res);
        if (o.parts & (PART_LATENCY | PART_LOAD | PART_LARGE))
                run_daemon(&o, &res, false);
        if (o.parts & PART_IDLE)
                run_daemon(&o, &res, true);
        if ((o.parts & PART_STARTUP) && (r = measure_startup(&o.daemon, o.startup_runs, &res.startup)) < 0)
                failed(&res, "start-up", r);
        if (o.parts & PART_CANCEL)
                run_scale(&o, &res, o.cancel_settings, "cancellations at scale", cancels, o.cancels, &res.cancels);
        if (o.parts & PART_CLOSE)
                run_scale(&o, &res, o.daemon.settings, "closing connections at scale", closes, o.closes, &res.closes);
        if (o.parts & PART_NOTIFY)
                run_scale(&o, &res, o.cancel_settings, "notifications at scale", notifies, o.notifies, &res.notifies);
        if (o.parts & PART_SERVERS)
                run_servers(&o, &res);
        if (o.parts & PART_ACCESS)
                run_access(&o, &res);
        if ((o.parts & PART_LAUNCHER) && (r = measure_launchers(&o.daemon, o.startup_runs, &res.launchers)) < 0)
                failed(&res, "launcher", r);
        if ((o.parts & PART_REMOTE) && (r = measure_remote(&o.daemon,
                                                          &(struct remote_params){ .calls = o.calls,
                                                                                   .large_bytes = o.large_bytes,
                                                                                   .large_runs = o.large_runs },
                                                          &res.remote)) < 0)
                failed(&res, "calls to a server reached by URL", r);
        if (o.parts & PART_HTTP) {
                run_http(&o, &res);
                run_peer_gateway(&o, &res);
        }
        if ((o.parts & PART_CATALOG) &&
            (r = measure_catalog(&o.daemon, o.catalog, o.n_catalog, o.catalog_runs, res.catalog)) < 0)
                failed(&res, "catalogue memory", r);
        if ((o.parts & PART_INSTANCES) &&
            (r = measure_instances(&o.daemon, o.startup_runs, o.quick ? 5 : 50, o.calls, &res.instances)) < 0)
                failed(&res, "instances", r);
        if (o.parts & PART_SDK)
                run_sdk(&o, &res);
        if (o.parts & PART_JWT)
                run_jwt(&o, &res);
        if (o.parts & PART_MODERN)
                run_modern(&o, &res);
        print_table(&o, &res);
        return res.failed ? 1 : 0;
}
