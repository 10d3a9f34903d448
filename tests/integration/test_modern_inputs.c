/* Modern servers' input_required results (MCP 2026-07-28 multi round-trip requests) behind
 * the daemon, played by the demo server in its --discover modern mode, whose "ask" tool
 * answers input_required and keeps its answers so far in its own (unprotected) requestState:
 *   - a legacy client is asked each input request as an ordinary server request, and sees
 *     only the call's final result, over one round, two requests in a round, and several
 *     rounds, two clients at once each asked their own; without the capability, the call fails with -32021 naming it; a call cancelled,
 *     timed out, or whose server ends, while its client is asked has those requests
 *     withdrawn, and the client leaving mid-round leaves nothing behind;
 *   - a modern client gets the input_required with the server's state sealed by the daemon,
 *     over two rounds; a forged, altered, expired, another user's or another request's
 *     state is refused with -32602 and never reaches the server. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "servers.h"

static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

#define OTHER_UID 4242
#define CAPS_ALL "{\"elicitation\":{},\"sampling\":{},\"roots\":{}}"
#define OFFERED "\"clientCapabilities\":[\"elicitation\",\"sampling\",\"roots\"]"
#define ELICIT "\"method\":\"elicitation/create\",\"params\":{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"," \
               "\"properties\":{\"name\":{\"type\":\"string\"}}}}"
#define SAMPLE "{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":" \
               "\"text\",\"text\":\"capital of France?\"}}],\"maxTokens\":10}}"
#define ROOTS "{\"method\":\"roots/list\"}"
#define ACCEPT(name) "{\"action\":\"accept\",\"content\":{\"name\":\"" name "\"}}"
#define PARIS "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"Paris\"},\"model\":\"m\"}"

static struct h_daemon D;

static void setup(void) {
        servers_reset(&D);
}

TestSuite(modern_inputs, .init = setup, .fini = servers_teardown, .timeout = 120);

static void start_modern(const char *settings) {
        add_demo("m", OFFERED, "\"--discover\",\"modern\"");
        set_settings(settings);
        start(NULL);
        wait_all_ready(1);
}

/* ---- legacy clients ---- */

static json_object *take_request(struct h_client *x, const char *method) {
        json_object *msg = h_take(x, h_is_method, method, H_TIMEOUT_MS);

        cr_assert_not_null(msg, "no %s reached the client", method);
        cr_assert(json_object_is_type(h_get(msg, "id"), json_type_int), "not an id of the daemon's: %s", h_json_text(msg));
        return msg;
}

static void answer(struct h_client *x, json_object *request, const char *result) {
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n", h_json_text(h_get(request, "id")), result);
        json_object_put(request);
}

Test(modern_inputs, legacy_client_is_asked_and_sees_the_final_result) {
        struct h_client *x;
        json_object *r, *rq;

        start_modern("");
        x = cl_open_with(CAPS_ALL);
        h_client_tool_request(x, "1", "m__ask", "{" ELICIT "}");
        rq = take_request(x, "elicitation/create");
        cr_assert_str_eq(h_str(rq, "params.message") ?: "", "name?", "%s", h_json_text(rq));
        answer(x, rq, ACCEPT("octocat"));
        r = h_client_answer(x, "1");
        cr_assert(strstr(h_result_text(r), "octocat"), "%s", h_json_text(r));
        cr_assert_null(h_get(r, "result.requestState"), "%s", h_json_text(r));
        json_object_put(r);
        /* the server had its own state back with the answer */
        cr_assert(h_log_wait(&D, "m: requestState {\"round\":1", H_TIMEOUT_MS));
        h_client_close(x);
}

Test(modern_inputs, legacy_client_two_requests_in_a_round_then_another_round) {
        struct h_client *x;
        json_object *r, *a, *b;

        start_modern("");
        x = cl_open_with(CAPS_ALL);
        h_client_tool_request(x, "1", "m__ask", "{" ELICIT ",\"also\":[" ROOTS "],\"then\":[" SAMPLE "]}");
        a = take_request(x, "elicitation/create");
        b = take_request(x, "roots/list");
        answer(x, b, "{\"roots\":[{\"uri\":\"file:///work\",\"name\":\"work\"}]}");
        answer(x, a, ACCEPT("ada"));
        answer(x, take_request(x, "sampling/createMessage"), PARIS);
        r = h_client_answer(x, "1");
        cr_assert(strstr(h_result_text(r), "ada") && strstr(h_result_text(r), "\"name\":\"work\"") &&
                  strstr(h_result_text(r), "Paris"), "%s", h_json_text(r));
        json_object_put(r);
        cr_expect_eq(h_log_count(&D, "input_required round"), 2);
        h_client_close(x);
}

