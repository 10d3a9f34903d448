/* Reload and the control socket, run for real with demo servers (demo/demo-server.c).
 *
 * Reload (SIGHUP and the control socket's "reload"): servers added start, removed ones
 * close (their calls in flight get one error each) and are forgotten once stopped, changed
 * ones restart with their new settings, unchanged ones are not touched (same pid, no state
 * change logged), clients stay connected and hear list_changed, toolNameSeparator renames,
 * "disabled" stops and starts, an operator's stop stands; a change of roots alone is told to
 * the running server (notifications/roots/list_changed), while the first roots or the
 * removal of the last restart it; an invalid configuration changes nothing and says why. systemd hears RELOADING=1 with MONOTONIC_USEC, then READY=1.
 *
 * The control socket: "status" rows, "start"/"stop"/"restart", unknown names and bad
 * params, "ping"; who may connect (root, the daemon's user, controlGroup), checked with a
 * child that becomes nobody before it connects. idleExit under socket activation.
 *
 * What is observed: answers on the sockets, the daemon's log (D.log, at debug level),
 * its NOTIFY datagrams, and the servers' pids, which the demo server writes to pidfiles in
 * T, this test's own directory (T/NAME.pid). Every wait drains the NOTIFY datagrams: once
 * their queue is full, the daemon's sd_notify() blocks and it stands still. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;
static char T[64]; /* this test's own directory: pidfiles */

static void setup(void) {
        strcpy(T, "/tmp/mcpvisor-rl-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        servers_reset(&D);
}

static void teardown(void) {
        servers_teardown();
        h_remove_tree(T);
}

TestSuite(reload, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(control, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(idle, .init = setup, .fini = teardown, .timeout = 60);

/* ---- helpers: configs ---- */

static const char *pidfile(const char *name) {
        return sf("%s/%s.pid", T, name);
}

/* A demo server writing its pid to T/NAME.pid; keys are more members, args more arguments
 * (JSON text, "" for none). */
static void demo(const char *name, const char *keys, const char *args) {
        char all[1024];

        snprintf(all, sizeof all, "\"--pidfile\",\"%s\"%s%s", pidfile(name), args[0] ? "," : "", args);
        add_demo(name, keys, all);
}

/* Writes the config built since servers_reset() where the running daemon reads it. */
static void write_config(void) {
        char *text = config_text();
        FILE *f = fopen(D.config, "we");

        cr_assert_not_null(f, "cannot write %s", D.config);
        fputs(text, f);
        cr_assert_eq(fclose(f), 0);
        free(text);
}

static void write_text(const char *text) {
        FILE *f = fopen(D.config, "we");

        cr_assert_not_null(f);
        fputs(text, f);
        cr_assert_eq(fclose(f), 0);
}

/* ---- helpers: waiting, always draining NOTIFY datagrams ---- */

static void pause_draining(int ms) {
        h_notify_drain(&D);
        poll(NULL, 0, ms); /* the log, pidfiles and /proc have no readiness to wait on */
}

static void expect_log(const char *needle) {
        cr_assert(h_log_count_wait(&D, needle, 1, H_TIMEOUT_MS), "not in the log: %s", needle);
}

static void expect_log_n(const char *needle, unsigned n) {
        cr_assert(h_log_count_wait(&D, needle, n, H_TIMEOUT_MS), "not %u times in the log: %s (%u)", n, needle,
                  h_log_count(&D, needle));
}

static void expect_notify(const char *needle) {
        cr_assert(h_notify_wait(&D, needle, H_TIMEOUT_MS), "no datagram with \"%s\"; got %s", needle, D.notices);
}

/* Waits until T/NAME.pid holds a pid other than not_this (0: any) and returns it. */
static pid_t pid_of(const char *name, pid_t not_this) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        const char *path = pidfile(name);
        pid_t pid;

        while ((pid = h_pidfile_wait(path, not_this, 0)) == 0) {
                cr_assert_lt(h_now_ms(), deadline, "no%s pid in %s", not_this ? " new" : "", path);
                pause_draining(10);
        }
        return pid;
}

static void expect_gone(pid_t pid, const char *what) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        while (!h_pid_gone(pid)) {
                cr_assert_lt(h_now_ms(), deadline, "%s (pid %d) is still running", what, (int)pid);
                pause_draining(10);
        }
}

static void expect_alive(pid_t pid, const char *what) {
        cr_assert_not(h_pid_gone(pid), "%s (pid %d) is gone", what, (int)pid);
}

/* Waits for the daemon's own exit; its wait status, or -1 at the deadline. */
static int wait_exit_draining(int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        int status;

        while ((status = h_wait_exit(&D, 20)) == -1 && h_now_ms() < deadline)
                h_notify_drain(&D);
        return status;
}

static bool exited_cleanly(int status) {
        return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- helpers: the control socket ---- */

static const char *error_message(json_object *msg) {
        cr_assert_not_null(h_get(msg, "error.message"), "expected an error, got %s", h_json_text(msg));
        return h_str(msg, "error.message");
}

static json_object *control_ok(const char *method, const char *params) {
        json_object *r = h_control(&D, method, params);

        cr_assert(json_object_is_type(h_get(r, "result"), json_type_object), "%s %s: expected a result, got %s", method,
                  params ? params : "", h_json_text(r));
        cr_assert_eq(json_object_get_int(h_get(r, "id")), 1);
        return r;
}

static json_object *reload_ok(void) {
        return control_ok("reload", NULL);
}

/* The items of a summary list, comma-separated, in a static buffer. */
static const char *items(json_object *summary, const char *key) {
        static char buf[4][512];
        static unsigned next;
        char *out = buf[next++ % 4];
        json_object *list = h_get(summary, key);
        size_t used = 0;

        cr_assert(json_object_is_type(list, json_type_array), "no %s list in %s", key, h_json_text(summary));
        out[0] = '\0';
        for (size_t i = 0; i < json_object_array_length(list); i++)
                used += (size_t)snprintf(out + used, sizeof buf[0] - used, "%s%s", i ? "," : "",
                                         json_object_get_string(json_object_array_get_idx(list, i)));
        return out;
}

/* A reload's answer: exactly these four lists (comma-separated names, "" for none). */
/* The summary's lists, and the daemon settings it says wait for a restart. */
static void expect_summary_waiting(json_object *answer, const char *added, const char *removed, const char *changed,
                                   const char *unchanged, const char *restart_needed) {
        json_object *s = h_get(answer, "result");

        cr_assert_str_eq(items(s, "added"), added, "added, in %s", h_json_text(answer));
        cr_assert_str_eq(items(s, "removed"), removed, "removed, in %s", h_json_text(answer));
        cr_assert_str_eq(items(s, "changed"), changed, "changed, in %s", h_json_text(answer));
        cr_assert_str_eq(items(s, "unchanged"), unchanged, "unchanged, in %s", h_json_text(answer));
        cr_assert_str_eq(items(s, "restartNeeded"), restart_needed, "restartNeeded, in %s", h_json_text(answer));
        cr_assert_eq(json_object_object_length(s), 5, "more than the five lists: %s", h_json_text(answer));
}

static void expect_summary(json_object *answer, const char *added, const char *removed, const char *changed,
                           const char *unchanged) {
        expect_summary_waiting(answer, added, removed, changed, unchanged, "");
}

static json_object *status(void) {
        json_object *r = control_ok("status", NULL);

        cr_assert(json_object_is_type(h_get(r, "result.servers"), json_type_array), "no servers in %s", h_json_text(r));
        return r;
}

static bool is_removed(json_object *row) {
        json_object *v;

        return json_object_object_get_ex(row, "removed", &v) && json_object_get_boolean(v);
}

/* The row of server name that is (or is not) being removed, borrowed from a status answer;
 * NULL if none. */
static json_object *row_of(json_object *st, const char *name, bool removed) {
        json_object *rows = h_get(st, "result.servers");

        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *row = json_object_array_get_idx(rows, i);
                if (strcmp(h_str(row, "name"), name) == 0 && is_removed(row) == removed)
                        return row;
        }
        return NULL;
}

static unsigned rows_named(json_object *st, const char *name) {
        json_object *rows = h_get(st, "result.servers");
        unsigned n = 0;

        for (size_t i = 0; i < json_object_array_length(rows); i++)
                n += strcmp(h_str(json_object_array_get_idx(rows, i), "name"), name) == 0;
        return n;
}

/* True if the row has member key and it is null. */
static bool null_member(json_object *row, const char *key) {
        json_object *v = (json_object *)1;

        return json_object_object_get_ex(row, key, &v) && v == NULL;
}

static long long int_member(json_object *row, const char *key) {
        json_object *v = h_get(row, key);

        cr_assert(json_object_is_type(v, json_type_int), "%s is not a whole number in %s", key, h_json_text(row));
        return json_object_get_int64(v);
}

/* Waits until the status row of name (not a removed one) says state; returns that status. */
static json_object *wait_state(const char *name, const char *state) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        for (;;) {
                json_object *st = status(), *row = row_of(st, name, false);
                if (row && strcmp(h_str(row, "state"), state) == 0)
                        return st;
                cr_assert_lt(h_now_ms(), deadline, "%s is not %s: %s", name, state, h_json_text(st));
                json_object_put(st);
                pause_draining(20);
        }
}

/* Waits until name has n calls in flight. */
static void wait_in_flight(const char *name, long long n) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        for (;;) {
                json_object *st = status(), *row = row_of(st, name, false);
                bool done = row && int_member(row, "inFlight") == n;
                if (!done && h_now_ms() >= deadline)
                        cr_assert_fail("%s has not %lld calls in flight: %s", name, n, h_json_text(st));
                json_object_put(st);
                if (done)
                        return;
                pause_draining(20);
        }
}

/* Waits until status lists no removed server. */
static void wait_no_removed_rows(void) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        for (;;) {
                json_object *st = status(), *rows = h_get(st, "result.servers");
                bool any = false;

                for (size_t i = 0; i < json_object_array_length(rows); i++)
                        any |= is_removed(json_object_array_get_idx(rows, i));
                if (any && h_now_ms() >= deadline)
                        cr_assert_fail("a removed server is still listed: %s", h_json_text(st));
                json_object_put(st);
                if (!any)
                        return;
                pause_draining(20);
        }
}

/* ---- helpers: MCP clients ---- */

static const char *tools_of(struct h_client *x, const char *id) {
        json_object *r = h_client_call(x, id, "tools/list", NULL);
        static char buf[8192];

        snprintf(buf, sizeof buf, "%s", h_tool_names(r));
        json_object_put(r);
        return buf;
}

