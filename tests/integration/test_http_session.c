/* Integration tests of an HTTP session once it is open (issue 25): bound to the token that
 * opened it, its principal and profile decided anew by a reload, its clients named in the
 * log and the audit trail by address, token and client name, and the answers evhttp holds
 * for it counted against clientOutputLimit. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "servers.h"

#define WIDE "it-token-wide-0123456789abcdef012345"
#define NARROW "it-token-narrow-0123456789abcdef0123"
#define AUTH_WIDE "Authorization: Bearer " WIDE "\r\n"
#define AUTH_NARROW "Authorization: Bearer " NARROW "\r\n"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define INITIALIZE "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"," \
                   "\"capabilities\":{},\"clientInfo\":{\"name\":\"it-agent\",\"version\":\"1\"}}}"
#define TOOLS_LIST "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}"
#define ECHO_CALL "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\",\"arguments\":{\"text\":\"hi\"}}}"
#define GROUP 4242u /* the group the access rule allows demo to */

static struct h_daemon D;
static char creds[64];
static char http_sock[128];
static unsigned port;

static void write_credential(const char *id, const char *secret) {
        FILE *f = fopen(sf("%s/%s", creds, id), "w");

        cr_assert_not_null(f);
        fprintf(f, "%s\n", secret);
        fclose(f);
}

static void setup(void) {
        servers_reset(&D);
        snprintf(creds, sizeof creds, "/tmp/mcpvisor-hs-XXXXXX");
        cr_assert_not_null(mkdtemp(creds));
        write_credential("wide", WIDE);
        write_credential("narrow", NARROW);
        snprintf(http_sock, sizeof http_sock, "%s/http.sock", creds);
        port = ht_free_port();
}

static void teardown(void) {
        servers_teardown();
        h_remove_tree(creds);
}

TestSuite(http_session, .init = setup, .fini = teardown, .timeout = 120);

#define GROUP_RULE "{\"default\":\"deny\",\"rules\":[{\"groups\":[4242],\"servers\":[\"demo\"],\"action\":\"allow\"}]}"

/* HTTP on a free port and a Unix socket; tokens (JSON members of the array), the access
 * policy (an object), more settings (may be ""). */
static void set_http(const char *tokens, const char *access, const char *more) {
        char *text = NULL;

        cr_assert_gt(asprintf(&text, "\"logLevel\":\"debug\",\"http\":{\"listen\":[\"127.0.0.1:%u\",\"unix:%s\"],\"tokens\":[%s]},"
                              "\"access\":%s,\"profiles\":{\"none\":{\"tools\":[\"no-such-tool\"]}}%s%s",
                              port, http_sock, tokens, access, more[0] ? "," : "", more), 0);
        set_settings(text);
        free(text);
}

static void start_http(const char *tokens, const char *access, const char *more) {
        const char *env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };

        add_demo("demo", "", "");
        set_http(tokens, access, more);
        start(env);
        wait_all_ready(1);
}

static void reload_with(const char *tokens, const char *access, const char *more) {
        json_object *r;

        set_http(tokens, access, more);
        config_rewrite();
        r = h_control(&D, "reload", NULL);
        cr_assert_eq(h_error_code(r), 0, "reload: %s", h_json_text(r));
        json_object_put(r);
}

/* initialize and notifications/initialized with auth (header lines); the session id in ret. */
static void open_session(const char *auth, char ret[64]) {
        struct ht_answer a;

        h_notify_drain(&D);
        ht_once(port, "POST", "/mcp", sf("%s" JSON_HEADERS, auth), INITIALIZE, &a);
        cr_assert_eq(a.status, 200, "initialize: %d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", ret, 64), "no session id: %s", a.headers);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", sf("%s" JSON_HEADERS "Mcp-Session-Id: %s\r\n", auth, ret),
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        cr_assert_eq(a.status, 202);
        ht_answer_done(&a);
}

static void post(const char *auth, const char *sid, const char *body, struct ht_answer *a) {
        ht_once(port, "POST", "/mcp", sf("%s" JSON_HEADERS "Mcp-Session-Id: %s\r\n", auth, sid), body, a);
}

/* Whether the session's tools/list shows demo's tools. */
static bool sees_demo(const char *auth, const char *sid) {
        struct ht_answer a;
        bool sees;

        post(auth, sid, TOOLS_LIST, &a);
        cr_assert_eq(a.status, 200, "tools/list: %d %s", a.status, a.body);
        sees = strstr(a.body, "demo__echo") != NULL;
        ht_answer_done(&a);
        return sees;
}

static const char *token(const char *id, const char *extra) {
        return sf("{\"token\":{\"credential\":\"%s\"},\"user\":%u%s}", id, (unsigned)getuid(), extra);
}

