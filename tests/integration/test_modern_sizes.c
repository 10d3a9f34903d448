/* The modern era (MCP 2026-07-28) at real sizes, not timed: a thousand requests without a
 * session over HTTP, each its own one-request client, 200 in flight at once (every one
 * answered, the daemon's descriptors back where they were, its memory bounded); a
 * multi-megabyte elicitation answer carried through a multi round-trip request, on the
 * socket and over HTTP; 200 rounds parked by one principal, past the 32 it may hold a clear
 * refusal, and what was parked released. */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "proc-stats.h"
#include "servers.h"

static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

#define TOKEN "it-token-0123456789abcdef0123456789"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define MODERN_HEADERS(method, name) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " method "\r\nMcp-Name: " name "\r\n"
#define META(caps)                                                                                                     \
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                        \
        "\"io.modelcontextprotocol/clientCapabilities\":" caps ","                                                     \
        "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"sizes-it\",\"version\":\"1\"}}"
#define ELICIT "\"method\":\"elicitation/create\",\"params\":{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"," \
               "\"properties\":{\"name\":{\"type\":\"string\"}}}}"

#define REQUESTS 1000
#define IN_FLIGHT 200
#define BIG_ANSWER (3u * 1024 * 1024)
#define ROUNDS 200
#define ROUNDS_HELD 32 /* MRTR_ROUNDS_PER_PRINCIPAL */

static struct h_daemon D;
static char creds[64];
static unsigned port;

static void setup(void) {
        servers_reset(&D);
        creds[0] = '\0';
        port = 0;
}

static void teardown(void) {
        servers_teardown();
        if (creds[0])
                h_remove_tree(creds);
}

TestSuite(modern_sizes, .init = setup, .fini = teardown, .timeout = 180);

/* The demo server behind a daemon listening on HTTP too, with settings (members, may be ""). */
static void start_http(const char *settings) {
        const char *env[2];
        FILE *f;

        snprintf(creds, sizeof creds, "/tmp/mcpvisor-sizes-XXXXXX");
        cr_assert_not_null(mkdtemp(creds));
        cr_assert_not_null(f = fopen(sf("%s/ci-token", creds), "w"));
        fputs(TOKEN "\n", f);
        fclose(f);
        port = ht_free_port();
        env[0] = sf("CREDENTIALS_DIRECTORY=%s", creds);
        env[1] = NULL;
        add_demo("demo", "\"clientCapabilities\":[\"elicitation\",\"sampling\",\"roots\"]", "");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":[{\"token\":{\"credential\":\"ci-token\"},"
                        "\"user\":%u}]}%s%s",
                        port, (unsigned)getuid(), settings[0] ? "," : "", settings));
        start(env);
        wait_all_ready(1);
        cr_assert(ht_wait_listening(port, H_TIMEOUT_MS));
}

/* ---- a thousand one-request clients ---- */

struct req {
        int fd;
        char buf[4096];
        size_t len;
        bool done;
};

static void send_echo(struct req *q, unsigned i) {
        char body[512], head[1024];
        int n = snprintf(body, sizeof body,
                         "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                         "\"arguments\":{\"text\":\"r%u\"}," META("{}") "}}",
                         i, i);
        int h = snprintf(head, sizeof head,
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" AUTH JSON_HEADERS MODERN_HEADERS("tools/call", "demo__echo")
                         "Content-Length: %d\r\n\r\n%s",
                         n, body);

        q->fd = ht_connect(port, NULL);
        cr_assert_geq(q->fd, 0, "connection %u: %s", i, strerror(errno));
        cr_assert_eq(write(q->fd, head, (size_t)h), h, "request %u", i);
}

