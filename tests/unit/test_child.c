/* Unit tests for server-conn.c: the JSON-RPC connection to a server, here over the pipe
 * transport (transport-pipe.c) on its stdin and stdout. The test plays the server on the
 * other ends of the two pipes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server-conn.h"
#include "server-config.h"
#include "fake-server.h"
#include "jsonrpc.h"
#include "log.h"
#include "time-util.h"
#include "unit-helpers.h"

#define MAX_LINE 1024

static struct logger lg;
static struct jsonrpc_parser parser;
static struct child *ch;

/* What the callbacks saw, in order. */
static unsigned seq;
struct reply {
        unsigned calls, order;
        int status;
        char result[512], error[512]; /* JSON text, "" when absent */
        int64_t send_again;           /* set by reply_and_request: the id it got */
};
static struct reply replies[8];
static struct {
        unsigned calls, order;
        bool violation;
        char why[256];
} broken;
static struct {
        unsigned calls;
        enum jsonrpc_kind kind[8];
        char method[8][64];
        char id[8][64];
} messages;

static void on_message(struct child *c, struct jsonrpc_msg *m, void *userdata) {
        unsigned i = messages.calls++;

        cr_assert_eq(c, ch);
        cr_assert_eq(userdata, &messages);
        if (i < 8) {
                messages.kind[i] = m->kind;
                snprintf(messages.method[i], sizeof messages.method[i], "%s", m->method ? m->method : "");
                snprintf(messages.id[i], sizeof messages.id[i], "%s", m->id ? json_object_to_json_string(m->id) : "");
        }
}

static void on_broken(struct child *c, const char *why, bool violation, void *userdata) {
        cr_assert_eq(c, ch);
        broken.calls++;
        broken.violation = violation;
        broken.order = ++seq;
        snprintf(broken.why, sizeof broken.why, "%s", why);
}

static const struct child_ops ops = { .message = on_message, .broken = on_broken };

static void record(struct reply *r, int status, json_object *result, json_object *error) {
        r->calls++;
        r->order = ++seq;
        r->status = status;
        snprintf(r->result, sizeof r->result, "%s",
                 result ? json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN) : "");
        snprintf(r->error, sizeof r->error, "%s",
                 error ? json_object_to_json_string_ext(error, JSON_C_TO_STRING_PLAIN) : "");
}

static void on_reply(struct child *c, int status, json_object *result, json_object *error, void *userdata) {
        record(userdata, status, result, error);
}

static void setup(void) {
        log_capture_start();
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
        ch = server_connect(&lg, &parser, MAX_LINE, &ops, &messages);
}

static void teardown(void) {
        child_free(ch);
        ch = NULL;
        server_stop();
        jsonrpc_parser_done(&parser);
        log_capture_stop();
}

TestSuite(child, .init = setup, .fini = teardown);

static int64_t id_field(json_object *m) {
        json_object *v;

        cr_assert(json_object_object_get_ex(m, "id", &v), "no id in %s", json_object_to_json_string(m));
        cr_assert(json_object_is_type(v, json_type_int), "id not an integer: %s", json_object_to_json_string(m));
        return json_object_get_int64(v);
}

/* Reads a request for method; returns its id. */
static int64_t server_expects_request(const char *method) {
        json_object *m = server_reads();
        int64_t id;

        cr_assert_str_eq(str_field(m, "jsonrpc"), "2.0");
        cr_assert_str_eq(str_field(m, "method"), method);
        id = id_field(m);
        json_object_put(m);
        return id;
}

static int64_t request(const char *method, uint64_t timeout_usec, struct reply *r) {
        int64_t id = child_request(ch, method, NULL, timeout_usec, on_reply, r);

        cr_assert_gt(id, 0, "child_request: %lld", (long long)id);
        return id;
}

Test(child, request_written_as_a_line) {
        json_object *params = json_object_new_object(), *m, *p, *c;

        json_object_object_add(params, "cursor", json_object_new_string("c1"));
        cr_assert_eq(child_request(ch, "tools/list", params, 0, on_reply, &replies[0]), 1);
        cr_assert_eq(child_request(ch, "ping", NULL, 0, on_reply, &replies[1]), 2);
        cr_assert_eq(ch->n_pending, 2);

        m = server_reads();
        cr_assert_str_eq(str_field(m, "jsonrpc"), "2.0");
        cr_assert_str_eq(str_field(m, "method"), "tools/list");
        cr_assert_eq(id_field(m), 1);
        cr_assert(json_object_object_get_ex(m, "params", &p));
        cr_assert(json_object_object_get_ex(p, "cursor", &c));
        cr_assert_str_eq(json_object_get_string(c), "c1");
        json_object_put(m);

        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "ping");
        cr_assert_eq(id_field(m), 2);
        cr_assert_not(json_object_object_get_ex(m, "params", NULL), "no params sent when none given");
        json_object_put(m);
        cr_assert_eq(replies[0].calls + replies[1].calls, 0);
}

