/* Clients that leave without a word, told apart, and ended by hand. HTTP clients rarely end
 * their sessions: at maxClientsPerUser the user's HTTP session idle the longest (no request
 * pending, no stream open) is ended to admit the new client, by socket or by HTTP, and
 * logged; a session in use never is, nor another user's. mcpvisorctl clients shows the name
 * and version each client gave itself (bounded, clean), its transport and last activity;
 * mcpvisorctl disconnect ends one; DELETE and the idle expiry release what a session held. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "http-client.h"
#include "servers.h"

#define ME "it-token-me-0123456789abcdef01234567"
#define OTHER "it-token-other-0123456789abcdef012345"
#define AUTH_ME "Authorization: Bearer " ME "\r\n"
#define AUTH_OTHER "Authorization: Bearer " OTHER "\r\n"
#define OTHER_UID 4242u
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define INITIALIZE_AS(info) \
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"," \
        "\"capabilities\":{},\"clientInfo\":" info "}}"
#define INITIALIZE INITIALIZE_AS("{\"name\":\"it-agent\",\"version\":\"1\"}")
#define TOOLS_LIST "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}"
/* With a progress token: its progress opens the POST's event stream (an answer with nothing
 * before it would come as JSON, with nothing sent until then). */
#define SLEEP_CALL "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\",\"arguments\":{\"ms\":60000},\"_meta\":{\"progressToken\":1}}}"
#define EVICTED "HTTP session idle for "
#define CTL_MS 20000
#define STREAM_BUF 4096

static struct h_daemon D;
static char creds[64];
static unsigned port;

static void write_credential(const char *id, const char *secret) {
        FILE *f = fopen(sf("%s/%s", creds, id), "w");

        cr_assert_not_null(f);
        fprintf(f, "%s\n", secret);
        fclose(f);
}

static void setup(void) {
        servers_reset(&D);
        signal(SIGPIPE, SIG_IGN);
        snprintf(creds, sizeof creds, "/tmp/mcpvisor-cl-XXXXXX");
        cr_assert_not_null(mkdtemp(creds));
        write_credential("me", ME);
        write_credential("other", OTHER);
        port = ht_free_port();
}

static void teardown(void) {
        servers_teardown();
        h_remove_tree(creds);
}

TestSuite(clients, .init = setup, .fini = teardown, .timeout = 120);

/* One demo server; HTTP on a free port with a token of ours and one of uid 4242; more
 * settings (JSON members, may be ""). */
static void start_clients(const char *more) {
        const char *env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };

        add_demo("demo", "", "");
        set_settings(sf("\"logLevel\":\"debug\",\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":["
                        "{\"token\":{\"credential\":\"me\"},\"user\":%u},{\"token\":{\"credential\":\"other\"},\"user\":%u}]}%s%s",
                        port, (unsigned)getuid(), OTHER_UID, more[0] ? "," : "", more));
        start(env);
        wait_all_ready(1);
}

/* initialize (body) and notifications/initialized as auth: 200 and the session's id in ret;
 * else the status of initialize's refusal. */
