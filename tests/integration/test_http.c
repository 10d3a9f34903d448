/* Integration tests of the Streamable HTTP front door (issue 18): each bad input answered
 * as the specification and the issue say, a session's whole life, its GET stream and its
 * replay, the Unix socket's peers, limits, and 2,000 sessions opened and closed with nothing
 * left behind. A small HTTP client of our own (http-client.c) talks to the daemon. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "proc-stats.h"
#include "servers.h"

#define TOKEN "it-token-0123456789abcdef0123456789"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define INITIALIZE "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"," \
                   "\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}"

static struct h_daemon D;
static char creds[64];
static char http_sock[128];
static unsigned port;

static void setup(void) {
        FILE *f;

        servers_reset(&D);
        snprintf(creds, sizeof creds, "/tmp/mcpvisor-http-XXXXXX");
        cr_assert_not_null(mkdtemp(creds));
        cr_assert_not_null(f = fopen(sf("%s/ci-token", creds), "w"));
        fputs(TOKEN "\n", f);
        fclose(f);
        snprintf(http_sock, sizeof http_sock, "%s/http.sock", creds);
        port = ht_free_port();
}

static void teardown(void) {
        servers_teardown();
        h_remove_tree(creds);
}

TestSuite(http, .init = setup, .fini = teardown, .timeout = 120);

/* The daemon with one demo server, HTTP on a free port and on a Unix socket, more settings
 * (JSON members, may be ""), limited to nofile descriptors (0: ours). */
static void set_http_settings(const char *more) {
        set_settings(sf("\"logLevel\":\"debug\",\"http\":{\"listen\":[\"127.0.0.1:%u\",\"unix:%s\"],"
                        "\"tokens\":[{\"token\":{\"credential\":\"ci-token\"},\"user\":%u}]}%s%s",
                        port, http_sock, (unsigned)getuid(), more[0] ? "," : "", more));
}

static void start_http_nofile(const char *more, unsigned nofile) {
        const char *env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };
        char *config;

        add_demo("demo", "", "");
        set_http_settings(more);
        config = config_text();
        h_start(&D, &(struct h_opts){ .config = config, .env = env, .nofile = nofile });
        free(config);
        wait_all_ready(1);
}

static void start_http(const char *more) {
        start_http_nofile(more, 0);
}

/* initialize and notifications/initialized; the new session's id in ret. */
static void open_session(char ret[64]) {
        struct ht_answer a;

        h_notify_drain(&D); /* each session changes STATUS=: the daemon's datagrams must not queue up */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, INITIALIZE, &a);
        cr_assert_eq(a.status, 200, "initialize: %d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", ret, 64), "no session id: %s", a.headers);
        cr_assert_eq(strlen(ret), 32, "128 random bits as hex: %s", ret);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", sf(AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\n", ret),
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        cr_assert_eq(a.status, 202, "a notification is accepted: %d", a.status);
        ht_answer_done(&a);
}

static void post(const char *sid, const char *body, struct ht_answer *a) {
        ht_once(port, "POST", "/mcp", sf(AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid), body, a);
}

Test(http, healthz_needs_no_token) {
        struct ht_answer a;

        start_http("");
        ht_once(port, "GET", "/healthz", "", NULL, &a);
        cr_assert_eq(a.status, 200);
        cr_assert(strstr(a.body, "\"status\":\"ready\""), "%s", a.body);
        ht_answer_done(&a);
}

/* One POST of initialize with headers from the source address src (127.0.0.x: all loopback). */
static void initialize_from(const char *src, const char *headers, struct ht_answer *a) {
        struct sockaddr_in from = { .sin_family = AF_INET }, to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert_geq(fd, 0);
        cr_assert_eq(inet_pton(AF_INET, src, &from.sin_addr), 1);
        cr_assert_eq(inet_pton(AF_INET, "127.0.0.1", &to.sin_addr), 1);
        cr_assert_eq(bind(fd, (struct sockaddr *)&from, sizeof from), 0, "bind %s: %s", src, strerror(errno));
        cr_assert_eq(connect(fd, (struct sockaddr *)&to, sizeof to), 0, "connect from %s: %s", src, strerror(errno));
        ht_request(fd, "POST", "/mcp", headers, INITIALIZE, strlen(INITIALIZE), a);
        close(fd);
}

#define WRONG_TOKEN "Authorization: Bearer it-token-wrong-0123456789abcdef012345\r\n"
#define SUMMARY_MS 20000 /* a peer's summary is due 10 s after its line */

/* 401 with WWW-Authenticate for no token, a wrong one and another scheme. Logged once per
 * peer: 22 refusals from 127.0.0.1 are one line, then one summary with the count; another
 * address's refusal (127.0.0.2) and a Unix socket peer's (by uid) each get their own line
 * at once. */
Test(http, no_or_wrong_token_is_401_logged_once_per_peer) {
        struct ht_answer a;
        char v[128];
        int fd;

        start_http("");
        ht_once(port, "POST", "/mcp", JSON_HEADERS, INITIALIZE, &a);
        cr_assert_eq(a.status, 401);
        cr_assert(ht_header(&a, "WWW-Authenticate", v, sizeof v) && strncmp(v, "Bearer", 6) == 0, "%s", a.headers);
        ht_answer_done(&a);
        for (int i = 0; i < 20; i++) {
                ht_once(port, "POST", "/mcp", WRONG_TOKEN JSON_HEADERS, INITIALIZE, &a);
                cr_assert_eq(a.status, 401);
                ht_answer_done(&a);
        }
        ht_once(port, "GET", "/mcp", "Authorization: Basic Zm9vOmJhcg==\r\n", NULL, &a);
        cr_assert_eq(a.status, 401, "another scheme is no token");
        ht_answer_done(&a);
        cr_assert(h_log_wait(&D, "refused: no bearer token", H_TIMEOUT_MS));

        initialize_from("127.0.0.2", WRONG_TOKEN JSON_HEADERS, &a);
        cr_assert_eq(a.status, 401);
        ht_answer_done(&a);
        cr_assert(h_log_wait(&D, "HTTP request from 127.0.0.2:", H_TIMEOUT_MS), "a second peer's refusal is logged at once");
        cr_assert_eq(h_log_count(&D, "refused: wrong bearer token"), 1, "127.0.0.1's are one line, 127.0.0.2's another");

        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", JSON_HEADERS "Origin: http://evil.example\r\n", INITIALIZE, strlen(INITIALIZE), &a);
        close(fd);
        cr_assert_eq(a.status, 403);
        ht_answer_done(&a);
        cr_assert(h_log_wait(&D, sf("HTTP request from unix peer uid %u refused: Origin not allowed", (unsigned)getuid()),
                             H_TIMEOUT_MS));

        cr_assert(h_log_wait(&D, "21 more HTTP requests from 127.0.0.1 refused since its last line", SUMMARY_MS));
        cr_assert_eq(h_log_count(&D, "HTTP request from 127.0.0.1:"), 1, "one line, then the summary");
        cr_assert_eq(h_log_count(&D, "more HTTP requests from 127.0.0.2"), 0, "nothing to sum up of one refusal");
}