/* A modern server's connection: every request carries the connection's meta in its
 * params._meta, over the request's own members (a progressToken kept, a member of the
 * same name ours), and the caller's params, which may be a client's request shared
 * elsewhere, are left as they were. Notifications go as they are. */
Test(child, meta_merged_into_every_request) {
        json_object *meta = json_object_new_object(), *params, *own, *m, *p, *mm, *v;
        const char *before;

        json_object_object_add(meta, "io.modelcontextprotocol/protocolVersion", json_object_new_string("2026-07-28"));
        child_set_meta(ch, meta);
        params = json_tokener_parse("{\"name\":\"echo\",\"arguments\":{\"a\":1},\"_meta\":{\"progressToken\":7,"
                                    "\"io.modelcontextprotocol/protocolVersion\":\"1999-01-01\"}}");
        before = strdup(json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN));
        own = json_object_get(params); /* the caller's reference: shared */
        cr_assert_gt(child_request(ch, "tools/call", params, 0, on_reply, &replies[0]), 0);
        cr_assert_str_eq(json_object_to_json_string_ext(own, JSON_C_TO_STRING_PLAIN), before, "the caller's params changed");
        json_object_put(own);
        free((void *)before);
        cr_assert_gt(child_request(ch, "tools/list", NULL, 0, on_reply, &replies[1]), 0);
        cr_assert_eq(child_notify(ch, "notifications/cancelled", NULL), 0);

        m = server_reads();
        cr_assert(json_object_object_get_ex(m, "params", &p) && json_object_object_get_ex(p, "_meta", &mm));
        cr_assert_str_eq(str_field(p, "name"), "echo");
        cr_assert(json_object_object_get_ex(p, "arguments", NULL));
        cr_assert(json_object_object_get_ex(mm, "progressToken", &v) && json_object_get_int(v) == 7);
        cr_assert_str_eq(str_field(mm, "io.modelcontextprotocol/protocolVersion"), "2026-07-28");
        json_object_put(m);
        m = server_reads();
        cr_assert(json_object_object_get_ex(m, "params", &p) && json_object_object_get_ex(p, "_meta", &mm),
                  "absent params get a _meta: %s", json_object_to_json_string(m));
        cr_assert_str_eq(str_field(mm, "io.modelcontextprotocol/protocolVersion"), "2026-07-28");
        json_object_put(m);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "notifications/cancelled");
        cr_assert_not(json_object_object_get_ex(m, "params", NULL), "a notification goes as it is");
        json_object_put(m);

        child_set_meta(ch, NULL);
        cr_assert_gt(child_request(ch, "ping", NULL, 0, on_reply, &replies[2]), 0);
        m = server_reads();
        cr_assert_not(json_object_object_get_ex(m, "params", NULL), "no meta once it is taken away");
        json_object_put(m);
}

/* A legacy server's connection (no meta): a request forwarded from a modern client goes
 * without the modern era's per-request members of _meta, the client's own kept (another
 * io.modelcontextprotocol/ member too: the legacy era has some), a _meta left empty gone;
 * the caller's params, shared, left as they were; params without them go unchanged. */
Test(child, legacy_server_gets_no_modern_members) {
        json_object *params, *own, *m, *p, *mm;
        const char *before;

        params = json_tokener_parse("{\"name\":\"echo\",\"_meta\":{\"progressToken\":7,"
                                    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                    "\"io.modelcontextprotocol/clientCapabilities\":{},"
                                    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"a\",\"version\":\"1\"},"
                                    "\"io.modelcontextprotocol/logLevel\":\"debug\","
                                    "\"io.modelcontextprotocol/related-task\":{\"taskId\":\"t\"}}}");
        before = strdup(json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN));
        own = json_object_get(params);
        cr_assert_gt(child_forward(ch, "tools/call", params, 0, on_reply, NULL, &replies[0]), 0);
        cr_assert_str_eq(json_object_to_json_string_ext(own, JSON_C_TO_STRING_PLAIN), before, "the caller's params changed");
        json_object_put(own);
        free((void *)before);
        m = server_reads();
        cr_assert(json_object_object_get_ex(m, "params", &p) && json_object_object_get_ex(p, "_meta", &mm));
        cr_assert_str_eq(str_field(p, "name"), "echo");
        cr_assert_str_eq(json_object_to_json_string_ext(mm, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                         "{\"progressToken\":7,\"io.modelcontextprotocol/related-task\":{\"taskId\":\"t\"}}");
        json_object_put(m);

        params = json_tokener_parse("{\"name\":\"echo\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}");
        cr_assert_gt(child_request(ch, "tools/call", params, 0, on_reply, &replies[1]), 0);
        m = server_reads();
        cr_assert(json_object_object_get_ex(m, "params", &p));
        cr_assert_not(json_object_object_get_ex(p, "_meta", NULL), "an empty _meta is left out: %s",
                      json_object_to_json_string(m));
        json_object_put(m);

        params = json_tokener_parse("{\"name\":\"echo\",\"_meta\":{\"progressToken\":\"x\"}}");
        own = json_object_get(params);
        cr_assert_gt(child_request(ch, "tools/call", params, 0, on_reply, &replies[2]), 0);
        m = server_reads();
        cr_assert(json_object_object_get_ex(m, "params", &p));
        cr_assert_str_eq(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
                         json_object_to_json_string_ext(own, JSON_C_TO_STRING_PLAIN));
        json_object_put(own);
        json_object_put(m);
}

