/* Unit tests for framing.c: '\n'-delimited lines over an evbuffer. */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <string.h>

#include "framing.h"

#define MAX_LINE 16

static struct evbuffer *buf;
static struct framer fr;

static void setup(void) {
        buf = evbuffer_new();
        cr_assert_not_null(buf);
        framer_init(&fr, MAX_LINE);
}

static void teardown(void) {
        evbuffer_free(buf);
}

TestSuite(framing, .init = setup, .fini = teardown);

static void add(const char *s) {
        cr_assert_eq(evbuffer_add(buf, s, strlen(s)), 0);
}

static void add_repeated(char c, size_t n) {
        char tmp[256];

        cr_assert_leq(n, sizeof tmp);
        memset(tmp, c, n);
        cr_assert_eq(evbuffer_add(buf, tmp, n), 0);
}

/* The next frame must be the line want; it is consumed. */
static void expect_line(const char *want, bool at_eof) {
        struct frame f;
        enum frame_kind k = framer_next(&fr, buf, at_eof, &f);

        cr_assert_eq(k, FRAME_LINE, "expected line \"%s\", got frame kind %d", want, k);
        cr_assert_eq(f.kind, FRAME_LINE);
        cr_assert_eq(f.len, strlen(want), "line length %zu, expected %zu", f.len, strlen(want));
        cr_assert_arr_eq(f.data, want, f.len, "line is \"%.*s\", expected \"%s\"", (int)f.len, f.data, want);
        framer_consume(&fr, buf, &f);
}

static void expect_kind(enum frame_kind want, bool at_eof) {
        struct frame f;
        enum frame_kind k = framer_next(&fr, buf, at_eof, &f);

        cr_assert_eq(k, want, "frame kind %d, expected %d", k, want);
        cr_assert_eq(f.kind, want);
}

Test(framing, init) {
        struct framer f = { .max_line = 1, .scanned = 99, .discarding = true };

        framer_init(&f, 4096);
        cr_assert_eq(f.max_line, 4096);
        cr_assert_eq(f.scanned, 0);
        cr_assert_not(f.discarding);
}

Test(framing, empty_buffer) {
        expect_kind(FRAME_NONE, false);
        expect_kind(FRAME_NONE, true);
}