Test(http, bad_origin_is_403_loopback_allowed) {
        struct ht_answer a;

        start_http("");
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "Origin: http://evil.example\r\n", INITIALIZE, &a);
        cr_assert_eq(a.status, 403);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "Origin: http://localhost.evil.example:8765\r\n", INITIALIZE, &a);
        cr_assert_eq(a.status, 403, "DNS rebinding");
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "Origin: http://localhost:3000\r\n", INITIALIZE, &a);
        cr_assert_eq(a.status, 200);
        ht_answer_done(&a);
}

Test(http, allowed_origins_replace_the_default) {
        const char *env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };
        struct ht_answer a;

        add_demo("demo", "", "");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"allowedOrigins\":[\"https://app.example\"],"
                        "\"tokens\":[{\"token\":{\"credential\":\"ci-token\"},\"user\":%u}]}", port, (unsigned)getuid()));
        start(env);
        wait_all_ready(1);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "Origin: https://app.example\r\n", INITIALIZE, &a);
        cr_assert_eq(a.status, 200, "listed");
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "Origin: http://localhost:3000\r\n", INITIALIZE, &a);
        cr_assert_eq(a.status, 403, "a list replaces the default");
        ht_answer_done(&a);
}

Test(http, unknown_or_missing_session) {
        struct ht_answer a;
        char sid[64];

        start_http("");
        post("0123456789abcdef0123456789abcdef", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &a);
        cr_assert_eq(a.status, 404);
        ht_answer_done(&a);
        post("not-even-an-id", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &a);
        cr_assert_eq(a.status, 404);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &a);
        cr_assert_eq(a.status, 400, "only initialize opens a session");
        ht_answer_done(&a);
        open_session(sid);
        ht_once(port, "POST", "/mcp", sf(AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 1999-01-01\r\n", sid),
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", &a);
        cr_assert_eq(a.status, 400, "an unknown MCP-Protocol-Version");
        ht_answer_done(&a);
        post(sid, "{\"jsonrpc\":", &a);
        cr_assert_eq(a.status, 200, "a session's broken message is answered as on the socket");
        cr_assert(strstr(a.body, "-32700") && strstr(a.body, "\"id\":null"), "%s", a.body);
        ht_answer_done(&a);
        post(sid, "[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]", &a);
        cr_assert(a.status == 200 && strstr(a.body, "\"error\""), "a batch is refused: %d %s", a.status, a.body);
        ht_answer_done(&a);
        ht_once(port, "PUT", "/mcp", AUTH, "{}", &a);
        cr_assert_eq(a.status, 405);
        ht_answer_done(&a);
        ht_once(port, "POST", "/elsewhere", AUTH JSON_HEADERS, INITIALIZE, &a);
        cr_assert_eq(a.status, 404);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", AUTH "Content-Type: text/plain\r\n", INITIALIZE, &a);
        cr_assert_eq(a.status, 415);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, "{\"jsonrpc\":", &a);
        cr_assert_eq(a.status, 400, "not JSON");
        ht_answer_done(&a);
}

Test(http, oversize_body_is_413) {
        struct ht_answer a;
        size_t n = 70000;
        char *big = malloc(n + 1);
        int fd;

        start_http("\"maxMessageSize\":65536");
        memset(big, ' ', n);
        big[n] = '\0';
        fd = ht_connect(port, NULL);
        ht_request(fd, "POST", "/mcp", AUTH JSON_HEADERS, big, n, &a);
        cr_assert_eq(a.status, 413);
        ht_answer_done(&a);
        close(fd);
        free(big);
        ht_once(port, "GET", "/healthz", sf("X-Big: %.6000d\r\nX-Big2: %.6000d\r\nX-Big3: %.6000d\r\n", 0, 0, 0), NULL, &a);
        cr_assert_eq(a.status, 200, "18 KB of headers are fine");
        ht_answer_done(&a);
}

/* The id of the first event in text whose data holds needle ("" when none). */
static void event_id_of(const char *text, const char *needle, char ret[32]) {
        const char *at = strstr(text, needle), *id = NULL;

        ret[0] = '\0';
        for (const char *p = text; at && (p = strstr(p, "id: ")) && p < at; p++)
                id = p + 4;
        if (id)
                snprintf(ret, 32, "%.*s", (int)strcspn(id, "\n"), id);
}

Test(http, session_calls_stream_and_replay) {
        struct ht_answer a;
        char sid[64], other[64], stream[16384] = "", id[32];
        int get;

        start_http("");
        open_session(sid);
        post(sid, "{\"jsonrpc\":\"2.0\",\"id\":\"e\",\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\",\"arguments\":{\"text\":\"hi\"}}}", &a);
        cr_assert_eq(a.status, 200);
        cr_assert(strstr(a.body, "\"id\":\"e\"") && strstr(a.body, "\"text\":\"hi\""), "%s", a.body);
        ht_answer_done(&a);

        get = ht_connect(port, NULL);
        dprintf(get, "GET /mcp HTTP/1.1\r\nHost: x\r\n" AUTH "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", sid);
        cr_assert(ht_stream_until(get, "text/event-stream", stream, sizeof stream, H_TIMEOUT_MS), "%s", stream);
        /* A server's log message while another session's call runs there: this session has
         * no call it could belong to, so it goes on its GET stream; the calling session
         * gets it with its call's answer, before it. */
        open_session(other);
        post(other, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__log\",\"arguments\":{\"text\":\"to-the-get-stream\"}}}", &a);
        cr_assert_eq(a.status, 200);
        cr_assert(strstr(a.body, "\"data\":\"to-the-get-stream\"") &&
                  strstr(a.body, "\"data\":\"to-the-get-stream\"") < strstr(a.body, "\"result\""),
                  "the caller's log message is its call's: %s", a.body);
        ht_answer_done(&a);
        cr_assert(ht_stream_until(get, "to-the-get-stream", stream, sizeof stream, H_TIMEOUT_MS),
                  "a log message goes on the GET stream: %s", stream);
        event_id_of(stream, "to-the-get-stream", id);
        cr_assert(id[0] && !strchr(id, '-'), "a GET stream's event is numbered N: %s", stream);
        close(get);

        /* Dropped: a new stream from Last-Event-ID 0 has that event again. */
        stream[0] = '\0';
        get = ht_connect(port, NULL);
        dprintf(get, "GET /mcp HTTP/1.1\r\nHost: x\r\n" AUTH "Last-Event-ID: 0\r\nMcp-Session-Id: %s\r\n\r\n", sid);
        cr_assert(ht_stream_until(get, sf("id: %s\n", id), stream, sizeof stream, H_TIMEOUT_MS), "replayed: %s", stream);
        cr_assert(strstr(stream, "to-the-get-stream"), "%s", stream);
        cr_assert_null(strstr(stream, "\"text\":\"hi\""), "a POST's events are never replayed on the GET stream: %s", stream);
        close(get);

        ht_once(port, "DELETE", "/mcp", sf(AUTH "Mcp-Session-Id: %s\r\n", sid), NULL, &a);
        cr_assert_eq(a.status, 200);
        ht_answer_done(&a);
        post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", &a);
        cr_assert_eq(a.status, 404, "ended");
        ht_answer_done(&a);
}

#define SLEEP_WITH_PROGRESS "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\"," \
                            "\"arguments\":{\"ms\":250},\"_meta\":{\"progressToken\":\"p\"}}}"

/* A tool call with progress is answered as an event stream of its own: an event with an id
 * and no data first, its progress, then its response, and the stream ends; other requests
 * keep JSON. */