static void expect_list_changed(struct h_client *x, const char *what) {
        json_object *n = h_take(x, h_is_method, what, H_TIMEOUT_MS);

        cr_assert_not_null(n, "the client was not sent %s", what);
        json_object_put(n);
}

/* A ping round trip: whatever the daemon sent x before its answer is in x's inbox now. */
static void ping_through(struct h_client *x, const char *id) {
        json_object *r = h_client_call(x, id, "ping", NULL);

        cr_assert_not_null(h_get(r, "result"), "ping: %s", h_json_text(r));
        json_object_put(r);
}

/* ==== reload ==== */

Test(reload, added_server_starts) {
        struct h_client *x;
        json_object *r;
        pid_t a;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        a = pid_of("a", 0);
        x = cl_open();
        cr_assert_not(h_has_item(tools_of(x, "1"), "b__echo"));

        servers_reset(&D);
        demo("a", "", "");
        demo("b", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "b", "", "", "a");
        json_object_put(r);
        expect_log("reload by uid 0: reloading");
        expect_log("reloaded: added: b; 1 unchanged");
        expect_log("[b] stopped -> starting: added to the configuration");
        wait_all_ready(2);
        pid_of("b", 0);
        cr_assert_eq(pid_of("a", 0), a, "a was restarted, though unchanged");
        expect_alive(a, "a");

        /* the client, connected all along, hears of b's tools and can call them */
        expect_list_changed(x, "notifications/tools/list_changed");
        cr_assert(h_has_item(tools_of(x, "2"), "b__echo"));
        r = h_client_tool_call(x, "3", "b__echo", "{\"text\":\"hi\"}");
        cr_assert_str_eq(h_result_text(r), "hi");
        json_object_put(r);
        h_client_close(x);
}

Test(reload, removed_server_closes_and_is_forgotten) {
        struct h_client *x;
        json_object *r, *st, *row;
        pid_t b;

        demo("a", "", "");
        /* stays up after its stdin closes: still stopping while the test looks */
        demo("b", "\"stopTimeout\":1", "\"--ignore-stdin-eof\"");
        start(NULL);
        wait_all_ready(2);
        b = pid_of("b", 0);
        x = cl_open();
        cr_assert(h_has_item(tools_of(x, "6"), "b__echo")); /* a client is told of lists it holds */
        h_client_tool_request(x, "7", "b__sleep", "{\"ms\":20000}");
        h_client_tool_request(x, "8", "b__sleep", "{\"ms\":20000}");
        wait_in_flight("b", 2);

        servers_reset(&D);
        demo("a", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "b", "", "a");
        json_object_put(r);
        expect_log("[b] ready -> stopping: removed from the configuration");

        /* listed while it stops, marked removed; not startable by name any more */
        st = status();
        row = row_of(st, "b", true);
        cr_assert_not_null(row, "no removed row for b: %s", h_json_text(st));
        cr_assert_str_eq(h_str(row, "state"), "stopping");
        cr_assert_null(row_of(st, "b", false));
        cr_assert_not(json_object_object_get_ex(row_of(st, "a", false), "removed", NULL),
                      "\"removed\" is listed for a server that is not removed: %s", h_json_text(st));
        json_object_put(st);
        r = h_control(&D, "start", "{\"name\":\"b\"}");
        cr_assert_eq(h_error_code(r), -32602, "start of a removed server: %s", h_json_text(r));
        cr_assert_str_eq(error_message(r), "unknown server 'b'; configured: a");
        json_object_put(r);

        /* its tools are gone at once; each call in flight gets one error once it ended */
        expect_list_changed(x, "notifications/tools/list_changed");
        for (const char *const *id = (const char *const[]){ "7", "8", NULL }; *id; id++) {
                r = h_client_answer(x, *id);
                cr_assert_eq(h_error_code(r), -32603, "call %s: %s", *id, h_json_text(r));
                cr_assert(strstr(error_message(r), "server 'b' was stopped during this call"), "call %s: %s", *id,
                          h_json_text(r));
                json_object_put(r);
        }
        expect_gone(b, "removed server b");
        expect_log("[b] removed from the configuration and stopped; forgetting it");
        ping_through(x, "9");
        cr_assert_eq(h_inbox_drop(x, h_is_answer, "7") + h_inbox_drop(x, h_is_answer, "8"), 0,
                     "a call in flight was answered twice");

        st = status();
        cr_assert_eq(rows_named(st, "b"), 0, "b is still listed after it stopped: %s", h_json_text(st));
        cr_assert_eq(json_object_array_length(h_get(st, "result.servers")), 1);
        json_object_put(st);
        cr_assert_not(h_has_item(tools_of(x, "10"), "b__echo"));
        r = h_client_tool_call(x, "11", "b__echo", "{\"text\":\"x\"}");
        cr_assert_neq(h_error_code(r), 0, "a removed server's tool answered: %s", h_json_text(r));
        json_object_put(r);
        expect_notify("STATUS=1/1 servers ready; 1 client connected");
        h_client_close(x);
}

/* Forgotten as soon as it has stopped, not at whatever next wakes the daemon: this test
 * sends nothing while it waits (a health ping would come only after healthInterval). */
Test(reload, removed_server_forgotten_once_stopped) {
        json_object *r, *st;
        pid_t b;

        demo("a", "", "");
        demo("b", "\"stopTimeout\":1", "\"--ignore-stdin-eof\"");
        start(NULL);
        wait_all_ready(2);
        b = pid_of("b", 0);
        servers_reset(&D);
        demo("a", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "b", "", "a");
        json_object_put(r);
        /* SIGTERM after stopTimeout, long after the reload's connection is gone */
        expect_log("[b] stopping -> stopped: removed from the configuration");
        expect_gone(b, "b");
        expect_log("[b] removed from the configuration and stopped; forgetting it");
        st = status();
        cr_assert_eq(rows_named(st, "b"), 0, "b is listed after it stopped: %s", h_json_text(st));
        json_object_put(st);
}

Test(reload, changed_restarts_unchanged_untouched) {
        struct h_client *x;
        json_object *r, *st;
        pid_t a, u;

        demo("a", "", "\"--tools\",\"1\"");
        demo("u", "", "");
        start(NULL);
        wait_all_ready(2);
        a = pid_of("a", 0);
        u = pid_of("u", 0);
        x = cl_open();
        cr_assert(h_has_item(tools_of(x, "1"), "a__tool_1"));
        cr_assert_not(h_has_item(tools_of(x, "2"), "a__tool_3"));
        /* a call to the unchanged server is in flight across the reload */
        h_client_tool_request(x, "5", "u__sleep", "{\"ms\":1000}");
        wait_in_flight("u", 1);

        servers_reset(&D);
        demo("a", "", "\"--tools\",\"3\"");
        demo("u", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "a", "u");
        json_object_put(r);
        expect_log("[a] ready -> stopping: configuration changed");
        cr_assert_neq(pid_of("a", a), a);
        expect_gone(a, "a's old process");
        expect_log("[a] starting -> ready: 13 tools");
        expect_list_changed(x, "notifications/tools/list_changed");
        cr_assert(h_has_item(tools_of(x, "3"), "a__tool_3"), "a's new tools are not listed");

        /* u: same process, no state change, its call answered as if nothing happened */
        r = h_client_answer(x, "5");
        cr_assert_not_null(h_get(r, "result"), "u's call across the reload: %s", h_json_text(r));
        cr_assert_not(json_object_get_boolean(h_get(r, "result.isError")));
        json_object_put(r);
        cr_assert_eq(pid_of("u", 0), u);
        expect_alive(u, "u");
        cr_assert_eq(h_log_count(&D, "[u] ready -> "), 0, "u changed state");
        cr_assert_eq(h_log_count(&D, "[u] stopped -> starting"), 1, "u was started again");
        st = status();
        cr_assert_eq(int_member(row_of(st, "u", false), "pid"), u);
        cr_assert_eq(int_member(row_of(st, "u", false), "restarts"), 0);
        cr_assert_eq(int_member(row_of(st, "a", false), "restarts"), 1, "%s", h_json_text(st));
        json_object_put(st);
        h_client_close(x);
}

/* A reload's restarts wait for their turns in the start queue (supervisor.h), and exits
 * are reaped a few servers at a time (process.h): a reload that changes more servers than
 * one turn takes still restarts every one of them, none of them in the reload itself (the
 * clients of a daemon whose 1,000 servers all changed waited seconds when they were). */
Test(reload, every_changed_server_restarts) {
        enum { N = 20 };
        const char *reloaded, *first_stop;
        char *log;

        for (int i = 0; i < N; i++)
                demo(sf("s%02d", i), "", "");
        start(NULL);
        wait_all_ready(N);
        servers_reset(&D);
        for (int i = 0; i < N; i++)
                demo(sf("s%02d", i), "", "\"--tools\",\"2\"");
        write_config();
        json_object_put(reload_ok());
        /* the STATUS= of the reload's own iteration: all but the first turn's (its 8 stops,
         * SUPERVISOR_STOPS_PER_TURN) wait for theirs */
        expect_notify(sf("; s%02d restart queued; s%02d restart queued", N - 2, N - 1));
        expect_log_n("] ready -> stopping: configuration changed", N);
        expect_log_n("] starting -> ready: 12 tools", N);
        expect_notify(sf("STATUS=%d/%d servers ready", N, N));
        log = h_log_text(&D);
        reloaded = strstr(log, "reloaded: changed: s00");
        first_stop = strstr(log, "] ready -> stopping: configuration changed");
        cr_assert(reloaded && first_stop && reloaded < first_stop, "a restart began in the reload:\n%s", log);
        free(log);
        for (int i = 0; i < N; i++)
                cr_assert_eq(h_log_count(&D, sf("[s%02d] starting -> ready", i)), 2, "s%02d was not restarted once:\n%s",
                             i, h_log_text(&D));
}

Test(reload, same_config_disturbs_nothing) {
        struct h_client *x;
        json_object *r;
        pid_t a, b;

        demo("a", "", "");
        demo("b", "\"restart\":\"always\"", "");
        start(NULL);
        wait_all_ready(2);
        a = pid_of("a", 0);
        b = pid_of("b", 0);
        x = cl_open();
        tools_of(x, "0"); /* a client is told of lists it holds */

        /* the same file, then the same servers in another order */
        r = reload_ok();
        expect_summary(r, "", "", "", "a,b");
        json_object_put(r);
        servers_reset(&D);
        demo("b", "\"restart\":\"always\"", "");
        demo("a", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "", "b,a");
        json_object_put(r);

        ping_through(x, "1");
        cr_assert_eq(h_inbox_drop(x, h_is_method, "notifications/tools/list_changed"), 0,
                     "list_changed though nothing changed");
        cr_assert_eq(pid_of("a", 0), a);
        cr_assert_eq(pid_of("b", 0), b);
        expect_alive(a, "a");
        expect_alive(b, "b");
        cr_assert_eq(h_log_count(&D, " -> stopping"), 0, "a server was stopped");
        cr_assert_eq(h_log_count(&D, "-> starting"), 2, "a server was started again");
        h_client_close(x);
}

