/* List changes, run for real (list-changes.c): a client connecting while servers start is
 * not sent a list_changed for every server that becomes ready, changes are announced at
 * most once per window, a client is told once per list it holds out of date and never of
 * a list it does not hold or whose answer is still to come.
 *
 * "No notification arrives" cannot be waited for: those checks read for QUIET_MS, four
 * times the daemon's window (LIST_CHANGES_WINDOW_USEC, 100 ms), so a notification the
 * window held back would have come by then even on a loaded machine. Everything else
 * waits on a condition with a deadline. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "servers.h"

#define N_SERVERS 6
#define WINDOW_MS 100
#define QUIET_MS (4 * WINDOW_MS)

static struct h_daemon D;

static void setup(void) {
        servers_reset(&D);
}

TestSuite(lists, .init = setup, .fini = servers_teardown, .timeout = 30);

static bool nothing(json_object *msg, const char *arg) {
        return false;
}

/* Reads what x is sent for QUIET_MS; returns how many method notifications x got since the
 * last time they were counted (the inbox included). */
static unsigned count_after_quiet(struct h_client *x, const char *method) {
        cr_assert_null(h_take(x, nothing, NULL, QUIET_MS));
        return h_inbox_drop(x, h_is_method, method);
}

static unsigned count_all_after_quiet(struct h_client *x) {
        unsigned n = count_after_quiet(x, "notifications/tools/list_changed");

        n += h_inbox_drop(x, h_is_method, "notifications/prompts/list_changed");
        return n + h_inbox_drop(x, h_is_method, "notifications/resources/list_changed");
}

/* True if a tools/list answer holds tool of every server s0..s<n-1>. */
static bool holds_tool(json_object *answer, unsigned n, const char *tool) {
        const char *names = h_tool_names(answer);

        for (unsigned i = 0; i < n; i++)
                if (!h_has_item(names, sf("s%u__%s", i, tool)))
                        return false;
        return true;
}

static bool holds_servers(json_object *answer, unsigned n) {
        return holds_tool(answer, n, "echo");
}

/* The client got in before the first server was ready, else a test proves nothing. */
static void expect_client_first(void) {
        char *log = h_log_text(&D);
        const char *init = strstr(log, "initialized by"), *ready = strstr(log, "starting -> ready");

        cr_assert(init && (!ready || init < ready), "a server was ready before the client came (too slow a machine?):\n%s",
                  log);
        free(log);
}

/* The case of the issue: an agent connects while the daemon starts its servers and asks for
 * its tools. Its answer waits (listWait) until every server is ready and holds all their
 * tools: nothing is left to announce. Before list-changes.c it was sent one list_changed of
 * each kind per server becoming ready, and fetched the whole list again for each. */
Test(lists, first_list_after_start_is_not_announced) {
        struct h_client *x;
        json_object *r;

        for (unsigned i = 0; i < N_SERVERS; i++)
                add_demo(sf("s%u", i), "", sf("\"--slow-start\",\"%u\"", 300 + 100 * i));
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open();
        r = h_client_call(x, "1", "tools/list", NULL);
        cr_assert(holds_servers(r, N_SERVERS), "not every server's tools: %s", h_tool_names(r));
        json_object_put(r);
        expect_client_first();
        cr_assert_eq(count_all_after_quiet(x), 0, "list_changed though the answer held everything");
        h_client_close(x);
}

/* What an agent does: fetch the tools again at each tools/list_changed. The notifications
 * must come at least a window apart (half of it allowed for their delivery to this process),
 * and none once the list holds tool of every server s0..s<n-1>. Returns how many came. */
static unsigned relist_until_all(struct h_client *x, unsigned n, const char *tool) {
        long long last = 0, held_all_at = 0, now, deadline = h_now_ms() + H_TIMEOUT_MS;
        unsigned notices = 0, fetches = 0;
        json_object *msg;

        while (!held_all_at || h_now_ms() - held_all_at < QUIET_MS) {
                cr_assert_lt(h_now_ms(), deadline, "the list never held every server (%u notices)", notices);
                msg = h_client_read(x, WINDOW_MS);
                now = h_now_ms();
                if (!msg)
                        continue;
                if (h_is_method(msg, "notifications/tools/list_changed")) {
                        cr_assert_not(held_all_at, "list_changed after the list held every server");
                        cr_assert(notices == 0 || now - last >= WINDOW_MS / 2,
                                  "notice %u came %lld ms after the one before", notices + 1, now - last);
                        last = now;
                        notices++;
                        h_client_request(x, sf("%u", 100 + ++fetches), "tools/list", NULL);
                } else if (h_get(msg, "result.tools") && holds_tool(msg, n, tool)) {
                        held_all_at = now;
                }
                json_object_put(msg);
        }
        return notices;
}

/* Starts n servers s0..s<n-1> (each given args) under settings, and a client whose first
 * tools/list is sent once the daemon is ready; its answer in *first. */
static struct h_client *start_and_list(unsigned n, const char *settings, const char *args, json_object **first) {
        struct h_client *x;