static int try_open_as(const char *auth, const char *body, char ret[64]) {
        struct ht_answer a;
        int status;

        h_notify_drain(&D); /* each session changes STATUS=: the daemon's datagrams must not queue up */
        ht_once(port, "POST", "/mcp", sf("%s" JSON_HEADERS, auth), body, &a);
        status = a.status;
        if (status == 200)
                cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", ret, 64), "no session id: %s", a.headers);
        ht_answer_done(&a);
        if (status != 200)
                return status;
        ht_once(port, "POST", "/mcp", sf("%s" JSON_HEADERS "Mcp-Session-Id: %s\r\n", auth, ret),
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        cr_assert_eq(a.status, 202);
        ht_answer_done(&a);
        return 200;
}

static void open_as(const char *auth, char ret[64]) {
        int status = try_open_as(auth, INITIALIZE, ret);

        cr_assert_eq(status, 200, "initialize: %d", status);
}

/* The status of a tools/list in session sid. */
static int list_status(const char *auth, const char *sid) {
        struct ht_answer a;
        int status;

        ht_once(port, "POST", "/mcp", sf("%s" JSON_HEADERS "Mcp-Session-Id: %s\r\n", auth, sid), TOOLS_LIST, &a);
        status = a.status;
        if (status == 200)
                cr_assert(strstr(a.body, "demo__echo"), "tools/list: %s", a.body);
        ht_answer_done(&a);
        return status;
}

/* A call that the demo server holds for a minute, POSTed on a connection of its own and
 * left waiting: its event stream's head read (its first progress), so the daemon holds it. */
static int pending_call(const char *auth, const char *sid) {
        char buf[STREAM_BUF] = "";
        int fd = ht_connect(port, NULL);

        dprintf(fd, "POST /mcp HTTP/1.1\r\nHost: x\r\n%s" JSON_HEADERS "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
                auth, sid, strlen(SLEEP_CALL), SLEEP_CALL);
        cr_assert(ht_stream_until(fd, "text/event-stream", buf, sizeof buf, H_TIMEOUT_MS), "call of %s: %s", sid, buf);
        return fd;
}

/* The session's GET stream, its head read. */
static int open_stream(const char *auth, const char *sid) {
        char buf[STREAM_BUF] = "";
        int fd = ht_connect(port, NULL);

        dprintf(fd, "GET /mcp HTTP/1.1\r\nHost: x\r\n%sAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", auth, sid);
        cr_assert(ht_stream_until(fd, "text/event-stream", buf, sizeof buf, H_TIMEOUT_MS), "stream of %s: %s", sid, buf);
        return fd;
}

/* The first line a new socket client reads after a ping: its answer when the daemon took
 * the connection, or the error line of one turned away. */
static json_object *socket_client_first_answer(struct h_conn *c) {
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        char *line = NULL;
        json_object *m;

        (void)!send(c->fd, ping, sizeof ping - 1, MSG_NOSIGNAL); /* one turned away may be closed already */
        while (!line && h_now_ms() < deadline) {
                h_notify_drain(&D);
                line = h_recv_line(c, 20);
        }
        cr_assert_not_null(line, "no answer within %d ms", H_TIMEOUT_MS);
        cr_assert_not_null(m = json_tokener_parse(line), "not JSON: %s", line);
        free(line);
        return m;
}

/* The daemon's clients answer: its rows (the answer in *ret, the caller's). */
static json_object *client_rows(json_object **ret) {
        *ret = h_control(&D, "clients", NULL);
        cr_assert_eq(h_error_code(*ret), 0, "clients: %s", h_json_text(*ret));
        return h_get(*ret, "result.clients");
}

static unsigned rows_of_uid(json_object *rows, unsigned uid) {
        unsigned n = 0;

        for (size_t i = 0; i < json_object_array_length(rows); i++)
                n += json_object_get_int64(h_get(json_object_array_get_idx(rows, i), "uid")) == uid;
        return n;
}

/* The first row of uid; fails when none. */
static json_object *row_of_uid(json_object *rows, unsigned uid) {
        for (size_t i = 0; i < json_object_array_length(rows); i++)
                if (json_object_get_int64(h_get(json_object_array_get_idx(rows, i), "uid")) == uid)
                        return json_object_array_get_idx(rows, i);
        cr_assert_fail("no client of uid %u in %s", uid, json_object_to_json_string(rows));
        return NULL;
}

/* The row whose field key is the string value; fails when none. */
static json_object *row_with(json_object *rows, const char *key, const char *value) {
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *row = json_object_array_get_idx(rows, i);
                const char *v = h_str(row, key);

                if (v && strcmp(v, value) == 0)
                        return row;
        }
        cr_assert_fail("no client with %s %s in %s", key, value, json_object_to_json_string(rows));
        return NULL;
}

/* mcpvisorctl args...: its exit status, its stdout and stderr into out and err (malloc'd). */
static int ctl(const char *const *args, char **out, char **err) {
        struct proc p;
        int status;

        proc_start(&p, &D, args, NULL);
        proc_close_stdin(&p);
        status = proc_wait(&p, CTL_MS);
        *out = strdup(p.outbuf);
        *err = strdup(p.errbuf);
        proc_free(&p);
        return status;
}

/* ---- abandoned HTTP sessions at maxClientsPerUser ---- */

#define LIMIT 64
#define ABANDONED 300

/* An agent run a few hundred times over HTTP, each run leaving its session behind, with
 * maxClientsPerUser 64: every run is admitted, each in place of the user's session idle the
 * longest, logged once each with its client id; then a new socket client and a new HTTP
 * client of that user too. Another user's idle sessions are not touched. */