/* A modern server's connection: a forwarded request's meta offers the client capabilities
 * of the connection's that the caller can answer (caps), the daemon's own requests all. */
Test(child, forwarded_request_offers_the_callers_capabilities) {
        json_object *meta = json_tokener_parse("{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                               "\"io.modelcontextprotocol/clientCapabilities\":{\"roots\":{\"listChanged\":true},"
                                               "\"sampling\":{},\"elicitation\":{}}}");
        json_object *m, *caps;

        child_set_meta(ch, meta);
        cr_assert_gt(child_forward(ch, "tools/call", NULL, 1u << CLIENT_CAP_ELICITATION, on_reply, NULL, &replies[0]), 0);
        cr_assert_gt(child_forward(ch, "tools/call", NULL, 0, on_reply, NULL, &replies[1]), 0);
        cr_assert_gt(child_request(ch, "tools/list", NULL, 0, on_reply, &replies[2]), 0);
        m = server_reads();
        caps = json_object_object_get(json_object_object_get(json_object_object_get(m, "params"), "_meta"),
                                      "io.modelcontextprotocol/clientCapabilities");
        cr_assert_str_eq(json_object_to_json_string_ext(caps, JSON_C_TO_STRING_PLAIN), "{\"elicitation\":{}}");
        json_object_put(m);
        m = server_reads();
        caps = json_object_object_get(json_object_object_get(json_object_object_get(m, "params"), "_meta"),
                                      "io.modelcontextprotocol/clientCapabilities");
        cr_assert_str_eq(json_object_to_json_string_ext(caps, JSON_C_TO_STRING_PLAIN), "{}");
        json_object_put(m);
        m = server_reads();
        caps = json_object_object_get(json_object_object_get(json_object_object_get(m, "params"), "_meta"),
                                      "io.modelcontextprotocol/clientCapabilities");
        cr_assert_str_eq(json_object_to_json_string_ext(caps, JSON_C_TO_STRING_PLAIN),
                         "{\"roots\":{\"listChanged\":true},\"sampling\":{},\"elicitation\":{}}");
        json_object_put(m);
}

Test(child, notification_written) {
        json_object *params = json_object_new_object(), *m;

        json_object_object_add(params, "requestId", json_object_new_int(3));
        cr_assert_eq(child_notify(ch, "notifications/cancelled", params), 0);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "notifications/cancelled");
        cr_assert_not(json_object_object_get_ex(m, "id", NULL), "a notification has no id");
        json_object_put(m);
        cr_assert_eq(ch->n_pending, 0);
}

Test(child, send_as_is) {
        json_object *msg = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":{\"roots\":[]}}"), *m;

        cr_assert_eq(child_send(ch, msg), 0);
        m = server_reads();
        cr_assert_str_eq(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN),
                         "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":{\"roots\":[]}}");
        json_object_put(m);
}

Test(child, responses_matched_by_id) {
        int64_t a = request("tools/list", 0, &replies[0]);
        int64_t b = request("prompts/list", 0, &replies[1]);
        int64_t c = request("resources/list", 0, &replies[2]);

        cr_assert_neq(a, b);
        cr_assert_neq(b, c);
        /* Answered out of order, one of them with an error. */
        server_answers(b, "{\"prompts\":[]}");
        server_says("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,\"message\":\"nope\"}}\r\n");
        server_answers(a, "{\"tools\":[1]}");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_eq(replies[1].calls, 1);
        cr_assert_eq(replies[2].calls, 1);
        cr_assert_lt(replies[1].order, replies[2].order);
        cr_assert_lt(replies[2].order, replies[0].order);
        cr_assert_eq(replies[0].status, 0);
        cr_assert_str_eq(replies[0].result, "{\"tools\":[1]}");
        cr_assert_str_eq(replies[0].error, "");
        cr_assert_str_eq(replies[1].result, "{\"prompts\":[]}");
        cr_assert_eq(replies[2].status, 0, "a JSON-RPC error is an answer");
        cr_assert_str_eq(replies[2].result, "");
        cr_assert_str_eq(replies[2].error, "{\"code\":-32601,\"message\":\"nope\"}");
        cr_assert_eq(ch->n_pending, 0);
        cr_assert_eq(ch->garbage_lines, 0);
}

