/* Access rules, profiles and audit, run for real: clients of different uids (the test runs
 * as root; a forked helper takes another uid with setresuid() and connects, so the daemon's
 * SO_PEERCRED names that uid, then passes the socket back with SCM_RIGHTS), each seeing the
 * daemon through its own view: lists, calls, log notifications, reloads that change the
 * rules, and the audit lines in the daemon's log. */
#include <criterion/criterion.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "servers.h"

#define OTHER_UID 4242
#define THIRD_UID 4243

static struct h_daemon D;

static void setup(void) {
        servers_reset(&D);
}

TestSuite(access, .init = setup, .fini = servers_teardown, .timeout = 60);

/* A connection to the test daemon's MCP socket made as uid/gid (harness.c). */
static struct h_conn *connect_as(uid_t uid, gid_t gid) {
        struct h_conn *c = h_connect_as(D.sock, uid, gid, NULL, 0, "agent");

        cr_assert_not_null(c, "uid %u could not connect", (unsigned)uid);
        return c;
}

static struct h_client *client_of(struct h_conn *conn) {
        struct h_client *x = calloc(1, sizeof *x);

        cr_assert_not_null(x);
        x->d = &D;
        x->c = conn;
        x->inbox = json_object_new_array();
        return x;
}

/* initialize declaring capabilities (JSON text) with meta (JSON text of params._meta, or
 * NULL); its answer. */
static json_object *initialize_with(struct h_client *x, const char *capabilities, const char *meta) {
        return h_client_call(x, "0", "initialize",
                             sf("{\"protocolVersion\":\"2025-11-25\",\"capabilities\":%s,"
                                "\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}%s%s}",
                                capabilities, meta ? ",\"_meta\":" : "", meta ? meta : ""));
}

static json_object *initialize(struct h_client *x, const char *meta) {
        return initialize_with(x, "{}", meta);
}

/* conn initialized as a client declaring capabilities, with profile (or NULL). */
static struct h_client *open_on(struct h_conn *conn, const char *profile, const char *capabilities) {
        struct h_client *x = client_of(conn);
        json_object *r = initialize_with(x, capabilities, profile ? sf("{\"mcpvisor/profile\":\"%s\"}", profile) : NULL);

        cr_assert_str_eq(h_str(r, "result.protocolVersion"), "2025-11-25", "initialize: %s", h_json_text(r));
        json_object_put(r);
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        return x;
}

/* A client of uid (0: root, connected as usual), initialized with profile (or NULL),
 * declaring capabilities. */
static struct h_client *open_as_with(uid_t uid, const char *profile, const char *capabilities) {
        return open_on(uid == 0 ? h_connect(D.sock, H_TIMEOUT_MS) : connect_as(uid, uid), profile, capabilities);
}

static struct h_client *open_as(uid_t uid, const char *profile) {
        return open_as_with(uid, profile, "{}");
}

/* The daemon's socket and directory reachable by every uid, then started. */
static void start_shared(unsigned servers, const char *access) {
        set_settings(sf("\"socketMode\":\"0666\",%s", access));
        start(NULL);
        cr_assert_eq(chmod(D.dir, 0711), 0);
        wait_all_ready(servers);
}

static const char *tools_of(struct h_client *x) {
        json_object *r = h_client_call(x, "11", "tools/list", "{}");
        static char names[4096];

        snprintf(names, sizeof names, "%s", h_tool_names(r));
        json_object_put(r);
        return names;
}

/* Arguments the demo's echo, add, sleep and log take alike. */
#define ANY_ARGS "{\"text\":\"hi\",\"a\":1,\"b\":2,\"ms\":1}"

/* Calls tool and expects a permission denied error naming it. */
static void expect_denied(struct h_client *x, const char *tool) {
        json_object *r = h_client_tool_call(x, "12", tool, ANY_ARGS);
        const char *message = h_str(r, "error.message");

        cr_assert(message && strstr(message, "permission denied") && strstr(message, tool),
                  "%s: expected permission denied naming it, got %s", tool, h_json_text(r));
        json_object_put(r);
}

static void expect_ok(struct h_client *x, const char *tool) {
        json_object *r = h_client_tool_call(x, "13", tool, ANY_ARGS);

        cr_assert_not_null(h_get(r, "result"), "%s: expected a result, got %s", tool, h_json_text(r));
        json_object_put(r);
}

static void expect_unknown(struct h_client *x, const char *tool) {
        json_object *r = h_client_tool_call(x, "14", tool, "{\"text\":\"hi\"}");
        const char *message = h_str(r, "error.message");

        cr_assert(h_error_code(r) == -32602 && message && strstr(message, "Unknown tool"),
                  "%s: expected an unknown tool, got %s", tool, h_json_text(r));
        json_object_put(r);
}

static const char *const SECRET_DENIED = "\"access\":{\"rules\":[{\"users\":[\"4242\"],\"servers\":[\"secret\"],\"action\":\"deny\"}]}";

/* Servers pub and secret (with args), secret denied to uid 4242; a client of root's and
 * one of 4242's. */
static void start_secret_denied(const char *pub_args, const char *secret_args, struct h_client **root,
                                struct h_client **other) {
        add_demo("pub", "", pub_args);
        add_demo("secret", "", secret_args);
        start_shared(2, SECRET_DENIED);
        *root = open_as(0, NULL);
        *other = open_as(OTHER_UID, NULL);
}

/* Closes both clients, then stops the daemon cleanly. */
static void close_and_stop(struct h_client *root, struct h_client *other) {
        h_client_close(other);
        h_client_close(root);
        stop_clean();
}

/* The first rule: a server denied to one uid is not in its lists, a call to it is
 * refused naming the tool (not the rule), its log messages reach root and not that uid,
 * and the denial is audited (audit "denied", the default). */
Test(access, server_denied_to_one_uid) {
        struct h_client *root, *other;
        json_object *r;

        start_secret_denied("", "", &root, &other);

        cr_assert(h_has_item(tools_of(root), "secret__echo") && h_has_item(tools_of(root), "pub__echo"));
        cr_assert(h_has_item(tools_of(other), "pub__echo"));
        cr_assert(!h_has_item(tools_of(other), "secret__echo"), "uid 4242 was shown %s", tools_of(other));
        expect_denied(other, "secret__echo");
        expect_ok(root, "secret__echo");
        cr_assert(h_log_wait(&D, "audit: uid 4242 pid", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "tools/call secret__echo: denied", H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&D, "secret__echo: ok"), 0, "audit \"denied\" records only denials");

        /* secret's log message goes to root; to 4242, whose ping answer comes after it
         * would have, it does not */
        expect_ok(root, "secret__log");
        r = h_take(root, h_is_method, "notifications/message", H_TIMEOUT_MS);
        cr_assert_not_null(r, "root did not get secret's log message");
        json_object_put(r);
        json_object_put(h_client_call(other, "15", "ping", "{}"));
        cr_assert_eq(h_inbox_drop(other, h_is_method, "notifications/message"), 0, "uid 4242 heard from secret");
        expect_ok(root, "pub__log");
        r = h_take(other, h_is_method, "notifications/message", H_TIMEOUT_MS);
        cr_assert_not_null(r, "uid 4242 did not get pub's log message");
        cr_assert_str_eq(h_str(r, "params.logger"), "pub/demo");
        json_object_put(r);
        close_and_stop(root, other);
}

/* A client's level governs what it receives, and a server is asked only for what the
 * clients that may hear from it want: uid 4242 at debug makes pub verbose, never secret,
 * which it cannot see; root at debug does. Before, any client set every server's level. */
Test(access, log_level_asked_by_clients_that_see_server) {
        struct h_client *root, *other;
        json_object *r;

        start_secret_denied("", "", &root, &other);
        r = h_client_call(other, "20", "logging/setLevel", "{\"level\":\"debug\"}");
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "pub: log level debug", H_TIMEOUT_MS), "pub was not set to debug for uid 4242");
        /* secret's stderr, in order: a level it was sent comes before this line */
        expect_ok(root, "secret__log");
        cr_assert(h_log_wait(&D, "secret: hi", H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&D, "secret: log level debug"), 0, "uid 4242, denied secret, set its level");
        r = h_client_call(root, "21", "logging/setLevel", "{\"level\":\"debug\"}");
        json_object_put(r);
        cr_assert(h_log_wait(&D, "secret: log level debug", H_TIMEOUT_MS), "root, who sees secret, did not set its level");
        /* root leaves: nobody who hears from secret wants debug, so it goes back to info */
        h_client_close(root);
        cr_assert(h_log_wait(&D, "secret: log level info", H_TIMEOUT_MS), "secret stayed at debug");
        h_client_close(other);
        stop_clean();
}