        set_settings(settings);
        for (unsigned i = 0; i < n; i++)
                add_demo(sf("s%u", i), "", args);
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open();
        *first = h_client_call(x, "1", "tools/list", NULL);
        return x;
}

/* The servers outlast listWait: the first answer holds none of their tools, and they become
 * ready at about the same time. */
Test(lists, late_servers_announced_once_per_window) {
        struct h_client *x;
        json_object *r;
        unsigned notices;

        x = start_and_list(N_SERVERS, "\"listWait\":0.2", "\"--slow-start\",\"700\"", &r);
        cr_assert_str_eq(h_tool_names(r), "", "a server was ready before listWait (too slow a machine?)");
        json_object_put(r);
        notices = relist_until_all(x, N_SERVERS, "echo");
        cr_assert_geq(notices, 1, "the servers' tools were never announced");
        cr_assert_lt(notices, N_SERVERS, "a notice per server");
        h_client_close(x);
}

/* Every server restarts at once (a reload gave each one more tool): their tools go, then
 * come back over some milliseconds. No list wait holds the client's requests back here (the
 * servers were ready before), so only the window keeps the notifications apart. */
Test(lists, restarts_announced_once_per_window) {
        struct h_client *x;
        json_object *r;

        for (unsigned i = 0; i < N_SERVERS; i++)
                add_demo(sf("s%u", i), "", "");
        start(NULL);
        wait_all_ready(N_SERVERS);
        x = cl_open();
        r = h_client_call(x, "1", "tools/list", NULL);
        cr_assert(holds_servers(r, N_SERVERS));
        json_object_put(r);

        servers_reset(&D);
        for (unsigned i = 0; i < N_SERVERS; i++)
                add_demo(sf("s%u", i), "", "\"--tools\",\"1\"");
        config_rewrite();
        r = h_control(&D, "reload", NULL);
        cr_assert_null(h_get(r, "error"), "reload: %s", h_json_text(r));
        json_object_put(r);
        cr_assert_geq(relist_until_all(x, N_SERVERS, "tool_1"), 1, "the restarts were never announced");
        cr_assert(h_log_count_wait(&D, "ready -> stopping: configuration changed", N_SERVERS, H_TIMEOUT_MS));
        h_client_close(x);
}

/* A client whose request for the list waits while servers start gets the list as it is when
 * they are ready: no notification for the changes before its answer, not even for a server
 * that became ready while it waited for another. A client that holds the list and does not
 * fetch it again is told once, not once per change. */