/* Reads what came on q; true once its whole answer is there (checked: 200, its id, its text). */
static bool read_echo(struct req *q, unsigned i) {
        ssize_t n = read(q->fd, q->buf + q->len, sizeof q->buf - 1 - q->len);
        const char *body;

        cr_assert_gt(n, 0, "request %u: connection closed or failed before its answer (%zu bytes: %.*s)", i, q->len,
                     (int)q->len, q->buf);
        q->len += (size_t)n;
        q->buf[q->len] = '\0';
        if (!(body = strstr(q->buf, "\r\n\r\n")) || !strstr(body, "}\n"))
                return false;
        cr_assert(strncmp(q->buf, "HTTP/1.1 200", 12) == 0, "request %u: %s", i, q->buf);
        cr_assert(strstr(body, sf("\"id\":%u,", i)) && strstr(body, sf("\"text\":\"r%u\"", i)), "request %u: %s", i, q->buf);
        return true;
}

Test(modern_sizes, a_thousand_one_request_clients) {
        struct rlimit rl = { 4096, 4096 };
        struct req *q = calloc(REQUESTS, sizeof *q);
        struct pollfd *p = calloc(REQUESTS, sizeof *p);
        unsigned sent = 0, answered = 0, open = 0;
        int fds_before, fds_after = -1;
        long rss_before, rss_peak = 0, rss_after;

        cr_assert(setrlimit(RLIMIT_NOFILE, &rl) == 0 || getrlimit(RLIMIT_NOFILE, &rl) == 0);
        start_http("\"maxClientsPerUser\":0,\"maxHttpSessions\":1000");
        /* one first, so that what a first request makes once (the curl-less front door's
         * buffers, the log's) is in the baseline */
        send_echo(&q[0], 0);
        while (!read_echo(&q[0], 0))
                ;
        close(q[0].fd);
        q[0] = (struct req){ .done = true };
        sent = answered = 1;
        fds_before = proc_fd_count(D.pid);
        rss_before = proc_rss_kib(D.pid);
        cr_assert_gt(fds_before, 0);
        while (answered < REQUESTS) {
                unsigned n = 0;
                while (sent < REQUESTS && open < IN_FLIGHT) {
                        send_echo(&q[sent], sent);
                        sent++;
                        open++;
                }
                for (unsigned i = 0; i < sent; i++)
                        if (!q[i].done)
                                p[n++] = (struct pollfd){ .fd = q[i].fd, .events = POLLIN };
                h_notify_drain(&D);
                cr_assert_gt(poll(p, n, H_TIMEOUT_MS), 0, "%u answers of %u sent, then nothing", answered, sent);
                for (unsigned k = 0, i = 0; k < n; k++) {
                        while (q[i].done)
                                i++;
                        if (p[k].revents && read_echo(&q[i], i)) {
                                close(q[i].fd);
                                q[i].done = true;
                                answered++;
                                open--;
                        }
                        i++;
                }
                long rss = proc_rss_kib(D.pid);
                if (rss > rss_peak)
                        rss_peak = rss;
        }
        /* every one-request client gone: the daemon's descriptors as before */
        for (long long until = h_now_ms() + H_TIMEOUT_MS; h_now_ms() < until;) {
                h_notify_drain(&D);
                if ((fds_after = proc_fd_count(D.pid)) <= fds_before)
                        break;
                usleep(10000);
        }
        rss_after = proc_rss_kib(D.pid);
        cr_log_info("%u requests, %u in flight: descriptors %d before, %d after; VmRSS %ld KiB before, %ld at most, "
                    "%ld after", REQUESTS, IN_FLIGHT, fds_before, fds_after, rss_before, rss_peak, rss_after);
        cr_assert_leq(fds_after, fds_before, "the daemon holds %d descriptors after, %d before", fds_after, fds_before);
        /* at most IN_FLIGHT clients at once: well under 20 KiB each beyond the baseline (not
         * under ASan, whose quarantine holds what is freed: LeakSanitizer checks at exit) */
#ifndef __SANITIZE_ADDRESS__
        cr_expect_lt(rss_peak - rss_before, 20 * IN_FLIGHT, "VmRSS %ld KiB before, %ld at most, %ld after", rss_before,
                     rss_peak, rss_after);
#endif
        cr_expect_eq(h_log_count(&D, "maxHttpSessions reached"), 0);
        free(q);
        free(p);
}