/* A reload's problems: data.problems, each with file, path, severity and message. Returns the
 * array (borrowed from answer) after checking the error and its count. */
static json_object *expect_not_reloaded(json_object *answer) {
        json_object *problems = h_get(answer, "error.data.problems");
        size_t n, errors = 0;

        cr_assert_eq(h_error_code(answer), -32000, "expected a reload error: %s", h_json_text(answer));
        cr_assert(json_object_is_type(problems, json_type_array), "no data.problems: %s", h_json_text(answer));
        n = json_object_array_length(problems);
        for (size_t i = 0; i < n; i++) {
                json_object *p = json_object_array_get_idx(problems, i);
                cr_assert_str_eq(h_str(p, "file"), D.config, "%s", h_json_text(p));
                cr_assert(json_object_is_type(h_get(p, "path"), json_type_string), "%s", h_json_text(p));
                cr_assert(strcmp(h_str(p, "severity"), "error") == 0 || strcmp(h_str(p, "severity"), "warning") == 0,
                          "%s", h_json_text(p));
                cr_assert_gt(strlen(h_str(p, "message")), 0, "%s", h_json_text(p));
                errors += strcmp(h_str(p, "severity"), "error") == 0;
        }
        cr_assert_gt(errors, 0, "not reloaded, but no problem is an error: %s", h_json_text(answer));
        /* counts the errors, not the warnings beside them */
        cr_assert_str_eq(error_message(answer), sf("configuration not reloaded: %zu error%s; nothing changed", errors,
                                                   errors == 1 ? "" : "s"));
        return problems;
}

/* The problem at path (a prefix of it if prefix), or NULL. */
static json_object *problem_at(json_object *problems, const char *path, bool prefix) {
        for (size_t i = 0; i < json_object_array_length(problems); i++) {
                json_object *p = json_object_array_get_idx(problems, i);
                const char *at = h_str(p, "path");
                if (prefix ? strncmp(at, path, strlen(path)) == 0 : strcmp(at, path) == 0)
                        return p;
        }
        return NULL;
}

static void expect_untouched(struct h_client *x, const char *id, pid_t a, pid_t b) {
        json_object *st = status();

        cr_assert_eq(rows_named(st, "a") + rows_named(st, "b"), 2, "%s", h_json_text(st));
        cr_assert_str_eq(h_str(row_of(st, "b", false), "state"), "ready", "%s", h_json_text(st));
        cr_assert_eq(int_member(row_of(st, "a", false), "pid"), a);
        cr_assert_eq(int_member(row_of(st, "b", false), "pid"), b);
        json_object_put(st);
        cr_assert(h_has_item(tools_of(x, id), "b__echo"), "b's tools or the separator changed");
        cr_assert_eq(h_log_count(&D, " -> stopping"), 0, "a server was stopped");
        cr_assert_eq(h_log_count(&D, "[c] "), 0, "c was started");
}

Test(reload, invalid_config_changes_nothing) {
        struct h_client *x;
        json_object *r, *problems, *p;
        unsigned ready_before;
        pid_t a, b;

        demo("a", "", "");
        demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        a = pid_of("a", 0);
        b = pid_of("b", 0);
        x = cl_open();

        /* b removed, c added, a new separator: all valid, but for one bad setting, one bad
         * entry and an unknown key (once a warning: a misspelt setting was silently lost) */
        servers_reset(&D);
        demo("a", "", "");
        demo("c", "", "");
        add_entry("\"bad\":{\"args\":[]}");
        set_settings("\"toolNameSeparator\":\"a b\",\"surprise\":1");
        write_config();
        ready_before = h_notify_count(&D, "READY=1");
        r = h_control(&D, "reload", NULL);
        problems = expect_not_reloaded(r);
        p = problem_at(problems, "mcpvisor.toolNameSeparator", false);
        cr_assert_not_null(p, "no problem for the separator: %s", h_json_text(r));
        cr_assert_str_eq(h_str(p, "severity"), "error");
        p = problem_at(problems, "mcpServers.bad", true);
        cr_assert_not_null(p, "no problem for the entry without a command: %s", h_json_text(r));
        cr_assert_str_eq(h_str(p, "severity"), "error");
        p = problem_at(problems, "mcpvisor.surprise", false);
        cr_assert_not_null(p, "no problem for the unknown key: %s", h_json_text(r));
        cr_assert_str_eq(h_str(p, "severity"), "error");
        cr_assert_eq(json_object_array_length(problems), 3, "%s", h_json_text(r));
        cr_assert_str_eq(error_message(r), "configuration not reloaded: 3 errors; nothing changed");
        json_object_put(r);
        expect_log("configuration not reloaded (3 errors); nothing changed");
        /* systemd still hears the reload end */
        cr_assert_eq(h_notify_count(&D, "READY=1"), ready_before + 1, "%s", D.notices);
        cr_assert(strstr(D.notices, "READY=1\nSTATUS=configuration not reloaded; see the journal"), "%s", D.notices);
        expect_untouched(x, "1", a, b);

        /* not JSON at all */
        write_text("{\"mcpServers\": {\n");
        r = h_control(&D, "reload", NULL);
        problems = expect_not_reloaded(r);
        cr_assert_eq(json_object_array_length(problems), 1, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(problems, "0.path"), "");
        cr_assert_str_eq(h_str(problems, "0.severity"), "error");
        cr_assert(strstr(h_str(problems, "0.message"), "not valid JSON at line 2"), "%s", h_json_text(r));
        json_object_put(r);

        /* a server defined twice, and a misspelt key in an entry */
        write_text("{\"mcpServers\": {\"a\": {\"command\": \"cat\"}, \"a\": {\"command\": \"cat\", \"arg\": []}}}\n");
        r = h_control(&D, "reload", NULL);
        problems = expect_not_reloaded(r);
        cr_assert_eq(json_object_array_length(problems), 2, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(problems, "0.path"), "mcpServers.a");
        cr_assert_str_eq(h_str(problems, "1.path"), "mcpServers.a.arg");
        cr_assert_str_eq(h_str(problems, "1.message"), "unknown key; did you mean \"args\"?");
        json_object_put(r);

        /* no file */
        cr_assert_eq(unlink(D.config), 0);
        r = h_control(&D, "reload", NULL);
        problems = expect_not_reloaded(r);
        cr_assert(strstr(h_str(problems, "0.message"), "cannot read the file"), "%s", h_json_text(r));
        json_object_put(r);

        /* by SIGHUP: logged, nothing else */
        write_text("[]\n");
        kill(D.pid, SIGHUP);
        expect_log("SIGHUP: reloading");
        expect_log_n("; nothing changed", 5);
        expect_untouched(x, "2", a, b);

        /* a valid config again: it applies */
        servers_reset(&D);
        demo("a", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "b", "", "a");
        json_object_put(r);
        expect_gone(b, "b");
        h_client_close(x);
}

Test(reload, warnings_alone_do_not_stop_a_reload) {
        json_object *r;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        servers_reset(&D);
        demo("a", "", "");
        demo("b", "\"autoApprove\":[\"echo\"]", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "b", "", "", "a");
        json_object_put(r);
        expect_log("mcpServers.b.autoApprove: ignored");
        wait_all_ready(2);
}

/* Drop-ins (mcpvisor.d/NAME.json beside the file) are read again too, and their problems
 * name their own file. */
Test(reload, dropins_read_again) {
        char dir[400], path[500], bad[500];
        json_object *r;
        FILE *f;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        snprintf(dir, sizeof dir, "%s/mcpvisor.d", D.dir);
        cr_assert_eq(mkdir(dir, 0755), 0);
        snprintf(path, sizeof path, "%s/extra.json", dir);
        f = fopen(path, "we");
        cr_assert_not_null(f);
        fprintf(f, "{\"mcpServers\":{\"b\":{\"command\":\"%s\"}}}\n", h_demo_server_path());
        cr_assert_eq(fclose(f), 0);
        r = reload_ok();
        expect_summary(r, "b", "", "", "a");
        json_object_put(r);
        wait_all_ready(2);

        snprintf(bad, sizeof bad, "%s/later.json", dir);
        f = fopen(bad, "we");
        cr_assert_not_null(f);
        fputs("{\"mcpServers\":{\"c\":{}}}\n", f);
        cr_assert_eq(fclose(f), 0);
        r = h_control(&D, "reload", NULL);
        cr_assert_eq(h_error_code(r), -32000, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "error.data.problems.0.file"), bad, "%s", h_json_text(r));
        cr_assert_eq(strncmp(h_str(r, "error.data.problems.0.path"), "mcpServers.c", 12), 0, "%s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(h_log_count(&D, "-> starting"), 2, "a server was started by the invalid reload");
}

/* A FIFO named *.json among the drop-ins made the reload wait in open() for a writer: the
 * whole daemon stood still, every client with it. It is refused as what it is, and the
 * clients are answered meanwhile. */
Test(reload, fifo_dropin_refused_without_freezing) {
        char dir[400], fifo[500], expected[600];
        struct h_client *x;
        json_object *r;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        snprintf(dir, sizeof dir, "%s/mcpvisor.d", D.dir);
        cr_assert_eq(mkdir(dir, 0755), 0);
        snprintf(fifo, sizeof fifo, "%s/pipe.json", dir);
        cr_assert_eq(mkfifo(fifo, 0644), 0);

        cr_assert_eq(kill(D.pid, SIGHUP), 0);
        expect_log("SIGHUP: reloading");
        ping_through(x, "1");
        snprintf(expected, sizeof expected, "err: %s: cannot read the file: it is a FIFO; only regular files are read",
                 fifo);
        expect_log(expected);
        expect_log("configuration not reloaded (1 error); nothing changed");

        r = h_control(&D, "reload", NULL);
        cr_assert_eq(h_error_code(r), -32000, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "error.data.problems.0.file"), fifo, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "error.data.problems.0.message"),
                         "cannot read the file: it is a FIFO; only regular files are read", "%s", h_json_text(r));
        json_object_put(r);
        ping_through(x, "2");
        h_client_close(x);
}

