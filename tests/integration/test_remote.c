/* Servers reached by URL (issue 17), run for real against it-http-server (http-server.c),
 * a Streamable HTTP MCP server of our own on the loopback that misbehaves on command:
 * listing and calling through the daemon with JSON and with event-stream answers, the
 * session id and protocol version sent, the GET stream and its reopening, DELETE at stop,
 * a credential as a header, a refused credential (failed, no retry), a lost session (a
 * new run), 5xx and a refused connection (backoff), an answer over the size limit, and a
 * call that stalls (requestTimeout). What the server received is its log of requests. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "http-client.h"
#include "servers.h"

static struct h_daemon D;
static char T[64];           /* this test's own directory */
static char SLOG[128];       /* the fake server's log of requests */
static pid_t SERVER;         /* the fake server, 0 when none */
static int PORT;

static void stop_server(void) {
        if (SERVER > 0) {
                kill(SERVER, SIGKILL);
                waitpid(SERVER, NULL, 0);
        }
        SERVER = 0;
}

static void setup(void) {
        strcpy(T, "/tmp/mcpvisor-http-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        snprintf(SLOG, sizeof SLOG, "%s/server.log", T);
        servers_reset(&D);
}

static void teardown(void) {
        servers_teardown();
        stop_server();
        h_remove_tree(T);
}

TestSuite(http, .init = setup, .fini = teardown, .timeout = 60);

static int read_port(const char *path) {
        FILE *f = fopen(path, "re");
        int port = 0;

        if (!f)
                return 0;
        if (fscanf(f, "%d", &port) != 1)
                port = 0;
        fclose(f);
        return port;
}

/* Starts the fake server with more arguments (NULL-terminated); waits for its port. */
static void start_server(const char *const *args) {
        char portfile[128];
        const char *argv[16] = { IT_HTTP_SERVER_PATH, "--port-file", portfile, "--log", SLOG };
        size_t n = 5;
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        snprintf(portfile, sizeof portfile, "%s/port", T);
        unlink(portfile);
        for (; args && *args && n < 15; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        SERVER = fork();
        cr_assert_geq(SERVER, 0);
        if (SERVER == 0) {
                execv(argv[0], (char *const *)argv);
                _exit(127);
        }
        while ((PORT = read_port(portfile)) == 0 && h_now_ms() < deadline)
                usleep(10000); /* polling a file with a deadline */
        cr_assert_gt(PORT, 0, "the fake HTTP server did not start");
}

/* Occurrences of needle in the fake server's log. */
static unsigned server_count(const char *needle) {
        FILE *f = fopen(SLOG, "re");
        char line[1024];
        unsigned n = 0;

        if (!f)
                return 0;
        while (fgets(line, sizeof line, f))
                if (strstr(line, needle))
                        n++;
        fclose(f);
        return n;
}

/* Waits until needle is in the fake server's log at least n times, draining the daemon. */
static bool server_wait(const char *needle, unsigned n) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        while (server_count(needle) < n) {
                if (h_now_ms() > deadline)
                        return false;
                h_notify_drain(&D);
                usleep(10000);
        }
        return true;
}

/* An entry "remote" for the fake server; keys are more JSON members ("" for none). */
static void add_remote(const char *keys) {
        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:%d/mcp\"%s%s}", PORT, keys[0] ? "," : "",
                  keys);
}

/* Starts the daemon with the entries added, and a client once every server is ready. */
static struct h_client *start_and_open(void) {
        start(NULL);
        wait_all_ready(1);
        return cl_open();
}

static struct h_client *start_remote(const char *const *server_args, const char *keys) {
        start_server(server_args);
        add_remote(keys);
        return start_and_open();
}

static void expect_echo(struct h_client *c, const char *id, const char *text) {
        json_object *m = h_client_tool_call(c, id, "remote__echo", sf("{\"text\":\"%s\"}", text));

        cr_assert_str_eq(h_result_text(m), text, "%s", h_json_text(m));
        json_object_put(m);
}

Test(http, lists_and_calls_with_json_answers) {
        struct h_client *c = start_remote(NULL, "");
        json_object *m = h_client_call(c, "1", "tools/list", NULL);

        cr_assert(h_has_item(h_tool_names(m), "remote__echo"), "%s", h_json_text(m));
        cr_assert(h_has_item(h_tool_names(m), "remote__stall"));
        json_object_put(m);
        expect_echo(c, "2", "hello over http");
        /* the session and the negotiated version on everything after initialize */
        cr_assert_eq(server_count("POST initialize sess=- proto=-"), 1);
        cr_assert_eq(server_count("POST notifications/initialized sess=s1 proto=2025-06-18"), 1);
        cr_assert_eq(server_count("POST tools/call sess=s1 proto=2025-06-18"), 1);
        cr_assert_eq(server_count("accept=application/json, text/event-stream"), server_count("POST "));
        h_client_close(c);
}

/* A modern client's call to a legacy server reached by URL goes in the server's era: the
 * session's negotiated version as its MCP-Protocol-Version (the client's 2026-07-28 there
 * is refused 400 by a legacy server), its _meta without the modern era's members (the
 * client's progressToken, made the daemon's, kept), and the client gets its answer. */
Test(http, modern_client_calls_a_legacy_server) {
        struct h_conn *c;
        json_object *r;
        const char *text;

        start_server(NULL);
        add_remote("");
        start(NULL);
        wait_all_ready(1);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__meta\","
                  "\"arguments\":{},\"_meta\":{\"progressToken\":\"p\",\"io.modelcontextprotocol/protocolVersion\":"
                  "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{},"
                  "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"agent\",\"version\":\"1\"}}}}\n");
        r = h_recv(c, H_TIMEOUT_MS);
        text = h_str(r, "result.content.0.text");
        cr_assert_not_null(text, "%s", h_json_text(r));
        cr_assert_not_null(strstr(text, "\"progressToken\""), "%s", text);
        cr_assert_null(strstr(text, "io.modelcontextprotocol/"), "%s", text);
        json_object_put(r);
        cr_assert_eq(server_count("REFUSED"), 0, "the server refused a version header");
        cr_assert_eq(server_count("POST tools/call sess=s1 proto=2025-06-18"), 1);
        h_close(c);
}

