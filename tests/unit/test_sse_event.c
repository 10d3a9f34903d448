/* Server-sent events as the HTTP front door writes them (sse-event.c): ids naming their
 * stream, and parsed back; a message's text as data lines, whatever its line breaks, read
 * back whole by the event-stream parser (sse.c). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sse-event.h"
#include "sse.h"

#define IOV(s) ((struct iovec){ .iov_base = (void *)(s), .iov_len = strlen(s) })

static char *text_of(uint64_t seq, uint64_t stream, const struct iovec *parts, size_t n) {
        size_t len;
        char *text = sse_event_text(seq, stream, parts, n, &len);

        cr_assert_not_null(text);
        cr_assert_null(memchr(text, '\0', len), "no NUL inside");
        text = realloc(text, len + 1);
        cr_assert_not_null(text);
        text[len] = '\0';
        return text;
}

Test(sse_event, ids_name_their_stream) {
        struct iovec parts[] = { IOV("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"), IOV("\n") };
        char *t = text_of(3, 0, parts, 2);

        cr_assert_str_eq(t, "id: 3\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n");
        free(t);
        t = text_of(18446744073709551615ull, 7, parts, 2);
        cr_assert_str_eq(t, "id: 18446744073709551615-7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n");
        free(t);
}

/* The newline that ends a message may share its part with the end of the JSON text (a
 * server's result passed on as written: "}\n"); an empty message is an event with an id
 * and no data (the priming event of a POST's stream). */
Test(sse_event, the_messages_newline_is_left_out) {
        struct iovec result[] = { IOV("{\"jsonrpc\":\"2.0\",\"id\":"), IOV("7"), IOV(",\"result\":"), IOV("{}"), IOV("}\n") };
        struct iovec empty[] = { IOV("\n") };
        char *t = text_of(2, 1, result, 5);

        cr_assert_str_eq(t, "id: 2-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n");
        free(t);
        t = text_of(1, 1, empty, 1);
        cr_assert_str_eq(t, "id: 1-1\ndata: \n\n");
        free(t);
}

static int keep(const char *type, const char *data, size_t len, bool oversize, void *userdata) {
        char **ret = userdata;

        cr_assert_null(*ret, "one event");
        cr_assert_str_eq(type, "message");
        cr_assert_not(oversize);
        *ret = strndup(data, len);
        return 0;
}

/* Line breaks between JSON tokens (LF, CR, CRLF, a CR at the end of a part and a LF at the
 * start of the next) each start a data line: the parser joins them with LF, and the JSON
 * reads the same. */
Test(sse_event, line_breaks_become_data_lines) {
        struct iovec parts[] = { IOV("{\n\"a\":\r\n[1,\r2],"), IOV("\"b\":\r"), IOV("\n\"c\"\n}"), IOV("\n") };
        char *t = text_of(9, 2, parts, 4), *data = NULL;
        struct sse_parser p;
        json_object *o;

        cr_assert_str_eq(t, "id: 9-2\ndata: {\ndata: \"a\":\ndata: [1,\ndata: 2],\"b\":\ndata: \ndata: \"c\"\ndata: }\n\n");
        cr_assert_eq(sse_init(&p, 1024), 0);
        cr_assert_eq(sse_feed(&p, t, strlen(t), keep, &data), 0);
        cr_assert_str_eq(p.last_id, "9-2");
        sse_done(&p);
        cr_assert_str_eq(data, "{\n\"a\":\n[1,\n2],\"b\":\n\n\"c\"\n}");
        o = json_tokener_parse(data);
        cr_assert_not_null(o);
        cr_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"a\":[1,2],\"b\":\"c\"}");
        json_object_put(o);
        free(data);
        free(t);
}

Test(sse_event, ids_parsed_back) {
        uint64_t seq = 1, stream = 1;

        cr_assert(sse_event_id_parse("0", &seq, &stream) && seq == 0 && stream == 0);
        cr_assert(sse_event_id_parse("12", &seq, &stream) && seq == 12 && stream == 0);
        cr_assert(sse_event_id_parse("12-3", &seq, &stream) && seq == 12 && stream == 3);
        cr_assert(sse_event_id_parse("18446744073709551615-18446744073709551615", &seq, &stream) &&
                  seq == UINT64_MAX && stream == UINT64_MAX);
}

