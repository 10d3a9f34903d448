/* The 2026-07-28 era beside the initialize era (--only modern): one daemon with the Unix
 * socket and the HTTP front door, its one server the bench server (a legacy one: it answers
 * server/discover with -32601). Each path is one client with one request in flight, timed
 * from the request's write to its answer, the daemon's CPU read from /proc/PID/schedstat
 * (nanoseconds, where /proc/PID/stat counts 10 ms ticks) around the measured requests; the
 * same echo to the bench server over pipes, without the daemon, is the baseline:
 *   - a tools/call of echo by an initialized client, and by a modern one (each request with
 *     its _meta, no initialize), on the socket and over HTTP (a session's keep-alive
 *     connection; a keep-alive connection without a session, Mcp-Method and Mcp-Name set);
 *   - a call of the bench server's ask, whose elicitation/create goes to an initialized
 *     client on the socket and is answered there (the legacy way), and the same call by a
 *     modern client on the socket and over HTTP: an input_required result, the retry with
 *     inputResponses and requestState, the result (a multi round-trip request). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define MODERN_TIMEOUT_NS (10 * (int64_t)1000000000)
#define MODERN_META                                                                                                    \
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                        \
        "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}},"                                         \
        "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"mcpvisor-bench\",\"version\":\"1\"}}"
#define MODERN_HEADERS(tool) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: " tool "\r\n"
#define INITIALIZE_ELICITING                                                                                           \
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","        \
        "\"capabilities\":{\"elicitation\":{}},\"clientInfo\":{\"name\":\"mcpvisor-bench\",\"version\":\"1\"}}}\n"      \
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"

/* One client of one path: on the socket (c) or over HTTP (h). */
struct mclient {
        struct daemon_run *d;
        struct conn c;
        struct hclient *h;
        const char *token;
        bool modern;
        bool direct;            /* the bench server itself, over pipes */
        char *answer;           /* the last answer's text (HTTP: head and body) */
        uint64_t next_id;
};

/* The daemon's CPU time so far, in ns (its main thread: the daemon is single-threaded). */
static int64_t daemon_cpu_ns(pid_t pid) {
        char path[64];
        long long ns = -1;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
        if (!(f = fopen(path, "re")))
                return -1;
        if (fscanf(f, "%lld", &ns) != 1)
                ns = -1;
        fclose(f);
        return ns;
}

/* A tools/call of tool with id; more: members of params after arguments ("" none). */
static char *call_text(const struct mclient *m, uint64_t id, const char *tool, const char *more) {
        char *text;

        if (asprintf(&text, "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                     "\"arguments\":{\"text\":\"hello\"}%s%s%s%s}}",
                     id, tool, *more ? "," : "", more, m->modern ? "," : "", m->modern ? MODERN_META : "") < 0)
                return NULL;
        return text;
}

/* An elicitation/create from the daemon in line l answered: accept. */
static int answer_elicitation(struct mclient *m, struct line l) {
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
        char reply[160];
        const char *id = l.p + sizeof head - 1, *end;

        if (l.len < sizeof head || memcmp(l.p, head, sizeof head - 1) != 0 || !(end = memchr(id, ',', l.len - (sizeof head - 1))))
                return -EPROTO;
        int n = snprintf(reply, sizeof reply, "%s%.*s,\"result\":{\"action\":\"accept\",\"content\":{\"ok\":true}}}\n", head,
                         (int)(end - id), id);
        return n < (int)sizeof reply ? conn_write(&m->c, reply, (size_t)n) : -E2BIG;
}

/* Sends body (headers: the HTTP ones it needs, "" none) and waits for the answer to id,
 * answering the daemon's elicitation/create meanwhile (the socket's legacy client); the
 * answer's text in m->answer. 0: a result; -EPROTO: anything else. */
static int exchange(struct mclient *m, const char *headers, const char *body, uint64_t id) {
        int64_t deadline = now_ns() + MODERN_TIMEOUT_NS;
        struct line l;
        size_t len;
        int r;

        free(m->answer);
        m->answer = NULL;
        /* each request without a session is a client: two STATUS= each, and the daemon
         * blocks in sd_notify() once ten wait */
        daemon_pump(m->d);
        if (m->h) {
                if ((r = hclient_post(m->h, m->token, headers, body)) < 0 || (r = hclient_answer(m->h, deadline, &len)) < 0)
                        return r;
                m->answer = strndup(m->h->buf, len);
                hclient_consume(m->h, len);
                return !m->answer ? -ENOMEM : r == 200 && strstr(m->answer, "\"result\"") ? 0 : -EPROTO;
        }
        if ((r = conn_write(&m->c, body, strlen(body))) < 0 || (r = conn_write(&m->c, "\n", 1)) < 0)
                return r;
        for (;;) {
                if ((r = conn_read_line(&m->c, m->direct ? NULL : m->d, deadline, &l)) < 0)
                        return r;
                /* a modern client is sent no requests (its answers may name the method) */
                if (!m->modern && memmem(l.p, l.len, "\"method\":\"elicitation/create\"", 29)) {
                        if ((r = answer_elicitation(m, l)) < 0)
                                return r;
                        continue;
                }
                m->answer = strndup(l.p, l.len);
                return !m->answer ? -ENOMEM : line_is_result(l, id) ? 0 : -EPROTO;
        }
}