/* A tool allowed to one uid and denied to everyone else, root included. */
Test(access, tool_allowed_to_one_denied_to_others) {
        struct h_client *alice, *bob, *root;

        add_demo("pub", "", "");
        start_shared(1, "\"access\":{\"rules\":["
                        "{\"users\":[\"4242\"],\"tools\":[\"pub__add\"],\"action\":\"allow\"},"
                        "{\"tools\":[\"pub__add\"],\"action\":\"deny\"}]}");
        alice = open_as(OTHER_UID, NULL);
        bob = open_as(THIRD_UID, NULL);
        root = open_as(0, NULL);
        expect_ok(alice, "pub__add");
        expect_denied(bob, "pub__add");
        expect_denied(root, "pub__add");
        expect_ok(bob, "pub__echo");
        cr_assert(h_has_item(tools_of(alice), "pub__add"));
        cr_assert(!h_has_item(tools_of(bob), "pub__add") && h_has_item(tools_of(bob), "pub__echo"));
        h_client_close(alice);
        h_client_close(bob);
        h_client_close(root);
        stop_clean();
}

/* "default": "deny": only what a rule allows. */
Test(access, default_deny) {
        struct h_client *alice, *bob;

        add_demo("pub", "", "");
        start_shared(1, "\"access\":{\"default\":\"deny\",\"rules\":["
                        "{\"users\":[\"4242\"],\"servers\":[\"pub\"],\"action\":\"allow\"}]}");
        alice = open_as(OTHER_UID, NULL);
        bob = open_as(THIRD_UID, NULL);
        expect_ok(alice, "pub__echo");
        cr_assert_str_eq(tools_of(bob), "");
        expect_denied(bob, "pub__echo");
        h_client_close(alice);
        h_client_close(bob);
        stop_clean();
}

static const char *const PROFILES = "\"profiles\":{\"research\":{\"tools\":[\"pub__echo\"]},\"ops\":{\"servers\":[\"pub\"]}}";

/* A profile chosen in initialize's _meta narrows: what it leaves out is unknown, not denied. */
/* mcpvisorctl clients' rows (the control method's answer): n with profile, none_n without. */
static void expect_listed_profiles(const char *profile, int n, int none_n) {
        json_object *r = h_control(&D, "clients", "{}"), *rows = h_get(r, "result.clients");
        int with = 0, without = 0;

        cr_assert_not_null(rows, "clients: %s", h_json_text(r));
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *p = json_object_object_get(json_object_array_get_idx(rows, i), "profile");

                if (!p)
                        without++;
                else if (strcmp(json_object_get_string(p), profile) == 0)
                        with++;
        }
        cr_assert(with == n && without == none_n, "clients: %s", h_json_text(r));
        json_object_put(r);
}

Test(access, profile_from_meta) {
        struct h_client *x, *plain;

        add_demo("pub", "", "");
        start_shared(1, PROFILES);
        x = open_as(OTHER_UID, "research");
        plain = open_as(OTHER_UID, NULL);
        cr_assert_str_eq(tools_of(x), "pub__echo");
        expect_ok(x, "pub__echo");
        expect_unknown(x, "pub__add");
        expect_ok(plain, "pub__add");
        cr_assert(h_log_wait(&D, "profile research", H_TIMEOUT_MS));
        expect_listed_profiles("research", 1, 1);
        h_client_close(x);
        h_client_close(plain);
        stop_clean();
}

/* An unknown profile fails initialize with -32602 naming the known ones; a profile that
 * is not a string too. */
Test(access, unknown_profile) {
        struct h_client *x;
        json_object *r;
        const char *message;

        add_demo("pub", "", "");
        start_shared(1, PROFILES);
        x = client_of(h_connect(D.sock, H_TIMEOUT_MS));
        r = initialize(x, "{\"mcpvisor/profile\":\"nosuch\"}");
        message = h_str(r, "error.message");
        cr_assert(h_error_code(r) == -32602 && message && strstr(message, "nosuch") && strstr(message, "research") &&
                          strstr(message, "ops"),
                  "%s", h_json_text(r));
        json_object_put(r);
        r = initialize(x, "{\"mcpvisor/profile\":7}");
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        json_object_put(r);
        r = initialize(x, "{\"mcpvisor/profile\":\"ops\"}");
        cr_assert_not_null(h_get(r, "result"), "the session is still new after the refusals: %s", h_json_text(r));
        json_object_put(r);
        h_client_close(x);
        stop_clean();
}

/* A reload that denies a server to a connected uid: that client is told its tools changed
 * and sees the new view at once; its call in flight across the reload is answered; root,
 * whose view did not change, is told nothing. */
Test(access, reload_changes_the_view) {
        struct h_client *root, *other;
        json_object *r;

        add_demo("pub", "", "");
        add_demo("secret", "", "");
        start_shared(2, "\"access\":{}");
        root = open_as(0, NULL);
        other = open_as(OTHER_UID, NULL);
        cr_assert(h_has_item(tools_of(other), "secret__echo"));
        cr_assert(h_has_item(tools_of(root), "secret__echo"));
        h_client_tool_request(other, "20", "pub__sleep", "{\"ms\":500}");

        set_settings(sf("\"socketMode\":\"0666\",%s", SECRET_DENIED));
        config_rewrite();
        r = h_control(&D, "reload", NULL);
        cr_assert_not_null(h_get(r, "result"), "reload: %s", h_json_text(r));
        json_object_put(r);
        r = h_take(other, h_is_method, "notifications/tools/list_changed", H_TIMEOUT_MS);
        cr_assert_not_null(r, "uid 4242 was not told its tools changed");
        json_object_put(r);
        cr_assert(!h_has_item(tools_of(other), "secret__echo") && h_has_item(tools_of(other), "pub__echo"));
        expect_denied(other, "secret__echo");
        r = h_client_answer(other, "20");
        cr_assert_not_null(h_get(r, "result"), "the call in flight across the reload: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_has_item(tools_of(root), "secret__echo"));
        cr_assert_eq(h_inbox_drop(root, h_is_method, "notifications/tools/list_changed"), 0,
                     "root, whose view did not change, was told it had");
        close_and_stop(root, other);
}

/* The number of microseconds in the audit line of what (e.g. "tools/call pub__echo: ok"). */
static unsigned long long audited_usec(const char *what) {
        char *rest = h_log_rest_wait(&D, sf("%s after ", what), H_TIMEOUT_MS);
        unsigned long long usec;

        cr_assert_not_null(rest, "no audit line \"%s\"", what);
        cr_assert_eq(sscanf(rest, "%llu us", &usec), 1, "%.100s", rest);
        free(rest);
        return usec;
}

/* audit "calls": every call's end is a notice with its outcome and duration, a denial too;
 * lists are not audited. */
Test(access, audit_calls) {
        struct h_client *x;
        json_object *r;

        add_demo("pub", "", "");
        start_shared(1, "\"audit\":\"calls\",\"access\":{\"rules\":[{\"tools\":[\"pub__add\"],\"action\":\"deny\"}]}");
        x = open_as(OTHER_UID, NULL);
        cr_assert(h_has_item(tools_of(x), "pub__echo"));
        expect_ok(x, "pub__echo");
        cr_assert_lt(audited_usec("tools/call pub__echo: ok"), 5000000ULL);
        r = h_client_tool_call(x, "21", "pub__sleep", "{\"ms\":200}");
        json_object_put(r);
        cr_assert_geq(audited_usec("tools/call pub__sleep: ok"), 200000ULL, "a call's duration is from its start");
        expect_denied(x, "pub__add");
        cr_assert_eq(audited_usec("tools/call pub__add: denied"), 0);
        r = h_client_tool_call(x, "22", "pub__fail", "{}");
        json_object_put(r);
        audited_usec("tools/call pub__fail: error");
        h_client_tool_request(x, "23", "pub__sleep", "{\"ms\":5000}");
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":23}}\n");
        audited_usec("tools/call pub__sleep: cancelled");
        cr_assert(h_log_wait(&D, "mcpvisord: notice: [pub] audit: uid 4242 pid", H_TIMEOUT_MS) && h_log_wait(&D, "mcpvisord: info: [pub] audit: uid 4242 pid", H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&D, "] audit: "), 5, "one record per call, none for the list");
        h_client_close(x);
        stop_clean();
}

/* initialize through mcpvisorctl connect (args, env), with meta (JSON text of _meta, or
 * NULL); the names of tools/list's answer, or the initialize error's message. */
static char *connect_tools(const char *const *args, const char *const *env, const char *meta) {
        struct proc p;
        char *line, *out;
        json_object *o;

        proc_start(&p, &D, args, env);
        proc_write(&p, sf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                          "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}%s%s}}\n",
                          meta ? ",\"_meta\":" : "", meta ? meta : ""));
        line = proc_line(&p, H_TIMEOUT_MS);
        cr_assert_not_null(line, "no answer to initialize; stderr: %s", p.errbuf);
        o = json_tokener_parse(line);
        free(line);
        if (h_error_code(o) != 0) {
                out = strdup(h_str(o, "error.message"));
        } else {
                proc_write(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
                               "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
                line = proc_line(&p, H_TIMEOUT_MS);
                cr_assert_not_null(line, "no answer to tools/list; stderr: %s", p.errbuf);
                json_object_put(o);
                o = json_tokener_parse(line);
                free(line);
                out = strdup(h_tool_names(o));
        }
        json_object_put(o);
        proc_close_stdin(&p);
        cr_assert_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "connect: %s", p.errbuf);
        proc_free(&p);
        return out;
}

