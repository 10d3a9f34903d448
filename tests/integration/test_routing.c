/* Routing, run for real: clients call through the daemon into demo servers (see
 * demo/demo-server.c) and get the right answers back. Exposed names and their collisions,
 * ids and progress tokens on the way there and back, cancellation (by the client, by its
 * leaving, by requestTimeout), servers that end during a call or are not ready, the lists
 * served from the registry (waiting for first starts, pages, list_changed), resources,
 * prompts, instructions and capabilities.
 *
 * Every wait drains the daemon's NOTIFY datagrams (h_recv_line_draining, h_log_count_wait,
 * h_notify_wait): once their queue is full, its sd_notify() blocks and the daemon stands
 * still. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;

#define TOOLS "echo", "add", "sleep", "fail", "crash", "log", "env", "ask", "notify", "client_capabilities"
static const char *const tool_names[] = { TOOLS };
#define N_TOOLS (sizeof tool_names / sizeof tool_names[0])

static void setup(void) {
        servers_reset(&D);
}

TestSuite(routing, .init = setup, .fini = servers_teardown, .timeout = 30);

/* ---- helpers: the daemon and names ---- */

/* Stops this test's daemon (asserting a clean stop), for a test that tries several configs. */
static void next_daemon(void) {
        int status = h_stop_draining(&D, SIGTERM, H_TIMEOUT_MS);

        h_log_dump_if_verbose(&D);
        cr_assert(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the daemon did not stop cleanly");
        cr_assert(h_cleanup(&D));
        servers_reset(&D);
}

static void expect_log(const char *needle) {
        cr_assert(h_log_count_wait(&D, needle, 1, H_TIMEOUT_MS), "not in the log: %s", needle);
}

/* FNV-1a, 32 bits: the hash of names.h's fallback names. */
static uint32_t fnv1a(const char *s) {
        uint32_t h = 2166136261u;

        for (; *s; s++)
                h = (h ^ (uint8_t)*s) * 16777619u;
        return h;
}

static bool allowed_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.';
}

/* The fallback form of text, per names.h. */
static void fallback(const char *text, char out[129]) {
        size_t i = 0;

        for (; text[i] && i < 119; i++)
                out[i] = allowed_char(text[i]) ? text[i] : '_';
        snprintf(out + i, 129 - i, "-%08" PRIx32, fnv1a(text));
}

/* "P__echo,P__add,..." for the demo tools with exposed prefix P and separator sep. */
static const char *prefixed_tools(const char *prefix, const char *sep) {
        static char buf[2][1024];
        static unsigned next;
        char *out = buf[next++ % 2];
        size_t used = 0;

        for (size_t i = 0; i < N_TOOLS; i++)
                used += (size_t)snprintf(out + used, sizeof buf[0] - used, "%s%s%s%s", i ? "," : "", prefix, sep,
                                         tool_names[i]);
        return out;
}

/* ---- helpers: clients (see h_client_open) ---- */

static const char *error_message(json_object *msg) {
        cr_assert_not_null(h_get(msg, "error.message"), "expected an error, got %s", h_json_text(msg));
        return h_str(msg, "error.message");
}

/* ---- names ---- */

Test(routing, names_prefixed) {
        struct h_client *x;
        json_object *r;
        char want[2048];

        add_demo("b", "", "");
        add_demo("a", "", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open();
        r = h_client_call(x, "1", "tools/list", NULL);
        snprintf(want, sizeof want, "%s,%s", prefixed_tools("a", "__"), prefixed_tools("b", "__"));
        cr_assert_str_eq(h_tool_names(r), want);
        json_object_put(r);
        h_client_close(x);

        /* one server: prefixed all the same, so adding a second renames nothing */
        next_daemon();
        x = start_one_demo("a", NULL);
        r = h_client_call(x, "1", "tools/list", NULL);
        cr_assert_str_eq(h_tool_names(r), prefixed_tools("a", "__"));
        json_object_put(r);
        h_client_close(x);
}

/* Runs mcpvisord with the current config and the extra arguments; returns its exit status
 * (asserting it exits within the deadline) and leaves its log in *log. */
static int run_once(const char *const *extra_args, char **log) {
        struct h_daemon e;
        char *config = config_text();
        int status;

        h_start(&e, &(struct h_opts){ .config = config, .extra_args = extra_args });
        free(config);
        status = h_wait_exit(&e, H_TIMEOUT_MS);
        *log = h_log_text(&e);
        if (status == -1)
                h_stop(&e, SIGKILL, H_TIMEOUT_MS);
        h_cleanup(&e);
        cr_assert_neq(status, -1, "the daemon did not exit; its log:\n%s", *log);
        return status;
}

Test(routing, prefix_config) {
        static const char *const check[] = { "--check-config", NULL };
        struct h_client *x;
        json_object *r;
        const char *names;
        char *log;
        int status;

        add_demo("one", "\"prefix\":\"x\"", "");
        add_demo("two", "\"prefix\":\"\"", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open();
        r = h_client_call(x, "1", "tools/list", NULL);
        names = h_tool_names(r);
        cr_assert(h_has_item(names, "x__echo"), "no x__echo in %s", names);
        cr_assert(h_has_item(names, "echo"), "no bare echo in %s", names);
        cr_assert_null(strstr(names, "one__"), "the server's name was used despite its prefix: %s", names);
        cr_assert_null(strstr(names, "two__"), "the server's name was used despite its empty prefix: %s", names);
        json_object_put(r);
        r = h_client_tool_call(x, "2", "echo", "{\"text\":\"bare\"}");
        cr_assert_str_eq(h_result_text(r), "bare");
        json_object_put(r);
        r = h_client_tool_call(x, "3", "x__echo", "{\"text\":\"prefixed\"}");
        cr_assert_str_eq(h_result_text(r), "prefixed");
        json_object_put(r);
        h_client_close(x);

        next_daemon();
        set_settings("\"toolNameSeparator\":\".\"");
        x = start_one_demo("a", NULL);
        r = h_client_call(x, "1", "tools/list", NULL);
        cr_assert_str_eq(h_tool_names(r), prefixed_tools("a", "."));
        json_object_put(r);
        r = h_client_tool_call(x, "2", "a.echo", "{\"text\":\"dotted\"}");
        cr_assert_str_eq(h_result_text(r), "dotted");
        json_object_put(r);
        h_client_close(x);

        /* an invalid separator: the check fails, and the daemon refuses to start */
        next_daemon();
        set_settings("\"toolNameSeparator\":\"/\"");
        add_demo("a", "", "");
        status = run_once(check, &log);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "--check-config: status %d; log:\n%s", status, log);
        cr_assert_not_null(strstr(log, "toolNameSeparator"), "the problem is not named:\n%s", log);
        free(log);
        status = run_once(NULL, &log);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0, "started with an invalid separator; log:\n%s", log);
        cr_assert_not_null(strstr(log, "toolNameSeparator"), "the problem is not named:\n%s", log);
        free(log);

        /* teardown stops a daemon that ran fine */
        set_settings("");
        start(NULL);
        wait_all_ready(1);
}

