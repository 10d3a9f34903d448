/* mcpvisor-bench: what the daemon costs a tools/call, how much it carries, how much memory
 * it holds per client and how fast it starts. See docs/performance.md.
 *
 * One process, single-threaded: the clients are plain sockets driven with poll/epoll, the
 * daemon is the built mcpvisord with a NOTIFY_SOCKET of ours, and its one server is
 * mcpvisor-bench-server (bench-server.c). The same client code talks to that server directly
 * over pipes, which is the baseline the daemon's added latency is measured against. */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "proc-stats.h"

#define BENCH_SERVER_NAME "bench"
#define BENCH_TOOL_PREFIX BENCH_SERVER_NAME "__"
#define MAX_LEVELS 8

/* ---- time ---- */

int64_t now_ns(void);
/* Milliseconds left before deadline_ns, at least 0, for poll(). */
int ms_left(int64_t deadline_ns);

/* ---- the daemon, run for real (bench-daemon.c) ---- */

struct daemon_run {
        pid_t spawned;          /* what we started: the daemon, or a prefix such as valgrind */
        pid_t pid;              /* the daemon itself: the sender of READY=1 */
        char dir[64];
        char sock[128];
        char log[128];
        int notify_fd;
        bool ready;
        int64_t spawned_ns, ready_ns;
        char status[512];       /* the last STATUS= it sent */
        bool saw_unready;       /* a STATUS= said some servers were not ready */
};

struct daemon_opts {
        const char *daemon;     /* mcpvisord */
        const char *server;     /* the server it runs, as "bench" */
        const char *prefix;     /* command words run before the daemon, or NULL */
        bool keep;              /* keep the directory (config, log) */
        const char *settings;   /* members of the config's "mcpvisor" object, or NULL */
        unsigned servers;       /* servers besides the bench one, "s0000" on (bench-servers.c) */
        unsigned server_tools;  /* tools the bench server lists besides its own, "t0000" on */
        const char *url;        /* issue 17: the bench server is this URL instead of server */
        const char *credentials; /* $CREDENTIALS_DIRECTORY of the daemon, or NULL */
        const char *server_members; /* issue 14: more members of the bench server's entry, or NULL */
        const char *more_entries;   /* more members of mcpServers (JSON text), or NULL */
};

int daemon_start(struct daemon_run *d, const struct daemon_opts *o);
/* Reads the notifications that arrived; the daemon blocks in sd_notify() once ten are
 * queued, so whoever waits on the daemon for long must call this (or poll notify_fd). */
void daemon_pump(struct daemon_run *d);
int daemon_wait_ready(struct daemon_run *d, int timeout_ms);
/* Waits until the last STATUS= contains needle. */
int daemon_wait_status(struct daemon_run *d, const char *needle, int timeout_ms);
/* SIGTERM, then waits for the exit (SIGKILL after timeout_ms); its exit status, or -1. */
int daemon_stop(struct daemon_run *d, int timeout_ms);

/* ---- /proc (tests/common/proc-stats.h) ---- */

/* Sets the CPU affinity of each process (single-threaded ones: the daemon, the servers, us). */
int pin_processes(const pid_t *pids, unsigned n, const cpu_set_t *set);

/* ---- connections: a socket to the daemon or pipes to a server (bench-conn.c) ---- */

struct conn {
        int rfd, wfd;
        pid_t child;            /* a server we run directly, else 0 */
        char *buf;
        size_t len, cap, start; /* unread bytes are buf[start, len) */
        size_t scanned;         /* bytes after start known to hold no newline */
        uint64_t next_id;
        uint64_t answers, errors;
};

struct line {
        const char *p;
        size_t len;
};

int conn_unix(struct conn *c, const char *path);
/* Runs argv (argv[0] a path) with its stdin and stdout as our pipes, stderr to /dev/null. */
int conn_spawn_argv(struct conn *c, const char *const *argv);
/* conn_spawn_argv of a server, or of `mcpvisorctl -s SOCK connect` (ctl its path): the
 * stdio bridge agents use. */
