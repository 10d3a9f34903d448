/* Servers of both eras behind the daemon (MCP 2026-07-28's "Backward Compatibility"): the
 * server/discover probe before initialize, run for real with the demo server in its
 * --discover modes. A modern server (it refuses every request without the modern _meta,
 * and initialize and ping outright) is ready and serves a legacy client's calls, progress
 * and all; legacy servers that answer the probe -32601 (the demo's default), -32602, never,
 * or exit on it are all served; the status says each server's era and version. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;

static void setup(void) {
        servers_reset(&D);
}

TestSuite(server_eras, .init = setup, .fini = servers_teardown, .timeout = 60);

/* The status row of server name (the caller puts *status). */
static json_object *status_row(const char *name, json_object **status) {
        json_object *servers;

        *status = h_control(&D, "status", NULL);
        servers = h_get(*status, "result.servers");
        for (size_t i = 0; servers && i < json_object_array_length(servers); i++) {
                json_object *row = json_object_array_get_idx(servers, i);

                if (strcmp(h_str(row, "name") ?: "", name) == 0)
                        return row;
        }
        cr_assert_fail("no status row for %s: %s", name, h_json_text(*status));
        return NULL;
}

static void expect_era(const char *name, const char *era, const char *version) {
        json_object *status, *row = status_row(name, &status);

        cr_expect_str_eq(h_str(row, "era") ?: "(none)", era, "%s: %s", name, h_json_text(row));
        cr_expect_str_eq(h_str(row, "protocolVersion") ?: "(none)", version, "%s: %s", name, h_json_text(row));
        json_object_put(status);
}

/* A legacy client calls a modern server's tools through the daemon: the daemon's _meta
 * goes with each call (the server refuses any request without it), the client's own
 * progressToken with it; the result, typed "complete" by the server, is a valid result. */