Test(routing, collision_deterministic) {
        char echo_fb[129], env_fb[129];
        const char *names;
        struct h_client *x;
        json_object *r;

        /* zeta first in the file, and alpha slow to start so zeta is ready first: the name
         * order decides, not the file or the start order */
        add_demo("zeta", "\"prefix\":\"\"", "");
        add_demo("alpha", "\"prefix\":\"\"", "\"--slow-start\",\"300\"");
        start(NULL);
        wait_all_ready(2);
        fallback("zeta/echo", echo_fb);
        fallback("zeta/env", env_fb);
        cr_assert_str_eq(echo_fb, sf("zeta_echo-%08" PRIx32, fnv1a("zeta/echo")));

        x = cl_open();
        r = h_client_call(x, "1", "tools/list", NULL);
        names = h_tool_names(r);
        cr_assert(h_has_item(names, "echo"), "%s", names);
        cr_assert(h_has_item(names, echo_fb), "no %s in %s", echo_fb, names);
        cr_assert(h_has_item(names, env_fb), "no %s in %s", env_fb, names);
        cr_assert_eq(json_object_array_length(h_get(r, "result.tools")), 2 * N_TOOLS, "%s", names);
        json_object_put(r);
        expect_log(sf("[zeta] 'echo' is already exposed by another server; this server's 'echo' is exposed as '%s'",
                      echo_fb));

        r = h_client_tool_call(x, "2", "env", "{\"name\":\"MCPVISOR_SERVER\"}");
        cr_assert_str_eq(h_result_text(r), "alpha", "the bare name did not reach the server that sorts first");
        json_object_put(r);
        r = h_client_tool_call(x, "3", env_fb, "{\"name\":\"MCPVISOR_SERVER\"}");
        cr_assert_str_eq(h_result_text(r), "zeta", "the fallback name did not reach the other server");
        json_object_put(r);
        h_client_close(x);
}

Test(routing, long_names_fallback) {
        char prefix[126], full[160], want[129];
        json_object *r, *tools;
        struct h_client *x;

        memset(prefix, 'x', 125);
        prefix[125] = '\0';
        add_demo("long", sf("\"prefix\":\"%s\"", prefix), "");
        start(NULL);
        wait_all_ready(1);
        snprintf(full, sizeof full, "%s__echo", prefix);
        fallback(full, want);
        cr_assert_eq(strlen(want), 128);

        x = cl_open();
        r = h_client_call(x, "1", "tools/list", NULL);
        tools = h_get(r, "result.tools");
        cr_assert_eq(json_object_array_length(tools), N_TOOLS, "%s", h_json_text(r));
        for (size_t i = 0; i < N_TOOLS; i++) {
                const char *name = h_str(json_object_array_get_idx(tools, i), "name");
                cr_assert(strlen(name) >= 1 && strlen(name) <= 128, "'%s': %zu characters", name, strlen(name));
                for (const char *p = name; *p; p++)
                        cr_assert(allowed_char(*p), "'%s' has '%c'", name, *p);
        }
        cr_assert(h_has_item(h_tool_names(r), want), "no %s in %s", want, h_tool_names(r));
        json_object_put(r);
        r = h_client_tool_call(x, "2", want, "{\"text\":\"long\"}");
        cr_assert_str_eq(h_result_text(r), "long");
        json_object_put(r);
        h_client_close(x);
}

/* ---- calls: ids, progress, cancellation, timeouts ---- */

Test(routing, call_routes_and_keeps_id_types) {
        static const char *const ids[] = { "\"abc\"", "0", "123456789012", "-5", "\"0\"" };
        static const json_type types[] = { json_type_string, json_type_int, json_type_int, json_type_int,
                                           json_type_string };
        struct h_client *x;

        x = start_one_demo("a", NULL);
        /* all in flight at once, answered in any order */
        for (size_t i = 0; i < 5; i++)
                h_client_tool_request(x, ids[i], "a__echo", sf("{\"text\":\"call %zu\"}", i));
        for (size_t i = 0; i < 5; i++) {
                json_object *r = h_client_answer(x, ids[i]);
                cr_assert_eq(json_object_get_type(h_get(r, "id")), types[i], "id %s came back as %s", ids[i],
                             h_json_text(h_get(r, "id")));
                cr_assert_str_eq(h_result_text(r), sf("call %zu", i), "id %s got another call's answer", ids[i]);
                json_object_put(r);
        }
        h_client_close(x);
}

/* Reads x's messages until the answer to id 7: every progress before it must carry token
 * (as JSON text) and total ms; returns how many there were. None may come after. */
static unsigned expect_own_progress(struct h_client *x, const char *token, unsigned ms) {
        unsigned n = 0;
        json_object *msg, *r = h_client_answer(x, "7");

        cr_assert_str_eq(h_result_text(r), sf("slept %u ms", ms));
        json_object_put(r);
        while ((msg = h_take(x, h_is_method, "notifications/progress", 0))) {
                cr_assert_str_eq(h_json_text(h_get(msg, "params.progressToken")), token,
                                 "foreign or rewritten token: %s", h_json_text(msg));
                cr_assert_eq(json_object_get_int(h_get(msg, "params.total")), (int)ms, "another call's progress: %s",
                             h_json_text(msg));
                json_object_put(msg);
                n++;
        }
        return n;
}

Test(routing, progress_tokens_rewritten_and_restored) {
        struct h_client *c1, *c2, *c3;
        unsigned n1, n2, n3;
        json_object *late;

        c1 = start_one_demo("b", NULL);
        c2 = cl_open();
        c3 = cl_open();
        /* same request id and same token value on every client; totals tell the calls apart */
        h_client_request(c1, "7", "tools/call",
                         "{\"name\":\"b__sleep\",\"arguments\":{\"ms\":400},\"_meta\":{\"progressToken\":1}}");
        h_client_request(c2, "7", "tools/call",
                         "{\"name\":\"b__sleep\",\"arguments\":{\"ms\":600},\"_meta\":{\"progressToken\":1}}");
        h_client_request(c3, "7", "tools/call",
                         "{\"name\":\"b__sleep\",\"arguments\":{\"ms\":500},\"_meta\":{\"progressToken\":\"1\"}}");
        n1 = expect_own_progress(c1, "1", 400);
        n2 = expect_own_progress(c2, "1", 600);
        n3 = expect_own_progress(c3, "\"1\"", 500);
        cr_assert(n1 >= 2 && n2 >= 3 && n3 >= 2, "too little progress: %u %u %u", n1, n2, n3);
        /* after the answers: nothing more, in particular not the longer calls' progress */
        late = h_take(c1, h_is_method, "notifications/progress", 200);
        cr_assert_null(late, "progress after the answer: %s", late ? h_json_text(late) : "");
        late = h_take(c3, h_is_method, "notifications/progress", 0);
        cr_assert_null(late, "progress after the answer: %s", late ? h_json_text(late) : "");
        h_client_close(c1);
        h_client_close(c2);
        h_client_close(c3);
}

Test(routing, cancel_reaches_child) {
        json_object *msg, *r;
        char *log;
        struct h_client *x;

        x = start_one_demo("a", NULL);
        h_client_request(x, "\"slow-1\"", "tools/call",
                "{\"name\":\"a__sleep\",\"arguments\":{\"ms\":5000},\"_meta\":{\"progressToken\":\"tok\"}}");
        msg = h_take(x, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no progress: the call is not running");
        json_object_put(msg);
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                     "\"params\":{\"requestId\":\"slow-1\",\"reason\":\"changed my mind\"}}\n");
        /* the ping is handled after the cancellation: its answer means the cancel was taken */
        r = h_client_call(x, "99", "ping", NULL);
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        /* the demo server logs a cancellation only for the id of a job it runs: this line
         * proves it arrived under the child-side id */
        expect_log("\na: cancelled request ");
        log = h_log_text(&D);
        cr_assert_null(strstr(log, "a: cancelled request \"slow-1\""), "the client's id reached the child");
        free(log);
        json_object_array_del_idx(x->inbox, 0, json_object_array_length(x->inbox)); /* progress before the ping */
        msg = h_take(x, h_is_answer, "\"slow-1\"", 700);
        cr_assert_null(msg, "an answer for the cancelled request: %s", msg ? h_json_text(msg) : "");
        msg = h_take(x, h_is_method, "notifications/progress", 0);
        cr_assert_null(msg, "progress after the cancellation: %s", msg ? h_json_text(msg) : "");
        h_client_close(x);
}

