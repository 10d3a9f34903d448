/* Unit tests for notify.c: sd_notify messages, caught on an abstract datagram socket
 * that $NOTIFY_SOCKET points at, and the watchdog timer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"

static int sock = -1;
static struct logger lg;
static struct event_base *base;
static struct notify n;

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Binds "\0mcpvisor-test-<pid>-<n>" and points $NOTIFY_SOCKET at it. Runs in the test's
 * own worker process, so the environment changes stay there. */
static void setup(void) {
        static unsigned counter;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char env[sizeof sa.sun_path + 1];
        int len;

        len = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "mcpvisor-test-%d-%u", (int)getpid(), counter++);
        sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        cr_assert_geq(sock, 0);
        cr_assert_eq(bind(sock, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)), 0,
                     "bind: %s", strerror(errno));
        snprintf(env, sizeof env, "@%s", sa.sun_path + 1);
        cr_assert_eq(setenv("NOTIFY_SOCKET", env, 1), 0);
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        logger_init(&lg, LOG_DEBUG);
        base = event_base_new();
        cr_assert_not_null(base);
}

static void teardown(void) {
        notify_done(&n);
        event_base_free(base);
        close(sock);
}

TestSuite(notify, .init = setup, .fini = teardown);

/* Next datagram, waiting up to timeout_ms; NULL if none came. */
static char *recv_msg(int timeout_ms) {
        static char buf[4096];
        struct pollfd p = { .fd = sock, .events = POLLIN };
        uint64_t deadline = now_usec() + (uint64_t)timeout_ms * 1000;
        ssize_t k;

        for (;;) {
                uint64_t now = now_usec();
                int r;

                if (now >= deadline)
                        return NULL;
                r = poll(&p, 1, (int)((deadline - now + 999) / 1000));
                if (r < 0 && errno == EINTR)
                        continue;
                cr_assert_geq(r, 0);
                if (r == 0)
                        return NULL;
                break;
        }
        k = recv(sock, buf, sizeof buf - 1, MSG_DONTWAIT);
        cr_assert_geq(k, 0, "recv: %s", strerror(errno));
        buf[k] = '\0';
        return buf;
}

static void expect_msg(const char *want) {
        char *got = recv_msg(2000);

        cr_assert_not_null(got, "no datagram, expected \"%s\"", want);
        cr_assert_str_eq(got, want);
}

/* A datagram already queued, or NULL. sd_notify sends synchronously, so anything
 * sent before is already there. */
static char *try_recv(void) {
        static char buf[4096];
        ssize_t k = recv(sock, buf, sizeof buf - 1, MSG_DONTWAIT);

        if (k < 0) {
                cr_assert_eq(errno, EAGAIN, "recv: %s", strerror(errno));
                return NULL;
        }
        buf[k] = '\0';
        return buf;
}

static void expect_nothing(void) {
        char *got = try_recv();

        cr_assert_null(got, "unexpected datagram \"%s\"", got);
}

static void init_notify(void) {
        cr_assert_eq(notify_init(&n, base, &lg), 0);
}

/* Runs the loop until the waiting status, if any, has had its turn. */
static void settle(void) {
        uint64_t deadline = now_usec() + 3000000;

        while (n.status_next) {
                cr_assert_lt(now_usec(), deadline, "the status timer never fired");
                cr_assert_geq(event_base_loop(base, EVLOOP_ONCE), 0);
        }
}

Test(notify, watchdog_period) {
        cr_assert_eq(notify_watchdog_period(200000), 100000);
        cr_assert_eq(notify_watchdog_period(30000000), 15000000);
        cr_assert_eq(notify_watchdog_period(3), 1);
        cr_assert_eq(notify_watchdog_period(1), 0);
        cr_assert_eq(notify_watchdog_period(0), 0);
        cr_assert_eq(notify_watchdog_period(UINT64_MAX), UINT64_MAX / 2);
}

Test(notify, init_without_watchdog) {
        init_notify();
        cr_assert_eq(n.watchdog_usec, 0);
        cr_assert_null(n.watchdog_timer);
        cr_assert_null(n.status);
        cr_assert_not(n.ready);
        cr_assert_eq(n.log, &lg);
        expect_nothing();
}

Test(notify, ready) {
        init_notify();
        notify_ready(&n, "x");
        expect_msg("READY=1\nSTATUS=x");
        cr_assert(n.ready);
        cr_assert_str_eq(n.status, "x");
        expect_nothing();
}

