/* Fuzz target "remote": one answer of a remote server as the HTTP transport reads it
 * (http-answer.c, over sse.c for event streams), arriving in arbitrary chunks, and each
 * message it hands on read as the connection reads a server's line (jsonrpc.c, json-scan.c).
 *
 * Input: [status] [type] [flags] [4 bytes: chunking seed] [the body...]
 *
 * Invariants:
 *   - the chunking changes nothing: the messages, their oversize marks, the other events,
 *     the last event id and the words are those of the body fed whole;
 *   - a message is one line (no CR, no LF), not blank unless oversize, at most max bytes;
 *   - a JSON body within max is handed on as itself with its line breaks made spaces;
 *   - a refusal hands nothing on, and quotes at most HTTP_ANSWER_QUOTED bytes;
 *   - the words of what came back start with "HTTP " and hold only the bytes a status, a
 *     media type and the fixed words are made of (never a byte of the body's own text). */
#include <event2/buffer.h>
#include <json-c/json.h>
#include <string.h>

#include "fuzz-input.h"
#include "http-answer.h"
#include "jsonrpc.h"

struct run {
        struct evbuffer *log;   /* what was handed on, in order, framed */
        size_t max;
        struct jsonrpc_parser *parser;
};

static void check_message(struct run *r, const char *data, size_t len, bool oversize) {
        struct jsonrpc_result_text result;
        struct jsonrpc_msg m;
        int64_t id;

        fuzz_check(len > 0, "an empty message");
        fuzz_check(len <= r->max, "a message of %zu bytes over max %zu", len, r->max);
        fuzz_check(!memchr(data, '\n', len) && !memchr(data, '\r', len), "a message over lines");
        if (oversize) {
                (void)jsonrpc_scan_head_id(data, len, &id);
                return;
        }
        /* as the connection reads a line */
        (void)jsonrpc_scan_result(data, len, &result);
        (void)jsonrpc_scan_head_id(data, len, &id);
        jsonrpc_parse(r->parser, data, len, &m);
        jsonrpc_msg_done(&m);
}

static void record(struct run *r, char tag, const char *a, size_t alen, const char *b, size_t blen) {
        evbuffer_add(r->log, &tag, 1);
        evbuffer_add(r->log, &alen, sizeof alen);
        evbuffer_add(r->log, a, alen);
        evbuffer_add(r->log, &blen, sizeof blen);
        evbuffer_add(r->log, b, blen);
}

static void on_message(char *data, size_t len, bool oversize, void *userdata) {
        struct run *r = userdata;

        check_message(r, data, len, oversize);
        record(r, oversize ? 'O' : 'M', data, len, "", 0);
}

static void on_event(const char *type, const char *data, size_t len, bool oversize, void *userdata) {
        struct run *r = userdata;

        fuzz_check(strcmp(type, "message") != 0, "a message event handed on as another");
        fuzz_check(len <= r->max, "an event of %zu bytes over max %zu", len, r->max);
        record(r, oversize ? 'e' : 'E', type, strlen(type), data, len);
}

/* Chunk sizes from a xorshift seeded by the input: one byte at a time up to large blocks. */
static size_t next_chunk(uint32_t *state) {
        uint32_t x = *state ? *state : 0x9e3779b9u;

        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *state = x;
        return 1 + (x % (1u << (x >> 28)));
}

static const long statuses[] = { 200, 200, 202, 204, 299, 199, 301, 307, 400, 404, 409, 429, 500, 503 };
static const char *const types[] = {
        NULL, "application/json", "text/event-stream", "text/event-stream; charset=utf-8", "TEXT/Event-Stream",
        "application/json;charset=utf-8", " application/json", "text/html", "text/plain", "application/json-seq",
        "text/event-streamx", "",
};

struct outcome {
        struct evbuffer *log;
        char words[128];
        char last_id[SSE_ID_MAX + 1];
        enum http_answer_kind kind;
        bool oversize;
        char *json;
        size_t json_len;
        size_t quote_len;
};