/* The same through the HTTP front door: a modern client's POST (no session) reaches the
 * legacy server in its session's version, and is answered. */
Test(http, modern_http_client_calls_a_legacy_server) {
        static const char token[] = "it-token-0123456789abcdef0123456789";
        const char *env[2] = { sf("CREDENTIALS_DIRECTORY=%s", T), NULL };
        struct ht_answer a;
        unsigned port = ht_free_port();
        FILE *f;

        cr_assert_not_null(f = fopen(sf("%s/ci-token", T), "w"));
        fprintf(f, "%s\n", token);
        fclose(f);
        start_server(NULL);
        add_remote("");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":[{\"token\":{\"credential\":\"ci-token\"},"
                        "\"user\":%u}]}",
                        port, (unsigned)getuid()));
        start(env);
        wait_all_ready(1);
        ht_once(port, "POST", "/mcp",
                sf("Authorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, "
                   "text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                   "Mcp-Name: remote__meta\r\n",
                   token),
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__meta\","
                "\"arguments\":{},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                "\"io.modelcontextprotocol/clientCapabilities\":{},"
                "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"agent\",\"version\":\"1\"}}}}",
                &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_not_null(strstr(a.body, "\"result\""), "%s", a.body);
        cr_assert_null(strstr(a.body, "io.modelcontextprotocol"), "%s", a.body);
        ht_answer_done(&a);
        cr_assert_eq(server_count("REFUSED"), 0, "the server refused a version header");
        cr_assert_eq(server_count("POST tools/call sess=s1 proto=2025-06-18"), 1);
}

Test(http, event_stream_answers) {
        struct h_client *c = start_remote((const char *const[]){ "--sse", NULL }, "");

        expect_echo(c, "1", "hello over sse");
        expect_echo(c, "2", "again");
        h_client_close(c);
}

Test(http, stop_deletes_the_session) {
        struct h_client *c = start_remote(NULL, "");

        expect_echo(c, "1", "x");
        h_client_close(c);
        cr_assert_eq(h_stop_draining(&D, SIGTERM, H_TIMEOUT_MS), 0);
        cr_assert(server_wait("DELETE sess=s1", 1));
}

/* A server reached by URL run per client: each client's instance is a session of its own,
 * ended (DELETE) when its client leaves. */
Test(http, per_client_instances_have_sessions_of_their_own) {
        start_server((const char *const[]){ "--many-sessions", NULL });
        add_remote("\"instances\":\"per-client\"");
        start(NULL);
        wait_all_ready(0);
        struct h_client *a = cl_open(), *b = cl_open();

        expect_echo(a, "1", "from a");
        expect_echo(b, "1", "from b");
        cr_assert_eq(server_count("POST initialize sess=- "), 2, "not a session per client");
        cr_assert_eq(server_count("POST tools/call sess=s1 "), 1);
        cr_assert_eq(server_count("POST tools/call sess=s2 "), 1);
        h_client_close(a);
        cr_assert(server_wait("DELETE sess=s", 1), "a's session outlived a");
        expect_echo(b, "2", "b goes on");
        cr_assert_eq(server_count("DELETE sess=s"), 1);
        h_client_close(b);
}

Test(http, credential_header) {
        char creds[128];
        FILE *f;

        snprintf(creds, sizeof creds, "%s/creds", T);
        cr_assert_eq(mkdir(creds, 0700), 0);
        f = fopen(sf("%s/tok", creds), "we");
        fputs("s3cret\n", f);
        fclose(f);
        start_server(NULL);
        add_remote("\"headers\":{\"Authorization\":{\"credential\":\"tok\",\"format\":\"Bearer %s\"}}");
        start((const char *const[]){ sf("CREDENTIALS_DIRECTORY=%s", creds), NULL });
        wait_all_ready(1);
        cr_assert_geq(server_count("POST initialize sess=- proto=- auth=Bearer s3cret"), 1);
        cr_assert_eq(h_log_count(&D, "s3cret"), 0, "a secret in the daemon's log");
}

/* 401: failed at once, with words saying the credential was refused, and no retries. */
Test(http, refused_credential_fails_without_retry) {
        start_server((const char *const[]){ "--status", "401", NULL });
        add_remote("\"restartDelay\":0.1");
        start(NULL);
        cr_assert(h_log_wait(&D, "-> failed", H_TIMEOUT_MS), "the server did not fail");
        cr_assert_geq(h_log_count(&D, "HTTP 401"), 1);
        cr_assert_geq(h_log_count(&D, "refused its credential"), 1);
        h_notify_drain(&D);
        usleep(300000); /* restartDelay three times over: a retry would have come */
        /* the first POST (the era's probe) was refused: nothing more */
        cr_assert_eq(server_count("POST "), 1, "retried a refused credential");
}

/* 503: a run that ends as a crash does, restarted with backoff. */
Test(http, server_error_backs_off) {
        start_server((const char *const[]){ "--status", "503", NULL });
        add_remote("\"restartDelay\":0.1");
        start(NULL);
        cr_assert(h_log_wait(&D, "-> backoff", H_TIMEOUT_MS));
        cr_assert_geq(h_log_count(&D, "HTTP 503"), 1);
        cr_assert(server_wait("POST initialize", 2), "not restarted");
}

Test(http, refused_connection_backs_off) {
        start_server(NULL);
        stop_server(); /* its port is closed now */
        add_remote("\"restartDelay\":0.1");
        start(NULL);
        cr_assert(h_log_wait(&D, "-> backoff", H_TIMEOUT_MS));
        cr_assert_geq(h_log_count(&D, "Couldn't connect"), 1);
}