Test(notify, ready_without_status) {
        init_notify();
        notify_ready(&n, NULL);
        expect_msg("READY=1");
        cr_assert(n.ready);
}

Test(notify, status_repeats_skipped) {
        init_notify();
        notify_status_soon(&n, "serving; %d clients connected", 2);
        settle();
        expect_msg("STATUS=serving; 2 clients connected");
        notify_status_soon(&n, "serving; %d clients connected", 2);
        cr_assert_null(n.status_next, "a repeat waits for nothing");
        expect_nothing();
        notify_status_soon(&n, "serving; %d clients connected", 3);
        settle();
        expect_msg("STATUS=serving; 3 clients connected");
        /* Only the last status counts as a repeat. */
        notify_status_soon(&n, "serving; %d clients connected", 2);
        settle();
        expect_msg("STATUS=serving; 2 clients connected");
}

/* Changes within the delay make one datagram, the last one's, and not before the delay. */
Test(notify, status_changes_coalesced) {
        uint64_t start;

        init_notify();
        start = now_usec();
        for (int i = 1; i <= 1000; i++)
                notify_status_soon(&n, "serving; %d clients connected", i);
        expect_nothing();
        settle();
        cr_assert_geq(now_usec() - start, NOTIFY_STATUS_DELAY_USEC * 3 / 4, "sent after %" PRIu64 " us",
                      now_usec() - start);
        expect_msg("STATUS=serving; 1000 clients connected");
        expect_nothing();
        cr_assert_str_eq(n.status, "serving; 1000 clients connected");
}

/* A client that comes and goes within the delay costs no datagram at all. */
Test(notify, status_back_to_the_last_sent_is_not_sent) {
        init_notify();
        notify_status_soon(&n, "0 clients");
        settle();
        expect_msg("STATUS=0 clients");
        notify_status_soon(&n, "1 client");
        notify_status_soon(&n, "0 clients");
        settle();
        expect_nothing();
        cr_assert_str_eq(n.status, "0 clients");
}

/* A state change goes out at once, and its status replaces the older one still waiting. */
Test(notify, state_change_not_delayed) {
        init_notify();
        notify_status_soon(&n, "starting");
        notify_ready(&n, "serving");
        expect_msg("READY=1\nSTATUS=serving");
        cr_assert_null(n.status_next);
        cr_assert_eq(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 1, "the status timer is still armed");
        expect_nothing();
        notify_status_soon(&n, "busy");
        notify_stopping(&n, NULL); /* no status of its own: the waiting one still comes */
        expect_msg("STOPPING=1");
        settle();
        expect_msg("STATUS=busy");
}

Test(notify, status_after_ready) {
        init_notify();
        notify_ready(&n, "serving");
        expect_msg("READY=1\nSTATUS=serving");
        notify_status_soon(&n, "serving");
        settle();
        expect_nothing();
        notify_status_soon(&n, "busy");
        settle();
        expect_msg("STATUS=busy");
}

Test(notify, stopping) {
        init_notify();
        notify_status_soon(&n, "bye");
        settle();
        expect_msg("STATUS=bye");
        /* The state change must go out even though the status text is a repeat. */
        notify_stopping(&n, "bye");
        expect_msg("STOPPING=1\nSTATUS=bye");
        notify_stopping(&n, NULL);
        expect_msg("STOPPING=1");
}

Test(notify, reloading) {
        uint64_t before, after, usec;
        char *got, *end;

        init_notify();
        before = now_usec();
        notify_reloading(&n, "reloading configuration");
        after = now_usec();
        got = recv_msg(2000);
        cr_assert_not_null(got);
        cr_assert_eq(strncmp(got, "RELOADING=1\nMONOTONIC_USEC=", 27), 0, "got \"%s\"", got);
        usec = strtoull(got + 27, &end, 10);
        cr_assert_neq(end, got + 27, "MONOTONIC_USEC needs a number: \"%s\"", got);
        cr_assert_str_eq(end, "\nSTATUS=reloading configuration");
        cr_assert_geq(usec, before);
        cr_assert_leq(usec, after);
        cr_assert_str_eq(n.status, "reloading configuration");
}

Test(notify, reloading_without_status) {
        char *got;

        init_notify();
        notify_reloading(&n, NULL);
        got = recv_msg(2000);
        cr_assert_not_null(got);
        cr_assert_eq(strncmp(got, "RELOADING=1\nMONOTONIC_USEC=", 27), 0, "got \"%s\"", got);
        cr_assert_null(strstr(got, "STATUS="));
        cr_assert_eq(strspn(got + 27, "0123456789"), strlen(got + 27));
}

