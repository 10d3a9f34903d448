/* A server's last lines (its stderr), kept for mcpvisorctl status NAME and logs NAME: at
 * most LINE_RING_LINES, and LINE_RING_BYTES of text together (the oldest go first), each
 * valid UTF-8 and cut at LINE_RING_LINE_MAX bytes (ending in "…" when cut), with its time
 * and a number that grows by one a line, so that a reader asking again gets only what came
 * since and knows what it missed. Blank lines are not kept. Pure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define LINE_RING_LINES 20
#define LINE_RING_BYTES 8192
#define LINE_RING_LINE_MAX 1024

struct line_ring_line {
        uint64_t seq;            /* 1 for the first line kept */
        uint64_t realtime_usec;  /* when it was read (CLOCK_REALTIME) */
        char *text;              /* malloc'd */
};

struct line_ring {
        struct line_ring_line lines[LINE_RING_LINES];
        size_t first, n;         /* the oldest is lines[first] */
        size_t bytes;            /* of the texts kept */
        uint64_t last_seq;       /* of the newest line ever kept; 0: none */
};

/* Keeps text (any bytes up to its NUL), dropping the oldest lines to make room. -ENOMEM
 * (nothing kept, nothing dropped). */
int line_ring_add(struct line_ring *r, const char *text, uint64_t realtime_usec);
/* The i-th oldest line kept, i < r->n. */
const struct line_ring_line *line_ring_get(const struct line_ring *r, size_t i);
void line_ring_done(struct line_ring *r);