Test(child, response_to_unknown_id_dropped) {
        int64_t a = request("ping", 0, &replies[0]);

        server_answers(a + 98, "{}");
        server_says("{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}\n"); /* our ids are integers */
        server_answers(a, "{\"ok\":true}");
        server_answers(a, "{\"again\":true}"); /* a duplicate: no longer pending */
        int64_t b = request("ping", 0, &replies[1]);
        server_answers(b, "{}");
        WAIT_UNTIL(replies[1].calls == 1);
        cr_assert_eq(replies[0].calls, 1);
        cr_assert_str_eq(replies[0].result, "{\"ok\":true}");
        cr_assert_eq(ch->n_pending, 0);
        cr_assert_eq(ch->garbage_lines, 0, "a stale response is not garbage");
        const char *text = logged();
        cr_assert(strstr(text, "dropped a response to request 99"), "log: %s", text);
        cr_assert(strstr(text, "dropped a response to request \"1\""), "log: %s", text);
        cr_assert_eq(occurrences(text, "dropped a response"), 3, "log: %s", text);
}

Test(child, timeout) {
        int64_t a = request("slow", 20000, &replies[0]);

        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_eq(replies[0].status, -ETIMEDOUT);
        cr_assert_str_eq(replies[0].result, "");
        cr_assert_str_eq(replies[0].error, "");
        cr_assert_eq(ch->n_pending, 0);

        /* The late answer is dropped; the connection keeps working. */
        server_answers(a, "{}");
        int64_t b = request("ping", 0, &replies[1]);
        server_answers(b, "{}");
        WAIT_UNTIL(replies[1].calls == 1);
        cr_assert_eq(replies[0].calls, 1);
        cr_assert_eq(replies[1].status, 0);
}

Test(child, answered_in_time_no_timeout) {
        int64_t a = request("quick", 100000, &replies[0]);

        server_answers(a, "{}");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_eq(replies[0].status, 0);
        run_for(200000); /* past the timeout: the reply must not come again */
        cr_assert_eq(replies[0].calls, 1);
}

Test(child, timeouts_independent) {
        request("a", 20000, &replies[0]);
        request("b", 0, &replies[1]);
        request("c", 30000, &replies[2]);
        WAIT_UNTIL(replies[0].calls == 1 && replies[2].calls == 1);
        cr_assert_eq(replies[0].status, -ETIMEDOUT);
        cr_assert_eq(replies[2].status, -ETIMEDOUT);
        cr_assert_eq(replies[1].calls, 0, "no timeout set");
        cr_assert_eq(ch->n_pending, 1);
}

Test(child, cancel_request) {
        int64_t a = request("ping", 20000, &replies[0]);
        int64_t b = request("ping", 0, &replies[1]);

        child_cancel_request(ch, a);
        cr_assert_eq(ch->n_pending, 1);
        child_cancel_request(ch, 12345); /* unknown: nothing */
        cr_assert_eq(ch->n_pending, 1);
        server_answers(a, "{}");
        run_for(60000); /* past a's timeout */
        server_answers(b, "{}");
        WAIT_UNTIL(replies[1].calls == 1);
        cr_assert_eq(replies[0].calls, 0, "a cancelled request is never answered, not even by its timeout");
}

Test(child, free_fails_pending_with_econnreset) {
        request("a", 0, &replies[0]);
        request("b", 5 * USEC_PER_SEC, &replies[1]);
        child_free(ch);
        ch = NULL;
        cr_assert_eq(replies[0].calls, 1);
        cr_assert_eq(replies[1].calls, 1);
        cr_assert_eq(replies[0].status, -ECONNRESET);
        cr_assert_eq(replies[1].status, -ECONNRESET);
        cr_assert_lt(replies[0].order, replies[1].order);
        cr_assert_eq(broken.calls, 0, "freeing is not the server breaking");
}

static void reply_and_request(struct child *c, int status, json_object *result, json_object *error, void *userdata) {
        struct reply *r = userdata;

        record(r, status, result, error);
        r->send_again = child_request(c, "again", NULL, 0, on_reply, &replies[7]);
}

Test(child, free_with_reply_that_sends) {
        child_request(ch, "a", NULL, 0, reply_and_request, &replies[0]);
        child_free(ch);
        ch = NULL;
        cr_assert_eq(replies[0].calls, 1);
        cr_assert_eq(replies[0].status, -ECONNRESET);
        cr_assert_eq(replies[0].send_again, -EPIPE, "no new requests on a connection being freed");
        cr_assert_eq(replies[7].calls, 0);
}