Test(routing, client_disconnect_cancels) {
        struct h_client *x, *y;
        json_object *msg;

        x = start_one_demo("a", NULL);
        h_client_request(x, "1", "tools/call",
                         "{\"name\":\"a__sleep\",\"arguments\":{\"ms\":5000},\"_meta\":{\"progressToken\":1}}");
        msg = h_take(x, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no progress: the call is not running");
        json_object_put(msg);
        h_client_close(x);
        expect_log("\na: cancelled request ");
        y = cl_open();
        msg = h_client_tool_call(y, "1", "a__echo", "{\"text\":\"still here\"}");
        cr_assert_str_eq(h_result_text(msg), "still here");
        json_object_put(msg);
        h_client_close(y);
}

/* Without progress nothing is written to the closed connection, so only the close itself
 * can tell the daemon: the call is cancelled at once, not when the server answers. */
Test(routing, client_close_cancels_quiet_call) {
        struct h_client *x;
        long long t0;

        x = start_one_demo("a", NULL);
        h_client_request(x, "1", "tools/call", "{\"name\":\"a__sleep\",\"arguments\":{\"ms\":20000}}");
        t0 = h_now_ms();
        h_client_close(x);
        expect_log("\na: cancelled request ");
        cr_assert_lt(h_now_ms() - t0, 10000, "cancelled only when the call would have ended");
}

/* maxInFlight: a request past it is refused at once and the client stays connected; the
 * requests held go on, requests the daemon answers itself still are, and a request is
 * taken again once one is answered or cancelled (cancelled here under a uint64 id, found
 * by its hash). */
Test(routing, max_in_flight) {
        static const char *const held[] = { "1", "\"2\"", "18446744073709551614", "-4", "5", "6", "7", "8" };
        struct h_client *x;
        json_object *r;

        set_settings("\"maxInFlight\":8");
        x = start_one_demo("a", NULL);
        for (size_t i = 0; i < 8; i++)
                h_client_tool_request(x, held[i], "a__sleep", i == 0 ? "{\"ms\":1500}" : "{\"ms\":3000}");
        r = h_client_call(x, "\"p\"", "ping", NULL);
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(x, "\"ninth\"", "a__echo", "{\"text\":\"no\"}");
        cr_assert_str_eq(error_message(r), "too many requests in flight (maxInFlight 8); wait for answers before sending more");
        cr_assert_eq(json_object_get_int(h_get(r, "error.data.maxInFlight")), 8, "%s", h_json_text(r));
        json_object_put(r);
        r = h_take(x, h_is_answer, "1", 0);
        cr_assert_null(r, "refused only after a call ended: %s", r ? h_json_text(r) : "");

        r = h_client_answer(x, "1");
        cr_assert_str_eq(h_result_text(r), "slept 1500 ms", "%s", h_json_text(r));
        json_object_put(r);
        h_client_tool_request(x, "10", "a__sleep", "{\"ms\":3000}");
        r = h_client_tool_call(x, "11", "a__echo", "{\"text\":\"no\"}");
        cr_assert_not_null(strstr(error_message(r), "maxInFlight 8"), "%s", h_json_text(r));
        json_object_put(r);

        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                     "\"params\":{\"requestId\":18446744073709551614}}\n");
        r = h_client_tool_call(x, "12", "a__echo", "{\"text\":\"back\"}");
        cr_assert_str_eq(h_result_text(r), "back", "%s", h_json_text(r));
        json_object_put(r);
        for (size_t i = 1; i < 8; i++) {
                if (i == 2)
                        continue;
                r = h_client_answer(x, held[i]);
                cr_assert_str_eq(h_result_text(r), "slept 3000 ms", "%s: %s", held[i], h_json_text(r));
                json_object_put(r);
        }
        r = h_client_answer(x, "10");
        cr_assert_str_eq(h_result_text(r), "slept 3000 ms", "%s", h_json_text(r));
        json_object_put(r);
        r = h_take(x, h_is_answer, held[2], 0);
        cr_assert_null(r, "an answer for the cancelled request: %s", r ? h_json_text(r) : "");
        h_client_close(x);
}