Test(reload, sighup_notifies_reloading_then_ready) {
        struct timespec ts;
        unsigned long long before, after, stamp;
        const char *reloading, *ready;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        cr_assert_eq(h_notify_count(&D, "READY=1"), 1);
        cr_assert_eq(h_notify_count(&D, "RELOADING=1"), 0);

        servers_reset(&D);
        demo("a", "", "");
        demo("b", "", "");
        write_config();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        before = (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;
        cr_assert_eq(kill(D.pid, SIGHUP), 0);
        expect_notify("READY=1\nSTATUS=reloaded");
        clock_gettime(CLOCK_MONOTONIC, &ts);
        after = (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;

        reloading = strstr(D.notices, "RELOADING=1\nMONOTONIC_USEC=");
        cr_assert_not_null(reloading, "no RELOADING=1 with MONOTONIC_USEC: %s", D.notices);
        stamp = strtoull(reloading + strlen("RELOADING=1\nMONOTONIC_USEC="), NULL, 10);
        cr_assert(stamp >= before && stamp <= after, "MONOTONIC_USEC=%llu is not between %llu and %llu", stamp, before,
                  after);
        ready = strstr(D.notices, "READY=1\nSTATUS=reloaded");
        cr_assert(reloading < ready, "READY=1 came before RELOADING=1: %s", D.notices);
        cr_assert_eq(h_notify_count(&D, "RELOADING=1"), 1);
        cr_assert_eq(h_notify_count(&D, "READY=1"), 2);

        expect_log("SIGHUP: reloading");
        expect_log("reloaded: added: b; 1 unchanged");
        wait_all_ready(2);
}

/* ---- a reload's read off the loop: a configuration large enough that its read lasts ---- */

/* Entries to make a read last: 20,000 disabled servers (1 MB) take the reading thread about
 * 0.2 s (more under ASan), against the few ms a test needs to act while it runs. */
#define SLOW_ENTRIES 20000

/* The config as built (a demo server "a" at least), with SLOW_ENTRIES disabled servers and a
 * misspelt daemon setting: read and checked whole, then refused, so nothing is applied. */
static void write_slow_invalid_config(void) {
        char *text = config_text();
        FILE *f = fopen(D.config, "we");
        size_t len = strlen(text);

        cr_assert_not_null(f);
        cr_assert(len > 4 && strcmp(text + len - 3, "}}\n") == 0, "unexpected config text: %s", text);
        text[len - 3] = '\0'; /* the end of mcpServers and of the document */
        fprintf(f, "%s", text);
        for (unsigned i = 0; i < SLOW_ENTRIES; i++)
                fprintf(f, ",\"x%05u\":{\"command\":\"cat\",\"disabled\":true}", i);
        fprintf(f, "},\"mcpvisor\":{\"surprise\":1}}\n");
        cr_assert_eq(fclose(f), 0);
        free(text);
}

/* The config built since servers_reset(), put in place by rename(): a read sees the old
 * file whole or the new one whole. */
static void replace_config(void) {
        char *text = config_text(), tmp[400];
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.new", D.config);
        f = fopen(tmp, "we");
        cr_assert_not_null(f);
        fputs(text, f);
        cr_assert_eq(fclose(f), 0);
        cr_assert_eq(rename(tmp, D.config), 0);
        free(text);
}

/* An inotify descriptor told when a process that read the config file closes it. */
static int watch_config_reads(void) {
        int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

        cr_assert_geq(fd, 0);
        cr_assert_geq(inotify_add_watch(fd, D.config, IN_CLOSE_NOWRITE), 0);
        return fd;
}

/* Waits until the daemon has read the file watched and closed it: its reading thread holds
 * the text and is parsing it. */
static void wait_config_read(int fd) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        while (read(fd, buf, sizeof buf) <= 0) {
                cr_assert_lt(h_now_ms(), deadline, "the daemon did not read its configuration");
                h_notify_drain(&D);
                poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 10);
        }
        close(fd);
}

/* A control request sent on a connection of its own, its answer read later (recv_answer). */
static struct h_conn *send_reload(void) {
        struct h_conn *c = h_connect(D.control, H_TIMEOUT_MS);

        h_send(c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"reload\"}\n");
        return c;
}

static json_object *recv_answer(struct h_conn *c) {
        char *line = h_recv_line_draining(&D, c, H_TIMEOUT_MS);
        json_object *o;

        cr_assert_not_null(line, "no answer to reload");
        o = json_tokener_parse(line);
        cr_assert_not_null(o, "not JSON: %.300s", line);
        cr_assert_eq(json_object_get_int(h_get(o, "id")), 7, "%s", h_json_text(o));
        free(line);
        return o;
}

/* True when the daemon logged first, and then later. */
static bool logged_before(const char *first, const char *then) {
        char *log = h_log_text(&D), *a = strstr(log, first), *b = strstr(log, then);
        bool ok = a && b && a < b;

        free(log);
        return ok;
}

/* Reading a large configuration no longer stops the loop: a client is answered while the
 * reading thread parses it (it took 10 ms of one loop turn for 1,000 servers). */
Test(reload, clients_answered_while_the_configuration_is_read) {
        struct h_client *x;
        struct h_conn *asker;
        json_object *r;
        int watch;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        write_slow_invalid_config();
        watch = watch_config_reads();
        asker = send_reload();
        wait_config_read(watch);
        ping_through(x, "1");
        cr_assert_eq(h_log_count(&D, "configuration not reloaded"), 0,
                     "the read was over before the ping's answer: make it slower (SLOW_ENTRIES)");
        r = recv_answer(asker);
        cr_assert_str_eq(error_message(r), "configuration not reloaded: 1 error; nothing changed");
        cr_assert_str_eq(h_str(r, "error.data.problems.0.path"), "mcpvisor.surprise", "%s", h_json_text(r));
        json_object_put(r);
        h_close(asker);
        ping_through(x, "2");
        h_client_close(x);
}

/* A SIGHUP and a control "reload" that come while a read runs are taken together by one
 * more read, started once the running one is applied, which reads the file as it is then:
 * every asker is answered, by the read that followed its request. */
Test(reload, requests_during_a_read_coalesced) {
        struct h_conn *first, *second;
        unsigned ready_before;
        json_object *r;
        int watch;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        ready_before = h_notify_count(&D, "READY=1");
        write_slow_invalid_config();
        watch = watch_config_reads();
        first = send_reload();
        /* half-closed: it still gets its answer, which the daemon holds the connection for */
        cr_assert_eq(shutdown(first->fd, SHUT_WR), 0);
        wait_config_read(watch);

        servers_reset(&D);
        demo("a", "", "");
        demo("c", "", "");
        replace_config();
        cr_assert_eq(kill(D.pid, SIGHUP), 0);
        expect_log("SIGHUP: a read of the configuration is under way; reading it again once that one is applied");
        second = send_reload();
        expect_log("reload by uid 0: a read of the configuration is under way");
        cr_assert_eq(h_log_count(&D, "configuration not reloaded"), 0,
                     "the first read was over before the others came: make it slower (SLOW_ENTRIES)");

        r = recv_answer(first);
        cr_assert_str_eq(error_message(r), "configuration not reloaded: 1 error; nothing changed");
        json_object_put(r);
        cr_assert(h_wait_eof(first, H_TIMEOUT_MS, NULL), "the half-closed asker was not closed once answered");
        r = recv_answer(second);
        expect_summary(r, "c", "", "", "a");
        json_object_put(r);
        h_close(first);
        h_close(second);

        cr_assert_eq(h_log_count(&D, "reload by uid 0: reloading "), 1, "one read started by a request");
        cr_assert_eq(h_log_count(&D, "SIGHUP: reloading "), 0, "a read started by the SIGHUP");
        cr_assert_eq(h_log_count(&D, "again: asked for while the last read ran"), 1, "one more read for both");
        expect_log_n("reloaded: added: c; 1 unchanged", 1);
        cr_assert(logged_before("configuration not reloaded (1 error)", "reloaded: added: c"));
        /* systemd: one reload, from RELOADING=1 to READY=1, however many reads */
        cr_assert_eq(h_notify_count(&D, "RELOADING=1"), 1, "%s", D.notices);
        cr_assert_eq(h_notify_count(&D, "READY=1"), ready_before + 1, "%s", D.notices);
        cr_assert(strstr(D.notices, "READY=1\nSTATUS=reloaded"), "%s", D.notices);
        wait_all_ready(2);
        cr_assert_eq(h_log_count(&D, "[x0"), 0, "the refused read's servers were taken");
}

/* An asker that leaves before its answer is forgotten: nothing is sent to it, the read is
 * applied as usual, and the daemon (under ASan: without a leak) goes on. */
Test(reload, asker_gone_before_its_answer) {
        json_object *r;
        struct h_conn *asker;
        int watch;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        write_slow_invalid_config();
        watch = watch_config_reads();
        asker = send_reload();
        wait_config_read(watch);
        h_close(asker);
        expect_log("configuration not reloaded (1 error); nothing changed");
        cr_assert(logged_before("client disconnected", "configuration not reloaded"),
                  "the asker was not gone before the read was over: make it slower (SLOW_ENTRIES)");

        write_config(); /* only a, which runs */
        r = reload_ok();
        expect_summary(r, "", "", "", "a");
        json_object_put(r);
        r = control_ok("status", NULL);
        json_object_put(r);
}

/* SIGTERM while a read runs: the read is given up, its asker told the daemon is stopping,
 * and the daemon exits cleanly (the thread joined, nothing leaked). */
Test(reload, sigterm_during_a_read) {
        struct h_conn *asker;
        json_object *r;
        int watch;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        write_slow_invalid_config();
        watch = watch_config_reads();
        asker = send_reload();
        wait_config_read(watch);
        cr_assert_eq(kill(D.pid, SIGTERM), 0);
        r = recv_answer(asker);
        cr_assert_str_eq(error_message(r), "configuration not reloaded: mcpvisord is stopping");
        json_object_put(r);
        h_close(asker);
        cr_assert(exited_cleanly(wait_exit_draining(H_TIMEOUT_MS)), "the daemon did not exit cleanly");
        cr_assert_eq(h_log_count(&D, "the reload under way is given up"), 1);
        cr_assert_eq(h_log_count(&D, "configuration not reloaded ("), 0, "a stopping daemon took the read's result");
}