Test(server_eras, modern_server_serves_a_legacy_client) {
        struct h_client *x;
        json_object *r, *msg;

        add_demo("m", "", "\"--discover\",\"modern\"");
        add_demo("l", "", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open_with("{\"elicitation\":{}}");
        r = h_client_call(x, "1", "tools/list", NULL);
        cr_assert(h_has_item(h_tool_names(r), "m__echo"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(x, "2", "m__echo", "{\"text\":\"hi\"}");
        cr_assert_str_eq(h_result_text(r), "hi", "%s", h_json_text(r));
        json_object_put(r);
        h_client_request(x, "3", "tools/call",
                         "{\"name\":\"m__sleep\",\"arguments\":{\"ms\":600},\"_meta\":{\"progressToken\":\"tok\"}}");
        msg = h_take(x, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no progress from the modern server");
        cr_assert_str_eq(h_str(msg, "params.progressToken"), "tok", "%s", h_json_text(msg));
        json_object_put(msg);
        r = h_client_answer(x, "3");
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        /* the server read from the call's _meta the capabilities the daemon offers it for
         * this client: those the client declared at its initialize, no more */
        r = h_client_tool_call(x, "4", "m__client_capabilities", "{}");
        cr_assert_str_eq(h_result_text(r) ?: "(none)", "{\"elicitation\":{}}", "%s", h_json_text(r));
        json_object_put(r);
        cr_expect_eq(h_log_count(&D, "without the modern _meta"), 0, "a request went without the modern _meta");
        expect_era("m", "modern", "2026-07-28");
        expect_era("l", "legacy", "2025-11-25");
        h_client_close(x);
}

/* Health checks of a modern server use server/discover (it refuses ping, which would make
 * it unhealthy and restart it). */
Test(server_eras, modern_server_health_checked_without_ping) {
        json_object *status, *row;

        add_demo("m", "\"healthInterval\":0.1,\"healthFailures\":1", "\"--discover\",\"modern\"");
        start(NULL);
        wait_all_ready(1);
        /* several checks' time: still ready, never restarted */
        for (long long until = h_now_ms() + 600; h_now_ms() < until;)
                h_notify_drain(&D);
        row = status_row("m", &status);
        cr_assert_str_eq(h_str(row, "state"), "ready", "%s", h_json_text(row));
        cr_assert_eq(json_object_get_int(h_get(row, "restarts")), 0, "%s", h_json_text(row));
        json_object_put(status);
        cr_expect_eq(h_log_count(&D, "refused ping"), 0, "a modern server was pinged");
}

/* Legacy servers, whatever they do at the probe, are initialized and served. */
Test(server_eras, legacy_servers_served_whatever_the_probe_gets) {
        struct h_client *x;
        json_object *r, *status, *row;

        add_demo("invalid", "", "\"--discover\",\"invalid-params\"");
        add_demo("silent", "\"probeTimeout\":0.3", "\"--discover\",\"silent\"");
        add_demo("exits", "", "\"--discover\",\"exit\"");
        add_demo("pinned", "\"protocol\":\"legacy\"", "\"--discover\",\"exit\"");
        start(NULL);
        wait_all_ready(4);
        x = cl_open();
        for (const char *const *n = (const char *const[]){ "invalid", "silent", "exits", "pinned", NULL }; *n; n++) {
                r = h_client_tool_call(x, sf("\"%s\"", *n), sf("%s__echo", *n), "{\"text\":\"ok\"}");
                cr_assert_str_eq(h_result_text(r), "ok", "%s: %s", *n, h_json_text(r));
                json_object_put(r);
                expect_era(*n, "legacy", "2025-11-25");
        }
        /* the one that exits on the probe: restarted once, initialized without it */
        row = status_row("exits", &status);
        cr_expect_eq(json_object_get_int(h_get(row, "restarts")), 1, "%s", h_json_text(row));
        json_object_put(status);
        cr_expect_eq(h_log_count(&D, "exits: exiting on server/discover"), 1, "probed again after it ended on the probe");
        cr_expect(h_log_count(&D, "taken for a legacy server") >= 1);
        /* "protocol": "legacy" is never probed */
        row = status_row("pinned", &status);
        cr_expect_eq(json_object_get_int(h_get(row, "restarts")), 0, "%s", h_json_text(row));
        json_object_put(status);
        h_client_close(x);
}

/* "protocol": "modern" for a legacy server: the start fails, saying why. */
Test(server_eras, modern_configured_for_a_legacy_server_fails_its_start) {
        add_demo("l", "\"protocol\":\"modern\",\"startLimitBurst\":1", "");
        start(NULL);
        cr_assert(h_log_wait(&D, "server/discover failed", H_TIMEOUT_MS), "no word of the failed discover");
}

/* A modern client (no initialize, its _meta on each request) calls a modern server's
 * tool through the daemon: the server sees the daemon's _meta, the client its result. */
Test(server_eras, modern_client_calls_a_modern_server) {
        struct h_conn *c;
        json_object *r;

        add_demo("m", "", "\"--discover\",\"modern\"");
        start(NULL);
        wait_all_ready(1);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"m__echo\","
                      "\"arguments\":{\"text\":\"both modern\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                      "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n");
        cr_assert_str_eq(h_str(r, "result.content.0.text") ?: "(none)", "both modern", "%s", h_json_text(r));
        json_object_put(r);
        cr_expect_eq(h_log_count(&D, "without the modern _meta"), 0, "a request went without the modern _meta");
        h_close(c);
}

/* A modern call's tools/call to server, its client declaring caps (JSON text), more
 * members of its _meta; the answer. */
static json_object *modern_call(struct h_conn *c, int id, const char *tool, const char *args, const char *caps,
                                const char *more_meta) {
        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                   "\"arguments\":%s,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                   "\"io.modelcontextprotocol/clientCapabilities\":%s,"
                   "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"agent\",\"version\":\"1\"},"
                   "\"io.modelcontextprotocol/logLevel\":\"debug\"%s}}}\n",
                id, tool, args, caps, more_meta);
        return h_recv(c, H_TIMEOUT_MS);
}

/* The capabilities a modern server is offered in a call's _meta are those of the client
 * that made it, cut to what the daemon offers the server; roots when the server has roots
 * configured (the daemon answers those itself), whatever the client. */
Test(server_eras, modern_server_offered_the_callers_capabilities) {
        struct h_conn *c;
        json_object *r;

        add_demo("m", "", "\"--discover\",\"modern\"");
        add_demo("n", "\"clientCapabilities\":[\"roots\",\"elicitation\"],\"roots\":[\"/srv\"]",
                 "\"--discover\",\"modern\"");
        start(NULL);
        wait_all_ready(2);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = modern_call(c, 1, "m__client_capabilities", "{}", "{}", "");
        cr_assert_str_eq(h_str(r, "result.content.0.text") ?: "(none)", "{}", "%s", h_json_text(r));
        json_object_put(r);
        r = modern_call(c, 2, "m__client_capabilities", "{}", "{\"sampling\":{},\"elicitation\":{\"url\":{}}}", "");
        cr_assert_str_eq(h_str(r, "result.content.0.text") ?: "(none)", "{\"sampling\":{},\"elicitation\":{}}", "%s",
                         h_json_text(r));
        json_object_put(r);
        r = modern_call(c, 3, "n__client_capabilities", "{}", "{\"sampling\":{}}", "");
        cr_assert_str_eq(h_str(r, "result.content.0.text") ?: "(none)", "{\"roots\":{\"listChanged\":true}}", "%s",
                         h_json_text(r));
        json_object_put(r);
        h_close(c);
}

/* A modern client's calls to a legacy server: the server gets them without the modern
 * era's members of _meta (its session said its version and capabilities at initialize),
 * the client's own members (its progressToken) kept, and the client gets its answers. */
Test(server_eras, legacy_server_gets_no_modern_meta) {
        struct h_conn *c;
        json_object *r, *msg = NULL;
        unsigned progress = 0;

        add_demo("l", "", "");
        start(NULL);
        wait_all_ready(1);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = modern_call(c, 1, "l__echo", "{\"text\":\"from a modern client\"}", "{}", "");
        cr_assert_str_eq(h_str(r, "result.content.0.text") ?: "(none)", "from a modern client", "%s", h_json_text(r));
        json_object_put(r);
        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"l__sleep\","
                   "\"arguments\":{\"ms\":300},\"_meta\":{\"progressToken\":\"tok\","
                   "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n");
        for (long long end = h_now_ms() + H_TIMEOUT_MS; !msg && h_now_ms() < end;) {
                r = h_recv(c, H_TIMEOUT_MS);
                if (!r)
                        break;
                if (h_str(r, "method") && strcmp(h_str(r, "method"), "notifications/progress") == 0) {
                        cr_assert_str_eq(h_str(r, "params.progressToken") ?: "(none)", "tok", "%s", h_json_text(r));
                        progress++;
                } else
                        msg = json_object_get(r);
                json_object_put(r);
        }
        cr_assert_not_null(h_get(msg, "result"), "%s", msg ? h_json_text(msg) : "no answer");
        cr_expect_gt(progress, 0, "no progress: the client's progressToken did not reach the server");
        json_object_put(msg);
        /* the server's stderr in order: what it said of the calls came before this */
        r = modern_call(c, 3, "l__log", "{\"text\":\"marker after the calls\"}", "{}", "");
        json_object_put(r);
        cr_assert(h_log_wait(&D, "marker after the calls", H_TIMEOUT_MS));
        cr_expect_eq(h_log_count(&D, "legacy server got _meta"), 0, "a modern member of _meta reached the legacy server");
        h_close(c);
}