Test(http, tool_call_answered_as_a_stream_with_its_progress_first) {
        struct ht_answer a;
        char sid[64], type[64];
        const char *progress, *result;

        start_http("");
        open_session(sid);
        post(sid, SLEEP_WITH_PROGRESS, &a);
        cr_assert_eq(a.status, 200);
        cr_assert_str_eq(ht_header(&a, "Content-Type", type, sizeof type), "text/event-stream");
        cr_assert(ht_header(&a, "Mcp-Session-Id", type, sizeof type), "%s", a.headers);
        cr_assert(strncmp(a.body, "id: ", 4) == 0 && strstr(a.body, "-1\ndata: \n\n") == a.body + strcspn(a.body, "-"),
                  "the priming event comes first: %s", a.body);
        progress = strstr(a.body, "\"method\":\"notifications/progress\"");
        result = strstr(a.body, "slept 250 ms");
        cr_assert(progress && strstr(progress, "\"progressToken\":\"p\""), "its progress on its stream: %s", a.body);
        cr_assert(result && progress < result, "progress before the result: %s", a.body);
        cr_assert(strstr(a.body, "\"id\":7"), "%s", a.body);
        {
                const char *data = strstr(a.body, "data: {\"jsonrpc\":\"2.0\",\"id\":7");
                json_object *response = data ? json_tokener_parse(data + 6) : NULL;

                cr_assert_not_null(response, "the response event's data is its JSON: %s", a.body);
                json_object_put(response);
        }
        ht_answer_done(&a);

        post(sid, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}", &a);
        cr_assert_eq(a.status, 200);
        cr_assert_str_eq(ht_header(&a, "Content-Type", type, sizeof type), "application/json", "tools/list stays JSON");
        cr_assert(a.body[0] == '{' && strstr(a.body, "demo__sleep"), "%s", a.body);
        ht_answer_done(&a);

        /* A client that takes JSON only gets JSON, its progress on the GET stream. */
        ht_once(port, "POST", "/mcp", sf(AUTH "Content-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: %s\r\n", sid),
                SLEEP_WITH_PROGRESS, &a);
        cr_assert_eq(a.status, 200);
        cr_assert_str_eq(ht_header(&a, "Content-Type", type, sizeof type), "application/json");
        cr_assert(strstr(a.body, "slept 250 ms") && !strstr(a.body, "progress"), "%s", a.body);
        ht_answer_done(&a);
}

/* A tool call from a client that takes both types, with nothing to send before its response,
 * is answered as one JSON body (Content-Length, the connection kept): no stream, no priming
 * event. Both a call answered at once and one that waited for its server. */
Test(http, a_call_with_nothing_before_its_response_is_answered_json) {
        const char *calls[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\",\"arguments\":{\"text\":\"j\"}}}",
                "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\",\"arguments\":{\"ms\":150}}}",
        };
        const char *texts[] = { "\"text\":\"j\"", "slept 150 ms" };
        struct ht_answer a;
        char sid[64], value[64];
        int fd;

        start_http("");
        open_session(sid);
        fd = ht_connect(port, NULL);
        for (size_t i = 0; i < 2; i++) {
                /* On one kept connection, as an SDK client sends them. */
                ht_request(fd, "POST", "/mcp", sf(AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid), calls[i], strlen(calls[i]), &a);
                cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
                cr_assert_str_eq(ht_header(&a, "Content-Type", value, sizeof value), "application/json", "%s", a.headers);
                cr_assert_not_null(ht_header(&a, "Content-Length", value, sizeof value), "%s", a.headers);
                cr_assert_null(ht_header(&a, "Transfer-Encoding", value, sizeof value), "%s", a.headers);
                cr_assert(a.body[0] == '{' && strstr(a.body, texts[i]), "the response alone, no event: %s", a.body);
                cr_assert_null(strstr(a.body, "data:"), "%s", a.body);
                ht_answer_done(&a);
        }
        close(fd);
}

/* A call held silent as long as a keep-alive's interval (15 s) starts its stream, so that no
 * proxy between gives up on it: the priming event while the call still runs, its response
 * later on the same stream. */
Test(http, a_long_call_starts_its_stream_to_keep_the_connection, .timeout = 60) {
        const char *call = "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\","
                           "\"arguments\":{\"ms\":21000}}}";
        char sid[64], stream[8192] = "";
        long long sent;
        int fd;

        start_http("");
        open_session(sid);
        fd = ht_connect(port, NULL);
        dprintf(fd, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
                sid, strlen(call), call);
        sent = h_now_ms();
        cr_assert(ht_stream_until(fd, "data: \n\n", stream, sizeof stream, 20000), "no priming event: %s", stream);
        cr_assert(strstr(stream, "Content-Type: text/event-stream"), "%s", stream);
        cr_assert_null(strstr(stream, "slept"), "before the response: %s", stream);
        cr_assert_geq(h_now_ms() - sent, 7000, "not before half an interval: %s", stream);
        cr_assert(ht_stream_until(fd, "\r\n0\r\n\r\n", stream, sizeof stream, 30000), "the stream ends: %s", stream);
        cr_assert(strstr(stream, "slept 21000 ms") && strstr(stream, "\"id\":11"), "its response on it: %s", stream);
        close(fd);
}

/* A server's request to the client during a call (sampling here) starts the call's stream:
 * the request first, then, once answered, the call's response. */
Test(http, a_sampling_request_during_a_call_streams_it) {
        const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                           "\"capabilities\":{\"sampling\":{}},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}";
        const char *call = "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__ask\","
                           "\"arguments\":{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],\"maxTokens\":1}}}}";
        char sid[64], stream[16384] = "", id[32];
        struct ht_answer a;
        const char *n;
        int fd;

        start_http("");
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, init, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);
        post(sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        ht_answer_done(&a);
        fd = ht_connect(port, NULL);
        dprintf(fd, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
                sid, strlen(call), call);
        cr_assert(ht_stream_until(fd, "\"method\":\"sampling/createMessage\"", stream, sizeof stream, H_TIMEOUT_MS), "%s", stream);
        cr_assert(strstr(stream, "Content-Type: text/event-stream"), "%s", stream);
        n = strstr(stream, "data: {");
        cr_assert(n && (n = strstr(n, "\"id\":")), "%s", stream);
        snprintf(id, sizeof id, "%.*s", (int)strcspn(n + 5, ",}"), n + 5);
        post(sid, sf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"role\":\"assistant\",\"model\":\"m\","
                     "\"content\":{\"type\":\"text\",\"text\":\"sampled\"}}}", id), &a);
        cr_assert_eq(a.status, 202, "%d %s", a.status, a.body);
        ht_answer_done(&a);
        cr_assert(ht_stream_until(fd, "\r\n0\r\n\r\n", stream, sizeof stream, H_TIMEOUT_MS), "the stream ends: %s", stream);
        n = strstr(stream, "\"method\":\"sampling/createMessage\"");
        cr_assert(strstr(n, "\"id\":6") && strstr(n, "sampled"), "then the call's response, with the answer: %s", stream);
        close(fd);
}

/* A server's request during a call travels on that call's stream, and its answer POSTed
 * back reaches the server. */