Test(clients, abandoned_http_sessions_lock_no_one_out, .timeout = 240) {
        static char sid[ABANDONED][64];
        char other[2][64], fresh[64];
        struct h_conn *sock;
        json_object *answer, *rows, *m;
        int64_t first;
        char *line;

        start_clients(sf("\"maxClientsPerUser\":%d,\"maxHttpSessions\":4096", LIMIT));
        open_as(AUTH_OTHER, other[0]);
        open_as(AUTH_OTHER, other[1]);
        open_as(AUTH_ME, sid[0]);
        rows = client_rows(&answer);
        first = json_object_get_int64(h_get(row_of_uid(rows, getuid()), "id"));
        json_object_put(answer);
        for (int i = 1; i < ABANDONED; i++)
                open_as(AUTH_ME, sid[i]);
        cr_assert(h_log_count_wait(&D, EVICTED, ABANDONED - LIMIT, H_TIMEOUT_MS), "%u ended", h_log_count(&D, EVICTED));

        sock = h_connect(D.sock, H_TIMEOUT_MS);
        m = socket_client_first_answer(sock);
        cr_assert_eq(h_error_code(m), 0, "the socket client was turned away: %s", h_json_text(m));
        json_object_put(m);
        open_as(AUTH_ME, fresh);
        cr_assert(h_log_count_wait(&D, EVICTED, ABANDONED - LIMIT + 2, H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&D, EVICTED), ABANDONED - LIMIT + 2, "each one ended once");
        cr_assert_eq(h_log_count(&D, "maxClientsPerUser reached"), 0, "an HTTP client was refused");
        cr_assert_eq(h_log_count(&D, "turning away more until one closes"), 0, "a socket client was refused");
        /* Logged with the session's client id and how long it had been idle. */
        line = h_log_rest_wait(&D, sf("[client %lld] " EVICTED, (long long)first), H_TIMEOUT_MS);
        cr_assert_not_null(line, "%s", h_log_text(&D));
        cr_assert(strstr(line, sf(" s ended to admit a new client of uid %u (maxClientsPerUser %d)", (unsigned)getuid(), LIMIT)),
                  "%s", line);
        free(line);

        /* The least recently used went first: the oldest 238 (300 - 64 + 2) are gone, the
         * newest 62 still there, and the other user's two. */
        cr_assert_eq(list_status(AUTH_ME, sid[0]), 404);
        cr_assert_eq(list_status(AUTH_ME, sid[ABANDONED - LIMIT + 1]), 404);
        cr_assert_eq(list_status(AUTH_ME, sid[ABANDONED - LIMIT + 2]), 200);
        cr_assert_eq(list_status(AUTH_ME, sid[ABANDONED - 1]), 200);
        cr_assert_eq(list_status(AUTH_ME, fresh), 200);
        cr_assert_eq(list_status(AUTH_OTHER, other[0]), 200);
        cr_assert_eq(list_status(AUTH_OTHER, other[1]), 200);
        h_expect_result(sock, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");

        rows = client_rows(&answer);
        cr_assert_eq(rows_of_uid(rows, getuid()), LIMIT, "%s", h_json_text(rows));
        cr_assert_eq(rows_of_uid(rows, OTHER_UID), 2);
        json_object_put(answer);
        h_close(sock);
}

/* A session with a call pending or its GET stream open is in use: never ended for another.
 * With all three of the user's sessions in use, the new client is refused (429 over HTTP,
 * the error line on the socket); once a stream closes, that session is the one ended. */
Test(clients, sessions_in_use_are_never_ended) {
        char a[64], b[64], c[64], other[64], more[64];
        int call_fd, stream_b, stream_c;
        struct h_conn *sock;
        json_object *m;

        start_clients("\"maxClientsPerUser\":3");
        open_as(AUTH_OTHER, other);
        open_as(AUTH_ME, a);
        open_as(AUTH_ME, b);
        open_as(AUTH_ME, c);
        call_fd = pending_call(AUTH_ME, a);
        stream_b = open_stream(AUTH_ME, b);
        stream_c = open_stream(AUTH_ME, c);

        cr_assert_eq(try_open_as(AUTH_ME, INITIALIZE, more), 429);
        sock = h_connect(D.sock, H_TIMEOUT_MS);
        m = socket_client_first_answer(sock);
        cr_assert_neq(h_error_code(m), 0, "admitted past the limit: %s", h_json_text(m));
        cr_assert(strstr(h_str(m, "error.message"), "maxClientsPerUser 3"), "%s", h_json_text(m));
        json_object_put(m);
        h_close(sock);
        cr_assert_eq(h_log_count(&D, EVICTED), 0, "a session in use was ended:\n%s", h_log_text(&D));
        /* The other user is at 1 of 3: its own clients come and go as before. */
        cr_assert_eq(list_status(AUTH_OTHER, other), 200);
        open_as(AUTH_OTHER, more);

        close(stream_c); /* c waits for nothing now */
        {
                long long deadline = h_now_ms() + H_TIMEOUT_MS;
                int status;

                /* The daemon sees the stream's close on its next loop turn. */
                while ((status = try_open_as(AUTH_ME, INITIALIZE, more)) == 429 && h_now_ms() < deadline)
                        usleep(20000);
                cr_assert_eq(status, 200);
        }
        cr_assert_eq(h_log_count(&D, EVICTED), 1);
        cr_assert_eq(list_status(AUTH_ME, c), 404, "the idle one was ended");
        cr_assert_eq(list_status(AUTH_ME, b), 200, "the one with a stream was not");
        cr_assert_eq(list_status(AUTH_ME, a), 200, "the one with a call pending was not");
        cr_assert_eq(h_log_count(&D, "demo: cancelled request"), 0, "the pending call was cancelled");
        close(call_fd);
        close(stream_b);
}

/* ---- expiry, DELETE ---- */

#define EXPIRED "(httpSessionIdle); ended"

/* httpSessionIdle (2 s here; minutes by default) counts from when a session last waited for
 * nothing: one with its stream open is not ended, and one whose call outlasted it is ended
 * that long after the call's end, not sooner. */
Test(clients, idle_expiry_counts_from_the_last_use) {
        char idle[64], streaming[64], calling[64];
        struct ht_answer a;
        long long answered;
        int stream;

        start_clients("\"httpSessionIdle\":2");
        open_as(AUTH_ME, idle);
        open_as(AUTH_ME, streaming);
        open_as(AUTH_ME, calling);
        stream = open_stream(AUTH_ME, streaming);
        ht_once(port, "POST", "/mcp", sf(AUTH_ME JSON_HEADERS "Mcp-Session-Id: %s\r\n", calling),
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\",\"arguments\":{\"ms\":3000}}}",
                &a);
        answered = h_now_ms();
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        ht_answer_done(&a);
        /* The idle one went 2 s after it was opened, during the call. */
        cr_assert(h_log_count_wait(&D, EXPIRED, 1, 10));
        cr_assert_eq(list_status(AUTH_ME, idle), 404);
        cr_assert(h_log_count_wait(&D, EXPIRED, 2, H_TIMEOUT_MS));
        cr_assert_geq(h_now_ms() - answered, 1900, "ended %lld ms after its call, not idle for 2 s", h_now_ms() - answered);
        cr_assert_eq(list_status(AUTH_ME, calling), 404);
        cr_assert_eq(list_status(AUTH_ME, streaming), 200, "ended while its stream was open");
        cr_assert_eq(h_log_count(&D, EXPIRED), 2);
        close(stream);
}

/* Whether the event stream on fd (its head read already) ends within timeout_ms: its last
 * chunk comes, or its connection closes. */
static bool stream_ended(int fd, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        static char buf[65536];
        size_t len = 0;

        while (h_now_ms() < deadline) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t n;

                h_notify_drain(&D);
                if (poll(&p, 1, 20) != 1)
                        continue;
                n = read(fd, buf + len, sizeof buf - 1 - len);
                if (n <= 0)
                        return true;
                len += (size_t)n;
                buf[len] = '\0';
                if (strncmp(buf, "0\r\n\r\n", 5) == 0 || strstr(buf, "\r\n0\r\n\r\n"))
                        return true;
                if (len > sizeof buf / 2) { /* keep the tail only */
                        memmove(buf, buf + len - 16, 16);
                        len = 16;
                }
        }
        return false;
}