/* A 404 on the session: the run ends, the next one initializes again, and calls work. */
Test(http, lost_session_reinitializes) {
        struct h_client *c = start_remote(NULL, "\"restartDelay\":0.1");
        json_object *m;

        m = h_client_tool_call(c, "1", "remote__lose_session", "{}");
        json_object_put(m);
        m = h_client_tool_call(c, "2", "remote__echo", "{\"text\":\"x\"}");
        cr_assert_neq(h_error_code(m), 0, "%s", h_json_text(m));
        cr_assert(strstr(h_json_text(m), "HTTP 404"), "the error names the status: %s", h_json_text(m));
        json_object_put(m);
        cr_assert(server_wait("POST initialize", 2));
        cr_assert(h_log_count_wait(&D, "-> ready", 2, H_TIMEOUT_MS));
        expect_echo(c, "3", "after the new session");
        cr_assert_geq(server_count("POST tools/call sess=s2"), 1);
        h_client_close(c);
}

/* A client whose call for an answer over maxServerMessageSize (64 KiB here) failed; the
 * fake server started with server_args. */
static struct h_client *oversize_call_failed(const char *const *server_args) {
        struct h_client *c;
        json_object *m;

        set_settings("\"maxServerMessageSize\":65536");
        c = start_remote(server_args, "");
        m = h_client_tool_call(c, "1", "remote__big", "{\"bytes\":200000}");
        cr_assert_neq(h_error_code(m), 0, "%s", h_json_text(m));
        json_object_put(m);
        return c;
}

/* An answer over maxServerMessageSize fails its call; the session stands. */
Test(http, oversize_answer_fails_the_call) {
        struct h_client *c = oversize_call_failed(NULL);
        json_object *m = h_client_tool_call(c, "2", "remote__big", "{\"bytes\":1000}");

        cr_assert_eq(h_error_code(m), 0, "%s", h_json_text(m));
        json_object_put(m);
        expect_echo(c, "3", "still here");
        cr_assert_eq(server_count("POST initialize"), 1);
        h_client_close(c);
}

Test(http, oversize_event_fails_the_call) {
        struct h_client *c = oversize_call_failed((const char *const[]){ "--sse", NULL });

        expect_echo(c, "2", "still here");
        h_client_close(c);
}

/* A call the server never answers: requestTimeout answers it; the others go on. */
Test(http, stalled_call_times_out) {
        struct h_client *c = start_remote(NULL, "\"requestTimeout\":0.5");
        json_object *m = h_client_tool_call(c, "1", "remote__stall", "{}");

        cr_assert_neq(h_error_code(m), 0, "%s", h_json_text(m));
        json_object_put(m);
        expect_echo(c, "2", "not stuck");
        h_client_close(c);
}

/* The id the fake server got a call of tool under (its log's "tool=NAME" line), or -1. */
static long long server_call_id(const char *tool) {
        FILE *f = fopen(SLOG, "re");
        char line[1024], *at;
        long long id = -1;

        if (!f)
                return -1;
        while (id < 0 && fgets(line, sizeof line, f))
                if (strstr(line, sf(" tool=%s", tool)) && (at = strstr(line, " id=")))
                        id = strtoll(at + 4, NULL, 10);
        fclose(f);
        return id;
}

/* Waits until the fake server saw the connection close on which request id was held. */
static bool closed_wait(long long id) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        const char *end = sf(" id=%lld\n", id);
        char line[1024];
        bool seen = false;

        while (!seen && h_now_ms() < deadline) {
                FILE *f = fopen(SLOG, "re");

                while (f && !seen && fgets(line, sizeof line, f))
                        seen = strncmp(line, "CLOSED ", 7) == 0 && strlen(line) >= strlen(end) &&
                               strcmp(line + strlen(line) - strlen(end), end) == 0;
                if (f)
                        fclose(f);
                h_notify_drain(&D);
                if (!seen)
                        usleep(10000);
        }
        return seen;
}

/* A call given up is cancelled at the server under the id the server knows, and its POST,
 * which would carry the answer, is ended: the server sees its connection close. The
 * server still answers the client's next call, next_id. */
static void expect_cancelled_at_the_server(struct h_client *c, const char *next_id) {
        long long id;

        cr_assert(server_wait(" tool=stall", 1), "the call did not reach the server");
        id = server_call_id("stall");
        cr_assert_geq(id, 0);
        cr_assert(server_wait(sf("POST notifications/cancelled sess=s1 proto=2025-06-18"), 1), "no cancellation sent");
        cr_assert_eq(server_count(sf(" requestId=%lld", id)), 1, "the cancellation names another id");
        cr_assert(closed_wait(id), "the call's POST was left open");
        cr_assert_eq(server_count("CLOSED "), 1, "another connection closed too");
        expect_echo(c, next_id, "not stuck");
}

/* A server's request that comes on a call's own event stream is that call's (Streamable
 * HTTP: such messages relate to the originating request): with another client's call in
 * flight there too, which over stdio would leave it to no one, it reaches the client that
 * called, and that client's answer reaches the server and ends the call. */
Test(http, a_request_on_a_calls_stream_is_that_calls) {
        static const char caps[] = "{\"elicitation\":{}}";
        struct h_client *x, *y;
        json_object *u, *r;

        start_server(NULL);
        add_remote("");
        start(NULL);
        wait_all_ready(1);
        x = cl_open_with(caps);
        y = cl_open_with(caps);
        h_client_tool_request(y, "\"s\"", "remote__stall", "{}");
        cr_assert(server_wait(" tool=stall", 1), "the call did not reach the server");
        h_client_tool_request(x, "\"a\"", "remote__ask",
                              "{\"method\":\"elicitation/create\",\"params\":{\"message\":\"Your name?\","
                              "\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}");
        u = h_take(x, h_is_method, "elicitation/create", H_TIMEOUT_MS);
        cr_assert_not_null(u, "the request made for x's call did not reach x");
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"action\":\"accept\",\"content\":{\"n\":\"x\"}}}\n",
                h_json_text(h_get(u, "id")));
        r = h_client_answer(x, "\"a\"");
        cr_assert(strstr(h_result_text(r), "\"action\":\"accept\""), "%s", h_json_text(r));
        cr_assert_eq(server_count("RESPONSE ask-1\n"), 1, "the server got x's answer once");
        json_object_put(r);
        json_object_put(u);
        json_object_put(h_client_call(y, "\"p\"", "ping", NULL));
        u = h_take(y, h_is_method, "elicitation/create", 0);
        cr_assert_null(u, "the other client was asked: %s", u ? h_json_text(u) : "");
        h_client_close(x);
        h_client_close(y);
}