Test(reload, separator_renames_tools) {
        struct h_client *x;
        json_object *r;
        pid_t a;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        a = pid_of("a", 0);
        x = cl_open();
        cr_assert(h_has_item(tools_of(x, "1"), "a__echo"));
        r = h_client_call(x, "10", "prompts/list", NULL); /* a client is told of lists it holds */
        json_object_put(r);

        servers_reset(&D);
        demo("a", "", "");
        set_settings("\"toolNameSeparator\":\".\"");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "", "a");
        json_object_put(r);

        expect_list_changed(x, "notifications/tools/list_changed");
        expect_list_changed(x, "notifications/prompts/list_changed");
        r = h_client_call(x, "2", "tools/list", NULL);
        cr_assert(h_has_item(h_tool_names(r), "a.echo"), "%s", h_tool_names(r));
        cr_assert_not(h_has_item(h_tool_names(r), "a__echo"));
        json_object_put(r);
        r = h_client_call(x, "3", "prompts/list", NULL);
        cr_assert_eq(strncmp(h_names_of(r, "prompts", "name"), "a.", 2), 0, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(x, "4", "a.echo", "{\"text\":\"renamed\"}");
        cr_assert_str_eq(h_result_text(r), "renamed");
        json_object_put(r);
        r = h_client_tool_call(x, "5", "a__echo", "{\"text\":\"old\"}");
        cr_assert_neq(h_error_code(r), 0, "the old name still answers: %s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(pid_of("a", 0), a, "the server restarted for a rename");
        expect_alive(a, "a");
        h_client_close(x);
}

/* ---- roots ---- */

/* The result the demo server a got for its request id (from its stderr in the log). */
static json_object *roots_a_got(const char *id) {
        char *rest = h_log_rest_wait(&D, sf("a: answer to %s: ", id), H_TIMEOUT_MS);
        json_object *answer, *result;

        cr_assert_not_null(rest, "a got no answer to %s", id);
        answer = json_tokener_parse(rest);
        cr_assert_not_null(answer, "not JSON: %s", rest);
        free(rest);
        result = json_object_get(h_get(answer, "result"));
        cr_assert_not_null(result, "a's %s was refused: %s", id, h_json_text(answer));
        json_object_put(answer);
        return result;
}

static void expect_roots(json_object *result, const char *want) {
        json_object *w = json_tokener_parse(want);

        cr_assert(json_object_equal(result, w), "roots: got %s, want %s", h_json_text(result), want);
        json_object_put(w);
        json_object_put(result);
}

/* The capabilities a was initialized with, as its client_capabilities tool returns them. */
static void expect_offered(struct h_client *x, const char *id, const char *want) {
        json_object *r = h_client_tool_call(x, id, "a__client_capabilities", "{}"), *got = json_tokener_parse(h_result_text(r)),
                    *w = json_tokener_parse(want);

        cr_assert(json_object_equal(got, w), "a was offered %s, not %s", h_json_text(got), want);
        json_object_put(w);
        json_object_put(got);
        json_object_put(r);
}

/* Rewrites the config with demo server a alone (keys and args as for demo()) and reloads
 * it, expecting a to be listed as changed. */
static void reload_a_changed(const char *keys, const char *args) {
        json_object *r;

        servers_reset(&D);
        demo("a", keys, args);
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "a", "");
        json_object_put(r);
}

/* Roots changed, from some to others: the server keeps running and is told, then asks
 * (--follow-roots) with no client to ask, and gets the new ones; no client is asked. */
Test(reload, roots_change_without_restart) {
        struct h_client *x;
        json_object *r, *st;
        pid_t a;

        demo("a", "\"roots\":[\"/srv/one\"]", "\"--follow-roots\",\"--ask-at-start\",\"roots/list\"");
        start(NULL);
        wait_all_ready(1);
        a = pid_of("a", 0);
        expect_roots(roots_a_got("start-1"), "{\"roots\":[{\"uri\":\"file:///srv/one\"}]}");
        x = cl_open_with("{\"roots\":{\"listChanged\":true}}");

        reload_a_changed("\"roots\":[{\"uri\":\"file:///srv/two\",\"name\":\"two\"},\"/srv/three\"]",
                         "\"--follow-roots\",\"--ask-at-start\",\"roots/list\"");
        expect_log("[a] roots changed; sent notifications/roots/list_changed instead of restarting it");
        expect_log("a: notification notifications/roots/list_changed {}");
        expect_roots(roots_a_got("roots-1"),
                     "{\"roots\":[{\"uri\":\"file:///srv/two\",\"name\":\"two\"},{\"uri\":\"file:///srv/three\"}]}");

        /* the same process, never stopped; a call to it meets the new roots too */
        cr_assert_eq(pid_of("a", 0), a);
        expect_alive(a, "a");
        cr_assert_eq(h_log_count(&D, "[a] ready -> "), 0, "a changed state");
        st = status();
        cr_assert_eq(int_member(row_of(st, "a", false), "pid"), a);
        cr_assert_eq(int_member(row_of(st, "a", false), "restarts"), 0, "%s", h_json_text(st));
        json_object_put(st);
        r = h_client_tool_call(x, "1", "a__ask", "{\"method\":\"roots/list\"}");
        expect_roots(json_tokener_parse(h_result_text(r)),
                     "{\"roots\":[{\"uri\":\"file:///srv/two\",\"name\":\"two\"},{\"uri\":\"file:///srv/three\"}]}");
        json_object_put(r);
        ping_through(x, "2");
        cr_assert_eq(h_inbox_drop(x, h_is_method, "roots/list"), 0, "the client was asked for its roots");

        /* the same roots again: nothing to tell */
        r = reload_ok();
        expect_summary(r, "", "", "", "a");
        json_object_put(r);
        ping_through(x, "3");
        cr_assert_eq(h_log_count(&D, "a: notification notifications/roots/list_changed"), 1);
        h_client_close(x);
}

/* ---- tool and prompt filters ---- */

/* The error message with the tool's name cut out: a call to a filtered tool must be
 * answered exactly as one to a tool that does not exist. */
static char *error_without(json_object *r, const char *name) {
        const char *m = json_object_get_string(h_get(r, "error.message"));
        char *text = strdup(m ? m : ""), *at;

        cr_assert_not_null(text);
        while ((at = strstr(text, name)))
                memmove(at, at + strlen(name), strlen(at + strlen(name)) + 1);
        return text;
}

static void expect_answered_as_unknown(struct h_client *x, const char *id, const char *filtered) {
        json_object *r = h_client_tool_call(x, id, filtered, "{\"text\":\"x\"}"),
                    *u = h_client_tool_call(x, sf("%s0", id), "a__no_such_tool", "{\"text\":\"x\"}");
        char *a = error_without(r, filtered), *b = error_without(u, "a__no_such_tool");

        cr_assert_neq(h_error_code(r), 0, "%s answered: %s", filtered, h_json_text(r));
        cr_assert_eq(h_error_code(r), h_error_code(u), "%s vs unknown: %s", h_json_text(r), h_json_text(u));
        cr_assert_str_eq(a, b);
        free(a);
        free(b);
        json_object_put(r);
        json_object_put(u);
}

/* includeTools/excludeTools (exclude wins) and excludePrompts: what is filtered is neither
 * listed nor callable. A reload changing the filters applies them at once without
 * restarting the server, and clients holding the lists hear list_changed. */
