/* Unit tests for stderr-reader.c: a server's stderr pipe read on an event_base and cut
 * into log lines. The daemon's log goes to stderr (no journal here), which each test
 * points at a file of its own and reads back. */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "stderr-reader.h"
#include "time-util.h"
#include "unit-helpers.h"
#include "utf8.h"

static struct event_base *base;
static struct logger lg;
static struct stderr_reader rd;
static struct line_ring ring;   /* the server's last lines */
static int server_end = -1; /* the server's stderr: the test writes here */

static bool logged_has(const char *s) {
        return strstr(logged(), s) != NULL;
}

static void start_with_level(int max_priority) {
        int fds[2];

        logger_init(&lg, max_priority);
        cr_assert_not(lg.journal);
        /* The daemon's end is non-blocking, as instance.c makes it. */
        open_pipe(fds, PIPE_READ_NONBLOCK);
        server_end = fds[1];
        cr_assert_eq(stderr_reader_start(&rd, base, fds[0], "srv", &lg, &ring), 0);
        cr_assert_str_eq(rd.last, "");
}

static void setup(void) {
        log_capture_start();
        base = loop_start();
        memset(&rd, 0, sizeof rd);
}

static void teardown(void) {
        stderr_reader_finish(&rd);
        line_ring_done(&ring);
        if (server_end >= 0)
                close(server_end);
        server_end = -1;
        loop_stop();
        log_capture_stop();
}

TestSuite(stderr_reader, .init = setup, .fini = teardown);

static void server_says(const char *s) {
        write_all(server_end, s, strlen(s));
}

static void server_repeat(char c, size_t n) {
        char buf[1024];

        memset(buf, c, sizeof buf);
        while (n > 0) {
                size_t k = n < sizeof buf ? n : sizeof buf;
                write_all(server_end, buf, k);
                n -= k;
        }
}

static void server_close(void) {
        close(server_end);
        server_end = -1;
}

Test(stderr_reader, lines) {
        start_with_level(LOG_DEBUG);
        server_says("hello\nworld\n");
        WAIT_UNTIL(logged_has("srv: world\n"));
        cr_assert_str_eq(logged(), "srv: hello\nsrv: world\n");
        cr_assert_str_eq(rd.last, "world");

        server_says("one more");
        server_says(" line\n");
        WAIT_UNTIL(logged_has("srv: one more line\n"));
        cr_assert_str_eq(logged(), "srv: hello\nsrv: world\nsrv: one more line\n");
}

Test(stderr_reader, partial_line_waits_for_newline) {
        start_with_level(LOG_DEBUG);
        server_says("first\nhalf");
        WAIT_UNTIL(logged_has("srv: first\n"));
        /* The bytes are read; an unterminated line is not logged while the pipe is open. */
        for (int i = 0; i < 3; i++)
                loop_once();
        cr_assert_str_eq(logged(), "srv: first\n");
        server_says(" done\n");
        WAIT_UNTIL(logged_has("srv: half done\n"));
        cr_assert_str_eq(logged(), "srv: first\nsrv: half done\n");
}

Test(stderr_reader, crlf) {
        start_with_level(LOG_DEBUG);
        server_says("windows\r\nstyle\r\n");
        WAIT_UNTIL(logged_has("style"));
        cr_assert_str_eq(logged(), "srv: windows\nsrv: style\n");
        cr_assert_str_eq(rd.last, "style");
}

Test(stderr_reader, priority_prefix) {
        /* Plain stderr shows no level; what the logger lets through shows the priority. */
        start_with_level(LOG_NOTICE);
        server_says("<3>bad thing\nplain info\n<7>debugging\n<5>a notice\n<6>info\n<0>done\n");
        WAIT_UNTIL(logged_has("srv: done\n"));
        cr_assert_str_eq(logged(), "srv: bad thing\nsrv: a notice\nsrv: done\n");
}

Test(stderr_reader, not_a_priority_prefix) {
        start_with_level(LOG_DEBUG);
        server_says("<8>eight\n<a>letter\n<3\n<>empty\n <3>space\n<33>two digits\n<3>\n");
        WAIT_UNTIL(occurrences(logged(), "\n") == 7);
        cr_assert_str_eq(logged(), "srv: <8>eight\nsrv: <a>letter\nsrv: <3\nsrv: <>empty\nsrv:  <3>space\n"
                                   "srv: <33>two digits\nsrv: \n");
}

