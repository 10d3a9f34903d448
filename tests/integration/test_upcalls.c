/* Requests from servers to clients ("upcalls"), run for real with demo servers (see
 * demo/demo-server.c: its ask, notify and client_capabilities tools and --ask-at-start):
 * the client capabilities a server is offered, roots/list answered with a server's
 * configured roots whoever calls, an upcall routed to the one client with
 * requests in flight to its server (under an id of the daemon's, answered under the
 * server's own), refused when no client or several could own it (another client's given-up
 * call that may still run there counts) or when the client lacks the capability, cancelled
 * by the server, by the client's leaving or by the server's end; a server's unknown
 * notifications, the client's progress on an upcall, and unknown client methods passed
 * through when there is a single server.
 *
 * What a server got is read from its stderr lines in the daemon's log ("a: ..."): the demo
 * server says what it asked, which answers came and which it did not expect.
 *
 * Every wait drains the daemon's NOTIFY datagrams (h_take, h_log_count_wait, h_notify_wait):
 * once their queue is full, its sd_notify() blocks and the daemon stands still. */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;
static char T[64];        /* this test's own directory */
static char PIDFILE[128]; /* --pidfile */

/* A client that declares every capability a server may use. */
#define ALL_CAPS "{\"roots\":{\"listChanged\":true},\"sampling\":{},\"elicitation\":{}}"

static void setup(void) {
        strcpy(T, "/tmp/mcpvisor-up-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        snprintf(PIDFILE, sizeof PIDFILE, "%s/server.pid", T);
        servers_reset(&D);
}

static void teardown(void) {
        servers_teardown();
        h_remove_tree(T);
}

TestSuite(upcalls, .init = setup, .fini = teardown, .timeout = 30);

/* ---- helpers: JSON ---- */

static json_object *parse(const char *text) {
        json_object *o = json_tokener_parse(text);

        cr_assert_not_null(o, "not JSON: %s", text);
        return o;
}

/* got (JSON text) means the same JSON as want (JSON text): same members, any order or
 * escaping. */
static void expect_same_json(const char *got, const char *want, const char *what) {
        json_object *g = parse(got), *w = parse(want);

        cr_assert(json_object_equal(g, w), "%s: got %s, want %s", what, got, want);
        json_object_put(g);
        json_object_put(w);
}

static const char *error_message(json_object *msg) {
        cr_assert_not_null(h_get(msg, "error.message"), "expected an error, got %s", h_json_text(msg));
        return h_str(msg, "error.message");
}

/* ---- helpers: the daemon's log, where the servers' stderr goes ---- */

static void expect_log(const char *needle) {
        cr_assert(h_log_count_wait(&D, needle, 1, H_TIMEOUT_MS), "not in the log: %s", needle);
}

/* What follows needle on the first log line that holds it (waiting for one), malloc'd. */
static char *log_rest(const char *needle) {
        char *rest = h_log_rest_wait(&D, needle, H_TIMEOUT_MS);

        cr_assert_not_null(rest, "not in the log: %s", needle);
        return rest;
}

/* The JSON that follows needle on the first log line that holds it. */
static json_object *log_json(const char *needle) {
        char *rest = log_rest(needle);
        json_object *o = json_tokener_parse(rest);

        cr_assert_not_null(o, "not JSON after \"%s\" in the log: %s", needle, rest);
        free(rest);
        return o;
}

/* ---- helpers: clients ---- */

/* A request (method and id) whose method is arg. */
static bool is_request(json_object *msg, const char *arg) {
        return h_get(msg, "id") && h_get(msg, "method") && strcmp(h_str(msg, "method"), arg) == 0;
}

static bool is_any_request(json_object *msg, const char *arg) {
        (void)arg;
        return h_get(msg, "id") && h_get(msg, "method");
}

/* A ping answered by the daemon: whatever it sent x before is in x's inbox now. */
static void flush(struct h_client *x) {
        json_object *r = h_client_call(x, "\"flush\"", "ping", NULL);

        cr_assert_not_null(h_get(r, "result"), "ping: %s", h_json_text(r));
        json_object_put(r);
}

/* x got no request from the daemon (none in its inbox after a ping). */
static void expect_no_request(struct h_client *x, const char *who) {
        json_object *msg;

        flush(x);
        msg = h_take(x, is_any_request, NULL, 0);
        cr_assert_null(msg, "%s got a request: %s", who, msg ? h_json_text(msg) : "");
}

/* x got no notification method (none in its inbox after a ping). */
static void expect_no_notification(struct h_client *x, const char *who, const char *method) {
        json_object *msg;

        flush(x);
        msg = h_take(x, h_is_method, method, 0);
        cr_assert_null(msg, "%s got %s", who, msg ? h_json_text(msg) : "");
}

/* The upcall method that reaches x, asserting it comes, under an integer id of the daemon's. */
static json_object *take_upcall(struct h_client *x, const char *method) {
        json_object *msg = h_take(x, is_request, method, H_TIMEOUT_MS);

        cr_assert_not_null(msg, "no %s request reached the client", method);
        cr_assert(json_object_is_type(h_get(msg, "id"), json_type_int),
                  "the client's id is not an integer of the daemon's: %s", h_json_text(msg));
        return msg;
}

/* x answers upcall with a result or an error (JSON text). */
static void reply(struct h_client *x, json_object *upcall, const char *member, const char *json) {
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"%s\":%s}\n", h_json_text(h_get(upcall, "id")), member, json);
}

/* x calls SERVER__ask by id: method with params (JSON text, or NULL) and more members (JSON
 * text, "" for none). */