Test(routing, request_timeout) {
        long long t0, elapsed;
        json_object *r;
        struct h_client *x;
        unsigned progress = 0;

        add_demo("a", "\"requestTimeout\":0.3", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        t0 = h_now_ms();
        r = h_client_tool_call(x, "1", "a__sleep", "{\"ms\":2000}");
        elapsed = h_now_ms() - t0;
        cr_assert_not_null(strstr(error_message(r), "requestTimeout"), "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "'a'"), "%s", h_json_text(r));
        cr_assert(elapsed >= 250 && elapsed < 1000, "the timeout came after %lld ms", elapsed);
        json_object_put(r);
        expect_log("\na: cancelled request ");

        /* progress every 100 ms keeps a 600 ms call alive past 0.3 s */
        r = h_client_call(x, "2", "tools/call",
                          "{\"name\":\"a__sleep\",\"arguments\":{\"ms\":600},\"_meta\":{\"progressToken\":5}}");
        cr_assert_str_eq(h_result_text(r), "slept 600 ms", "%s", h_json_text(r));
        json_object_put(r);
        while ((r = h_take(x, h_is_method, "notifications/progress", 0))) {
                progress++;
                json_object_put(r);
        }
        cr_assert_geq(progress, 3);
        h_client_close(x);
}

Test(routing, crash_mid_call) {
        json_object *r;
        struct h_client *x;

        add_demo("a", "", "");
        add_demo("b", "\"restartDelay\":0.2", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open();
        h_client_tool_request(x, "\"slow\"", "a__sleep", "{\"ms\":300}");
        h_client_tool_request(x, "\"boom\"", "b__crash", "{}");
        r = h_client_answer(x, "\"boom\"");
        cr_assert_not_null(strstr(error_message(r), "'b'"), "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "exited with status 3 during this call"), "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "restarting in"), "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "error.data.server"), "b");
        json_object_put(r);
        /* a's call is none of b's business */
        r = h_client_answer(x, "\"slow\"");
        cr_assert_str_eq(h_result_text(r), "slept 300 ms");
        json_object_put(r);

        cr_assert(h_log_count_wait(&D, "[b] starting -> ready", 2, H_TIMEOUT_MS), "b was not restarted");
        r = h_client_tool_call(x, "3", "b__echo", "{\"text\":\"back\"}");
        cr_assert_str_eq(h_result_text(r), "back");
        json_object_put(r);
        h_client_close(x);
}

/* When the daemon ends a server (here: its pings go unanswered), a call in flight is told
 * why, not "killed by SIGTERM" (the daemon's own signal); and so is a call that comes while
 * it waits to restart. */
Test(routing, a_call_is_told_why_the_daemon_ended_its_server) {
        json_object *r;
        struct h_client *x;

        add_demo("h",
                 "\"healthInterval\":0.2,\"healthTimeout\":0.2,\"healthFailures\":1,\"stopTimeout\":0.2,"
                 "\"restartDelay\":30",
                 "\"--ping-fail-after\",\"0\",\"--ignore-stdin-eof\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        h_client_tool_request(x, "\"slow\"", "h__sleep", "{\"ms\":10000}");
        r = h_client_answer(x, "\"slow\"");
        cr_assert_not_null(strstr(error_message(r), "server 'h' ended (1 health check failed in a row: no answer to ping "
                                                    "within healthTimeout (0.2 s), then stopped with SIGTERM after "
                                                    "stopTimeout (0.2 s)) during this call; restarting in"),
                           "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(x, "2", "h__echo", "{\"text\":\"x\"}");
        cr_assert_not_null(strstr(error_message(r), "server 'h' is not ready (backoff: 1 health check failed in a "
                                                    "row: no answer to ping within healthTimeout (0.2 s), then stopped "
                                                    "with SIGTERM after stopTimeout (0.2 s); restarting in"),
                           "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* ---- answers over maxServerMessageSize ---- */

/* Server b, ready, and a client, with servers' lines limited to 1 MiB. */
static struct h_client *start_limited(void) {
        add_demo("b", "\"restartDelay\":0.2", "");
        set_settings("\"maxServerMessageSize\":1048576");
        start(NULL);
        wait_all_ready(1);
        return cl_open();
}

/* An answer over the limit whose id comes first fails its call, and only that: the server
 * keeps running and answers the next call. */
Test(routing, oversize_answer_named_first_fails_its_call) {
        struct h_client *x = start_limited();
        json_object *r;

        r = h_client_tool_call(x, "1", "b__echo", "{\"bytes\":2097152}");
        cr_assert_not_null(strstr(error_message(r), "server 'b' answered with a message of more than 1048576 bytes "
                                                    "(maxServerMessageSize); it was discarded"),
                           "%s", h_json_text(r));
        cr_assert_eq(h_error_code(r), -32603);
        cr_assert_str_eq(h_str(r, "error.data.server"), "b");
        json_object_put(r);
        r = h_client_tool_call(x, "2", "b__echo", "{\"text\":\"after\"}");
        cr_assert_str_eq(h_result_text(r), "after");
        json_object_put(r);
        cr_assert_eq(h_log_count(&D, "[b] starting -> ready"), 1, "b was restarted");
        cr_assert_eq(h_log_count(&D, "[b] ready -> stopping"), 0, "b was stopped");
        h_client_close(x);
}

/* Output that cannot be matched to a call: the server is restarted, and the call in flight
 * is told why. */
static void expect_restart_after(const char *arguments) {
        struct h_client *x = start_limited();
        json_object *r;

        r = h_client_tool_call(x, "1", "b__echo", arguments);
        cr_assert_not_null(strstr(error_message(r), "server 'b' ended (wrote a line over maxServerMessageSize (1048576 "
                                                    "bytes) that names no call in its first 4096 bytes, then "),
                           "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), ") during this call; restarting in"), "%s", h_json_text(r));
        cr_assert_null(strstr(error_message(r), "stopTimeout"), "not ended at once: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_count_wait(&D, "[b] starting -> ready", 2, H_TIMEOUT_MS), "b was not restarted");
        r = h_client_tool_call(x, "2", "b__echo", "{\"text\":\"after\"}");
        cr_assert_str_eq(h_result_text(r), "after");
        json_object_put(r);
        h_client_close(x);
}

/* The TypeScript SDK writes the id after the result. */
Test(routing, oversize_answer_named_last_restarts_its_server) {
        expect_restart_after("{\"bytes\":2097152,\"idLast\":true}");
}

/* Bytes without a newline are over the limit before any line ends (1 GiB of them once
 * stayed unnoticed). */
Test(routing, unterminated_output_over_the_limit_restarts_its_server) {
        expect_restart_after("{\"bytes\":2097152,\"unterminated\":true}");
}

/* Servers' answers have a larger default limit than clients' requests: a 17 MiB result (a
 * read_file of a 17 MB file) passes through intact. */
Test(routing, a_17_mib_answer_passes_under_the_default_limit) {
        struct h_client *x = start_one_demo("b", NULL);
        const size_t n = 17u * 1024 * 1024;
        const char *text;
        json_object *r;

        r = h_client_tool_call(x, "1", "b__echo", sf("{\"bytes\":%zu}", n));
        text = h_result_text(r);
        cr_assert_eq(strlen(text), n);
        cr_assert_eq(strspn(text, "x"), n);
        json_object_put(r);
        h_client_close(x);
}

Test(routing, in_flight_failed_on_exit) {
        static const char *const ids[] = { "\"s1\"", "\"s2\"", "\"crash\"" };
        struct h_client *x, *y;
        json_object *r;

        add_demo("b", "\"restartDelay\":0.2", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        y = cl_open();
        h_client_tool_request(x, ids[0], "b__sleep", "{\"ms\":3000}");
        h_client_tool_request(x, ids[1], "b__sleep", "{\"ms\":3000}");
        /* both sleeps are in the server before it crashes: a ping through b is answered after them */
        r = h_client_call(x, "\"mark\"", "tools/call", "{\"name\":\"b__echo\",\"arguments\":{\"text\":\"m\"}}");
        json_object_put(r);
        h_client_tool_request(y, ids[2], "b__crash", "{}");
        for (size_t i = 0; i < 3; i++) {
                r = h_client_answer(i < 2 ? x : y, ids[i]);
                cr_assert_not_null(strstr(error_message(r), "server 'b' exited with status 3"), "%s",
                                   h_json_text(r));
                json_object_put(r);
        }
        /* after the restart, nothing more comes for them */
        cr_assert(h_log_count_wait(&D, "[b] starting -> ready", 2, H_TIMEOUT_MS), "b was not restarted");
        r = h_client_call(x, "\"p\"", "ping", NULL);
        json_object_put(r);
        r = h_client_call(y, "\"p\"", "ping", NULL);
        json_object_put(r);
        for (size_t i = 0; i < 3; i++) {
                r = h_take(i < 2 ? x : y, h_is_answer, ids[i], i == 0 ? 300 : 0);
                cr_assert_null(r, "a second answer for %s: %s", ids[i], r ? h_json_text(r) : "");
        }
        h_client_close(x);
        h_client_close(y);
}

Test(routing, not_ready_server) {
        json_object *r;
        struct h_client *x;

        add_entry("\"gh\":{\"command\":\"no-such-cmd\"}");
        add_demo("bo", "\"restartDelay\":5", "\"--exit-at-start\",\"3\"");
        add_demo("ok", "", "");
        start(NULL);
        expect_log("[gh] stopped -> failed: cannot start: command 'no-such-cmd' not found in PATH");
        /* from starting or via stopping, as its pipes and its exit are seen; only bo backs off here */
        expect_log(" -> backoff: ");
        expect_log("[ok] starting -> ready");
        x = cl_open();
        r = h_client_tool_call(x, "1", "gh__anything", "{}");
        cr_assert_not_null(strstr(error_message(r), "server 'gh' is not ready (failed: cannot start: command "
                                                    "'no-such-cmd' not found in PATH"),
                           "%s", h_json_text(r));
        /* the daemon logs to its stderr here: journalctl would show nothing */
        cr_assert_not_null(strstr(error_message(r), "; its log: mcpvisord's stderr"), "%s", h_json_text(r));
        cr_assert_null(strstr(error_message(r), "journalctl"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(x, "2", "bo__echo", "{\"text\":\"x\"}");
        cr_assert_not_null(strstr(error_message(r), "server 'bo' is not ready"), "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "backoff"), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* Under systemd (its stderr is the journal) the errors point at journalctl. */
Test(routing, not_ready_server_under_the_journal) {
        json_object *r;
        struct h_client *x;

        close(h_fake_journald()); /* records refused: none in the host's journal */
        add_entry("\"gh\":{\"command\":\"no-such-cmd\"}");
        start_logging_to_journal();
        cr_assert(h_notify_wait(&D, "STATUS=0/1 servers ready; gh failed", H_TIMEOUT_MS), "%s", D.notices);
        x = cl_open();
        r = h_client_tool_call(x, "1", "gh__anything", "{}");
        cr_assert_not_null(strstr(error_message(r), "; its log: journalctl -t gh"), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* A server's stderr is for operators: a call to a server that failed (at start, or during
 * the call) is told the state, the cause and where the log is, never its stderr line, which
 * may hold a credential; the control socket's status still shows that line. */
#define SECRET "auth failed for token ghp_s3cr3t0123456789"

static json_object *status_row(const char *name) {
        json_object *st = h_control(&D, "status", NULL), *rows = h_get(st, "result.servers"), *row = NULL;

        cr_assert(json_object_is_type(rows, json_type_array), "%s", h_json_text(st));
        for (size_t i = 0; i < json_object_array_length(rows) && !row; i++)
                if (strcmp(h_str(json_object_array_get_idx(rows, i), "name"), name) == 0)
                        row = json_object_get(json_object_array_get_idx(rows, i));
        json_object_put(st);
        cr_assert_not_null(row, "no status row for %s", name);
        return row;
}

static void expect_no_secret(json_object *r) {
        cr_assert_null(strstr(h_json_text(r), "ghp_"), "a client saw the server's stderr: %s", h_json_text(r));
}

Test(routing, stderr_stays_with_operators) {
        json_object *r, *row;
        struct h_client *x;

        add_demo("gh", "\"restart\":\"never\"", "\"--exit-at-start\",\"1\",\"--stderr\",\"" SECRET "\"");
        add_demo("bo", "\"restartDelay\":30", "\"--exit-at-start\",\"2\",\"--stderr\",\"" SECRET "\"");
        add_demo("b", "\"restartDelay\":30", "");
        start(NULL);
        /* from starting or via stopping, as its stdout's end and its exit are seen */
        expect_log("-> failed: ");
        expect_log("-> backoff: ");
        cr_assert(h_log_count_wait(&D, "; last stderr line: " SECRET, 2, H_TIMEOUT_MS), "the operators' log lacks the line");
        expect_log("[b] starting -> ready");
        x = cl_open();
        r = h_client_tool_call(x, "1", "gh__echo", "{\"text\":\"x\"}");
        cr_assert_not_null(strstr(error_message(r), "server 'gh' is not ready (failed: "), "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "exit status 1"), "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "); its log: mcpvisord's stderr"), "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "error.data.state"), "failed");
        expect_no_secret(r);
        json_object_put(r);
        r = h_client_tool_call(x, "2", "bo__echo", "{\"text\":\"x\"}");
        cr_assert_not_null(strstr(error_message(r), "server 'bo' is not ready (backoff: "), "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "exit status 2"), "%s", h_json_text(r));
        expect_no_secret(r);
        json_object_put(r);
        /* a call in flight when its server ends, the secret its last words */
        r = h_client_tool_call(x, "3", "b__log", "{\"text\":\"" SECRET "\"}");
        json_object_put(r);
        h_inbox_drop(x, h_is_method, "notifications/message"); /* what the server chose to send */
        r = h_client_tool_call(x, "4", "b__crash", "{}");
        cr_assert_not_null(strstr(error_message(r), "server 'b' exited with status 3 during this call"), "%s", h_json_text(r));
        expect_no_secret(r);
        json_object_put(r);
        h_client_close(x);

        row = status_row("gh");
        cr_assert_str_eq(h_str(row, "lastStderr.line"), SECRET, "%s", h_json_text(row));
        json_object_put(row);
}

/* A cause never shows a credential: a PATH read from one is named in the spawn error. */
Test(routing, a_credential_path_is_not_shown) {
        char creds[] = "/tmp/mcpvisor-it-creds-XXXXXX";
        json_object *r;
        struct h_client *x;
        FILE *f;

        cr_assert_not_null(mkdtemp(creds));
        f = fopen(sf("%s/path", creds), "we");
        cr_assert_not_null(f);
        fputs("/opt/ghp_s3cr3t/bin:/usr/bin\n", f);
        fclose(f);
        const char *const env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };
        add_entry("\"gh\":{\"command\":\"no-such-cmd\",\"env\":{\"PATH\":{\"credential\":\"path\"}}}");
        start(env);
        expect_log("[gh] stopped -> failed: cannot start: command 'no-such-cmd' not found in PATH (from credential 'path')");
        x = cl_open();
        r = h_client_tool_call(x, "1", "gh__anything", "{}");
        cr_assert_not_null(strstr(error_message(r), "server 'gh' is not ready (failed: cannot start: command 'no-such-cmd' "
                                                    "not found in PATH (from credential 'path')"), "%s", h_json_text(r));
        expect_no_secret(r);
        json_object_put(r);
        h_client_close(x);
        cr_assert_eq(h_log_count(&D, "ghp_"), 0, "the credential is in the log");
        h_remove_tree(creds);
}

Test(routing, unknown_tool) {
        json_object *r;
        struct h_client *x;

        x = start_one_demo("a", NULL);
        r = h_client_tool_call(x, "1", "nosuch", "{}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "Unknown tool"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(x, "2", "zz__echo", "{}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "3", "tools/call", "{\"arguments\":{}}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "4", "tools/call", "{\"name\":42}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* A progress token must be a string or an integer; null or 1.5 could not be given back. */
Test(routing, bad_progress_token) {
        json_object *r;
        struct h_client *x;

        x = start_one_demo("a", NULL);
        r = h_client_call(x, "1", "tools/call",
                          "{\"name\":\"a__echo\",\"arguments\":{\"text\":\"x\"},\"_meta\":{\"progressToken\":null}}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        cr_assert_not_null(strstr(error_message(r), "progressToken"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "2", "tools/call",
                          "{\"name\":\"a__echo\",\"arguments\":{\"text\":\"x\"},\"_meta\":{\"progressToken\":1.5}}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "3", "tools/call",
                          "{\"name\":\"a__echo\",\"arguments\":{\"text\":\"ok\"},\"_meta\":{\"progressToken\":\"t\"}}");
        cr_assert_eq(h_error_code(r), 0, "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* ---- lists ---- */

Test(routing, list_waits_for_first_start) {
        long long t0, elapsed;
        json_object *r, *msg;
        struct h_client *x;

        add_demo("slow", "", "\"--slow-start\",\"700\"");
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open();
        t0 = h_now_ms();
        r = h_client_call(x, "1", "tools/list", NULL);
        elapsed = h_now_ms() - t0;
        cr_assert_str_eq(h_tool_names(r), prefixed_tools("slow", "__"), "answered after %lld ms", elapsed);
        json_object_put(r);
        h_client_close(x);

        next_daemon();
        set_settings("\"listWait\":0.2");
        add_demo("slow", "", "\"--slow-start\",\"2000\"");
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open();
        t0 = h_now_ms();
        r = h_client_call(x, "1", "tools/list", NULL);
        elapsed = h_now_ms() - t0;
        cr_assert_str_eq(h_tool_names(r), "", "the slow server was not slow enough?");
        cr_assert(elapsed >= 150 && elapsed < 1000, "answered after %lld ms, not after listWait", elapsed);
        json_object_put(r);
        msg = h_take(x, h_is_method, "notifications/tools/list_changed", 4000);
        cr_assert_not_null(msg, "no list_changed when the server became ready");
        json_object_put(msg);
        r = h_client_call(x, "2", "tools/list", NULL);
        cr_assert_str_eq(h_tool_names(r), prefixed_tools("slow", "__"));
        json_object_put(r);
        h_client_close(x);
}

Test(routing, pagination) {
        char seen[4096] = "", want[4096];
        const char *cursor = NULL;
        json_object *r;
        struct h_client *x;
        unsigned pages = 0, total = 0;
        size_t used = 0;

        set_settings("\"listPageSize\":3");
        /* the server pages too (4 at a time): the daemon must gather all of its pages */
        add_demo("p", "", "\"--tools\",\"5\",\"--page-size\",\"4\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        for (;;) {
                char id[16];
                json_object *tools, *next;

                snprintf(id, sizeof id, "%u", pages + 1);
                r = h_client_call(x, id, "tools/list", cursor ? sf("{\"cursor\":\"%s\"}", cursor) : "{}");
                tools = h_get(r, "result.tools");
                cr_assert_not_null(tools, "%s", h_json_text(r));
                cr_assert_leq(json_object_array_length(tools), 3, "a page of %zu", json_object_array_length(tools));
                for (size_t i = 0; i < json_object_array_length(tools); i++) {
                        const char *name = h_str(json_object_array_get_idx(tools, i), "name");
                        cr_assert_not(h_has_item(seen, name), "%s listed twice", name);
                        used += (size_t)snprintf(seen + used, sizeof seen - used, "%s%s", used ? "," : "", name);
                        total++;
                }
                pages++;
                cr_assert_leq(pages, 10, "no end to the pages");
                next = h_get(r, "result.nextCursor");
                if (!next) {
                        json_object_put(r);
                        break;
                }
                cr_assert(json_object_is_type(next, json_type_string));
                cursor = sf("%s", json_object_get_string(next));
                json_object_put(r);
        }
        snprintf(want, sizeof want, "%s,p__tool_1,p__tool_2,p__tool_3,p__tool_4,p__tool_5", prefixed_tools("p", "__"));
        cr_assert_str_eq(seen, want);
        cr_assert_eq(total, N_TOOLS + 5);
        cr_assert_eq(pages, (N_TOOLS + 5 + 2) / 3);

        r = h_client_call(x, "20", "tools/list", "{\"cursor\":\"bogus\"}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "21", "tools/list", "{\"cursor\":\"mcpvisor:9999\"}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* The names of every tool a client is listed, following the cursors: "a,b,...". */
static char *all_tool_names(struct h_client *x, unsigned *count) {
        size_t size = 1 << 20, used = 0;
        char *names = calloc(1, size), *cursor = NULL;
        unsigned pages = 0;

        cr_assert_not_null(names);
        *count = 0;
        do {
                json_object *r = h_client_call(x, sf("%u", ++pages), "tools/list",
                                               cursor ? sf("{\"cursor\":\"%s\"}", cursor) : "{}");
                json_object *tools = h_get(r, "result.tools"), *next = h_get(r, "result.nextCursor");

                cr_assert_not_null(tools, "%s", h_json_text(r));
                for (size_t i = 0; i < json_object_array_length(tools); i++, (*count)++)
                        used += (size_t)snprintf(names + used, size - used, "%s%s", used ? "," : "",
                                                 h_str(json_object_array_get_idx(tools, i), "name"));
                cr_assert_lt(used, size - 1, "the names do not fit");
                free(cursor);
                cursor = next ? strdup(json_object_get_string(next)) : NULL;
                json_object_put(r);
                cr_assert_leq(pages, 1000, "no end to the pages");
        } while (cursor);
        return names;
}

/* A server offering 12,000 tools (and the demo's own ten, first) is served its first 10,000
 * (maxCatalogItems' default), said once in the log; raised, the limit lets all through. */
Test(routing, catalog_item_limit, .timeout = 60) {
        static const char *const limits[] = { "", "\"maxCatalogItems\":20000" };
        const unsigned served[] = { 10000, (unsigned)N_TOOLS + 12000 };

        for (size_t i = 0; i < 2; i++) {
                struct h_client *x;
                unsigned count;
                char *names;

                add_demo("p", limits[i], "\"--tools\",\"12000\",\"--page-size\",\"1000\"");
                start(NULL);
                wait_all_ready(1);
                x = cl_open();
                names = all_tool_names(x, &count);
                cr_assert_eq(count, served[i], "%u tools listed, not %u", count, served[i]);
                cr_assert(strncmp(names, prefixed_tools("p", "__"), strlen(prefixed_tools("p", "__"))) == 0,
                          "the demo's own tools first");
                cr_assert_eq(h_has_item(names, sf("p__tool_%u", served[i] - (unsigned)N_TOOLS)), true);
                cr_assert_eq(h_has_item(names, sf("p__tool_%u", served[i] - (unsigned)N_TOOLS + 1)), false);
                free(names);
                h_client_close(x);
                if (i == 0) {
                        expect_log("[p] offers more than 10000 tools; only the first 10000 are served (maxCatalogItems)");
                        next_daemon();
                } else {
                        cr_assert_eq(h_log_count(&D, "maxCatalogItems"), 0);
                }
        }
}

Test(routing, list_changed_on_restart) {
        json_object *r, *msg;
        const char *names;
        struct h_client *x, *y;

        add_demo("a", "", "");
        add_demo("b", "\"restartDelay\":0.5", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open();
        y = cl_open();
        r = h_client_call(x, "0", "tools/list", NULL); /* a client is told of lists it holds */
        cr_assert(h_has_item(h_tool_names(r), "b__echo"));
        json_object_put(r);
        h_client_tool_request(y, "1", "b__crash", "{}");
        msg = h_take(x, h_is_method, "notifications/tools/list_changed", H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no list_changed when b went away");
        json_object_put(msg);
        r = h_client_call(x, "1", "tools/list", NULL);
        names = h_tool_names(r);
        cr_assert_str_eq(names, prefixed_tools("a", "__"), "b's tools are still listed");
        json_object_put(r);
        msg = h_take(x, h_is_method, "notifications/tools/list_changed", H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no list_changed when b came back");
        json_object_put(msg);
        r = h_client_call(x, "2", "tools/list", NULL);
        cr_assert(h_has_item(h_tool_names(r), "b__echo"), "b's tools are not back: %s", h_tool_names(r));
        json_object_put(r);
        h_client_close(x);
        h_client_close(y);
}

/* ---- resources and prompts ---- */

Test(routing, resources) {
        json_object *r;
        struct h_client *x;

        add_demo("a", "", "");
        add_demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open();
        r = h_client_call(x, "1", "resources/list", NULL);
        cr_assert_str_eq(h_names_of(r, "resources", "uri"), "demo://readme", "%s", h_json_text(r));
        json_object_put(r);
        expect_log("resource demo://readme is also listed by another server");

        r = h_client_call(x, "2", "resources/read", "{\"uri\":\"demo://readme\"}");
        cr_assert_not_null(strstr(h_str(r, "result.contents.0.text"), "demo server"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "3", "resources/read", "{\"uri\":\"demo://item/42\"}");
        cr_assert_str_eq(h_str(r, "result.contents.0.text"), "This is item 42.\n", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "4", "resources/read", "{\"uri\":\"demo://nothing\"}");
        cr_assert_eq(h_error_code(r), -32002, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "error.data.uri"), "demo://nothing", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "5", "resources/templates/list", NULL);
        cr_assert(h_has_item(h_names_of(r, "resourceTemplates", "uriTemplate"), "demo://item/{id}"), "%s",
                  h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

Test(routing, prompts) {
        json_object *r;
        struct h_client *x;

        x = start_one_demo("a", NULL);
        r = h_client_call(x, "1", "prompts/list", NULL);
        cr_assert_str_eq(h_names_of(r, "prompts", "name"), "a__greeting", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "2", "prompts/get", "{\"name\":\"a__greeting\",\"arguments\":{\"name\":\"Ada\"}}");
        cr_assert_str_eq(h_str(r, "result.messages.0.content.text"), "Please greet Ada warmly.", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "3", "prompts/get", "{\"name\":\"greeting\"}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* ---- initialize ---- */

Test(routing, instructions) {
        json_object *r;
        const char *text;
        struct h_client *x;

        add_demo("a", "", "\"--instructions\",\"Server A helps.\"");
        add_demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        x = h_client_open(&D, false, &r);
        text = h_str(r, "result.instructions");
        cr_assert_not_null(strstr(text, "## a\nServer A helps.\n"), "instructions: %s", text);
        cr_assert_not_null(strstr(text, "## b\nA demo server for mcpvisor"), "instructions: %s", text);
        json_object_put(r);
        h_client_close(x);
}

Test(routing, capabilities) {
        json_object *r;
        struct h_client *x;

        add_demo("a", "", "");
        start(NULL);
        x = h_client_open(&D, false, &r);
        cr_assert(json_object_get_boolean(h_get(r, "result.capabilities.tools.listChanged")), "%s", h_json_text(r));
        cr_assert(json_object_get_boolean(h_get(r, "result.capabilities.prompts.listChanged")), "%s", h_json_text(r));
        cr_assert(json_object_get_boolean(h_get(r, "result.capabilities.resources.listChanged")), "%s", h_json_text(r));
        cr_assert(json_object_is_type(h_get(r, "result.capabilities.completions"), json_type_object), "%s",
                  h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* ---- answers passed through ---- */

Test(routing, fail_passthrough) {
        json_object *r;
        struct h_client *x;

        x = start_one_demo("b", NULL);
        r = h_client_tool_call(x, "\"f-1\"", "b__fail", "{}");
        cr_assert_eq(h_error_code(r), -32000, "%s", h_json_text(r));
        cr_assert_str_eq(error_message(r), "failed on purpose");
        cr_assert(json_object_is_type(h_get(r, "id"), json_type_string));
        json_object_put(r);
        h_client_close(x);
}

/* A server's result reaches the client as the server wrote it: numbers, escapes and
 * spacing unchanged, under the client's id. */
Test(routing, result_passed_as_written) {
        static const char result[] = "{ \"content\" : [{\"type\":\"text\",\"text\":\"caf\\u00e9 \\ud83d\\ude00 \\/\"}],"
                                     " \"n\":1.50, \"big\":12345678901234567890123, \"e\":1E+2 }";
        struct h_client *x;
        json_object *raw = json_object_new_string(sf("\"result\":%s", result));
        char *line;

        x = start_one_demo("a", NULL);
        h_client_tool_request(x, "\"r-1\"", "a__echo", sf("{\"raw\":%s}", h_json_text(raw)));
        line = h_recv_line(x->c, H_TIMEOUT_MS);
        cr_assert_not_null(line, "no answer");
        cr_assert_str_eq(line, sf("{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"result\":%s}", result));
        free(line);
        json_object_put(raw);
        h_client_close(x);
}

/* A server's broken answer still ends the call, with an error that says so. */
Test(routing, broken_answer_from_server) {
        static const char *const broken[] = {
                "\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}",
                "\"error\":\"not an object\"",
                "\"x\":1",
        };
        struct h_client *x;
        json_object *r;

        x = start_one_demo("a", NULL);
        for (size_t i = 0; i < 3; i++) {
                json_object *raw = json_object_new_string(broken[i]);
                r = h_client_tool_call(x, sf("%zu", i), "a__echo", sf("{\"raw\":%s}", h_json_text(raw)));
                cr_assert_eq(h_error_code(r), -32603, "%s", h_json_text(r));
                cr_assert(strstr(error_message(r), "server 'a' answered with an invalid response"), "%s", h_json_text(r));
                json_object_put(r);
                json_object_put(raw);
        }
        r = h_client_tool_call(x, "9", "a__echo", "{\"text\":\"still serving\"}");
        cr_assert_str_eq(h_result_text(r), "still serving");
        json_object_put(r);
        h_client_close(x);
}

/* What json-c lets through but RFC 3629 (or pairing, for escapes) refuses: an overlong
 * NUL, a surrogate, a code point beyond U+10FFFF, each as bytes, and lone surrogate escapes. */
static const char *const bad_text[] = {
        "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\\ud800", "\\udc00", "\\ud800\\u0041",
};

/* A client's line with such text is refused as a parse error (id null: the line's text is not
 * to be trusted) and nothing of it reaches the server: an echo of it never comes back. */
Test(routing, invalid_utf8_from_a_client_refused) {
        struct h_client *x;
        json_object *r;

        x = start_one_demo("a", NULL);
        for (size_t i = 0; i < sizeof bad_text / sizeof *bad_text; i++) {
                h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":\"bad-%zu\",\"method\":\"tools/call\",\"params\":"
                              "{\"name\":\"a__echo\",\"arguments\":{\"text\":\"x%sy\"}}}\n", i, bad_text[i]);
                r = h_client_answer(x, "null");
                cr_assert_eq(h_error_code(r), -32700, "text %zu: %s", i, h_json_text(r));
                cr_assert_not_null(strstr(error_message(r), "not valid UTF-8"), "%s", h_json_text(r));
                json_object_put(r);
                /* the server answers in order: an echo of the bad line would come before this */
                r = h_client_tool_call(x, sf("\"good-%zu\"", i), "a__echo", "{\"text\":\"caf\\u00e9 \\ud83d\\ude00\"}");
                cr_assert_str_eq(h_result_text(r), "caf\u00e9 \U0001F600");
                json_object_put(r);
                cr_assert_eq(h_inbox_drop(x, h_is_answer, sf("\"bad-%zu\"", i)), 0, "text %zu reached the server", i);
        }
        h_client_close(x);
}

/* A server's answer with such text ends its call with an error naming the server, on the
 * path that passes results on unparsed as on json-c's; nothing of it reaches the client. */
Test(routing, invalid_utf8_from_a_server_fails_the_call) {
        static const char *const shapes[][2] = {
                { "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x", "y\"}]}" },
                { "\"result\":{\"content\":[],\"x", "\":1},\"extra\":true" }, /* not the plain envelope */
        };
        struct h_client *x;
        json_object *r;

        x = start_one_demo("a", NULL);
        for (size_t k = 0; k < 2; k++)
                for (size_t i = 0; i < sizeof bad_text / sizeof *bad_text; i++) {
                        const char *id = sf("\"r-%zu-%zu\"", k, i);
                        char raw[160], hex[320] = "";

                        snprintf(raw, sizeof raw, "%s%s%s", shapes[k][0], bad_text[i], shapes[k][1]);
                        for (size_t j = 0; raw[j]; j++)
                                snprintf(hex + 2 * j, 3, "%02x", (unsigned char)raw[j]);
                        h_client_tool_request(x, id, "a__echo", sf("{\"rawHex\":\"%s\"}", hex));
                        r = h_client_answer(x, id);
                        cr_assert_eq(h_error_code(r), -32603, "%zu/%zu: %s", k, i, h_json_text(r));
                        cr_assert_not_null(strstr(error_message(r), "server 'a' answered with an invalid response"),
                                           "%s", h_json_text(r));
                        cr_assert_not_null(strstr(error_message(r), "not valid UTF-8"), "%s", h_json_text(r));
                        cr_assert_str_eq(h_str(r, "error.data.server"), "a");
                        json_object_put(r);
                }
        r = h_client_tool_call(x, "9", "a__echo", "{\"text\":\"still serving\"}");
        cr_assert_str_eq(h_result_text(r), "still serving");
        json_object_put(r);
        h_client_close(x);
}

Test(routing, large_result) {
        const size_t size = 2u << 20;
        char *text = malloc(size + 1);
        const char *got;
        json_object *r;
        struct h_client *x;

        for (size_t i = 0; i < size; i++)
                text[i] = (char)('a' + (i * 7 + i / 26) % 26);
        text[size] = '\0';
        x = start_one_demo("a", NULL);
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a__echo\","
                      "\"arguments\":{\"text\":\"%s\"}}}\n", text);
        r = h_client_answer(x, "1");
        got = h_result_text(r);
        cr_assert_eq(strlen(got), size, "%zu bytes came back", strlen(got));
        cr_assert(memcmp(got, text, size) == 0, "the text changed on the way");
        json_object_put(r);
        free(text);
        h_client_close(x);
}

/* Letters in a pattern that repeats only every 26 * 26 bytes, shifted by seed. */
static char *pattern(size_t size, unsigned seed) {
        char *text = malloc(size + 1);

        cr_assert_not_null(text);
        for (size_t i = 0; i < size; i++)
                text[i] = (char)('a' + ((i + seed) * 7 + (i + seed) / 26) % 26);
        text[size] = '\0';
        return text;
}

/* Reads what the slow client has, at most max bytes, into its buffer (grown). */
static void read_some(int fd, char **buf, size_t *len, size_t *cap, size_t max) {
        ssize_t n;

        if (*cap - *len < max) {
                *cap = *cap * 2 + max;
                *buf = realloc(*buf, *cap);
                cr_assert_not_null(*buf);
        }
        n = recv(fd, *buf + *len, max, MSG_DONTWAIT);
        if (n > 0)
                *len += (size_t)n;
}

/* A 6 MiB result goes to a client that reads it 64 KiB at a time, while another client's
 * calls through the same server, small and of 1 MiB, are answered meanwhile: the daemon
 * holds the slow client's result where the server's line was read (by reference) while the
 * server's later lines are read elsewhere, and every byte arrives as the server wrote it. */
Test(routing, a_large_result_to_a_slow_reader_while_others_call) {
        const size_t size = 6u << 20, other = 1u << 20;
        char *text = pattern(size, 0), *got = NULL, *nl = NULL;
        size_t len = 0, cap = 0;
        struct h_client *slow = start_one_demo("a", NULL), *x = cl_open();
        json_object *r;

        h_sendf(slow->c, "{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"tools/call\",\"params\":{\"name\":\"a__echo\","
                         "\"arguments\":{\"text\":\"%s\"}}}\n", text);
        for (unsigned i = 0; i < 24; i++) {
                char id[16];

                snprintf(id, sizeof id, "%u", i + 1);
                if (i % 4 == 3) {
                        char *mine = pattern(other, i), *arguments;

                        cr_assert_gt(asprintf(&arguments, "{\"text\":\"%s\"}", mine), 0);
                        r = h_client_tool_call(x, id, "a__echo", arguments);
                        cr_assert_str_eq(h_result_text(r), mine, "call %u's result changed on the way", i + 1);
                        free(arguments);
                        free(mine);
                } else {
                        r = h_client_tool_call(x, id, "a__echo", sf("{\"text\":\"call %u\"}", i + 1));
                        cr_assert_str_eq(h_result_text(r), sf("call %u", i + 1));
                }
                json_object_put(r);
                read_some(slow->c->fd, &got, &len, &cap, 64 * 1024);
        }
        cr_assert_lt(len, size, "the slow client read its result at once: not the case this tests");
        for (long long deadline = h_now_ms() + H_TIMEOUT_MS; !(nl = len ? memchr(got, '\n', len) : NULL);) {
                struct pollfd p = { .fd = slow->c->fd, .events = POLLIN };

                cr_assert_lt(h_now_ms(), deadline, "%zu bytes of the large result came", len);
                poll(&p, 1, 100);
                read_some(slow->c->fd, &got, &len, &cap, 64 * 1024);
        }
        *nl = '\0';
        r = json_tokener_parse(got);
        cr_assert_not_null(r, "the large result is not JSON");
        cr_assert_str_eq(h_str(r, "id"), "big");
        cr_assert_eq(strlen(h_result_text(r)), size);
        cr_assert(memcmp(h_result_text(r), text, size) == 0, "the large result changed on the way");
        json_object_put(r);
        free(got);
        free(text);
        h_client_close(x);
        h_client_close(slow);
}

/* A client that asks for large results and reads none: what the daemon holds for it by
 * reference counts against clientOutputLimit as copies did, so it is dropped there, alone;
 * another client's large results through the same server go on. */
Test(routing, a_client_reading_no_large_results_is_dropped_at_its_limit) {
        const size_t size = 3u << 20;
        struct h_client *x, *y;
        json_object *r;
        size_t lines = 0;
        unsigned sent = 0;

        add_demo("a", "", "");
        set_settings("\"clientOutputLimit\": 8388608");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        y = cl_open();
        while (sent < 40 && h_log_count(&D, "is not reading its replies") == 0) {
                h_client_tool_request(x, sf("%u", ++sent), "a__echo", sf("{\"bytes\":%zu}", size));
                r = h_client_tool_call(y, sf("%u", sent), "a__echo", sf("{\"bytes\":%zu}", size));
                cr_assert_eq(strlen(h_result_text(r)), size);
                json_object_put(r);
        }
        cr_assert(h_log_count_wait(&D, "is not reading its replies", 1, H_TIMEOUT_MS), "never dropped");
        cr_assert_lt(sent, 10u, "8 MiB held for a client that reads nothing took %u results of 3 MiB", sent);
        cr_assert(h_wait_eof(x->c, H_TIMEOUT_MS, &lines), "the client's connection stayed open");
        r = h_client_tool_call(y, "\"after\"", "a__echo", sf("{\"bytes\":%zu}", size));
        cr_assert_eq(strspn(h_result_text(r), "x"), size);
        json_object_put(r);
        h_client_close(y);
        h_client_close(x);
}