Test(http, server_request_on_the_calls_stream) {
        char sid[64], stream[16384] = "", id[32];
        struct ht_answer a;
        int fd;
        const char *body = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__ask\",\"arguments\":{\"method\":\"demo/question\"}}}";

        start_http("");
        open_session(sid);
        fd = ht_connect(port, NULL);
        dprintf(fd, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
                sid, strlen(body), body);
        cr_assert(ht_stream_until(fd, "\"method\":\"demo/question\"", stream, sizeof stream, H_TIMEOUT_MS), "%s", stream);
        {
                const char *at = strstr(stream, "\"method\":\"demo/question\""), *n = strstr(stream, "\"id\":");

                while (n && strstr(n + 1, "\"id\":") && strstr(n + 1, "\"id\":") < at)
                        n = strstr(n + 1, "\"id\":");
                cr_assert_not_null(n, "%s", stream);
                snprintf(id, sizeof id, "%.*s", (int)strcspn(n + 5, ",}"), n + 5);
        }
        post(sid, sf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"pong\":true}}", id), &a);
        cr_assert_eq(a.status, 202, "%d %s", a.status, a.body);
        ht_answer_done(&a);
        cr_assert(ht_stream_until(fd, "pong", stream, sizeof stream, H_TIMEOUT_MS), "the answer reached the server: %s", stream);
        cr_assert(ht_stream_until(fd, "\r\n0\r\n\r\n", stream, sizeof stream, H_TIMEOUT_MS), "the stream ends: %s", stream);
        close(fd);
}

/* GET with the Last-Event-ID of a POST's stream: what that stream said after it, then its
 * end; nothing more to say: 405 (clients stop reconnecting); still open: 409. */
Test(http, a_post_stream_resumed_by_its_last_event_id) {
        struct ht_answer a;
        char sid[64], first[32], last[32], stream[8192] = "";
        /* With progress: a stream starts only when something goes before the response. */
        const char *sleep60 = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\","
                              "\"arguments\":{\"ms\":60000},\"_meta\":{\"progressToken\":\"q\"}}}";
        int fd;

        start_http("");
        open_session(sid);
        post(sid, SLEEP_WITH_PROGRESS, &a);
        cr_assert_eq(a.status, 200);
        event_id_of(a.body, "data: \n\n", first); /* the priming event */
        event_id_of(a.body, "slept 250 ms", last);
        cr_assert(strchr(first, '-') && strchr(last, '-'), "a POST stream's events are numbered N-K: %s", a.body);
        ht_answer_done(&a);

        ht_once(port, "GET", "/mcp", sf(AUTH "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\nLast-Event-ID: %s\r\n", sid, first), NULL, &a);
        cr_assert_eq(a.status, 200);
        cr_assert(strstr(a.body, "notifications/progress") && strstr(a.body, "slept 250 ms"), "replayed: %s", a.body);
        cr_assert_null(strstr(a.body, sf("id: %s\n", first)), "from after it: %s", a.body);
        ht_answer_done(&a);

        ht_once(port, "GET", "/mcp", sf(AUTH "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\nLast-Event-ID: %s\r\n", sid, last), NULL, &a);
        cr_assert_eq(a.status, 405, "nothing after its response: %d %s", a.status, a.body);
        ht_answer_done(&a);

        fd = ht_connect(port, NULL);
        dprintf(fd, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
                sid, strlen(sleep60), sleep60);
        cr_assert(ht_stream_until(fd, "data: \n\n", stream, sizeof stream, H_TIMEOUT_MS), "%s", stream);
        event_id_of(stream, "data: \n\n", first);
        ht_once(port, "GET", "/mcp", sf(AUTH "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\nLast-Event-ID: %s\r\n", sid, first), NULL, &a);
        cr_assert_eq(a.status, 409, "its connection is open: %d", a.status);
        ht_answer_done(&a);
        close(fd);
        cr_assert(h_log_wait(&D, "HTTP request 9 abandoned by the client; cancelling it", H_TIMEOUT_MS));
}

Test(http, closing_a_post_cancels_its_call) {
        char sid[64];
        int fd;

        start_http("");
        open_session(sid);
        fd = ht_connect(port, NULL);
        dprintf(fd, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
                sid, strlen("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\",\"arguments\":{\"ms\":60000}}}"),
                "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\",\"arguments\":{\"ms\":60000}}}");
        close(fd);
        cr_assert(h_log_wait(&D, "HTTP request 9 abandoned by the client; cancelling it", H_TIMEOUT_MS));
        /* The server hears it as a socket client's notifications/cancelled. */
        cr_assert(h_log_wait(&D, "tools/call cancelled by the client: the HTTP client closed the request's connection",
                             H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "demo: cancelled request", H_TIMEOUT_MS));
}

/* Whether the daemon's epoll watches a descriptor for its peer's close (EPOLLRDHUP, libevent's
 * EV_CLOSED): here, where no socket client is, a POST's connection whose request has waited
 * its 20 ms. Read from /proc/PID/fdinfo of its eventpoll descriptors. */
static bool peer_close_watched(pid_t pid) {
        char path[64], link[64], line[256];
        bool found = false;

        for (int fd = 0; fd < 1024 && !found; fd++) {
                ssize_t n;
                FILE *f;

                snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
                n = readlink(path, link, sizeof link - 1);
                if (n < 0 || (link[n] = '\0', strcmp(link, "anon_inode:[eventpoll]") != 0))
                        continue;
                snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)pid, fd);
                if (!(f = fopen(path, "re")))
                        continue;
                while (!found && fgets(line, sizeof line, f)) {
                        const char *events = strstr(line, "events:");

                        found = strncmp(line, "tfd:", 4) == 0 && events && (strtoul(events + 7, NULL, 16) & 0x2000);
                }
                fclose(f);
        }
        return found;
}

/* A call answered as JSON has no stream of its own, whose writes would find the peer gone:
 * its connection is watched for the close once it has waited (client-http.c), and the
 * client closing it then cancels the call. */
Test(http, closing_a_json_post_that_waited_cancels_its_call) {
        const char *call = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\","
                           "\"arguments\":{\"ms\":60000}}}";
        bool watched = false;
        char sid[64];
        int fd;

        start_http("");
        open_session(sid);
        fd = ht_connect(port, NULL);
        dprintf(fd, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH "Content-Type: application/json\r\nAccept: application/json\r\n"
                "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s", sid, strlen(call), call);
        for (long long deadline = h_now_ms() + H_TIMEOUT_MS; !watched && h_now_ms() < deadline; poll(NULL, 0, 5))
                watched = peer_close_watched(D.pid);
        cr_assert(watched, "the POST's connection never watched for its close");
        close(fd);
        cr_assert(h_log_wait(&D, "HTTP request 9 abandoned by the client; cancelling it", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "demo: cancelled request", H_TIMEOUT_MS));
}

Test(http, unix_socket_peer_needs_no_token) {
        struct ht_answer a;
        int fd;

        start_http("");
        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", JSON_HEADERS, INITIALIZE, strlen(INITIALIZE), &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        ht_answer_done(&a);
        close(fd);
        cr_assert(h_log_wait(&D, sf("uid %u", (unsigned)getuid()), H_TIMEOUT_MS));
}