Test(child, reply_may_send_next_request) {
        int64_t a = child_request(ch, "first", NULL, 0, reply_and_request, &replies[0]);

        cr_assert_eq(server_expects_request("first"), a);
        server_answers(a, "{}");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_gt(replies[0].send_again, a);
        cr_assert_eq(server_expects_request("again"), replies[0].send_again);
        server_answers(replies[0].send_again, "{\"n\":2}");
        WAIT_UNTIL(replies[7].calls == 1);
        cr_assert_str_eq(replies[7].result, "{\"n\":2}");
}

Test(child, broken_on_eof) {
        request("ping", 0, &replies[0]);
        server_closes_stdout();
        WAIT_UNTIL(broken.calls == 1);
        cr_assert_str_eq(broken.why, "closed its stdout");
        cr_assert(ch->broken);
        run_for(50000);
        cr_assert_eq(broken.calls, 1, "reported once");
        cr_assert_eq(replies[0].calls, 0, "pending requests wait for child_free");
        cr_assert_eq(child_notify(ch, "x", NULL), -EPIPE);
        cr_assert_lt(child_request(ch, "y", NULL, 0, on_reply, &replies[1]), 0);
        cr_assert_eq(ch->n_pending, 1);
        child_free(ch);
        ch = NULL;
        cr_assert_eq(replies[0].status, -ECONNRESET);
        cr_assert_eq(replies[1].calls, 0);
}

Test(child, unterminated_last_line_read_before_broken) {
        int64_t a = request("ping", 0, &replies[0]);
        char line[128];

        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"last\":1}}", (long long)a);
        server_says(line);
        server_closes_stdout();
        WAIT_UNTIL(broken.calls == 1);
        cr_assert_eq(replies[0].calls, 1);
        cr_assert_str_eq(replies[0].result, "{\"last\":1}");
        cr_assert_lt(replies[0].order, broken.order);
}

Test(child, broken_when_stdin_not_read) {
        server_stops_reading();
        cr_assert_eq(child_notify(ch, "notifications/initialized", NULL), 0);
        WAIT_UNTIL(broken.calls == 1);
        cr_assert_str_eq(broken.why, "stopped reading its stdin");
        cr_assert_eq(child_input_queued(ch), 0, "unsendable output dropped: %zu bytes left", child_input_queued(ch));
}

/* A notification of about 200 KiB: more than a pipe holds, so most of it is queued. */
static int notify_big(void) {
        static char text[200 * 1024];
        json_object *params = json_object_new_object();

        memset(text, 'x', sizeof text - 1);
        json_object_object_add(params, "t", json_object_new_string(text));
        return child_notify(ch, "big", params);
}

Test(child, input_limit_refuses_past_it) {
        child_limit_input(ch, 4096, 0);
        server_pauses_reading(true);
        cr_assert_eq(notify_big(), 0, "one message goes out whole when nothing is queued");
        cr_assert_gt(child_input_queued(ch), 4096);
        cr_assert_eq(child_notify(ch, "small", NULL), -ENOBUFS);
        cr_assert_eq(child_request(ch, "ping", NULL, 0, on_reply, &replies[0]), -ENOBUFS);
        cr_assert_eq(ch->n_pending, 0);
        cr_assert_eq(occurrences(logged(), "not reading its stdin: "), 1, "logged once a queue: %s", logged());
        server_pauses_reading(false);
        WAIT_UNTIL(child_input_queued(ch) == 0);
        cr_assert_eq(child_notify(ch, "small", NULL), 0);
        cr_assert_eq(notify_big(), 0);
        cr_assert_eq(child_notify(ch, "small", NULL), -ENOBUFS);
        cr_assert_eq(occurrences(logged(), "not reading its stdin: "), 2, "logged again for a new queue: %s", logged());
        run_for(20000);
        cr_assert_eq(broken.calls, 0);
        cr_assert_eq(replies[0].calls, 0, "a refused request is never answered");
}

Test(child, stalled_input_breaks) {
        child_limit_input(ch, 0, 100000);
        server_pauses_reading(true);
        cr_assert_eq(notify_big(), 0);
        WAIT_UNTIL(broken.calls == 1);
        cr_assert(!broken.violation);
        cr_assert(strstr(broken.why, "read none of its stdin for 0.1 s (healthTimeout) while "), "%s", broken.why);
        cr_assert_eq(child_input_queued(ch), 0, "what was queued is dropped");
        cr_assert_eq(child_notify(ch, "x", NULL), -EPIPE);
}

/* The clock starts when a queue begins, and each byte the server takes restarts it. Twice
 * 250 ms without reading, each below the 400 ms allowed (run_for may overshoot by 50 ms),
 * together above it. */