static void ask(struct h_client *x, const char *id, const char *server, const char *method, const char *params,
                const char *more) {
        char args[2048];

        snprintf(args, sizeof args, "{\"method\":\"%s\"%s%s%s%s}", method, params ? ",\"params\":" : "",
                 params ? params : "", more[0] ? "," : "", more);
        h_client_tool_request(x, id, sf("%s__ask", server), args);
}

/* The text of an ask's tool result, asserting it is (is_error) or is not an error result. */
static const char *ask_text(json_object *r, bool is_error) {
        const char *text = h_result_text(r);

        cr_assert_eq(json_object_get_boolean(h_get(r, "result.isError")), is_error, "isError is not %s: %s",
                     is_error ? "true" : "false", h_json_text(r));
        return text;
}

/* Everything server wrote to stderr so far is in the daemon's log: SERVER__log writes tag to
 * stderr after those lines. */
static void sync_stderr(struct h_client *x, const char *server, const char *tag) {
        json_object *r = h_client_tool_call(x, sf("\"%s\"", tag), sf("%s__log", server), sf("{\"text\":\"%s\"}", tag));

        cr_assert_str_eq(h_result_text(r), "logged", "%s", h_json_text(r));
        json_object_put(r);
        expect_log(sf("%s: %s\n", server, tag));
}

/* x's tools/call a__sleep by id, known to run at the server (its first progress came): x
 * has a request in flight there. */
static void sleep_in_flight(struct h_client *x, const char *id, const char *server) {
        json_object *msg;

        h_client_request(x, id, "tools/call",
                         sf("{\"name\":\"%s__sleep\",\"arguments\":{\"ms\":20000},\"_meta\":{\"progressToken\":\"zz\"}}",
                            server));
        msg = h_take(x, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no progress: the sleep is not running");
        json_object_put(msg);
}

/* Cancels x's request id and waits until the server has seen it. */
static void cancel(struct h_client *x, const char *id, const char *server, unsigned nth) {
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%s}}\n", id);
        cr_assert(h_log_count_wait(&D, sf("%s: cancelled request ", server), nth, H_TIMEOUT_MS),
                  "the cancellation did not reach %s", server);
}

/* ---- the capabilities servers are offered ---- */

/* The capabilities server was initialized with, as a client_capabilities call shows them. */
static json_object *server_sees(struct h_client *x, const char *server) {
        json_object *r = h_client_tool_call(x, "\"caps\"", sf("%s__client_capabilities", server), "{}"), *caps;

        caps = parse(h_result_text(r));
        json_object_put(r);
        cr_assert(json_object_is_type(caps, json_type_object), "%s was initialized without capabilities: %s", server,
                  h_json_text(caps));
        return caps;
}

/* caps has name as {} (declared) or has not got it. */
static void expect_capability(json_object *caps, const char *server, const char *name, bool declared) {
        json_object *v = h_get(caps, name);

        if (declared)
                cr_assert(json_object_is_type(v, json_type_object) && json_object_object_length(v) == 0,
                          "%s: %s is not {}: %s", server, name, h_json_text(caps));
        else
                cr_assert_null(v, "%s: %s is declared: %s", server, name, h_json_text(caps));
}

Test(upcalls, client_capabilities) {
        static const char *const names[] = { "roots", "sampling", "elicitation" };
        struct h_client *x;
        json_object *caps;

        add_demo("all", "", "");
        add_demo("some", "\"clientCapabilities\":[\"sampling\",\"roots\"]", "");
        add_demo("none", "\"clientCapabilities\":[]", "");
        add_demo("one", "\"clientCapabilities\":[\"elicitation\"]", "");
        start(NULL);
        wait_all_ready(4);
        x = cl_open_with("{}");

        caps = server_sees(x, "all");
        for (size_t i = 0; i < 3; i++)
                expect_capability(caps, "all", names[i], true);
        json_object_put(caps);

        caps = server_sees(x, "some");
        expect_capability(caps, "some", "roots", true);
        expect_capability(caps, "some", "sampling", true);
        expect_capability(caps, "some", "elicitation", false);
        json_object_put(caps);

        caps = server_sees(x, "none");
        for (size_t i = 0; i < 3; i++)
                expect_capability(caps, "none", names[i], false);
        json_object_put(caps);

        caps = server_sees(x, "one");
        expect_capability(caps, "one", "roots", false);
        expect_capability(caps, "one", "sampling", false);
        expect_capability(caps, "one", "elicitation", true);
        json_object_put(caps);
        h_client_close(x);
}

/* Runs mcpvisord --check-config with the current config; returns its exit status and leaves
 * its log in *log. */
static int check_config(char **log) {
        static const char *const args[] = { "--check-config", NULL };
        struct h_daemon e;
        char *config = config_text();
        int status;

        h_start(&e, &(struct h_opts){ .config = config, .extra_args = args });
        free(config);
        status = h_wait_exit(&e, H_TIMEOUT_MS);
        *log = h_log_text(&e);
        if (status == -1)
                h_stop(&e, SIGKILL, H_TIMEOUT_MS);
        h_cleanup(&e);
        cr_assert_neq(status, -1, "--check-config did not exit; its log:\n%s", *log);
        return status;
}

