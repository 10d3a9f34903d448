/* Clients of the modern era (MCP 2026-07-28) at every front door: no initialize, each
 * request naming its version, capabilities and client in its _meta; server/discover; the
 * specification's errors; over HTTP no session, the headers checked against the body, and
 * a request's closed connection cancelling it; beside legacy clients of the same daemon,
 * and under the same access rules. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "http-client.h"
#include "servers.h"

#define OTHER_UID 4242
#define CTL_MS 10000
#define TOKEN "it-token-0123456789abcdef0123456789"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
/* A modern request's _meta: version, capabilities, client. */
#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientCapabilities\":{},"                    \
             "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"modern-it\",\"version\":\"2.0\"}}"
#define MODERN_HEADERS(method) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " method "\r\n"

static struct h_daemon D;
static char creds[64];
static unsigned port;

static void setup(void) {
        servers_reset(&D);
        port = 0;
        creds[0] = '\0';
}

static void teardown(void) {
        servers_teardown();
        if (creds[0])
                h_remove_tree(creds);
}

TestSuite(modern, .init = setup, .fini = teardown, .timeout = 120);

static json_object *call(struct h_conn *c, const char *line) {
        return h_call(c, sf("%s\n", line));
}

/* A modern request on c: method with params members (may be ""), _meta added. */
static json_object *modern(struct h_conn *c, int id, const char *method, const char *members) {
        return call(c, sf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{%s%s" META "}}", id, method, members,
                          members[0] ? "," : ""));
}

static void start_demo(const char *settings) {
        add_demo("demo", "", "\"--instructions\",\"Demo helps.\"");
        set_settings(settings);
        start(NULL);
        wait_all_ready(1);
}

/* The probe of a dual-era client answered with the merged view, before any initialize. */
static void expect_discover(json_object *r) {
        json_object *versions = h_get(r, "result.supportedVersions");

        cr_assert_not_null(versions, "%s", h_json_text(r));
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(versions, 0)), "2026-07-28");
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(versions, 1)), "2025-11-25");
        cr_assert_str_eq(h_str(r, "result.resultType"), "complete");
        cr_assert_not_null(h_get(r, "result.capabilities.tools"), "%s", h_json_text(r));
        json_object *info = NULL;
        cr_assert(json_object_object_get_ex(h_get(r, "result._meta"), "io.modelcontextprotocol/serverInfo", &info),
                  "%s", h_json_text(r));
        cr_assert_str_eq(h_str(info, "name"), "mcpvisor");
        cr_assert_not_null(h_get(r, "result.ttlMs"));
        cr_assert_str_eq(h_str(r, "result.cacheScope"), "public");
}