/* A client whose call of the fake's "stall" (id 1) has reached the server, which opens no
 * GET stream (so the only connection to close is the call's); keys as add_remote()'s. */
static struct h_client *holding_a_stalled_call(const char *keys) {
        struct h_client *c = start_remote((const char *const[]){ "--no-get", NULL }, keys);

        h_client_tool_request(c, "1", "remote__stall", "{}");
        cr_assert(server_wait(" tool=stall", 1), "the call did not reach the server");
        return c;
}

static void cancel(struct h_client *c, const char *id) {
        h_sendf(c->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%s}}\n", id);
}

Test(http, client_cancel_ends_the_post) {
        struct h_client *c = holding_a_stalled_call("");
        json_object *m;

        cancel(c, "1");
        expect_cancelled_at_the_server(c, "2");
        m = h_take(c, h_is_answer, "1", 300);
        cr_assert_null(m, "a cancelled call was answered: %s", m ? h_json_text(m) : "");
        h_client_close(c);
}

/* A call cancelled while it still waits for a connection (maxConnections 1, taken by the
 * stalled call) never reaches the server, nor does its cancellation. */
Test(http, cancel_before_sending_sends_nothing) {
        struct h_client *c = holding_a_stalled_call("\"maxConnections\":1");

        h_client_tool_request(c, "2", "remote__echo", "{\"text\":\"never sent\"}");
        cancel(c, "2");
        /* answered by the daemon after it took the cancellation */
        json_object_put(h_client_call(c, "3", "ping", NULL));
        cancel(c, "1");
        expect_cancelled_at_the_server(c, "4");
        cr_assert_eq(server_count("POST tools/call"), 2, "the stalled call and the last echo only");
        cr_assert_eq(server_count("POST notifications/cancelled"), 1);
        h_client_close(c);
}

Test(http, timed_out_call_ends_the_post) {
        struct h_client *c = start_remote((const char *const[]){ "--no-get", NULL }, "\"requestTimeout\":0.5");
        json_object *m = h_client_tool_call(c, "1", "remote__stall", "{}");

        cr_assert(strstr(h_json_text(m), "requestTimeout"), "%s", h_json_text(m));
        json_object_put(m);
        expect_cancelled_at_the_server(c, "2");
        h_client_close(c);
}

/* The most connections the fake server had open at once ("OPEN n=K" lines). */
static unsigned server_peak_connections(void) {
        FILE *f = fopen(SLOG, "re");
        char line[1024];
        unsigned peak = 0, n;

        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "OPEN n=%u", &n) == 1 && n > peak)
                        peak = n;
        if (f)
                fclose(f);
        return peak;
}

/* Ten slow calls at once with maxConnections 2: all answered, over at most two connections
 * (the GET stream, which would be one more, is refused here). */
static void slow_calls_over(struct h_client *c, unsigned calls) {
        for (unsigned i = 1; i <= calls; i++)
                h_client_tool_request(c, sf("%u", i), "remote__slow", "{\"ms\":200}");
        for (unsigned i = 1; i <= calls; i++) {
                json_object *m = h_client_answer(c, sf("%u", i));

                cr_assert_str_eq(h_result_text(m), "slow done", "%s", h_json_text(m));
                json_object_put(m);
        }
        cr_assert_eq(server_count(" tool=slow"), calls);
}

Test(http, max_connections_bound_the_connections) {
        struct h_client *c = start_remote((const char *const[]){ "--no-get", NULL }, "\"maxConnections\":2");

        slow_calls_over(c, 10);
        cr_assert_eq(server_peak_connections(), 2, "peak %u", server_peak_connections());
        h_client_close(c);
}

/* The GET stream is one connection more than maxConnections. */
Test(http, max_connections_and_the_get_stream) {
        struct h_client *c = start_remote(NULL, "\"maxConnections\":2");

        cr_assert(server_wait("GET sess=s1", 1));
        slow_calls_over(c, 10);
        cr_assert_eq(server_peak_connections(), 3, "peak %u", server_peak_connections());
        h_client_close(c);
}

/* ---- real sizes ---- */

/* len bytes (a multiple of 64) of text that JSON must escape and UTF-8 must keep whole,
 * each 64 bytes numbered so that a piece lost, doubled or moved shows. */
static char *varied_text(size_t len) {
        static const char tail[] = "\"q\" \\ \t\n caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e </x> {}[]:,";
        char *text = malloc(len + 1);

        cr_assert_not_null(text);
        cr_assert_eq(len % 64, 0);
        for (size_t i = 0; i < len / 64; i++) {
                char *p = text + i * 64;
                int n = snprintf(p, 65, "%08zx", i);

                memcpy(p + n, tail, sizeof tail - 1);
                memset(p + n + sizeof tail - 1, 'a' + (char)(i % 26), 64 - (size_t)n - (sizeof tail - 1));
        }
        text[len] = '\0';
        return text;
}

/* tools/call with 4 MiB of arguments whose result is 8 MiB (the fake's "double"), each
 * byte of both kept. */
