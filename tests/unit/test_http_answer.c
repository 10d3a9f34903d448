/* How one HTTP answer of a remote server is read (http-answer.c): its kind from status and
 * type, a pretty-printed JSON body made one line, an event stream's messages and its other
 * events apart, a body over the bound cut to its head, a refusal's body kept for the
 * journal only, and the words of what came back, which never hold a byte of the body. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-answer.h"

struct got {
        char text[8][512];
        bool oversize[8];
        size_t n;
        char event[64];
        char event_data[256];
};

static void on_message(char *data, size_t len, bool oversize, void *userdata) {
        struct got *g = userdata;

        cr_assert_lt(g->n, 8);
        cr_assert_lt(len, sizeof g->text[0]);
        cr_assert_null(memchr(data, '\n', len), "a message over lines");
        cr_assert_null(memchr(data, '\r', len), "a message over lines");
        memcpy(g->text[g->n], data, len);
        g->text[g->n][len] = '\0';
        g->oversize[g->n++] = oversize;
}

static void on_event(const char *type, const char *data, size_t len, bool oversize, void *userdata) {
        struct got *g = userdata;

        snprintf(g->event, sizeof g->event, "%s", type);
        snprintf(g->event_data, sizeof g->event_data, "%.*s", (int)len, data);
}

/* The answer to status and type, fed body in chunks of chunk bytes; the JSON body's message
 * at the end goes to g too. */
static void read_answer(struct http_answer *a, struct got *g, const struct http_answer_sink *sink, long status,
                        const char *type, bool carries, size_t max, const char *body, size_t chunk) {
        size_t len = strlen(body), n;
        char *json;

        memset(g, 0, sizeof *g);
        cr_assert_eq(http_answer_begin(a, status, type, carries, max, sink), 0);
        for (size_t off = 0; off < len; off += n) {
                n = len - off < chunk ? len - off : chunk;
                if (http_answer_feed(a, body + off, n) < n)
                        break;
        }
        json = http_answer_end(a, &n);
        if (json) {
                on_message(json, n, false, g);
                free(json);
        }
}

#define READ(a, g, status, type, carries, max, body, chunk)                                                       \
        struct got g;                                                                                              \
        struct http_answer a;                                                                                      \
        const struct http_answer_sink sink_##g = { .message = on_message, .event = on_event, .userdata = &g };   \
        read_answer(&a, &g, &sink_##g, status, type, carries, max, body, chunk)

Test(http_answer, pretty_json_becomes_one_line) {
        READ(a, g, 200, "application/json; charset=utf-8", true, 1000, "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1\n}\n", 3);

        cr_assert_eq(a.kind, HTTP_ANSWER_JSON);
        cr_assert_eq(g.n, 1);
        cr_assert_str_eq(g.text[0], "{   \"jsonrpc\": \"2.0\",    \"id\": 1 } ");
        cr_assert_eq(a.messages, 1);
        http_answer_done(&a);
}

Test(http_answer, no_type_is_json) {
        READ(a, g, 200, NULL, true, 1000, "{\"id\":1}", 100);

        cr_assert_eq(a.kind, HTTP_ANSWER_JSON);
        cr_assert_eq(g.n, 1);
        http_answer_done(&a);
}

Test(http_answer, event_stream_messages_and_other_events) {
        READ(a, g, 200, "Text/Event-Stream", true, 1000,
             "event: endpoint\ndata: /messages?s=1\n\n: comment\nid: 7\ndata: {\"a\":\ndata: 1}\n\ndata: {}\n\n", 1);

        cr_assert_eq(a.kind, HTTP_ANSWER_EVENTS);
        cr_assert_eq(g.n, 2);
        cr_assert_str_eq(g.text[0], "{\"a\": 1}");
        cr_assert_str_eq(g.text[1], "{}");
        cr_assert_str_eq(g.event, "endpoint");
        cr_assert_str_eq(g.event_data, "/messages?s=1");
        cr_assert_str_eq(a.sse.last_id, "7");
        http_answer_done(&a);
}

Test(http_answer, json_over_the_bound_is_its_head) {
        READ(a, g, 200, "application/json", true, 16, "{\"id\":1,\"result\":\"0123456789abcdef\"}", 5);

        cr_assert(a.oversize);
        cr_assert_eq(g.n, 1);
        cr_assert(g.oversize[0]);
        cr_assert_str_eq(g.text[0], "{\"id\":1,\"result\"");
        http_answer_done(&a);
}

Test(http_answer, legacy_post_and_other_types_carry_nothing) {
        READ(a, g, 202, "text/plain", false, 1000, "Accepted", 100);

        cr_assert_eq(a.kind, HTTP_ANSWER_IGNORED);
        cr_assert_eq(g.n, 0);
        http_answer_done(&a);
        READ(b, h, 200, "text/html", true, 1000, "{\"id\":1}", 100);
        cr_assert_eq(b.kind, HTTP_ANSWER_IGNORED);
        cr_assert_eq(h.n, 0);
        http_answer_done(&b);
}

/* A refusal's body is quoted, bounded, for the journal; never handed on. */
Test(http_answer, refusal_body_is_only_quoted) {
        char body[400];

        memset(body, 'x', sizeof body - 1);
        body[sizeof body - 1] = '\0';
        READ(a, g, 503, "application/json", true, 1000, body, 64);
        cr_assert_eq(a.kind, HTTP_ANSWER_REFUSED);
        cr_assert_eq(g.n, 0);
        cr_assert_eq(a.quote_len, HTTP_ANSWER_QUOTED);
        cr_assert_eq(strlen(a.quote), HTTP_ANSWER_QUOTED);
        http_answer_done(&a);
}

/* What came back, in words: the status, the media type (only if it is a plain token), and
 * whether anything came; never the body. */
Test(http_answer, words_hold_no_body) {
        char words[128];

        {
                READ(a, g, 202, NULL, true, 1000, "", 1);
                cr_assert_str_eq(http_answer_words(&a, words, sizeof words), "HTTP 202 and no body");
                http_answer_done(&a);
        }
        {
                READ(a, g, 200, "text/html; charset=utf-8", true, 1000, "<b>api_key=s3cret</b>", 7);
                cr_assert_str_eq(http_answer_words(&a, words, sizeof words), "HTTP 200 (text/html) and no message");
                http_answer_done(&a);
        }
        {
                READ(a, g, 200, "application/json", true, 1000, "s3cret", 7);
                cr_assert_str_eq(http_answer_words(&a, words, sizeof words),
                                 "HTTP 200 (application/json) and no response to it");
                http_answer_done(&a);
        }
        {
                READ(a, g, 429, "text/plain", true, 1000, "s3cret", 7);
                cr_assert_str_eq(http_answer_words(&a, words, sizeof words), "HTTP 429");
                http_answer_done(&a);
        }
        {
                /* the media type without its parameters; one that is not a token is left out */
                READ(a, g, 200, "text/x-custom key=\"x\"", true, 1000, "", 7);
                cr_assert_str_eq(http_answer_words(&a, words, sizeof words), "HTTP 200 (text/x-custom) and no body");
                http_answer_done(&a);
        }
        {
                READ(a, g, 200, "text/<script>", true, 1000, "", 7);
                cr_assert_str_eq(http_answer_words(&a, words, sizeof words), "HTTP 200 and no body");
                http_answer_done(&a);
        }
}
