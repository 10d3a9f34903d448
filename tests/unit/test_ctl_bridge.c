/* Unit tests for ctl-bridge.c, mcpvisorctl connect's byte pump: any amount both ways, byte
 * for byte, with the client's stdio as pipes (as most clients give it) and as socketpairs
 * (as Node's child_process gives it); the end of a session from each side.
 *
 * The bridge runs in a thread of its own; the test plays the client (its stdin and stdout)
 * from the main thread and the daemon from a second thread, here an echo. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl-bridge.h"
#include "macro.h"
#include "time-util.h"

#define DEADLINE_USEC (20 * USEC_PER_SEC)

enum stdio_kind { STDIO_PIPES, STDIO_SOCKETPAIRS };

struct run {
        int in_w, out_r;         /* the client's ends of the bridge's stdin and stdout */
        int daemon;              /* the daemon's end of the socket */
        int bridge_in, bridge_out, bridge_sock;
        pthread_t bridge, echo;
        bool echo_started;
        enum bridge_end end;
};

static void setup(void) {
        signal(SIGPIPE, SIG_IGN); /* as run_connect() does */
}

TestSuite(ctl_bridge, .init = setup, .timeout = 60);

static void channel(enum stdio_kind kind, int *read_end, int *write_end) {
        int fds[2];

        if (kind == STDIO_PIPES)
                cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        else
                cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        *read_end = fds[0];
        *write_end = fds[1];
}

static void *bridge_thread(void *arg) {
        struct run *r = arg;

        r->end = bridge_run(r->bridge_in, r->bridge_out, r->bridge_sock);
        /* as mcpvisorctl exiting would: the client and the daemon see the ends close */
        close(r->bridge_in);
        close(r->bridge_out);
        close(r->bridge_sock);
        return NULL;
}

/* Sends back all it reads until EOF, then closes. */
static void *echo_thread(void *arg) {
        struct run *r = arg;
        static __thread char buf[65536];
        ssize_t n;

        while ((n = read(r->daemon, buf, sizeof buf)) > 0)
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(r->daemon, buf + off, (size_t)(n - off));
                        if (w <= 0)
                                return NULL;
                        off += w;
                }
        close(r->daemon);
        r->daemon = -1;
        return NULL;
}

static void run_start(struct run *r, enum stdio_kind kind, bool echo) {
        int sv[2];

        *r = (struct run){ .daemon = -1 };
        channel(kind, &r->bridge_in, &r->in_w);
        channel(kind, &r->out_r, &r->bridge_out);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        r->bridge_sock = sv[0];
        r->daemon = sv[1];
        cr_assert_eq(fcntl(r->bridge_sock, F_SETFL, O_NONBLOCK), 0); /* as run_connect() makes it */
        cr_assert_eq(fcntl(r->in_w, F_SETFL, O_NONBLOCK), 0);
        cr_assert_eq(pthread_create(&r->bridge, NULL, bridge_thread, r), 0);
        if (echo) {
                cr_assert_eq(pthread_create(&r->echo, NULL, echo_thread, r), 0);
                r->echo_started = true;
        }
}

/* Waits for the bridge to return, failing the test at the deadline. */
static enum bridge_end run_wait(struct run *r) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += DEADLINE_USEC / USEC_PER_SEC;
        cr_assert_eq(pthread_timedjoin_np(r->bridge, NULL, &ts), 0, "the bridge did not return");
        if (r->echo_started)
                pthread_join(r->echo, NULL);
        return r->end;
}

static void run_done(struct run *r) {
        if (r->in_w >= 0)
                close(r->in_w);
        if (r->out_r >= 0)
                close(r->out_r);
        if (r->daemon >= 0)
                close(r->daemon);
}

/* Bytes of every value, newlines and zeros included: the bridge must not care. */
static char *pattern(size_t len) {
        char *p = malloc(len);

        cr_assert_not_null(p);
        for (size_t i = 0; i < len; i++)
                p[i] = (char)((i * 7 + i / 251) & 0xff);
        return p;
}

/* Writes all of data to the bridge's stdin while reading its stdout into got, until want
 * bytes came or stdout ended; closes stdin once all is written. Returns the bytes read. */