Test(upcalls, client_capabilities_config_errors) {
        struct h_client *x;
        const char *names;
        json_object *r;
        char *log;
        int status;

        add_demo("bogus", "\"clientCapabilities\":[\"roots\",\"telepathy\"]", "");
        add_demo("notarray", "\"clientCapabilities\":\"roots\"", "");
        add_demo("ok", "\"clientCapabilities\":[\"roots\"]", "");
        status = check_config(&log);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "--check-config: status %d; log:\n%s", status, log);
        cr_assert_not_null(strstr(log, "mcpServers.bogus.clientCapabilities"), "not named:\n%s", log);
        cr_assert_not_null(strstr(log, "mcpServers.notarray.clientCapabilities"), "not named:\n%s", log);
        cr_assert_null(strstr(log, "mcpServers.ok"), "a good entry is blamed:\n%s", log);
        free(log);

        /* run for real: the bad entries are skipped, the good one runs */
        start(NULL);
        wait_all_ready(1);
        expect_log("mcpServers.bogus.clientCapabilities");
        x = cl_open_with("{}");
        r = h_client_call(x, "1", "tools/list", NULL);
        names = h_tool_names(r);
        cr_assert(h_has_item(names, "ok__ask"), "%s", names);
        cr_assert_null(strstr(names, "bogus__"), "%s", names);
        cr_assert_null(strstr(names, "notarray__"), "%s", names);
        json_object_put(r);
        h_client_close(x);
}

/* ---- upcalls routed to the client that owns them ---- */

Test(upcalls, roundtrip) {
        static const char roots[] = "{\"roots\":[{\"uri\":\"file:///srv/project\",\"name\":\"project\"}]}";
        static const char sampling[] =
                "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":10}";
        static const char elicit[] =
                "{\"message\":\"Name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
                "\"string\"}}}}";
        static const char custom[] = "{\"a\":[1,\"two\",null,2.5],\"b\":{\"c\":true},\"_meta\":{\"k\":\"v\"}}";
        static const char created[] =
                "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"hello\"},\"model\":\"m\"}";
        json_object *u, *u2, *u3, *u4, *r, *logged;
        struct h_client *x;

        x = start_one_demo("a", ALL_CAPS);

        /* one upcall: to the client under the daemon's id, its answer to the server under ask-1 */
        ask(x, "\"t1\"", "a", "roots/list", "{}", "");
        u = take_upcall(x, "roots/list");
        expect_same_json(h_json_text(h_get(u, "params")), "{}", "roots/list params");
        reply(x, u, "result", roots);
        r = h_client_answer(x, "\"t1\"");
        expect_same_json(ask_text(r, false), roots, "the server got another result");
        json_object_put(r);
        logged = log_json("a: answer to ask-1: ");
        cr_assert(json_object_is_type(h_get(logged, "id"), json_type_string), "%s", h_json_text(logged));
        cr_assert_str_eq(h_str(logged, "id"), "ask-1", "%s", h_json_text(logged));
        json_object_put(logged);
        json_object_put(u);

        /* several at once from the one client, params as sent, answered in any order */
        ask(x, "\"t2\"", "a", "sampling/createMessage", sampling, "");
        ask(x, "\"t3\"", "a", "elicitation/create", elicit, "");
        ask(x, "\"t4\"", "a", "x-custom/ask", custom, "");
        u2 = take_upcall(x, "sampling/createMessage");
        u3 = take_upcall(x, "elicitation/create");
        u4 = take_upcall(x, "x-custom/ask");
        expect_same_json(h_json_text(h_get(u2, "params")), sampling, "sampling/createMessage params");
        expect_same_json(h_json_text(h_get(u3, "params")), elicit, "elicitation/create params");
        expect_same_json(h_json_text(h_get(u4, "params")), custom, "x-custom/ask params");
        cr_assert_not(json_object_equal(h_get(u2, "id"), h_get(u3, "id")), "the same id twice");
        cr_assert_not(json_object_equal(h_get(u2, "id"), h_get(u4, "id")), "the same id twice");
        cr_assert_not(json_object_equal(h_get(u3, "id"), h_get(u4, "id")), "the same id twice");

        reply(x, u4, "result", "{\"ok\":1}");
        reply(x, u3, "error", "{\"code\":-1,\"message\":\"declined\",\"data\":{\"why\":\"test\"}}");
        reply(x, u2, "result", created);
        r = h_client_answer(x, "\"t4\"");
        expect_same_json(ask_text(r, false), "{\"ok\":1}", "x-custom/ask result");
        json_object_put(r);
        r = h_client_answer(x, "\"t3\"");
        cr_assert_str_eq(ask_text(r, true), "error -1: declined");
        json_object_put(r);
        r = h_client_answer(x, "\"t2\"");
        expect_same_json(ask_text(r, false), created, "sampling/createMessage result");
        json_object_put(r);
        /* the error object whole, data included */
        logged = log_json("a: answer to ask-3: ");
        expect_same_json(h_json_text(h_get(logged, "error")),
                         "{\"code\":-1,\"message\":\"declined\",\"data\":{\"why\":\"test\"}}", "the error object");
        json_object_put(logged);
        cr_assert_eq(h_log_count(&D, "a: unexpected answer"), 0, "an answer went to the server under another id");
        json_object_put(u2);
        json_object_put(u3);
        json_object_put(u4);
        h_client_close(x);
}

/* A server's ping is the daemon's to answer: no client sees it. */
Test(upcalls, ping_not_forwarded) {
        struct h_client *x;
        json_object *r;

        x = start_one_demo("a", ALL_CAPS);
        ask(x, "\"t\"", "a", "ping", NULL, "");
        r = h_client_answer(x, "\"t\"");
        expect_same_json(ask_text(r, false), "{}", "ping's result");
        json_object_put(r);
        expect_no_request(x, "the client");
        h_client_close(x);
}

