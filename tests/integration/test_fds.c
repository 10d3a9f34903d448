/* The daemon out of file descriptors, run for real under a low RLIMIT_NOFILE (prlimit):
 * idle MCP clients beyond what it can hold are turned away with an error line, the control
 * socket still answers, and a server that dies meanwhile restarts, however long the shortage
 * lasts, instead of spending its start limit on failures that are not its own. */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "servers.h"

#define NOFILE 64        /* the daemon's limit */
#define IDLE 200         /* idle connections, far beyond it */
#define CTL_MS 10000     /* for mcpvisorctl status to answer */
#define FAULT_MS 20000   /* for a restart to show, on a loaded machine under ASan */

static struct h_daemon D;
static char T[64];        /* this test's own directory */
static char PIDFILE[128]; /* the demo server's --pidfile */
static int idle[2 * IDLE];
static unsigned n_idle;

static void setup(void) {
        D.notify_fd = -1;
        strcpy(T, "/tmp/mcpvisor-fds-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        snprintf(PIDFILE, sizeof PIDFILE, "%s/demo.pid", T);
        servers_reset(&D);
        signal(SIGPIPE, SIG_IGN);
}

static void teardown(void) {
        for (unsigned i = 0; i < n_idle; i++)
                close(idle[i]);
        n_idle = 0;
        servers_teardown();
        h_remove_tree(T);
}

TestSuite(fds, .init = setup, .fini = teardown, .timeout = 90);

/* Opens n connections to path that send nothing; the backlog holds those not accepted yet. */
static void open_idle(const char *path, unsigned n) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        strncpy(sa.sun_path, path, sizeof sa.sun_path - 1);
        for (unsigned i = 0; i < n; i++) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

                cr_assert_geq(fd, 0);
                cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0, "connect %u to %s: %m", i, path);
                cr_assert_lt(n_idle, sizeof idle / sizeof idle[0]);
                idle[n_idle++] = fd;
        }
}

static void close_idle(void) {
        for (unsigned i = 0; i < n_idle; i++)
                close(idle[i]);
        n_idle = 0;
}

/* What fd reads before EOF, within the deadline: "" if nothing. The daemon's NOTIFY
 * datagrams are drained meanwhile: it stands still once their queue is full. */
static char *read_until_eof(int fd, int timeout_ms) {
        static char buf[4096];
        long long deadline = h_now_ms() + timeout_ms;
        size_t len = 0;

        for (;;) {
                struct pollfd p = { fd, POLLIN, 0 };
                ssize_t n;

                h_notify_drain(&D);
                cr_assert_gt(left_ms(deadline), 0, "no EOF within %d ms; read so far: %.*s", timeout_ms, (int)len, buf);
                if (poll(&p, 1, left_ms(deadline) < 50 ? left_ms(deadline) : 50) <= 0)
                        continue;
                n = read(fd, buf + len, sizeof buf - 1 - len);
                cr_assert_geq(n, 0, "read: %m");
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        return buf;
}

/* The next message on c, draining the daemon's NOTIFY datagrams while it waits: each
 * client that leaves sends one, and the daemon stands still once their queue is full. */
static json_object *recv_draining(struct h_conn *c) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        struct pollfd p = { c->fd, POLLIN, 0 };

        do
                h_notify_drain(&D);
        while (poll(&p, 1, 50) == 0 && left_ms(deadline) > 0);
        return h_recv(c, left_ms(deadline));
}

/* A client is accepted again once the daemon has seen the idle ones go; until then, it may
 * still be turned away. */
static void expect_accepted_again(void) {
        long long deadline = h_now_ms() + CTL_MS;

        for (;;) {
                static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
                struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
                json_object *r, *message;
                bool refused;

                /* a client turned away may be closed before it is written to: no h_send */
                (void)!send(c->fd, ping, sizeof ping - 1, MSG_NOSIGNAL);
                r = recv_draining(c);
                message = h_get(r, "error.message");
                refused = message && strstr(json_object_get_string(message), "out of file descriptors");

                json_object_put(r);
                h_close(c);
                if (!refused)
                        return;
                cr_assert_gt(left_ms(deadline), 0, "still turned away %d ms after the clients left", CTL_MS);
                h_notify_drain(&D);
                poll(NULL, 0, 20); /* the daemon's closing of the others has nothing to wait on */
        }
}

/* mcpvisorctl status answers within CTL_MS, naming demo's state. */
static void expect_status(const char *state) {
        struct proc p;
        int r;

        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "-s", D.sock, "status", NULL }, NULL);
        proc_close_stdin(&p);
        r = proc_wait(&p, CTL_MS);
        cr_assert(r == 0 || r == 3, "status exited %d: %s", r, p.errbuf);
        cr_assert_not_null(strstr(p.outbuf, state), "status does not say %s: %s", state, p.outbuf);
        proc_free(&p);
}