/* Two tokens of the same user, one allowed demo through its group, one not: the narrow one
 * cannot use the session the wide one opened, by POST, GET or DELETE. */
Test(http_session, a_session_takes_only_the_token_that_opened_it) {
        struct ht_answer a;
        char sid[64];

        start_http(sf("%s,%s", token("wide", sf(",\"groups\":[%u]", GROUP)), token("narrow", "")), GROUP_RULE, "");
        open_session(AUTH_WIDE, sid);
        cr_assert(sees_demo(AUTH_WIDE, sid));
        post(AUTH_NARROW, sid, ECHO_CALL, &a);
        cr_assert_eq(a.status, 404, "another token of the same user used the session: %d %s", a.status, a.body);
        ht_answer_done(&a);
        ht_once(port, "GET", "/mcp", sf(AUTH_NARROW "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n", sid), NULL, &a);
        cr_assert_eq(a.status, 404, "GET: %d", a.status);
        ht_answer_done(&a);
        ht_once(port, "DELETE", "/mcp", sf(AUTH_NARROW "Mcp-Session-Id: %s\r\n", sid), NULL, &a);
        cr_assert_eq(a.status, 404, "DELETE: %d", a.status);
        ht_answer_done(&a);
        cr_assert(sees_demo(AUTH_WIDE, sid), "the session is still its opener's");
}

/* A reload that takes the token's group away narrows its open session at once; one that
 * gives the token a profile moves the session into it; given back, the access returns. */
Test(http_session, reload_redecides_an_open_sessions_principal_and_profile) {
        struct ht_answer a;
        char sid[64];

        start_http(token("wide", sf(",\"groups\":[%u]", GROUP)), GROUP_RULE, "");
        open_session(AUTH_WIDE, sid);
        cr_assert(sees_demo(AUTH_WIDE, sid));

        reload_with(token("wide", ""), GROUP_RULE, "");
        cr_assert_not(sees_demo(AUTH_WIDE, sid), "the session kept the group its token no longer has");
        post(AUTH_WIDE, sid, ECHO_CALL, &a);
        cr_assert_eq(a.status, 200);
        cr_assert(strstr(a.body, "\"error\""), "a call through the old access: %s", a.body);
        ht_answer_done(&a);

        reload_with(token("wide", sf(",\"groups\":[%u],\"profile\":\"none\"", GROUP)), GROUP_RULE, "");
        cr_assert_not(sees_demo(AUTH_WIDE, sid), "the token's new profile was not taken");
        reload_with(token("wide", sf(",\"groups\":[%u]", GROUP)), GROUP_RULE, "");
        cr_assert(sees_demo(AUTH_WIDE, sid), "the group and no profile again");
}

/* A reload that removes the token (its credential now holds another secret) ends its
 * sessions: the old token opens nothing, and the session is gone for the new one too. */
Test(http_session, reload_that_removes_a_token_ends_its_sessions) {
        struct ht_answer a;
        char sid[64];

        start_http(sf("%s,%s", token("wide", sf(",\"groups\":[%u]", GROUP)), token("narrow", "")), GROUP_RULE, "");
        open_session(AUTH_WIDE, sid);
        reload_with(token("narrow", ""), GROUP_RULE, "");
        cr_assert(h_log_wait(&D, "HTTP session ended: its bearer token is no longer in http.tokens", H_TIMEOUT_MS));
        post(AUTH_WIDE, sid, TOOLS_LIST, &a);
        cr_assert_eq(a.status, 401, "the removed token: %d", a.status);
        ht_answer_done(&a);
        post(AUTH_NARROW, sid, TOOLS_LIST, &a);
        cr_assert_eq(a.status, 404, "the session ended: %d", a.status);
        ht_answer_done(&a);
}

/* On the Unix socket the kernel names the peer; a reload that changes the rules for its uid
 * changes its session's access as well. */
Test(http_session, reload_redecides_a_unix_socket_session) {
        struct ht_answer a;
        char sid[64];
        int fd;

        start_http(token("narrow", ""), sf("{\"default\":\"deny\",\"rules\":[{\"users\":[%u],\"action\":\"allow\"}]}",
                                           (unsigned)getuid()), "");
        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", JSON_HEADERS, INITIALIZE, strlen(INITIALIZE), &a);
        close(fd);
        cr_assert_eq(a.status, 200);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);
        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", sf(JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid), TOOLS_LIST, strlen(TOOLS_LIST), &a);
        close(fd);
        cr_assert(strstr(a.body, "demo__echo"), "%s", a.body);
        ht_answer_done(&a);
        reload_with(token("narrow", ""), GROUP_RULE, "");
        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", sf(JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid), TOOLS_LIST, strlen(TOOLS_LIST), &a);
        close(fd);
        cr_assert_eq(a.status, 200);
        cr_assert_null(strstr(a.body, "demo__echo"), "the old rules still apply: %s", a.body);
        ht_answer_done(&a);
}

