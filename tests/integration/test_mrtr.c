/* Legacy servers behind modern clients (MCP 2026-07-28 multi round-trip requests): the demo
 * server's elicitation, sampling and roots requests during a modern client's tools/call
 * become an input_required result, and the retry's inputResponses answer them; one round,
 * two requests in one round, two rounds, over the socket and over HTTP; each way a
 * requestState is refused (forged, altered, another request's, another user's, used
 * already); a round never retried cleaned up after mrtrTimeout. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "servers.h"

/* Integration tests see the daemon from outside: its headers are not theirs. */
static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

#define OTHER_UID 4242
#define TOKEN "it-token-0123456789abcdef0123456789"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define CAPS_ALL "{\"elicitation\":{},\"sampling\":{},\"roots\":{}}"
#define OFFERED "\"clientCapabilities\":[\"elicitation\",\"sampling\",\"roots\"]"
#define ELICIT "\"method\":\"elicitation/create\",\"params\":{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"," \
               "\"properties\":{\"name\":{\"type\":\"string\"}}}}"
#define SAMPLE "{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":" \
               "\"text\",\"text\":\"capital of France?\"}}],\"maxTokens\":10}}"
#define ROOTS "{\"method\":\"roots/list\"}"

static struct h_daemon D;
static char creds[64];
static unsigned port;

static void setup(void) {
        servers_reset(&D);
        creds[0] = '\0';
        port = 0;
}

static void teardown(void) {
        servers_teardown();
        if (creds[0])
                h_remove_tree(creds);
}

TestSuite(mrtr, .init = setup, .fini = teardown, .timeout = 120);

static void start_demo(const char *settings) {
        add_demo("demo", OFFERED, "");
        set_settings(settings);
        start(NULL);
        wait_all_ready(1);
}

/* A modern tools/call of demo__ask, id, with arguments members and the client's caps; more
 * params members (inputResponses, requestState) after, may be "". */
static char *ask_line(int id, const char *arguments, const char *caps, const char *more) {
        char *line;

        cr_assert(asprintf(&line,
                           "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__ask\","
                           "\"arguments\":{%s}%s%s,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                           "\"io.modelcontextprotocol/clientCapabilities\":%s,"
                           "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"mrtr-it\",\"version\":\"1\"}}}}\n",
                           id, arguments, more[0] ? "," : "", more, caps) > 0);
        return line;
}

static json_object *ask(struct h_conn *c, int id, const char *arguments, const char *caps, const char *more) {
        _cleanup_free_ char *line = ask_line(id, arguments, caps, more);

        return h_call(c, line);
}

/* The inputRequests of an input_required result r, asserted. */
static json_object *input_requests(json_object *r) {
        cr_assert_str_eq(h_str(r, "result.resultType") ?: "(none)", "input_required", "%s", h_json_text(r));
        cr_assert_not_null(h_str(r, "result.requestState"), "%s", h_json_text(r));
        return h_get(r, "result.inputRequests");
}

/* The one key of inputRequests whose method is method. */
static const char *key_of(json_object *requests, const char *method) {
        json_object_object_foreach(requests, key, v)
                if (strcmp(h_str(v, "method") ?: "", method) == 0)
                        return key;
        cr_assert_fail("no %s in %s", method, h_json_text(requests));
        return NULL;
}

/* The retry's members: inputResponses (the text of its object's members) and the state. */
static char *retry_members(const char *responses, const char *state) {
        char *more;

        cr_assert(asprintf(&more, "\"inputResponses\":{%s},\"requestState\":\"%s\"", responses, state) > 0);
        return more;
}

static const char *text_of(json_object *r) {
        json_object *content = h_get(r, "result.content");

        cr_assert_not_null(content, "%s", h_json_text(r));
        return h_str(json_object_array_get_idx(content, 0), "text") ?: "";
}