/* Reads the body in chunks (seed 0: whole); what came is in *o. */
static void read_answer(struct fuzz_input *in, long status, const char *type, bool carries, size_t max, uint32_t chunking,
                        bool whole, struct jsonrpc_parser *parser, struct outcome *o) {
        struct run r = { .log = evbuffer_new(), .max = max, .parser = parser };
        const struct http_answer_sink sink = { .message = on_message, .event = on_event, .userdata = &r };
        struct http_answer a;

        fuzz_check(r.log != NULL, "out of memory");
        fuzz_check(http_answer_begin(&a, status, type, carries, max, &sink) == 0, "out of memory");
        for (size_t off = 0; off < in->size;) {
                size_t n = whole ? in->size : next_chunk(&chunking), took;

                if (n > in->size - off)
                        n = in->size - off;
                took = http_answer_feed(&a, (const char *)in->data + off, n);
                fuzz_check(took == n || took == 0, "took %zu of %zu", took, n);
                if (took < n) {
                        fuzz_check(a.kind == HTTP_ANSWER_JSON && a.oversize, "stopped without cause");
                        break;
                }
                off += n;
        }
        o->json = http_answer_end(&a, &o->json_len);
        if (o->json)
                on_message(o->json, o->json_len, false, &r);
        o->log = r.log;
        o->kind = a.kind;
        o->oversize = a.oversize;
        o->quote_len = a.quote_len;
        http_answer_words(&a, o->words, sizeof o->words);
        o->last_id[0] = '\0';
        if (a.kind == HTTP_ANSWER_EVENTS)
                memcpy(o->last_id, a.sse.last_id, sizeof o->last_id);
        http_answer_done(&a);
}

static void check_words(const char *words) {
        fuzz_check(strncmp(words, "HTTP ", 5) == 0, "words: %s", words);
        for (const char *c = words; *c; c++)
                fuzz_check((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                                   strchr(" ()!#$&^_.+-/", *c),
                           "a byte in the words that none of their parts has: %s", words);
}

/* A JSON body within max: handed on as itself, its line breaks made spaces. */
static void check_json(const struct fuzz_input *in, const struct outcome *o, size_t max) {
        bool blank = true;

        if (o->kind != HTTP_ANSWER_JSON || in->size > max)
                return;
        for (size_t i = 0; i < in->size; i++)
                if (!memchr(" \t\r\n", in->data[i], 4))
                        blank = false;
        fuzz_check(!o->oversize, "a body within max taken as oversize");
        fuzz_check((o->json != NULL) == !blank, "a body %s handed on", blank ? "of blanks" : "not");
        if (!o->json)
                return;
        fuzz_check(o->json_len == in->size, "the body changed length");
        for (size_t i = 0; i < in->size; i++)
                fuzz_check(o->json[i] == (in->data[i] == '\r' || in->data[i] == '\n' ? ' ' : (char)in->data[i]),
                           "byte %zu of the body changed", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { data, size };
        long status = statuses[take_choice(&in, ARRAY_LEN(statuses))];
        const char *type = types[take_choice(&in, ARRAY_LEN(types))];
        uint8_t flags = take_u8(&in);
        uint32_t chunking = take_u32(&in);
        bool carries = !(flags & 0x80);
        /* small bounds make oversize messages common */
        size_t max = flags & 0x40 ? 65536 : 1 + (flags & 0x3f);
        struct jsonrpc_parser parser;
        struct outcome whole, chunked;

        fuzz_check(jsonrpc_parser_init(&parser) == 0, "parser");
        read_answer(&in, status, type, carries, max, 0, true, &parser, &whole);
        read_answer(&in, status, type, carries, max, chunking, false, &parser, &chunked);

        fuzz_check(evbuffer_get_length(whole.log) == evbuffer_get_length(chunked.log) &&
                           (evbuffer_get_length(whole.log) == 0 ||
                            memcmp(evbuffer_pullup(whole.log, -1), evbuffer_pullup(chunked.log, -1),
                                   evbuffer_get_length(whole.log)) == 0),
                   "the chunking changed what was handed on");
        fuzz_check(strcmp(whole.words, chunked.words) == 0, "the chunking changed the words: %s / %s", whole.words,
                   chunked.words);
        fuzz_check(strcmp(whole.last_id, chunked.last_id) == 0, "the chunking changed the last event id");
        check_words(whole.words);
        check_json(&in, &whole, max);
        if (whole.kind == HTTP_ANSWER_REFUSED) {
                fuzz_check(evbuffer_get_length(whole.log) == 0, "a refusal handed something on");
                fuzz_check(whole.quote_len <= HTTP_ANSWER_QUOTED, "quoted %zu bytes", whole.quote_len);
        }

        free(whole.json);
        free(chunked.json);
        evbuffer_free(whole.log);
        evbuffer_free(chunked.log);
        jsonrpc_parser_done(&parser);
        return 0;
}