Test(upcalls, no_owner) {
        struct h_client *x;
        json_object *answer;

        /* slow to start, so the client is there (and idle) when the server asks */
        add_demo("a", "", "\"--slow-start\",\"500\",\"--ask-at-start\",\"roots/list\"");
        start(NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        x = cl_open_with(ALL_CAPS);
        answer = log_json("a: answer to start-1: ");
        cr_assert_str_eq(h_str(answer, "id"), "start-1", "%s", h_json_text(answer));
        cr_assert_eq(h_error_code(answer), -32603, "%s", h_json_text(answer));
        cr_assert_not_null(strstr(error_message(answer), "no client has a request in flight to server 'a'"), "%s",
                           h_json_text(answer));
        json_object_put(answer);
        expect_no_request(x, "an idle client");
        h_client_close(x);
}

/* x's ask (by id) for roots/list is refused with -32603 saying why, and neither x nor y is
 * asked anything. */
static void expect_owner_refused(struct h_client *x, struct h_client *y, const char *id, const char *why) {
        json_object *r;
        const char *text;

        ask(x, id, "a", "roots/list", "{}", "");
        r = h_client_answer(x, id);
        text = ask_text(r, true);
        cr_assert_not_null(strstr(text, "error -32603: "), "%s", text);
        cr_assert_not_null(strstr(text, why), "%s", text);
        json_object_put(r);
        expect_no_request(x, "the asking client");
        expect_no_request(y, "the other client");
}

/* Another user, uid 4242, on the daemon's socket (opened to every user: socketMode). */
#define OTHER_UID 4242

/* A client of OTHER_UID, initialized, declaring every capability. */
static struct h_client *cl_open_other_user(void) {
        struct h_client *y = calloc(1, sizeof *y);
        json_object *r;

        cr_assert_not_null(y);
        y->d = &D;
        y->c = h_connect_as(D.sock, OTHER_UID, OTHER_UID, NULL, 0, "other-user");
        cr_assert_not_null(y->c, "uid %d could not connect", OTHER_UID);
        y->inbox = json_object_new_array();
        r = h_client_call(y, "0", "initialize",
                          "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":" ALL_CAPS ","
                          "\"clientInfo\":{\"name\":\"other\",\"version\":\"1\"}}");
        cr_assert_not_null(h_get(r, "result"), "initialize: %s", h_json_text(r));
        json_object_put(r);
        h_send(y->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        return y;
}

/* One demo server "a" ready, its socket open to OTHER_UID, and x (this uid) connected. */
static struct h_client *start_for_two_users(void) {
        set_settings("\"socketMode\":\"0666\"");
        return start_one_demo("a", ALL_CAPS);
}

Test(upcalls, two_owners) {
        struct h_client *x, *y;

        x = start_for_two_users();
        y = cl_open_other_user();
        sleep_in_flight(y, "\"s\"", "a");
        expect_owner_refused(x, y, "\"t\"", "clients have requests in flight to server 'a'");

        /* y's call cancelled, which the server never answers, may still run there, and it
         * is another user's: still no owner (see cancelled_call_keeps_owner_open for when
         * such a call is over) */
        cancel(y, "\"s\"", "a", 1);
        expect_owner_refused(x, y, "\"t2\"", "(another user's was cancelled, or waits for its client's input, and may");
        h_client_close(x);
        h_client_close(y);
}

#define ELICIT "{\"message\":\"Your name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}"

/* A call the server never answers once cancelled (the demo's sleep stops without a word,
 * as MCP asks) by y, or whose client y left, blocks nothing for the same user: each later
 * call's server requests reach its client (x here). A request made for a given-up call
 * itself, with no live call there, gets an error and reaches no one. */
static void same_users_given_up_call(bool leave) {
        struct h_client *x, *y;
        json_object *answer, *u, *r;

        x = start_one_demo("a", ALL_CAPS);
        y = cl_open_with(ALL_CAPS);

        /* the ask fires 1.5 s after y gave its call up, with no call in flight there */
        ask(y, "\"b\"", "a", "roots/list", "{}", "\"afterMs\":1500");
        cancel(y, "\"b\"", "a", 1);
        answer = log_json("a: answer to ask-1: ");
        cr_assert_eq(h_error_code(answer), -32603, "%s", h_json_text(answer));
        cr_assert_not_null(strstr(error_message(answer), "no client has a request in flight to server 'a'"), "%s",
                           h_json_text(answer));
        json_object_put(answer);
        expect_no_request(x, "an idle client");
        expect_no_request(y, "the client that cancelled");

        /* a call given up for good: never answered */
        sleep_in_flight(y, "\"s\"", "a");
        if (leave) {
                h_client_close(y);
                cr_assert(h_log_count_wait(&D, "a: cancelled request ", 2, H_TIMEOUT_MS), "y's call was not cancelled");
        } else
                cancel(y, "\"s\"", "a", 2);

        ask(x, "\"t\"", "a", "elicitation/create", ELICIT, "");
        u = take_upcall(x, "elicitation/create");
        reply(x, u, "result", "{\"action\":\"accept\",\"content\":{}}");
        r = h_client_answer(x, "\"t\"");
        expect_same_json(ask_text(r, false), "{\"action\":\"accept\",\"content\":{}}", "elicitation result");
        json_object_put(r);
        json_object_put(u);
        h_client_close(x);
        if (!leave)
                h_client_close(y);
}

Test(upcalls, same_users_cancelled_call_blocks_nothing) {
        same_users_given_up_call(false);
}

Test(upcalls, same_users_abandoned_call_blocks_nothing) {
        same_users_given_up_call(true);
}

/* B's text, which A must never see. */
#define SECRET_SAMPLING "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"B's secret\"}}],\"maxTokens\":9}"

/* y, another user, calls an ask that fires 1.5 s later and gives it up (cancel, or leaves:
 * y is closed then); x starts an unrelated call meanwhile. The call y gave up may still run
 * at the server, so when the ask fires nobody can say it is x's, and it may carry y's text:
 * the server is refused, and x sees nothing. Once the server has answered y's call (the
 * demo does, after the refusal), x owns the server's requests again. */
static void given_up_call_keeps_owner_open(bool leave) {
        struct h_client *x, *y;
        json_object *answer, *u, *r;

        x = start_for_two_users();
        y = cl_open_other_user();
        ask(y, "\"b\"", "a", "sampling/createMessage", SECRET_SAMPLING, "\"afterMs\":1500");
        if (leave) {
                h_client_close(y);
                expect_log("a: cancelled request ");
        } else
                cancel(y, "\"b\"", "a", 1);
        sleep_in_flight(x, "\"s\"", "a");

        answer = log_json("a: answer to ask-1: ");
        cr_assert_eq(h_error_code(answer), -32603, "%s", h_json_text(answer));
        cr_assert_not_null(strstr(error_message(answer), "several clients may have calls in flight to server 'a' (another "
                                                         "user's was cancelled, or waits for its client's input"),
                           "%s", h_json_text(answer));
        json_object_put(answer);
        expect_no_request(x, "the client with the only live call");
        if (!leave)
                expect_no_request(y, "the client that cancelled");

        ask(x, "\"t\"", "a", "roots/list", "{}", "");
        u = take_upcall(x, "roots/list");
        reply(x, u, "result", "{\"roots\":[]}");
        r = h_client_answer(x, "\"t\"");
        expect_same_json(ask_text(r, false), "{\"roots\":[]}", "roots/list result");
        json_object_put(r);
        json_object_put(u);
        h_client_close(x);
        if (!leave)
                h_client_close(y);
}

Test(upcalls, cancelled_call_keeps_owner_open) {
        given_up_call_keeps_owner_open(false);
}

Test(upcalls, abandoned_call_keeps_owner_open) {
        given_up_call_keeps_owner_open(true);
}

/* A call x itself cancelled leaves no doubt: what its server asks is x's. */
Test(upcalls, own_cancelled_call) {
        struct h_client *x;
        json_object *answer, *u;

        x = start_one_demo("a", ALL_CAPS);
        ask(x, "\"b\"", "a", "roots/list", "{}", "\"afterMs\":1500");
        cancel(x, "\"b\"", "a", 1);
        sleep_in_flight(x, "\"s\"", "a");
        u = take_upcall(x, "roots/list");
        reply(x, u, "result", "{\"roots\":[]}");
        answer = log_json("a: answer to ask-1: ");
        expect_same_json(h_json_text(h_get(answer, "result")), "{\"roots\":[]}", "what the server got");
        json_object_put(answer);
        json_object_put(u);
        h_client_close(x);
}

/* A client without the capability: the server gets -32601 naming it; the client nothing.
 * Methods the daemon does not know are not checked. */
Test(upcalls, capability_missing) {
        static const char *const methods[][2] = {
                { "roots/list", "roots" },
                { "sampling/createMessage", "sampling" },
                { "elicitation/create", "elicitation" },
        };
        struct h_client *x, *y;
        const char *text;
        json_object *r, *u;

        x = start_one_demo("a", "{}");
        for (size_t i = 0; i < 3; i++) {
                ask(x, "\"t\"", "a", methods[i][0], "{}", "");
                r = h_client_answer(x, "\"t\"");
                text = ask_text(r, true);
                cr_assert_not_null(strstr(text, "error -32601: "), "%s: %s", methods[i][0], text);
                cr_assert_not_null(strstr(text, methods[i][1]), "%s: the capability is not named: %s", methods[i][0],
                                   text);
                json_object_put(r);
                expect_no_request(x, "a client without the capability");
        }
        ask(x, "\"c\"", "a", "x-custom/ask", "{}", "");
        u = take_upcall(x, "x-custom/ask");
        reply(x, u, "result", "{}");
        r = h_client_answer(x, "\"c\"");
        expect_same_json(ask_text(r, false), "{}", "x-custom/ask result");
        json_object_put(r);
        json_object_put(u);
        h_client_close(x);

        /* sampling only */
        y = cl_open_with("{\"sampling\":{}}");
        ask(y, "\"s\"", "a", "sampling/createMessage", "{\"messages\":[],\"maxTokens\":1}", "");
        u = take_upcall(y, "sampling/createMessage");
        reply(y, u, "result", "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"x\"},\"model\":\"m\"}");
        r = h_client_answer(y, "\"s\"");
        cr_assert_not_null(strstr(ask_text(r, false), "\"model\""), "%s", h_json_text(r));
        json_object_put(r);
        json_object_put(u);
        ask(y, "\"r\"", "a", "roots/list", "{}", "");
        r = h_client_answer(y, "\"r\"");
        text = ask_text(r, true);
        cr_assert_not_null(strstr(text, "error -32601: "), "%s", text);
        cr_assert_not_null(strstr(text, "roots"), "%s", text);
        json_object_put(r);
        expect_no_request(y, "a client with sampling only");
        h_client_close(y);
}

/* ---- roots configured for a server: the daemon answers ---- */

/* The entry's roots (a Root object, a URI, a path), and the roots/list result they make. */
#define ROOTS_KEY "\"roots\":[{\"uri\":\"file:///srv/project\",\"name\":\"project\"},\"file:///srv/b\",\"/srv/other dir\"]"
#define ROOTS_RESULT                                                                                                   \
        "{\"roots\":[{\"uri\":\"file:///srv/project\",\"name\":\"project\"},{\"uri\":\"file:///srv/b\"},"          \
        "{\"uri\":\"file:///srv/other%20dir\"}]}"

/* A server that asks as soon as it is initialized, with no client anywhere, gets them. */
Test(upcalls, configured_roots_with_no_client) {
        json_object *answer;

        add_demo("a", ROOTS_KEY, "\"--ask-at-start\",\"roots/list\"");
        start(NULL);
        wait_all_ready(1);
        answer = log_json("a: answer to start-1: ");
        cr_assert_str_eq(h_str(answer, "id"), "start-1", "%s", h_json_text(answer));
        cr_assert_null(h_get(answer, "error"), "%s", h_json_text(answer));
        expect_same_json(h_json_text(h_get(answer, "result")), ROOTS_RESULT, "the configured roots");
        json_object_put(answer);
}

/* The server is offered roots.listChanged (a reload may change its roots); the others'
 * capabilities stay as clientCapabilities says. */
Test(upcalls, configured_roots_offer_list_changed) {
        struct h_client *x;
        json_object *caps;

        add_demo("a", ROOTS_KEY, "");
        add_demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open();
        caps = server_sees(x, "a");
        expect_same_json(h_json_text(caps), "{\"roots\":{\"listChanged\":true},\"sampling\":{},\"elicitation\":{}}",
                         "a's capabilities");
        json_object_put(caps);
        caps = server_sees(x, "b");
        expect_same_json(h_json_text(caps), "{\"roots\":{},\"sampling\":{},\"elicitation\":{}}", "b's capabilities");
        json_object_put(caps);
        h_client_close(x);
}

/* x's ask for roots/list at a is answered with the configured roots. */
static void expect_configured_roots(struct h_client *x, const char *id, const char *what) {
        json_object *r;

        ask(x, id, "a", "roots/list", "{}", "");
        r = h_client_answer(x, id);
        expect_same_json(ask_text(r, false), ROOTS_RESULT, what);
        json_object_put(r);
}

/* Whoever calls, with roots of its own, without the capability, or beside another caller:
 * the server gets its configured roots and no client is asked. */
Test(upcalls, configured_roots_whoever_calls) {
        struct h_client *x, *y, *z;

        add_demo("a", ROOTS_KEY, "");
        start(NULL);
        wait_all_ready(1);
        x = cl_open_with(ALL_CAPS);
        y = cl_open_with(ALL_CAPS);
        z = cl_open_with("{}");

        expect_configured_roots(x, "\"t1\"", "x's call");
        expect_no_request(x, "a caller with roots of its own");
        expect_configured_roots(z, "\"t2\"", "z's call");
        sleep_in_flight(y, "\"s\"", "a");
        expect_configured_roots(x, "\"t3\"", "x's call beside y's");
        expect_no_request(x, "x");
        expect_no_request(y, "y");
        cancel(y, "\"s\"", "a", 1);
        h_client_close(x);
        h_client_close(y);
        h_client_close(z);
}

/* ---- cancellation and endings ---- */

Test(upcalls, server_cancels) {
        struct h_client *x;
        json_object *r, *u, *c;

        x = start_one_demo("a", ALL_CAPS);
        ask(x, "\"t\"", "a", "x-custom/slow", "{}", "\"cancelAfterMs\":300");
        u = take_upcall(x, "x-custom/slow");
        c = h_take(x, h_is_method, "notifications/cancelled", H_TIMEOUT_MS);
        cr_assert_not_null(c, "the server's cancellation did not reach the client");
        cr_assert(json_object_equal(h_get(c, "params.requestId"), h_get(u, "id")),
                  "cancelled %s, but the client knows the request as %s", h_json_text(h_get(c, "params.requestId")),
                  h_json_text(h_get(u, "id")));
        json_object_put(c);
        r = h_client_answer(x, "\"t\"");
        cr_assert_str_eq(ask_text(r, false), "gave up");
        json_object_put(r);

        /* a late answer, and one for an id never sent: the server gets neither */
        reply(x, u, "result", "{\"late\":true}");
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"id\":424242,\"result\":{\"stray\":true}}\n");
        sync_stderr(x, "a", "after-late");
        cr_assert_eq(h_log_count(&D, "a: unexpected answer"), 0, "the server got an answer it had given up on");
        json_object_put(u);
        h_client_close(x);
}

/* The tools/call that made the client the owner cannot be answered to it any more; what the
 * server got is in its log, as the answer to its ask or, if the call's cancellation came
 * first, as an answer it no longer expected. */
Test(upcalls, client_disconnects) {
        struct h_client *x;
        json_object *u, *answer;
        char *log;

        x = start_one_demo("a", ALL_CAPS);
        ask(x, "\"t\"", "a", "x-custom/wait", "{}", "");
        u = take_upcall(x, "x-custom/wait");
        json_object_put(u);
        h_client_close(x);

        for (long long deadline = h_now_ms() + H_TIMEOUT_MS;;) {
                if (h_log_count(&D, "a: answer to ask-1: ") > 0) {
                        answer = log_json("a: answer to ask-1: ");
                        break;
                }
                if (h_log_count(&D, "a: unexpected answer ") > 0) {
                        answer = log_json("a: unexpected answer ");
                        break;
                }
                log = h_log_text(&D);
                cr_assert_lt(h_now_ms(), deadline, "the server got no answer for ask-1:\n%s", log);
                free(log);
                h_notify_drain(&D);
                poll(NULL, 0, 10); /* two needles, one of which will come: no single wait fits */
        }
        cr_assert_str_eq(h_str(answer, "id"), "ask-1", "%s", h_json_text(answer));
        cr_assert_eq(h_error_code(answer), -32603, "%s", h_json_text(answer));
        cr_assert_not_null(strstr(error_message(answer), "disconnected"), "%s", h_json_text(answer));
        json_object_put(answer);
}

/* x (with ALL_CAPS) answers the upcall of its call "t" to server a with members (JSON text
 * after "id"): x is told under id null with code, and the server's request ends with an error
 * that says why. The upcall's id is left in id. */
static void answer_upcall_badly(struct h_client *x, const char *members, int code, const char *why, char id[32]) {
        json_object *u, *r;

        ask(x, "\"t\"", "a", "x-custom/ask", "{}", "");
        u = take_upcall(x, "x-custom/ask");
        snprintf(id, 32, "%s", h_json_text(h_get(u, "id")));
        json_object_put(u);
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,%s}\n", id, members);

        r = h_take(x, h_is_answer, "null", H_TIMEOUT_MS);
        cr_assert_not_null(r, "the client was not told of its invalid message");
        cr_assert_eq(h_error_code(r), code, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_answer(x, "\"t\"");
        cr_assert_not_null(strstr(ask_text(r, true), "error -32603: the client answered with an invalid response: "),
                           "%s", h_json_text(r));
        cr_assert_not_null(strstr(ask_text(r, true), why), "%s", h_json_text(r));
        json_object_put(r);
}

/* A client's broken answer to an upcall fails the server's request with an error. Its id
 * is of the daemon's numbering, so the client's error comes under id null: under that id
 * it could pass for an answer to one of the client's own requests. */
Test(upcalls, broken_answer) {
        struct h_client *x;
        json_object *r;
        char id[32];

        x = start_one_demo("a", ALL_CAPS);
        answer_upcall_badly(x, "\"error\":\"not an object\"", -32600, "\"error\" must be an object", id);

        /* a later answer under that id is no one's */
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", id);
        flush(x);
        r = h_take(x, h_is_answer, id, 0);
        cr_assert_null(r, "answered under the upcall's id: %s", r ? h_json_text(r) : "");
        cr_assert_eq(h_log_count(&D, "a: unexpected answer"), 0);
        h_client_close(x);
}

/* So does an answer whose text is not strict UTF-8 (here an overlong form, which json-c
 * reads): a parse error under id null, and nothing of its text reaches the server. */
Test(upcalls, invalid_utf8_answer) {
        struct h_client *x;
        char id[32];

        x = start_one_demo("a", ALL_CAPS);
        answer_upcall_badly(x, "\"result\":{\"text\":\"x\xc0\x80y\"}", -32700, "not valid UTF-8", id);
        h_client_close(x);
}

/* A client that closes its sending side can answer nothing more: its upcalls fail at once,
 * and the call it is still owed brings it the server's view of that. */
Test(upcalls, client_half_closes) {
        struct h_client *x;
        json_object *u, *r;
        const char *text;

        x = start_one_demo("a", ALL_CAPS);
        ask(x, "\"t\"", "a", "x-custom/wait", "{}", "");
        u = take_upcall(x, "x-custom/wait");
        json_object_put(u);
        cr_assert_eq(shutdown(x->c->fd, SHUT_WR), 0);
        r = h_client_answer(x, "\"t\"");
        text = ask_text(r, true);
        cr_assert_not_null(strstr(text, "error -32603: "), "%s", text);
        json_object_put(r);
        cr_assert(h_wait_eof(x->c, H_TIMEOUT_MS, NULL), "the connection stayed open after its last answer");
        h_client_close(x);
}

Test(upcalls, server_ends) {
        struct h_client *x;
        json_object *r, *u, *c;
        pid_t pid;

        add_demo("a", "\"restartDelay\":0.2", sf("\"--pidfile\",\"%s\"", PIDFILE));
        start(NULL);
        wait_all_ready(1);
        pid = h_pidfile_wait(PIDFILE, 0, H_TIMEOUT_MS);
        cr_assert_gt(pid, 0, "no pid in %s", PIDFILE);
        x = cl_open_with(ALL_CAPS);
        ask(x, "\"t\"", "a", "x-custom/wait", "{}", "");
        u = take_upcall(x, "x-custom/wait");
        cr_assert_eq(kill(pid, SIGKILL), 0);

        c = h_take(x, h_is_method, "notifications/cancelled", H_TIMEOUT_MS);
        cr_assert_not_null(c, "the client was not told the upcall is over");
        cr_assert(json_object_equal(h_get(c, "params.requestId"), h_get(u, "id")),
                  "cancelled %s, but the client knows the request as %s", h_json_text(h_get(c, "params.requestId")),
                  h_json_text(h_get(u, "id")));
        json_object_put(c);
        r = h_client_answer(x, "\"t\"");
        cr_assert_not_null(strstr(error_message(r), "server 'a' was killed by SIGKILL during this call"), "%s", h_json_text(r));
        json_object_put(r);

        /* the restarted server gets nothing for its predecessor's request */
        cr_assert(h_log_count_wait(&D, "[a] starting -> ready", 2, H_TIMEOUT_MS), "a was not restarted");
        reply(x, u, "result", "{}");
        sync_stderr(x, "a", "after-restart");
        cr_assert_eq(h_log_count(&D, "a: unexpected answer"), 0, "the new server got the old request's answer");
        json_object_put(u);
        h_client_close(x);
}

/* ---- notifications and progress ---- */

Test(upcalls, notifications_to_owner) {
        static const char params[] = "{\"k\":[1,\"two\"],\"n\":{\"m\":null}}";
        struct h_client *x, *y;
        json_object *r, *msg;

        x = start_one_demo("a", ALL_CAPS);
        y = cl_open_with(ALL_CAPS);
        r = h_client_tool_call(x, "\"n1\"", "a__notify", sf("{\"method\":\"notifications/x-custom\",\"params\":%s}", params));
        cr_assert_str_eq(h_result_text(r), "sent", "%s", h_json_text(r));
        json_object_put(r);
        /* sent before the answer, so in the inbox by now */
        msg = h_take(x, h_is_method, "notifications/x-custom", 0);
        cr_assert_not_null(msg, "the owner did not get the server's notification");
        cr_assert_null(h_get(msg, "id"), "%s", h_json_text(msg));
        expect_same_json(h_json_text(h_get(msg, "params")), params, "the notification's params");
        json_object_put(msg);
        expect_no_notification(y, "a client with nothing in flight", "notifications/x-custom");

        /* two clients with calls in flight: nobody gets it */
        sleep_in_flight(y, "\"s\"", "a");
        r = h_client_tool_call(x, "\"n2\"", "a__notify", "{\"method\":\"notifications/x-custom\",\"params\":{}}");
        cr_assert_str_eq(h_result_text(r), "sent", "%s", h_json_text(r));
        json_object_put(r);
        expect_no_notification(x, "one of two owners", "notifications/x-custom");
        expect_no_notification(y, "one of two owners", "notifications/x-custom");
        cancel(y, "\"s\"", "a", 1);
        h_client_close(x);
        h_client_close(y);
}

/* Two servers, so that no client notification passes through as an unknown one. */
Test(upcalls, progress_to_server) {
        static const char progress[] = "{\"progressToken\":\"up-7\",\"progress\":1,\"total\":2,\"message\":\"thinking\"}";
        struct h_client *x;
        json_object *r, *u;
        char *rest;

        add_demo("a", "", "");
        add_demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open_with(ALL_CAPS);
        ask(x, "\"t\"", "a", "sampling/createMessage",
            "{\"_meta\":{\"progressToken\":\"up-7\"},\"messages\":[],\"maxTokens\":1}", "");
        u = take_upcall(x, "sampling/createMessage");
        cr_assert_str_eq(h_json_text(h_get(u, "params._meta.progressToken")), "\"up-7\"", "%s", h_json_text(u));
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":%s}\n", progress);
        rest = log_rest("a: progress ");
        cr_assert_null(strstr(rest, "for no pending ask"), "the token changed on the way: %s", rest);
        expect_same_json(rest, progress, "the progress params");
        free(rest);
        /* another token: not the upcall's, goes nowhere */
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                     "\"params\":{\"progressToken\":\"other\",\"progress\":1}}\n");
        reply(x, u, "result", "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"x\"},\"model\":\"m\"}");
        r = h_client_answer(x, "\"t\"");
        json_object_put(r);
        /* after the answer, the token is no upcall's any more */
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":%s}\n", progress);
        sync_stderr(x, "a", "after-progress");
        sync_stderr(x, "b", "after-progress");
        cr_assert_eq(h_log_count(&D, "a: progress "), 1, "progress the server should not have had reached it");
        cr_assert_eq(h_log_count(&D, "b: progress "), 0, "progress reached the other server");
        json_object_put(u);
        h_client_close(x);
}