Test(mrtr, one_round_on_the_socket) {
        struct h_conn *m;
        json_object *r, *requests;

        start_demo("");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        r = ask(m, 1, ELICIT, CAPS_ALL, "");
        cr_assert_str_eq(h_str(r, "id") ?: "?", "1");
        requests = input_requests(r);
        cr_assert_eq(json_object_object_length(requests), 1, "%s", h_json_text(r));
        const char *key = key_of(requests, "elicitation/create");
        cr_assert_str_eq(h_str(json_object_object_get(requests, key), "params.message") ?: "", "name?");
        _cleanup_free_ char *more = retry_members(sf("\"%s\":{\"action\":\"accept\",\"content\":{\"name\":\"octocat\"}}", key),
                                                  h_str(r, "result.requestState"));
        json_object *done = ask(m, 2, ELICIT, CAPS_ALL, more);
        cr_assert_str_eq(h_str(done, "id") ?: "?", "2", "%s", h_json_text(done));
        cr_assert_str_eq(h_str(done, "result.resultType") ?: "?", "complete", "%s", h_json_text(done));
        cr_assert(strstr(text_of(done), "octocat"), "the server got the answer: %s", h_json_text(done));
        cr_assert(h_log_wait(&D, "answer to ask-1: {\"jsonrpc\":\"2.0\",\"id\":\"ask-1\",\"result\":{\"action\":\"accept\"",
                             H_TIMEOUT_MS));
        json_object_put(done);
        /* the same state again: the round was used */
        done = ask(m, 3, ELICIT, CAPS_ALL, more);
        cr_assert_eq(h_error_code(done), -32602, "%s", h_json_text(done));
        cr_assert(strstr(h_str(done, "error.message") ?: "", "retried already"), "%s", h_json_text(done));
        json_object_put(done);
        json_object_put(r);
        h_close(m);
}

Test(mrtr, two_requests_in_one_round) {
        struct h_conn *m;
        json_object *r, *requests, *done;

        start_demo("");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        r = ask(m, 1, ELICIT ",\"also\":[" ROOTS "," SAMPLE "]", CAPS_ALL, "");
        requests = input_requests(r);
        cr_assert_eq(json_object_object_length(requests), 3, "one round: %s", h_json_text(r));
        _cleanup_free_ char *responses = NULL;
        cr_assert(asprintf(&responses,
                           "\"%s\":{\"action\":\"accept\",\"content\":{\"name\":\"ada\"}},"
                           "\"%s\":{\"roots\":[{\"uri\":\"file:///work\",\"name\":\"work\"}]},"
                           "\"%s\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"Paris\"},\"model\":\"m\"}",
                           key_of(requests, "elicitation/create"), key_of(requests, "roots/list"),
                           key_of(requests, "sampling/createMessage")) > 0);
        _cleanup_free_ char *more = retry_members(responses, h_str(r, "result.requestState"));
        done = ask(m, 2, ELICIT ",\"also\":[" ROOTS "," SAMPLE "]", CAPS_ALL, more);
        cr_assert_str_eq(h_str(done, "result.resultType") ?: "?", "complete", "%s", h_json_text(done));
        cr_assert(strstr(text_of(done), "ada") && strstr(text_of(done), "\"name\":\"work\"") && strstr(text_of(done), "Paris"),
                  "%s", h_json_text(done));
        json_object_put(done);
        json_object_put(r);
        h_close(m);
}