static size_t client_exchange(struct run *r, const char *data, size_t len, char *got, size_t want) {
        uint64_t deadline = now_usec() + DEADLINE_USEC;
        size_t sent = 0, n = 0;

        while (n < want) {
                struct pollfd p[2] = { { r->in_w, POLLOUT, 0 }, { r->out_r, POLLIN, 0 } };
                ssize_t k;

                cr_assert_lt(now_usec(), deadline, "stuck after %zu of %zu bytes in, %zu of %zu out", sent, len, n, want);
                cr_assert_geq(poll(p, 2, 1000), 0);
                if (p[0].revents) {
                        k = write(r->in_w, data + sent, len - sent);
                        cr_assert(k > 0 || errno == EAGAIN, "write: %s", strerror(errno));
                        sent += k > 0 ? (size_t)k : 0;
                }
                if (sent == len && r->in_w >= 0) {
                        close(r->in_w);
                        r->in_w = -1;
                }
                if (p[1].revents) {
                        k = read(r->out_r, got + n, want - n);
                        if (k == 0)
                                break;
                        cr_assert_gt(k, 0, "read: %s", strerror(errno));
                        n += (size_t)k;
                }
        }
        return n;
}

static void echo_round_trip(enum stdio_kind kind, size_t len) {
        _cleanup_free_ char *data = pattern(len), *got = malloc(len + 1);
        struct run r;

        cr_assert_not_null(got);
        run_start(&r, kind, true);
        cr_assert_eq(client_exchange(&r, data, len, got, len + 1), len, "%zu bytes", len);
        cr_expect(memcmp(got, data, len) == 0, "%zu bytes came back changed", len);
        cr_expect_eq(run_wait(&r), BRIDGE_DONE);
        run_done(&r);
}

static const size_t sizes[] = { 1024, 65536, 65537, 1 << 20, 16 << 20 };

Test(ctl_bridge, any_size_both_ways_through_pipes) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
                echo_round_trip(STDIO_PIPES, sizes[i]);
}

Test(ctl_bridge, any_size_both_ways_through_socketpairs) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
                echo_round_trip(STDIO_SOCKETPAIRS, sizes[i]);
}

/* The client closes stdin at once; the daemon answers after our EOF, then closes. */
static void *answer_after_eof_thread(void *arg) {
        struct run *r = arg;
        char buf[4096];
        _cleanup_free_ char *answer = pattern(1 << 20);

        while (read(r->daemon, buf, sizeof buf) > 0)
                ;
        for (size_t off = 0; off < 1 << 20;) {
                ssize_t w = write(r->daemon, answer + off, (1 << 20) - off);
                if (w <= 0)
                        break;
                off += (size_t)w;
        }
        close(r->daemon);
        r->daemon = -1;
        return NULL;
}

Test(ctl_bridge, stdin_eof_still_delivers_what_the_daemon_answers) {
        _cleanup_free_ char *want = pattern(1 << 20), *got = malloc((1 << 20) + 1);
        struct run r;

        run_start(&r, STDIO_PIPES, false);
        cr_assert_eq(pthread_create(&r.echo, NULL, answer_after_eof_thread, &r), 0);
        r.echo_started = true;
        cr_assert_eq(client_exchange(&r, "{}\n", 3, got, (1 << 20) + 1), 1 << 20);
        cr_expect(memcmp(got, want, 1 << 20) == 0);
        cr_expect_eq(run_wait(&r), BRIDGE_DONE);
        run_done(&r);
}

/* The client stops reading (it died, or gave up) while nothing flows: the bridge must not
 * wait for the daemon to say something first. */
Test(ctl_bridge, returns_when_the_client_closes_stdout_while_idle) {
        struct run r;
        char c;

        run_start(&r, STDIO_PIPES, false);
        close(r.out_r);
        r.out_r = -1;
        cr_expect_eq(run_wait(&r), BRIDGE_CLIENT_GONE);
        cr_expect_eq(read(r.daemon, &c, 1), 0, "the daemon sees the connection close");
        run_done(&r);
}

Test(ctl_bridge, returns_when_the_client_dies_mid_stream) {
        _cleanup_free_ char *data = pattern(16 << 20), *got = malloc(100000);
        struct run r;

        run_start(&r, STDIO_SOCKETPAIRS, true);
        /* 16 MiB in, 100 kB of the echo read, then the client is gone */
        cr_assert_eq(client_exchange(&r, data, 16 << 20, got, 100000), 100000);
        close(r.out_r);
        r.out_r = -1;
        close(r.in_w);
        r.in_w = -1;
        cr_expect_eq(run_wait(&r), BRIDGE_CLIENT_GONE);
        run_done(&r);
}

Test(ctl_bridge, the_daemon_closing_first_is_reported) {
        struct run r;

        run_start(&r, STDIO_PIPES, false);
        shutdown(r.daemon, SHUT_RDWR);
        cr_expect_eq(run_wait(&r), BRIDGE_DAEMON_CLOSED);
        run_done(&r);
}