/* ---- unknown client methods ---- */

Test(upcalls, unknown_client_methods_one_server) {
        struct h_client *x;
        json_object *r;

        add_demo("a", "", "");
        add_demo("off", "\"disabled\":true", "");
        start(NULL);
        expect_log("[a] starting -> ready");
        x = cl_open_with("{}");
        r = h_client_call(x, "\"u-1\"", "x-custom/hello", "{\"p\":1}");
        cr_assert_eq(h_error_code(r), -32601, "%s", h_json_text(r));
        cr_assert(json_object_is_type(h_get(r, "id"), json_type_string), "%s", h_json_text(r));
        json_object_put(r);
        expect_log("a: unknown request x-custom/hello\n");
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x-custom\",\"params\":{\"n\":1}}\n");
        expect_log("a: notification notifications/x-custom {\"n\":1}\n");
        h_client_close(x);
}

Test(upcalls, unknown_client_methods_two_servers) {
        struct h_client *x;
        json_object *r;

        add_demo("a", "", "");
        add_demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open_with("{}");
        r = h_client_call(x, "\"u-1\"", "x-custom/hello", "{\"p\":1}");
        cr_assert_eq(h_error_code(r), -32601, "%s", h_json_text(r));
        cr_assert_str_eq(error_message(r), "Method not found: x-custom/hello");
        json_object_put(r);
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x-custom\",\"params\":{\"n\":1}}\n");
        sync_stderr(x, "a", "after-unknown");
        sync_stderr(x, "b", "after-unknown");
        cr_assert_eq(h_log_count(&D, ": unknown request x-custom/hello"), 0, "a server got the request");
        cr_assert_eq(h_log_count(&D, ": notification notifications/x-custom"), 0, "a server got the notification");
        h_client_close(x);
}