/* DELETE ends the session at once and releases all it held: its pending call cancelled at
 * the server, its stream ended, and no client left in the daemon's list. */
Test(clients, delete_releases_everything_at_once) {
        char sid[64];
        struct ht_answer a;
        json_object *answer, *rows;
        int call_fd, stream;

        start_clients("");
        open_as(AUTH_ME, sid);
        call_fd = pending_call(AUTH_ME, sid);
        stream = open_stream(AUTH_ME, sid);
        ht_once(port, "DELETE", "/mcp", sf(AUTH_ME "Mcp-Session-Id: %s\r\n", sid), NULL, &a);
        cr_assert_eq(a.status, 200);
        ht_answer_done(&a);
        cr_assert(h_log_wait(&D, "demo: cancelled request", H_TIMEOUT_MS), "the call went on at the server");
        cr_assert(stream_ended(stream, H_TIMEOUT_MS), "the stream did not end");
        cr_assert(stream_ended(call_fd, H_TIMEOUT_MS), "the call's stream did not end");
        cr_assert_eq(list_status(AUTH_ME, sid), 404);
        rows = client_rows(&answer);
        cr_assert_eq(json_object_array_length(rows), 0, "%s", h_json_text(rows));
        json_object_put(answer);
        close(call_fd);
        close(stream);
}