/* The last STATUS= text received (up to the datagram's end), or "" before any. */
static const char *last_status(char *buf, size_t size) {
        const char *at = NULL, *end;

        h_notify_drain(&D);
        for (const char *p = D.notices; (p = strstr(p, "STATUS=")); p += 7)
                at = p + 7;
        if (!at)
                return "";
        end = strchr(at, '|');
        snprintf(buf, size, "%.*s", (int)(end ? end - at : (long)strlen(at)), at);
        return buf;
}

/* Waits until the last STATUS= received says want. */
static void expect_last_status(const char *want) {
        char status[256];

        for (long long until = h_now_ms() + H_TIMEOUT_MS; strcmp(last_status(status, sizeof status), want) != 0;) {
                cr_assert_lt(h_now_ms(), until, "STATUS= says \"%s\", not \"%s\"", status, want);
                usleep(10000);
        }
}

/* Each request without a session is a client that comes and goes: STATUS= follows the count
 * a few times a second, not twice a request, and still says where it ends up (a socket
 * client held meanwhile, then closed). */
Test(modern_sizes, status_few_for_a_thousand_one_request_clients) {
        struct h_conn *held;
        struct req q;
        unsigned before, lines;
        long long start, took;

        start_http("\"maxClientsPerUser\":0");
        expect_last_status("1/1 servers ready; 0 clients connected");
        before = h_notify_count(&D, "STATUS=");
        start = h_now_ms();
        held = h_connect(D.sock, H_TIMEOUT_MS);
        for (unsigned i = 0; i < REQUESTS; i++) {
                q = (struct req){ 0 };
                send_echo(&q, i);
                while (!read_echo(&q, i))
                        ;
                close(q.fd);
                h_notify_drain(&D);
        }
        expect_last_status("1/1 servers ready; 1 client connected");
        h_close(held);
        expect_last_status("1/1 servers ready; 0 clients connected");
        took = h_now_ms() - start;
        lines = h_notify_count(&D, "STATUS=") - before;
        cr_log_info("%u one-request clients and one held, in %lld ms: %u STATUS= lines", REQUESTS, took, lines);
        /* one every 200 ms (NOTIFY_STATUS_DELAY_USEC) at the most, and the last one after */
        cr_assert_leq(lines, (unsigned)(took / 200) + 2, "%u STATUS= lines for %u requests in %lld ms", lines,
                      REQUESTS, took);
}

/* ---- a large answer through a round ---- */

/* A modern tools/call of demo__ask (the demo asks elicitation/create the legacy way), id,
 * more params members after (may be ""). */
static char *ask_line(int id, const char *more) {
        char *line;

        cr_assert(asprintf(&line,
                           "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__ask\","
                           "\"arguments\":{" ELICIT "}%s%s," META("{\"elicitation\":{}}") "}}",
                           id, more[0] ? "," : "", more) > 0);
        return line;
}

/* The retry's members: the one key answered with a name of n bytes, the state. */
static char *big_retry(json_object *r, size_t n) {
        json_object *requests = h_get(r, "result.inputRequests");
        const char *key = NULL, *state = h_str(r, "result.requestState");
        char *name = malloc(n + 1), *more;

        cr_assert_str_eq(h_str(r, "result.resultType") ?: "(none)", "input_required", "%.500s", h_json_text(r));
        json_object_object_foreach(requests, k, v) {
                (void)v;
                key = k;
        }
        cr_assert(key && state);
        memset(name, 'n', n);
        name[n] = '\0';
        cr_assert(asprintf(&more, "\"inputResponses\":{\"%s\":{\"action\":\"accept\",\"content\":{\"name\":\"%s\"}}},"
                                  "\"requestState\":\"%s\"",
                           key, name, state) > 0);
        free(name);
        return more;
}