Test(stderr_reader, not_a_priority_prefix_is_info) {
        start_with_level(LOG_NOTICE);
        server_says("<8>eight\n<4>done\n");
        WAIT_UNTIL(logged_has("srv: done\n"));
        cr_assert_str_eq(logged(), "srv: done\n");
}

/* "srv: " + n times c + marker + "\n" */
static char *cut_line(char c) {
        static const char marker[] = " [line cut at 4096 bytes]\n";
        char *s = malloc(5 + STDERR_LINE_MAX + sizeof marker);

        cr_assert_not_null(s);
        memcpy(s, "srv: ", 5);
        memset(s + 5, c, STDERR_LINE_MAX);
        memcpy(s + 5 + STDERR_LINE_MAX, marker, sizeof marker);
        return s;
}

Test(stderr_reader, long_line_cut_once) {
        char *want = cut_line('x'), *all;

        start_with_level(LOG_DEBUG);
        server_repeat('x', 5000);
        server_says("\nnext\n");
        WAIT_UNTIL(logged_has("srv: next\n"));
        cr_assert(asprintf(&all, "%ssrv: next\n", want) > 0);
        cr_assert_str_eq(logged(), all);
        cr_assert_eq(occurrences(logged(), "[line cut"), 1);
        free(all);
        free(want);
}

Test(stderr_reader, long_line_remainder_skipped_across_reads) {
        char *want = cut_line('y'), *all;

        start_with_level(LOG_DEBUG);
        server_repeat('y', STDERR_LINE_MAX + 1);
        WAIT_UNTIL(logged_has("[line cut at 4096 bytes]"));
        cr_assert_str_eq(logged(), want);
        /* The rest of the line, in pieces and longer than the limit again: not logged,
         * no second marker. */
        for (int i = 0; i < 3; i++) {
                server_repeat('z', 3000);
                for (int k = 0; k < 3; k++)
                        loop_once();
        }
        server_says("z\ntail\n");
        WAIT_UNTIL(logged_has("srv: tail\n"));
        cr_assert(asprintf(&all, "%ssrv: tail\n", want) > 0);
        cr_assert_str_eq(logged(), all);
        cr_assert_eq(occurrences(logged(), "z"), 0, "the rest of the cut line was logged");
        free(all);
        free(want);
}

Test(stderr_reader, line_of_exactly_the_limit_not_cut) {
        char *want = cut_line('w');

        start_with_level(LOG_DEBUG);
        strcpy(want + 5 + STDERR_LINE_MAX, "\nsrv: after\n");
        server_repeat('w', STDERR_LINE_MAX);
        server_says("\nafter\n");
        WAIT_UNTIL(logged_has("srv: after\n"));
        cr_assert_str_eq(logged(), want);
        free(want);
}

Test(stderr_reader, long_line_keeps_priority) {
        start_with_level(LOG_ERR);
        server_says("<3>");
        server_repeat('e', 6000);
        server_says("\n<6>info\n<2>end\n");
        WAIT_UNTIL(logged_has("srv: end\n"));
        cr_assert_eq(occurrences(logged(), "[line cut at 4096 bytes]"), 1);
        cr_assert_eq(occurrences(logged(), "srv: "), 2);
        cr_assert_eq(strncmp(logged(), "srv: eee", 8), 0);
}

Test(stderr_reader, finish_flushes_unterminated_last_line) {
        start_with_level(LOG_DEBUG);
        /* The write end stays open, as when the server left a process behind holding it:
         * finish must read what is there without waiting. */
        server_says("a\npartial");
        stderr_reader_finish(&rd);
        cr_assert_null(rd.bev);
        cr_assert_str_eq(logged(), "srv: a\nsrv: partial\n");
        cr_assert_str_eq(rd.last, "partial");
        stderr_reader_finish(&rd); /* again: nothing */
        cr_assert_str_eq(logged(), "srv: a\nsrv: partial\n");
}

