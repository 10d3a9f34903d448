/* The text/event-stream parser (sse.c): fields, line ends, comments, ids, events split
 * anywhere across feeds, and data past the bound reported as oversize with its head. */
#include <criterion/criterion.h>
#include <string.h>

#include "sse.h"

struct seen {
        char type[8][SSE_EVENT_MAX + 1];
        char data[8][256];
        size_t len[8];
        bool oversize[8];
        size_t n;
};

static int on_event(const char *type, const char *data, size_t len, bool oversize, void *userdata) {
        struct seen *s = userdata;

        cr_assert_lt(s->n, 8);
        strcpy(s->type[s->n], type);
        memcpy(s->data[s->n], data, len);
        s->data[s->n][len] = '\0';
        s->len[s->n] = len;
        s->oversize[s->n] = oversize;
        s->n++;
        return 0;
}

/* Feeds text whole, then byte by byte: the same events either way. */
static void parse_both(const char *text, size_t max, struct seen *whole, struct sse_parser *ret_last) {
        struct sse_parser p;
        struct seen bytewise = { 0 };

        memset(whole, 0, sizeof *whole);
        cr_assert_eq(sse_init(&p, max), 0);
        cr_assert_eq(sse_feed(&p, text, strlen(text), on_event, whole), 0);
        if (ret_last)
                memcpy(ret_last->last_id, p.last_id, sizeof p.last_id);
        sse_done(&p);
        cr_assert_eq(sse_init(&p, max), 0);
        for (size_t i = 0; text[i]; i++)
                cr_assert_eq(sse_feed(&p, text + i, 1, on_event, &bytewise), 0);
        sse_done(&p);
        cr_assert_eq(bytewise.n, whole->n);
        for (size_t i = 0; i < whole->n; i++)
                cr_assert_str_eq(bytewise.data[i], whole->data[i]);
}

Test(sse, messages_as_mcp_servers_send_them) {
        struct seen s;
        struct sse_parser last;

        parse_both("event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
                   "data: {\"a\":1}\n\n",
                   4096, &s, &last);
        cr_assert_eq(s.n, 2);
        cr_assert_str_eq(s.type[0], "message");
        cr_assert_str_eq(s.data[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
        cr_assert_str_eq(s.type[1], "message", "no event field: message");
        cr_assert_str_eq(last.last_id, "7");
}

Test(sse, line_ends_comments_and_fields) {
        struct seen s;

        parse_both(": keep-alive\r\n\r\nevent:endpoint\r\ndata:/messages?sessionId=1\r\r"
                   "data: a\ndata:  b\ndata\nretry: 10\nunknown: x\n\n"
                   "data: no blank line yet",
                   4096, &s, NULL);
        cr_assert_eq(s.n, 2, "a comment alone dispatches nothing; an unfinished event waits");
        cr_assert_str_eq(s.type[0], "endpoint");
        cr_assert_str_eq(s.data[0], "/messages?sessionId=1");
        cr_assert_str_eq(s.data[1], "a\n b\n", "one space dropped; an empty data line is a newline");
}

Test(sse, event_type_does_not_stick) {
        struct seen s;

        parse_both("event: endpoint\ndata: /x\n\ndata: y\n\nevent: ping\n\n", 4096, &s, NULL);
        cr_assert_eq(s.n, 2, "an event without data is not dispatched");
        cr_assert_str_eq(s.type[1], "message");
}

Test(sse, oversize_keeps_the_head) {
        struct seen s;

        parse_both("data: 0123456789abcdef\n\ndata: 0123\ndata: 4567\n\ndata: ok\n\n", 8, &s, NULL);
        cr_assert_eq(s.n, 3);
        cr_assert(s.oversize[0]);
        cr_assert_eq(s.len[0], 8);
        cr_assert_str_eq(s.data[0], "01234567");
        cr_assert(s.oversize[1], "9 bytes with the joining newline");
        cr_assert_not(s.oversize[2]);
        cr_assert_str_eq(s.data[2], "ok");
}

Test(sse, long_ids_are_ignored) {
        struct sse_parser p;
        char text[SSE_ID_MAX + 64];
        struct seen s = { 0 };

        cr_assert_eq(sse_init(&p, 64), 0);
        cr_assert_eq(sse_feed(&p, "id: 5\ndata: x\n\n", 15, on_event, &s), 0);
        memset(text, 'i', sizeof text);
        memcpy(text, "id: ", 4);
        memcpy(text + sizeof text - 11, "\ndata: y\n\n\n", 11);
        cr_assert_eq(sse_feed(&p, text, sizeof text, on_event, &s), 0);
        cr_assert_str_eq(p.last_id, "5");
        cr_assert_eq(s.n, 2);
        sse_done(&p);
}

static int stop_at_first(const char *type, const char *data, size_t len, bool oversize, void *userdata) {
        (*(int *)userdata)++;
        return 42;
}

Test(sse, callback_stops_the_parse) {
        struct sse_parser p;
        int calls = 0;

        cr_assert_eq(sse_init(&p, 64), 0);
        cr_assert_eq(sse_feed(&p, "data: a\n\ndata: b\n\n", 18, stop_at_first, &calls), 42);
        cr_assert_eq(calls, 1);
        sse_done(&p);
}