/* The call's result holds the whole answer: the demo returns what the client answered. */
static void expect_big_result(const char *text, size_t n) {
        const char *name = strstr(text, "\\\"name\\\":\\\"nnnn");

        cr_assert_not_null(name, "no answer in the result: %.300s", text);
        cr_assert_geq(strspn(name + 11, "n"), n, "the answer came back cut: %zu of %zu", strspn(name + 11, "n"), n);
}

Test(modern_sizes, a_multi_megabyte_answer_through_a_round) {
        struct h_conn *m;
        json_object *r;
        struct ht_answer a;

        start_http("");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        _cleanup_free_ char *first = ask_line(1, "");
        r = h_call(m, sf("%s\n", first));
        _cleanup_free_ char *more = big_retry(r, BIG_ANSWER);
        json_object_put(r);
        _cleanup_free_ char *retry = ask_line(2, more);
        h_send(m, retry);
        h_send(m, "\n");
        _cleanup_free_ char *line = h_recv_line_draining(&D, m, 30000);
        cr_assert_not_null(line, "no answer to the retry");
        cr_assert(strstr(line, "\"id\":2,"), "%.300s", line);
        expect_big_result(line, BIG_ANSWER);
        h_close(m);

        /* over HTTP: two POSTs, the second of 3 MiB */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("tools/call", "demo__ask"), first, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        r = json_tokener_parse(strstr(a.body, "{"));
        ht_answer_done(&a);
        _cleanup_free_ char *more2 = big_retry(r, BIG_ANSWER);
        json_object_put(r);
        _cleanup_free_ char *retry2 = ask_line(3, more2);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("tools/call", "demo__ask"), retry2, &a);
        cr_assert_eq(a.status, 200, "%d %.300s", a.status, a.body);
        cr_assert(strstr(a.body, "\"id\":3,"), "%.300s", a.body);
        expect_big_result(a.body, BIG_ANSWER);
        ht_answer_done(&a);
}

/* ---- rounds parked by one principal ---- */

/* One client parks ROUNDS rounds, none retried: the first ROUNDS_HELD are input_required,
 * each later one a clear refusal (the call's own result: the server's request refused),
 * and once mrtrTimeout has ended them, a new round is parked again. */
Test(modern_sizes, two_hundred_rounds_parked_by_one_principal) {
        struct h_conn *m;
        unsigned parked = 0, refused = 0;
        json_object *r;

        start_http("\"mrtrTimeout\":3");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        for (int i = 1; i <= ROUNDS; i++) {
                _cleanup_free_ char *line = ask_line(i, "");
                r = h_call(m, sf("%s\n", line));
                if (strcmp(h_str(r, "result.resultType") ?: "", "input_required") == 0) {
                        parked++;
                } else {
                        const char *text = h_result_text(r);
                        cr_assert(text && strstr(text, "too many input_required rounds waiting for a retry"),
                                  "call %d: %.400s", i, h_json_text(r));
                        refused++;
                }
                json_object_put(r);
        }
        cr_assert_eq(parked, ROUNDS_HELD, "%u parked, %u refused", parked, refused);
        cr_assert_eq(refused, ROUNDS - ROUNDS_HELD);
        /* mrtrTimeout: every parked round ended, the server's requests answered */
        cr_assert(h_log_count_wait(&D, "was not retried within mrtrTimeout", ROUNDS_HELD, 15000), "%u ended",
                  h_log_count(&D, "was not retried within mrtrTimeout"));
        _cleanup_free_ char *again = ask_line(ROUNDS + 1, "");
        r = h_call(m, sf("%s\n", again));
        cr_assert_str_eq(h_str(r, "result.resultType") ?: "", "input_required", "%.400s", h_json_text(r));
        json_object_put(r);
        h_close(m);
}