/* mcpvisorctl connect --profile and $MCPVISOR_PROFILE choose a profile for an unmodified
 * client; the option wins over the variable, the client's own _meta over both, and an
 * unknown one fails initialize. */
Test(access, profile_from_connect) {
        const char *const env[] = { "MCPVISOR_PROFILE=research", NULL };
        const char *const bad_env[] = { "MCPVISOR_PROFILE=nosuch", NULL };
        const char *const plain[] = { "-s", D.sock, "connect", NULL };
        const char *const ops[] = { "-s", D.sock, "connect", "--profile", "ops", NULL };
        char *t;

        add_demo("pub", "", "");
        add_demo("other", "", "");
        start_shared(2, PROFILES);
        t = connect_tools((const char *const[]){ "-s", D.sock, "connect", "--profile", "research", NULL }, NULL, NULL);
        cr_assert_str_eq(t, "pub__echo");
        free(t);
        t = connect_tools(plain, env, NULL);
        cr_assert_str_eq(t, "pub__echo", "MCPVISOR_PROFILE");
        free(t);
        t = connect_tools(ops, env, NULL);
        cr_assert(h_has_item(t, "pub__add") && !h_has_item(t, "other__echo"), "--profile wins over the variable: %s", t);
        free(t);
        t = connect_tools(ops, NULL, "{\"mcpvisor/profile\":\"research\"}");
        cr_assert_str_eq(t, "pub__echo", "the client's _meta wins");
        free(t);
        t = connect_tools(plain, NULL, NULL);
        cr_assert(h_has_item(t, "other__echo"), "no profile: %s", t);
        free(t);
        t = connect_tools(plain, bad_env, NULL);
        cr_assert(strstr(t, "unknown profile 'nosuch'") && strstr(t, "research"), "%s", t);
        free(t);
        stop_clean();
}

/* A client denied a server cannot reach another client's call to it: not by cancelling its
 * id, not by sending progress under its token, not by using the same id itself; and it
 * hears none of that call's progress. */