/* A response left out is asked again (the specification's way), in a round of its own. */
Test(mrtr, two_rounds_and_a_missing_response) {
        struct h_conn *m;
        json_object *r1, *r2, *r3, *done;

        start_demo("");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        r1 = ask(m, 1, ELICIT ",\"then\":[" SAMPLE "]", CAPS_ALL, "");
        const char *k1 = key_of(input_requests(r1), "elicitation/create");
        /* the retry without the response: asked again */
        _cleanup_free_ char *none = retry_members("\"unknown\":{}", h_str(r1, "result.requestState"));
        r2 = ask(m, 2, ELICIT ",\"then\":[" SAMPLE "]", CAPS_ALL, none);
        cr_assert_str_eq(key_of(input_requests(r2), "elicitation/create"), k1, "%s", h_json_text(r2));
        cr_assert_str_neq(h_str(r2, "result.requestState"), h_str(r1, "result.requestState"));
        _cleanup_free_ char *first = retry_members(sf("\"%s\":{\"action\":\"accept\",\"content\":{\"name\":\"bob\"}}", k1),
                                                   h_str(r2, "result.requestState"));
        r3 = ask(m, 3, ELICIT ",\"then\":[" SAMPLE "]", CAPS_ALL, first);
        cr_assert_str_eq(h_str(r3, "id") ?: "?", "3");
        const char *k2 = key_of(input_requests(r3), "sampling/createMessage");
        _cleanup_free_ char *second = retry_members(
                sf("\"%s\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"Paris\"},\"model\":\"m\"}", k2),
                h_str(r3, "result.requestState"));
        done = ask(m, 4, ELICIT ",\"then\":[" SAMPLE "]", CAPS_ALL, second);
        cr_assert_str_eq(h_str(done, "id") ?: "?", "4", "%s", h_json_text(done));
        cr_assert(strstr(text_of(done), "bob") && strstr(text_of(done), "Paris"), "%s", h_json_text(done));
        json_object_put(done);
        /* the first round's state is spent */
        _cleanup_free_ char *old = retry_members(sf("\"%s\":{\"action\":\"accept\"}", k1), h_str(r1, "result.requestState"));
        done = ask(m, 5, ELICIT ",\"then\":[" SAMPLE "]", CAPS_ALL, old);
        cr_assert_eq(h_error_code(done), -32602, "%s", h_json_text(done));
        json_object_put(done);
        json_object_put(r1);
        json_object_put(r2);
        json_object_put(r3);
        h_close(m);
}

static void expect_refused(json_object *r, const char *why) {
        cr_assert_eq(h_error_code(r), -32602, "%s", h_json_text(r));
        cr_assert(strstr(h_str(r, "error.message") ?: "", why), "%s: %s", why, h_json_text(r));
        json_object_put(r);
}

Test(mrtr, forged_altered_foreign_and_other_request_states) {
        struct h_conn *m, *other;
        json_object *r, *done;

        start_demo("\"socketMode\":\"0666\"");
        cr_assert_eq(chmod(D.dir, 0711), 0);
        m = h_connect(D.sock, H_TIMEOUT_MS);
        r = ask(m, 1, ELICIT, CAPS_ALL, "");
        const char *key = key_of(input_requests(r), "elicitation/create");
        const char *state = h_str(r, "result.requestState");
        _cleanup_free_ char *answer = strdup(sf("\"%s\":{\"action\":\"accept\",\"content\":{\"name\":\"eve\"}}", key));
        _cleanup_free_ char *altered = strdup(state);

        altered[strlen(altered) / 2] = altered[strlen(altered) / 2] == 'A' ? 'B' : 'A';
        _cleanup_free_ char *forged = retry_members(answer, "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0");
        expect_refused(ask(m, 2, ELICIT, CAPS_ALL, forged), "forged");
        _cleanup_free_ char *tampered = retry_members(answer, altered);
        expect_refused(ask(m, 3, ELICIT, CAPS_ALL, tampered), "forged or altered");
        _cleanup_free_ char *suffixed = NULL;
        cr_assert(asprintf(&suffixed, "%s-TAMPERED", state) > 0);
        _cleanup_free_ char *tampered2 = retry_members(answer, suffixed);
        expect_refused(ask(m, 4, ELICIT, CAPS_ALL, tampered2), "forged");
        _cleanup_free_ char *valid = retry_members(answer, state);
        /* the same state with other arguments: another request */
        expect_refused(ask(m, 5, "\"method\":\"elicitation/create\",\"params\":{\"message\":\"other\"}", CAPS_ALL, valid),
                       "another request");
        /* another user presenting it */
        other = h_connect_as(D.sock, OTHER_UID, OTHER_UID, NULL, 0, "agent");
        cr_assert_not_null(other);
        expect_refused(ask(other, 6, ELICIT, CAPS_ALL, valid), "another principal");
        h_close(other);
        /* none of that touched the round: the client's own retry goes through */
        done = ask(m, 7, ELICIT, CAPS_ALL, valid);
        cr_assert(strstr(text_of(done), "eve"), "%s", h_json_text(done));
        json_object_put(done);
        json_object_put(r);
        h_close(m);
}