int conn_spawn(struct conn *c, const char *server);
int conn_bridge(struct conn *c, const char *ctl, const char *sock);
void conn_close(struct conn *c);
int conn_set_nonblocking(struct conn *c);
int conn_write(struct conn *c, const char *p, size_t len);
/* One read(); bytes read, 0 at EOF, -errno (-EAGAIN when nothing is there). */
ssize_t conn_fill(struct conn *c);
/* The next complete line in the buffer, without its '\n'; valid until the next fill. */
bool conn_take_line(struct conn *c, struct line *ret);
/* Waits for a line, pumping d's notifications if d is not NULL. */
int conn_read_line(struct conn *c, struct daemon_run *d, int64_t deadline_ns, struct line *ret);
/* Sends initialize and notifications/initialized together. */
int conn_send_initialize(struct conn *c);
/* conn_send_initialize, then its answer. */
int conn_initialize(struct conn *c, struct daemon_run *d, int64_t deadline_ns);
/* Formats a tools/call of tool (echo: arguments {"text":...}) with the next id. */
int conn_send_call(struct conn *c, const char *tool, const char *arguments);
/* A ping, and its answer as the next line (-EPROTO if another came first), timed. */
int conn_ping(struct conn *c, struct daemon_run *d, int64_t timeout_ns, int64_t *elapsed_ns);
/* Two clients connected to d and initialized (both closed by the caller, whatever it returns). */
int conn_two(struct daemon_run *d, struct conn *a, struct conn *b);
/* An answer line is a result (not an error) for id. */
bool line_is_result(struct line l, uint64_t id);
/* Counts an answer: a result, or an error. */
void conn_count_answer(struct conn *c, struct line l);

/* ---- statistics (bench-stats.c) ---- */

int cmp_i64(const void *a, const void *b);
/* The p-th percentile (0 < p <= 100) of sorted values, nearest rank. */
int64_t percentile(const int64_t *sorted, size_t n, double p);

/* ---- the measurements (bench-measure.c, bench-memory.c) ---- */

struct latency {
        int64_t p50, p90, p99, max; /* ns */
        double calls_per_s;         /* one call in flight */
        bool ok;
};

struct load {
        unsigned clients, in_flight;
        double calls_per_s;
        double daemon_cpu_us;       /* per call */
        double daemon_user_us, daemon_sys_us; /* the same, apart */
        double daemon_util, server_util, bench_util; /* CPU seconds per second */
        uint64_t calls, errors;
        bool ok;
};

struct large {
        size_t bytes;
        double mb_per_s;            /* 10^6 bytes of payload per second, median run */
        double slowest_mb_per_s, fastest_mb_per_s; /* the spread of the measured runs */
        double daemon_cpu_ms;       /* per result */
        double daemon_user_ms, daemon_sys_ms; /* the same, apart */
        double bridge_cpu_ms;       /* per result, of mcpvisorctl connect when it carried them */
        bool ok;
};

struct idle {
        unsigned wanted, held;
        long rss_kib;               /* with them connected */
        double kib_per_client;      /* over the RSS before any client */
        bool ok;
};

struct startup {
        int64_t p50, max;           /* ns from posix_spawn to READY=1 */
        unsigned runs;
        bool ok;
};

struct cancels {
        unsigned n;                 /* calls held, unknown ids cancelled, calls cancelled */
        double seconds, daemon_cpu_s;
        int64_t p50, p99, max;      /* ns: the other client's calls meanwhile */
        uint64_t errors;            /* calls refused */
        bool ok;
};

int measure_latency(struct conn *c, const char *tool, unsigned calls, struct daemon_run *d, struct latency *ret);
/* Issue 17 (bench-remote.c): tools/call latency to an HTTP MCP server on the loopback, through
 * the daemon and directly, and the daemon's CPU per call; a large result (large_bytes, 0
 * none) both ways. */
struct remote_params {
        unsigned calls;
        size_t large_bytes;
        unsigned large_runs;
};
struct remote_figures {
        struct latency via, direct;
        struct latency sdk;         /* the TypeScript SDK's client, direct (bench/sdk-call.mjs) */
        const char *sdk_missing;    /* why that was not measured, or NULL */
        double daemon_cpu_us;
        struct large large_via, large_direct;
        bool ok;
};
int measure_remote(const struct daemon_opts *base, const struct remote_params *p, struct remote_figures *ret);