Test(http, max_sessions_and_idle_expiry) {
        struct ht_answer a;
        char sid[64];

        start_http("\"maxHttpSessions\":2,\"httpSessionIdle\":1");
        open_session(sid);
        open_session(sid);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, INITIALIZE, &a);
        cr_assert_eq(a.status, 503, "maxHttpSessions");
        ht_answer_done(&a);
        cr_assert(h_log_count_wait(&D, "HTTP session unused for 1 s (httpSessionIdle); ended", 2, H_TIMEOUT_MS));
        post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", &a);
        cr_assert_eq(a.status, 404, "expired");
        ht_answer_done(&a);
        open_session(sid); /* room again */
}

/* Under socket activation the sockets named http are the front door's, TCP ones included;
 * the daemon binds nothing of its own for HTTP then. */
Test(http, socket_activated_http) {
        const char *env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };
        struct ht_answer a;
        char *config;

        add_demo("demo", "", "");
        set_settings(sf("\"http\":{\"tokens\":[{\"token\":{\"credential\":\"ci-token\"},\"user\":%u}]}",
                        (unsigned)getuid()));
        config = config_text();
        h_start(&D, &(struct h_opts){ .config = config, .activate = true, .activate_control = true,
                                      .activate_http = sf("127.0.0.1:%u", port), .fdnames = "mcp:control:http",
                                      .env = env });
        free(config);
        /* systemd-socket-activate starts the daemon on the first connection: an HTTP one here */
        cr_assert(ht_wait_listening(port, H_TIMEOUT_MS), "systemd-socket-activate never listened on %u", port);
        ht_once(port, "GET", "/healthz", "", NULL, &a);
        cr_assert(a.status == 200 || a.status == 503, "%d %s", a.status, a.body); /* 503: still starting */
        ht_answer_done(&a);
        wait_all_ready(1);
        cr_assert(h_log_wait(&D, sf("HTTP front door listening on 127.0.0.1:%u (passed by systemd)", port), H_TIMEOUT_MS));
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, INITIALIZE, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        ht_answer_done(&a);
}

/* 2,000 sessions opened and ended, each on a connection of its own: the daemon's descriptors
 * and memory come back to what they were after the first few. */
Test(http, two_thousand_sessions_leak_nothing, .timeout = 240) {
        struct ht_answer a;
        long rss_before, rss_after;
        int fds_before, fds_after;
        char sid[64];

        start_http("\"maxHttpSessions\":4096");
        for (int i = 0; i < 50; i++) { /* warm up: allocator arenas, tables at their size */
                open_session(sid);
                ht_once(port, "DELETE", "/mcp", sf(AUTH "Mcp-Session-Id: %s\r\n", sid), NULL, &a);
                ht_answer_done(&a);
        }
        fds_before = proc_fd_count(D.pid);
        rss_before = proc_rss_kib(D.pid);
        for (int i = 0; i < 2000; i++) {
                open_session(sid);
                ht_once(port, "DELETE", "/mcp", sf(AUTH "Mcp-Session-Id: %s\r\n", sid), NULL, &a);
                cr_assert_eq(a.status, 200);
                ht_answer_done(&a);
        }
        ht_once(port, "GET", "/healthz", "", NULL, &a);
        cr_assert(strstr(a.body, "\"sessions\":0"), "every session ended: %s", a.body);
        ht_answer_done(&a);
        /* The last connections' closes may still be on their way to the daemon: wait, bounded. */
        for (long long deadline = h_now_ms() + 5000;
             (fds_after = proc_fd_count(D.pid)) > fds_before && h_now_ms() < deadline;)
                poll(NULL, 0, 20);
        rss_after = proc_rss_kib(D.pid);
        cr_log_info("2,000 HTTP sessions: descriptors %d -> %d, RSS %ld -> %ld KiB", fds_before, fds_after, rss_before,
                    rss_after);
        cr_assert_leq(fds_after, fds_before, "descriptors grew from %d to %d", fds_before, fds_after);
#ifndef __SANITIZE_ADDRESS__ /* ASan's quarantine holds freed memory: RSS says nothing there */
        cr_assert_leq(rss_after, rss_before + 1024, "the daemon grew from %ld to %ld KiB", rss_before, rss_after);
#endif
}

/* ---- descriptors running short ---- */

/* The daemon's CPU time over a window of ms, its NOTIFY datagrams drained (not a wait on a
 * condition: the length of the measurement). */
static long long cpu_ms_over(int ms) {
        long long cpu = proc_cpu_ms(D.pid);

        for (long long end = h_now_ms() + ms; h_now_ms() < end;) {
                h_notify_drain(&D);
                poll(NULL, 0, 50);
        }
        return proc_cpu_ms(D.pid) - cpu;
}

/* The daemon's lowest free descriptor: with RLIMIT_NOFILE there, its next accept() fails. */
static int lowest_free_fd(void) {
        for (int fd = 0;; fd++)
                if (lstat(sf("/proc/%d/fd/%d", (int)D.pid, fd), &(struct stat){ 0 }) != 0)
                        return fd;
}

/* Opens n connections to the HTTP port, each with one authorized request (answered 400, no
 * session named) and kept open unread: connections whose peer proved itself, which no cap
 * on unauthenticated ones closes. The backlog holds those the daemon does not accept. */
static void open_idle_http(int *fds, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                fds[i] = ht_connect(port, NULL);
                dprintf(fds[i], "GET /mcp HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n");
        }
}

static void close_all(int *fds, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
}

/* A new client's /healthz answered within the deadline (the listeners resumed). */
static void served_again(void) {
        struct ht_answer a;

        ht_once(port, "GET", "/healthz", "", NULL, &a);
        cr_assert_eq(a.status, 200, "a new HTTP client is not served: %d", a.status);
        ht_answer_done(&a);
}

static bool fds_back_to(int want);

#define SHORT_LOG "file descriptors left (limit 256); pausing new HTTP connections"
#define EMFILE_LOG sf("cannot accept HTTP connections on 127.0.0.1:%u: Too many open files", port)

/* Idle authorized HTTP connections far beyond RLIMIT_NOFILE: the front door stops accepting with a
 * reserve left (an eighth: 32 of 256), logged once, without spinning on the readable
 * listening socket; the control socket still answers from that reserve; once the clients
 * leave, new ones are served. Then the limit lowered under the daemon (prlimit) to what it
 * holds, so that accept() itself fails with EMFILE: the same pause, no spin. */
