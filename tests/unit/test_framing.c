/* Unit tests for framing.c: '\n'-delimited lines over an evbuffer. */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        framer_done(&fr);
        evbuffer_free(buf);
}

/* Bytes not framed yet, wherever they are: still in the input or taken by the framer. */
static size_t pending(void) {
        return evbuffer_get_length(buf) + framer_buffered(&fr);
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
        framer_consume(&fr, &f);
}

static void expect_line_from(struct framer *f, const char *want) {
        struct frame fl;

        cr_assert_eq(framer_next(f, buf, false, &fl), FRAME_LINE);
        cr_assert_eq(fl.len, strlen(want));
        cr_assert_arr_eq(fl.data, want, fl.len);
        framer_consume(f, &fl);
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
        cr_assert_eq(pending(), 0);
}

Test(framing, several_lines) {
        add("one\ntwo\nthree\n");
        expect_line("one", false);
        expect_line("two", false);
        expect_line("three", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(pending(), 0);
}

Test(framing, split_line) {
        add("hel");
        expect_kind(FRAME_NONE, false);
        add("lo wor");
        expect_kind(FRAME_NONE, false);
        add("ld\nnext");
        expect_line("hello world", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(pending(), 4, "the partial \"next\" must stay buffered");
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
        framer_consume(&fr, &f);
        cr_assert_eq(pending(), 0);
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
        cr_assert_eq(pending(), 0, "blank lines must be drained");
}

Test(framing, only_blank_lines) {
        add("\n\r\n");
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(pending(), 0);
}

Test(framing, eof_tail_is_a_line) {
        add("done\nabc");
        expect_line("done", false);
        expect_kind(FRAME_NONE, false);
        expect_line("abc", true);
        expect_kind(FRAME_NONE, true);
        cr_assert_eq(pending(), 0);
}

Test(framing, eof_tail_cr_stripped) {
        add("abc\r");
        expect_line("abc", true);
}

Test(framing, eof_blank_tail) {
        add("\r");
        expect_kind(FRAME_NONE, true);
        cr_assert_eq(pending(), 0);
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
        cr_assert_eq(pending(), 0);
}

/* The caller reads the head of an over-long line (the id of a server's answer) from its
 * frame, until its next call; then the bytes are gone. */
Test(framing, oversize_frame_holds_the_head) {
        struct frame f;

        add("{\"id\":1,");
        add_repeated('x', MAX_LINE);
        cr_assert_eq(framer_next(&fr, buf, false, &f), FRAME_OVERSIZE);
        cr_assert_eq(f.len, MAX_LINE + 8);
        cr_assert(memcmp(f.data, "{\"id\":1,", 8) == 0);
        cr_assert_eq(pending(), 0);
        add("tail\n{\"id\":2,");
        add_repeated('y', MAX_LINE);
        add("\nok\n");
        cr_assert_eq(framer_next(&fr, buf, false, &f), FRAME_OVERSIZE);
        cr_assert_eq(f.len, MAX_LINE + 8, "without its newline");
        cr_assert(memcmp(f.data, "{\"id\":2,", 8) == 0);
        framer_consume(&fr, &f);
        expect_line("ok", false);
        expect_kind(FRAME_NONE, false);
        cr_assert_eq(pending(), 0);
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
        cr_assert_eq(pending(), 0, "an over-long line must not stay buffered");
        cr_assert(fr.discarding);

        add_repeated('y', 40);
        expect_kind(FRAME_NONE, false); /* still the same line: no second OVERSIZE */
        cr_assert_eq(pending(), 0);
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
        cr_assert_eq(pending(), 2);
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
        cr_assert_eq(pending(), 0);
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
        cr_assert_eq(pending(), 7, "framer_next must not drain a line itself");
        framer_consume(&fr, &f);
        cr_assert_eq(pending(), 3);
        cr_assert_eq(framer_next(&fr, buf, false, &f), FRAME_LINE);
        memcpy(rest, f.data, f.consume);
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
        framer_consume(&fr, &f);
        cr_assert_eq(pending(), 4);
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

/* A line that arrives a few bytes at a time is framed once its newline comes, however
 * many pieces it took, and the framer's buffer is given back once it is consumed. */
Test(framing, line_in_many_pieces_then_buffer_released) {
        struct framer big;
        struct frame f;
        size_t pieces = 20000;

        framer_init(&big, 1 << 20);
        for (size_t i = 0; i < pieces; i++) {
                cr_assert_eq(evbuffer_add(buf, "abcd", 4), 0);
                cr_assert_eq(framer_next(&big, buf, false, &f), FRAME_NONE);
        }
        add("\n");
        cr_assert_eq(framer_next(&big, buf, false, &f), FRAME_LINE);
        cr_assert_eq(f.len, pieces * 4);
        cr_assert_eq(memcmp(f.data + f.len - 4, "abcd", 4), 0);
        framer_consume(&big, &f);
        cr_assert_eq(framer_buffered(&big), 0);
        cr_assert_null(big.buf, "an empty framer keeps no large buffer");
        framer_done(&big);
}

/* Lines handed out one by one from a single read stay intact while earlier ones are
 * consumed, and the partial tail survives for the next read. */
Test(framing, many_lines_in_one_read) {
        char line[32];

        for (int i = 0; i < 100; i++) {
                snprintf(line, sizeof line, "%d\n", i);
                add(line);
        }
        add("par");
        for (int i = 0; i < 100; i++) {
                snprintf(line, sizeof line, "%d", i);
                expect_line(line, false);
        }
        expect_kind(FRAME_NONE, false);
        add("tial\n");
        expect_line("partial", false);
}

/* ---- framer_read: the server side reads its pipe straight into the framer ---- */

static void pipe_write(int fd, const char *s) {
        cr_assert_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void expect_read_line(struct framer *f, int fd, const char *want) {
        struct frame fl;

        cr_assert_gt(framer_read(f, fd), 0);
        cr_assert_eq(framer_next(f, NULL, false, &fl), FRAME_LINE);
        cr_assert_eq(fl.len, strlen(want));
        cr_assert_arr_eq(fl.data, want, fl.len);
        framer_consume(f, &fl);
}

Test(framing, read_lines_oversize_and_eof) {
        struct framer f;
        struct frame fl;
        int p[2];

        cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
        framer_init(&f, MAX_LINE);
        cr_assert_eq(framer_read(&f, p[0]), -EAGAIN);
        pipe_write(p[1], "{\"a\":1}\n");
        expect_read_line(&f, p[0], "{\"a\":1}");

        pipe_write(p[1], "0123456789abcdefXYZ");          /* over MAX_LINE, no newline yet */
        cr_assert_gt(framer_read(&f, p[0]), 0);
        cr_assert_eq(framer_next(&f, NULL, false, &fl), FRAME_OVERSIZE);
        pipe_write(p[1], "still the long one");           /* dropped as it is read */
        cr_assert_gt(framer_read(&f, p[0]), 0);
        cr_assert_eq(framer_next(&f, NULL, false, &fl), FRAME_NONE);
        cr_assert_eq(framer_buffered(&f), 0);
        pipe_write(p[1], " end\nok\n");                   /* its end, then a good line */
        expect_read_line(&f, p[0], "ok");

        pipe_write(p[1], "tail");
        close(p[1]);
        cr_assert_gt(framer_read(&f, p[0]), 0);
        cr_assert_eq(framer_read(&f, p[0]), 0, "EOF");
        cr_assert_eq(framer_next(&f, NULL, true, &fl), FRAME_LINE, "an unterminated tail is the last line");
        cr_assert_arr_eq(fl.data, "tail", 4);
        framer_consume(&f, &fl);
        framer_done(&f);
        close(p[0]);
}

/* An 8 MiB line read from a pipe in many reads (the buffer growing by mremap() as a
 * mapping of its own), then a small one: each byte is searched for the newline once, not
 * once per read, and the line comes whole. */
Test(framing, large_line_over_many_reads_is_searched_once) {
        const size_t size = 8u << 20;
        char *line = malloc(size + 6);
        size_t sent = 0, searched = 0, reads = 0;
        struct framer f;
        struct frame fl;
        enum frame_kind k = FRAME_NONE;
        int p[2];

        cr_assert_not_null(line);
        for (size_t i = 0; i < size; i++)
                line[i] = "abcdefghijklmnopqrstuvwxyz0123456789 ,.-"[(i * 7 + i / 41) % 40];
        memcpy(line + size, "\nnext\n", 6);
        cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
        framer_init(&f, 16u << 20);
        while (k == FRAME_NONE) {
                ssize_t n = sent < size + 6 ? write(p[1], line + sent, size + 6 - sent) : 0;

                if (n > 0)
                        sent += (size_t)n;
                while (k == FRAME_NONE && framer_read(&f, p[0]) > 0) {
                        size_t before = f.scanned;

                        reads++;
                        k = framer_next(&f, NULL, false, &fl);
                        searched += (k == FRAME_NONE ? framer_buffered(&f) : fl.consume) - before;
                }
        }
        cr_assert_eq(k, FRAME_LINE);
        cr_assert_gt(reads, 8, "the line came in %zu reads", reads);
        cr_assert_eq(searched, size + 1, "%zu bytes searched for a line of %zu", searched, size + 1);
        cr_assert_eq(fl.len, size);
        cr_assert(memcmp(fl.data, line, size) == 0, "the line came changed");
        framer_consume(&f, &fl);
        while (sent < size + 6) {
                ssize_t n = write(p[1], line + sent, size + 6 - sent);
                cr_assert_gt(n, 0);
                sent += (size_t)n;
        }
        if (framer_next(&f, NULL, false, &fl) == FRAME_NONE)
                cr_assert_gt(framer_read(&f, p[0]), 0);
        cr_assert_eq(framer_next(&f, NULL, false, &fl), FRAME_LINE);
        cr_assert_arr_eq(fl.data, "next", 4);
        framer_consume(&f, &fl);
        framer_done(&f);
        close(p[0]);
        close(p[1]);
        free(line);
}

/* With framer_keep(), an emptied large buffer stays for the next line, which is read into
 * it without regrowing it; framer_trim() gives it back. */
Test(framing, kept_buffer_serves_the_next_large_line_until_trimmed) {
        const size_t size = 1u << 20;
        char *line = malloc(size + 1);
        struct framer f;
        struct frame fl;
        const char *kept;
        size_t cap;

        cr_assert_not_null(line);
        memset(line, 'q', size);
        line[size] = '\n';
        framer_init(&f, 4u << 20);
        framer_keep(&f, SIZE_MAX);
        for (int round = 0; round < 2; round++) {
                cr_assert_eq(evbuffer_add(buf, line, size + 1), 0);
                cr_assert_eq(framer_next(&f, buf, false, &fl), FRAME_LINE);
                cr_assert_eq(fl.len, size);
                if (round == 1) {
                        cr_assert_eq(fl.data, kept, "the second line went elsewhere");
                        cr_assert_eq(f.cap, cap, "the buffer was regrown");
                }
                framer_consume(&f, &fl);
                cr_assert(framer_spare(&f), "the emptied buffer was given back");
                kept = f.buf;
                cap = f.cap;
        }
        framer_trim(&f);
        cr_assert_null(f.buf);
        cr_assert_not(framer_spare(&f));
        cr_assert_eq(evbuffer_add(buf, "ok\n", 3), 0);
        expect_line_from(&f, "ok");
        framer_done(&f);
        free(line);
}

/* A client's framer keeps nothing (framer_keep(0)): its buffer is there only while some of
 * what was read is unread, so an idle client holds none. Bytes read elsewhere (onto the
 * stack) come in with framer_add(). */
Test(framing, keep_none_frees_the_buffer_once_every_line_is_taken) {
        struct framer f;
        struct frame fl;

        framer_init(&f, 1024);
        framer_keep(&f, 0);
        cr_assert_eq(framer_add(&f, "{\"a\":", 5), 0);
        cr_assert_eq(framer_next(&f, NULL, false, &fl), FRAME_NONE);
        cr_assert_eq(framer_add(&f, "1}\n{\"b\"", 7), 0);
        cr_assert_eq(framer_next(&f, NULL, false, &fl), FRAME_LINE);
        cr_assert_arr_eq(fl.data, "{\"a\":1}", 7);
        framer_consume(&f, &fl);
        cr_assert_not_null(f.buf, "an unfinished line was dropped");
        cr_assert_eq(framer_buffered(&f), 4);
        cr_assert_eq(framer_next(&f, NULL, false, &fl), FRAME_NONE);
        cr_assert_eq(framer_add(&f, ":2}\n", 4), 0);
        cr_assert_eq(framer_next(&f, NULL, false, &fl), FRAME_LINE);
        cr_assert_arr_eq(fl.data, "{\"b\":2}", 7);
        framer_consume(&f, &fl);
        cr_assert_null(f.buf, "an emptied buffer was kept");
        cr_assert_eq(f.cap, 0);
        framer_done(&f);
}

/* ---- a line lent by reference (framer_lend()) ---- */

/* A large line is lent where it was read: its bytes stay as they were while the framer
 * goes on with what followed it (in the same read) and reads more; the lent buffer comes
 * back as the framer's spare once its last holder lets it go, and the next large line is
 * read into it. */
Test(framing, a_lent_line_stays_while_the_framer_reads_on) {
        const size_t size = 1u << 20;
        char *line = malloc(size + 1), *copy = malloc(size);
        struct framer f;
        struct frame fl;
        struct framer_offer offer;
        struct loan *l, *again;
        const char *lent;

        cr_assert(line && copy);
        for (size_t i = 0; i < size; i++)
                line[i] = (char)('a' + (i * 7 + i / 26) % 26);
        line[size] = '\n';
        memcpy(copy, line, size);
        framer_init(&f, 4u << 20);
        framer_keep(&f, SIZE_MAX);
        cr_assert_eq(evbuffer_add(buf, line, size + 1), 0);
        cr_assert_eq(evbuffer_add(buf, "{\"next\":", 8), 0);
        cr_assert_eq(framer_next(&f, buf, false, &fl), FRAME_LINE);
        framer_offer(&f, &fl, &offer);
        cr_assert_eq(offer.offer.data, fl.data);
        l = loan_take(&offer.offer, fl.data + 10, size - 10);
        cr_assert_not_null(l, "a line in a mapped buffer was not lent");
        again = loan_take(&offer.offer, fl.data, size);
        cr_assert_eq(again, l, "a second take is another reference to the same loan");
        loan_put(again);
        cr_assert_null(loan_take(&offer.offer, fl.data + size - 4, 8), "bytes past the line lent");
        cr_assert_arr_eq(fl.data, copy, size, "the frame's bytes moved");
        cr_assert_eq(framer_buffered(&f), 8, "what followed the line was lost");
        lent = fl.data;
        framer_consume(&f, &fl);
        cr_assert(framer_spare(&f), "a buffer out on loan is not one to come back");
        /* The framer reads on into a buffer of its own; the loan's bytes stay. */
        cr_assert_eq(evbuffer_add(buf, "1}\n", 3), 0);
        expect_line_from(&f, "{\"next\":1}");
        cr_assert_eq(evbuffer_add(buf, line, size + 1), 0); /* grows past 256 KiB again meanwhile */
        cr_assert_eq(framer_next(&f, buf, false, &fl), FRAME_LINE);
        cr_assert_neq(fl.data, lent, "read into the lent buffer");
        framer_consume(&f, &fl);
        cr_assert_arr_eq(lent, copy, size, "the lent bytes changed");
        cr_assert_null(f.spare);
        loan_put(l); /* the last holder: the larger buffer comes back as the spare */
        cr_assert_not_null(f.spare, "the lent buffer did not come back");
        framer_trim(&f);
        cr_assert_null(f.spare, "the spare was kept past framer_trim()");
        cr_assert_not(framer_spare(&f));
        framer_done(&f);
        free(line);
        free(copy);
}

/* A loan outlives its framer: its last holder unmaps it. Small lines (in a malloc'd
 * buffer) are not lent. */
Test(framing, a_loan_outlives_its_framer) {
        const size_t size = 512u << 10;
        char *line = malloc(size + 1);
        struct framer f;
        struct frame fl;
        struct framer_offer offer;
        struct loan *l;

        cr_assert_not_null(line);
        memset(line, 'w', size);
        line[size] = '\n';
        framer_init(&f, 4u << 20);
        cr_assert_eq(evbuffer_add(buf, "{\"small\":1}\n", 12), 0);
        cr_assert_eq(framer_next(&f, buf, false, &fl), FRAME_LINE);
        framer_offer(&f, &fl, &offer);
        cr_assert_null(loan_take(&offer.offer, fl.data, fl.len), "a line in a malloc'd buffer lent");
        framer_consume(&f, &fl);
        cr_assert_eq(evbuffer_add(buf, line, size + 1), 0);
        cr_assert_eq(framer_next(&f, buf, false, &fl), FRAME_LINE);
        framer_offer(&f, &fl, &offer);
        l = loan_take(&offer.offer, fl.data, fl.len);
        cr_assert_not_null(l);
        framer_consume(&f, &fl);
        framer_done(&f);
        cr_assert_eq(memchr(fl.data, 'x', size), NULL);
        cr_assert_eq(((const char *)fl.data)[size - 1], 'w', "the lent bytes went with the framer");
        loan_put(l);
        free(line);
}