/* A keep-alive HTTP/1.1 connection to the front door on loopback (bench-http.c). */
struct hclient {
        int fd;
        char sid[64];           /* its session's Mcp-Session-Id, "" none */
        char buf[65536];
        size_t len;
        uint64_t next_id;
        int64_t sent_ns;
};
/* Connected (TCP_NODELAY), no request sent. */
int hclient_connect(struct hclient *h, unsigned port);
/* Connected, a session opened (initialize, notifications/initialized). */
int hclient_open(struct hclient *h, unsigned port, const char *token);
/* A POST of body to /mcp with the session's id if any; headers: more header lines, each
 * ending in CRLF, or "". */
int hclient_post(struct hclient *h, const char *token, const char *headers, const char *body);
/* Reads until a whole answer is in buf (blocking, until deadline); its status, its length
 * (head and body) in *ret_len. */
int hclient_answer(struct hclient *h, int64_t deadline, size_t *ret_len);
/* Drops the first n bytes of buf (an answer read). */
void hclient_consume(struct hclient *h, size_t n);

/* --only modern (bench-modern.c): the 2026-07-28 era beside the initialize era on one daemon,
 * one client a path, one request in flight. */
enum modern_path_kind {
        MODERN_SOCKET_LEGACY, /* tools/call echo, an initialized client on the socket */
        MODERN_SOCKET,        /* the same with _meta, no initialize */
        MODERN_HTTP_LEGACY,   /* a session's call over HTTP, keep-alive */
        MODERN_HTTP,          /* a call without a session over HTTP, keep-alive */
        MODERN_ASK_LEGACY,    /* ask: its elicitation/create answered by an initialized socket client */
        MODERN_MRTR_SOCKET,   /* ask by a modern socket client: input_required, the retry, the result */
        MODERN_MRTR_HTTP,     /* the same over HTTP */
        MODERN_DIRECT,        /* echo to the bench server itself over pipes: the baseline */
        MODERN_PATHS
};
struct modern_path {
        unsigned n;
        int64_t p50, p99;           /* ns */
        double daemon_cpu_us;       /* per call, or per round trip */
        bool ok;
};
struct modern_figures {
        struct modern_path path[MODERN_PATHS];
};
/* calls echo calls a path, rounds asks a path, each path after a tenth as many unmeasured;
 * server: the bench server, run directly for the baseline. */
int measure_modern(struct daemon_run *d, const char *server, unsigned port, const char *token, unsigned calls,
                   unsigned rounds, struct modern_figures *ret);

/* issue 18: clients on the HTTP front door (bench-http.c), one call in flight each. */
struct http_load {
        unsigned clients;
        double calls_per_s;
        double daemon_cpu_us;       /* per call */
        int64_t p50, p99;           /* ns, each call's round trip */
        bool ok;
};
int measure_http(struct daemon_run *d, unsigned port, const char *token, const char *tool, unsigned clients,
                 double seconds, struct http_load *ret);
/* Another gateway (supergateway, from the interop suite's npm packages) serving the bench
 * server over Streamable HTTP on port: d stands for it (its pid, a notify_fd that never
 * reads), for measure_http() (bench-peers.c). NULL, or why it cannot run here. */
const char *peer_gateway_start(struct daemon_run *d, unsigned port);
/* --only jwt (bench-jwt.c): an identity provider on loopback serving its OpenID metadata and
 * JWKS, and the RS256 access tokens it signs for http.oauth. */
struct jwt_issuer;
struct jwt_issuer *jwt_issuer_start(void);
const char *jwt_issuer_url(const struct jwt_issuer *is);
char *jwt_issuer_token(const struct jwt_issuer *is, const char *audience, const char *sub, unsigned ttl);
void jwt_issuer_stop(struct jwt_issuer *is);
void peer_gateway_stop(struct daemon_run *d);
/* mcp-hub 4.2.1 (bench/peers, ./scripts/install-test-peers --bench) serving the bench server
 * at http://127.0.0.1:port/mcp, its files in a directory of its own (d->dir, removed by
 * peer_gateway_stop()): as peer_gateway_start(). */