static void start_demo(const char *keys) {
        add_demo("demo", keys, sf("\"--pidfile\",\"%s\"", PIDFILE));
        start_nofile(NOFILE);
        wait_all_ready(1);
}

Test(fds, control_answers_with_idle_clients_beyond_the_limit) {
        char *last;

        start_demo("");
        open_idle(D.sock, IDLE);
        expect_status("ready");
        /* the last one was turned away: told why, then closed */
        last = read_until_eof(idle[n_idle - 1], CTL_MS);
        cr_assert_not_null(strstr(last, "out of file descriptors"), "the client turned away read: %s", last);
        cr_assert(h_log_count(&D, "turning away new clients of the mcp socket") == 1);
        close_idle();
        expect_accepted_again();
        stop_clean();
}

/* The reserve leaves room for a restart however many clients wait. */
Test(fds, server_killed_among_idle_clients_restarts) {
        pid_t pid;

        start_demo("\"restartDelay\":0.1,\"restartDelayMax\":0.2,\"startLimitBurst\":3");
        pid = h_pidfile_wait(PIDFILE, 0, H_TIMEOUT_MS);
        open_idle(D.sock, IDLE);
        expect_status("ready");
        cr_assert_eq(kill(pid, SIGKILL), 0);
        cr_assert(h_log_count_wait(&D, "-> ready", 2, FAULT_MS), "demo did not restart: %s", h_log_text(&D));
        cr_assert_eq(h_log_count(&D, "-> failed"), 0);
        expect_status("ready");
        close_idle();
        stop_clean();
}

/* Control clients have no reserve: enough of them take every descriptor, so the restart
 * itself fails, again and again, without using up startLimitBurst; it succeeds once they go. */
Test(fds, spawn_failures_out_of_fds_do_not_count_toward_the_start_limit) {
        pid_t pid;

        start_demo("\"restartDelay\":0.1,\"restartDelayMax\":0.2,\"startLimitBurst\":3");
        pid = h_pidfile_wait(PIDFILE, 0, H_TIMEOUT_MS);
        open_idle(D.control, NOFILE + 16);
        /* every descriptor is taken once the daemon turns control clients away */
        read_until_eof(idle[n_idle - 1], CTL_MS);
        cr_assert_eq(kill(pid, SIGKILL), 0);
        cr_assert(h_log_wait(&D, "out of file descriptors", FAULT_MS), "no shortage reported: %s", h_log_text(&D));
        /* more tries than startLimitBurst, each refused for lack of descriptors */
        cr_assert(h_log_count_wait(&D, "still cannot start", 5, FAULT_MS), "%s", h_log_text(&D));
        cr_assert_eq(h_log_count(&D, "-> failed"), 0, "%s", h_log_text(&D));
        cr_assert_eq(h_log_count(&D, "out of file descriptors"), 1, "reported more than once: %s", h_log_text(&D));
        close_idle();
        cr_assert(h_log_count_wait(&D, "-> ready", 2, FAULT_MS), "demo did not restart: %s", h_log_text(&D));
        expect_status("ready");
        stop_clean();
}

/* Servers that keep crashing while clients keep connecting: a client accepted into the
 * descriptors a crashed server freed, during its restart delay, used to push the restart
 * into the reserve; after a few rounds restarts failed for descriptors. Counted, clients
 * leave every configured server its own. */
Test(fds, restarts_keep_their_descriptors_while_clients_keep_connecting) {
        long long end;

        for (int i = 0; i < 6; i++)
                add_demo(sf("crasher%d", i), "\"restart\":\"always\",\"restartDelay\":0.3,\"restartDelayMax\":0.3,"
                                             "\"startLimitBurst\":0,\"healthInterval\":0.1",
                         "\"--exit-after\",\"4\"");
        start_nofile(NOFILE);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        for (end = h_now_ms() + 1900; h_now_ms() < end && n_idle < IDLE;) {
                open_idle(D.sock, 1);
                h_notify_drain(&D);
                poll(NULL, 0, 10); /* a client every 10 ms, as agents come and go */
        }
        cr_assert_gt(h_log_count(&D, "-> backoff"), 6, "the servers did not crash and restart meanwhile");
        cr_assert_eq(h_log_count(&D, "out of file descriptors"), 0, "a restart ran short of descriptors");
        cr_assert_geq(h_log_count(&D, "turning away new clients of the mcp socket"), 1, "no client was turned away");
        close_idle();
        expect_accepted_again();
        stop_clean();
}