Test(http, descriptors_short_pause_not_spin, .timeout = 180) {
        enum { NOFILE = 256, IDLE = 400, EXTRA = 16, WINDOW_MS = 1000 };
        static int idle[IDLE], extra[EXTRA];
        struct rlimit old, low;
        long long cpu;
        int fds, base;

        start_http_nofile("", NOFILE);
        base = proc_fd_count(D.pid);
        open_idle_http(idle, IDLE);
        cr_assert(h_log_wait(&D, SHORT_LOG, H_TIMEOUT_MS), "the HTTP listener never paused");
        cpu = cpu_ms_over(WINDOW_MS);
        fds = proc_fd_count(D.pid);
        cr_log_info("%d idle HTTP connections, limit %d: the daemon holds %d descriptors, %lld ms of CPU in %d ms", IDLE,
                    NOFILE, fds, cpu, WINDOW_MS);
        cr_assert_lt(cpu, WINDOW_MS / 10, "the daemon used %lld ms of CPU in %d ms, paused", cpu, WINDOW_MS);
        cr_assert_leq(fds, NOFILE - 32 + 1, "the reserve is used up: %d descriptors", fds);
        json_object_put(h_control(&D, "status", NULL)); /* asserts an answer */
        cr_assert_eq(h_log_count(&D, SHORT_LOG), 1, "a pause is logged once");
        close_all(idle, IDLE);
        served_again();
        cr_assert(h_log_wait(&D, "accepting HTTP connections again", H_TIMEOUT_MS));
        /* the backlog's connections, closed by now, are still accepted and answered */
        cr_assert(fds_back_to(base), "the daemon's descriptors never came back to %d", base);

        /* accept() failing: not a descriptor left to take a connection with */
        cr_assert_eq(prlimit(D.pid, RLIMIT_NOFILE, NULL, &old), 0, "prlimit: %s", strerror(errno));
        h_notify_drain(&D);
        low = (struct rlimit){ .rlim_cur = (rlim_t)lowest_free_fd(), .rlim_max = old.rlim_max };
        cr_assert_eq(prlimit(D.pid, RLIMIT_NOFILE, &low, NULL), 0, "prlimit: %s", strerror(errno));
        open_idle_http(extra, EXTRA);
        cr_assert(h_log_wait(&D, EMFILE_LOG, H_TIMEOUT_MS), "accept() never failed");
        cpu = cpu_ms_over(WINDOW_MS);
        cr_log_info("accept() failing with EMFILE: %lld ms of CPU in %d ms", cpu, WINDOW_MS);
        cr_assert_lt(cpu, WINDOW_MS / 10, "the daemon used %lld ms of CPU in %d ms at EMFILE", cpu, WINDOW_MS);
        cr_assert_eq(h_log_count(&D, EMFILE_LOG), 1, "a pause is logged once");
        cr_assert_eq(prlimit(D.pid, RLIMIT_NOFILE, &old, NULL), 0);
        close_all(extra, EXTRA);
        served_again();
        cr_assert(h_log_count_wait(&D, "accepting HTTP connections again", 2, H_TIMEOUT_MS));
}

/* ---- real sizes ---- */

#define HELD 1000          /* sessions held open at once, each with its GET stream */
#define STREAM_BUF 2048

/* A GET stream of session sid, its headers read. */
static int open_stream(const char *sid, char *buf) {
        int fd = ht_connect(port, NULL);

        buf[0] = '\0';
        dprintf(fd, "GET /mcp HTTP/1.1\r\nHost: x\r\n" AUTH "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", sid);
        cr_assert(ht_stream_until(fd, "text/event-stream", buf, STREAM_BUF, H_TIMEOUT_MS), "stream of %s: %s", sid, buf);
        return fd;
}

/* The daemon's descriptors back to want, within the deadline (sessions end a few a loop turn). */
static bool fds_back_to(int want) {
        for (long long deadline = h_now_ms() + H_TIMEOUT_MS; h_now_ms() < deadline; poll(NULL, 0, 20)) {
                h_notify_drain(&D);
                if (proc_fd_count(D.pid) <= want)
                        return true;
        }
        return false;
}

/* The daemon's descriptors once the same count is read five times 20 ms apart: connections
 * just closed by the test are still open in the daemon for a loop turn or two. */
static int fds_settled(void) {
        int last = -1, same = 0;

        for (long long deadline = h_now_ms() + H_TIMEOUT_MS; same < 5; poll(NULL, 0, 20)) {
                int n = proc_fd_count(D.pid);

                cr_assert_lt(h_now_ms(), deadline, "the daemon's descriptors never settled");
                h_notify_drain(&D);
                same = n == last ? same + 1 : 0;
                last = n;
        }
        return last;
}

/* One burst: HELD sessions opened, each listing its tools and holding its GET stream; a
 * reload that changes the tools (echo filtered out or back) tells every one of them on its
 * stream; then all end (DELETE, streams closed) and the daemon's descriptors come back to
 * fds_before. Returns the daemon's RSS while they were held. */