const char *hub_gateway_start(struct daemon_run *d, unsigned port);
/* issue 28: the TypeScript SDK's client (bench/sdk-load.mjs) with in_flight tools/call of
 * tool in flight at url (token: a bearer token, "" none) for seconds, the gateway's CPU
 * (process gateway alone) read around it (bench-sdk.c). */
struct sdk_load {
        char transport[32];         /* "streamable-http", or "http+sse" where that is all there is */
        double calls_per_s;
        double gateway_cpu_us;      /* per call */
        double client_cpu_us;       /* per call: the node process of the SDK's client */
        bool ok;
};
/* NULL, or why the SDK's client cannot run here. */
const char *sdk_missing(void);
int measure_sdk(pid_t gateway, const char *url, const char *tool, const char *token, unsigned in_flight,
                double seconds, struct sdk_load *ret);
/* A bytes-long tools/call result over HTTP (one keep-alive connection), as measure_large(). */
int measure_http_large(struct daemon_run *d, unsigned port, const char *token, size_t bytes, unsigned runs,
                       struct large *ret);
/* n HTTP sessions held, each with its keep-alive connection and its GET stream open: the
 * daemon's RSS per session over rss_before. The sessions are left to their idle expiry. */
int measure_http_sessions(struct daemon_run *d, unsigned port, const char *token, unsigned n, long rss_before,
                          struct idle *ret);
int measure_load(struct daemon_run *d, unsigned clients, unsigned in_flight, double seconds, struct load *ret);

/* issue 25: n clients without a token, each sending a body of bytes at once: how many were
 * answered 401, and the daemon's RSS before, at most and after (bench-http.c). */
struct unauth_bodies {
        unsigned n, refused;
        size_t bytes;
        long rss_before, rss_peak, rss_after; /* KiB */
        bool ok;
};
int measure_http_unauth_bodies(struct daemon_run *d, unsigned port, unsigned n, size_t bytes, struct unauth_bodies *ret);
/* issue 25: n connections that never finish their heads, held while a Unix socket client
 * pings and an authorized HTTP client opens a session (bench-http.c). */
struct slow_heads {
        unsigned n, nofile, pings;
        long rss_kib;
        int fds;                    /* the daemon's, meanwhile */
        int64_t ping_p50, ping_max; /* ns, the Unix socket client's */
        int64_t session_ns;         /* the authorized HTTP client's initialize and initialized */
        bool ok;
};
int measure_http_slow_heads(struct daemon_run *d, unsigned port, const char *token, unsigned n, struct slow_heads *ret);
int measure_large(struct conn *c, const char *tool, size_t bytes, unsigned runs, struct daemon_run *d,
                  struct large *ret);
/* Connects clients (each initialized, then idle) up to each of the counts in turn. */
int measure_idle(struct daemon_run *d, const unsigned *counts, unsigned n_counts, long rss_before, struct idle *ret);
int measure_startup(const struct daemon_opts *o, unsigned runs, struct startup *ret);

/* Start to ready of one server (the daemon running, the server stopped, then started)
 * under the exec launcher and under the systemd one (bench-launcher.c). */
enum { LAUNCHER_SANDBOX_NONE, LAUNCHER_SANDBOX_BASIC, LAUNCHER_SANDBOX_STRICT, N_LAUNCHER_SANDBOXES };
struct launcher_figures {
        int64_t exec_p50, exec_max;                /* ns */
        int64_t systemd_p50[N_LAUNCHER_SANDBOXES]; /* ns, by the unit's sandbox preset */
        int64_t systemd_max[N_LAUNCHER_SANDBOXES];
        unsigned runs;
        const char *unavailable;    /* why the systemd launcher cannot be measured here, or NULL */
        bool ok;
};
/* NULL, or why a daemon of the bench's cannot use the systemd launcher here. */
const char *launcher_unavailable(void);
int measure_launchers(const struct daemon_opts *o, unsigned runs, struct launcher_figures *ret);
/* One request on the control socket naming the bench server ("start", "stop", "restart"). */
int bench_control(struct daemon_run *d, const char *method, uint64_t id);
/* n calls held by one client, n cancellations of unknown ids, n of its calls; another
 * client's latency meanwhile (bench-cancel.c). */