/* Unlike a legacy server's requests, a modern server's input requests name their call: two
 * clients in flight to one server at once are each asked their own, and get their own. */
Test(modern_inputs, two_legacy_clients_at_once_each_asked_their_own) {
        struct h_client *x, *y;
        json_object *rx, *ry, *r;

        start_modern("");
        x = cl_open_with(CAPS_ALL);
        y = cl_open_with(CAPS_ALL);
        h_client_tool_request(x, "1", "m__ask", "{\"method\":\"elicitation/create\",\"params\":{\"message\":\"for x\"}}");
        h_client_tool_request(y, "1", "m__ask", "{\"method\":\"elicitation/create\",\"params\":{\"message\":\"for y\"}}");
        rx = take_request(x, "elicitation/create");
        ry = take_request(y, "elicitation/create");
        cr_assert_str_eq(h_str(rx, "params.message") ?: "", "for x", "%s", h_json_text(rx));
        cr_assert_str_eq(h_str(ry, "params.message") ?: "", "for y", "%s", h_json_text(ry));
        answer(y, ry, ACCEPT("yves"));
        answer(x, rx, ACCEPT("xavier"));
        r = h_client_answer(x, "1");
        cr_assert(strstr(h_result_text(r), "xavier") && !strstr(h_result_text(r), "yves"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_answer(y, "1");
        cr_assert(strstr(h_result_text(r), "yves") && !strstr(h_result_text(r), "xavier"), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(y);
        h_client_close(x);
}

Test(modern_inputs, legacy_client_without_the_capability) {
        struct h_client *x;
        json_object *r;

        start_modern("");
        x = cl_open_with("{\"roots\":{}}");
        r = h_client_tool_call(x, "1", "m__ask", "{" ELICIT "}");
        cr_assert_eq(h_error_code(r), -32021, "%s", h_json_text(r));
        cr_assert(strstr(h_str(r, "error.message") ?: "", "'elicitation'"), "%s", h_json_text(r));
        cr_assert_not_null(h_get(r, "error.data.requiredCapabilities.elicitation"), "%s", h_json_text(r));
        json_object_put(r);
        /* and the client was asked nothing */
        cr_expect_eq(h_inbox_drop(x, h_is_method, "elicitation/create"), 0);
        h_client_close(x);
}

/* What the daemon did not offer the server (its _meta never declared it) is refused, for a
 * legacy client and a modern one alike, however capable the client. */
Test(modern_inputs, not_offered_to_the_server) {
        struct h_client *x;
        struct h_conn *c;
        json_object *r;

        add_demo("m", "\"clientCapabilities\":[\"elicitation\"]", "\"--discover\",\"modern\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open_with(CAPS_ALL);
        r = h_client_tool_call(x, "1", "m__ask", SAMPLE);
        cr_assert_eq(h_error_code(r), -32603, "%s", h_json_text(r));
        cr_assert(strstr(h_str(r, "error.message") ?: "", "did not offer it"), "%s", h_json_text(r));
        json_object_put(r);
        cr_expect_eq(h_inbox_drop(x, h_is_method, "sampling/createMessage"), 0);
        h_client_close(x);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"m__ask\",\"arguments\":"
                      SAMPLE ",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                      "\"io.modelcontextprotocol/clientCapabilities\":" CAPS_ALL "}}}\n");
        cr_assert(strstr(h_str(r, "error.message") ?: "", "did not offer it"), "%s", h_json_text(r));
        json_object_put(r);
        h_close(c);
}

/* Cancelled while its client is asked: the request is withdrawn, its late answer dropped,
 * and the call never goes back to the server. */
Test(modern_inputs, legacy_call_cancelled_while_asking) {
        struct h_client *x;
        json_object *rq, *n, *r;

        start_modern("");
        x = cl_open_with(CAPS_ALL);
        h_client_tool_request(x, "1", "m__ask", "{" ELICIT "}");
        rq = take_request(x, "elicitation/create");
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n");
        n = h_take(x, h_is_method, "notifications/cancelled", H_TIMEOUT_MS);
        cr_assert_not_null(n, "the client's request was not withdrawn");
        cr_assert_str_eq(h_json_text(h_get(n, "params.requestId")), h_json_text(h_get(rq, "id")), "%s", h_json_text(n));
        json_object_put(n);
        answer(x, rq, ACCEPT("late"));
        r = h_client_tool_call(x, "2", "m__echo", "{\"text\":\"after\"}");
        cr_assert_str_eq(h_result_text(r), "after", "%s", h_json_text(r));
        json_object_put(r);
        cr_expect_eq(h_log_count(&D, "m: requestState"), 0, "the call went back to the server");
        cr_expect(h_inbox_drop(x, h_is_answer, "1") == 0, "the cancelled call was answered");
        h_client_close(x);
}

/* The server's process ends while its client is asked (another client crashes it): the
 * request is withdrawn and the call fails, saying so. */
Test(modern_inputs, legacy_call_fails_when_the_server_ends_while_asking) {
        struct h_client *x, *y;
        json_object *rq, *n, *r;

        start_modern("");
        x = cl_open_with(CAPS_ALL);
        y = cl_open();
        h_client_tool_request(x, "1", "m__ask", "{" ELICIT "}");
        rq = take_request(x, "elicitation/create");
        h_client_tool_request(y, "1", "m__crash", "{}");
        n = h_take(x, h_is_method, "notifications/cancelled", H_TIMEOUT_MS);
        cr_assert_not_null(n, "the client's request was not withdrawn");
        json_object_put(n);
        r = h_client_answer(x, "1");
        cr_assert_eq(h_error_code(r), -32603, "%s", h_json_text(r));
        cr_assert(strstr(h_str(r, "error.message") ?: "", "ended while its client was asked"), "%s", h_json_text(r));
        json_object_put(r);
        json_object_put(rq);
        h_client_close(y);
        h_client_close(x);
}

/* requestTimeout runs while the client is asked, as for a legacy server's request; the
 * client that leaves mid-round leaves nothing behind. */
Test(modern_inputs, legacy_call_timed_out_or_left_while_asking) {
        struct h_client *x;
        json_object *rq, *r;

        add_demo("m", OFFERED ",\"requestTimeout\":0.5", "\"--discover\",\"modern\"");
        start(NULL);
        wait_all_ready(1);
        x = cl_open_with(CAPS_ALL);
        h_client_tool_request(x, "1", "m__ask", "{" ELICIT "}");
        rq = take_request(x, "elicitation/create");
        r = h_client_answer(x, "1");
        cr_assert(strstr(h_str(r, "error.message") ?: "", "requestTimeout"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_take(x, h_is_method, "notifications/cancelled", H_TIMEOUT_MS);
        cr_assert_not_null(r, "the client's request was not withdrawn");
        json_object_put(r);
        json_object_put(rq);
        h_client_tool_request(x, "2", "m__ask", "{" ELICIT "}");
        json_object_put(take_request(x, "elicitation/create"));
        h_client_close_freed(&D, x);
        x = cl_open();
        r = h_client_tool_call(x, "3", "m__echo", "{\"text\":\"served on\"}");
        cr_assert_str_eq(h_result_text(r), "served on", "%s", h_json_text(r));
        json_object_put(r);
        cr_expect_eq(h_log_count(&D, "m: requestState"), 0, "a call went back to the server");
        h_client_close(x);
}

/* ---- modern clients ---- */

static char *ask_line(int id, const char *arguments, const char *more) {
        char *line;

        cr_assert(asprintf(&line,
                           "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"m__ask\","
                           "\"arguments\":{%s}%s%s,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                           "\"io.modelcontextprotocol/clientCapabilities\":" CAPS_ALL ","
                           "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"inputs-it\",\"version\":\"1\"}}}}\n",
                           id, arguments, more[0] ? "," : "", more) > 0);
        return line;
}

static json_object *ask(struct h_conn *c, int id, const char *arguments, const char *more) {
        _cleanup_free_ char *line = ask_line(id, arguments, more);

        return h_call(c, line);
}

static char *retry_members(const char *responses, const char *state) {
        char *more;

        cr_assert(asprintf(&more, "\"inputResponses\":{%s},\"requestState\":\"%s\"", responses, state) > 0);
        return more;
}

/* The sealed requestState of input_required r, asserting the server's keys came through. */
static const char *sealed_state(json_object *r, const char *key) {
        const char *state = h_str(r, "result.requestState");

        cr_assert_str_eq(h_str(r, "result.resultType") ?: "(none)", "input_required", "%s", h_json_text(r));
        cr_assert_not_null(h_get(h_get(r, "result.inputRequests"), key), "no %s: %s", key, h_json_text(r));
        cr_assert_not_null(state, "%s", h_json_text(r));
        cr_assert_null(strstr(state, "round"), "the server's own state reached the client: %s", state);
        return state;
}

static const char *text_of(json_object *r) {
        return h_str(r, "result.content.0.text") ?: "";
}

Test(modern_inputs, modern_client_gets_the_state_sealed_over_two_rounds) {
        struct h_conn *c;
        json_object *r1, *r2, *done;

        start_modern("");
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r1 = ask(c, 1, ELICIT ",\"then\":[" SAMPLE "]", "");
        _cleanup_free_ char *first = retry_members("\"r0-0\":" ACCEPT("bob"), sealed_state(r1, "r0-0"));
        r2 = ask(c, 2, ELICIT ",\"then\":[" SAMPLE "]", first);
        cr_assert_str_eq(h_str(r2, "id") ?: "?", "2");
        _cleanup_free_ char *second = retry_members("\"r1-0\":" PARIS, sealed_state(r2, "r1-0"));
        cr_assert(h_log_wait(&D, "m: requestState {\"round\":1,", H_TIMEOUT_MS), "the server had its own state back");
        done = ask(c, 3, ELICIT ",\"then\":[" SAMPLE "]", second);
        cr_assert_str_eq(h_str(done, "id") ?: "?", "3", "%s", h_json_text(done));
        cr_assert(strstr(text_of(done), "bob") && strstr(text_of(done), "Paris"), "%s", h_json_text(done));
        json_object_put(done);
        json_object_put(r1);
        json_object_put(r2);
        h_close(c);
}

static void expect_refused(json_object *r, const char *why) {
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        cr_assert(strstr(h_str(r, "error.message") ?: "", why), "%s: %s", why, h_json_text(r));
        json_object_put(r);
}

Test(modern_inputs, modern_client_forged_altered_foreign_expired) {
        struct h_conn *c, *other;
        json_object *r, *done;

        /* an expiry in whole seconds: a state lives 2 to 3 s */
        start_modern("\"socketMode\":\"0666\",\"mrtrTimeout\":3");
        cr_assert_eq(chmod(D.dir, 0711), 0);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = ask(c, 1, ELICIT, "");
        const char *state = sealed_state(r, "r0-0");
        _cleanup_free_ char *altered = strdup(state);
        altered[strlen(altered) / 2] = altered[strlen(altered) / 2] == 'A' ? 'B' : 'A';
        /* the server's own state, as a client would forge it */
        _cleanup_free_ char *forged = retry_members("\"r0-0\":" ACCEPT("eve"), "{\\\"round\\\":1,\\\"answers\\\":[]}");
        expect_refused(ask(c, 2, ELICIT, forged), "forged");
        _cleanup_free_ char *tampered = retry_members("\"r0-0\":" ACCEPT("eve"), altered);
        expect_refused(ask(c, 3, ELICIT, tampered), "forged or altered");
        _cleanup_free_ char *valid = retry_members("\"r0-0\":" ACCEPT("eve"), state);
        expect_refused(ask(c, 4, "\"method\":\"elicitation/create\",\"params\":{\"message\":\"other\"}", valid),
                       "another request");
        other = h_connect_as(D.sock, OTHER_UID, OTHER_UID, NULL, 0, "agent");
        cr_assert_not_null(other);
        expect_refused(ask(other, 5, ELICIT, valid), "another principal");
        h_close(other);
        cr_expect_eq(h_log_count(&D, "m: requestState"), 0, "a refused state reached the server");
        /* the client's own retry goes through, and may be repeated: the server's state is
         * the server's to spend once */
        done = ask(c, 6, ELICIT, valid);
        cr_assert(strstr(text_of(done), "eve"), "%s", h_json_text(done));
        json_object_put(done);
        /* past mrtrTimeout: expired */
        for (long long until = h_now_ms() + 3100; h_now_ms() < until;)
                h_notify_drain(&D);
        expect_refused(ask(c, 7, ELICIT, valid), "expired");
        cr_expect_eq(h_log_count(&D, "m: requestState"), 1);
        json_object_put(r);
        h_close(c);
}

/* A modern client that did not declare the capability an input request needs. */
Test(modern_inputs, modern_client_without_the_capability) {
        struct h_conn *c;
        json_object *r;

        start_modern("");
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"m__ask\",\"arguments\":{"
                      ELICIT "},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                      "\"io.modelcontextprotocol/clientCapabilities\":{\"sampling\":{}}}}}\n");
        cr_assert_eq(h_error_code(r), -32021, "%s", h_json_text(r));
        cr_assert_not_null(h_get(r, "error.data.requiredCapabilities.elicitation"), "%s", h_json_text(r));
        json_object_put(r);
        h_close(c);
}