Test(lists, waiting_list_is_not_announced_and_holders_told_once) {
        struct h_client *x, *y;
        json_object *r;

        add_demo("s0", "", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        y = cl_open();
        r = h_client_call(x, "1", "tools/list", NULL);
        cr_assert(holds_servers(r, 1));
        json_object_put(r);
        r = h_client_call(y, "1", "tools/list", NULL);
        json_object_put(r);

        /* two new servers, ready some 300 ms and 1200 ms after the reload */
        servers_reset(&D);
        add_demo("s0", "", "");
        add_demo("s1", "", "\"--slow-start\",\"300\"");
        add_demo("s2", "", "\"--slow-start\",\"1200\"");
        config_rewrite();
        r = h_control(&D, "reload", NULL);
        cr_assert_null(h_get(r, "error"), "reload: %s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "2", "tools/list", NULL);
        cr_assert(holds_servers(r, 3), "the list did not wait for the new servers: %s", h_tool_names(r));
        json_object_put(r);

        cr_assert_eq(count_all_after_quiet(x), 0, "list_changed for changes its answer held");
        cr_assert_eq(count_after_quiet(y, "notifications/tools/list_changed"), 1,
                     "y holds the old list: told once, for the two changes");
        h_client_close(x);
        h_client_close(y);
}

/* A change after a client listed (in pages) is announced once for each list it holds that
 * changed: a new toolNameSeparator renames tools and prompts, not resources (URIs are never
 * rewritten), and the client never fetched the prompts. */
Test(lists, change_told_once_per_list_held) {
        struct h_client *x;
        const char *cursor = NULL;
        json_object *r, *next;
        unsigned pages = 0;

        set_settings("\"listPageSize\":4");
        add_demo("s0", "", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        do {
                r = h_client_call(x, sf("%u", ++pages), "tools/list", cursor ? sf("{\"cursor\":\"%s\"}", cursor) : NULL);
                next = h_get(r, "result.nextCursor");
                cursor = next ? sf("%s", json_object_get_string(next)) : NULL;
                json_object_put(r);
        } while (cursor && pages < 10);
        cr_assert_gt(pages, 1, "the tools fit one page");
        r = h_client_call(x, "20", "resources/list", NULL);
        cr_assert_not_null(h_get(r, "result.resources"), "%s", h_json_text(r));
        json_object_put(r);

        servers_reset(&D);
        set_settings("\"listPageSize\":4,\"toolNameSeparator\":\".\"");
        add_demo("s0", "", "");
        config_rewrite();
        r = h_control(&D, "reload", NULL);
        cr_assert_null(h_get(r, "error"), "reload: %s", h_json_text(r));
        json_object_put(r);

        cr_assert_eq(count_after_quiet(x, "notifications/tools/list_changed"), 1);
        cr_assert_eq(h_inbox_drop(x, h_is_method, "notifications/prompts/list_changed"), 0,
                     "told of prompts it never fetched");
        cr_assert_eq(h_inbox_drop(x, h_is_method, "notifications/resources/list_changed"), 0,
                     "told of resources that did not change");
        h_client_close(x);
}

/* Many servers start at once (issue 14): the registry is rebuilt when read, not at each
 * server's change, and the client still sees one coherent list. Every server's tools end
 * up listed under their own names (none renamed as the others arrive), and the client is
 * told of the changes once per window, not once per server. */
#define MANY_SERVERS 100

Test(lists, many_servers_one_coherent_list, .timeout = 120) {
        struct h_client *x;
        json_object *r;
        unsigned notices;

        x = start_and_list(MANY_SERVERS, "\"listWait\":0, \"listPageSize\":0", "", &r);
        json_object_put(r);
        notices = relist_until_all(x, MANY_SERVERS, "echo");
        cr_assert_lt(notices, MANY_SERVERS / 4, "%u notices for %u servers", notices, MANY_SERVERS);
        r = h_client_call(x, "2", "tools/list", NULL);
        cr_assert(holds_servers(r, MANY_SERVERS), "%s", h_tool_names(r));
        cr_assert_null(strchr(h_tool_names(r), '/'), "a tool was renamed: %s", h_tool_names(r));
        json_object_put(r);
        r = h_client_call(x, "3", "tools/call", "{\"name\":\"s99__echo\",\"arguments\":{\"text\":\"hi\"}}");
        cr_assert_not_null(h_get(r, "result"), "%s", json_object_to_json_string(r));
        json_object_put(r);
        h_client_close(x);
}

/* A call sent while its server is on its first start waits for it (listWait) as a list
 * does, and reaches it; a resource read, whose URI any starting server may serve, too.
 * Before, the call failed at once with "not ready". */
Test(lists, call_waits_for_first_start) {
        struct h_client *x;
        json_object *r;

        add_demo("s0", "", "\"--slow-start\",\"700\"");
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open();
        h_client_request(x, "2", "resources/read", "{\"uri\":\"demo://readme\"}");
        r = h_client_call(x, "1", "tools/call", "{\"name\":\"s0__echo\",\"arguments\":{\"text\":\"hi\"}}");
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        expect_client_first();
        r = h_client_answer(x, "2");
        cr_assert_not_null(h_get(r, "result.contents"), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

static json_object *timed_call(struct h_client *x, const char *id, const char *tool, long long *ms) {
        long long t0 = h_now_ms();
        json_object *r = h_client_call(x, id, "tools/call", sf("{\"name\":\"%s\",\"arguments\":{\"text\":\"hi\"}}", tool));

        *ms = h_now_ms() - t0;
        cr_assert_not_null(h_get(r, "error"), "%s: %s", tool, h_json_text(r));
        return r;
}

/* What waits is bounded: a name no starting server may offer, and one of a server the
 * client may not see, are answered at once; a call to a server that outlasts listWait is
 * answered "not ready" at its deadline. */
Test(lists, call_wait_bounded) {
        struct h_client *x;
        json_object *r;
        long long ms;

        set_settings("\"listWait\":1.5,\"access\":{\"rules\":[{\"users\":[\"0\"],\"servers\":[\"secret\"],\"action\":\"deny\"}]}");
        add_demo("s0", "", "\"--slow-start\",\"6000\"");
        add_demo("secret", "", "\"--slow-start\",\"6000\"");
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open();
        json_object_put(timed_call(x, "1", "nope__echo", &ms));
        cr_assert_lt(ms, 1000, "an unknown name was held %lld ms", ms);
        json_object_put(timed_call(x, "2", "secret__echo", &ms));
        cr_assert_lt(ms, 1000, "a denied server's name was held %lld ms", ms);
        r = timed_call(x, "3", "s0__echo", &ms);
        cr_assert(ms >= 1400 && ms < 5000, "answered after %lld ms, not at listWait (1.5 s)", ms);
        cr_assert(strstr(h_str(r, "error.message"), "not ready"), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* A first start that fails ends the wait at once: the call is told why, long before its
 * deadline. */
Test(lists, call_wait_ends_when_first_start_fails) {
        struct h_client *x;
        json_object *r;
        long long ms;

        set_settings("\"listWait\":20");
        add_demo("s0", "\"startTimeout\":1", "\"--never-answer\"");
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open();
        r = timed_call(x, "1", "s0__echo", &ms);
        cr_assert_lt(ms, 10000, "the call waited %lld ms for a start that had failed", ms);
        cr_assert(strstr(h_str(r, "error.message"), "not ready"), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}
