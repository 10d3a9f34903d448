/* MCP stdio framing: one JSON-RPC message per '\n'-terminated line, a trailing '\r'
 * accepted. Takes the bytes of a libevent input buffer into one contiguous buffer of its
 * own, so a line arriving in thousands of reads is scanned once, not once per read (the
 * search in an evbuffer starts from its first chunk every time). Lines longer than
 * max_line are reported once, with what was taken of them so far (so the caller can read
 * the line's head), and discarded up to their newline, so the stream stays usable. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "loan.h"

struct evbuffer;
struct framer_home;

struct framer {
        size_t max_line;   /* bytes, without the newline */
        char *buf;         /* bytes taken from the input; [start, len) not consumed yet */
        size_t start, len, cap;
        size_t scanned;    /* bytes from start known to hold no '\n' */
        size_t held;       /* bytes of an over-long line reported, dropped at the next call */
        size_t keep;       /* an emptied buffer up to this size is kept (framer_keep()) */
        bool discarding;   /* inside an over-long line: drop until its newline */
        struct loan *lent; /* the frame being handled was lent (framer_lend()): the
                            * framer's reference, dropped by framer_consume() */
        struct framer_home *home; /* where lent buffers come back to; NULL before the first */
        char *spare;       /* a lent buffer come back, for the next large line; NULL: none */
        size_t spare_cap;
};

enum frame_kind {
        FRAME_NONE,      /* need more input */
        FRAME_LINE,      /* data/len hold one message; call framer_consume() after use */
        FRAME_OVERSIZE,  /* a line exceeded max_line (or memory ran out); data/len hold what
                          * was taken of it, at least its first max_line bytes unless memory
                          * ran out; the rest is discarded */
};

struct frame {
        enum frame_kind kind;
        const char *data;
        size_t len;      /* without the '\n' and the optional '\r' */
        size_t consume;  /* bytes the line takes, with its newline */
};

void framer_init(struct framer *f, size_t max_line);
void framer_done(struct framer *f);

/* Reads from fd straight into the framer's buffer, in reads that grow with an unfinished
 * line (a libevent 2.1 evbuffer reads 4 KiB at a time, whatever its bufferevent asks).
 * Returns the bytes read, 0 at EOF, or -errno (-EAGAIN: nothing to read now). While an
 * over-long line is being discarded, what is read is dropped up to its end. */
ssize_t framer_read(struct framer *f, int fd);

/* Returns the next frame in ret, taking what in holds (in may be NULL). at_eof: the peer will send
 * nothing more, so an unterminated tail is a final line. Empty lines are skipped. The
 * frame's data stays valid until framer_consume() or the next framer_next() or
 * framer_read(). */
enum frame_kind framer_next(struct framer *f, struct evbuffer *in, bool at_eof, struct frame *ret);

/* Done with a frame: drops its bytes (an over-long line's are dropped anyway at the next
 * call). */
void framer_consume(struct framer *f, const struct frame *fr);

/* Lends a line's bytes where they are (loan.h), rather than have them copied: the buffer
 * becomes the loan's, which keeps only the pages of the line (the rest is given back), and
 * the framer goes on in a buffer of its own, into which what followed the line is moved.
 * Once its last holder lets it go the buffer comes back to the framer (while it lives) as
 * its spare, so that lines one after another are read into pages already there. Only a
 * line in a mapped buffer (one grown past 256 KiB) is lent; NULL otherwise, or when memory
 * ran out. The frame stays valid as before; fr must be the last frame returned, not yet
 * consumed. A reference for the caller. */
struct loan *framer_lend(struct framer *f, const struct frame *fr);

/* The offer of a frame's bytes (loan.h) whose take() is framer_lend(): valid until
 * framer_consume(). */
struct framer_offer {
        struct loan_offer offer;       /* first */
        struct framer *framer;
        const struct frame *frame;
};
void framer_offer(struct framer *f, const struct frame *fr, struct framer_offer *ret);

/* An emptied buffer of up to bytes is kept for the next lines rather than given back
 * (16 KiB by default; 0: none, as for a client that is mostly idle): a peer sending large
 * lines one after another then reads each into pages already there. Whoever asks for it gives the buffer back with framer_trim() once
 * the peer has gone quiet. */
void framer_keep(struct framer *f, size_t bytes);
/* Whether the framer holds more than 16 KiB with nothing in it, or will: a buffer lent and
 * not back yet comes back as a spare. */
bool framer_spare(const struct framer *f);
/* Gives back a spare buffer (framer_spare()); one still lent is given back by its last
 * holder. */
void framer_trim(struct framer *f);

/* Appends n bytes read elsewhere (a read onto the stack) to the buffer, grown to just what
 * they need: 0 or -ENOMEM (nothing taken). */
int framer_add(struct framer *f, const void *data, size_t n);

/* Bytes taken but not framed yet: the start of an unfinished line. */
size_t framer_buffered(const struct framer *f);
