/* Line framing over an evbuffer; see framing.h. */
#include "framing.h"

#include <event2/buffer.h>

void framer_init(struct framer *f, size_t max_line) {
        *f = (struct framer){ .max_line = max_line };
}

/* Offset of the first '\n' at or after from, or -1. */
static ssize_t find_newline(struct evbuffer *in, size_t from) {
        struct evbuffer_ptr start, found;

        if (evbuffer_ptr_set(in, &start, from, EVBUFFER_PTR_SET) < 0)
                return -1;
        found = evbuffer_search(in, "\n", 1, &start);
        return found.pos;
}

/* Drop bytes of an over-long line; true once its newline was reached. */
static bool discard_line(struct framer *f, struct evbuffer *in, bool at_eof) {
        ssize_t nl = find_newline(in, 0);

        if (nl < 0) {
                evbuffer_drain(in, evbuffer_get_length(in));
                if (at_eof)
                        f->discarding = false;
                return false;
        }
        evbuffer_drain(in, (size_t)nl + 1);
        f->discarding = false;
        return true;
}

static enum frame_kind make_line(struct evbuffer *in, size_t len, size_t consume, struct frame *ret) {
        const char *data = (const char *)evbuffer_pullup(in, (ssize_t)consume);

        if (len > 0 && data[len - 1] == '\r')
                len--;
        *ret = (struct frame){ .kind = FRAME_LINE, .data = data, .len = len, .consume = consume };
        return FRAME_LINE;
}

static enum frame_kind oversize(struct frame *ret) {
        *ret = (struct frame){ .kind = FRAME_OVERSIZE };
        return FRAME_OVERSIZE;
}

enum frame_kind framer_next(struct framer *f, struct evbuffer *in, bool at_eof, struct frame *ret) {
        for (;;) {
                size_t avail;
                ssize_t nl;

                *ret = (struct frame){ .kind = FRAME_NONE };
                if (f->discarding && !discard_line(f, in, at_eof))
                        return FRAME_NONE;
                avail = evbuffer_get_length(in);

                nl = find_newline(in, f->scanned);
                if (nl < 0) {
                        f->scanned = avail;
                        if (avail > f->max_line) {
                                /* Report now, not when the newline finally comes: the peer
                                 * hears about it at once and we stop buffering. */
                                evbuffer_drain(in, avail);
                                f->scanned = 0;
                                f->discarding = !at_eof;
                                return oversize(ret);
                        }
                        if (!at_eof || avail == 0)
                                return FRAME_NONE;
                        f->scanned = 0;
                        make_line(in, avail, avail, ret);
                } else {
                        f->scanned = 0;
                        if ((size_t)nl > f->max_line) {
                                evbuffer_drain(in, (size_t)nl + 1);
                                return oversize(ret);
                        }
                        make_line(in, (size_t)nl, (size_t)nl + 1, ret);
                }
                if (ret->len > 0)
                        return FRAME_LINE;
                evbuffer_drain(in, ret->consume); /* blank line: nothing to answer */
        }
}

void framer_consume(struct framer *f, struct evbuffer *in, const struct frame *fr) {
        if (fr->kind == FRAME_LINE)
                evbuffer_drain(in, fr->consume);
        f->scanned = 0;
}