static void large_call_both_ways(struct h_client *c) {
        const size_t len = 4 << 20;
        char *text = varied_text(len), *twice = malloc(2 * len + 1);
        json_object *arg = json_object_new_object(), *m;

        memcpy(twice, text, len);
        memcpy(twice + len, text, len);
        twice[2 * len] = '\0';
        json_object_object_add(arg, "text", json_object_new_string_len(text, (int)len));
        h_client_tool_request(c, "1", "remote__double", json_object_to_json_string_ext(arg, JSON_C_TO_STRING_PLAIN));
        m = h_client_answer(c, "1");
        cr_assert_eq(strlen(h_result_text(m)), 2 * len, "%.300s", h_json_text(m));
        cr_assert(memcmp(h_result_text(m), twice, 2 * len) == 0, "the result's bytes differ");
        json_object_put(m);
        json_object_put(arg);
        free(text);
        free(twice);
        expect_echo(c, "2", "after the large call");
}

Test(http, large_arguments_and_result_as_json) {
        struct h_client *c = start_remote(NULL, "");

        large_call_both_ways(c);
        h_client_close(c);
}

Test(http, large_arguments_and_result_as_an_event) {
        struct h_client *c = start_remote((const char *const[]){ "--sse", NULL }, "");

        large_call_both_ways(c);
        h_client_close(c);
}

/* 500 tools more, in the server's pages of 100: all listed through the daemon, in the
 * daemon's own pages of listPageSize (200 here), as a program's are. */
Test(http, five_hundred_tools_paged) {
        struct h_client *c;
        json_object *m;
        char cursor[256] = "";
        unsigned pages = 0, tools = 0;

        set_settings("\"listPageSize\":200");
        c = start_remote((const char *const[]){ "--tools", "500", NULL }, "");
        cr_assert_eq(server_count("POST tools/list"), 6, "the server's 6 pages were not all read");
        do {
                m = h_client_call(c, sf("%u", 100 + pages), "tools/list",
                                  cursor[0] ? sf("{\"cursor\":\"%s\"}", cursor) : NULL);
                json_object *list = h_get(m, "result.tools");

                cr_assert_not_null(list, "%s", h_json_text(m));
                for (size_t i = 0; i < json_object_array_length(list); i++) {
                        const char *name = h_str(json_object_array_get_idx(list, i), "name");

                        cr_assert(strncmp(name, "remote__", 8) == 0, "%s", name);
                        tools++;
                }
                cr_assert_leq(json_object_array_length(list), 200);
                snprintf(cursor, sizeof cursor, "%s", h_get(m, "result.nextCursor") ? h_str(m, "result.nextCursor") : "");
                json_object_put(m);
                pages++;
        } while (cursor[0]);
        cr_assert_eq(tools, 519, "500 tools and the fake's own 19");
        cr_assert_eq(pages, 3);
        m = h_client_tool_call(c, "2", "remote__t499", "{}");
        cr_assert_str_eq(h_result_text(m), "unknown tool"); /* reached the server by its name */
        json_object_put(m);
        h_client_close(c);
}

/* A server that stops answering anything: health pings fail, and the run is replaced by a
 * new session, whose calls are answered again. */
Test(http, hung_server_caught_by_health) {
        struct h_client *c = start_remote(NULL, "\"healthInterval\":0.2,\"healthTimeout\":0.2,\"healthFailures\":2,"
                                                "\"restartDelay\":0.1,\"stopTimeout\":0.2");
        json_object *m;

        h_client_tool_request(c, "1", "remote__freeze", "{}");
        cr_assert(h_log_wait(&D, "-> unhealthy", H_TIMEOUT_MS), "no failed ping");
        m = h_client_answer(c, "1");
        cr_assert_neq(h_error_code(m), 0, "%s", h_json_text(m));
        json_object_put(m);
        cr_assert(server_wait("POST initialize", 2), "no new session");
        cr_assert(h_log_count_wait(&D, "-> ready", 2, H_TIMEOUT_MS));
        expect_echo(c, "2", "answering again");
        h_client_close(c);
}

/* The GET stream: opened after initialization, its notifications heard (the daemon lists
 * the tools again), and opened again with Last-Event-ID when the server drops it. */
Test(http, get_stream_and_its_reopening) {
        struct h_client *c = start_remote(NULL, "");
        json_object *m;

        cr_assert(server_wait("GET sess=s1 last=-", 1), "no GET stream");
        m = h_client_tool_call(c, "1", "remote__notify", "{}");
        cr_assert_str_eq(h_result_text(m), "sent");
        json_object_put(m);
        cr_assert(server_wait("POST tools/list", 2), "the notification was not heard");
        m = h_client_tool_call(c, "2", "remote__drop_get", "{}");
        json_object_put(m);
        cr_assert(server_wait("GET sess=s1 last=1", 1), "not reopened with Last-Event-ID");
        h_client_close(c);
}

Test(http, no_get_stream_is_fine) {
        struct h_client *c = start_remote((const char *const[]){ "--no-get", NULL }, "");

        cr_assert(server_wait("GET", 1));
        expect_echo(c, "1", "x");
        h_notify_drain(&D);
        usleep(1500000); /* past the reopening delay: a 405 is not retried */
        cr_assert_eq(server_count("GET"), 1);
        h_client_close(c);
}

/* The control socket shows the URL where a process has its pid. */
Test(http, status_shows_the_url) {
        struct h_client *c = start_remote(NULL, "");
        json_object *st = h_control(&D, "status", NULL);
        json_object *servers = h_get(st, "result.servers"), *row = json_object_array_get_idx(servers, 0);

        cr_assert_str_eq(h_str(row, "url"), sf("http://127.0.0.1:%d/mcp", PORT), "%s", h_json_text(st));
        cr_assert_str_eq(h_str(row, "launcher"), "http");
        cr_assert_null(h_get(row, "pid"));
        /* no stderr: its log is the daemon's lines about it */
        cr_assert(json_object_get_type(h_get(row, "stderr")) == json_type_boolean && !json_object_get_boolean(h_get(row, "stderr")),
                  "%s", h_json_text(st));
        json_object_put(st);
        /* mcpvisorctl status: the URL in the row, where a process has its pid */
        struct proc p = { 0 };
        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "status", NULL }, NULL);
        proc_close_stdin(&p);
        cr_assert_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "%s", p.errbuf);
        cr_assert(strstr(p.outbuf, sf("remote  ready")) && strstr(p.outbuf, sf("http://127.0.0.1:%d/mcp", PORT)), "%s",
                  p.outbuf);
        proc_free(&p);
        h_client_close(c);
}