Test(reload, filters_change_without_restart) {
        struct h_client *x;
        json_object *r;
        const char *tools;
        pid_t a;

        demo("a", "\"includeTools\":[\"e*\",\"a?d\",\"ask\"],\"excludeTools\":[\"ask\",\"env\"],\"excludePrompts\":[\"greet*\"]", "");
        start(NULL);
        wait_all_ready(1);
        a = pid_of("a", 0);
        x = cl_open();
        tools = tools_of(x, "1");
        cr_assert_str_eq(tools, "a__echo,a__add", "%s", tools);
        r = h_client_call(x, "2", "prompts/list", NULL);
        cr_assert_str_eq(h_names_of(r, "prompts", "name"), "", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(x, "3", "a__echo", "{\"text\":\"offered\"}");
        cr_assert_str_eq(h_result_text(r), "offered");
        json_object_put(r);
        expect_answered_as_unknown(x, "4", "a__ask");
        expect_answered_as_unknown(x, "5", "a__sleep");
        r = h_client_call(x, "6", "prompts/get", "{\"name\":\"a__greeting\",\"arguments\":{\"name\":\"x\"}}");
        cr_assert_neq(h_error_code(r), 0, "a filtered prompt answered: %s", h_json_text(r));
        json_object_put(r);

        reload_a_changed("\"excludeTools\":[\"echo\"]", "");
        expect_log("[a] tool and prompt filters changed; applied without restarting it");
        expect_list_changed(x, "notifications/tools/list_changed");
        expect_list_changed(x, "notifications/prompts/list_changed");
        tools = tools_of(x, "7");
        cr_assert(h_has_item(tools, "a__ask") && h_has_item(tools, "a__sleep"), "%s", tools);
        cr_assert_not(h_has_item(tools, "a__echo"), "%s", tools);
        expect_answered_as_unknown(x, "8", "a__echo");
        r = h_client_tool_call(x, "9", "a__ask", "{\"method\":\"ping\"}");
        cr_assert_eq(h_error_code(r), 0, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "10", "prompts/list", NULL);
        cr_assert(h_has_item(h_names_of(r, "prompts", "name"), "a__greeting"), "%s", h_json_text(r));
        json_object_put(r);

        cr_assert_eq(pid_of("a", 0), a, "the server restarted for its filters");
        expect_alive(a, "a");
        cr_assert_eq(h_log_count(&D, "[a] ready -> "), 0, "a changed state");
        h_client_close(x);
}

/* An empty exclude list, as Gemini CLI reads it, excludes nothing: a reload bringing one
 * applies (it was refused as an error, and the reload with it). */
Test(reload, empty_exclude_list_applies) {
        struct h_client *x;
        const char *tools;
        json_object *r;

        demo("a", "\"excludeTools\":[\"echo\"]", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        cr_assert_not(h_has_item(tools_of(x, "1"), "a__echo"));

        servers_reset(&D);
        demo("a", "\"excludeTools\":[],\"excludePrompts\":[]", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "a", "");
        cr_assert_null(h_get(r, "problems"), "%s", h_json_text(r));
        json_object_put(r);
        expect_list_changed(x, "notifications/tools/list_changed");
        tools = tools_of(x, "2");
        cr_assert(h_has_item(tools, "a__echo"), "%s", tools);
        h_client_close(x);
}

/* The first roots, or the removal of the last, change what initialize offered: a restart. */
Test(reload, roots_added_or_removed_restart) {
        struct h_client *x;
        pid_t a, a2, a3;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        a = pid_of("a", 0);
        x = cl_open();
        expect_offered(x, "1", "{\"roots\":{},\"sampling\":{},\"elicitation\":{}}");

        reload_a_changed("\"roots\":[\"/srv/one\"]", "");
        expect_log("[a] ready -> stopping: configuration changed");
        a2 = pid_of("a", a);
        expect_gone(a, "a's first process");
        expect_log_n("[a] starting -> ready", 2);
        expect_offered(x, "2", "{\"roots\":{\"listChanged\":true},\"sampling\":{},\"elicitation\":{}}");

        reload_a_changed("\"roots\":[]", "");
        a3 = pid_of("a", a2);
        expect_gone(a2, "a's second process");
        expect_log_n("[a] starting -> ready", 3);
        expect_offered(x, "3", "{\"roots\":{},\"sampling\":{},\"elicitation\":{}}");
        expect_alive(a3, "a");
        cr_assert_eq(h_log_count(&D, "notifications/roots/list_changed"), 0, "a was told instead of restarted");
        h_client_close(x);
}

Test(reload, disabled_stops_enabled_starts) {
        struct h_client *x;
        json_object *r, *st, *row;
        pid_t a, a2;

        demo("a", "", "");
        demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        a = pid_of("a", 0);
        x = cl_open();
        cr_assert(h_has_item(tools_of(x, "0"), "a__echo")); /* a client is told of lists it holds */

        servers_reset(&D);
        demo("a", "\"disabled\":true", "");
        demo("b", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "a", "b");
        json_object_put(r);
        expect_log("[a] ready -> stopping: disabled in the configuration");
        expect_log("[a] stopping -> stopped");
        expect_gone(a, "disabled a");
        st = wait_state("a", "stopped");
        row = row_of(st, "a", false);
        cr_assert(json_object_get_boolean(h_get(row, "disabled")), "%s", h_json_text(row));
        cr_assert(null_member(row, "pid"), "%s", h_json_text(row));
        cr_assert_str_eq(h_str(row, "cause"), "disabled in the configuration");
        json_object_put(st);
        expect_list_changed(x, "notifications/tools/list_changed");
        cr_assert_not(h_has_item(tools_of(x, "1"), "a__echo"));
        expect_notify("STATUS=1/1 servers ready");
        cr_assert_eq(h_log_count(&D, "[a] stopped -> starting"), 1);

        servers_reset(&D);
        demo("a", "", "");
        demo("b", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "a", "b");
        json_object_put(r);
        expect_log_n("[a] stopped -> starting: configuration changed", 1);
        a2 = pid_of("a", a);
        st = wait_state("a", "ready");
        row = row_of(st, "a", false);
        cr_assert_not(json_object_get_boolean(h_get(row, "disabled")));
        cr_assert_eq(int_member(row, "pid"), a2);
        json_object_put(st);
        cr_assert(h_has_item(tools_of(x, "2"), "a__echo"));
        h_client_close(x);
}

Test(reload, disabled_at_start_enabled_by_reload) {
        json_object *r;

        demo("a", "\"disabled\":true", "");
        start(NULL);
        expect_notify("STATUS=0/0 servers ready");
        servers_reset(&D);
        demo("a", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "a", "");
        json_object_put(r);
        wait_all_ready(1);
        pid_of("a", 0);
}

Test(reload, operator_stop_stands) {
        json_object *r, *st;
        pid_t a, b;

        demo("a", "", "");
        demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        a = pid_of("a", 0);
        b = pid_of("b", 0);
        r = control_ok("stop", "{\"name\":\"a\"}");
        json_object_put(r);
        expect_log("[a] stopping -> stopped: stopped by uid 0 (mcpvisorctl)");
        expect_gone(a, "a");

        /* a unchanged, b changed: b restarts, a stays stopped */
        servers_reset(&D);
        demo("a", "", "");
        demo("b", "", "\"--tools\",\"2\"");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "b", "a");
        json_object_put(r);
        pid_of("b", b);
        expect_log("[b] starting -> ready: 12 tools");
        st = status();
        cr_assert_str_eq(h_str(row_of(st, "a", false), "state"), "stopped", "%s", h_json_text(st));
        json_object_put(st);
        cr_assert_eq(h_log_count(&D, "[a] stopped -> starting"), 1, "a was started by the reload");

        /* and the operator can start it again */
        r = control_ok("start", "{\"name\":\"a\"}");
        cr_assert_str_eq(h_str(r, "result.state"), "starting");
        json_object_put(r);
        pid_of("a", a);
        json_object_put(wait_state("a", "ready"));
}

Test(reload, readded_while_the_removed_one_stops) {
        struct h_client *x;
        json_object *r, *st;
        pid_t b, b2;

        demo("a", "", "");
        demo("b", "\"stopTimeout\":1", "\"--ignore-stdin-eof\"");
        start(NULL);
        wait_all_ready(2);
        b = pid_of("b", 0);
        x = cl_open();

        servers_reset(&D);
        demo("a", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "b", "", "a");
        json_object_put(r);

        /* back before the old one has stopped: a new server of that name */
        servers_reset(&D);
        demo("a", "", "");
        demo("b", "\"stopTimeout\":1", "\"--ignore-stdin-eof\"");
        write_config();
        r = reload_ok();
        expect_summary(r, "b", "", "", "a");
        json_object_put(r);
        b2 = pid_of("b", b);
        st = wait_state("b", "ready");
        cr_assert_eq(int_member(row_of(st, "b", false), "pid"), b2);
        if (!h_pid_gone(b)) /* still stopping, listed beside the new one */
                cr_assert_not_null(row_of(st, "b", true), "the old b is running but not listed: %s", h_json_text(st));
        json_object_put(st);

        /* the old one goes (see removed_server_forgotten_once_stopped for when), the new
         * one stays */
        expect_gone(b, "the removed b");
        wait_no_removed_rows();
        expect_log("[b] removed from the configuration and stopped; forgetting it");
        expect_alive(b2, "the new b");
        st = status();
        cr_assert_eq(rows_named(st, "b"), 1, "%s", h_json_text(st));
        cr_assert_str_eq(h_str(row_of(st, "b", false), "state"), "ready");
        json_object_put(st);
        r = h_client_tool_call(x, "1", "b__echo", "{\"text\":\"new\"}");
        cr_assert_str_eq(h_result_text(r), "new");
        json_object_put(r);
        r = h_client_tool_call(x, "2", "b__env", "{\"name\":\"MCPVISOR_INSTANCE\"}");
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
}

/* The sockets stay as bound; a change of their settings is said, and only then. The harness
 * passes --socket and --control-socket, as an operator may. */
Test(reload, socket_settings_wait_for_the_next_start) {
        struct stat st;
        json_object *r;
        unsigned said;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        cr_assert_eq(stat(D.sock, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0660);

        servers_reset(&D);
        demo("a", "", "");
        set_settings("\"socketMode\":\"0600\"");
        write_config();
        r = reload_ok();
        expect_summary_waiting(r, "", "", "", "a", "socketMode");
        json_object_put(r);
        said = h_log_count(&D, "socketMode changed; it takes effect when mcpvisord starts again");
        cr_assert_geq(said, 1, "a socketMode change was not said");
        cr_assert_eq(stat(D.sock, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0660, "the bound socket's mode changed at a reload");
        json_object_put(control_ok("ping", NULL));

        /* back to the settings the sockets were bound with: nothing to say */
        servers_reset(&D);
        demo("a", "", "");
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "", "a");
        json_object_put(r);
        cr_assert_eq(h_log_count(&D, "socketMode changed"), said,
                     "\"socketMode changed\" logged by a reload that changed no socket setting");
        cr_assert_eq(h_log_count(&D, "changed; it takes effect when"), said, "another setting said to wait");
}

/* The connection to the service manager is made at start, for a configuration that names
 * the launcher "systemd": a reload that first names it cannot start such servers, and says
 * so (the server's error too), instead of a bare "not tried". */
Test(reload, a_first_systemd_launcher_waits_for_a_restart) {
        json_object *r, *st;
        const char *cause;

        set_settings("\"launcher\":\"exec\"");
        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);

        servers_reset(&D);
        set_settings("\"launcher\":\"exec\"");
        demo("a", "", "");
        demo("b", "\"launcher\":\"systemd\"", "");
        write_config();
        r = reload_ok();
        expect_summary_waiting(r, "b", "", "", "a", "launcher");
        json_object_put(r);
        expect_log("launcher changed; servers with launcher \"systemd\" need the connection to the service manager");
        expect_log("[b] stopped -> backoff: cannot start: launcher \"systemd\" needs the service manager");
        st = status();
        for (size_t i = 0; i < json_object_array_length(h_get(st, "result.servers")); i++) {
                json_object *s = json_object_array_get_idx(h_get(st, "result.servers"), i);

                if (strcmp(h_str(s, "name"), "b") != 0)
                        continue;
                cause = h_str(s, "cause");
                cr_assert_not_null(strstr(cause, "restart mcpvisord"), "%s", cause);
        }
        json_object_put(st);
}

/* A free TCP port of 127.0.0.1 (bound and let go: the daemon binds it next). */
static unsigned free_port(void) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
                  getsockname(fd, (struct sockaddr *)&a, &len) == 0);
        close(fd);
        return ntohs(a.sin_port);
}

static bool accepts(unsigned port) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;

        if (fd >= 0)
                close(fd);
        return ok;
}

/* The HTTP addresses are bound at start: a reload that changes http.listen used to say
 * nothing changed. It names the setting that waits, in the log and in the answer (and in
 * mcpvisorctl reload's line), and the addresses stay as bound. */
Test(reload, http_listen_change_is_named) {
        unsigned one = free_port(), two = free_port();
        json_object *r;

        demo("a", "", "");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"]}", one));
        start(NULL);
        wait_all_ready(1);
        cr_assert(accepts(one));

        servers_reset(&D);
        demo("a", "", "");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"]},\"maxMessageSize\":65536", two));
        write_config();
        r = reload_ok();
        expect_summary_waiting(r, "", "", "", "a", "http.listen,maxMessageSize");
        json_object_put(r);
        expect_log("http.listen changed; it takes effect when mcpvisord starts again");
        expect_log("maxMessageSize changed; socket connections made from now on take it; HTTP requests when "
                   "mcpvisord starts again");
        expect_log("reloaded: 1 unchanged; waiting for a restart: http.listen maxMessageSize");
        cr_assert(accepts(one), "the bound address was closed");

        /* still different from what is bound: said again; the same as bound: nothing */
        r = reload_ok();
        expect_summary_waiting(r, "", "", "", "a", "http.listen");
        json_object_put(r);
        servers_reset(&D);
        demo("a", "", "");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"]},\"maxMessageSize\":65536", one));
        write_config();
        r = reload_ok();
        expect_summary(r, "", "", "", "a");
        json_object_put(r);
}