Test(stderr_reader, finish_after_eof_no_duplicates) {
        start_with_level(LOG_DEBUG);
        server_says("x\nlast words");
        server_close();
        WAIT_UNTIL(logged_has("srv: last words\n"));
        stderr_reader_finish(&rd);
        cr_assert_str_eq(logged(), "srv: x\nsrv: last words\n");
        cr_assert_str_eq(rd.last, "last words");
}

Test(stderr_reader, finish_with_nothing_written) {
        start_with_level(LOG_DEBUG);
        stderr_reader_finish(&rd);
        cr_assert_str_eq(logged(), "");
        cr_assert_str_eq(rd.last, "");
}

Test(stderr_reader, finish_never_started) {
        struct stderr_reader r = { 0 };

        stderr_reader_finish(&r);
        cr_assert_null(r.bev);
}

Test(stderr_reader, last_line_kept) {
        uint64_t before = now_usec();

        start_with_level(LOG_DEBUG);
        cr_assert_eq(rd.last_at, 0);
        server_says("first\nsecond\n");
        WAIT_UNTIL(logged_has("srv: second\n"));
        cr_assert_str_eq(rd.last, "second");
        cr_assert_geq(rd.last_at, before);
        cr_assert_leq(rd.last_at, now_usec());
        /* cut to fit, and marked as cut */
        server_repeat('q', 300);
        server_says("\n");
        WAIT_UNTIL(occurrences(logged(), "\n") == 3);
        cr_assert_eq(strlen(rd.last), STDERR_LAST_MAX - 1);
        for (size_t i = 0; i < STDERR_LAST_MAX - 4; i++)
                cr_assert_eq(rd.last[i], 'q');
        cr_assert_str_eq(rd.last + STDERR_LAST_MAX - 4, "\xe2\x80\xa6");
}

/* The last line is for the status answer: JSON text wants valid UTF-8, and a blank line or
 * a priority prefix says nothing about why a server failed. */
Test(stderr_reader, last_line_is_valid_utf8_without_prefix_and_not_blank) {
        start_with_level(LOG_DEBUG);
        server_says("<3>token \xff missing\n");
        WAIT_UNTIL(logged_has("missing\n"));
        cr_assert_str_eq(rd.last, "token ? missing");
        server_says("   \n\n\t\n");
        WAIT_UNTIL(occurrences(logged(), "\n") == 4);
        cr_assert_str_eq(rd.last, "token ? missing", "blank lines are not kept");
        /* "é" (2 bytes) repeated past the cap: cut between characters, never inside one */
        server_says("a");
        for (int i = 0; i < STDERR_LAST_MAX; i++)
                server_says("\xc3\xa9");
        server_says("\n");
        WAIT_UNTIL(occurrences(logged(), "\n") == 5);
        cr_assert_leq(strlen(rd.last), STDERR_LAST_MAX - 1);
        cr_assert(utf8_valid(rd.last, strlen(rd.last)), "not valid UTF-8: %s", rd.last);
        cr_assert_str_eq(rd.last + strlen(rd.last) - 5, "\xc3\xa9\xe2\x80\xa6");
}

/* Writes lines "l0" ... "l<n-1>" at once. */
static void server_burst(unsigned n) {
        size_t size = (size_t)n * 8 + 1, len = 0;
        char *buf = malloc(size);

        cr_assert_not_null(buf);
        for (unsigned i = 0; i < n; i++)
                len += (size_t)snprintf(buf + len, size - len, "l%u\n", i);
        write_all(server_end, buf, len);
        free(buf);
}