static long hold_burst(const char *more, bool filtered, int fds_before) {
        static char sids[HELD][64], bufs[HELD][STREAM_BUF];
        static int streams[HELD];
        struct ht_answer a;
        long rss_held;
        int fds_held;

        for (int i = 0; i < HELD; i++) {
                open_session(sids[i]);
                post(sids[i], "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &a);
                cr_assert(a.status == 200 && strstr(a.body, "demo__add"), "session %d: %d %.200s", i, a.status, a.body);
                ht_answer_done(&a);
                streams[i] = open_stream(sids[i], bufs[i]);
        }
        fds_held = proc_fd_count(D.pid);
        cr_assert_geq(fds_held, fds_before + HELD, "a stream each: %d -> %d descriptors", fds_before, fds_held);

        servers_reset(&D); /* the same daemon, a changed filter: its tools list changes */
        add_demo("demo", filtered ? "\"excludeTools\":[\"echo\"]" : "", "");
        set_http_settings(more);
        config_rewrite();
        json_object_put(h_control(&D, "reload", NULL));
        for (int i = 0; i < HELD; i++)
                cr_assert(ht_stream_until(streams[i], "notifications/tools/list_changed", bufs[i], STREAM_BUF, H_TIMEOUT_MS),
                          "session %d not told: %s", i, bufs[i]);
        rss_held = proc_rss_kib(D.pid);

        for (int i = 0; i < HELD; i++) {
                h_notify_drain(&D); /* each end changes STATUS=: the datagrams must not queue up */
                ht_once(port, "DELETE", "/mcp", sf(AUTH "Mcp-Session-Id: %s\r\n", sids[i]), NULL, &a);
                cr_assert_eq(a.status, 200, "DELETE %d: %d", i, a.status);
                ht_answer_done(&a);
                close(streams[i]);
        }
        ht_once(port, "GET", "/healthz", "", NULL, &a);
        cr_assert(strstr(a.body, "\"sessions\":0"), "every session ended: %s", a.body);
        ht_answer_done(&a);
        cr_assert(fds_back_to(fds_before), "descriptors: %d before, %d held, %d after", fds_before, fds_held,
                  proc_fd_count(D.pid));
        return rss_held;
}

/* 1,000 HTTP sessions at once with their streams, all told of a list change, then ended:
 * twice. The descriptors come back each time; the memory the burst took is mostly given
 * back (glibc keeps what is freed amid its heap unless asked: the front door trims once the
 * sessions fall to a quarter of their peak), and a second burst costs nothing more. */
Test(http, thousand_sessions_with_streams_at_once, .timeout = 240) {
        static char sid[64], buf[STREAM_BUF];
        const char *more = "\"maxHttpSessions\":4096,\"maxClientsPerUser\":0";
        struct ht_answer a;
        long rss_before, rss_held, rss_after, rss_again;
        int fds_before, stream;

        start_http(more);
        for (int i = 0; i < 20; i++) { /* warm up: allocator arenas, tables */
                open_session(sid);
                stream = open_stream(sid, buf);
                ht_once(port, "DELETE", "/mcp", sf(AUTH "Mcp-Session-Id: %s\r\n", sid), NULL, &a);
                ht_answer_done(&a);
                close(stream);
        }
        fds_before = fds_settled();
        rss_before = proc_rss_kib(D.pid);
        rss_held = hold_burst(more, true, fds_before);
        rss_after = proc_rss_kib(D.pid);
        hold_burst(more, false, fds_before);
        rss_again = proc_rss_kib(D.pid);
        cr_log_info("%d HTTP sessions with streams, twice: RSS %ld KiB, %ld held (%ld KiB a session), %ld after, %ld after "
                    "the second", HELD, rss_before, rss_held, (rss_held - rss_before) / HELD, rss_after, rss_again);
#ifndef __SANITIZE_ADDRESS__ /* ASan's quarantine holds freed memory: RSS says nothing there */
        cr_assert_leq(rss_after - rss_before, (rss_held - rss_before) / 2, "the burst's memory kept: RSS %ld -> %ld -> %ld KiB",
                      rss_before, rss_held, rss_after);
        cr_assert_leq(rss_again, rss_after + 1024, "a second burst grew the daemon from %ld to %ld KiB", rss_after, rss_again);
#endif
}

/* Whether text, n bytes at p, is the pattern big_text() writes. */
static void big_text(char *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (char)('a' + (i * 7 + i / 4096) % 26);
}

/* An 8 MiB tools/call result and a 4 MiB argument echoed back, through HTTP, byte for byte. */
Test(http, large_result_and_argument_byte_exact, .timeout = 120) {
        enum { RESULT = 8 << 20, ARGUMENT = 4 << 20 };
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                                   "\"arguments\":{\"text\":\"";
        static const char tail[] = "\"}}}";
        struct ht_answer a;
        char sid[64], *body, *text, *want;
        size_t n;
        int fd;

        start_http("");
        open_session(sid);
        post(sid, sf("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                     "\"arguments\":{\"bytes\":%d}}}", RESULT), &a);
        cr_assert_eq(a.status, 200);
        cr_assert_not_null(text = strstr(a.body, "\"text\":\""), "%.200s", a.body);
        text += strlen("\"text\":\"");
        cr_assert_geq(a.body_len - (size_t)(text - a.body), (size_t)RESULT + 1, "the result is cut: %zu bytes", a.body_len);
        for (size_t i = 0; i < RESULT; i++)
                cr_assert_eq(text[i], 'x', "byte %zu of the result is %#x", i, (unsigned char)text[i]);
        cr_assert_eq(text[RESULT], '"', "the result is longer than sent");
        ht_answer_done(&a);

        n = strlen(head) + ARGUMENT + strlen(tail);
        cr_assert_not_null(body = malloc(n));
        memcpy(body, head, strlen(head));
        big_text(body + strlen(head), ARGUMENT);
        memcpy(body + strlen(head) + ARGUMENT, tail, strlen(tail));
        fd = ht_connect(port, NULL);
        ht_request(fd, "POST", "/mcp", sf(AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid), body, n, &a);
        close(fd);
        cr_assert_eq(a.status, 200, "%d %.200s", a.status, a.body);
        cr_assert_not_null(text = strstr(a.body, "\"text\":\""), "%.200s", a.body);
        text += strlen("\"text\":\"");
        want = body + strlen(head);
        cr_assert_geq(a.body_len - (size_t)(text - a.body), (size_t)ARGUMENT + 1);
        cr_assert(memcmp(text, want, ARGUMENT) == 0, "the 4 MiB argument came back changed");
        cr_assert_eq(text[ARGUMENT], '"');
        ht_answer_done(&a);
        free(body);
}

/* A large result on the event stream its call's log message started: its event written in
 * pieces from where the server's line was read (head, the lent line, the blank line),
 * byte for byte the event sse_event_text() would make. */
Test(http, a_large_result_on_a_calls_stream_byte_exact, .timeout = 120) {
        enum { RESULT = 4 << 20 };
        struct ht_answer a;
        char sid[64], type[64];
        const char *data, *text;
        json_object *response;

        start_http("");
        open_session(sid);
        post(sid, sf("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__log\","
                     "\"arguments\":{\"text\":\"before the result\",\"bytes\":%d}}}", RESULT), &a);
        cr_assert_eq(a.status, 200);
        cr_assert_str_eq(ht_header(&a, "Content-Type", type, sizeof type), "text/event-stream");
        cr_assert(strstr(a.body, "before the result"), "%.300s", a.body);
        data = strstr(a.body, "\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,");
        cr_assert_not_null(data, "no response event: %.300s", a.body);
        {
                const char *line = data;

                while (line > a.body && line[-1] != '\n')
                        line--;
                cr_assert(strncmp(line, "id: ", 4) == 0 && strchr(line, '-') < data, "the response event's id: %.40s", line);
        }
        data += strlen("\ndata: ");
        cr_assert(strcmp(data + strcspn(data, "\n"), "\n\n") == 0, "the event ends otherwise");
        ((char *)data)[strcspn(data, "\n")] = '\0';
        response = json_tokener_parse(data);
        cr_assert_not_null(response, "the response event's data is not its JSON");
        text = h_str(response, "result.content.0.text");
        cr_assert_not_null(text);
        cr_assert_eq(strlen(text), (size_t)RESULT);
        cr_assert_eq(strspn(text, "x"), (size_t)RESULT, "the result changed on the way");
        json_object_put(response);
        ht_answer_done(&a);
}

/* ---- before a peer proves itself (http-gate.c) ---- */

#define HUGE_BODY "Content-Length: 16777216\r\n"

/* The status of the answer read from fd within timeout_ms (0: none), its head in buf. */
static int head_answer(int fd, char *buf, size_t size, int timeout_ms) {
        int status = 0;

        buf[0] = '\0';
        if (!ht_stream_until(fd, "\r\n\r\n", buf, size, timeout_ms))
                return 0;
        sscanf(buf, "HTTP/1.1 %d", &status);
        return status;
}

/* Whether the daemon closes fd within timeout_ms (what comes before is read and dropped). */
static bool closed_by_daemon(int fd, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        char buf[4096];

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                long long left = deadline - h_now_ms();
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        return false;
                n = read(fd, buf, sizeof buf);
                if (n <= 0)
                        return true; /* EOF, or a reset */
        }
}

/* Heads that announce a 16 MiB body, sent without it: evhttp alone would wait for the body
 * before anything of ours ran. Any head not admitted, whatever its path (one added later
 * included) or method, is answered at once, as it would be without a body, and closed: no
 * body is read before the path, the Origin and the principal are. */
Test(http, a_body_is_read_only_after_an_admitted_head) {
        static const struct {
                bool unix_socket;
                const char *head;
                int status;
        } cases[] = {
                { false, "POST /mcp HTTP/1.1\r\nHost: x\r\n" JSON_HEADERS HUGE_BODY, 401 },
                { false, "PUT /a/path/added/later HTTP/1.1\r\nHost: x\r\n" HUGE_BODY, 404 },
                { false, "PATCH /mcp HTTP/1.1\r\nHost: x\r\n" WRONG_TOKEN HUGE_BODY, 401 },
                { false, "DELETE /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n", 401 },
                { false, "OPTIONS /mcp HTTP/1.1\r\nHost: x\r\n" HUGE_BODY, 401 },
                { false, "POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n" JSON_HEADERS HUGE_BODY, 401 },
                { false, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH "Origin: http://evil.example\r\n" JSON_HEADERS HUGE_BODY, 403 },
                { false, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH "X-Folded: a\r\n b\r\n" JSON_HEADERS HUGE_BODY, 400 },
                { false, "GET /healthz HTTP/1.1\r\nHost: x\r\n" HUGE_BODY, 200 },
                { true, "POST /elsewhere HTTP/1.1\r\nHost: x\r\n" JSON_HEADERS HUGE_BODY, 404 },
        };
        char buf[4096];

        start_http("");
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                int fd = ht_connect(cases[i].unix_socket ? 0 : port, cases[i].unix_socket ? http_sock : NULL);
                int status;

                dprintf(fd, "%s\r\n", cases[i].head);
                status = head_answer(fd, buf, sizeof buf, H_TIMEOUT_MS);
                cr_assert_eq(status, cases[i].status, "%zu: %s answered %d, not before its body: %s", i, cases[i].head, status, buf);
                cr_assert(strcasestr(buf, "\r\nConnection: close"), "%zu: %s", i, buf);
                cr_assert(closed_by_daemon(fd, H_TIMEOUT_MS), "%zu: not closed", i);
                close(fd);
        }
}