Test(sse_event, other_ids_refused) {
        static const char *const bad[] = { "", "-", "-1", "+1", " 1", "1 ", "1-", "1-0", "1--2", "1-+2", "1-2-3", "1.5",
                                           "a", "0x10", "18446744073709551616", "1-18446744073709551616", "1-2 ",
                                           /* another text of an id: each has one */ "01", "00", "1-02", "007-1" };
        uint64_t seq = 5, stream = 6;

        cr_assert_not(sse_event_id_parse(NULL, &seq, &stream));
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
                cr_assert_not(sse_event_id_parse(bad[i], &seq, &stream), "'%s' taken", bad[i]);
        cr_assert(seq == 5 && stream == 6, "left alone");
}

/* The data lines as the byte-by-byte walk of old wrote them, for comparison. */
static size_t reference_lines(char *out, const char *p, size_t len) {
        size_t n = 6;

        memcpy(out, "data: ", 6);
        for (size_t j = 0; j < len; j++) {
                bool brk = p[j] == '\n' || p[j] == '\r';

                if (brk && p[j] == '\r' && j + 1 < len && p[j + 1] == '\n')
                        j++;
                if (brk)
                        memcpy(out + n, "\ndata: ", 7);
                else
                        out[n] = p[j];
                n += brk ? 7 : 1;
        }
        out[n] = '\n';
        return n + 1;
}

/* A 1 MiB message with LF, CR and CRLF scattered through it (some in runs, one at each end)
 * gives the data lines a walk byte by byte gives; and one with none, a single line. */
Test(sse_event, a_large_message_the_same_as_byte_by_byte) {
        const size_t size = 1u << 20;
        char *msg = malloc(size + 1), *want = malloc(7 * size + 16), *t;
        struct iovec parts[2];
        size_t want_len, head = strlen("id: 1\n");

        cr_assert(msg && want);
        for (size_t i = 0; i < size; i++)
                msg[i] = i % 1000 == 0 ? '\n' : i % 1777 == 5 ? '\r' : i % 4099 < 6 ? "\r\n\r\r\n\n"[i % 4099] : 'a' + (char)(i % 26);
        msg[size - 1] = '\r';
        msg[size] = '\n';
        parts[0] = (struct iovec){ msg, size / 3 };
        parts[1] = (struct iovec){ msg + size / 3, size + 1 - size / 3 };
        want_len = reference_lines(want, msg, size);
        t = text_of(1, 0, parts, 2);
        cr_assert_eq(strlen(t), head + want_len + 1);
        cr_assert(memcmp(t + head, want, want_len) == 0, "the data lines differ from the byte-by-byte walk's");
        free(t);

        memset(msg, 'x', size);
        parts[0] = (struct iovec){ msg, size + 1 };
        t = text_of(2, 0, parts, 1);
        cr_assert_eq(strlen(t), strlen("id: 2\ndata: ") + size + 2, "a message without breaks is one data line");
        free(t);
        free(want);
        free(msg);
}

/* A message without line breaks can be written in pieces (its head, its parts where they
 * are, "\n\n"), byte for byte the event's text; one with a break, or empty, cannot. */
Test(sse_event, pieces_the_same_as_the_text) {
        struct iovec parts[] = { IOV("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"), IOV("{\"a\":\"x\"}"), IOV("}\n") };
        struct iovec broken[] = { IOV("{\"jsonrpc\":\"2.0\",\r\"id\":1}"), IOV("\n") };
        struct iovec broken_lf[] = { IOV("{\"a\":\n1}"), IOV("\n") };
        struct iovec empty[] = { IOV("\n") };
        char head[SSE_EVENT_HEAD_MAX], joined[256];
        size_t n = sse_event_head(12, 3, parts, 3, head);
        char *t = text_of(12, 3, parts, 3);

        cr_assert_gt(n, 0);
        snprintf(joined, sizeof joined, "%.*s%s%s}\n\n", (int)n, head, (const char *)parts[0].iov_base,
                 (const char *)parts[1].iov_base);
        cr_assert_str_eq(joined, t);
        free(t);
        n = sse_event_head(5, 0, parts, 3, head);
        cr_assert_eq(n, strlen("id: 5\ndata: "));
        cr_assert(memcmp(head, "id: 5\ndata: ", n) == 0);
        cr_assert_eq(sse_event_head(1, 1, broken, 2, head), 0, "a CR between tokens written in pieces");
        cr_assert_eq(sse_event_head(1, 1, broken_lf, 2, head), 0, "an LF between tokens written in pieces");
        cr_assert_eq(sse_event_head(1, 1, empty, 1, head), 0, "an empty message written in pieces");
}