Test(notify, failure) {
        init_notify();
        notify_failure(&n, -ENOENT, "cannot read /etc/mcpvisor/mcpvisor.json");
        expect_msg("ERRNO=2\nSTATUS=cannot read /etc/mcpvisor/mcpvisor.json");
        notify_failure(&n, EADDRINUSE, NULL);
        expect_msg("ERRNO=98");
}

Test(notify, status_percent_is_literal) {
        init_notify();
        notify_ready(&n, "100% %s");
        expect_msg("READY=1\nSTATUS=100% %s");
}

Test(notify, done_resets) {
        init_notify();
        notify_ready(&n, "x");
        expect_msg("READY=1\nSTATUS=x");
        notify_status_soon(&n, "y"); /* still waiting: freed with the rest */
        notify_done(&n);
        cr_assert_null(n.status_next);
        cr_assert_null(n.status);
        cr_assert_null(n.watchdog_timer);
        cr_assert_null(n.status_timer);
        cr_assert_not(n.ready);
        cr_assert_eq(n.watchdog_usec, 0);
}

Test(notify, no_socket_is_quiet) {
        unsetenv("NOTIFY_SOCKET");
        init_notify();
        notify_ready(&n, "x");
        notify_status_soon(&n, "y");
        settle();
        cr_assert(n.ready);
        cr_assert_str_eq(n.status, "y");
        expect_nothing();
}

static void set_watchdog(const char *usec, pid_t pid) {
        char p[32];

        snprintf(p, sizeof p, "%d", (int)pid);
        cr_assert_eq(setenv("WATCHDOG_USEC", usec, 1), 0);
        cr_assert_eq(setenv("WATCHDOG_PID", p, 1), 0);
}

Test(notify, watchdog_pings) {
        uint64_t start, deadline;
        int pings = 0;

        set_watchdog("200000", getpid());
        init_notify();
        cr_assert_eq(n.watchdog_usec, 200000);
        cr_assert_not_null(n.watchdog_timer);
        expect_nothing();

        start = now_usec();
        deadline = start + 3000000;
        while (pings < 2 && now_usec() < deadline) {
                char *got;

                cr_assert_geq(event_base_loop(base, EVLOOP_ONCE), 0);
                while ((got = try_recv())) {
                        cr_assert_str_eq(got, "WATCHDOG=1");
                        pings++;
                }
        }
        cr_assert_geq(pings, 2, "only %d WATCHDOG=1 in 3 s", pings);
        /* Two pings at a 100 ms period take about 200 ms; much faster means the period is wrong. */
        cr_assert_geq(now_usec() - start, 150000, "two pings after %" PRIu64 " us", now_usec() - start);
}

Test(notify, watchdog_without_pid) {
        setenv("WATCHDOG_USEC", "500000", 1);
        init_notify();
        cr_assert_eq(n.watchdog_usec, 500000);
        cr_assert_not_null(n.watchdog_timer);
}

Test(notify, watchdog_other_pid) {
        set_watchdog("200000", getpid() + 1);
        init_notify();
        cr_assert_eq(n.watchdog_usec, 0);
        cr_assert_null(n.watchdog_timer);
        /* Nothing is armed, so the loop has nothing to run. */
        cr_assert_eq(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 1);
        expect_nothing();
}

Test(notify, watchdog_invalid) {
        set_watchdog("soon", getpid());
        init_notify();
        cr_assert_eq(n.watchdog_usec, 0);
        cr_assert_null(n.watchdog_timer);
}

Test(notify, watchdog_zero) {
        set_watchdog("0", getpid());
        init_notify();
        cr_assert_eq(n.watchdog_usec, 0);
        cr_assert_null(n.watchdog_timer);
}

/* A server's change goes out at once, and replaces a client count still waiting. */
Test(notify, status_now_not_delayed) {
        init_notify();
        notify_status_soon(&n, "1/1 servers ready; 1 client connected");
        notify_status(&n, "0/1 servers ready; 1 client connected");
        expect_msg("STATUS=0/1 servers ready; 1 client connected");
        cr_assert_null(n.status_next, "the waiting status is dropped");
        settle();
        expect_nothing();
        notify_status(&n, "0/1 servers ready; 1 client connected");
        expect_nothing();
}