Test(access, denied_client_cannot_touch_another_clients_call) {
        struct h_client *root, *other;
        json_object *r;

        start_secret_denied("", "", &root, &other);
        h_sendf(root->c, "{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"tools/call\",\"params\":{\"name\":\"secret__sleep\","
                         "\"arguments\":{\"ms\":400},\"_meta\":{\"progressToken\":\"tokA\"}}}\n");
        r = h_take(root, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(r, "root's call reports no progress");
        cr_assert_str_eq(h_str(r, "params.progressToken"), "tokA");
        json_object_put(r);

        h_sendf(other->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":30}}\n");
        h_sendf(other->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tokA\","
                          "\"progress\":99}}\n");
        expect_denied(other, "secret__sleep");
        r = h_client_tool_call(other, "30", "secret__echo", "{\"text\":\"mine\"}");
        cr_assert(strstr(h_str(r, "error.message"), "permission denied"), "%s", h_json_text(r));
        json_object_put(r);

        r = h_client_answer(root, "30");
        cr_assert_not_null(h_get(r, "result"), "root's call was touched by another client: %s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(h_inbox_drop(root, h_is_method, "notifications/cancelled"), 0);
        json_object_put(h_client_call(other, "31", "ping", "{}"));
        cr_assert_eq(h_inbox_drop(other, h_is_method, "notifications/progress"), 0, "uid 4242 heard root's progress");
        close_and_stop(root, other);
}

/* Every path asks the view: prompts, resources, templates, subscriptions and completion of
 * a denied server are not listed and are refused naming the target. */
Test(access, every_path_asks_the_view) {
        struct h_client *root, *other;
        json_object *r;

        start_secret_denied("\"--no-resources\"", "\"--subscribe\"", &root, &other);
        r = h_client_call(other, "40", "prompts/list", "{}");
        cr_assert(h_has_item(h_names_of(r, "prompts", "name"), "pub__greeting") &&
                          !h_has_item(h_names_of(r, "prompts", "name"), "secret__greeting"),
                  "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(other, "41", "resources/list", "{}");
        cr_assert_str_eq(h_names_of(r, "resources", "uri"), "", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(other, "42", "resources/templates/list", "{}");
        cr_assert_str_eq(h_names_of(r, "resourceTemplates", "uriTemplate"), "", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(root, "43", "resources/list", "{}");
        cr_assert(h_has_item(h_names_of(r, "resources", "uri"), "demo://readme"), "%s", h_json_text(r));
        json_object_put(r);

        static const struct {
                const char *method, *params, *target;
                int code;
        } calls[] = {
                { "prompts/get", "{\"name\":\"secret__greeting\"}", "prompt 'secret__greeting'", -32602 },
                { "resources/read", "{\"uri\":\"demo://readme\"}", "resource 'demo://readme'", -32002 },
                { "resources/read", "{\"uri\":\"demo://item/7\"}", "resource 'demo://item/7'", -32002 },
                { "resources/subscribe", "{\"uri\":\"demo://readme\"}", "resource 'demo://readme'", -32602 },
                { "completion/complete", "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"secret__greeting\"},"
                                         "\"argument\":{\"name\":\"name\",\"value\":\"a\"}}",
                  "prompt 'secret__greeting'", -32602 },
        };
        for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
                const char *message;

                r = h_client_call(other, "44", calls[i].method, calls[i].params);
                message = h_str(r, "error.message");
                cr_assert(h_error_code(r) == calls[i].code && message && strstr(message, "permission denied") &&
                                  strstr(message, calls[i].target),
                          "%s: %s", calls[i].method, h_json_text(r));
                json_object_put(r);
        }
        r = h_client_call(root, "45", "resources/read", "{\"uri\":\"demo://readme\"}");
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        close_and_stop(root, other);
}

/* ---- rules by user and group, names and numbers ---- */

static const char *const PUB_TOOLS[] = { "pub__echo", "pub__add", "pub__sleep", "pub__env", "pub__log" };

/* The tools of PUB_TOOLS x is shown are all but denied (NULL: all); a call to denied is
 * refused, and one to another of them answered. */
static void expect_only_denied(struct h_client *x, const char *who, const char *denied) {
        const char *tools = tools_of(x);

        for (size_t i = 0; i < sizeof PUB_TOOLS / sizeof PUB_TOOLS[0]; i++) {
                bool want = !denied || strcmp(PUB_TOOLS[i], denied) != 0;

                cr_assert_eq(h_has_item(tools, PUB_TOOLS[i]), want, "%s: %s %s listed in %s", who, PUB_TOOLS[i],
                             want ? "is not" : "is", tools);
        }
        if (denied)
                expect_denied(x, denied);
        expect_ok(x, denied && strcmp(denied, "pub__echo") == 0 ? "pub__add" : "pub__echo");
}

/* "users" by name and by number (JSON number or digits), "groups" by name and by gid, each
 * matching the primary gid or a supplementary one, decide for real connections; a
 * principal no rule names is not touched. */
Test(access, rules_by_user_and_group_names_and_numbers) {
        struct passwd *pw = getpwnam("nobody");
        struct group *gr = getgrnam("daemon");
        uid_t nobody;
        gid_t nobody_gid, daemon_gid;

        if (!pw || !gr)
                cr_skip_test("this host has no user \"nobody\" or no group \"daemon\"");
        nobody = pw->pw_uid;
        nobody_gid = pw->pw_gid;
        daemon_gid = gr->gr_gid;
        add_demo("pub", "", "");
        start_shared(1, "\"access\":{\"rules\":["
                        "{\"users\":[\"nobody\"],\"tools\":[\"pub__echo\"],\"action\":\"deny\"},"
                        "{\"users\":[4242],\"tools\":[\"pub__add\"],\"action\":\"deny\"},"
                        "{\"users\":[\"4243\"],\"tools\":[\"pub__sleep\"],\"action\":\"deny\"},"
                        "{\"groups\":[\"daemon\"],\"tools\":[\"pub__env\"],\"action\":\"deny\"},"
                        "{\"groups\":[4300],\"tools\":[\"pub__log\"],\"action\":\"deny\"}]}");

        const struct {
                const char *who;
                uid_t uid;
                gid_t gid;
                gid_t group;           /* one supplementary group, 0: none */
                const char *denied;
        } cases[] = {
                { "user nobody, by name", nobody, nobody_gid, 0, "pub__echo" },
                { "uid 4242, by number", 4242, 4242, 0, "pub__add" },
                { "uid 4243, by digits", 4243, 4243, 0, "pub__sleep" },
                { "group daemon by name, supplementary", 4244, 4244, daemon_gid, "pub__env" },
                { "group daemon by name, primary", 4245, daemon_gid, 0, "pub__env" },
                { "gid 4300, primary", 4246, 4300, 0, "pub__log" },
                { "gid 4300, supplementary", 4247, 4247, 4300, "pub__log" },
                { "uid 4248, named by no rule", 4248, 4248, 0, NULL },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                gid_t groups[1] = { cases[i].group };
                struct h_conn *conn = h_connect_as(D.sock, cases[i].uid, cases[i].gid, groups, cases[i].group ? 1 : 0, "agent");
                struct h_client *x;

                cr_assert_not_null(conn, "%s could not connect", cases[i].who);
                x = open_on(conn, NULL, "{}");
                expect_only_denied(x, cases[i].who, cases[i].denied);
                h_client_close(x);
        }
        stop_clean();
}

/* ---- profiles and rules together ---- */

/* A profile only narrows what the rules allow: what it leaves out is unknown, what the rules
 * deny within it stays denied, and one naming every server widens nothing. A rule that
 * matches on "profiles" applies to the connections that chose that profile, and only to
 * them. */
Test(access, profile_narrows_the_rules_and_rules_match_on_it) {
        struct h_client *x;

        add_demo("pub", "", "");
        add_demo("other", "", "");
        start_shared(2, "\"profiles\":{\"research\":{\"tools\":[\"pub__*\"]},\"wide\":{\"servers\":[\"*\"]}},"
                        "\"access\":{\"rules\":["
                        "{\"profiles\":[\"research\"],\"tools\":[\"pub__add\"],\"action\":\"deny\"},"
                        "{\"users\":[4242],\"tools\":[\"pub__sleep\"],\"action\":\"deny\"},"
                        "{\"users\":[4243],\"servers\":[\"other\"],\"action\":\"deny\"}]}");

        /* 4242 in research: the profile's rule and 4242's own both deny; other is unknown */
        x = open_as(OTHER_UID, "research");
        cr_assert(h_has_item(tools_of(x), "pub__echo") && !h_has_item(tools_of(x), "pub__add") &&
                          !h_has_item(tools_of(x), "pub__sleep") && !h_has_item(tools_of(x), "other__echo"),
                  "4242 in research was shown %s", tools_of(x));
        expect_denied(x, "pub__add");
        expect_denied(x, "pub__sleep");
        expect_unknown(x, "other__echo");
        expect_ok(x, "pub__echo");
        h_client_close(x);

        /* 4242 without a profile: the profile's rule does not apply */
        x = open_as(OTHER_UID, NULL);
        expect_ok(x, "pub__add");
        expect_denied(x, "pub__sleep");
        expect_ok(x, "other__echo");
        h_client_close(x);

        /* 4243 in research: the profile's rule, not 4242's */
        x = open_as(THIRD_UID, "research");
        expect_denied(x, "pub__add");
        expect_ok(x, "pub__sleep");
        expect_unknown(x, "other__echo");
        h_client_close(x);

        /* 4243 in wide: every server named, other still denied to it */
        x = open_as(THIRD_UID, "wide");
        cr_assert(!h_has_item(tools_of(x), "other__echo") && h_has_item(tools_of(x), "pub__add"), "4243 in wide was shown %s",
                  tools_of(x));
        expect_denied(x, "other__echo");
        expect_ok(x, "pub__add");
        h_client_close(x);
        stop_clean();
}

/* ---- prompt filters ---- */

/* The error message with name cut out: a filtered prompt must be answered exactly as one
 * that does not exist. */
static char *message_without(json_object *r, const char *name) {
        const char *m = h_str(r, "error.message");
        char *text = strdup(m ? m : ""), *at;

        cr_assert_not_null(text);
        while ((at = strstr(text, name)))
                memmove(at, at + strlen(name), strlen(at + strlen(name)) + 1);
        return text;
}

/* prompts/get, or completion of the prompt's argument: params naming prompt name. */
static const char *prompt_params(bool complete, const char *name) {
        return complete ? sf("{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"%s\"},"
                             "\"argument\":{\"name\":\"name\",\"value\":\"a\"}}", name)
                        : sf("{\"name\":\"%s\",\"arguments\":{\"name\":\"x\"}}", name);
}

/* The filtered prompt name and one that does not exist get the same answer. */
static void expect_prompt_unknown(struct h_client *x, bool complete, const char *name) {
        const char *method = complete ? "completion/complete" : "prompts/get";
        json_object *r = h_client_call(x, "70", method, prompt_params(complete, name)),
                    *u = h_client_call(x, "71", method, prompt_params(complete, "a__no_such_prompt"));
        char *a = message_without(r, name), *b = message_without(u, "a__no_such_prompt");

        cr_assert_neq(h_error_code(r), 0, "%s %s answered: %s", method, name, h_json_text(r));
        cr_assert_eq(h_error_code(r), h_error_code(u), "%s vs unknown: %s", h_json_text(r), h_json_text(u));
        cr_assert_str_eq(a, b, "%s %s", method, name);
        free(a);
        free(b);
        json_object_put(r);
        json_object_put(u);
}

/* includePrompts and excludePrompts (exclude wins): a filtered prompt is not listed, and
 * prompts/get or completion of it is answered as for a prompt that does not exist. */
Test(access, prompt_filters) {
        struct h_client *x;
        json_object *r;

        add_demo("a", "\"includePrompts\":[\"prompt_*\"],\"excludePrompts\":[\"prompt_2\"]", "\"--prompts\",\"3\"");
        start_shared(1, "\"access\":{}");
        x = open_as(OTHER_UID, NULL);
        r = h_client_call(x, "72", "prompts/list", "{}");
        cr_assert_str_eq(h_names_of(r, "prompts", "name"), "a__prompt_1,a__prompt_3", "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(x, "73", "prompts/get", "{\"name\":\"a__prompt_3\"}");
        cr_assert_not_null(h_get(r, "result.messages"), "%s", h_json_text(r));
        json_object_put(r);
        expect_prompt_unknown(x, false, "a__greeting");
        expect_prompt_unknown(x, false, "a__prompt_2");
        expect_prompt_unknown(x, true, "a__greeting");
        expect_prompt_unknown(x, true, "a__prompt_2");
        h_client_close(x);
        stop_clean();
}

/* ---- what a denied server sends: requests, resource updates, list changes ---- */

#define SAMPLING_CAPS "{\"sampling\":{}}"
#define SAMPLING "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":5}"
#define UPDATED "notifications/resources/updated"

/* A request (id and method) whose method is arg. */
static bool is_request(json_object *msg, const char *arg) {
        return h_get(msg, "id") && h_get(msg, "method") && strcmp(h_str(msg, "method"), arg) == 0;
}

/* A ping answered by the daemon: whatever it sent x before is in x's inbox now. */
static void flush(struct h_client *x) {
        json_object *r = h_client_call(x, "\"flush\"", "ping", NULL);

        cr_assert_not_null(h_get(r, "result"), "ping: %s", h_json_text(r));
        json_object_put(r);
}

/* x got no request of method (none in its inbox after a ping). */
static void expect_not_asked(struct h_client *x, const char *who, const char *method) {
        json_object *msg;

        flush(x);
        msg = h_take(x, is_request, method, 0);
        cr_assert_null(msg, "%s was asked: %s", who, msg ? h_json_text(msg) : "");
}

/* The status row of server name, from the control socket: n calls in flight there, waited for. */
static void wait_in_flight(const char *name, long long n) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        for (;;) {
                json_object *st = h_control(&D, "status", NULL), *rows = h_get(st, "result.servers");
                bool done = false;

                for (size_t i = 0; i < json_object_array_length(rows); i++) {
                        json_object *row = json_object_array_get_idx(rows, i);

                        if (strcmp(h_str(row, "name"), name) == 0)
                                done = json_object_get_int64(h_get(row, "inFlight")) == n;
                }
                if (!done && h_now_ms() >= deadline)
                        cr_assert_fail("%s has not %lld calls in flight: %s", name, n, h_json_text(st));
                json_object_put(st);
                if (done)
                        return;
                poll(NULL, 0, 20); /* the status has no readiness to wait on */
                h_notify_drain(&D);
        }
}

/* The socket shared and the access rules as given, written and reloaded. */
static void reload_with(const char *access) {
        json_object *r;

        set_settings(sf("\"socketMode\":\"0666\",%s", access));
        config_rewrite();
        r = h_control(&D, "reload", NULL);
        cr_assert_not_null(h_get(r, "result"), "reload: %s", h_json_text(r));
        json_object_put(r);
}

/* secret asks for sampling while root's call to it runs: root, the one client with a call
 * there, is asked; uid 4242, denied secret, idle there but declaring sampling and busy on
 * another server, is never asked, and its answer under the daemon's id of root's request
 * does not reach the server. */
Test(access, server_request_goes_to_the_allowed_owner_only) {
        struct h_client *root, *other;
        json_object *u, *r;

        add_demo("pub", "", "");
        add_demo("secret", "", "");
        start_shared(2, SECRET_DENIED);
        root = open_as_with(0, NULL, SAMPLING_CAPS);
        other = open_as_with(OTHER_UID, NULL, SAMPLING_CAPS);
        h_client_tool_request(other, "50", "pub__sleep", "{\"ms\":300}");
        h_client_tool_request(root, "51", "secret__ask", "{\"method\":\"sampling/createMessage\",\"params\":" SAMPLING "}");
        u = h_take(root, is_request, "sampling/createMessage", H_TIMEOUT_MS);
        cr_assert_not_null(u, "root, whose call asked, was not asked");

        h_sendf(other->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\","
                          "\"text\":\"forged\"},\"model\":\"m\"}}\n",
                h_json_text(h_get(u, "id")));
        expect_not_asked(other, "uid 4242, denied secret,", "sampling/createMessage");
        h_sendf(root->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\","
                         "\"text\":\"genuine\"},\"model\":\"m\"}}\n",
                h_json_text(h_get(u, "id")));
        r = h_client_answer(root, "51");
        cr_assert(strstr(h_result_text(r), "genuine") && !strstr(h_result_text(r), "forged"), "secret got %s",
                  h_json_text(r));
        json_object_put(r);
        json_object_put(u);
        r = h_client_answer(other, "50");
        cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(h_log_count(&D, "secret: unexpected answer"), 0, "the server got a second answer");
        close_and_stop(root, other);
}

/* uid 4242's call to secret asks for sampling 2.5 s after it began; a reload meanwhile
 * denies secret to 4242. The one client with a call there may no longer hear from secret:
 * the server gets an error, and neither 4242 nor root (idle there) is asked. */
Test(access, server_request_refused_when_its_owner_lost_the_server) {
        struct h_client *root, *other;
        json_object *r;

        add_demo("pub", "", "");
        add_demo("secret", "", "");
        start_shared(2, "\"access\":{}");
        root = open_as_with(0, NULL, SAMPLING_CAPS);
        other = open_as_with(OTHER_UID, NULL, SAMPLING_CAPS);
        h_client_tool_request(other, "60", "secret__ask",
                              "{\"method\":\"sampling/createMessage\",\"params\":" SAMPLING ",\"afterMs\":2500}");
        wait_in_flight("secret", 1);
        reload_with(SECRET_DENIED);
        cr_assert_eq(h_log_count(&D, "secret: asked "), 0, "secret asked before the reload was done (too slow a machine?)");

        r = h_client_answer(other, "60");
        cr_assert(json_object_get_boolean(h_get(r, "result.isError")) &&
                          strstr(h_result_text(r), "error -32603: cannot pass sampling/createMessage to a client") &&
                          strstr(h_result_text(r), "may not hear from it"),
                  "secret was not refused: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "secret: asked sampling/createMessage", H_TIMEOUT_MS));
        expect_not_asked(other, "uid 4242, denied secret since its call began,", "sampling/createMessage");
        expect_not_asked(root, "root, with no call to secret,", "sampling/createMessage");
        close_and_stop(root, other);
}

/* Both clients subscribe to secret's resource while it is allowed to both; once a reload
 * denies secret to uid 4242, its updates go on reaching root and no longer reach 4242. */
Test(access, resource_updates_of_a_denied_server_do_not_reach) {
        struct h_client *root, *other;
        json_object *r;

        add_demo("pub", "", "\"--no-resources\"");
        add_demo("secret", "", "\"--subscribe\"");
        start_shared(2, "\"access\":{}");
        root = open_as(0, NULL);
        other = open_as(OTHER_UID, NULL);
        for (int i = 0; i < 2; i++) {
                struct h_client *x = i ? other : root;

                r = h_client_call(x, "80", "resources/subscribe", "{\"uri\":\"demo://readme\"}");
                cr_assert_not_null(h_get(r, "result"), "subscribe: %s", h_json_text(r));
                json_object_put(r);
                r = h_take(x, h_is_method, UPDATED, H_TIMEOUT_MS);
                cr_assert_not_null(r, "%s got no update while secret was allowed", i ? "uid 4242" : "root");
                json_object_put(r);
        }

        reload_with(SECRET_DENIED);
        flush(other); /* what was sent to it before the reload */
        h_inbox_drop(other, h_is_method, UPDATED);
        h_inbox_drop(root, h_is_method, UPDATED);
        for (int i = 0; i < 3; i++) {
                r = h_take(root, h_is_method, UPDATED, H_TIMEOUT_MS);
                cr_assert_not_null(r, "root got no update after the reload (%d)", i);
                json_object_put(r);
        }
        flush(other);
        cr_assert_eq(h_inbox_drop(other, h_is_method, UPDATED), 0, "uid 4242 got secret's updates once denied it");
        r = h_client_call(other, "81", "resources/read", "{\"uri\":\"demo://readme\"}");
        cr_assert(strstr(h_str(r, "error.message"), "permission denied"), "%s", h_json_text(r));
        json_object_put(r);
        close_and_stop(root, other);
}

/* secret's tool list changes 3 s after it starts: root, holding its list, is told and sees
 * the new tool; uid 4242, denied secret, is told nothing and its list stays as it was. */
Test(access, list_changes_of_a_denied_server_do_not_reach) {
        struct h_client *root, *other;
        json_object *r;
        char before[4096];

        add_demo("pub", "", "");
        add_demo("secret", "", "\"--list-changed-after-ms\",\"3000\"");
        start_shared(2, SECRET_DENIED);
        root = open_as(0, NULL);
        other = open_as(OTHER_UID, NULL);
        cr_assert(h_has_item(tools_of(root), "secret__echo") && !h_has_item(tools_of(root), "secret__late_tool"),
                  "root's first list: %s (too slow a machine?)", tools_of(root));
        snprintf(before, sizeof before, "%s", tools_of(other));
        cr_assert(!strstr(before, "secret__"), "uid 4242 was shown %s", before);

        r = h_take(root, h_is_method, "notifications/tools/list_changed", 2 * H_TIMEOUT_MS);
        cr_assert_not_null(r, "root was not told of secret's new tool");
        json_object_put(r);
        cr_assert(h_has_item(tools_of(root), "secret__late_tool"), "%s", tools_of(root));
        flush(other);
        cr_assert_eq(h_inbox_drop(other, h_is_method, "notifications/tools/list_changed"), 0,
                     "uid 4242 was told of a change in secret's tools");
        cr_assert_str_eq(tools_of(other), before);
        close_and_stop(root, other);
}

/* ---- every message to a server passes the same decision ---- */

/* A method the daemon does not know (a request and a notification of a vendor's) reaches the
 * one configured server only as its own rule allows: uid 4242, denied it, is refused the
 * request as permission denied and its notification is dropped, both audited; a profile
 * that leaves the server out answers the request as if no server took it; root reaches
 * the server with both. */
Test(access, unknown_methods_pass_the_access_decision) {
        struct h_client *root, *other, *narrow;
        json_object *r;

        add_demo("secret", "", "");
        set_settings("\"socketMode\":\"0666\",\"profiles\":{\"elsewhere\":{\"servers\":[\"nothing\"]}},"
                     "\"access\":{\"rules\":[{\"users\":[\"4242\"],\"servers\":[\"secret\"],\"action\":\"deny\"}]}");
        start(NULL);
        cr_assert_eq(chmod(D.dir, 0711), 0);
        wait_all_ready(1);
        root = open_as(0, NULL);
        other = open_as(OTHER_UID, NULL);
        narrow = open_as(THIRD_UID, "elsewhere");

        h_send(other->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x-vendor\",\"params\":{\"from\":\"other\"}}\n");
        r = h_client_call(other, "90", "tasks/list", "{}");
        cr_assert(h_error_code(r) == -32601 && strstr(h_str(r, "error.message"), "permission denied: method 'tasks/list'"),
                  "uid 4242 was not refused: %s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(narrow, "91", "tasks/list", "{}");
        cr_assert(h_error_code(r) == -32601 && strcmp(h_str(r, "error.message"), "Method not found: tasks/list") == 0,
                  "a profile without the server: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "audit: uid 4242 pid", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "notifications/x-vendor: denied", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "tasks/list: denied", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, sf("audit: uid %u pid", THIRD_UID), H_TIMEOUT_MS));

        h_send(root->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x-vendor\",\"params\":{\"from\":\"root\"}}\n");
        r = h_client_call(root, "92", "tasks/list", "{}");
        cr_assert_eq(h_error_code(r), -32601, "%s", h_json_text(r)); /* the demo server does not know it either */
        cr_assert_str_eq(h_str(r, "error.message"), "Method not found", "not the server's answer: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "secret: notification notifications/x-vendor {\"from\":\"root\"}", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "secret: unknown request tasks/list", H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&D, "secret: unknown request tasks/list"), 1, "a refused request reached the server");
        cr_assert_eq(h_log_count(&D, "{\"from\":\"other\"}"), 0, "uid 4242's notification reached the server");
        h_client_close(narrow);
        close_and_stop(root, other);
}

/* An answer to a server's request passes the same decision: uid 4242 is asked for sampling
 * by secret while allowed it; a reload then denies it secret, and its answer no longer
 * reaches the server, which gets an error in its place; the drop is audited. */
Test(access, answer_to_a_server_request_passes_the_access_decision) {
        struct h_client *root, *other;
        json_object *u, *r;

        add_demo("pub", "", "");
        add_demo("secret", "", "");
        start_shared(2, "\"access\":{}");
        root = open_as(0, NULL);
        other = open_as_with(OTHER_UID, NULL, SAMPLING_CAPS);
        h_client_tool_request(other, "70", "secret__ask", "{\"method\":\"sampling/createMessage\",\"params\":" SAMPLING "}");
        u = h_take(other, is_request, "sampling/createMessage", H_TIMEOUT_MS);
        cr_assert_not_null(u, "uid 4242, whose call asked, was not asked");
        reload_with(SECRET_DENIED);
        h_sendf(other->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\","
                          "\"text\":\"from a denied client\"},\"model\":\"m\"}}\n",
                h_json_text(h_get(u, "id")));
        r = h_client_answer(other, "70");
        cr_assert(!strstr(h_json_text(r), "from a denied client") && strstr(h_json_text(r), "may no longer hear from this server"),
                  "secret got the answer of a client denied it: %s", h_json_text(r));
        json_object_put(r);
        json_object_put(u);
        cr_assert(h_log_wait(&D, "response: denied", H_TIMEOUT_MS));
        close_and_stop(root, other);
}

/* A rule on one URI holds however it is reached: through the template that matches it, by
 * resources/read, completion/complete and resources/subscribe alike, while the template's
 * other URIs stay readable. */
Test(access, resource_rule_holds_through_templates) {
        struct h_client *root, *other;
        json_object *r;

        add_demo("pub", "", "\"--subscribe\"");
        start_shared(1, "\"access\":{\"rules\":[{\"users\":[\"4242\"],\"resources\":[\"demo://item/42\"],\"action\":\"deny\"}]}");
        root = open_as(0, NULL);
        other = open_as(OTHER_UID, NULL);
        static const struct {
                const char *method, *params;
                int code;
        } calls[] = {
                { "resources/read", "{\"uri\":\"demo://item/42\"}", -32002 },
                { "completion/complete", "{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"demo://item/42\"},"
                                         "\"argument\":{\"name\":\"id\",\"value\":\"4\"}}", -32602 },
                { "resources/subscribe", "{\"uri\":\"demo://item/42\"}", -32602 },
        };
        for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
                r = h_client_call(other, "93", calls[i].method, calls[i].params);
                cr_assert(h_error_code(r) == calls[i].code &&
                                  strstr(h_str(r, "error.message"), "permission denied: resource 'demo://item/42'"),
                          "%s: %s", calls[i].method, h_json_text(r));
                json_object_put(r);
        }
        r = h_client_call(other, "94", "resources/read", "{\"uri\":\"demo://item/7\"}");
        cr_assert_not_null(h_get(r, "result"), "another URI of the template: %s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(root, "95", "resources/read", "{\"uri\":\"demo://item/42\"}");
        cr_assert_not_null(h_get(r, "result"), "root: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "resources/read demo://item/42: denied", H_TIMEOUT_MS));
        close_and_stop(root, other);
}

/* initialize's instructions come only from the servers the client may see. */
Test(access, instructions_of_visible_servers_only) {
        struct h_client *other, *root;
        json_object *r;

        start_secret_denied("\"--instructions\",\"Pub helps.\"", "\"--instructions\",\"Secret knows.\"", &root, &other);
        h_client_close(other);
        other = client_of(connect_as(OTHER_UID, OTHER_UID));
        r = initialize(other, NULL);
        cr_assert_str_eq(h_str(r, "result.instructions"), "## pub\nPub helps.\n", "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(root);
        root = client_of(h_connect(D.sock, H_TIMEOUT_MS));
        r = initialize(root, NULL);
        cr_assert(strstr(h_str(r, "result.instructions"), "## secret\nSecret knows."), "%s", h_json_text(r));
        json_object_put(r);
        close_and_stop(root, other);
}

/* A name under the prefix of a server the client may not see, not ready, is answered exactly
 * as a name of no server: neither its state nor its cause is told. */
Test(access, denied_server_answered_as_none) {
        struct h_client *root, *other;
        json_object *r, *none;

        add_demo("pub", "", "");
        add_demo("secret", "\"disabled\":true", "");
        start_shared(1, SECRET_DENIED);
        root = open_as(0, NULL);
        other = open_as(OTHER_UID, NULL);
        none = h_client_tool_call(other, "96", "nosuch__echo", "{}");
        cr_assert_str_eq(h_str(none, "error.message"), "Unknown tool: nosuch__echo", "%s", h_json_text(none));
        r = h_client_tool_call(other, "96", "secret__echo", "{}");
        cr_assert(h_error_code(r) == h_error_code(none) && strcmp(h_str(r, "error.message"), "Unknown tool: secret__echo") == 0 &&
                          !h_get(r, "error.data"),
                  "uid 4242 was told more of secret: %s", h_json_text(r));
        json_object_put(r);
        json_object_put(none);
        r = h_client_tool_call(root, "97", "secret__echo", "{}");
        cr_assert(strstr(h_str(r, "error.message"), "server 'secret' is not ready"), "root: %s", h_json_text(r));
        json_object_put(r);
        close_and_stop(root, other);
}

/* Subscriptions are decided per client: a profile that hides a resource cannot join another
 * client's subscription to it; and a reload that denies one resource to a subscriber ends
 * its hold (its updates stop), the other's going on. */
Test(access, subscriptions_decided_per_client) {
        struct h_client *root, *other, *narrow;
        json_object *r;

        add_demo("pub", "", "\"--subscribe\"");
        set_settings("\"socketMode\":\"0666\",\"profiles\":{\"items\":{\"resources\":[\"demo://item/*\"]}},\"access\":{}");
        start(NULL);
        cr_assert_eq(chmod(D.dir, 0711), 0);
        wait_all_ready(1);
        root = open_as(0, NULL);
        other = open_as(OTHER_UID, NULL);
        narrow = open_as(THIRD_UID, "items");
        for (int i = 0; i < 2; i++) {
                struct h_client *x = i ? other : root;

                r = h_client_call(x, "98", "resources/subscribe", "{\"uri\":\"demo://readme\"}");
                cr_assert_not_null(h_get(r, "result"), "subscribe: %s", h_json_text(r));
                json_object_put(r);
        }
        r = h_client_call(narrow, "99", "resources/subscribe", "{\"uri\":\"demo://readme\"}");
        cr_assert(h_error_code(r) == -32602 && strstr(h_str(r, "error.message"), "no ready server lists this resource"),
                  "a profile without the resource joined: %s", h_json_text(r));
        json_object_put(r);
        r = h_take(other, h_is_method, UPDATED, H_TIMEOUT_MS);
        cr_assert_not_null(r, "uid 4242 got no update while allowed");
        json_object_put(r);

        reload_with("\"access\":{\"rules\":[{\"users\":[\"4242\"],\"resources\":[\"demo://readme\"],\"action\":\"deny\"}]}");
        cr_assert(h_log_wait(&D, "its subscription to demo://readme ended", H_TIMEOUT_MS));
        flush(other);
        h_inbox_drop(other, h_is_method, UPDATED);
        h_inbox_drop(root, h_is_method, UPDATED);
        for (int i = 0; i < 2; i++) {
                r = h_take(root, h_is_method, UPDATED, H_TIMEOUT_MS);
                cr_assert_not_null(r, "root got no update after the reload (%d)", i);
                json_object_put(r);
        }
        flush(other);
        flush(narrow);
        cr_assert_eq(h_inbox_drop(other, h_is_method, UPDATED), 0, "uid 4242 got updates of a resource denied it");
        cr_assert_eq(h_inbox_drop(narrow, h_is_method, UPDATED), 0, "a profile without the resource got its updates");
        h_client_close(narrow);
        close_and_stop(root, other);
}

/* ---- reloads changing rules and filters under load ---- */

/* Clients of four uids keep calls in flight (pipelined, some slow) to servers a and b while
 * the test reloads, by the control socket and by SIGHUP in turn, between configs that change
 * the access rules and the tool filters. Each answer is checked against the configs that
 * were in force at some moment between its request and its answer: a result (the right
 * one) where one allowed the tool, "permission denied" naming it where one denied it, an
 * unknown tool where one filtered it out. After each reload each client's tools/list is
 * what the new config shows its uid. */

#define LOAD_CLIENTS 4
#define LOAD_WINDOW 8           /* calls each client keeps in flight */
#define LOAD_ROUND 40           /* calls each client has answered between two reloads */
#define LOAD_AHEAD (2 * LOAD_ROUND) /* calls it may send past its round meanwhile */
#define LOAD_MAX_CALLS 1024
#define LOAD_LIST_ID 100000     /* tools/list after reload n has id LOAD_LIST_ID + n */

enum load_outcome { LOAD_RESULT, LOAD_DENIED, LOAD_UNKNOWN };
static const char *const load_outcome_names[] = { "a result", "permission denied", "an unknown tool" };

static const char *const load_tools[] = { "a__echo", "a__sleep", "a__add", "b__echo", "b__sleep" };
#define LOAD_TOOLS (sizeof load_tools / sizeof load_tools[0])
static const uid_t load_uids[LOAD_CLIENTS] = { 0, OTHER_UID, THIRD_UID, 4244 };

/* The configs: access rules, and the filters of a and b ("" for none). */
static const struct {
        const char *access, *a, *b;
} load_configs[] = {
        { "\"access\":{}", "", "" },
        { "\"access\":{\"rules\":[{\"users\":[4242],\"servers\":[\"b\"],\"action\":\"deny\"},"
          "{\"users\":[4243],\"tools\":[\"a__echo\"],\"action\":\"deny\"}]}",
          "\"excludeTools\":[\"add\"]", "" },
        { "\"access\":{\"rules\":[{\"users\":[4243],\"servers\":[\"b\"],\"action\":\"deny\"},"
          "{\"users\":[4242],\"tools\":[\"a__sleep\"],\"action\":\"deny\"}]}",
          "", "\"includeTools\":[\"echo\"]" },
};

/* What a config makes of a call to tool by uid: filters first (a filtered tool is unknown
 * to everyone), then the rules. */
static enum load_outcome load_expected(unsigned config, uid_t uid, const char *tool) {
        bool on_b = strncmp(tool, "b__", 3) == 0;

        switch (config) {
        case 1:
                if (strcmp(tool, "a__add") == 0)
                        return LOAD_UNKNOWN;
                if ((uid == OTHER_UID && on_b) || (uid == THIRD_UID && strcmp(tool, "a__echo") == 0))
                        return LOAD_DENIED;
                return LOAD_RESULT;
        case 2:
                if (on_b && strcmp(tool, "b__echo") != 0)
                        return LOAD_UNKNOWN;
                if ((uid == THIRD_UID && on_b) || (uid == OTHER_UID && strcmp(tool, "a__sleep") == 0))
                        return LOAD_DENIED;
                return LOAD_RESULT;
        }
        return LOAD_RESULT;
}

/* The config at start, then the one each reload brings. */
static const unsigned load_sequence[] = { 0, 1, 2, 0, 2, 1, 0 };
#define LOAD_RELOADS (sizeof load_sequence / sizeof load_sequence[0] - 1)

struct load_call {
        uint8_t tool;
        uint8_t answers;
        uint8_t lo;             /* reloads known to be in force when it was sent */
};

struct load_client {
        struct h_client *x;
        uid_t uid;
        unsigned target, sent, answered, in_flight;
        struct load_call calls[LOAD_MAX_CALLS];
        json_object *list;      /* the answer to the last tools/list, once it came */
        bool list_pending;
};

static struct {
        struct load_client c[LOAD_CLIENTS];
        unsigned requested, applied; /* reloads asked for, and known to be in force */
        struct h_conn *control;      /* a "reload" on the control socket awaiting its answer */
        unsigned reloaded_lines;     /* "reloaded: " lines in the log before a SIGHUP */
        unsigned outcomes[3];
        unsigned across;             /* calls answered after a reload asked for since they were sent */
} L;

static void load_write_config(unsigned config) {
        servers_reset(&D);
        add_demo("a", load_configs[config].a, "");
        add_demo("b", load_configs[config].b, "");
        set_settings(sf("\"socketMode\":\"0666\",%s", load_configs[config].access));
}

static unsigned load_sleep_ms(unsigned n) {
        return n % 7 == 1 ? 400 : 10 + (n % 5) * 20; /* a few cross a reload */
}

static void load_send(unsigned i) {
        struct load_client *c = &L.c[i];
        unsigned n = c->sent, tool = (i + n) % LOAD_TOOLS;

        cr_assert_lt(n, LOAD_MAX_CALLS);
        c->calls[n] = (struct load_call){ .tool = (uint8_t)tool, .lo = (uint8_t)L.applied };
        h_sendf(c->x->c, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                         "\"arguments\":{\"text\":\"c%u-%u\",\"a\":%u,\"b\":1,\"ms\":%u}}}\n",
                n + 1, load_tools[tool], i, n, n, load_sleep_ms(n));
        c->sent++;
        c->in_flight++;
}

/* What msg, the answer to call n of client i, is; fails the test if it is none of them. */
static enum load_outcome load_outcome_of(unsigned i, unsigned n, json_object *msg) {
        const char *tool = load_tools[L.c[i].calls[n].tool], *message = h_str(msg, "error.message");
        char want[64];

        if (h_get(msg, "result")) {
                if (strcmp(tool + 3, "echo") == 0)
                        snprintf(want, sizeof want, "c%u-%u", i, n);
                else if (strcmp(tool + 3, "add") == 0)
                        snprintf(want, sizeof want, "%u", n + 1);
                else
                        snprintf(want, sizeof want, "slept %u ms", load_sleep_ms(n));
                cr_assert_str_eq(h_str(msg, "result.content.0.text"), want, "client %u, call %u to %s: %s", i, n + 1, tool,
                                 h_json_text(msg));
                return LOAD_RESULT;
        }
        if (message && strstr(message, "permission denied") && strstr(message, tool))
                return LOAD_DENIED;
        if (h_error_code(msg) == -32602 && message && strstr(message, "Unknown tool") && strstr(message, tool))
                return LOAD_UNKNOWN;
        cr_assert_fail("client %u, call %u to %s: %s", i, n + 1, tool, h_json_text(msg));
        return LOAD_RESULT;
}

static void load_take(unsigned i, json_object *msg) {
        struct load_client *c = &L.c[i];
        json_object *id;
        int64_t n;
        enum load_outcome got;
        bool possible = false;

        if (json_object_object_get_ex(msg, "method", NULL))
                return; /* list_changed and the like */
        cr_assert(json_object_object_get_ex(msg, "id", &id) && json_object_is_type(id, json_type_int),
                  "client %u: an answer to no call of its: %s", i, h_json_text(msg));
        n = json_object_get_int64(id);
        if (n >= LOAD_LIST_ID) {
                cr_assert(c->list_pending && n == LOAD_LIST_ID + L.applied, "client %u: a stray list: %.200s", i,
                          h_json_text(msg));
                c->list = json_object_get(msg);
                c->list_pending = false;
                return;
        }
        cr_assert(n >= 1 && n <= c->sent, "client %u: an answer to no call of its: %s", i, h_json_text(msg));
        n--;
        cr_assert_eq(c->calls[n].answers++, 0, "client %u, call %lld: a second answer %s", i, (long long)n + 1,
                     h_json_text(msg));
        c->answered++;
        c->in_flight--;
        got = load_outcome_of(i, (unsigned)n, msg);
        L.outcomes[got]++;
        L.across += c->calls[n].lo < L.requested;
        /* Any config in force between the request and its answer may have decided. */
        for (unsigned k = c->calls[n].lo; k <= L.requested; k++)
                possible |= load_expected(load_sequence[k], c->uid, load_tools[c->calls[n].tool]) == got;
        cr_assert(possible, "client %u (uid %u), call %lld to %s: %s, which no config in force since it was sent "
                            "(configs %u to %u of the sequence) gives",
                  i, (unsigned)c->uid, (long long)n + 1, load_tools[c->calls[n].tool], load_outcome_names[got],
                  c->calls[n].lo, L.requested);
}

/* Whether the reload asked for is known to be in force: the control socket answered, or
 * the log says a SIGHUP's reload is done. */
static void load_check_reload(void) {
        char *line;
        json_object *r;

        if (L.applied == L.requested)
                return;
        if (L.control) {
                if (!(line = h_conn_take_line(L.control)))
                        return;
                r = json_tokener_parse(line);
                cr_assert(r && h_get(r, "result"), "reload %u: %s", L.requested, line);
                free(line);
                json_object_put(r);
                h_close(L.control);
                L.control = NULL;
        } else if (h_log_count(&D, "reloaded: ") <= L.reloaded_lines)
                return;
        L.applied = L.requested;
}

/* Reads, checks and sends (calls keep flowing up to each client's target) until done()
 * holds; every wait is on the sockets, at most 20 ms at a time (a SIGHUP's reload shows
 * only in the log). */
static void load_pump(bool (*done)(void), const char *what) {
        long long deadline = h_now_ms() + 30000;
        struct pollfd p[LOAD_CLIENTS + 2];

        for (;;) {
                for (unsigned i = 0; i < LOAD_CLIENTS; i++) {
                        struct load_client *c = &L.c[i];
                        char *line;

                        while ((line = h_conn_take_line(c->x->c))) {
                                json_object *msg = json_tokener_parse(line);

                                cr_assert_not_null(msg, "client %u: not JSON: %.200s", i, line);
                                free(line);
                                load_take(i, msg);
                                json_object_put(msg);
                        }
                        while (c->sent < c->target && c->in_flight < LOAD_WINDOW)
                                load_send(i);
                }
                load_check_reload();
                h_notify_drain(&D);
                if (done())
                        return;
                cr_assert_lt(h_now_ms(), deadline, "the load did not get %s in time (reload %u asked, %u applied)", what,
                             L.requested, L.applied);
                for (unsigned i = 0; i < LOAD_CLIENTS; i++)
                        p[i] = (struct pollfd){ L.c[i].x->c->fd, POLLIN, 0 };
                p[LOAD_CLIENTS] = (struct pollfd){ D.notify_fd, POLLIN, 0 };
                p[LOAD_CLIENTS + 1] = (struct pollfd){ L.control ? L.control->fd : -1, POLLIN, 0 };
                if (poll(p, LOAD_CLIENTS + 2, 20) <= 0)
                        continue;
                for (unsigned i = 0; i < LOAD_CLIENTS; i++)
                        if (p[i].revents)
                                cr_assert(h_conn_fill_now(L.c[i].x->c), "client %u (uid %u) was disconnected", i,
                                          (unsigned)L.c[i].uid);
                if (p[LOAD_CLIENTS + 1].revents)
                        cr_assert(h_conn_fill_now(L.control), "the control socket closed before answering the reload");
        }
}

static unsigned load_goal;

static bool is_any_answer(json_object *msg, const char *arg) {
        (void)arg;
        return h_get(msg, "id") && !h_get(msg, "method");
}

static bool load_round_done(void) {
        for (unsigned i = 0; i < LOAD_CLIENTS; i++)
                if (L.c[i].answered < load_goal)
                        return false;
        return true;
}

static bool load_reload_done(void) {
        return L.applied == L.requested;
}

static bool load_lists_done(void) {
        for (unsigned i = 0; i < LOAD_CLIENTS; i++)
                if (L.c[i].list_pending)
                        return false;
        return true;
}

static bool load_all_answered(void) {
        for (unsigned i = 0; i < LOAD_CLIENTS; i++)
                if (L.c[i].in_flight > 0 || L.c[i].sent < L.c[i].target)
                        return false;
        return true;
}

/* Every client lists its tools (calls still flowing) and is shown what config shows its
 * uid of all, the tools of a and b unfiltered. */
static void load_check_lists(unsigned config, const char *all) {
        char *names = strdup(all), *save = NULL, want[4096];

        cr_assert_not_null(names);
        for (unsigned i = 0; i < LOAD_CLIENTS; i++) {
                L.c[i].list_pending = true;
                json_object_put(L.c[i].list);
                L.c[i].list = NULL;
                h_sendf(L.c[i].x->c, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/list\"}\n", LOAD_LIST_ID + L.applied);
        }
        load_pump(load_lists_done, "its tools/list answered");
        for (unsigned i = 0; i < LOAD_CLIENTS; i++) {
                size_t used = 0;

                strcpy(names, all);
                want[0] = '\0';
                for (char *t = strtok_r(names, ",", &save); t; t = strtok_r(NULL, ",", &save))
                        if (load_expected(config, L.c[i].uid, t) == LOAD_RESULT)
                                used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", used ? "," : "", t);
                cr_assert_str_eq(h_tool_names(L.c[i].list), want, "uid %u after reload %u (config %u) was shown %s, not %s",
                                 (unsigned)L.c[i].uid, L.applied, config, h_tool_names(L.c[i].list), want);
        }
        free(names);
}

/* The pid of each server (a, b) and its restarts, from the status. */
static void load_servers(pid_t pids[2], long long restarts[2]) {
        json_object *st = h_control(&D, "status", NULL), *rows = h_get(st, "result.servers");

        cr_assert_eq(json_object_array_length(rows), 2, "%s", h_json_text(st));
        for (size_t i = 0; i < 2; i++) {
                json_object *row = json_object_array_get_idx(rows, i);
                size_t k = strcmp(h_str(row, "name"), "a") == 0 ? 0 : 1;

                pids[k] = json_object_get_int(h_get(row, "pid"));
                restarts[k] = json_object_get_int64(h_get(row, "restarts"));
                cr_assert_str_eq(h_str(row, "state"), "ready", "%s", h_json_text(row));
        }
        json_object_put(st);
}

Test(access, reloads_under_load_lose_nothing, .timeout = 180) {
        pid_t pids[2], pids_after[2];
        long long restarts[2], restarts_after[2];
        json_object *r;
        char *all;

        load_write_config(load_sequence[0]);
        start(NULL);
        cr_assert_eq(chmod(D.dir, 0711), 0);
        wait_all_ready(2);
        load_servers(pids, restarts);
        for (unsigned i = 0; i < LOAD_CLIENTS; i++) {
                L.c[i].uid = load_uids[i];
                L.c[i].x = open_as(load_uids[i], NULL);
        }
        r = h_client_call(L.c[0].x, "0", "tools/list", NULL);
        all = strdup(h_tool_names(r));
        json_object_put(r);
        for (size_t t = 0; t < LOAD_TOOLS; t++)
                cr_assert(h_has_item(all, load_tools[t]), "%s not in %s", load_tools[t], all);
        load_check_lists(load_sequence[0], all);

        for (unsigned round = 0; round <= LOAD_RELOADS; round++) {
                load_goal = (round + 1) * LOAD_ROUND;
                for (unsigned i = 0; i < LOAD_CLIENTS; i++)
                        L.c[i].target = load_goal + LOAD_AHEAD;
                load_pump(load_round_done, "its round of calls answered");
                if (round == LOAD_RELOADS)
                        break;
                /* the next config, while calls are in flight */
                load_write_config(load_sequence[round + 1]);
                config_rewrite();
                L.requested++;
                if (round % 2 == 0) {
                        L.control = h_connect(D.control, H_TIMEOUT_MS);
                        h_send(L.control, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"reload\"}\n");
                } else {
                        L.reloaded_lines = h_log_count(&D, "reloaded: ");
                        cr_assert_eq(kill(D.pid, SIGHUP), 0);
                }
                load_pump(load_reload_done, "the reload done");
                load_check_lists(load_sequence[round + 1], all);
        }
        for (unsigned i = 0; i < LOAD_CLIENTS; i++)
                L.c[i].target = L.c[i].sent;
        load_pump(load_all_answered, "every call answered");

        for (unsigned i = 0; i < LOAD_CLIENTS; i++) {
                for (unsigned n = 0; n < L.c[i].sent; n++)
                        cr_assert_eq(L.c[i].calls[n].answers, 1, "client %u, call %u: %u answers", i, n + 1,
                                     L.c[i].calls[n].answers);
                flush(L.c[i].x);
                cr_assert_eq(h_inbox_drop(L.c[i].x, is_any_answer, NULL), 0, "client %u: answers after the last", i);
        }
        cr_assert(L.outcomes[LOAD_RESULT] > 0 && L.outcomes[LOAD_DENIED] > 0 && L.outcomes[LOAD_UNKNOWN] > 0,
                  "the load saw %u results, %u denials, %u unknown tools", L.outcomes[LOAD_RESULT],
                  L.outcomes[LOAD_DENIED], L.outcomes[LOAD_UNKNOWN]);
        cr_assert_geq(L.across, LOAD_RELOADS, "only %u calls were in flight across a reload", L.across);
        cr_assert_eq(h_log_count(&D, "reloaded: "), LOAD_RELOADS);
        load_servers(pids_after, restarts_after);
        for (int k = 0; k < 2; k++)
                cr_assert(pids_after[k] == pids[k] && restarts_after[k] == restarts[k],
                          "server %c restarted: pid %d -> %d, restarts %lld -> %lld", "ab"[k], (int)pids[k],
                          (int)pids_after[k], restarts[k], restarts_after[k]);
        cr_assert_eq(h_log_count(&D, "] ready -> "), 0, "a server changed state");
        if (getenv("H_VERBOSE"))
                fprintf(stderr, "reloads under load: %u results, %u denied, %u unknown; %u across a reload\n",
                        L.outcomes[LOAD_RESULT], L.outcomes[LOAD_DENIED], L.outcomes[LOAD_UNKNOWN], L.across);
        for (unsigned i = 0; i < LOAD_CLIENTS; i++) {
                json_object_put(L.c[i].list);
                h_client_close(L.c[i].x);
        }
        free(all);
        stop_clean();
}