#define BODIES 50
#define BODY_SIZE (16u << 20)

/* Sends what fd takes now of the remaining *left bytes (zeros); false once the daemon has
 * answered, closed or reset it (its answer, if any, read into buf). */
static bool push_body(int fd, size_t *left, char *buf, size_t size) {
        static char zeros[1 << 20];
        size_t len = strlen(buf);
        ssize_t n;

        while ((n = read(fd, buf + len, size - len - 1)) > 0) {
                len += (size_t)n;
                buf[len] = '\0';
        }
        if (n == 0 || strstr(buf, "\r\n\r\n"))
                return false;
        while (*left > 0) {
                n = send(fd, zeros, *left < sizeof zeros ? *left : sizeof zeros, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0)
                        return errno == EAGAIN;
                *left -= (size_t)n;
        }
        return true;
}

/* 50 clients without a token, each sending a 16 MiB body at once (before: the daemon grew
 * from 4 MB to 837 MB and kept it): every one is answered 401 and closed before its body
 * is read, and the daemon's memory stays about where it was. */
Test(http, fifty_unauthenticated_16_mib_bodies_hold_nothing, .timeout = 180) {
        static int fds[BODIES];
        static size_t left[BODIES];
        static char answers[BODIES][512];
        long rss_before, rss_peak, rss_after;
        unsigned open = BODIES, refused = 0;
        long long deadline;

        start_http("");
        rss_before = rss_peak = proc_rss_kib(D.pid);
        for (unsigned i = 0; i < BODIES; i++) {
                fds[i] = ht_connect(port, NULL);
                dprintf(fds[i], "POST /mcp HTTP/1.1\r\nHost: x\r\n" JSON_HEADERS "Content-Length: %u\r\n\r\n", BODY_SIZE);
                left[i] = BODY_SIZE;
                fcntl(fds[i], F_SETFL, O_NONBLOCK);
        }
        deadline = h_now_ms() + 60000;
        while (open > 0 && h_now_ms() < deadline) {
                struct pollfd p[BODIES];

                for (unsigned i = 0; i < BODIES; i++)
                        p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN | (left[i] ? POLLOUT : 0) };
                poll(p, BODIES, 100);
                for (unsigned i = 0; i < BODIES; i++)
                        if (fds[i] >= 0 && !push_body(fds[i], &left[i], answers[i], sizeof answers[i])) {
                                refused += strncmp(answers[i], "HTTP/1.1 401", 12) == 0;
                                close(fds[i]);
                                fds[i] = -1;
                                open--;
                        } else if (fds[i] < 0)
                                p[i].fd = -1;
                long rss = proc_rss_kib(D.pid);
                if (rss > rss_peak)
                        rss_peak = rss;
        }
        rss_after = proc_rss_kib(D.pid);
        cr_assert_eq(open, 0, "%u connections still open after 60 s", open);
        cr_log_info("%d unauthenticated 16 MiB bodies: RSS %ld KiB before, %ld KiB at most, %ld KiB after", BODIES,
                    rss_before, rss_peak, rss_after);
        cr_assert_geq(refused, BODIES * 9 / 10, "%u of %d answered 401 (the others reset before reading it)", refused, BODIES);
        cr_assert_lt(rss_peak - rss_before, 32 * 1024, "the daemon grew by %ld KiB", rss_peak - rss_before);
        cr_assert(h_log_wait(&D, "refused: no bearer token", H_TIMEOUT_MS));
}

#define SLOW 300
#define SLOW_NOFILE 200

static long long now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* 300 connections that never finish their heads, the daemon at 200 descriptors (before:
 * Unix socket clients, the HTTP Unix listener and authorized TCP clients were all locked
 * out): unauthenticated connections are capped (per peer, in total, the oldest closed to
 * make room), so a Unix socket client, the control socket, the HTTP Unix listener and an
 * authorized TCP client all get in meanwhile. */
Test(http, slow_heads_lock_no_one_out, .timeout = 180) {
        static int slow[SLOW];
        struct h_client *x;
        struct ht_answer a;
        long long t0, ping_us;
        json_object *r;
        int fd;

        start_http_nofile("", SLOW_NOFILE);
        for (unsigned i = 0; i < SLOW; i++) {
                slow[i] = ht_connect(port, NULL);
                dprintf(slow[i], "POST /mcp HTTP/1.1\r\nHost: x\r\n");
        }
        x = h_client_open(&D, false, NULL);
        t0 = now_us();
        r = h_client_call(x, "7", "ping", "{}");
        ping_us = now_us() - t0;
        cr_assert_not_null(h_get(r, "result"), "ping: %s", json_object_to_json_string(r));
        json_object_put(r);
        json_object_put(h_control(&D, "status", NULL)); /* asserts an answer */

        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", JSON_HEADERS, INITIALIZE, strlen(INITIALIZE), &a);
        close(fd);
        cr_assert_eq(a.status, 200, "the HTTP Unix listener: %d", a.status);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, INITIALIZE, &a);
        cr_assert_eq(a.status, 200, "an authorized TCP client: %d", a.status);
        ht_answer_done(&a);
        cr_log_info("%d slow heads at %d descriptors: the daemon holds %d descriptors, RSS %ld KiB; a Unix client's ping %lld us",
                    SLOW, SLOW_NOFILE, proc_fd_count(D.pid), proc_rss_kib(D.pid), ping_us);
        cr_assert(h_log_wait(&D, "without a request admitted yet", H_TIMEOUT_MS), "the cap is logged");
        h_client_close(x);
        close_all(slow, SLOW);
}

/* One byte every 200 ms of a head that never ends (before: each byte kept the connection
 * past evhttp's 120 s timeout): closed once its head is HTTP_GATE_HEAD_SECONDS (10 s) late. */
Test(http, a_trickled_head_is_closed_at_its_deadline, .timeout = 60) {
        static const char head[] = "POST /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        long long end;
        int fd;
        bool closed = false;

        start_http("");
        fd = ht_connect(port, NULL);
        end = h_now_ms() + 14000;
        for (size_t i = 0; !closed && h_now_ms() < end; i++) {
                closed = send(fd, &head[i % (sizeof head - 1)], 1, MSG_NOSIGNAL) < 0 || closed_by_daemon(fd, 200);
        }
        cr_assert(closed, "a head trickled for 14 s is still read");
        cr_assert(h_log_wait(&D, "refused: its request head did not arrive in time", H_TIMEOUT_MS));
        close(fd);
}
