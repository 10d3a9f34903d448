/* MCP features across clients, run for real with demo servers (see demo/demo-server.c): log
 * messages forwarded and filtered per client, the servers' own level, lists a server changes
 * on its own, and resource subscriptions counted across clients and renewed after a restart.
 *
 * Every wait drains the daemon's NOTIFY datagrams (h_take, h_log_count_wait, h_notify_wait):
 * once their queue is full, its sd_notify() blocks and the daemon stands still. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;

#define README "demo://readme"
#define UPDATED "notifications/resources/updated"

static void setup(void) {
        servers_reset(&D);
}

TestSuite(features, .init = setup, .fini = servers_teardown, .timeout = 30);

/* ---- helpers ---- */

/* Calls and asserts the answer is a result; drops it. */
static void expect_ok(struct h_client *x, const char *id, const char *method, const char *params) {
        json_object *r = h_client_call(x, id, method, params);

        cr_assert_not_null(h_get(r, "result"), "%s: %s", method, h_json_text(r));
        json_object_put(r);
}

/* A ping answered: every message the daemon sent x before it is in x's inbox now. */
static void flush(struct h_client *x) {
        expect_ok(x, "\"flush\"", "ping", NULL);
}

/* Everything server a wrote to stderr so far is in the daemon's log: a__log writes tag to
 * stderr after those lines, and its log message (info, logged too) comes on stdout; once
 * both "a: tag" lines are in the log, so is every stderr line before it. Clients must not
 * have set a level that keeps the server from sending the message. */