Test(modern, socket_serves_both_eras_at_once) {
        struct h_conn *m, *legacy;
        json_object *r;

        start_demo("");
        legacy = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(legacy);
        m = h_connect(D.sock, H_TIMEOUT_MS);

        r = modern(m, 1, "server/discover", "");
        expect_discover(r);
        json_object_put(r);

        r = modern(m, 2, "tools/list", "");
        cr_assert(h_has_item(h_tool_names(r), "demo__echo"), "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "result.resultType"), "complete");
        cr_assert_eq(json_object_get_int(h_get(r, "result.ttlMs")), 0);
        cr_assert_str_eq(h_str(r, "result.cacheScope"), "public");
        json_object_put(r);
        r = modern(m, 3, "tools/call", "\"name\":\"demo__echo\",\"arguments\":{\"text\":\"modern hi\"}");
        cr_assert(strstr(h_json_text(r), "modern hi"), "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "result.resultType") ?: "?", "complete", "%s", h_json_text(r));
        cr_assert_null(h_get(r, "result.ttlMs"), "a call's result is no cacheable one: %s", h_json_text(r));
        json_object_put(r);
        /* a read, answered by the server, gets the hints on its way */
        r = modern(m, 31, "resources/read", "\"uri\":\"demo://readme\"");
        cr_assert_not_null(h_get(r, "result.contents"), "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "result.resultType") ?: "?", "complete", "%s", h_json_text(r));
        cr_assert_eq(json_object_get_int(h_get(r, "result.ttlMs")), 0, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "result.cacheScope") ?: "?", "public", "%s", h_json_text(r));
        json_object_put(r);

        /* the legacy client beside it, unchanged: no caching hints, its session's rules */
        r = call(legacy, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
        cr_assert(h_has_item(h_tool_names(r), "demo__echo"));
        cr_assert_null(h_get(r, "result.cacheScope"), "%s", h_json_text(r));
        json_object_put(r);
        r = call(legacy, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                         "\"arguments\":{\"text\":\"legacy hi\"}}}");
        cr_assert(strstr(h_json_text(r), "legacy hi"), "%s", h_json_text(r));
        cr_assert_null(h_get(r, "result.resultType"), "a legacy result unchanged: %s", h_json_text(r));
        json_object_put(r);

        /* a modern connection stays one: a request without its _meta, and initialize */
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\",\"params\":{}}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                    "\"capabilities\":{}," META "}}");
        cr_assert_eq(h_error_code(r), -32601, "%s", h_json_text(r));
        json_object_put(r);
        /* and the legacy one: its _meta names no era, its session does */
        r = call(legacy, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\",\"params\":{" META "}}");
        cr_assert_null(h_get(r, "result.cacheScope"), "%s", h_json_text(r));
        json_object_put(r);
        /* ping is gone from the modern era */
        r = modern(m, 9, "ping", "");
        cr_assert_eq(h_error_code(r), -32601, "%s", h_json_text(r));
        json_object_put(r);
        h_close(m);
        h_close(legacy);
}

Test(modern, discover_before_initialize_without_meta) {
        struct h_conn *c;
        json_object *r;

        start_demo("");
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}");
        expect_discover(r);
        cr_assert(strstr(h_str(r, "result.instructions") ?: "", "## demo"), "%s", h_json_text(r));
        json_object_put(r);
        h_initialize(c); /* still a legacy client if it wants */
        h_close(c);
}

Test(modern, unsupported_version_and_malformed_meta) {
        struct h_conn *c;
        json_object *r;

        start_demo("");
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                    "\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
                    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        cr_assert_eq(h_error_code(r), -32022, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "error.data.requested"), "2099-01-01");
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(h_get(r, "error.data.supported"), 0)),
                         "2026-07-28");
        json_object_put(r);
        r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
        cr_assert_eq(h_error_code(r), -32602, "no clientCapabilities: %s", h_json_text(r));
        json_object_put(r);
        /* neither opened the connection: it may still initialize */
        h_initialize(c);
        h_close(c);
}

/* A rule denying a server to uid 4242 holds for its modern requests as for its sessions:
 * not in its lists (marked private), its call refused. */