/* A URL's query may hold a credential (?api_key=): the status answer, mcpvisorctl status
 * and the logs but the one line of full detail show the URL without it. */
Test(http, status_hides_the_urls_query) {
        start_server(NULL);
        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:%d/mcp?api_key=sekrit#frag\"}", PORT);
        start(NULL);
        json_object *st = h_control(&D, "status", NULL);
        json_object *row = json_object_array_get_idx(h_get(st, "result.servers"), 0);

        cr_assert_str_eq(h_str(row, "url"), sf("http://127.0.0.1:%d/mcp?…", PORT), "%s", h_json_text(st));
        cr_assert_null(strstr(h_json_text(st), "sekrit"), "%s", h_json_text(st));
        json_object_put(st);
        struct proc p = { 0 };
        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "status", NULL }, NULL);
        proc_close_stdin(&p);
        proc_wait(&p, H_TIMEOUT_MS); /* not 0 while the server is not ready */
        cr_assert(strstr(p.outbuf, sf("http://127.0.0.1:%d/mcp?", PORT)), "%s", p.outbuf);
        cr_assert_null(strstr(p.outbuf, "sekrit"), "%s", p.outbuf);
        proc_free(&p);
}

/* The legacy HTTP+SSE transport, asked for: the stream first, POSTs to its endpoint,
 * answers on the stream. */
Test(http, legacy_sse) {
        struct h_client *c;

        start_server((const char *const[]){ "--legacy", NULL });
        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:%d/sse\",\"type\":\"sse\"}", PORT);
        c = start_and_open();
        expect_echo(c, "1", "over the legacy transport");
        cr_assert_eq(server_count("POST initialize"), 1, "the first POST went to the endpoint");
        cr_assert_eq(server_count("GET"), 1);
        h_client_close(c);
}

/* No "type": Streamable HTTP first; a 405 to initialize, and the legacy transport works. */
Test(http, falls_back_to_legacy_sse) {
        struct h_client *c = start_remote((const char *const[]){ "--legacy", NULL }, "");

        expect_echo(c, "1", "after the fallback");
        cr_assert_geq(h_log_count(&D, "trying the legacy HTTP+SSE transport"), 1);
        cr_assert_eq(server_count("POST initialize"), 2, "once refused, once on the endpoint");
        h_client_close(c);
}

/* The legacy server closes its stream: the session is gone, the run ends and a new one starts. */
Test(http, legacy_stream_end_restarts) {
        struct h_client *c;
        json_object *m;

        start_server((const char *const[]){ "--legacy", NULL });
        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:%d/sse\",\"type\":\"sse\",\"restartDelay\":0.1}", PORT);
        c = start_and_open();
        /* its answer travels on the stream it drops */
        h_client_tool_request(c, "1", "remote__drop_get", "{}");
        cr_assert(server_wait("GET", 2), "no new stream");
        cr_assert(h_log_count_wait(&D, "-> ready", 2, H_TIMEOUT_MS));
        m = h_client_answer(c, "1");
        json_object_put(m);
        expect_echo(c, "2", "again");
        h_client_close(c);
}

/* "proxy": the requests go to it, for a host only it can reach (the fake server takes
 * the absolute-form requests a proxy gets). */
Test(http, proxy_carries_the_session) {
        struct h_client *c;

        start_server(NULL);
        add_entry("\"remote\":{\"url\":\"http://mcp.invalid:9/mcp\",\"proxy\":\"http://127.0.0.1:%d\"}", PORT);
        c = start_and_open();
        expect_echo(c, "1", "through the proxy");
        h_client_close(c);
}

/* No libcurl (a test-only name in MCPVISOR_TEST_LIBCURL stands for it): the server is
 * failed, its cause naming the library and the package to install; the daemon goes on,
 * its other servers too. */
Test(http, missing_libcurl_fails_the_server_saying_so) {
        struct h_client *c;
        json_object *st, *row;

        start_server(NULL);
        add_remote("\"restartDelay\":0.1");
        add_demo("local", "", "");
        start((const char *const[]){ "MCPVISOR_TEST_LIBCURL=libcurl-missing.so.4", NULL });
        cr_assert(h_log_wait(&D, "[remote] stopped -> failed: cannot start: cannot load libcurl.so.4", H_TIMEOUT_MS),
                  "not failed");
        cr_assert_geq(h_log_count(&D, "libcurl.so.4"), 1);
        cr_assert_geq(h_log_count(&D, "install the package libcurl4"), 1);
        st = h_control(&D, "status", NULL);
        row = json_object_array_get_idx(h_get(st, "result.servers"), 0);
        cr_assert_str_eq(h_str(row, "name"), "remote", "%s", h_json_text(st));
        cr_assert_str_eq(h_str(row, "state"), "failed", "%s", h_json_text(st));
        cr_assert(strstr(h_json_text(row), "install the package libcurl4"), "%s", h_json_text(row));
        json_object_put(st);
        cr_assert(h_log_wait(&D, "[local] starting -> ready", H_TIMEOUT_MS));
        c = cl_open();
        json_object_put(h_client_call(c, "1", "ping", NULL));
        h_client_close(c);
        cr_assert_eq(server_count("POST"), 0);
}

/* ---- TLS, with a CA made here ---- */