/* An HTTP client is named in the log by its address and token, and in the audit trail by
 * its address, token and client name, not as "pid 0, command unknown". */
Test(http_session, http_clients_are_named_by_address_token_and_client_name) {
        struct ht_answer a;
        char sid[64], *line;

        start_http(token("wide", sf(",\"groups\":[%u]", GROUP)), GROUP_RULE, "\"audit\":\"calls\"");
        open_session(AUTH_WIDE, sid);
        line = h_log_rest_wait(&D, "MCP client connected (", H_TIMEOUT_MS);
        cr_assert_not_null(line);
        cr_assert(strstr(line, "from 127.0.0.1:"), "no address: %s", line);
        cr_assert(strstr(line, sf("with the token of %u", (unsigned)getuid())), "no token: %s", line);
        cr_assert_null(strstr(line, "pid 0"), "%s", line);
        free(line);
        post(AUTH_WIDE, sid, ECHO_CALL, &a);
        cr_assert_eq(a.status, 200);
        ht_answer_done(&a);
        line = h_log_rest_wait(&D, "audit: uid", H_TIMEOUT_MS);
        cr_assert_not_null(line);
        cr_assert(strstr(line, sf(" token %u from 127.0.0.1:", (unsigned)getuid())), "no token or address: %s", line);
        cr_assert(strstr(line, " client it-agent tools/call demo__echo: ok"), "no client name: %s", line);
        cr_assert_null(strstr(line, "pid 0"), "%s", line);
        free(line);
}

/* A POST sent on a connection of its own and never read. */
static int post_unread(const char *sid, const char *body) {
        int fd = ht_connect(0, http_sock);
        char *req = NULL;
        int n = asprintf(&req, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
                               "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s", sid, strlen(body), body);

        cr_assert_gt(n, 0);
        cr_assert_eq(write(fd, req, (size_t)n), n);
        free(req);
        return fd;
}

/* How many of fds reach their end (what was sent before it read and dropped) within
 * timeout_ms; returns once at least 4 have. */
static int eofs_within(int *fds, int n, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        bool ended[64] = { false };
        int eofs = 0;
        char buf[65536];

        while (eofs < 4 && h_now_ms() < deadline) {
                struct pollfd p[64];

                for (int i = 0; i < n; i++)
                        p[i] = (struct pollfd){ .fd = ended[i] ? -1 : fds[i], .events = POLLIN };
                if (poll(p, (nfds_t)n, 100) <= 0)
                        continue;
                for (int i = 0; i < n; i++) {
                        ssize_t r;

                        if (ended[i] || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        r = read(fds[i], buf, sizeof buf);
                        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                                ended[i] = true;
                                eofs++;
                        }
                }
        }
        return eofs;
}

/* 24 answers of 1 MiB, each on its own connection that the client never reads: what evhttp
 * holds passes clientOutputLimit (4 MiB; a Unix socket's buffers take a few hundred KiB a
 * connection), and the session is dropped as a socket client would be, its connections
 * closed. */
Test(http_session, unread_json_answers_count_against_the_output_limit) {
        enum { CONNECTIONS = 24, ANSWER = 1 << 20 };
        struct ht_answer a;
        int fds[CONNECTIONS], fd;
        char sid[64], big[256];

        snprintf(big, sizeof big, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                 "\"arguments\":{\"bytes\":%d}}}", ANSWER);

        start_http(token("wide", ""), "{\"default\":\"allow\"}", sf("\"clientOutputLimit\":%d", 4 << 20));
        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", JSON_HEADERS, INITIALIZE, strlen(INITIALIZE), &a);
        close(fd);
        cr_assert_eq(a.status, 200);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);
        for (int i = 0; i < CONNECTIONS; i++)
                fds[i] = post_unread(sid, big);
        cr_assert(h_log_wait(&D, "client is not reading its replies", 3 * H_TIMEOUT_MS),
                  "24 MiB of unread answers and the session is still open");
        fd = ht_connect(0, http_sock);
        ht_request(fd, "POST", "/mcp", sf(JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid), TOOLS_LIST, strlen(TOOLS_LIST), &a);
        close(fd);
        cr_assert_eq(a.status, 404, "the session was dropped: %d", a.status);
        ht_answer_done(&a);
        cr_assert_geq(eofs_within(fds, CONNECTIONS, 10000), 4,
                      "the connections holding its answers (4 MiB of them at least) were not closed");
        for (int i = 0; i < CONNECTIONS; i++)
                close(fds[i]);
}