Test(framing, single_line) {
        add("{\"a\":1}\n");
        expect_line("{\"a\":1}", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, several_lines) {
        add("one\ntwo\nthree\n");
        expect_line("one", false);
        expect_line("two", false);
        expect_line("three", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, split_line) {
        add("hel");
        expect_kind(FRAME_NONE, false);
        add("lo wor");
        expect_kind(FRAME_NONE, false);
        add("ld\nnext");
        expect_line("hello world", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(evbuffer_get_length(buf), 4, "the partial \"next\" must stay buffered");
        add("\n");
        expect_line("next", false);
        expect_kind(FRAME_NONE, false);
}

Test(framing, newline_arrives_alone) {
        add("abc");
        expect_kind(FRAME_NONE, false);
        add("\n");
        expect_line("abc", false);
}

Test(framing, crlf) {
        struct frame f;

        add("abc\r\n");
        cr_assert_eq(framer_next(&fr, buf, false, &f), FRAME_LINE);
        cr_assert_eq(f.len, 3);
        cr_assert_eq(f.consume, 5);
        cr_assert_arr_eq(f.data, "abc", 3);
        framer_consume(&fr, buf, &f);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, inner_cr_kept) {
        /* Only a '\r' right before the '\n' belongs to the line ending. */
        add("a\rb\r\r\n");
        expect_line("a\rb\r", false);
}

Test(framing, cr_split_from_lf) {
        add("abc\r");
        expect_kind(FRAME_NONE, false);
        add("\n");
        expect_line("abc", false);
}

Test(framing, blank_lines_skipped) {
        add("\n\r\n\n\r\nx\n\n");
        expect_line("x", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(evbuffer_get_length(buf), 0, "blank lines must be drained");
}

Test(framing, only_blank_lines) {
        add("\n\r\n");
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, eof_tail_is_a_line) {
        add("done\nabc");
        expect_line("done", false);
        expect_kind(FRAME_NONE, false);
        expect_line("abc", true);
        expect_kind(FRAME_NONE, true);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, eof_tail_cr_stripped) {
        add("abc\r");
        expect_line("abc", true);
}

Test(framing, eof_blank_tail) {
        add("\r");
        expect_kind(FRAME_NONE, true);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, eof_after_partial) {
        add("ab");
        expect_kind(FRAME_NONE, false);
        add("cd");
        expect_line("abcd", true);
}

Test(framing, exact_max_line) {
        add_repeated('x', MAX_LINE);
        add("\n");
        expect_line("xxxxxxxxxxxxxxxx", false);
}

Test(framing, exact_max_line_in_pieces) {
        add_repeated('x', MAX_LINE);
        expect_kind(FRAME_NONE, false);
        add("\n");
        expect_line("xxxxxxxxxxxxxxxx", false);
}

Test(framing, exact_max_line_at_eof) {
        add_repeated('x', MAX_LINE);
        expect_line("xxxxxxxxxxxxxxxx", true);
}

Test(framing, oversize_complete) {
        add_repeated('x', MAX_LINE + 1);
        add("\nok\n");
        expect_kind(FRAME_OVERSIZE, false);
        expect_line("ok", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, oversize_complete_after_partial) {
        add_repeated('x', 10);
        expect_kind(FRAME_NONE, false);
        add_repeated('x', 10);
        add("\nok\n");
        expect_kind(FRAME_OVERSIZE, false);
        expect_line("ok", false);
}

Test(framing, oversize_in_pieces) {
        add_repeated('x', 10);
        expect_kind(FRAME_NONE, false);
        add_repeated('x', 10);
        expect_kind(FRAME_OVERSIZE, false);
        cr_assert_eq(evbuffer_get_length(buf), 0, "an over-long line must not stay buffered");
        cr_assert(fr.discarding);

        add_repeated('y', 40);
        expect_kind(FRAME_NONE, false); /* still the same line: no second OVERSIZE */
        cr_assert_eq(evbuffer_get_length(buf), 0);
        add("yyy\nok\n");
        expect_line("ok", false);
        cr_assert_not(fr.discarding);
        expect_kind(FRAME_NONE, false);
}

Test(framing, oversize_newline_alone) {
        add_repeated('x', MAX_LINE + 1);
        expect_kind(FRAME_OVERSIZE, false);
        add("\n");
        expect_kind(FRAME_NONE, false);
        add("next\n");
        expect_line("next", false);
}

Test(framing, oversize_then_next_in_same_chunk) {
        add_repeated('x', MAX_LINE + 1);
        expect_kind(FRAME_OVERSIZE, false);
        add("tail\nnext\n");
        expect_line("next", false);
        expect_kind(FRAME_NONE, false);
}

/* After the discarded tail is drained, what is left is the start of a new line: the
 * framer must not count the drained bytes as already scanned. */
Test(framing, oversize_then_partial_line) {
        add_repeated('x', MAX_LINE + 1);
        expect_kind(FRAME_OVERSIZE, false);
        add("tail\nok");
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(evbuffer_get_length(buf), 2);
        add("\n");
        expect_line("ok", false);
}

Test(framing, oversize_then_long_partial_line) {
        add_repeated('x', MAX_LINE + 1);
        expect_kind(FRAME_OVERSIZE, false);
        add_repeated('y', 10);
        add("\n");
        add_repeated('z', 10);
        /* 21 bytes arrived, but the pending line holds only 10: not over the limit. */
        expect_kind(FRAME_NONE, false);
        add("\n");
        expect_line("zzzzzzzzzz", false);
}

Test(framing, oversize_at_eof) {
        add_repeated('x', MAX_LINE + 1);
        expect_kind(FRAME_OVERSIZE, true);
        cr_assert_not(fr.discarding, "nothing more will come, so nothing is left to discard");
        expect_kind(FRAME_NONE, true);
        cr_assert_eq(evbuffer_get_length(buf), 0);
}

Test(framing, two_oversize_lines) {
        add_repeated('x', MAX_LINE + 1);
        add("\n");
        add_repeated('y', MAX_LINE + 5);
        add("\nok\n");
        expect_kind(FRAME_OVERSIZE, false);
        expect_kind(FRAME_OVERSIZE, false);
        expect_line("ok", false);
}

Test(framing, consume_drains_exactly_the_line) {
        struct frame f;
        char rest[8] = { 0 };

        add("ab\r\ncd\n");
        cr_assert_eq(framer_next(&fr, buf, false, &f), FRAME_LINE);
        cr_assert_eq(f.len, 2);
        cr_assert_eq(f.consume, 4);
        cr_assert_eq(evbuffer_get_length(buf), 7, "framer_next must not drain a line itself");
        framer_consume(&fr, buf, &f);
        cr_assert_eq(evbuffer_get_length(buf), 3);
        cr_assert_eq(evbuffer_copyout(buf, rest, sizeof rest - 1), 3);
        cr_assert_str_eq(rest, "cd\n");
}

Test(framing, next_without_consume_repeats) {
        struct frame a, b;

        add("same\nother\n");
        cr_assert_eq(framer_next(&fr, buf, false, &a), FRAME_LINE);
        cr_assert_eq(framer_next(&fr, buf, false, &b), FRAME_LINE);
        cr_assert_eq(b.len, 4);
        cr_assert_arr_eq(b.data, "same", 4);
}

Test(framing, consume_ignores_non_lines) {
        struct frame f = { .kind = FRAME_OVERSIZE, .consume = 3 };

        add("abc\n");
        framer_consume(&fr, buf, &f);
        cr_assert_eq(evbuffer_get_length(buf), 4);
        expect_line("abc", false);
}

Test(framing, data_is_contiguous) {
        struct frame f;

        /* Separate evbuffer_add calls may land in separate chains; data must still be one span. */
        for (int i = 0; i < 8; i++)
                add("ab");
        add("\n");
        cr_assert_eq(framer_next(&fr, buf, false, &f), FRAME_LINE);
        cr_assert_eq(f.len, 16);
        cr_assert_arr_eq(f.data, "abababababababab", 16);
}

Test(framing, large_limit_many_chunks) {
        char chunk[100];
        struct frame f;

        framer_init(&fr, 1000);
        memset(chunk, 'z', sizeof chunk);
        for (int i = 0; i < 10; i++) {
                cr_assert_eq(evbuffer_add(buf, chunk, sizeof chunk), 0);
                expect_kind(FRAME_NONE, false);
        }
        add("\n");
        cr_assert_eq(framer_next(&fr, buf, false, &f), FRAME_LINE);
        cr_assert_eq(f.len, 1000);
        cr_assert_eq(f.data[0], 'z');
        cr_assert_eq(f.data[999], 'z');
}