static void start_tls_server(void) {
        make_ca(T, "test-ca");
        make_server_certificate(T, "test-ca");
        start_server((const char *const[]){ "--tls", sf("%s/srv.pem", T), sf("%s/srv.key", T), NULL });
}

Test(http, tls_with_the_ca_of_ca_file) {
        struct h_client *c;

        start_tls_server();
        add_entry("\"remote\":{\"url\":\"https://127.0.0.1:%d/mcp\",\"caFile\":\"%s/test-ca.pem\"}", PORT, T);
        c = start_and_open();
        expect_echo(c, "1", "over TLS");
        h_client_close(c);
}

/* A certificate of another CA: the run fails with curl's reason and what to do about it. */
Test(http, tls_wrong_ca_says_so) {
        start_tls_server();
        make_ca(T, "other-ca");
        add_entry("\"remote\":{\"url\":\"https://127.0.0.1:%d/mcp\",\"caFile\":\"%s/other-ca.pem\"}", PORT, T);
        start(NULL);
        cr_assert(h_log_wait(&D, "-> backoff", H_TIMEOUT_MS));
        cr_assert_geq(h_log_count(&D, "SSL certificate problem"), 1);
        cr_assert_geq(h_log_count(&D, "signed by the CA in \"caFile\""), 1);
        cr_assert_eq(server_count("POST"), 0, "nothing was sent over an untrusted connection");
}

/* No caFile, and the system's CAs do not know the test's: the same, pointing at caFile. */
Test(http, tls_unknown_ca_points_at_ca_file) {
        start_tls_server();
        add_entry("\"remote\":{\"url\":\"https://127.0.0.1:%d/mcp\"}", PORT);
        start(NULL);
        cr_assert(h_log_wait(&D, "give its CA in \"caFile\"", H_TIMEOUT_MS));
}

/* insecure, on the loopback: no check of the certificate. */
Test(http, tls_insecure_on_loopback) {
        struct h_client *c;

        start_tls_server();
        add_entry("\"remote\":{\"url\":\"https://127.0.0.1:%d/mcp\",\"insecure\":true}", PORT);
        c = start_and_open();
        expect_echo(c, "1", "unchecked");
        h_client_close(c);
}

/* ---- boundaries: the credential stays on its origin, errors to clients carry no secret,
 * an answer that is not the response fails its call ---- */

/* A credentials directory with tok = "s3cret"; its path. */
static const char *credential_dir(void) {
        static char creds[128];
        FILE *f;

        snprintf(creds, sizeof creds, "%s/creds", T);
        cr_assert_eq(mkdir(creds, 0700), 0);
        f = fopen(sf("%s/tok", creds), "we");
        fputs("s3cret\n", f);
        fclose(f);
        return creds;
}

#define AUTH_HEADER "\"headers\":{\"Authorization\":{\"credential\":\"tok\",\"format\":\"Bearer %s\"}}"

/* The fake server with a second port, another origin (its number returned); args more. */
static int start_server_elsewhere(const char *first, const char *second) {
        const char *path = sf("%s/elsewhere", T);
        char keep[128];
        int port;

        snprintf(keep, sizeof keep, "%s", path);
        start_server((const char *const[]){ "--elsewhere-port-file", keep, first, second, NULL });
        port = read_port(keep);
        cr_assert_gt(port, 0);
        return port;
}

/* Every kind of request the transport makes carries the configured headers to their
 * origin: they are added by one function, for whatever request. */
Test(http, configured_headers_on_every_request_to_their_origin) {
        const char *creds = credential_dir();
        struct h_client *c;

        start_server(NULL);
        add_remote(AUTH_HEADER);
        start((const char *const[]){ sf("CREDENTIALS_DIRECTORY=%s", creds), NULL });
        wait_all_ready(1);
        c = cl_open();
        expect_echo(c, "1", "x");
        cr_assert(server_wait("GET sess=s1 last=- auth=Bearer s3cret", 1), "the GET stream went without the header");
        h_client_close(c);
        cr_assert_eq(h_stop_draining(&D, SIGTERM, H_TIMEOUT_MS), 0);
        cr_assert(server_wait("DELETE sess=s1 auth=Bearer s3cret", 1), "the DELETE went without the header");
        cr_assert_eq(server_count("POST "), server_count("auth=Bearer s3cret accept="), "a POST without the header");
}

/* A legacy stream whose "endpoint" is on another port: refused, the session ended, and
 * nothing (least of all the credential) is sent there. */
Test(http, legacy_endpoint_at_another_origin_is_refused) {
        const char *creds = credential_dir();
        int elsewhere = start_server_elsewhere("--legacy", NULL);

        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:%d/sse\",\"type\":\"sse\",\"restartDelay\":30,%s}", PORT,
                  AUTH_HEADER);
        start((const char *const[]){ sf("CREDENTIALS_DIRECTORY=%s", creds), NULL });
        cr_assert(h_log_wait(&D, "at another origin", H_TIMEOUT_MS), "the endpoint was not refused");
        cr_assert(h_log_wait(&D, "-> backoff", H_TIMEOUT_MS));
        cr_assert_eq(server_count(sf("host=127.0.0.1:%d", elsewhere)), 0, "a request went to the other origin");
        cr_assert_eq(server_count("POST "), 0);
        cr_assert_geq(server_count("GET sess=- last=- auth=Bearer s3cret"), 1, "the stream itself has the header");
        cr_assert_eq(h_log_count(&D, "s3cret"), 0, "a secret in the daemon's log");
}

/* A 3xx is an answer: never followed (the headers would go where it points); the call
 * fails at once naming the status, and the session stands. */
