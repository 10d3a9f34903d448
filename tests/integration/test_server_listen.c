/* Modern servers' notifications (MCP 2026-07-28): a modern server notifies only on a
 * subscriptions/listen request, so the daemon keeps one open at each, for the list changes
 * its capabilities announce and the resources its clients subscribed to there; what comes
 * on it reaches clients as a legacy server's notifications do. The demo server in
 * --discover modern mode plays the server (listens acknowledged, list changes and resource
 * updates under their id, a listen ended by the server, or refused). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "servers.h"

#define README "demo://readme"
#define UPDATED "notifications/resources/updated"
#define MODERN "\"--discover\",\"modern\""

static struct h_daemon D;

static void setup(void) {
        servers_reset(&D);
}

TestSuite(server_listen, .init = setup, .fini = servers_teardown, .timeout = 60);

static void expect_ok(struct h_client *x, const char *id, const char *method, const char *params) {
        json_object *r = h_client_call(x, id, method, params);

        cr_assert_not_null(h_get(r, "result"), "%s: %s", method, h_json_text(r));
        json_object_put(r);
}

/* A legacy client lists the tools, without name (a client is told of changes to what it
 * was given), then hears of a change and finds name in the list. */
static void wait_tool(struct h_client *x, const char *name) {
        json_object *r = h_client_call(x, "\"first\"", "tools/list", NULL), *msg;

        cr_assert(!h_has_item(h_tool_names(r), name), "changed before the client listed (too slow a machine?)");
        json_object_put(r);
        msg = h_take(x, h_is_method, "notifications/tools/list_changed", H_TIMEOUT_MS);

        cr_assert_not_null(msg, "no tools/list_changed from the modern server");
        cr_assert_null(h_get(msg, "params._meta"), "the server's listen id reached the client: %s", h_json_text(msg));
        json_object_put(msg);
        r = h_client_call(x, "\"list\"", "tools/list", NULL);
        cr_assert(h_has_item(h_tool_names(r), name), "%s", h_json_text(r));
        json_object_put(r);
}