Test(modern, denied_user_still_denied) {
        struct h_conn *m;
        json_object *r;

        add_demo("pub", "", "");
        add_demo("secret", "", "");
        set_settings("\"socketMode\":\"0666\",\"access\":{\"rules\":[{\"users\":[\"4242\"],\"servers\":[\"secret\"],"
                     "\"action\":\"deny\"}]}");
        start(NULL);
        cr_assert_eq(chmod(D.dir, 0711), 0);
        wait_all_ready(2);
        m = h_connect_as(D.sock, OTHER_UID, OTHER_UID, NULL, 0, "agent");
        cr_assert_not_null(m);
        r = modern(m, 1, "tools/list", "");
        cr_assert(h_has_item(h_tool_names(r), "pub__echo"), "%s", h_json_text(r));
        cr_assert(!h_has_item(h_tool_names(r), "secret__echo"), "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "result.cacheScope"), "private");
        json_object_put(r);
        r = modern(m, 2, "tools/call", "\"name\":\"secret__echo\",\"arguments\":{\"text\":\"x\"}");
        cr_assert(strstr(h_str(r, "error.message") ?: "", "permission denied"), "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "tools/call secret__echo: denied", H_TIMEOUT_MS));
        h_close(m);
}

/* mcpvisorctl connect pumps a modern client's bytes as it does a legacy one's; mcpvisorctl
 * clients shows each client's era and version. */
Test(modern, through_mcpvisorctl_and_listed_by_era) {
        struct proc p, list;
        struct h_conn *legacy;
        char *line;

        start_demo("");
        legacy = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(legacy);
        proc_start(&p, &D, (const char *const[]){ "-s", D.sock, "connect", NULL }, NULL);
        proc_write(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                       "\"arguments\":{\"text\":\"via ctl\"}," META "}}\n");
        line = proc_line(&p, H_TIMEOUT_MS);
        cr_assert(line && strstr(line, "via ctl"), "%s", line ? line : "(none)");
        free(line);

        proc_start(&list, &D, (const char *const[]){ "-C", D.control, "clients", NULL }, NULL);
        proc_close_stdin(&list);
        cr_assert_eq(proc_wait(&list, CTL_MS), 0, "%s", list.errbuf);
        cr_assert(strstr(list.outbuf, "PROTOCOL"), "%s", list.outbuf);
        cr_assert(strstr(list.outbuf, "modern 2026-07-28"), "%s", list.outbuf);
        cr_assert(strstr(list.outbuf, "legacy 2025-11-25"), "%s", list.outbuf);
        cr_assert(strstr(list.outbuf, "modern-it 2.0"), "%s", list.outbuf);
        proc_free(&list);
        proc_close_stdin(&p);
        proc_wait(&p, CTL_MS);
        proc_free(&p);
        h_close(legacy);
}

/* ---- HTTP ---- */

/* The daemon with demo (and the n_more servers added before), HTTP on a free port with one
 * token for this user. */
static void start_http_more(unsigned n_more) {
        const char *env[2];
        FILE *f;

        snprintf(creds, sizeof creds, "/tmp/mcpvisor-modern-XXXXXX");
        cr_assert_not_null(mkdtemp(creds));
        cr_assert_not_null(f = fopen(sf("%s/ci-token", creds), "w"));
        fputs(TOKEN "\n", f);
        fclose(f);
        port = ht_free_port();
        env[0] = sf("CREDENTIALS_DIRECTORY=%s", creds);
        env[1] = NULL;
        add_demo("demo", "", "");
        set_settings(sf("\"logLevel\":\"debug\",\"http\":{\"listen\":[\"127.0.0.1:%u\"],"
                        "\"tokens\":[{\"token\":{\"credential\":\"ci-token\"},\"user\":%u}]}",
                        port, (unsigned)getuid()));
        start(env);
        wait_all_ready(1 + n_more);
}

static void start_http(void) {
        start_http_more(0);
}

#define HTTP_CALL(text) "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\"," \
                        "\"arguments\":{\"text\":\"" text "\"}," META "}}"

static unsigned http_sessions(void) {
        struct ht_answer a;
        const char *at;
        unsigned n;

        ht_once(port, "GET", "/healthz", "", NULL, &a);
        at = strstr(a.body, "\"sessions\":");
        n = at ? (unsigned)atoi(at + strlen("\"sessions\":")) : 999;
        ht_answer_done(&a);
        return n;
}

Test(modern, http_without_session) {
        struct ht_answer a;
        char sid[64];

        start_http();
        /* a legacy session beside it */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS,
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                "\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}",
                &a);
        cr_assert_eq(a.status, 200);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);

        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("tools/call") "Mcp-Name: demo__echo\r\n",
                HTTP_CALL("over http"), &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "over http"), "%s", a.body);
        cr_assert_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid), "no session for a modern request");
        ht_answer_done(&a);

        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("server/discover"),
                "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"server/discover\",\"params\":{" META "}}", &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "\"supportedVersions\":[\"2026-07-28\""), "%s", a.body);
        ht_answer_done(&a);

        /* each modern request's client is gone once answered: only the legacy session is left */
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        while (http_sessions() != 1 && h_now_ms() < deadline)
                usleep(10000);
        cr_assert_eq(http_sessions(), 1);
        /* a client of one request comes and goes in the debug log: at info, a busy client's
         * every request would be three lines of the journal */
        cr_assert(h_log_wait(&D, "debug: [client 2] serving a 2026-07-28 client modern-it 2.0", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "debug: [client 2] client disconnected", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "info: [client 1] MCP client connected", H_TIMEOUT_MS), "a session's stays at info");

        /* no GET stream in the modern era */
        ht_once(port, "GET", "/mcp", AUTH "Accept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n", NULL, &a);
        cr_assert_eq(a.status, 405, "%d %s", a.status, a.body);
        ht_answer_done(&a);
}