Test(child, slow_reader_is_not_stalled) {
        child_limit_input(ch, 0, 400000);
        server_pauses_reading(true);
        cr_assert_eq(notify_big(), 0);
        run_for(250000);
        server_pauses_reading(false);
        WAIT_UNTIL(child_input_queued(ch) == 0);
        server_pauses_reading(true);
        cr_assert_eq(notify_big(), 0);
        run_for(250000);
        cr_assert_eq(broken.calls, 0, "broken: %s", broken.why);
        server_pauses_reading(false);
        WAIT_UNTIL(child_input_queued(ch) == 0);
        run_for(450000);
        cr_assert_eq(broken.calls, 0, "broken: %s", broken.why);
}

Test(child, garbage_counted) {
        server_says("hello, I am starting up\n");
        server_says("{\"jsonrpc\":\"1.0\",\"id\":91,\"result\":{}}\n");
        server_says("[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n");
        server_says("{\"jsonrpc\":\"2.0\",\"id\":92}\n");
        server_says("\n\r\n"); /* empty lines are no messages, and no garbage */
        int64_t a = request("ping", 0, &replies[0]);
        server_answers(a, "{}");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_eq(ch->garbage_lines, 4);
        cr_assert_eq(occurrences(logged(), "not MCP on stdout"), 4);
        cr_assert(strstr(logged(), "hello, I am starting up"));
        cr_assert_eq(broken.calls, 0, "garbage does not end the connection");
}

/* A broken answer to a pending request ends that request with an error, exactly once;
 * the others stay pending. */
Test(child, broken_response_ends_its_request_with_an_error) {
        int64_t a = request("tools/call", 0, &replies[0]);
        int64_t b = request("tools/call", 0, &replies[1]);
        int64_t c = request("tools/call", 0, &replies[2]);
        int64_t d = request("tools/call", 0, &replies[3]);
        char line[256];

        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}\n",
                 (long long)a);
        server_says(line);
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld}\n", (long long)b);
        server_says(line);
        /* a malformed request of the server's, under its own numbering: not an answer */
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":5}\n", (long long)c);
        server_says(line);
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":\"no\"}\n", (long long)a);
        server_says(line); /* a second broken answer to a: no longer pending */
        server_answers(d, "{}");
        WAIT_UNTIL(replies[3].calls == 1);
        for (int i = 0; i < 2; i++) {
                cr_assert_eq(replies[i].calls, 1, "request %d", i);
                cr_assert_eq(replies[i].status, 0, "an error answer, not a lost connection");
                cr_assert_str_eq(replies[i].result, "");
                cr_assert(strstr(replies[i].error, "\"code\":-32603"), "%s", replies[i].error);
                cr_assert(strstr(replies[i].error, "server 'srv' answered with an invalid response"), "%s",
                          replies[i].error);
        }
        cr_assert(strstr(replies[0].error, "exactly one"), "%s", replies[0].error);
        cr_assert(strstr(replies[1].error, "neither"), "%s", replies[1].error);
        cr_assert_eq(replies[2].calls, 0, "the server's own request id was taken for an answer");
        cr_assert_eq(ch->n_pending, 1);
        cr_assert_eq(ch->garbage_lines, 4, "each broken line is still logged");
        cr_assert_eq(broken.calls, 0);
}

/* Results taken as text: exactly the bytes the server wrote, or to reply when json-c must
 * read them. */
static struct {
        unsigned calls;
        char text[256];
} texts[4];

static void on_result_text(struct child *c, const char *text, size_t len, const struct loan_offer *offer, void *userdata) {
        unsigned *i = userdata;

        cr_assert_eq(c, ch);
        texts[*i].calls++;
        snprintf(texts[*i].text, sizeof texts[*i].text, "%.*s", (int)len, text);
}

static void on_reply_indexed(struct child *c, int status, json_object *result, json_object *error, void *userdata) {
        unsigned *i = userdata;

        record(&replies[*i], status, result, error);
}

Test(child, result_text_passed_as_written) {
        static unsigned index[4] = { 0, 1, 2, 3 };
        int64_t id[4];
        char line[256];

        for (int i = 0; i < 4; i++) {
                id[i] = child_request_result_text(ch, "tools/call", NULL, on_reply_indexed, on_result_text, &index[i]);
                cr_assert_gt(id[i], 0);
        }
        snprintf(line, sizeof line, "{ \"result\" : {\"b\":2.50, \"a\":[\"\\u00e9\"]} ,\"id\":%lld,\"jsonrpc\":\"2.0\"}\n",
                 (long long)id[0]);
        server_says(line);
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-1,\"message\":\"no\"}}\n",
                 (long long)id[1]);
        server_says(line);
        /* an escaped member name: json-c reads it, and the result is parsed */
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"res\\u0075lt\":{\"x\":1}}\n", (long long)id[2]);
        server_says(line);
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"late\":1}}\n", (long long)id[0]);
        server_says(line); /* no longer pending */
        WAIT_UNTIL(replies[2].calls == 1);
        cr_assert_eq(texts[0].calls, 1);
        cr_assert_str_eq(texts[0].text, "{\"b\":2.50, \"a\":[\"\\u00e9\"]}");
        cr_assert_eq(replies[0].calls, 0);
        cr_assert_eq(texts[1].calls, 0);
        cr_assert_eq(replies[1].calls, 1);
        cr_assert_str_eq(replies[1].error, "{\"code\":-1,\"message\":\"no\"}");
        cr_assert_eq(texts[2].calls, 0);
        cr_assert_str_eq(replies[2].result, "{\"x\":1}");
        cr_assert_eq(ch->n_pending, 1);
        cr_assert_eq(ch->garbage_lines, 0);
        child_free(ch);
        ch = NULL;
        cr_assert_eq(replies[3].calls, 1, "a lost connection goes to reply");
        cr_assert_eq(replies[3].status, -ECONNRESET);
        cr_assert_eq(texts[3].calls, 0);
}

