/* Unit tests for transport-pipe.c on its own: lines handed up in order, an over-long line's
 * head, one broken report, the input limit and the stall, closing and discarding. The test
 * plays the server on the far ends of the two pipes; server-conn.c's tests cover the rest
 * through the connection. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "server-transport.h"
#include "unit-helpers.h"

#define MAX_LINE 64

static struct logger lg;
static struct event_base *base;
static struct server_transport *t;
static int srv_in = -1;  /* the server's stdin: the test reads it */
static int srv_out = -1; /* the server's stdout: the test writes it */

static struct {
        unsigned lines, oversize, broken;
        char line[4][MAX_LINE + 1];
        size_t head_len;
        char why[256];
} seen;

static void on_line(const char *line, size_t len, const struct loan_offer *offer, void *userdata) {
        cr_assert_eq(userdata, &seen);
        if (seen.lines < 4)
                snprintf(seen.line[seen.lines], sizeof seen.line[0], "%.*s", (int)len, line);
        seen.lines++;
}

static void on_oversize(const char *head, size_t len, void *userdata) {
        seen.oversize++;
        seen.head_len = len;
}

static void on_broken(const char *why, void *userdata) {
        seen.broken++;
        snprintf(seen.why, sizeof seen.why, "%s", why);
}

static const struct server_transport_events events = { .line = on_line, .oversize = on_oversize, .broken = on_broken };

static void setup(void) {
        int in[2], out[2];

        signal(SIGPIPE, SIG_IGN); /* as main.c does */
        log_capture_start();
        logger_init(&lg, LOG_DEBUG);
        open_pipe(in, PIPE_READ_NONBLOCK | PIPE_WRITE_NONBLOCK);
        open_pipe(out, PIPE_READ_NONBLOCK);
        srv_in = in[0];
        srv_out = out[1];
        base = loop_start();
        t = transport_pipe_new(base, in[1], out[0], MAX_LINE, "srv", &lg);
        cr_assert_not_null(t);
        server_transport_attach(t, &events, &seen);
}

static void teardown(void) {
        t->ops->free(t);
        if (srv_in >= 0)
                close(srv_in);
        if (srv_out >= 0)
                close(srv_out);
        loop_stop();
        log_capture_stop();
}

TestSuite(transport_pipe, .init = setup, .fini = teardown);

static int send_text(const char *text) {
        struct iovec parts[2] = { { (void *)text, strlen(text) }, { (void *)"\n", 1 } };

        return t->ops->send(t, parts, 2);
}

/* A message of about 200 KiB: more than a pipe holds, so most of it is queued. */
static int send_big(void) {
        static char text[200 * 1024];

        memset(text, 'x', sizeof text - 1);
        return send_text(text);
}

/* What the server's stdin holds now; true at EOF. */
static bool drain_stdin(size_t *total) {
        char buf[65536];
        ssize_t n;

        while ((n = read(srv_in, buf, sizeof buf)) > 0)
                *total += (size_t)n;
        return n == 0;
}

Test(transport_pipe, lines_in_order_and_the_last_at_eof) {
        write_all(srv_out, "one\r\n\ntwo\nthree", 15);
        WAIT_UNTIL(seen.lines == 2);
        cr_assert_str_eq(seen.line[0], "one");
        cr_assert_str_eq(seen.line[1], "two");
        close(srv_out);
        srv_out = -1;
        WAIT_UNTIL(seen.broken == 1);
        cr_assert_eq(seen.lines, 3, "the unterminated tail is a line");
        cr_assert_str_eq(seen.line[2], "three");
        cr_assert_str_eq(seen.why, "closed its stdout");
        run_for(20000);
        cr_assert_eq(seen.broken, 1, "reported once");
}

Test(transport_pipe, oversize_head_then_the_stream_goes_on) {
        char big[3 * MAX_LINE + 1];

        memset(big, 'y', sizeof big - 1);
        big[sizeof big - 1] = '\n';
        write_all(srv_out, big, sizeof big);
        write_all(srv_out, "after\n", 6);
        WAIT_UNTIL(seen.lines == 1);
        cr_assert_eq(seen.oversize, 1);
        cr_assert_geq(seen.head_len, MAX_LINE);
        cr_assert_str_eq(seen.line[0], "after");
        cr_assert_eq(seen.broken, 0);
}

Test(transport_pipe, sent_at_once_and_input_closed_after_it) {
        size_t total = 0;

        cr_assert_eq(send_text("hello"), 0);
        cr_assert_eq(t->ops->queued(t), 6, "gathered until the end of the loop's pass");
        t->ops->close_input(t);
        cr_assert_eq(send_text("late"), -EPIPE);
        WAIT_UNTIL(drain_stdin(&total));
        cr_assert_eq(total, 6);
        cr_assert_eq(seen.broken, 0, "closing our side is not the server breaking");
}