Test(modern, http_errors_are_400_with_the_spec_codes) {
        struct ht_answer a;
        char sid[64];

        start_http();
        /* the header names another tool than the body runs */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("tools/call") "Mcp-Name: demo__add\r\n",
                HTTP_CALL("x"), &a);
        cr_assert_eq(a.status, 400, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "-32020") && strstr(a.body, "\"id\":7"), "%s", a.body);
        ht_answer_done(&a);
        /* no Mcp-Method */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "MCP-Protocol-Version: 2026-07-28\r\nMcp-Name: demo__echo\r\n",
                HTTP_CALL("x"), &a);
        cr_assert_eq(a.status, 400);
        cr_assert(strstr(a.body, "-32020"), "%s", a.body);
        ht_answer_done(&a);
        /* an unsupported version, header and body alike */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "MCP-Protocol-Version: 2099-01-01\r\nMcp-Method: tools/list\r\n",
                "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                "\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
                &a);
        cr_assert_eq(a.status, 400, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "-32022") && strstr(a.body, "\"supported\""), "%s", a.body);
        ht_answer_done(&a);
        /* a method the modern era has not: 404 with -32601 */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("ping"),
                "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\",\"params\":{" META "}}", &a);
        cr_assert_eq(a.status, 404, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "-32601"), "%s", a.body);
        ht_answer_done(&a);
        /* a modern header over a body that names no version: malformed (-32602) first */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("tools/list"),
                "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\",\"params\":{}}", &a);
        cr_assert_eq(a.status, 400, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "-32602"), "%s", a.body);
        ht_answer_done(&a);
        /* initialize in the modern era's form: 404, and no session made for it */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS MODERN_HEADERS("initialize"),
                "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                "\"capabilities\":{}," META "}}",
                &a);
        cr_assert_eq(a.status, 404, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "-32601"), "%s", a.body);
        cr_assert_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid), "%s", a.headers);
        ht_answer_done(&a);
        /* without a token, refused as every request is */
        ht_once(port, "POST", "/mcp", JSON_HEADERS MODERN_HEADERS("tools/call") "Mcp-Name: demo__echo\r\n", HTTP_CALL("x"), &a);
        cr_assert_eq(a.status, 401);
        ht_answer_done(&a);
        /* and a legacy request without a session is still told it needs one */
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &a);
        cr_assert_eq(a.status, 400);
        cr_assert(strstr(a.body, "Mcp-Session-Id header is required"), "%s", a.body);
        ht_answer_done(&a);
        cr_assert_eq(http_sessions(), 0);
}

/* Closing a modern request's connection cancels it at the server, and its client ends. */
Test(modern, http_close_cancels) {
        int fd;
        const char *body = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__sleep\","
                           "\"arguments\":{\"ms\":30000}," META "}}";
        char *text;

        start_http();
        fd = ht_connect(port, NULL);
        cr_assert(asprintf(&text, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH JSON_HEADERS MODERN_HEADERS("tools/call")
                                   "Mcp-Name: demo__sleep\r\nContent-Length: %zu\r\n\r\n%s",
                           strlen(body), body) > 0);
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        free(text);
        /* its client is made, and its request forwarded, as its body is read */
        long long until = h_now_ms() + H_TIMEOUT_MS;
        while (http_sessions() != 1 && h_now_ms() < until)
                usleep(10000);
        cr_assert_eq(http_sessions(), 1, "the request's client lasts while it runs");
        close(fd);
        cr_assert(h_log_wait(&D, "cancelled by the client", H_TIMEOUT_MS));
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        while (http_sessions() != 0 && h_now_ms() < deadline)
                usleep(10000);
        cr_assert_eq(http_sessions(), 0);
}