/* ---- mcpvisorctl clients and disconnect ---- */

#define HOSTILE_NAME_BYTES 10240

/* What each client says it is, as its initialize gave it: an SDK-like HTTP client, a client
 * through mcpvisorctl connect (whose command is mcpvisorctl, its name the agent's), and a
 * hostile one (a 10 KB name full of control characters, a version that is no string) shown
 * bounded and clean, in --json and in the table. */
Test(clients, clients_shows_each_clients_name_version_transport_and_activity) {
        static char hostile[HOSTILE_NAME_BYTES + 1024];
        struct h_conn *evil;
        struct proc bridge;
        json_object *answer, *rows, *row, *m;
        char sid[64], *out, *err, *line;
        size_t n = 0;

        start_clients("");
        cr_assert_eq(try_open_as(AUTH_ME, INITIALIZE_AS("{\"name\":\"claude-code\",\"version\":\"2.1.332\"}"), sid), 200);

        proc_start(&bridge, &D, (const char *const[]){ "-s", D.sock, "connect", NULL }, NULL);
        proc_write(&bridge, INITIALIZE_AS("{\"name\":\"gemini-cli\",\"version\":\"0.9.1\"}") "\n");
        line = proc_line(&bridge, H_TIMEOUT_MS);
        cr_assert(line && strstr(line, "\"result\""), "connect's initialize: %s", line ?: "(none)");
        free(line);

        /* "evil\n\x1b[31m" over and over, then \u0000 and a bidirectional override. */
        n += (size_t)sprintf(hostile + n, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                                          "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"");
        while (n < HOSTILE_NAME_BYTES)
                n += (size_t)sprintf(hostile + n, "evil\\n\\u001b[31m\\u0000\\u202e");
        sprintf(hostile + n, "\",\"version\":{\"major\":1}}}}\n");
        evil = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(evil, hostile);
        m = h_recv(evil, H_TIMEOUT_MS);
        cr_assert_not_null(h_get(m, "result"), "%s", h_json_text(m));
        json_object_put(m);

        rows = client_rows(&answer);
        cr_assert_eq(json_object_array_length(rows), 3, "%s", h_json_text(rows));
        row = row_with(rows, "name", "claude-code");
        cr_assert_str_eq(h_str(row, "version"), "2.1.332");
        cr_assert_str_eq(h_str(row, "transport"), "http");
        cr_assert(json_object_is_type(h_get(row, "lastActivity"), json_type_double), "%s", h_json_text(row));
        cr_assert(json_object_is_type(h_get(row, "lastActivityAt"), json_type_int), "%s", h_json_text(row));
        cr_assert(json_object_get_boolean(h_get(row, "idle")), "an HTTP session waiting for nothing is idle");
        row = row_with(rows, "name", "gemini-cli");
        cr_assert_str_eq(h_str(row, "version"), "0.9.1");
        cr_assert_str_eq(h_str(row, "command"), "mcpvisorctl", "the bridge's command, the agent's name");
        cr_assert_str_eq(h_str(row, "transport"), "unix");
        row = row_with(rows, "name", "evil[31mevil[31mevil[31mevil[31mevil[31mevil[31mevil[31mevil[31m"); /* 64 bytes */
        cr_assert_null(h_get(row, "version"), "a version that is no string is none");
        json_object_put(answer);

        cr_assert_eq(ctl((const char *const[]){ "-C", D.control, "clients", NULL }, &out, &err), 0, "%s", err);
        cr_assert(strstr(out, "CLIENT"), "%s", out);
        cr_assert(strstr(out, "LAST ACTIVE"), "%s", out);
        cr_assert(strstr(out, "claude-code 2.1.332"), "%s", out);
        cr_assert(strstr(out, "gemini-cli 0.9.1"), "%s", out);
        cr_assert(strstr(out, " idle "), "%s", out);
        cr_assert_null(strchr(out, '\x1b'), "an escape sequence reached the terminal:\n%s", out);
        cr_assert_lt(strlen(out), 4096, "the hostile name was not bounded:\n%s", out);
        free(out);
        free(err);
        /* The daemon's log holds the bounded, clean name too. */
        cr_assert(h_log_wait(&D, "initialized by evil[31mevil[31m", H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&D, "evil\\x0a"), 0, "control characters in the log");

        proc_close_stdin(&bridge);
        proc_wait(&bridge, H_TIMEOUT_MS);
        proc_free(&bridge);
        h_close(evil);
}

/* mcpvisorctl disconnect ID ends a socket client (its connection closes, its call is
 * cancelled at the server) and an HTTP session (its next request 404); an unknown id is a
 * clear error, and a malformed one a usage error. */
Test(clients, disconnect_ends_one_client) {
        struct h_client *sock;
        json_object *answer, *rows;
        char sid[64], id[24], *out, *err;
        struct ht_answer a;
        int call_fd;

        start_clients("");
        sock = cl_open();
        h_client_tool_request(sock, "9", "demo__sleep", "{\"ms\":60000}");
        open_as(AUTH_ME, sid);
        call_fd = pending_call(AUTH_ME, sid);

        rows = client_rows(&answer);
        snprintf(id, sizeof id, "%lld", (long long)json_object_get_int64(h_get(row_with(rows, "transport", "unix"), "id")));
        cr_assert_eq(ctl((const char *const[]){ "-C", D.control, "disconnect", id, NULL }, &out, &err), 0, "%s", err);
        cr_assert(strstr(out, sf("client %s disconnected (unix)", id)), "%s", out);
        free(out);
        free(err);
        cr_assert(h_wait_eof(sock->c, H_TIMEOUT_MS, NULL), "the socket client's connection is still open");
        cr_assert(h_log_wait(&D, sf("[client %s] disconnected by uid %u (mcpvisorctl disconnect)", id, (unsigned)getuid()),
                             H_TIMEOUT_MS));
        cr_assert(h_log_count_wait(&D, "demo: cancelled request", 1, H_TIMEOUT_MS), "its call went on at the server");

        snprintf(id, sizeof id, "%lld", (long long)json_object_get_int64(h_get(row_with(rows, "transport", "http"), "id")));
        json_object_put(answer);
        cr_assert_eq(ctl((const char *const[]){ "-C", D.control, "disconnect", id, NULL }, &out, &err), 0, "%s", err);
        cr_assert(strstr(out, sf("client %s disconnected (http)", id)), "%s", out);
        free(out);
        free(err);
        cr_assert(stream_ended(call_fd, H_TIMEOUT_MS), "the session's pending call was not ended");
        cr_assert(h_log_count_wait(&D, "demo: cancelled request", 2, H_TIMEOUT_MS), "its call went on at the server");
        ht_once(port, "POST", "/mcp", sf(AUTH_ME JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid), TOOLS_LIST, &a);
        cr_assert_eq(a.status, 404, "the ended session answered %d", a.status);
        ht_answer_done(&a);
        rows = client_rows(&answer);
        cr_assert_eq(json_object_array_length(rows), 0, "%s", h_json_text(rows));
        json_object_put(answer);

        cr_assert_eq(ctl((const char *const[]){ "-C", D.control, "disconnect", "999999", NULL }, &out, &err), 1);
        cr_assert(strstr(err, "no MCP client with id 999999 is connected"), "%s", err);
        free(out);
        free(err);
        cr_assert_eq(ctl((const char *const[]){ "-C", D.control, "disconnect", "x1", NULL }, &out, &err), 2);
        cr_assert(strstr(err, "'x1' is not a client id"), "%s", err);
        free(out);
        free(err);
        close(call_fd);
        h_client_close(sock);
}