/* A request that takes no text gets its plain result parsed. */
Test(child, plain_result_parsed_for_other_requests) {
        int64_t a = request("tools/list", 0, &replies[0]);

        server_answers(a, "{ \"tools\" : [] }");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_str_eq(replies[0].result, "{\"tools\":[]}");
}

/* Out of memory with part of a line written: the server's stdin is closed, so nothing more
 * lands after that part, and the server ends as any that exits. */
static void setup_failing_allocator(void) {
        failing_allocator_install();
        setup();
}

Test(child, out_of_memory_mid_line_closes_stdin, .init = setup_failing_allocator) {
        const size_t size = 1 << 20;
        char *big = malloc(size + 1);
        json_object *params = json_object_new_object();

        memset(big, 'x', size);
        big[size] = '\0';
        json_object_object_add(params, "text", json_object_new_string(big));
        failing_allocations(true);
        cr_assert_eq(child_notify(ch, "x/big", params), -ENOMEM);
        failing_allocations(false);
        cr_assert_eq(child_notify(ch, "x/after", NULL), -EPIPE);
        cr_assert(strstr(logged(), "out of memory writing to the server's stdin"), "log: %s", logged());
        free(big);
}

Test(child, garbage_logged_up_to_ten_then_counted) {
        for (int i = 0; i < 25; i++)
                server_says("junk\n");
        int64_t a = request("ping", 0, &replies[0]);
        server_answers(a, "{}");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_eq(ch->garbage_lines, 25);
        cr_assert_eq(occurrences(logged(), "not MCP on stdout"), 10);
        cr_assert_eq(occurrences(logged(), "only counted"), 1);
}

/* A line over the limit: head, then filler up to total bytes, then tail (NULL: none). */
static void server_says_oversize(const char *head, size_t total, const char *tail) {
        char *big = malloc(total + 1);

        cr_assert_not_null(big);
        memset(big, 'x', total);
        memcpy(big, head, strlen(head));
        if (tail)
                memcpy(big + total - strlen(tail), tail, strlen(tail));
        big[total] = '\0';
        server_says(big);
        free(big);
}

/* The answer's head names the call: that call fails, the others and the connection stay. */
Test(child, oversize_answer_named_first_fails_its_call) {
        int64_t a = request("tools/call", 0, &replies[0]);
        int64_t b = request("tools/call", 0, &replies[1]);
        char head[128];

        snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"text\":\"", (long long)a);
        server_says_oversize(head, MAX_LINE * 3, "\"}}\n");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_eq(replies[0].status, 0);
        cr_assert(strstr(replies[0].error, "\"code\":-32603"), "%s", replies[0].error);
        cr_assert(strstr(replies[0].error, "server 'srv' answered with a message of more than 1024 bytes "
                                           "(maxServerMessageSize)"), "%s", replies[0].error);
        server_answers(b, "{\"after\":true}");
        WAIT_UNTIL(replies[1].calls == 1);
        cr_assert_str_eq(replies[1].result, "{\"after\":true}");
        cr_assert_eq(broken.calls, 0);
}

/* Named, but for a call nobody waits for any more (cancelled, timed out): dropped. */
Test(child, oversize_answer_to_a_call_gone_is_dropped) {
        int64_t a = request("tools/call", 0, &replies[0]);
        char head[128];

        child_cancel_request(ch, a);
        snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":\"", (long long)a);
        server_says_oversize(head, MAX_LINE * 3, "\"}\n");
        int64_t b = request("ping", 0, &replies[1]);
        server_answers(b, "{}");
        WAIT_UNTIL(replies[1].calls == 1);
        cr_assert_eq(replies[0].calls, 0);
        cr_assert_eq(broken.calls, 0);
}

/* The id comes after the result (the TypeScript SDK's order): no call can be told, so the
 * stream is broken, as a violation; the pending calls wait for child_free. */