/* A modern request's own _meta decides what it hears and what it may be asked: a server's
 * log message reaches the call that asked for its level (before its answer), and no other. */
Test(modern, log_level_is_the_requests_own) {
        struct h_conn *m;
        json_object *r;

        start_demo("");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        r = modern(m, 1, "tools/call", "\"name\":\"demo__log\",\"arguments\":{\"text\":\"unasked\"}");
        cr_assert_str_eq(h_str(r, "id") ?: "?", "1", "no log message first: %s", h_json_text(r));
        json_object_put(r);
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__log\","
                    "\"arguments\":{\"text\":\"asked\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                    "\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/logLevel\":\"info\"}}}");
        cr_assert_str_eq(h_str(r, "method") ?: "?", "notifications/message", "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "params.data") ?: "?", "asked");
        json_object_put(r);
        r = h_recv(m, H_TIMEOUT_MS);
        cr_assert_str_eq(h_str(r, "id") ?: "?", "2", "%s", h_json_text(r));
        json_object_put(r);
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__log\","
                    "\"arguments\":{\"text\":\"too low\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                    "\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/logLevel\":\"error\"}}}");
        cr_assert_str_eq(h_str(r, "id") ?: "?", "3", "an info message under \"error\": %s", h_json_text(r));
        json_object_put(r);
        h_close(m);
}

#define ASK_ELICITATION "\"name\":\"demo__ask\",\"arguments\":{\"method\":\"elicitation/create\"," \
                        "\"params\":{\"message\":\"ok?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}"

/* A server's elicitation during a modern call that did not declare the capability: the
 * call gets -32021 naming it, and is cancelled at the server; declared, the server is told
 * the client takes no requests (the daemon makes no input_required result yet). */
Test(modern, missing_capability_is_32021) {
        struct h_conn *m;
        json_object *r, *required;

        add_demo("demo", "\"clientCapabilities\":[\"elicitation\"]", "");
        start(NULL);
        wait_all_ready(1);
        m = h_connect(D.sock, H_TIMEOUT_MS);
        r = modern(m, 1, "tools/call", ASK_ELICITATION);
        cr_assert_eq(h_error_code(r), -32021, "%s", h_json_text(r));
        required = h_get(r, "error.data.requiredCapabilities");
        cr_assert(json_object_object_get_ex(required, "elicitation", NULL), "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "cancelled by the client", H_TIMEOUT_MS));
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{" ASK_ELICITATION ",\"_meta\":{"
                    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}}}}}");
        cr_assert_str_eq(h_str(r, "id") ?: "?", "2", "%s", h_json_text(r));
        cr_assert(strstr(h_json_text(r), "takes no requests from servers"), "%s", h_json_text(r));
        json_object_put(r);
        h_close(m);
}

/* ---- subscriptions/listen ---- */

static void ctl_stop(const char *server) {
        struct proc p;

        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "stop", server, NULL }, NULL);
        proc_close_stdin(&p);
        cr_assert_eq(proc_wait(&p, CTL_MS), 0, "%s", p.errbuf);
        proc_free(&p);
}

#define LISTEN(id, filter) "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"subscriptions/listen\",\"params\":{" \
                           "\"notifications\":" filter "," META "}}"

/* The subscription id of a message on a listen's stream, as text. */
static const char *subscription_of(json_object *msg) {
        json_object *meta = h_get(msg, "params._meta"), *id;

        if (!meta)
                meta = h_get(msg, "result._meta");
        return json_object_object_get_ex(meta, "io.modelcontextprotocol/subscriptionId", &id) ? json_object_get_string(id)
                                                                                                : "(none)";
}