int measure_cancels(struct daemon_run *d, unsigned n, struct cancels *ret);

/* Connects and initializes conns[from, to), in batches; how many were initialized. */
unsigned connect_idle(struct daemon_run *d, struct conn *conns, unsigned from, unsigned to);

struct closes {
        unsigned n;                 /* initialized connections closed at once */
        double freed_s;             /* from the first close to the daemon's status counting them gone */
        int64_t p50, p99, max;      /* ns: the other client's pings meanwhile */
        unsigned pings;
        bool ok;
};

/* n initialized clients close at once; another client's pings until the daemon has freed
 * them (bench-close.c). */
int measure_closes(struct daemon_run *d, unsigned n, struct closes *ret);

struct notifies {
        unsigned n;                 /* calls held, then notifications the server sends */
        double seconds, daemon_cpu_s; /* from asking for the notifications to the last one */
        int64_t p50, p99, max;      /* ns: the other client's pings meanwhile */
        uint64_t delivered, refused;
        bool ok;
};

/* n calls held by one client, then n notifications from the server, which go to that
 * client; another client's pings meanwhile (bench-notify.c). */
int measure_notifies(struct daemon_run *d, unsigned n, struct notifies *ret);
/* Many servers: start, reload one, reload all, stop (bench-servers.c). */
#define PHASE_SAMPLES 20000
struct phase_figures {
        double seconds;
        int64_t samples[PHASE_SAMPLES]; /* ns: the other client's pings meanwhile */
        unsigned n_samples;
        int64_t p99, max;
        bool ok;
};

struct servers_figures {
        unsigned n;
        double to_ready_s;          /* start to READY=1 */
        struct phase_figures start, reload_one, reload_all;
        double stop_s;
        bool stop_ok;
};

/* Writes n more entries of mcpServers (after another), the first changed ones with
 * BENCH_GEN=gen in their environment, so that a reload sees them changed. */
void servers_config(FILE *f, const char *server, unsigned n, unsigned changed, unsigned gen);
int measure_servers(const struct daemon_opts *o, struct servers_figures *ret);

/* Raises RLIMIT_NOFILE so that n descriptors fit, the hard limit too when we may. */
int raise_nofile(unsigned n);

/* Access rules (bench-access.c): the daemon's settings with rules rules, all but the last
 * not matching us (malloc'd), and how many of the bench server's tools (its own
 * BENCH_SERVER_TOOLS and its extra ones, "t0000" on) tools/list shows, page after page. */
#define BENCH_SERVER_TOOLS 5
char *access_settings(unsigned rules);
int count_listed_tools(struct daemon_run *d, unsigned *ret);

/* Catalogue memory (issue 14, bench-catalog.c): the demo server offering tools tools. */
struct catalog_level {
        unsigned tools, listed;
        long rss_ready_kib;         /* once ready, and listed */
        long rss_restarted_kib;     /* after a restart of the server, and listed again */
        int64_t list_p50_ns;        /* a client listing every tool, page after page */
        bool ok;
};
/* A daemon for each of extra[0, n) (tools besides the demo server's ten), lists timed runs times. */
int measure_catalog(const struct daemon_opts *o, const unsigned *extra, unsigned n, unsigned runs,
                    struct catalog_level *ret);

/* Instances (bench-instances.c): a server of its own per client. */
struct instances_figures {
        unsigned runs, held;
        int64_t first_p50[2], first_max[2]; /* ns, connect to the first call's answer: [0] no spare, [1] a spare */
        unsigned node_runs;                 /* the same with server-memory (node); 0: not installed */
        int64_t node_p50[2], node_max[2];
        double kib_per_instance;            /* the daemon's VmRSS per instance running */
        long rss_before_kib, rss_after_kib;
        struct latency shared, instance;    /* the same client's calls, the same daemon */
        double cpu_us_shared, cpu_us_instance; /* daemon CPU per call */
        bool ok;
};
/* runs new clients' first calls without a spare, then with one; held clients each with its
 * instance (memory); calls calls through the shared server and through an instance. */
int measure_instances(const struct daemon_opts *o, unsigned runs, unsigned held, unsigned calls,
                      struct instances_figures *ret);