Test(reload, reload_is_not_an_mcp_method) {
        struct h_client *x;
        json_object *r;

        /* two servers: with one, unknown methods pass through to it */
        demo("a", "", "");
        demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        servers_reset(&D);
        write_config(); /* no servers: a reload would remove both */
        x = cl_open();
        for (const char *const *m = (const char *const[]){ "reload", "status", "stop", NULL }; *m; m++) {
                r = h_client_call(x, "1", *m, "{\"name\":\"a\"}");
                cr_assert_eq(h_error_code(r), -32601, "%s on the MCP socket: %s", *m, h_json_text(r));
                json_object_put(r);
        }
        cr_assert_eq(h_log_count(&D, "reloading"), 0);
        cr_assert_eq(h_log_count(&D, "[a] ready -> "), 0);
        h_client_close(x);
}

/* ==== the control socket ==== */

Test(control, ping) {
        json_object *r;

        start(NULL);
        r = control_ok("ping", NULL);
        cr_assert_eq(json_object_object_length(h_get(r, "result")), 0);
        json_object_put(r);
}

Test(control, status_rows) {
        struct h_client *x;
        json_object *st, *row, *daemon;
        pid_t a;

        demo("a", "", "");
        demo("off", "\"disabled\":true", "");
        start(NULL);
        wait_all_ready(1);
        a = pid_of("a", 0);
        x = cl_open();
        h_client_tool_request(x, "1", "a__sleep", "{\"ms\":20000}");
        wait_in_flight("a", 1);

        st = status();
        daemon = h_get(st, "result.daemon");
        cr_assert_eq(int_member(daemon, "pid"), D.pid);
        cr_assert_gt(strlen(h_str(daemon, "version")), 0);
        cr_assert_eq(int_member(daemon, "clients"), 1, "MCP clients: %s", h_json_text(daemon));
        cr_assert_str_eq(h_str(daemon, "config"), D.config);
        cr_assert_geq(json_object_get_double(h_get(daemon, "uptime")), 0);
        cr_assert_str_eq(h_str(daemon, "log.target"), "stderr");
        cr_assert_str_eq(h_str(daemon, "log.stderr"), D.log);
        cr_assert_eq(json_object_array_length(h_get(st, "result.servers")), 2, "%s", h_json_text(st));
        cr_assert_str_eq(h_str(st, "result.servers.0.name"), "a", "config order");

        row = row_of(st, "a", false);
        cr_assert_str_eq(h_str(row, "state"), "ready");
        cr_assert_not(json_object_get_boolean(h_get(row, "disabled")));
        cr_assert_not(json_object_object_get_ex(row, "removed", NULL), "%s", h_json_text(row));
        cr_assert_eq(int_member(row, "pid"), a);
        cr_assert(json_object_is_type(h_get(row, "uptime"), json_type_double), "%s", h_json_text(row));
        cr_assert_geq(json_object_get_double(h_get(row, "uptime")), 0);
        cr_assert_geq(json_object_get_double(h_get(row, "since")), 0);
        cr_assert_eq(int_member(row, "restarts"), 0);
        cr_assert(null_member(row, "lastExit"), "%s", h_json_text(row));
        cr_assert_str_eq(h_str(row, "cause"), "10 tools, 1 prompts, 1 resources, 1 templates");
        cr_assert(null_member(row, "why") && null_member(row, "restartIn"), "%s", h_json_text(row));
        cr_assert_gt(strlen(h_str(row, "lastStderr.line")), 0, "%s", h_json_text(row)); /* the demo's log */
        cr_assert_geq(json_object_get_double(h_get(row, "lastStderr.since")), 0);
        cr_assert_eq(int_member(row, "tools"), 10);
        cr_assert_eq(int_member(row, "prompts"), 1);
        cr_assert_eq(int_member(row, "resources"), 1);
        cr_assert_eq(int_member(row, "templates"), 1);
        cr_assert_eq(int_member(row, "inFlight"), 1);

        row = row_of(st, "off", false);
        cr_assert_not_null(row, "%s", h_json_text(st));
        cr_assert_str_eq(h_str(row, "state"), "stopped");
        cr_assert(json_object_get_boolean(h_get(row, "disabled")));
        cr_assert(null_member(row, "pid") && null_member(row, "uptime"), "%s", h_json_text(row));
        cr_assert_str_eq(h_str(row, "cause"), "disabled in the configuration");
        cr_assert_eq(int_member(row, "tools"), 0);
        cr_assert_eq(int_member(row, "inFlight"), 0);
        json_object_put(st);

        /* and is no longer in flight once cancelled */
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n");
        wait_in_flight("a", 0);
        h_client_close(x);
}

Test(control, start_stop_restart) {
        json_object *r, *st, *row;
        pid_t p1, p2, p3;

        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        p1 = pid_of("a", 0);

        r = control_ok("stop", "{\"name\":\"a\"}");
        cr_assert_str_eq(h_str(r, "result.name"), "a");
        cr_assert_str_eq(h_str(r, "result.state"), "stopping");
        json_object_put(r);
        expect_gone(p1, "a");
        st = wait_state("a", "stopped");
        row = row_of(st, "a", false);
        cr_assert(null_member(row, "pid"), "%s", h_json_text(row));
        cr_assert(json_object_is_type(h_get(row, "lastExit"), json_type_string), "%s", h_json_text(row));
        cr_assert_str_eq(h_str(row, "cause"), "stopped by uid 0 (mcpvisorctl)");
        cr_assert_str_eq(h_str(row, "why.kind"), "request");
        cr_assert_str_eq(h_str(row, "why.detail"), "stopped by uid 0 (mcpvisorctl)");
        cr_assert(json_object_is_type(h_get(row, "why.exit"), json_type_object), "%s", h_json_text(row));
        json_object_put(st);
        expect_notify("STATUS=0/1 servers ready; a stopped");

        /* stopping what is stopped changes nothing */
        r = control_ok("stop", "{\"name\":\"a\"}");
        cr_assert_str_eq(h_str(r, "result.state"), "stopped");
        json_object_put(r);

        r = control_ok("start", "{\"name\":\"a\"}");
        cr_assert_str_eq(h_str(r, "result.name"), "a");
        cr_assert_str_eq(h_str(r, "result.state"), "starting");
        json_object_put(r);
        p2 = pid_of("a", p1);
        json_object_put(wait_state("a", "ready"));

        r = control_ok("restart", "{\"name\":\"a\"}");
        cr_assert_str_eq(h_str(r, "result.state"), "stopping");
        json_object_put(r);
        p3 = pid_of("a", p2);
        expect_gone(p2, "a before its restart");
        st = wait_state("a", "ready");
        row = row_of(st, "a", false);
        cr_assert_eq(int_member(row, "pid"), p3);
        cr_assert_eq(int_member(row, "restarts"), 2, "%s", h_json_text(row));
        json_object_put(st);
        expect_log("[a] ready -> stopping: restarted by uid 0 (mcpvisorctl)");
}

Test(control, unknown_server_and_bad_params) {
        json_object *r;

        demo("a", "", "");
        demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        for (const char *const *m = (const char *const[]){ "start", "stop", "restart", NULL }; *m; m++) {
                r = h_control(&D, *m, "{\"name\":\"zz\"}");
                cr_assert_eq(h_error_code(r), -32602, "%s zz: %s", *m, h_json_text(r));
                cr_assert_str_eq(error_message(r), "unknown server 'zz'; configured: a, b");
                json_object_put(r);
                r = h_control(&D, *m, "{}");
                cr_assert_eq(h_error_code(r), -32602, "%s without a name: %s", *m, h_json_text(r));
                json_object_put(r);
                r = h_control(&D, *m, "{\"name\":7}");
                cr_assert_eq(h_error_code(r), -32602, "%s with a number: %s", *m, h_json_text(r));
                json_object_put(r);
                r = h_control(&D, *m, NULL);
                cr_assert_eq(h_error_code(r), -32602, "%s without params: %s", *m, h_json_text(r));
                json_object_put(r);
        }
        cr_assert_eq(h_log_count(&D, " -> stopping"), 0);
        /* MCP methods are not served here, initialize included: they are unknown methods,
         * not requests "before initialize" */
        for (const char *const *m = (const char *const[]){ "tools/list", "initialize", "no/such", NULL }; *m; m++) {
                r = h_control(&D, *m, "{}");
                cr_assert_eq(h_error_code(r), -32601, "%s on the control socket: %s", *m, h_json_text(r));
                json_object_put(r);
        }
}

Test(control, unknown_server_when_all_are_removed) {
        json_object *r;

        demo("a", "\"stopTimeout\":1", "\"--ignore-stdin-eof\"");
        start(NULL);
        wait_all_ready(1);
        servers_reset(&D);
        write_config();
        r = reload_ok();
        expect_summary(r, "", "a", "", "");
        json_object_put(r);
        /* a is still stopping, but no longer configured */
        r = h_control(&D, "stop", "{\"name\":\"a\"}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        cr_assert_str_eq(error_message(r), "unknown server 'a'; configured: none");
        json_object_put(r);
        wait_no_removed_rows();
        expect_log("[a] removed from the configuration and stopped; forgetting it");
        r = h_control(&D, "stop", "{\"name\":\"a\"}");
        cr_assert_str_eq(error_message(r), "unknown server 'a'; configured: none");
        json_object_put(r);
}

/* ---- who may use the control socket ---- */

struct peer {
        uid_t uid;
        gid_t gid;
        size_t n_groups;
        gid_t groups[4];
};

/* Only async-signal-safe calls between fork and _exit: the test's process may have
 * threads (Criterion's). */
static void put(int fd, const char *text) {
        size_t len = strlen(text);

        while (len > 0) {
                ssize_t n = write(fd, text, len);
                if (n <= 0)
                        return;
                text += n;
                len -= (size_t)n;
        }
}

static void put_errno(int fd, const char *what, int err) {
        char num[16];
        int i = (int)sizeof num - 1;

        num[i] = '\0';
        do
                num[--i] = (char)('0' + err % 10);
        while ((err /= 10) > 0 && i > 0);
        put(fd, what);
        put(fd, " errno ");
        put(fd, num + i);
}

/* The child: becomes the peer, connects, sends request, half-closes, and copies what comes
 * back into out, then "<EOF>" (or "<RESET>") when the daemon closes, "<TIMEOUT>" if it
 * does not within the deadline, "<FAILED ...>" if it could not get that far. */
static void peer_child(const struct peer *p, const char *path, const char *request, int out) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char buf[4096];
        int fd;

        if (setgroups(p->n_groups, p->groups) < 0 || setgid(p->gid) < 0 || setuid(p->uid) < 0) {
                put_errno(out, "<FAILED to become the peer:", errno);
                put(out, ">");
                _exit(1);
        }
        if (strlen(path) >= sizeof sa.sun_path) {
                put(out, "<FAILED: socket path too long>");
                _exit(1);
        }
        memcpy(sa.sun_path, path, strlen(path));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                put_errno(out, "<FAILED to connect:", errno);
                put(out, ">");
                _exit(1);
        }
        (void)send(fd, request, strlen(request), MSG_NOSIGNAL);
        (void)shutdown(fd, SHUT_WR);
        for (;;) {
                struct pollfd pfd = { fd, POLLIN, 0 };
                ssize_t n;

                if (poll(&pfd, 1, H_TIMEOUT_MS) <= 0) {
                        put(out, "<TIMEOUT>");
                        _exit(0);
                }
                n = recv(fd, buf, sizeof buf - 1, 0);
                if (n == 0 || (n < 0 && errno == ECONNRESET)) {
                        put(out, n == 0 ? "<EOF>" : "<RESET>");
                        _exit(0);
                }
                if (n < 0) {
                        put_errno(out, "<FAILED to read:", errno);
                        put(out, ">");
                        _exit(0);
                }
                buf[n] = '\0';
                put(out, buf);
        }
}