Test(http, redirect_is_not_followed) {
        const char *creds = credential_dir();
        int elsewhere = start_server_elsewhere(NULL, NULL);
        struct h_client *c;
        json_object *m;

        add_remote(AUTH_HEADER);
        start((const char *const[]){ sf("CREDENTIALS_DIRECTORY=%s", creds), NULL });
        wait_all_ready(1);
        c = cl_open();
        m = h_client_tool_call(c, "1", "remote__redirect", "{}");
        cr_assert(strstr(h_json_text(m), "server 'remote' answered the request with HTTP 307"), "%s", h_json_text(m));
        json_object_put(m);
        cr_assert_eq(server_count(sf("host=127.0.0.1:%d", elsewhere)), 0, "the redirect was followed");
        expect_echo(c, "2", "still here");
        h_client_close(c);
}

/* A server whose URL has a key in its query and whose refusals carry a body: clients read
 * the server's name, the status and fixed words; the URL and the body go to the journal. */
Test(http, errors_to_clients_carry_no_url_nor_body) {
        struct h_client *c;
        json_object *m;
        const char *text;

        start_server((const char *const[]){ "--status", "503", NULL });
        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:%d/mcp?api_key=k3y-in-query\",\"restartDelay\":30}", PORT);
        start(NULL);
        cr_assert(h_log_wait(&D, "-> backoff", H_TIMEOUT_MS));
        c = cl_open();
        m = h_client_tool_call(c, "1", "remote__echo", "{\"text\":\"x\"}");
        text = h_json_text(m);
        cr_assert_neq(h_error_code(m), 0, "%s", text);
        cr_assert(strstr(text, "'remote'") && strstr(text, "HTTP 503"), "the error names the server and status: %s", text);
        cr_assert_null(strstr(text, "k3y"), "the URL's query reached a client: %s", text);
        cr_assert_null(strstr(text, "body-s3cret"), "the server's body reached a client: %s", text);
        json_object_put(m);
        cr_assert_geq(h_log_count(&D, "body-s3cret"), 1, "the journal has the whole story");
        h_client_close(c);
}

/* Answers to a call that are not its response: each call fails at once (requestTimeout is
 * a minute), its error naming the server and what came back; the session stands. */
Test(http, answers_that_are_not_the_response_fail_the_call_at_once) {
        static const struct {
                const char *tool, *args, *words;
        } cases[] = {
                { "accepted", "{}", "HTTP 202 (application/json) and no body" },
                { "html", "{}", "HTTP 200 (text/html) and no message" },
                { "gzip", "{}", "HTTP 200 (application/json) and no response to it" },
                { "garbage", "{}", "HTTP 200 (application/json) and no response to it" },
                { "other_id", "{}", "HTTP 200 (application/json) and no response to it" },
                { "no_answer_events", "{}", "HTTP 200 (text/event-stream) and no response to it" },
                { "refuse", "{\"status\":429}", "HTTP 429" },
                { "refuse", "{\"status\":409}", "HTTP 409" },
        };
        struct h_client *c = start_remote(NULL, "\"requestTimeout\":60");

        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                long long t0 = h_now_ms();
                json_object *m = h_client_tool_call(c, sf("%zu", i + 1), sf("remote__%s", cases[i].tool), cases[i].args);
                const char *text = h_json_text(m);

                cr_assert_not_null(m, "%s: no answer", cases[i].tool);
                cr_assert_neq(h_error_code(m), 0, "%s: %s", cases[i].tool, text);
                cr_assert(strstr(text, sf("server 'remote' answered the request with %s", cases[i].words)), "%s: %s",
                          cases[i].tool, text);
                cr_assert_null(strstr(text, "body-s3cret"), "%s: the body reached the client: %s", cases[i].tool, text);
                cr_assert_lt(h_now_ms() - t0, 5000, "%s: not at once", cases[i].tool);
                json_object_put(m);
        }
        expect_echo(c, "100", "still here");
        cr_assert_eq(server_count("POST initialize"), 1, "the session did not stand");
        h_client_close(c);
}

/* Refused requests, many: each answered, nothing of them kept (the ASan build's leak
 * check at the daemon's exit sees any that is). */
Test(http, refused_requests_leave_nothing_behind) {
        struct h_client *c = start_remote(NULL, "");

        for (unsigned i = 1; i <= 50; i++) {
                json_object *m = h_client_tool_call(c, sf("%u", i), "remote__refuse", "{\"status\":429}");

                cr_assert(strstr(h_json_text(m), "HTTP 429"), "%s", h_json_text(m));
                json_object_put(m);
        }
        h_client_close(c);
        cr_assert_eq(h_stop_draining(&D, SIGTERM, H_TIMEOUT_MS), 0, "the daemon's exit (a leak under ASan)");
}

/* A modern server reached by URL: no session, no GET stream; the daemon's
 * subscriptions/listen held open on a POST of its own (not counted against the calls), and
 * the list change the server sends on it heard (its tools fetched again). */
Test(http, modern_server_heard_on_a_listen) {
        struct h_client *c = start_remote((const char *const[]){ "--modern", NULL }, "");
        json_object *m;

        cr_assert(server_wait("POST subscriptions/listen", 1), "no subscriptions/listen");
        cr_expect_eq(server_count("GET"), 0, "a modern server has no GET stream");
        expect_echo(c, "1", "x");
        m = h_client_tool_call(c, "2", "remote__notify", "{}");
        cr_assert_str_eq(h_result_text(m), "sent", "%s", h_json_text(m));
        json_object_put(m);
        cr_assert(server_wait("POST tools/list", 2), "the list change on the listen was not heard");
        expect_echo(c, "3", "y");
        h_client_close(c);
}

/* With maxConnections 1 the listen would hold the one connection: none is opened, said
 * once, and calls go through. */
Test(http, modern_server_with_one_connection_not_listened_to) {
        struct h_client *c = start_remote((const char *const[]){ "--modern", NULL }, "\"maxConnections\":1");

        expect_echo(c, "1", "x");
        expect_echo(c, "2", "y");
        cr_assert(h_log_wait(&D, "would hold its one connection (maxConnections 1)", H_TIMEOUT_MS));
        cr_expect_eq(server_count("POST subscriptions/listen"), 0);
        h_client_close(c);
}
