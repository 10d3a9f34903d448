/* Fuzz target "framing": bytes as a peer sends them, arriving in arbitrary chunks, through
 * the line framer (framing.c) and every line through the JSON-RPC classifier (jsonrpc.c),
 * as client.c and server-conn.c use them.
 *
 * Input: [max_line selector] [4 bytes: chunking seed] [the stream...]
 *
 * Invariants:
 *   - the framer's output equals a simple model of the stream: split at '\n', a final
 *     unterminated tail is a line at EOF, a line longer than max_line (its '\r' counted) is
 *     reported exactly once as FRAME_OVERSIZE, otherwise one trailing '\r' is dropped and
 *     blank lines are skipped; so every byte is accounted for, whatever the chunking;
 *   - nothing is left in the buffer after EOF;
 *   - a line is never longer than max_line and never holds '\n';
 *   - the classification is self-consistent (a request has a method and a valid id, a
 *     response exactly one of result and error, ...), and stable: the message written
 *     back by jsonrpc_line() is one line that classifies the same way with the same
 *     method and id. */
#include <event2/buffer.h>
#include <json-c/json.h>
#include <string.h>

#include "framing.h"
#include "fuzz-input.h"
#include "jsonrpc.h"

/* What the model expects next. */
struct expected {
        bool oversize;
        const uint8_t *data; /* a line's bytes, '\r' already dropped */
        size_t len;
};

struct framing_run {
        struct expected *lines;
        size_t n, next;
        size_t max_line;
        struct jsonrpc_parser parser;
};

static void expect(struct framing_run *r, const uint8_t *line, size_t raw_len) {
        struct expected e = { .data = line, .len = raw_len };

        if (raw_len > r->max_line)
                e.oversize = true;
        else {
                if (e.len > 0 && line[e.len - 1] == '\r')
                        e.len--;
                if (e.len == 0)
                        return; /* blank: skipped */
        }
        r->lines[r->n++] = e;
}

static void build_model(struct framing_run *r, const uint8_t *data, size_t size) {
        size_t start = 0;

        for (size_t i = 0; i < size; i++)
                if (data[i] == '\n') {
                        expect(r, data + start, i - start);
                        start = i + 1;
                }
        if (start < size)
                expect(r, data + start, size - start);
}

static bool has_member(json_object *o, const char *key) {
        return json_object_object_get_ex(o, key, NULL);
}

static void check_classification(const struct jsonrpc_msg *m) {
        switch (m->kind) {
        case JSONRPC_REQUEST:
        case JSONRPC_NOTIFICATION:
                fuzz_check(json_object_is_type(m->root, json_type_object), "a call is an object");
                fuzz_check(m->method != NULL, "a call has a method");
                fuzz_check((m->kind == JSONRPC_REQUEST) == (m->id != NULL), "a request, and only a request, has an id");
                fuzz_check(!m->id || jsonrpc_id_valid(m->id), "the id is a string or an integer");
                break;
        case JSONRPC_RESPONSE:
                fuzz_check(json_object_is_type(m->root, json_type_object), "a response is an object");
                fuzz_check(m->id && jsonrpc_id_valid(m->id), "a response has a valid id");
                fuzz_check(has_member(m->root, "result") != has_member(m->root, "error"),
                           "a response has exactly one of result and error");
                fuzz_check(!m->error || json_object_is_type(m->error, json_type_object), "an error is an object");
                fuzz_check(!m->method, "a response has no method");
                break;
        case JSONRPC_INVALID:
                fuzz_check(m->error_code == JSONRPC_PARSE_ERROR || m->error_code == JSONRPC_INVALID_REQUEST,
                           "invalid: code %d", m->error_code);
                fuzz_check(m->error_message && *m->error_message, "invalid messages say why");
                /* json-c's tree of a line refused for its text is kept for its answer's id
                 * (jsonrpc_answer_id()), never as the message's id */
                fuzz_check(m->error_code != JSONRPC_PARSE_ERROR || (!m->id && (m->root == NULL || m->refused_text)),
                           "a parse error keeps no JSON but a refused text's");
                fuzz_check(!m->id || jsonrpc_id_valid(m->id), "an invalid message's id, if kept, is valid");
                break;
        }
}