Test(stderr_reader, rate_limit_drops_and_reports) {
        char line[32];

        start_with_level(LOG_DEBUG);
        rd.rate.window_start = now_usec();
        server_burst(STDERR_RATE_BURST + 5);
        snprintf(line, sizeof line, "l%u", STDERR_RATE_BURST + 4);
        WAIT_UNTIL(strcmp(rd.last, line) == 0);
        cr_assert_eq(rd.rate.dropped, 5);
        cr_assert_eq(rd.rate.total_dropped, 5);
        cr_assert_eq(occurrences(logged(), "srv: l"), STDERR_RATE_BURST);
        snprintf(line, sizeof line, "srv: l%u\n", STDERR_RATE_BURST - 1);
        cr_assert(logged_has(line), "the burst is logged in full");
        snprintf(line, sizeof line, "srv: l%u\n", STDERR_RATE_BURST);
        cr_assert_not(logged_has(line), "over the burst is dropped");
        cr_assert_not(logged_has("dropped"), "reported only once the interval is over");

        /* The interval ends: the next line reports the count first, then is logged. */
        rd.rate.window_start -= STDERR_RATE_INTERVAL_USEC;
        server_says("after\n");
        WAIT_UNTIL(logged_has("srv: after\n"));
        const char *text = logged();
        const char *report = strstr(text, "[srv] server wrote too fast to its stderr: 5 lines dropped");
        cr_assert_not_null(report, "no drop report in: ...%s", text + strlen(text) - 200);
        cr_assert_lt(report, strstr(text, "srv: after\n"));
        cr_assert_eq(rd.rate.dropped, 0);
        cr_assert_eq(rd.rate.total_dropped, 5);
        cr_assert_eq(rd.rate.window_lines, 1);
}

Test(stderr_reader, rate_limit_reported_at_finish) {
        char line[32];

        start_with_level(LOG_DEBUG);
        rd.rate.window_start = now_usec();
        server_burst(STDERR_RATE_BURST + 3);
        snprintf(line, sizeof line, "l%u", STDERR_RATE_BURST + 2);
        WAIT_UNTIL(strcmp(rd.last, line) == 0);
        cr_assert_not(logged_has("dropped"));
        stderr_reader_finish(&rd);
        cr_assert(logged_has("server wrote too fast to its stderr: 3 lines dropped"));
        cr_assert_eq(rd.rate.total_dropped, 3);
        cr_assert_str_eq(rd.last, line, "the last line is kept even when dropped");
}

Test(stderr_reader, rate_limit_new_window_admits_again) {
        char line[32];

        start_with_level(LOG_DEBUG);
        rd.rate.window_start = now_usec();
        server_burst(STDERR_RATE_BURST + 1);
        WAIT_UNTIL(rd.rate.dropped == 1);
        rd.rate.window_start -= STDERR_RATE_INTERVAL_USEC;
        server_burst(STDERR_RATE_BURST);
        snprintf(line, sizeof line, "l%u", STDERR_RATE_BURST - 1);
        WAIT_UNTIL(strcmp(rd.last, line) == 0);
        cr_assert_eq(rd.rate.window_lines, STDERR_RATE_BURST);
        cr_assert_eq(rd.rate.dropped, 0, "a full new window is admitted");
        cr_assert_eq(rd.rate.total_dropped, 1);
        cr_assert_eq(occurrences(logged(), "srv: l"), 2 * STDERR_RATE_BURST);
        cr_assert_eq(occurrences(logged(), "1 lines dropped"), 1);
}

/* A failed npx start: npm's error comes before its pointer to a log file, which is the last
 * line. The server's last lines keep the error, without priority prefixes, also past the
 * rate limit (they are what the status shows, not what is logged). */
Test(stderr_reader, last_lines_kept_for_the_status) {
        start_with_level(LOG_DEBUG);
        rate_limit_init(&rd.rate, STDERR_RATE_INTERVAL_USEC, 1, now_usec());
        server_says("npm error code E404\n<3>npm error 404 Not Found - GET https://registry.npmjs.org/nope\n\n"
                    "npm error A complete log of this run can be found in: /root/.npm/_logs/x.log\n");
        WAIT_UNTIL(ring.n == 3);
        cr_assert_str_eq(line_ring_get(&ring, 0)->text, "npm error code E404");
        cr_assert_str_eq(line_ring_get(&ring, 1)->text, "npm error 404 Not Found - GET https://registry.npmjs.org/nope");
        cr_assert_str_eq(line_ring_get(&ring, 2)->text, "npm error A complete log of this run can be found in: /root/.npm/_logs/x.log");
        cr_assert_str_eq(rd.last, line_ring_get(&ring, 2)->text);
        cr_assert_eq(line_ring_get(&ring, 2)->seq, 3);
}