/* ---- owners per server ---- */

Test(upcalls, owner_per_server) {
        struct h_client *x, *y;
        json_object *r, *u;

        add_demo("a", "", "");
        add_demo("b", "", "");
        start(NULL);
        wait_all_ready(2);
        x = cl_open_with(ALL_CAPS);
        y = cl_open_with(ALL_CAPS);
        /* x has a call in flight to a only: b's requests are y's */
        sleep_in_flight(x, "\"s\"", "a");
        ask(y, "\"t\"", "b", "roots/list", "{}", "");
        u = take_upcall(y, "roots/list");
        reply(y, u, "result", "{\"roots\":[{\"uri\":\"file:///y\"}]}");
        r = h_client_answer(y, "\"t\"");
        expect_same_json(ask_text(r, false), "{\"roots\":[{\"uri\":\"file:///y\"}]}", "b's roots");
        json_object_put(r);
        json_object_put(u);
        expect_no_request(x, "the client with a call to a only");

        /* and a's are x's, however many of its calls are in flight there */
        ask(x, "\"t\"", "a", "roots/list", "{}", "");
        u = take_upcall(x, "roots/list");
        reply(x, u, "result", "{\"roots\":[]}");
        r = h_client_answer(x, "\"t\"");
        expect_same_json(ask_text(r, false), "{\"roots\":[]}", "a's roots");
        json_object_put(r);
        json_object_put(u);
        expect_no_request(y, "the client with no call to a");
        cancel(x, "\"s\"", "a", 1);
        h_client_close(x);
        h_client_close(y);
}