/* A call parked for its retry goes on at the server, which may ask more for it meanwhile
 * (here 1.5 s after the call): while it is another user's (uid 4242's), such a request
 * cannot be told from one of this user's live call, which may not receive the other user's
 * text: the server is refused, and this user's client is asked nothing. */
Test(mrtr, another_users_parked_call_keeps_its_requests) {
        struct h_conn *other;
        struct h_client *x;
        json_object *r, *answer, *msg;

        start_demo("\"socketMode\":\"0666\"");
        cr_assert_eq(chmod(D.dir, 0711), 0);
        other = h_connect_as(D.sock, OTHER_UID, OTHER_UID, NULL, 0, "agent");
        cr_assert_not_null(other);
        r = ask(other, 1, ELICIT ",\"also\":[{\"method\":\"roots/list\",\"afterMs\":1500}]", CAPS_ALL, "");
        cr_assert_eq(json_object_object_length(input_requests(r)), 1, "%s", h_json_text(r));
        json_object_put(r);

        x = cl_open_with(CAPS_ALL);
        h_client_request(x, "\"s\"", "tools/call",
                         "{\"name\":\"demo__sleep\",\"arguments\":{\"ms\":20000},\"_meta\":{\"progressToken\":\"zz\"}}");
        msg = h_take(x, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(msg, "no progress: the sleep is not running");
        json_object_put(msg);

        _cleanup_free_ char *rest = h_log_rest_wait(&D, "demo: answer to ask-2: ", H_TIMEOUT_MS);
        cr_assert_not_null(rest, "the server's late request was not answered");
        answer = json_tokener_parse(rest);
        cr_assert_eq(h_error_code(answer), -32603, "%s", rest);
        cr_assert(strstr(h_str(answer, "error.message") ?: "", "another user's was cancelled, or waits for its client's "
                                                               "input"), "%s", rest);
        json_object_put(answer);
        r = h_client_call(x, "\"flush\"", "ping", NULL);
        json_object_put(r);
        msg = h_take(x, h_is_method, "roots/list", 0);
        cr_assert_null(msg, "this user's client was asked another user's request: %s", msg ? h_json_text(msg) : "");
        h_client_close(x);
        h_close(other);
}

/* A round nobody retries: after mrtrTimeout the server's request is answered with an error
 * and the call cancelled at the server; nothing is left in flight. */
Test(mrtr, never_retried_is_cleaned_up) {
        struct h_conn *m;
        json_object *r;

        start_demo("\"mrtrTimeout\":0.5");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        r = ask(m, 1, ELICIT, CAPS_ALL, "");
        input_requests(r);
        h_close(m);
        cr_assert(h_log_wait(&D, "was not retried within mrtrTimeout", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "cancelled request", H_TIMEOUT_MS), "the call cancelled at the server");
        cr_assert(h_log_wait(&D, "\"id\":\"ask-1\",\"error\":{\"code\":-32603,\"message\":\"the client did not retry "
                                 "the request within mrtrTimeout", H_TIMEOUT_MS), "the server's request answered");
        /* the retry, too late */
        m = h_connect(D.sock, H_TIMEOUT_MS);
        _cleanup_free_ char *late = retry_members("\"input-1\":{\"action\":\"decline\"}", h_str(r, "result.requestState"));
        json_object *done = ask(m, 2, ELICIT, CAPS_ALL, late);
        cr_assert_eq(h_error_code(done), -32602, "%s", h_json_text(done));
        json_object_put(done);
        /* the server forgot its request with the call, and serves on */
        cr_assert(h_log_wait(&D, ", forgetting ask-1", H_TIMEOUT_MS));
        done = h_call(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                         "\"arguments\":{\"text\":\"still here\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                         "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n");
        cr_assert(strstr(text_of(done), "still here"), "%s", h_json_text(done));
        json_object_put(done);
        json_object_put(r);
        h_close(m);
}

/* mrtrSettle: the round is answered once the server has been quiet that long after its last
 * request, never sooner. */
Test(mrtr, settle_window_is_a_setting) {
        struct h_conn *m;
        json_object *r;
        long long t0, ms;

        start_demo("\"mrtrSettle\":0.6");
        m = h_connect(D.sock, H_TIMEOUT_MS);
        t0 = h_now_ms();
        r = ask(m, 1, ELICIT ",\"also\":[" ROOTS "]", CAPS_ALL, "");
        ms = h_now_ms() - t0;
        cr_assert_eq(json_object_object_length(input_requests(r)), 2, "one round: %s", h_json_text(r));
        /* libevent's timers run on CLOCK_MONOTONIC_COARSE, a tick behind this clock: a margin */
        cr_assert_geq(ms, 550, "answered after %lld ms, before mrtrSettle", ms);
        json_object_put(r);
        h_close(m);
}

/* Each request its own HTTP connection: the round outlives the request that opened it. */
Test(mrtr, over_http_statelessly) {
        struct ht_answer a;
        const char *env[2];
        FILE *f;

        snprintf(creds, sizeof creds, "/tmp/mcpvisor-mrtr-XXXXXX");
        cr_assert_not_null(mkdtemp(creds));
        cr_assert_not_null(f = fopen(sf("%s/ci-token", creds), "w"));
        fputs(TOKEN "\n", f);
        fclose(f);
        port = ht_free_port();
        env[0] = sf("CREDENTIALS_DIRECTORY=%s", creds);
        env[1] = NULL;
        add_demo("demo", OFFERED, "");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":[{\"token\":{\"credential\":\"ci-token\"},"
                        "\"user\":%u}]}",
                        port, (unsigned)getuid()));
        start(env);
        wait_all_ready(1);
        cr_assert(ht_wait_listening(port, H_TIMEOUT_MS));

        _cleanup_free_ char *first = ask_line(1, ELICIT, CAPS_ALL, "");
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                "Mcp-Name: demo__ask\r\n", first, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        const char *body = strstr(a.body, "{");
        json_object *r = json_tokener_parse(body);
        cr_assert_not_null(r, "%s", a.body);
        ht_answer_done(&a);
        const char *key = key_of(input_requests(r), "elicitation/create");
        _cleanup_free_ char *more = retry_members(sf("\"%s\":{\"action\":\"accept\",\"content\":{\"name\":\"http-user\"}}", key),
                                                  h_str(r, "result.requestState"));
        _cleanup_free_ char *retry = ask_line(2, ELICIT, CAPS_ALL, more);
        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                "Mcp-Name: demo__ask\r\n", retry, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert(strstr(a.body, "http-user"), "%s", a.body);
        cr_assert(strstr(a.body, "\"id\":2"), "%s", a.body);
        ht_answer_done(&a);
        /* without the token: another principal */
        ht_once(port, "POST", "/mcp", JSON_HEADERS "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                "Mcp-Name: demo__ask\r\n", retry, &a);
        cr_assert(a.status == 401 || strstr(a.body, "-32602"), "%d %s", a.status, a.body);
        ht_answer_done(&a);
        json_object_put(r);
}