/* The message written back (what the daemon forwards) is one line that means the same. */
static void check_round_trip(struct framing_run *r, const struct jsonrpc_msg *m) {
        struct evbuffer *out;
        struct iovec parts[2];
        struct jsonrpc_msg again;
        size_t len;
        char *text;

        if (m->kind == JSONRPC_INVALID)
                return;
        out = evbuffer_new();
        fuzz_check(out != NULL, "out of memory");
        fuzz_check(jsonrpc_line(m->root, parts) > 0, "jsonrpc_line of a parsed message");
        evbuffer_add(out, parts[0].iov_base, parts[0].iov_len);
        evbuffer_add(out, parts[1].iov_base, parts[1].iov_len);
        len = evbuffer_get_length(out);
        text = (char *)evbuffer_pullup(out, -1);
        fuzz_check(len > 0 && text[len - 1] == '\n', "a written message ends with its newline");
        fuzz_check(memchr(text, '\n', len - 1) == NULL, "a written message is one line: %.*s", (int)len, text);
        jsonrpc_parse(&r->parser, text, len - 1, &again);
        fuzz_check(again.kind == m->kind, "classified %d, written back as %.*s classified %d", m->kind,
                   (int)len - 1, text, again.kind);
        fuzz_check(!m->method || strcmp(m->method, again.method) == 0, "method kept");
        fuzz_check(!m->id || json_object_equal(m->id, again.id), "id kept");
        jsonrpc_msg_done(&again);
        evbuffer_free(out);
}

static void handle_line(struct framing_run *r, const struct frame *fr) {
        struct expected *e;
        struct jsonrpc_msg m;

        fuzz_check(r->next < r->n, "a line the model does not have: %.*s", (int)fr->len, fr->data);
        e = &r->lines[r->next++];
        fuzz_check(!e->oversize, "line %zu should have been reported over-long (max %zu)", r->next, r->max_line);
        fuzz_check(fr->len <= r->max_line, "a line over max_line");
        fuzz_check(fr->len == e->len && memcmp(fr->data, e->data, e->len) == 0,
                   "line %zu: got %zu bytes, the model has %zu", r->next, fr->len, e->len);
        fuzz_check(memchr(fr->data, '\n', fr->len) == NULL, "a line holds a newline");
        fuzz_check(fr->consume > fr->len || (fr->consume == fr->len && fr->consume > 0), "consume covers the line");

        jsonrpc_parse(&r->parser, fr->data, fr->len, &m);
        check_classification(&m);
        check_round_trip(r, &m);
        jsonrpc_msg_done(&m);
}

/* The report holds the line's head: more than max_line of its first bytes, no more. */
static void handle_oversize(struct framing_run *r, const struct frame *fr) {
        const struct expected *e;

        fuzz_check(r->next < r->n, "an over-long report the model does not have");
        e = &r->lines[r->next];
        fuzz_check(e->oversize, "line %zu (%zu bytes) reported over-long (max %zu)", r->next + 1, e->len, r->max_line);
        fuzz_check(fr->len > r->max_line && fr->len <= e->len, "line %zu (%zu bytes) reported with %zu bytes", r->next + 1,
                   e->len, fr->len);
        fuzz_check(memcmp(fr->data, e->data, fr->len) == 0, "line %zu reported with other bytes", r->next + 1);
        r->next++;
}

static void drain_frames(struct framing_run *r, struct framer *f, struct evbuffer *in, bool at_eof) {
        struct frame fr;
        enum frame_kind kind;

        while ((kind = framer_next(f, in, at_eof, &fr)) != FRAME_NONE) {
                if (kind == FRAME_OVERSIZE) {
                        handle_oversize(r, &fr);
                        continue;
                }
                handle_line(r, &fr);
                framer_consume(f, &fr);
        }
}

/* Small line limits make over-long lines common; sometimes the daemon's minimum. */
static size_t pick_max_line(uint8_t b) {
        return b & 0x80 ? 1024 : 1 + (b & 0x3f);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { data, size };
        struct framing_run r = { .max_line = pick_max_line(take_u8(&in)) };
        uint32_t chunking = take_u32(&in);
        struct evbuffer *buf = evbuffer_new();
        struct framer f;

        fuzz_check(buf != NULL, "out of memory");
        fuzz_check(jsonrpc_parser_init(&r.parser) == 0, "parser");
        r.lines = calloc(in.size + 1, sizeof *r.lines);
        fuzz_check(r.lines != NULL, "out of memory");
        build_model(&r, in.data, in.size);

        framer_init(&f, r.max_line);
        for (size_t off = 0; off < in.size;) {
                size_t n = next_chunk(&chunking);

                if (n > in.size - off)
                        n = in.size - off;
                evbuffer_add(buf, in.data + off, n);
                off += n;
                drain_frames(&r, &f, buf, false);
        }
        drain_frames(&r, &f, buf, true);
        fuzz_check(r.next == r.n, "the model has %zu more lines than the framer gave", r.n - r.next);
        fuzz_check(evbuffer_get_length(buf) == 0, "%zu bytes left in the buffer after EOF", evbuffer_get_length(buf));
        fuzz_check(framer_buffered(&f) == 0, "%zu bytes left in the framer after EOF", framer_buffered(&f));
        framer_done(&f);

        free(r.lines);
        jsonrpc_parser_done(&r.parser);
        evbuffer_free(buf);
        return 0;
}