/* The string value of member name in text (no escapes in it: ours are base64url and keys),
 * or the first key of the object it holds (key true); malloc'd, or NULL. */
static char *scan(const char *text, const char *name, bool key) {
        char quoted[64];
        const char *p, *end;

        snprintf(quoted, sizeof quoted, "\"%s\"", name);
        if (!(p = strstr(text, quoted)))
                return NULL;
        p += strlen(quoted);
        p += strspn(p, " :");
        if (key && *p++ != '{')
                return NULL;
        p += strspn(p, " ");
        if (*p++ != '"' || !(end = strchr(p, '"')))
                return NULL;
        return strndup(p, (size_t)(end - p));
}

static int echo(struct mclient *m) {
        uint64_t id = m->next_id++;
        char *body = call_text(m, id, m->direct ? "echo" : BENCH_TOOL_PREFIX "echo", "");
        int r = body ? exchange(m, m->modern ? MODERN_HEADERS(BENCH_TOOL_PREFIX "echo") : "", body, id) : -ENOMEM;

        free(body);
        return r;
}

/* ask: for an initialized client, one call (its elicitation answered on the way); for a
 * modern one, the call, its input_required, and the retry with the answer. */
static int ask(struct mclient *m) {
        const char *headers = m->modern ? MODERN_HEADERS(BENCH_TOOL_PREFIX "ask") : "";
        uint64_t id = m->next_id++;
        char *body = call_text(m, id, BENCH_TOOL_PREFIX "ask", ""), *key = NULL, *state = NULL, *more = NULL;
        int r = body ? exchange(m, headers, body, id) : -ENOMEM;

        if (r < 0 || !m->modern)
                goto out;
        if (!strstr(m->answer, "\"input_required\"") || !(key = scan(m->answer, "inputRequests", true)) ||
            !(state = scan(m->answer, "requestState", false))) {
                r = -EPROTO;
                goto out;
        }
        free(body);
        id = m->next_id++;
        if (asprintf(&more, "\"inputResponses\":{\"%s\":{\"action\":\"accept\",\"content\":{\"ok\":true}}},"
                     "\"requestState\":\"%s\"", key, state) < 0) {
                more = NULL;
                body = NULL;
                r = -ENOMEM;
                goto out;
        }
        body = call_text(m, id, BENCH_TOOL_PREFIX "ask", more);
        r = body ? exchange(m, headers, body, id) : -ENOMEM;
        if (r >= 0 && (strstr(m->answer, "\"input_required\"") || !strstr(m->answer, "accept")))
                r = -EPROTO;
out:
        free(body);
        free(key);
        free(state);
        free(more);
        return r;
}

/* A path's samples so far, and the daemon's CPU over them. */
struct tally {
        int64_t *samples;
        unsigned n;
        int64_t cpu_ns;
};

/* n operations of op on m, timed into t when record, the daemon's CPU around them. */
static int run_ops(struct mclient *m, int (*op)(struct mclient *m), unsigned n, struct tally *t, bool record) {
        int64_t cpu0 = daemon_cpu_ns(m->d->pid), cpu1;
        int r = 0;

        for (unsigned i = 0; i < n && r >= 0; i++) {
                int64_t t0 = now_ns();
                r = op(m);
                if (record)
                        t->samples[t->n++] = now_ns() - t0;
        }
        cpu1 = daemon_cpu_ns(m->d->pid);
        if (record && cpu0 >= 0 && cpu1 >= cpu0)
                t->cpu_ns += cpu1 - cpu0;
        daemon_pump(m->d);
        return r;
}

static void tally_figures(struct tally *t, struct modern_path *ret) {
        *ret = (struct modern_path){ .n = t->n };
        if (t->n == 0)
                return;
        qsort(t->samples, t->n, sizeof *t->samples, cmp_i64);
        ret->p50 = percentile(t->samples, t->n, 50);
        ret->p99 = percentile(t->samples, t->n, 99);
        ret->daemon_cpu_us = (double)t->cpu_ns / 1000.0 / t->n;
        ret->ok = true;
}