static void sync_stderr(struct h_client *x, const char *tag) {
        json_object *r = h_client_tool_call(x, sf("\"%s\"", tag), "a__log", sf("{\"text\":\"%s\"}", tag));

        cr_assert_str_eq(h_result_text(r), "logged", "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_count_wait(&D, sf("a: %s\n", tag), 2, H_TIMEOUT_MS), "'%s' not logged twice", tag);
}

static void subscribe(struct h_client *x, const char *uri) {
        expect_ok(x, "\"sub\"", "resources/subscribe", sf("{\"uri\":\"%s\"}", uri));
}

/* Waits for an update of uri (from the inbox or the wire) and checks its params. */
static void expect_update(struct h_client *x, const char *who, const char *uri) {
        json_object *msg = h_take(x, h_is_method, UPDATED, H_TIMEOUT_MS);

        cr_assert_not_null(msg, "%s got no %s", who, UPDATED);
        cr_assert_str_eq(h_str(msg, "params.uri"), uri, "%s", h_json_text(msg));
        json_object_put(msg);
}

/* x got no update: none in its inbox after a ping. */
static void expect_no_update(struct h_client *x, const char *who) {
        flush(x);
        cr_assert_eq(h_inbox_drop(x, h_is_method, UPDATED), 0, "%s got %s without a subscription", who, UPDATED);
}

/* ---- logging ---- */

Test(features, logging_forwarded) {
        json_object *r, *msg;
        struct h_client *x;

        x = start_one_demo("a", NULL);
        r = h_client_tool_call(x, "1", "a__log", "{\"text\":\"hello\"}");
        cr_assert_str_eq(h_result_text(r), "logged", "%s", h_json_text(r));
        json_object_put(r);
        /* the inbox holds what came before the answer */
        cr_assert_eq(json_object_array_length(x->inbox), 1, "before the result: %s", h_json_text(x->inbox));
        msg = json_object_array_get_idx(x->inbox, 0);
        cr_assert_str_eq(h_str(msg, "method"), "notifications/message", "%s", h_json_text(msg));
        cr_assert_str_eq(h_str(msg, "params.level"), "info", "%s", h_json_text(msg));
        cr_assert_str_eq(h_str(msg, "params.data"), "hello", "%s", h_json_text(msg));
        cr_assert_str_eq(h_str(msg, "params.logger"), "a/demo", "%s", h_json_text(msg));
        /* once from its stderr, once from the log message */
        cr_assert(h_log_count_wait(&D, "a: hello\n", 2, H_TIMEOUT_MS), "'a: hello' is not logged twice");
        h_client_close(x);
}

/* One client asking for less must not starve another: the server stays at the most verbose
 * level of any connected client, y's default info included, and each client is filtered. */
Test(features, logging_levels_per_client) {
        struct h_client *x, *y;
        json_object *r, *msg;

        x = start_one_demo("a", NULL);
        y = cl_open();
        expect_ok(x, "1", "logging/setLevel", "{\"level\":\"error\"}");
        r = h_client_tool_call(x, "2", "a__log", "{\"text\":\"for y only\"}");
        cr_assert_str_eq(h_result_text(r), "logged", "%s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(json_object_array_length(x->inbox), 0, "x (at error) got: %s", h_json_text(x->inbox));
        /* the daemon sent y's message before x's answer */
        msg = h_take(y, h_is_method, "notifications/message", 1000);
        cr_assert_not_null(msg, "y (at the default, info) got no info message (server told 'log level error': %u)",
                           h_log_count(&D, "a: log level error"));
        cr_assert_str_eq(h_str(msg, "params.data"), "for y only", "%s", h_json_text(msg));
        json_object_put(msg);
        flush(x);
        cr_assert_eq(json_object_array_length(x->inbox), 0, "x (at error) got: %s", h_json_text(x->inbox));

        r = h_client_call(x, "3", "logging/setLevel", "{\"level\":\"loud\"}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
        h_client_close(y);
}

/* A client dropped for not reading while a log message goes to every client must not cost
 * the clients after it that message. The slow client comes first in the daemon's list; two
 * 900 KB messages put it over its 1 MiB limit, wherever its socket's buffers end: the first
 * leaves at least 900 KB less what the socket takes unsent, the second adds 900 KB. */
Test(features, broadcast_goes_on_past_a_dropped_client) {
        const size_t size = 900 * 1000;
        struct h_client *slow, *fast;
        char *text = malloc(size + 1);
        json_object *r, *msg;

        memset(text, 'x', size);
        text[size] = '\0';
        set_settings("\"clientOutputLimit\":1048576");
        slow = start_one_demo("a", NULL);
        fast = cl_open();
        for (int i = 0; i < 2; i++) {
                h_sendf(fast->c, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"a__log\","
                                 "\"arguments\":{\"text\":\"%s\"}}}\n", i, text);
                r = h_client_answer(fast, sf("%d", i));
                cr_assert_str_eq(h_result_text(r), "logged", "%s", h_json_text(r));
                json_object_put(r);
                msg = h_take(fast, h_is_method, "notifications/message", 0);
                cr_assert_not_null(msg, "message %d did not reach the client that reads (the slow one %s dropped)", i,
                                   h_log_count(&D, "not reading") ? "was" : "was not");
                cr_assert_eq(strlen(h_str(msg, "params.data")), size);
                json_object_put(msg);
        }
        cr_assert(h_log_wait(&D, "not reading", H_TIMEOUT_MS), "the slow client was not dropped");
        free(text);
        h_client_close(fast);
        h_client_close(slow);
}

Test(features, server_set_to_most_verbose_level) {
        struct h_client *x, *y;
        unsigned told;
        char *log;

        x = start_one_demo("a", NULL);
        expect_ok(x, "1", "logging/setLevel", "{\"level\":\"error\"}");
        cr_assert(h_log_count_wait(&D, "a: log level error\n", 1, H_TIMEOUT_MS), "the server was not set to error");
        y = cl_open();
        expect_ok(y, "1", "logging/setLevel", "{\"level\":\"debug\"}");
        cr_assert(h_log_count_wait(&D, "a: log level debug\n", 1, H_TIMEOUT_MS), "the server was not set to debug");
        sync_stderr(y, "sync1");
        told = h_log_count(&D, "a: log level ");
        /* less verbose than y's: the server stays at debug, and is not told again */
        expect_ok(x, "2", "logging/setLevel", "{\"level\":\"warning\"}");
        sync_stderr(y, "sync2");
        log = h_log_text(&D);
        cr_assert_eq(h_log_count(&D, "a: log level "), told, "the server was told more:\n%s", log);
        cr_assert_null(strstr(strstr(log, "a: log level debug\n") + 1, "a: log level "),
                       "another level after debug:\n%s", log);
        free(log);
        h_client_close(x);
        h_client_close(y);
}

/* The servers' level follows the clients that are there: when the only client at debug
 * leaves, the server is set back to the most verbose level of those that stay. */
Test(features, server_level_falls_when_verbose_client_leaves) {
        struct h_client *x, *y;

        x = start_one_demo("a", NULL);
        expect_ok(x, "1", "logging/setLevel", "{\"level\":\"warning\"}");
        cr_assert(h_log_count_wait(&D, "a: log level warning\n", 1, H_TIMEOUT_MS), "the server was not set to warning");
        y = cl_open();
        expect_ok(y, "1", "logging/setLevel", "{\"level\":\"debug\"}");
        cr_assert(h_log_count_wait(&D, "a: log level debug\n", 1, H_TIMEOUT_MS), "the server was not set to debug");
        h_client_close(y);
        cr_assert(h_log_count_wait(&D, "a: log level warning\n", 2, H_TIMEOUT_MS),
                  "the server stayed at debug after the client at debug left");
        h_client_close(x);
}

/* A server flooding log messages is logged at most 1000 an interval (10 s), as its stderr
 * is, and what was dropped is told in one line (at its next start here); clients still get
 * every message. Before, each was logged: 1,020,800 lines in 15 s. */
Test(features, log_messages_rate_limited) {
        struct h_client *x;
        json_object *r;

        x = start_one_demo("a", NULL);
        r = h_client_tool_call(x, "2", "a__log", "{\"text\":\"flood\",\"count\":3000}");
        cr_assert_str_eq(h_result_text(r), "logged", "%s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(h_inbox_drop(x, h_is_method, "notifications/message"), 3000, "the client did not get every message");
        cr_assert(h_log_wait(&D, "a: flood 1000\n", H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&D, "a: flood "), 1000, "not 1000 of the 3000 messages logged");
        json_object_put(h_control(&D, "restart", "{\"name\":\"a\"}"));
        cr_assert(h_log_wait(&D, "server sent too many log messages: 2000 not logged (limit 1000 per 10 s)", H_TIMEOUT_MS),
                  "no summary of the messages not logged");
        h_client_close(x);
}

/* A restarted server is a new run: it is asked again for the level the clients want. */
Test(features, restarted_server_asked_for_the_level_again) {
        struct h_client *x;

        x = start_one_demo("a", NULL);
        expect_ok(x, "1", "logging/setLevel", "{\"level\":\"debug\"}");
        cr_assert(h_log_count_wait(&D, "a: log level debug\n", 1, H_TIMEOUT_MS), "the server was not set to debug");
        json_object_put(h_control(&D, "restart", "{\"name\":\"a\"}"));
        cr_assert(h_log_count_wait(&D, "a: log level debug\n", 2, H_TIMEOUT_MS), "the new run was not set to debug");
        h_client_close(x);
}

/* ---- lists ---- */

Test(features, list_changed_from_server) {
        json_object *r, *msg;
        unsigned announced = 0;
        struct h_client *x;
        bool late = false;
        char *log;

        /* the client is there before the server is ready (slow to answer initialize) and
         * lists at once (listWait 0: the empty list), so it hears both the server becoming
         * ready and, 300 ms later, its late change */
        set_settings("\"listWait\":0");
        add_demo("a", "", "\"--slow-start\",\"500\",\"--list-changed-after-ms\",\"300\"");
        start(NULL);
        x = cl_open();
        r = h_client_call(x, "0", "tools/list", NULL);
        cr_assert_str_eq(h_tool_names(r), "", "the server was ready before the client listed (too slow a machine?)");
        json_object_put(r);
        wait_all_ready(1);
        log = h_log_text(&D);
        cr_assert(strstr(log, "initialized by") && strstr(log, "[a] starting -> ready") &&
                          strstr(log, "initialized by") < strstr(log, "[a] starting -> ready"),
                  "the server was ready before the client came (too slow a machine?):\n%s", log);
        free(log);
        /* the server becoming ready is announced too; each list comes after an announcement */
        while (!late) {
                msg = h_take(x, h_is_method, "notifications/tools/list_changed", H_TIMEOUT_MS);
                cr_assert_not_null(msg, "no tools/list_changed (after %u)", announced);
                json_object_put(msg);
                announced++;
                cr_assert_leq(announced, 5, "list_changed again and again, and no late_tool");
                r = h_client_call(x, sf("%u", announced), "tools/list", NULL);
                late = h_has_item(h_tool_names(r), "a__late_tool");
                json_object_put(r);
        }
        announced += h_inbox_drop(x, h_is_method, "notifications/tools/list_changed");
        cr_assert_geq(announced, 2, "the late tool was not announced on its own");
        cr_assert(h_log_count_wait(&D, "a: added late_tool", 1, H_TIMEOUT_MS));
        r = h_client_tool_call(x, "\"late\"", "a__late_tool", "{\"text\":\"late hello\"}");
        cr_assert_str_eq(h_result_text(r), "late hello");
        json_object_put(r);
        h_client_close(x);
}

/* ---- subscriptions ---- */

Test(features, subscribe_refcounted) {
        struct h_client *x, *y, *z;
        json_object *init;

        add_demo("a", "", "\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        y = h_client_open(&D, false, &init);
        cr_assert(json_object_get_boolean(h_get(init, "result.capabilities.resources.subscribe")), "%s",
                  h_json_text(init));
        json_object_put(init);
        z = cl_open();
        subscribe(x, README);
        subscribe(y, README);
        expect_update(x, "x", README);
        expect_update(y, "y", README);
        sync_stderr(z, "sync1");
        cr_assert_eq(h_log_count(&D, "a: subscribed " README "\n"), 1, "subscribed at the server not once:\n%s",
                     h_log_text(&D));
        expect_no_update(z, "z");

        /* x leaves, y stays: the server keeps the subscription, only y gets updates */
        expect_ok(x, "\"unsub\"", "resources/unsubscribe", "{\"uri\":\"" README "\"}");
        h_inbox_drop(x, h_is_method, UPDATED); /* sent before the answer */
        sync_stderr(z, "sync2");
        cr_assert_eq(h_log_count(&D, "a: unsubscribed "), 0, "unsubscribed while y still wants it");
        h_inbox_drop(y, h_is_method, UPDATED);
        flush(y);
        h_inbox_drop(y, h_is_method, UPDATED);
        expect_update(y, "y", README);
        expect_update(y, "y", README);
        expect_no_update(x, "x after unsubscribing");

        /* the last subscriber goes away: so does the server's subscription */
        h_client_close(y);
        cr_assert(h_log_count_wait(&D, "a: unsubscribed " README "\n", 1, H_TIMEOUT_MS),
                  "the server was not unsubscribed when the last subscriber left");
        sync_stderr(z, "sync3");
        cr_assert_eq(h_log_count(&D, "a: unsubscribed "), 1, "unsubscribed more than once");
        cr_assert_eq(h_log_count(&D, "a: subscribed "), 1, "subscribed again");
        expect_no_update(z, "z");
        h_client_close(x);
        h_client_close(z);
}

/* A client that leaves drops the subscriptions it held, each once, and no other: the
 * one it shared stays at the server and its other subscriber still gets updates. */
Test(features, subscriptions_of_a_leaving_client) {
        struct h_client *x, *y, *z;

        add_demo("a", "", "\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        y = cl_open();
        z = cl_open();
        subscribe(x, README);
        subscribe(x, "demo://item/1");
        subscribe(x, "demo://item/2");
        subscribe(y, "demo://item/1");
        expect_update(y, "y", "demo://item/1");

        h_client_close(x);
        cr_assert(h_log_count_wait(&D, "a: unsubscribed " README "\n", 1, H_TIMEOUT_MS),
                  "x left and " README " stayed subscribed:\n%s", h_log_text(&D));
        cr_assert(h_log_count_wait(&D, "a: unsubscribed demo://item/2\n", 1, H_TIMEOUT_MS),
                  "x left and demo://item/2 stayed subscribed:\n%s", h_log_text(&D));
        sync_stderr(z, "sync");
        cr_assert_eq(h_log_count(&D, "a: unsubscribed demo://item/1\n"), 0,
                     "y's subscription ended with x:\n%s", h_log_text(&D));
        cr_assert_eq(h_log_count(&D, "a: unsubscribed "), 2, "unsubscribed more than x's own:\n%s",
                     h_log_text(&D));
        flush(y);
        h_inbox_drop(y, h_is_method, UPDATED);
        expect_update(y, "y after x left", "demo://item/1");
        expect_no_update(z, "z");
        h_client_close(y);
        h_client_close(z);
}

Test(features, subscribe_unsupported) {
        struct h_client *x;
        json_object *r;

        x = start_one_demo("a", NULL);
        r = h_client_call(x, "1", "resources/subscribe", "{\"uri\":\"" README "\"}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        cr_assert_not_null(strstr(h_str(r, "error.message"), "subscriptions"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "2", "resources/subscribe", "{\"uri\":\"demo://nothing\"}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

Test(features, resubscribe_after_restart) {
        struct h_client *x;
        json_object *r;

        add_demo("a", "\"restartDelay\":0.1", "\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        subscribe(x, README);
        expect_update(x, "x", README);
        r = h_client_tool_call(x, "\"crash\"", "a__crash", "{}");
        cr_assert_neq(h_error_code(r), 0, "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_count_wait(&D, "[a] starting -> ready", 2, H_TIMEOUT_MS), "a was not restarted");
        cr_assert(h_log_count_wait(&D, "a: subscribed " README "\n", 2, H_TIMEOUT_MS),
                  "the restarted server was not subscribed again:\n%s", h_log_text(&D));
        /* updates from now on come from the new run */
        flush(x);
        h_inbox_drop(x, h_is_method, UPDATED);
        expect_update(x, "x after the restart", README);
        h_client_close(x);
}
