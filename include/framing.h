/* MCP stdio framing: one JSON-RPC message per '\n'-terminated line, a trailing '\r'
 * accepted. Works in place on a libevent input buffer; lines longer than max_line are
 * reported once and discarded up to their newline, so the stream stays usable. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;

struct framer {
        size_t max_line;   /* bytes, without the newline */
        size_t scanned;    /* leading bytes of the buffer known to hold no '\n' */
        bool discarding;   /* inside an over-long line: drop until its newline */
};

enum frame_kind {
        FRAME_NONE,      /* need more input */
        FRAME_LINE,      /* data/len hold one message; call framer_consume() after use */
        FRAME_OVERSIZE,  /* a line exceeded max_line; its bytes are being discarded */
};

struct frame {
        enum frame_kind kind;
        const char *data;
        size_t len;      /* without the '\n' and the optional '\r' */
        size_t consume;  /* bytes to drain from the buffer once the line is handled */
};

void framer_init(struct framer *f, size_t max_line);

/* Returns the next frame in ret. at_eof: the peer will send nothing more, so an
 * unterminated tail is a final line. Empty lines are skipped. */
enum frame_kind framer_next(struct framer *f, struct evbuffer *in, bool at_eof, struct frame *ret);

/* Drops a FRAME_LINE's bytes from the buffer. */
void framer_consume(struct framer *f, struct evbuffer *in, const struct frame *fr);