Test(child, oversize_answer_named_last_breaks_the_stream) {
        int64_t a = request("tools/call", 0, &replies[0]);
        char tail[64];

        snprintf(tail, sizeof tail, "\"},\"jsonrpc\":\"2.0\",\"id\":%lld}\n", (long long)a);
        server_says_oversize("{\"result\":{\"text\":\"", 8 * MAX_LINE, tail); /* the id past 4096 bytes */
        WAIT_UNTIL(broken.calls == 1);
        cr_assert(broken.violation);
        cr_assert_str_eq(broken.why, "wrote a line over maxServerMessageSize (1024 bytes) that names no call in its "
                                     "first 4096 bytes");
        cr_assert_eq(replies[0].calls, 0);
        child_free(ch);
        ch = NULL;
        cr_assert_eq(replies[0].status, -ECONNRESET);
}

/* Bytes without a newline past the limit are the same: reported before the line ends. */
Test(child, unterminated_flood_breaks_the_stream) {
        request("tools/call", 0, &replies[0]);
        server_says_oversize("x", MAX_LINE * 3, NULL);
        WAIT_UNTIL(broken.calls == 1);
        cr_assert(broken.violation);
        cr_assert_eq(replies[0].calls, 0);
}

Test(child, requests_and_notifications_from_server) {
        server_says("{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"roots/list\"}\n");
        server_says("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r\n");
        server_says("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\",\"params\":{}}\n");
        WAIT_UNTIL(messages.calls == 3);
        cr_assert_eq(messages.kind[0], JSONRPC_REQUEST);
        cr_assert_str_eq(messages.method[0], "roots/list");
        cr_assert_str_eq(messages.id[0], "\"r1\"");
        cr_assert_eq(messages.kind[1], JSONRPC_NOTIFICATION);
        cr_assert_str_eq(messages.method[1], "notifications/tools/list_changed");
        cr_assert_eq(messages.kind[2], JSONRPC_REQUEST);
        cr_assert_str_eq(messages.id[2], "7");
        cr_assert_eq(ch->garbage_lines, 0);
}

Test(child, server_request_id_not_confused_with_ours) {
        int64_t a = request("ping", 0, &replies[0]);
        char line[128];

        /* A request from the server that happens to use our id is a request, not an answer. */
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"ping\"}\n", (long long)a);
        server_says(line);
        WAIT_UNTIL(messages.calls == 1);
        cr_assert_eq(replies[0].calls, 0);
        cr_assert_eq(ch->n_pending, 1);
}

Test(child, close_input_after_flush) {
        cr_assert_eq(child_notify(ch, "notifications/initialized", NULL), 0);
        int64_t a = request("tools/list", 0, &replies[0]);
        child_close_input(ch);
        cr_assert_eq(child_notify(ch, "late", NULL), -EPIPE, "nothing more after closing");
        cr_assert_lt(child_request(ch, "late", NULL, 0, on_reply, &replies[1]), 0);

        /* The server gets what was queued, then EOF. */
        WAIT_UNTIL(server_saw_eof());
        json_object *m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "notifications/initialized");
        json_object_put(m);
        cr_assert_eq(server_expects_request("tools/list"), a);
        cr_assert_eq(evbuffer_get_length(server_received()), 0, "nothing after the queued messages");
        cr_assert_eq(broken.calls, 0, "closing our side is not the server breaking");

        /* Its stdout still works: the server may answer while shutting down. */
        server_answers(a, "{\"tools\":[]}");
        WAIT_UNTIL(replies[0].calls == 1);
        cr_assert_eq(replies[0].status, 0);
        cr_assert_eq(replies[1].calls, 0);
}

Test(child, close_input_with_nothing_queued) {
        child_close_input(ch);
        WAIT_UNTIL(server_saw_eof());
        cr_assert_eq(evbuffer_get_length(server_received()), 0);
        child_close_input(ch); /* again: nothing */
        run_for(20000);
        cr_assert_eq(broken.calls, 0);
        server_closes_stdout();
        WAIT_UNTIL(broken.calls == 1);
        cr_assert_str_eq(broken.why, "closed its stdout");
}

Test(child, close_input_with_large_queue) {
        /* More than a pipe holds: the close waits until all of it was written. */
        json_object *params = json_object_new_object();
        char *blob = malloc(200000);
        size_t total = 0;

        cr_assert_not_null(blob);
        memset(blob, 'b', 199999);
        blob[199999] = '\0';
        json_object_object_add(params, "blob", json_object_new_string(blob));
        free(blob);
        cr_assert_eq(child_notify(ch, "big", params), 0);
        child_close_input(ch);
        WAIT_UNTIL(server_saw_eof());
        total = evbuffer_get_length(server_received());
        json_object *m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "big");
        json_object_put(m);
        cr_assert_gt(total, 200000);
        cr_assert_eq(evbuffer_get_length(server_received()), 0);
}