/* The messages of one pass of the loop reach the server in one write, not one each. */
Test(transport_pipe, one_pass_one_write) {
        char buf[64];
        ssize_t n;

        cr_assert_eq(send_text("one"), 0);
        cr_assert_eq(send_text("two"), 0);
        cr_assert_eq(read(srv_in, buf, sizeof buf), -1, "nothing written yet");
        cr_assert_eq(t->ops->queued(t), 8);
        event_base_loop(base, EVLOOP_NONBLOCK);
        cr_assert_eq(t->ops->queued(t), 0, "written at the end of the pass");
        n = read(srv_in, buf, sizeof buf);
        cr_assert_eq(n, 8);
        cr_assert_eq(memcmp(buf, "one\ntwo\n", 8), 0);
}

Test(transport_pipe, input_limit_refuses_past_it) {
        t->ops->limit_input(t, 4096, 0);
        cr_assert_eq(send_big(), 0, "one message goes out whole when nothing is queued");
        cr_assert_gt(t->ops->queued(t), 4096);
        cr_assert_eq(send_text("small"), -ENOBUFS);
        cr_assert_eq(send_text("small"), -ENOBUFS);
        cr_assert_eq(occurrences(logged(), "not reading its stdin: "), 1, "logged once a queue: %s", logged());
}

Test(transport_pipe, stalled_input_breaks) {
        t->ops->limit_input(t, 0, 100000);
        cr_assert_eq(send_big(), 0);
        WAIT_UNTIL(seen.broken == 1);
        cr_assert(strstr(seen.why, "read none of its stdin for 0.1 s (healthTimeout) while "), "%s", seen.why);
        cr_assert_eq(t->ops->queued(t), 0, "what was queued is dropped");
        cr_assert_eq(send_text("x"), -EPIPE);
}

Test(transport_pipe, stop_receiving_with_discard_closes_stdout) {
        t->ops->stop_receiving(t, true);
        cr_assert_eq(write(srv_out, "x\n", 2), -1);
        cr_assert_eq(errno, EPIPE, "the server's writes fail at once");
        run_for(20000);
        cr_assert_eq(seen.lines + seen.broken, 0, "nothing is reported after stopping");
}

/* ---- a large line's buffer ---- */

static size_t large_lines;

static void on_large_line(const char *line, size_t len, const struct loan_offer *offer, void *userdata) {
        large_lines++;
}

static const struct server_transport_events large_events = { .line = on_large_line, .oversize = on_oversize,
                                                             .broken = on_broken };

static long rss_kib(void) {
        long pages, resident;
        FILE *f = fopen("/proc/self/statm", "r");

        cr_assert_not_null(f);
        cr_assert_eq(fscanf(f, "%ld %ld", &pages, &resident), 2);
        fclose(f);
        return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Writes what the pipe takes now; true once all of text went. */
static bool fed(int fd, const char *text, size_t len, size_t *sent) {
        ssize_t n = *sent < len ? write(fd, text + *sent, len - *sent) : 0;

        if (n > 0)
                *sent += (size_t)n;
        return *sent == len;
}

/* The buffer an 8 MiB line took is kept for the next one while the server talks, and given
 * back once it has been quiet a second; its stdout pipe holds 1 MiB meanwhile, its 64 KiB
 * before and after. */
Test(transport_pipe, a_large_lines_buffer_is_kept_then_given_back) {
        const size_t size = 8u << 20;
        char *line = malloc(size + 1);
        struct server_transport *large;
        size_t sent = 0;
        long before, after_line;
        int in[2], out[2];

        cr_assert_not_null(line);
        memset(line, 'z', size);
        line[size] = '\n';
        open_pipe(in, PIPE_READ_NONBLOCK | PIPE_WRITE_NONBLOCK);
        open_pipe(out, PIPE_READ_NONBLOCK | PIPE_WRITE_NONBLOCK);
        large = transport_pipe_new(base, in[1], out[0], size, "large", &lg);
        cr_assert_not_null(large);
        server_transport_attach(large, &large_events, &seen);
        before = rss_kib();
        cr_assert_eq(fcntl(out[1], F_GETPIPE_SZ), 65536);
        WAIT_UNTIL(fed(out[1], line, size + 1, &sent) && large_lines == 1);
        cr_assert_eq(fcntl(out[1], F_GETPIPE_SZ), 1 << 20, "the pipe did not grow for the large line");
        after_line = rss_kib();
        cr_assert_gt(after_line - before, 6 * 1024, "the buffer was not kept: %ld KiB before, %ld after", before,
                     after_line);
        WAIT_UNTIL(rss_kib() < after_line - 6 * 1024);
        WAIT_UNTIL(fcntl(out[1], F_GETPIPE_SZ) == 65536);
        large->ops->free(large);
        close(in[0]);
        close(out[1]);
        free(line);
}