/* A client of the path's kind: HTTP or the socket, initialized (eliciting: with the
 * elicitation capability) or modern. */
static int mclient_open(struct mclient *m, struct daemon_run *d, unsigned port, const char *token, bool http, bool modern,
                        const char *server) {
        int64_t deadline = now_ns() + MODERN_TIMEOUT_NS;
        struct line l;
        int r;

        *m = (struct mclient){ .d = d, .token = token, .modern = modern, .direct = server != NULL, .next_id = 1,
                               .c = { .rfd = -1, .wfd = -1 } };
        if (server)
                return (r = conn_spawn(&m->c, server)) < 0 ? r : conn_initialize(&m->c, NULL, deadline);
        if (http) {
                if (!(m->h = calloc(1, sizeof *m->h)))
                        return -ENOMEM;
                return modern ? hclient_connect(m->h, port) : hclient_open(m->h, port, token);
        }
        if ((r = conn_unix(&m->c, d->sock)) < 0 || (r = conn_set_nonblocking(&m->c)) < 0 || modern)
                return r;
        if ((r = conn_write(&m->c, INITIALIZE_ELICITING, sizeof INITIALIZE_ELICITING - 1)) < 0 ||
            (r = conn_read_line(&m->c, d, deadline, &l)) < 0)
                return r;
        return line_is_result(l, 0) ? 0 : -EPROTO;
}

static void mclient_close(struct mclient *m) {
        if (m->h) {
                if (m->h->fd >= 0)
                        close(m->h->fd);
                free(m->h);
        } else {
                conn_close(&m->c);
        }
        free(m->answer);
}

/* Every path's client open at once, and the paths measured in turn, a tenth of each at a
 * time, so that a change of the machine's load (it is shared) falls on all of them alike. */
#define MODERN_CHUNKS 10

int measure_modern(struct daemon_run *d, const char *server, unsigned port, const char *token, unsigned calls,
                   unsigned rounds, struct modern_figures *ret) {
        static const struct {
                bool http, modern, ask, direct;
        } paths[MODERN_PATHS] = {
                [MODERN_DIRECT] = { false, false, false, true },
                [MODERN_SOCKET_LEGACY] = { false, false, false }, [MODERN_SOCKET] = { false, true, false },
                [MODERN_HTTP_LEGACY] = { true, false, false },    [MODERN_HTTP] = { true, true, false },
                [MODERN_ASK_LEGACY] = { false, false, true },     [MODERN_MRTR_SOCKET] = { false, true, true },
                [MODERN_MRTR_HTTP] = { true, true, true },
        };
        struct mclient m[MODERN_PATHS] = { 0 };
        struct tally t[MODERN_PATHS] = { 0 };
        unsigned k = 0, n[MODERN_PATHS];
        int r = 0;

        *ret = (struct modern_figures){ 0 };
        for (k = 0; k < MODERN_PATHS && r >= 0; k++) {
                n[k] = (paths[k].ask ? rounds : calls) / MODERN_CHUNKS;
                n[k] = n[k] ? n[k] : 1;
                if (!(t[k].samples = calloc(n[k] * MODERN_CHUNKS, sizeof *t[k].samples)))
                        r = -ENOMEM;
                if (r >= 0)
                        r = mclient_open(&m[k], d, port, token, paths[k].http, paths[k].modern,
                                         paths[k].direct ? server : NULL);
                if (r >= 0) /* a tenth unmeasured, at least 5 */
                        r = run_ops(&m[k], paths[k].ask ? ask : echo, n[k] < 5 ? 5 : n[k], &t[k], false);
        }
        for (unsigned c = 0; c < MODERN_CHUNKS && r >= 0; c++)
                for (k = 0; k < MODERN_PATHS && r >= 0; k++)
                        r = run_ops(&m[k], paths[k].ask ? ask : echo, n[k], &t[k], true);
        if (r < 0 && k > 0)
                fprintf(stderr, "mcpvisor-bench: modern path %u: %s; last answer: %.300s\n", k - 1, strerror(-r),
                        m[k - 1].answer ? m[k - 1].answer : "(none)");
        for (k = 0; k < MODERN_PATHS; k++) {
                if (r >= 0)
                        tally_figures(&t[k], &ret->path[k]);
                if (m[k].d)
                        mclient_close(&m[k]);
                free(t[k].samples);
        }
        return r;
}