/* A modern server's list change reaches a legacy client: the daemon listened for it. */
Test(server_listen, list_change_heard_on_a_listen) {
        struct h_client *x;

        add_demo("m", "", MODERN ",\"--list-changed-after-ms\",\"1000\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        cr_assert(h_log_wait(&D, "m: listen ", H_TIMEOUT_MS), "no subscriptions/listen at the modern server");
        cr_assert(h_log_wait(&D, "\"toolsListChanged\":true", H_TIMEOUT_MS), "%s", h_log_text(&D));
        wait_tool(x, "m__late_tool");
        cr_expect_eq(h_log_count(&D, "without the modern _meta"), 0, "the listen went without the modern _meta");
        h_client_close(x);
}

/* A resource subscription at a modern server: the listen is replaced by one naming the
 * URI (the old one cancelled), updates reach the subscriber without the server's listen
 * id, and the last unsubscribe replaces it again, without the URI. */
Test(server_listen, resource_updates_through_the_listen) {
        struct h_client *x, *y;
        json_object *msg;

        add_demo("m", "", MODERN ",\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        cr_assert(h_log_count_wait(&D, " opened ", 1, H_TIMEOUT_MS));
        x = cl_open();
        y = cl_open();
        expect_ok(x, "\"sub\"", "resources/subscribe", "{\"uri\":\"" README "\"}");
        msg = h_take(x, h_is_method, UPDATED, H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no update of a modern server's resource");
        cr_assert_str_eq(h_str(msg, "params.uri") ?: "", README, "%s", h_json_text(msg));
        cr_assert_null(h_get(msg, "params._meta"), "the server's listen id reached the client: %s", h_json_text(msg));
        json_object_put(msg);
        cr_assert(h_log_wait(&D, "\"resourceSubscriptions\":[\"" README "\"]", H_TIMEOUT_MS), "%s", h_log_text(&D));
        cr_assert(h_log_count_wait(&D, " cancelled\n", 1, H_TIMEOUT_MS), "the first listen was not cancelled:\n%s",
                  h_log_text(&D));
        /* the other client subscribed to nothing and hears nothing */
        expect_ok(y, "\"p\"", "ping", NULL);
        cr_assert_eq(h_inbox_drop(y, h_is_method, UPDATED), 0);
        /* unsubscribed: a listen without the URI, and no more updates */
        expect_ok(x, "\"unsub\"", "resources/unsubscribe", "{\"uri\":\"" README "\"}");
        cr_assert(h_log_count_wait(&D, " cancelled\n", 2, H_TIMEOUT_MS), "%s", h_log_text(&D));
        h_inbox_drop(x, h_is_method, UPDATED);
        for (long long until = h_now_ms() + 500; h_now_ms() < until;)
                h_notify_drain(&D);
        expect_ok(x, "\"p\"", "ping", NULL);
        cr_assert_eq(h_inbox_drop(x, h_is_method, UPDATED), 0, "updates after the unsubscribe");
        h_client_close(x);
        h_client_close(y);
}

/* A listen the server ends is opened again, and changes go on being heard on the new one. */
Test(server_listen, listen_ended_by_the_server_reopened) {
        struct h_client *x;

        add_demo("m", "", MODERN ",\"--listen-ends-after-ms\",\"1200\",\"--list-changed-after-ms\",\"2000\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        wait_tool(x, "m__late_tool");
        cr_assert(h_log_count(&D, " ended\n") >= 1, "%s", h_log_text(&D));
        cr_assert(h_log_count(&D, " opened ") >= 2, "not opened again after it ended:\n%s", h_log_text(&D));
        h_client_close(x);
}

/* A listen the server took, then dropped with an error (a stream cut short): listened to
 * again, not taken for a refusal. */
Test(server_listen, listen_dropped_after_its_acknowledgement_reopened) {
        struct h_client *x;

        add_demo("m", "", MODERN ",\"--listen-ends-after-ms\",\"1200\",\"--listen-ends-with-error\","
                          "\"--list-changed-after-ms\",\"2000\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        wait_tool(x, "m__late_tool");
        cr_assert(h_log_count(&D, "its subscriptions/listen ended with an error") >= 1, "%s", h_log_text(&D));
        cr_expect_eq(h_log_count(&D, "refused subscriptions/listen ("), 0, "taken for a refusal");
        h_client_close(x);
}

/* A server that ends each listen at once is asked again a second later, not in a loop. */
Test(server_listen, short_listens_not_reopened_in_a_loop) {
        add_demo("m", "", MODERN ",\"--listen-ends-after-ms\",\"50\"");
        start(NULL);
        wait_all_ready(1);
        cr_assert(h_log_count_wait(&D, " opened ", 2, 5000), "not opened again after it ended:\n%s", h_log_text(&D));
        for (long long until = h_now_ms() + 1500; h_now_ms() < until;)
                h_notify_drain(&D);
        cr_expect_leq(h_log_count(&D, " opened "), 4, "%s", h_log_text(&D));
}

/* A server that refuses the listen: said once, nothing polled, the server served. */
Test(server_listen, listen_refused_logged_once) {
        struct h_client *x;
        json_object *r;

        add_demo("m", "", MODERN ",\"--refuse-listen\",\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        cr_assert(h_log_wait(&D, "refused subscriptions/listen (", H_TIMEOUT_MS), "%s", h_log_text(&D));
        x = cl_open();
        /* a subscription asks nothing more of it */
        expect_ok(x, "\"sub\"", "resources/subscribe", "{\"uri\":\"" README "\"}");
        r = h_client_tool_call(x, "1", "m__echo", "{\"text\":\"still here\"}");
        cr_assert_str_eq(h_result_text(r), "still here", "%s", h_json_text(r));
        json_object_put(r);
        for (long long until = h_now_ms() + 1500; h_now_ms() < until;)
                h_notify_drain(&D);
        cr_expect_eq(h_log_count(&D, "m: refused subscriptions/listen"), 1, "asked again:\n%s", h_log_text(&D));
        cr_expect_eq(h_log_count(&D, "refused subscriptions/listen ("), 1, "logged more than once");
        h_client_close(x);
}

/* A legacy server is never sent subscriptions/listen. */
Test(server_listen, legacy_server_not_listened_to) {
        struct h_client *x;

        add_demo("l", "", "\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        expect_ok(x, "\"sub\"", "resources/subscribe", "{\"uri\":\"" README "\"}");
        cr_assert(h_log_wait(&D, "l: subscribed " README, H_TIMEOUT_MS));
        cr_expect_eq(h_log_count(&D, "subscriptions/listen"), 0, "%s", h_log_text(&D));
        h_client_close(x);
}

/* Both ends modern: a modern client's own listen (its resourceSubscriptions) at the daemon
 * becomes part of the daemon's listen at the modern server, and the server's updates reach
 * the client under the client's subscription id, not the server's. */
Test(server_listen, modern_client_hears_a_modern_server) {
        struct h_conn *m;
        json_object *r;

        add_demo("m", "", MODERN ",\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        m = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(m, "{\"jsonrpc\":\"2.0\",\"id\":\"mine\",\"method\":\"subscriptions/listen\",\"params\":{\"notifications\":"
                  "{\"resourceSubscriptions\":[\"" README "\"]},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                  "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{},"
                  "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"listen-it\",\"version\":\"1\"}}}}\n");
        r = h_recv(m, H_TIMEOUT_MS);
        cr_assert_str_eq(h_str(r, "method") ?: "?", "notifications/subscriptions/acknowledged", "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "\"resourceSubscriptions\":[\"" README "\"]", H_TIMEOUT_MS), "%s", h_log_text(&D));
        r = h_recv(m, H_TIMEOUT_MS);
        cr_assert_str_eq(h_str(r, "method") ?: "?", UPDATED, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "params.uri") ?: "?", README, "%s", h_json_text(r));
        json_object *sid = NULL;
        cr_assert(json_object_object_get_ex(h_get(r, "params._meta"), "io.modelcontextprotocol/subscriptionId", &sid),
                  "%s", h_json_text(r));
        cr_assert_str_eq(json_object_get_string(sid), "mine", "%s", h_json_text(r));
        json_object_put(r);
        /* the client's listen ends: so does the server's subscription to the URI */
        h_send(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"mine\"}}\n");
        cr_assert(h_log_count_wait(&D, " cancelled\n", 2, H_TIMEOUT_MS), "%s", h_log_text(&D));
        h_close(m);
}