Test(modern, listen_on_the_socket) {
        struct h_conn *m, *legacy;
        json_object *r;

        add_demo("demo", "", "");
        add_demo("extra", "", "");
        start(NULL);
        wait_all_ready(2);
        legacy = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(legacy);
        m = h_connect(D.sock, H_TIMEOUT_MS);

        /* acknowledged with what is honoured: the lists, not resource subscriptions */
        r = call(m, LISTEN("\"sub-1\"", "{\"toolsListChanged\":true,\"resourceSubscriptions\":[\"demo://readme\"]}"));
        cr_assert_str_eq(h_str(r, "method") ?: "?", "notifications/subscriptions/acknowledged", "%s", h_json_text(r));
        cr_assert_str_eq(subscription_of(r), "sub-1");
        cr_assert(json_object_get_boolean(h_get(r, "params.notifications.toolsListChanged")), "%s", h_json_text(r));
        cr_assert_null(h_get(r, "params.notifications.resourceSubscriptions"), "%s", h_json_text(r));
        json_object_put(r);
        r = call(m, LISTEN("7", "{\"promptsListChanged\":true}"));
        cr_assert_str_eq(subscription_of(r), "7", "%s", h_json_text(r));
        json_object_put(r);

        /* a server leaves: its tools and prompts with it; each listen hears of its own kind */
        ctl_stop("extra");
        for (int seen = 0; seen < 2; seen++) {
                r = h_recv(m, H_TIMEOUT_MS);
                if (strcmp(h_str(r, "method") ?: "", "notifications/tools/list_changed") == 0)
                        cr_assert_str_eq(subscription_of(r), "sub-1", "%s", h_json_text(r));
                else
                        cr_assert(strcmp(h_str(r, "method") ?: "", "notifications/prompts/list_changed") == 0 &&
                                          strcmp(subscription_of(r), "7") == 0,
                                  "%s", h_json_text(r));
                json_object_put(r);
        }

        /* cancelled: no answer, the connection goes on */
        h_send(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"sub-1\"}}\n");
        r = modern(m, 8, "tools/list", "");
        cr_assert_str_eq(h_str(r, "id") ?: "?", "8", "nothing for the cancelled listen: %s", h_json_text(r));
        json_object_put(r);
        /* the client finished sending: the listen left is answered as ended, then the close */
        cr_assert_eq(shutdown(m->fd, SHUT_WR), 0);
        r = h_recv(m, H_TIMEOUT_MS);
        cr_assert_str_eq(h_str(r, "id") ?: "?", "7", "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "result.resultType") ?: "?", "complete", "%s", h_json_text(r));
        cr_assert_str_eq(subscription_of(r), "7", "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_wait_eof(m, H_TIMEOUT_MS, NULL));
        h_close(m);
        h_close(legacy);
}

Test(modern, listen_over_http) {
        char buf[16384] = "";
        const char *body = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"subscriptions/listen\",\"params\":{"
                           "\"notifications\":{\"toolsListChanged\":true}," META "}}";
        char *text;
        int fd;

        add_demo("extra", "", "");
        start_http_more(1);
        fd = ht_connect(port, NULL);
        cr_assert(asprintf(&text, "POST /mcp HTTP/1.1\r\nHost: x\r\n" AUTH JSON_HEADERS MODERN_HEADERS("subscriptions/listen")
                                  "Content-Length: %zu\r\n\r\n%s",
                           strlen(body), body) > 0);
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        free(text);
        cr_assert(ht_stream_until(fd, "notifications/subscriptions/acknowledged", buf, sizeof buf, H_TIMEOUT_MS), "%s", buf);
        cr_assert(strstr(buf, "text/event-stream"), "%s", buf);
        cr_assert_null(strstr(buf, "Mcp-Session-Id"), "%s", buf);
        ctl_stop("extra");
        cr_assert(ht_stream_until(fd, "notifications/tools/list_changed", buf, sizeof buf, H_TIMEOUT_MS), "%s", buf);
        cr_assert(strstr(buf, "\"io.modelcontextprotocol/subscriptionId\":5"), "%s", buf);
        cr_assert_eq(http_sessions(), 1, "the listen's client lasts while it is open");
        close(fd);
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        while (http_sessions() != 0 && h_now_ms() < deadline)
                usleep(10000);
        cr_assert_eq(http_sessions(), 0, "closing its stream ends it");
}

/* resourceSubscriptions: a URI the client may read subscribed at its server, its updates
 * under the listen's id; one denied to the client, or unknown, left out; the subscription
 * ended at the server with the listen. */
Test(modern, listen_resource_subscriptions) {
        struct h_conn *m;
        json_object *r;

        add_demo("demo", "", "\"--subscribe\"");
        add_demo("secret", "", "\"--subscribe\",\"--resources\",\"1\"");
        set_settings("\"socketMode\":\"0666\",\"access\":{\"rules\":[{\"users\":[\"4242\"],\"servers\":[\"secret\"],"
                     "\"action\":\"deny\"}]}");
        start(NULL);
        cr_assert_eq(chmod(D.dir, 0711), 0);
        wait_all_ready(2);
        m = h_connect_as(D.sock, OTHER_UID, OTHER_UID, NULL, 0, "agent");
        cr_assert_not_null(m);
        r = call(m, LISTEN("3", "{\"resourceSubscriptions\":[\"demo://readme\",\"demo://res/1\",\"demo://nowhere\"]}"));
        cr_assert_str_eq(h_str(r, "method") ?: "?", "notifications/subscriptions/acknowledged", "%s", h_json_text(r));
        /* demo://readme is demo's (the first by name of the two that list it); demo://res/1
         * only secret's, which uid 4242 may not use */
        cr_assert(strstr(h_json_text(h_get(r, "params.notifications.resourceSubscriptions")), "demo://readme"), "%s",
                  h_json_text(r));
        cr_assert_null(strstr(h_json_text(r), "demo://res/1"), "%s", h_json_text(r));
        cr_assert_null(strstr(h_json_text(r), "demo://nowhere"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_recv(m, H_TIMEOUT_MS);
        cr_assert_str_eq(h_str(r, "method") ?: "?", "notifications/resources/updated", "%s", h_json_text(r));
        cr_assert_str_eq(subscription_of(r), "3", "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "params.uri") ?: "?", "demo://readme");
        json_object_put(r);
        /* cancelled: after what was on its way, nothing more */
        h_send(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}\n");
        h_send(m, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{" META "}}\n");
        for (;;) {
                r = h_recv(m, H_TIMEOUT_MS);
                if (strcmp(h_str(r, "id") ?: "", "9") == 0)
                        break;
                cr_assert_str_eq(h_str(r, "method") ?: "?", "notifications/resources/updated", "%s", h_json_text(r));
                json_object_put(r);
        }
        json_object_put(r);
        char *line = h_recv_line(m, 600);
        cr_assert_null(line, "after the listen ended: %s", line);
        h_close(m);
}

/* A modern connection's profile is its first request's: a later request naming it again
 * passes, one naming another is refused (a client's class is one), and the view is the
 * profile's. */
Test(modern, profile_is_the_first_requests) {
        struct h_conn *m;
        json_object *r;

        add_demo("pub", "", "");
        set_settings("\"profiles\":{\"research\":{\"tools\":[\"pub__echo\"]},\"ops\":{\"servers\":[\"pub\"]}}");
        start(NULL);
        wait_all_ready(1);
        m = h_connect(D.sock, H_TIMEOUT_MS);
#define PROFILE_META(p) "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
                        "\"io.modelcontextprotocol/clientCapabilities\":{},\"mcpvisor/profile\":\"" p "\"}"
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" PROFILE_META("research") "}}");
        cr_assert(h_has_item(h_tool_names(r), "pub__echo") && !h_has_item(h_tool_names(r), "pub__add"), "%s",
                  h_json_text(r));
        cr_assert_str_eq(h_str(r, "result.cacheScope"), "private");
        json_object_put(r);
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" PROFILE_META("research") "}}");
        cr_assert_null(h_get(r, "error"), "%s", h_json_text(r));
        json_object_put(r);
        r = call(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{" PROFILE_META("ops") "}}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        cr_assert(strstr(h_str(r, "error.message"), "profile 'research'"), "%s", h_json_text(r));
        json_object_put(r);
        r = modern(m, 4, "tools/list", "");
        cr_assert(!h_has_item(h_tool_names(r), "pub__add"), "still research's view: %s", h_json_text(r));
        json_object_put(r);
        h_close(m);
}
