/* Unit tests for line-ring.c: a server's last lines, bounded in lines and bytes, each valid
 * UTF-8, numbered so that a reader can ask for what came since. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "line-ring.h"
#include "utf8.h"

Test(line_ring, keeps_the_last_lines_in_order) {
        struct line_ring r = { 0 };
        char text[32];

        for (int i = 1; i <= 50; i++) {
                snprintf(text, sizeof text, "line %d", i);
                cr_assert_eq(line_ring_add(&r, text, (uint64_t)i), 0);
        }
        cr_assert_eq(r.n, LINE_RING_LINES);
        cr_assert_eq(r.last_seq, 50);
        for (size_t i = 0; i < r.n; i++) {
                snprintf(text, sizeof text, "line %zu", 50 - LINE_RING_LINES + 1 + i);
                cr_assert_str_eq(line_ring_get(&r, i)->text, text);
                cr_assert_eq(line_ring_get(&r, i)->seq, 50 - LINE_RING_LINES + 1 + i);
                cr_assert_eq(line_ring_get(&r, i)->realtime_usec, 50 - LINE_RING_LINES + 1 + i);
        }
        line_ring_done(&r);
        cr_assert_eq(r.n, 0);
        cr_assert_eq(r.bytes, 0);
}

Test(line_ring, blank_lines_not_kept) {
        struct line_ring r = { 0 };

        cr_assert_eq(line_ring_add(&r, "", 0), 0);
        cr_assert_eq(line_ring_add(&r, " \t ", 0), 0);
        cr_assert_eq(r.n, 0);
        cr_assert_eq(r.last_seq, 0);
}

/* Long lines: each cut at LINE_RING_LINE_MAX bytes (the cut marked, never inside a
 * character), and the oldest dropped to keep the bytes in bound. */
Test(line_ring, bounded_in_bytes_and_valid_utf8) {
        struct line_ring r = { 0 };
        char big[3 * LINE_RING_LINE_MAX];

        /* "é" is two bytes: an odd cut would split one */
        for (size_t i = 0; i + 1 < sizeof big; i += 2)
                memcpy(big + i, "\xc3\xa9", 2);
        big[sizeof big - 1] = '\0';
        for (int i = 0; i < 100; i++)
                cr_assert_eq(line_ring_add(&r, big, 0), 0);
        cr_assert_leq(r.bytes, LINE_RING_BYTES);
        cr_assert_eq(r.n, LINE_RING_BYTES / LINE_RING_LINE_MAX, "%zu lines of %d bytes", r.n, LINE_RING_LINE_MAX);
        for (size_t i = 0; i < r.n; i++) {
                const char *t = line_ring_get(&r, i)->text;
                size_t len = strlen(t);

                cr_assert_leq(len, LINE_RING_LINE_MAX);
                cr_assert(utf8_valid(t, len));
                cr_assert_str_eq(t + len - 3, "\xe2\x80\xa6", "a cut line ends in an ellipsis");
        }
        /* invalid bytes are mended */
        cr_assert_eq(line_ring_add(&r, "bad \xff byte", 0), 0);
        cr_assert(utf8_valid(line_ring_get(&r, r.n - 1)->text, strlen(line_ring_get(&r, r.n - 1)->text)));
        line_ring_done(&r);
}