/* What a control request as peer p gets: the daemon's lines and how the connection ended
 * (see peer_child), malloc'd. */
static char *control_as(const struct peer *p, const char *request) {
        long long deadline = h_now_ms() + 2 * H_TIMEOUT_MS;
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        int fds[2], status;
        pid_t child;

        cr_assert_not_null(mem);
        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
                close(fds[0]);
                peer_child(p, D.control, request, fds[1]);
                _exit(0);
        }
        close(fds[1]);
        for (;;) {
                struct pollfd pfd = { fds[0], POLLIN, 0 };
                char buf[4096];
                ssize_t n;

                h_notify_drain(&D);
                cr_assert_lt(h_now_ms(), deadline, "the peer child did not finish");
                if (poll(&pfd, 1, 20) <= 0)
                        continue;
                n = read(fds[0], buf, sizeof buf);
                if (n <= 0)
                        break;
                fwrite(buf, 1, (size_t)n, mem);
        }
        close(fds[0]);
        fclose(mem);
        cr_assert_eq(waitpid(child, &status, 0), child);
        return text;
}

static const char status_request[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}\n";

/* Expects exactly one answer line, which is a result, and the end of the connection. */
static void expect_admitted(const struct peer *p, const char *who) {
        char *got = control_as(p, status_request), *nl = strchr(got, '\n');
        json_object *r;

        cr_assert_not_null(nl, "%s: no answer: %s", who, got);
        *nl = '\0';
        cr_assert_str_eq(nl + 1, "<EOF>", "%s: after the answer: %s", who, nl + 1);
        r = json_tokener_parse(got);
        cr_assert_not_null(r, "%s: not JSON: %s", who, got);
        cr_assert_not_null(h_get(r, "result.servers"), "%s was not admitted: %s", who, got);
        json_object_put(r);
        free(got);
}

/* Expects exactly one line, the refusal (id null, -32001), then the end of the connection;
 * returns the refusal's message (static). */
static const char *expect_refused(const struct peer *p, const char *who) {
        static char message[512];
        char *got = control_as(p, status_request), *nl = strchr(got, '\n');
        json_object *r, *id = (json_object *)1;

        cr_assert_not_null(nl, "%s: no answer: %s", who, got);
        *nl = '\0';
        cr_assert(strcmp(nl + 1, "<EOF>") == 0 || strcmp(nl + 1, "<RESET>") == 0,
                  "%s: expected one line and the end of the connection; after the first line: %s", who, nl + 1);
        r = json_tokener_parse(got);
        cr_assert_not_null(r, "%s: not JSON: %s", who, got);
        cr_assert_eq(h_error_code(r), -32001, "%s was not refused: %s", who, got);
        cr_assert(json_object_object_get_ex(r, "id", &id) && id == NULL, "%s: the refusal's id is not null: %s", who,
                  got);
        snprintf(message, sizeof message, "%s", error_message(r));
        cr_assert_eq(strncmp(message, "permission denied: ", 19), 0, "%s: %s", who, message);
        json_object_put(r);
        free(got);
        return message;
}

/* The socket must let nobody connect: socketMode 0666, and the harness's directory (0700)
 * opened for traversal. */
static void start_for_peers(void) {
        start(NULL);
        cr_assert_eq(chmod(D.dir, 0711), 0);
        wait_all_ready(1);
        /* the socket is bound by now; its mode lets anyone connect, the daemon decides */
        json_object_put(control_ok("ping", NULL));
}

static gid_t nogroup(void) {
        struct group *g = getgrnam("nogroup");

        if (!g)
                g = getgrnam("nobody");
        cr_assert_not_null(g, "no group nogroup or nobody on this machine");
        return g->gr_gid;
}

Test(control, refused_for_others) {
        const struct peer nobody = { 65534, 65534, 0, { 0 } };
        const char *message;

        if (geteuid() != 0)
                cr_skip_test("needs root to become another user");
        set_settings("\"socketMode\":\"0666\"");
        demo("a", "", "");
        start_for_peers();
        message = expect_refused(&nobody, "nobody");
        cr_assert_str_eq(message, "permission denied: the control socket is for root and the daemon's user (uid 0); "
                                  "set controlGroup to admit a group");
        expect_log("refused control connection from uid 65534");
        /* the request was not served: a stop would have shown */
        servers_reset(&D);
        write_config();
        (void)control_as(&nobody, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"reload\"}\n");
        cr_assert_eq(h_log_count(&D, "reloading"), 0, "a refused peer's reload was served");
        /* root still is */
        json_object_put(control_ok("status", NULL));
}

Test(control, control_group_admits_members) {
        gid_t ng;
        const char *message;

        if (geteuid() != 0)
                cr_skip_test("needs root to become another user");
        ng = nogroup();
        set_settings(sf("\"socketMode\":\"0666\",\"controlGroup\":\"%s\"", getgrgid(ng)->gr_name));
        demo("a", "", "");
        start_for_peers();

        /* a member by its primary group, by a supplementary group; not a member */
        expect_admitted(&(struct peer){ 65534, ng, 0, { 0 } }, "nobody, primary group");
        expect_admitted(&(struct peer){ 65534, 54321, 1, { ng } }, "nobody, supplementary group");
        message = expect_refused(&(struct peer){ 65534, 54321, 1, { 54322 } }, "nobody, not in the group");
        cr_assert(strstr(message, sf("and group %s; uid 65534 is none of them", getgrgid(ng)->gr_name)), "%s", message);

        /* controlGroup applies at a reload: without it the member is refused */
        servers_reset(&D);
        set_settings("\"socketMode\":\"0666\"");
        demo("a", "", "");
        write_config();
        json_object_put(reload_ok());
        expect_refused(&(struct peer){ 65534, ng, 0, { 0 } }, "nobody, after controlGroup was removed");
}

/* ==== idleExit ==== */

/* Under systemd-socket-activate, which starts the daemon at the first connection. */
static void start_activated(void) {
        char *config = config_text();

        h_start(&D, &(struct h_opts){ .config = config, .activate = true, .activate_control = true,
                                      .fdnames = "mcp:control" });
        free(config);
}

Test(idle, exits_after_the_last_client) {
        struct h_client *x;
        long long left;
        int status;
        pid_t a;

        set_settings("\"idleExit\":1");
        demo("a", "", "");
        start_activated();
        x = cl_open();
        wait_all_ready(1);
        a = pid_of("a", 0);
        /* not while a client is connected */
        cr_assert_eq(wait_exit_draining(1500), -1, "the daemon exited with a client connected");
        ping_through(x, "1");
        h_client_close(x);
        left = h_now_ms();

        status = wait_exit_draining(1000 + H_TIMEOUT_MS);
        cr_assert_neq(status, -1, "the daemon did not exit after idleExit");
        cr_assert(exited_cleanly(status), "idle exit with wait status %d", status);
        cr_assert_geq(h_now_ms() - left, 900, "exited %lld ms after the last client left", h_now_ms() - left);
        expect_log("no clients for 1 s (idleExit): stopping");
        expect_log("[a] ready -> stopping: mcpvisord is stopping");
        expect_gone(a, "a after the idle exit");
}

Test(idle, a_client_meanwhile_cancels_it) {
        struct h_client *x, *y;
        long long left;
        int status;

        set_settings("\"idleExit\":1");
        demo("a", "", "");
        start_activated();
        x = cl_open();
        wait_all_ready(1);
        h_client_close(x);
        cr_assert_eq(wait_exit_draining(400), -1, "exited before idleExit");
        y = cl_open();
        /* well past the first deadline */
        cr_assert_eq(wait_exit_draining(1600), -1, "the daemon exited with a client connected");
        ping_through(y, "1");
        h_client_close(y);
        left = h_now_ms();
        status = wait_exit_draining(1000 + H_TIMEOUT_MS);
        cr_assert(exited_cleanly(status), "idle exit with wait status %d", status);
        cr_assert_geq(h_now_ms() - left, 900, "exited %lld ms after the last client left", h_now_ms() - left);
        cr_assert_eq(h_log_count(&D, "(idleExit): stopping"), 1);
}

Test(idle, a_control_client_counts_too) {
        struct h_conn *c;
        int status;

        set_settings("\"idleExit\":1");
        start_activated();
        c = h_connect(D.control, H_TIMEOUT_MS);
        h_expect_result(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        cr_assert_eq(wait_exit_draining(1500), -1, "the daemon exited with a control client connected");
        h_close(c);
        status = wait_exit_draining(1000 + H_TIMEOUT_MS);
        cr_assert(exited_cleanly(status), "idle exit with wait status %d", status);
}

Test(idle, never_without_socket_activation) {
        struct h_client *x;

        set_settings("\"idleExit\":1");
        demo("a", "", "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open();
        ping_through(x, "1");
        h_client_close(x);
        cr_assert_eq(wait_exit_draining(2500), -1, "exited on idleExit though not socket-activated");
        x = cl_open();
        ping_through(x, "2");
        h_client_close(x);
        cr_assert_eq(h_log_count(&D, "idleExit"), 0);
}

Test(idle, not_without_the_setting) {
        struct h_client *x;

        demo("a", "", "");
        start_activated();
        x = cl_open();
        wait_all_ready(1);
        h_client_close(x);
        cr_assert_eq(wait_exit_draining(2000), -1, "exited without idleExit");
        x = cl_open();
        ping_through(x, "1");
        h_client_close(x);
}
