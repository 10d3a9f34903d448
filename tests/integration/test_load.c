/* Clients at fault, and signals, under load: clients that disconnect mid-call, send garbage
 * or huge lines, stop reading, or connect and disconnect thousands of times; the daemon at
 * its descriptor limit (EMFILE); SIGHUP and SIGTERM while calls are in flight.
 *
 * Each test runs two well-behaved demo servers, "a" and "b" (demo/demo-server.c), and a
 * load of several clients calling both, whose every request must get exactly one answer,
 * a result (h_load_finish), while the faulty clients do their worst. Afterwards the daemon
 * is back at the baseline it had once warmed up: the same descriptors, its RSS within a
 * slack, no zombie child, the same processes carrying the test's tag; once it stopped, none
 * (teardown_no_orphans).
 *
 * Every wait drains the daemon's NOTIFY datagrams (h_load_pump, h_log_count_wait, ...): once
 * their queue is full, its sd_notify() blocks and the daemon stands still. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;

static void setup(void) {
        servers_reset(&D);
}

TestSuite(load, .init = setup, .fini = teardown_no_orphans, .timeout = 60);

/* The servers are fine here: every call of the load must succeed. The echoes carry a text
 * unique to the request, so an answer given to the wrong request or client shows. */
static const struct h_call_kind KINDS[] = {
        { "a__echo", NULL, false },
        { "b__echo", NULL, false },
        { "a__sleep", "{\"ms\":5}", false },
        { "b__sleep", "{\"ms\":20}", false },
};
/* For a reload that restarts b: b's calls may fail then. */
static const struct h_call_kind KINDS_B_MAY_FAIL[] = {
        { "a__echo", NULL, false },
        { "b__echo", NULL, true },
        { "a__sleep", "{\"ms\":5}", false },
        { "b__sleep", "{\"ms\":20}", true },
};
/* For leavers that pile long calls up in b, up to the demo server's limit of 64 sleeps at
 * once ("too many calls in progress") while their cancellations are on the way. */
static const struct h_call_kind KINDS_NO_B_SLEEP[] = {
        { "a__echo", NULL, false },
        { "b__echo", NULL, false },
        { "a__sleep", "{\"ms\":5}", false },
        { "a__sleep", "{\"ms\":20}", false },
};
#define N_KINDS (sizeof KINDS / sizeof KINDS[0])
#define AFTER 20        /* requests per client once the fault is over */

/* ---- helpers ---- */

/* Starts the daemon with a and b and the settings, and a warmed-up load (start_loaded()). */
static struct h_load *start_a_and_b(const char *settings, const char *b_keys, const struct h_call_kind *kinds) {
        set_settings(settings);
        add_tagged("a", "", "");
        add_tagged("b", b_keys, "");
        return start_loaded(2, kinds, N_KINDS);
}

/* Ends the test: more requests after the fault, all answered exactly once; the daemon back
 * at its baseline (the load's clients still connected, as they were then); a clean stop. */
static void finish(struct h_load *l, const struct baseline *b, const char *what) {
        struct h_load_stats s;
        long grown;

        h_load_add(l, AFTER);
        h_load_finish(l, LOAD_MS);
        s = h_load_stats(l);
        grown = baseline_expect(b);
        h_load_free(l);
        stop_clean();
        if (getenv("H_VERBOSE"))
                fprintf(stderr, "%s: %u requests (%u errors), slowest %lld ms, RSS +%ld KiB\n", what, s.sent, s.errors,
                        s.max_latency_ms, grown);
}

/* The inFlight of server name in the control socket's status. */
static int in_flight(const char *name) {
        json_object *r = h_control(&D, "status", NULL), *rows = h_get(r, "result.servers");
        int n = -1;

        cr_assert(json_object_is_type(rows, json_type_array), "%s", h_json_text(r));
        for (size_t i = 0; i < json_object_array_length(rows); i++)
                if (strcmp(h_str(json_object_array_get_idx(rows, i), "name"), name) == 0)
                        n = json_object_get_int(h_get(json_object_array_get_idx(rows, i), "inFlight"));
        json_object_put(r);
        cr_assert_geq(n, 0, "no server %s in the status", name);
        return n;
}

/* A connection the test may misuse freely: no harness bookkeeping, -1 if connect fails. */
static int raw_connect(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert_geq(fd, 0);
        cr_assert_lt(strlen(D.sock), sizeof sa.sun_path);
        memcpy(sa.sun_path, D.sock, strlen(D.sock) + 1);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* Best effort: a peer that misbehaves does not care whether its bytes arrive. */
static void raw_send(int fd, const char *text) {
        (void)send(fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT);
}

#define INITIALIZE                                                                                              \
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"," \
        "\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}\n"                            \
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
#define PING "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"

/* ---- clients at fault ---- */

/* Rounds of three clients that each leave with four calls in flight (three to b, one to a,
 * all long): every call is cancelled at the servers at once, the load goes on untouched. */
Test(load, disconnect_mid_call) {
        enum { ROUNDS = 4, LEAVERS = 3, CALLS = 4 };
        struct h_load *l = start_a_and_b("", "", KINDS);
        struct baseline b = baseline_take(2);

        for (unsigned round = 0; round < ROUNDS; round++) {
                struct h_client *x[LEAVERS];
                long long deadline = h_now_ms() + FAULT_MS;

                /* the load idle, so that the servers' inFlight counts the leavers' calls only */
                h_load_finish(l, LOAD_MS);
                for (unsigned i = 0; i < LEAVERS; i++) {
                        x[i] = h_client_open(&D, false, NULL);
                        for (unsigned j = 0; j < CALLS; j++)
                                h_client_tool_request(x[i], sf("%u", j + 1), j ? "b__sleep" : "a__sleep",
                                                      "{\"ms\":30000}");
                }
                while (in_flight("a") + in_flight("b") < LEAVERS * CALLS) {
                        cr_assert_lt(h_now_ms(), deadline, "the calls did not all reach the servers");
                        h_load_pump(l, 20);
                }
                for (unsigned i = 0; i < LEAVERS; i++)
                        h_client_close(x[i]);
                /* well before the 30 s calls could end by themselves */
                load_until_log(l, "cancelled request", (round + 1) * LEAVERS * CALLS);
        }
        h_load_finish(l, LOAD_MS);
        cr_assert_eq(in_flight("a"), 0);
        cr_assert_eq(in_flight("b"), 0);
        finish(l, &b, "disconnect_mid_call");
}

/* Lines that are no JSON-RPC, and lines far over maxMessageSize (one of 1 MiB): each gets
 * exactly one error, id null, on a connection that stays usable. */
static void misbehave_once(struct h_load *l, const char *huge) {
        static const char *const bad[] = {
                "\x01\x02garbage\n", "{not json\n", "[1,2,3]\n", "{\"jsonrpc\":\n", "42\n", "{\"foo\":1}\n", "[]\n",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing\n",
        };
        const size_t n_bad = sizeof bad / sizeof bad[0] + 2; /* and two huge lines */
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        unsigned errors = 0;
        char *line;

        h_initialize(c);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                h_send(c, bad[i]);
        h_send(c, huge);
        h_send(c, "\n{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"ping\",\"params\":{\"pad\":\"");
        h_send(c, huge);
        h_send(c, "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":\"end\",\"method\":\"ping\"}\n");
        h_load_pump(l, 10);
        while ((line = h_recv_line(c, H_TIMEOUT_MS))) {
                json_object *r = json_tokener_parse(line);
                bool end;

                cr_assert_not_null(r, "not JSON: %.200s", line);
                free(line);
                end = strcmp(h_json_text(h_get(r, "id")), "\"end\"") == 0;
                if (!end) {
                        cr_assert_neq(h_error_code(r), 0, "not an error: %s", h_json_text(r));
                        cr_assert_str_eq(h_json_text(h_get(r, "id")), "null", "%s", h_json_text(r));
                        errors++;
                }
                json_object_put(r);
                if (end)
                        break;
        }
        cr_assert_eq(errors, n_bad, "%u errors for %zu bad lines", errors, n_bad);
        /* nothing more comes, and the connection still serves */
        h_expect_result(c, PING);
        h_close(c);
}

Test(load, garbage_and_huge_lines) {
        enum { HUGE = 1 << 20 };
        struct h_load *l = start_a_and_b("\"maxMessageSize\":65536", "", KINDS);
        struct baseline b = baseline_take(2);
        char *huge = malloc(HUGE + 1);

        cr_assert_not_null(huge);
        memset(huge, 'x', HUGE);
        huge[HUGE] = '\0';
        for (unsigned i = 0; i < 6; i++) {
                h_load_add(l, 10);
                h_load_pump(l, 20);
                misbehave_once(l, huge);
        }
        free(huge);
        finish(l, &b, "garbage_and_huge_lines");
}

/* A client asks for large echoes and reads none: dropped past clientOutputLimit, alone;
 * the load, through the same server a, goes on. */
Test(load, client_stops_reading) {
        enum { TEXT = 4000, MAX_CALLS = 4000 };
        struct h_load *l = start_a_and_b("\"clientOutputLimit\":262144", "", KINDS);
        struct baseline b = baseline_take(2);
        struct timeval tmo = { 2, 0 };
        struct h_conn *slow = h_connect(D.sock, H_TIMEOUT_MS);
        char *text = malloc(TEXT + 1);
        size_t lines = 0;
        unsigned sent = 0;

        cr_assert_not_null(text);
        memset(text, 'r', TEXT);
        text[TEXT] = '\0';
        h_initialize(slow);
        /* writes block while the daemon catches up (bounded by SO_SNDTIMEO), and fail once
         * it has dropped us */
        setsockopt(slow->fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof tmo);
        while (sent < MAX_CALLS && h_log_count(&D, "is not reading its replies") == 0) {
                char *line;
                int n = asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\",\"params\":"
                                        "{\"name\":\"a__echo\",\"arguments\":{\"text\":\"%s\"}}}\n", sent + 1, text);

                cr_assert_gt(n, 0);
                if (send(slow->fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
                        free(line);
                        break;
                }
                free(line);
                if (++sent % 20 == 0 && h_load_pump(l, 5))
                        h_load_add(l, 4);
        }
        free(text);
        load_until_log(l, "is not reading its replies", 1);
        cr_assert(h_wait_eof(slow, H_TIMEOUT_MS, &lines), "the slow client's connection stayed open");
        cr_assert_lt(lines, sent, "every answer was delivered, so nothing was dropped");
        h_close(slow);
        cr_assert_lt(h_load_stats(l).max_latency_ms, 3000, "a call took %lld ms", h_load_stats(l).max_latency_ms);
        finish(l, &b, "client_stops_reading");
}

/* One connection's misbehaviour, by number. */
static void misbehave_briefly(int fd, unsigned how) {
        switch (how % 5) {
        case 0: /* leaves at once */
                break;
        case 1: /* initializes, leaves without reading the answer */
                raw_send(fd, INITIALIZE);
                break;
        case 2: /* half a line */
                raw_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"meth");
                break;
        case 3: /* a request, then the end of its input: the answer is owed, and unread */
                raw_send(fd, PING);
                shutdown(fd, SHUT_WR);
                break;
        case 4: /* a long call to b, then gone */
                raw_send(fd, INITIALIZE "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                                        "\"params\":{\"name\":\"b__sleep\",\"arguments\":{\"ms\":30000}}}\n");
                break;
        }
}

/* Counts the daemon's log lines that hold needle, reading only what was added since the
 * last call: the log of a storm of connections grows by megabytes. */
struct log_counter {
        FILE *f;
        const char *needle;
        unsigned count;
};

static unsigned log_counter_update(struct log_counter *lc) {
        char line[4096];

        if (!lc->f)
                lc->f = fopen(D.log, "re");
        cr_assert_not_null(lc->f, "cannot read %s", D.log);
        for (;;) {
                long at = ftell(lc->f);

                if (!fgets(line, sizeof line, lc->f)) {
                        clearerr(lc->f);
                        return lc->count;
                }
                if (!strchr(line, '\n') && strlen(line) < sizeof line - 1) {
                        fseek(lc->f, at, SEEK_SET); /* half written: read it whole next time */
                        return lc->count;
                }
                if (strstr(line, lc->needle))
                        lc->count++;
        }
}

/* Connections, fifty at a time, each leaving in one of five ways, while the load goes on.
 * Each batch is accepted and gone before the next starts, however slow the daemon is on a
 * loaded machine: its heap then grows to what fifty connections need, not to what as many
 * as fell behind would. */
static void connect_disconnect(struct h_load *l, unsigned total, int fds_at_rest) {
        enum { BATCH = 50 };
        struct log_counter accepted = { .needle = "] MCP client connected (pid " };
        unsigned before = log_counter_update(&accepted);

        for (unsigned done = 0; done < total; done += BATCH) {
                long long deadline = h_now_ms() + FAULT_MS;
                int fds[BATCH];

                for (unsigned i = 0; i < BATCH; i++) {
                        fds[i] = raw_connect();
                        cr_assert_geq(fds[i], 0, "connection %u refused: %s", done + i, strerror(errno));
                        misbehave_briefly(fds[i], done + i);
                }
                for (unsigned i = 0; i < BATCH; i++)
                        close(fds[i]);
                while (log_counter_update(&accepted) < before + done + BATCH || proc_fd_count(D.pid) != fds_at_rest) {
                        cr_assert_lt(h_now_ms(), deadline, "%u of %u connections accepted; %d descriptors, not %d",
                                     accepted.count - before, done + BATCH, proc_fd_count(D.pid), fds_at_rest);
                        if (h_load_pump(l, 5))
                                h_load_add(l, 4);
                }
        }
        fclose(accepted.f);
}

/* Thousands of connections: afterwards not one descriptor more, and (after a first round
 * brought its heap to what such a storm needs; glibc keeps it) no more memory either. */
Test(load, connect_disconnect_thousands) {
        enum { WARM = 1000, TOTAL = 3000 };
        struct h_load *l = start_a_and_b("", "", KINDS_NO_B_SLEEP);
        struct baseline b;
        long long t0;

        connect_disconnect(l, WARM, proc_fd_count(D.pid));
        b = baseline_take(2);
        t0 = h_now_ms();
        connect_disconnect(l, TOTAL, b.fds);
        if (getenv("H_VERBOSE"))
                fprintf(stderr, "%u connections in %lld ms\n", TOTAL, h_now_ms() - t0);
        h_load_finish(l, LOAD_MS);
        /* their 30 s calls cancelled, not run to their end */
        for (long long deadline = h_now_ms() + FAULT_MS; in_flight("b") > 0;) {
                cr_assert_lt(h_now_ms(), deadline, "calls of clients long gone are still in flight");
                h_load_pump(l, 50);
        }
        finish(l, &b, "connect_disconnect_thousands");
}

/* ---- the descriptor limit ---- */

/* Connects and pings (the answer is left unread); returns the connection. */
static int connect_and_ping(void) {
        int fd = raw_connect();

        cr_assert_geq(fd, 0, "connect: %s", strerror(errno));
        raw_send(fd, PING);
        return fd;
}

#define EMFILE_LOG "cannot accept on the mcp socket: Too many open files"

/* Waits until the daemon either accepted one more connection (holds want descriptors: true)
 * or could not (EMFILE in its log: false). */
static bool accepted_or_emfile(int want) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        for (;;) {
                h_notify_drain(&D);
                if (proc_fd_count(D.pid) == want)
                        return true;
                if (h_log_count(&D, EMFILE_LOG) > 0)
                        return false;
                cr_assert_lt(h_now_ms(), deadline, "the daemon neither accepted nor failed to");
                poll(NULL, 0, 10); /* /proc and the log have no readiness to wait on */
        }
}

/* The daemon at its RLIMIT_NOFILE (lowered under it with prlimit, below the reserve it
 * computed at start): accept() fails with EMFILE. The daemon must not spin on the readable
 * listening socket (its CPU time stays low), must turn the waiting connections away with an
 * error line (its spare descriptor makes room to take each one) and must go on serving the
 * clients it has. */
Test(load, emfile) {
        enum { HEADROOM = 4, MAX_HELD = 64, PENDING = 3, WINDOW_MS = 1000 };
        struct h_load *l = start_a_and_b("", "", KINDS);
        struct baseline b = baseline_take(2);
        struct rlimit old, low;
        int held[MAX_HELD], pending[PENDING], n_held = 0;
        long long cpu;
        unsigned warnings;

        cr_assert_eq(prlimit(D.pid, RLIMIT_NOFILE, NULL, &old), 0, "prlimit: %s", strerror(errno));
        low = (struct rlimit){ .rlim_cur = (rlim_t)b.fds + HEADROOM, .rlim_max = old.rlim_max };
        cr_assert_eq(prlimit(D.pid, RLIMIT_NOFILE, &low, NULL), 0, "prlimit: %s", strerror(errno));

        /* connections accepted one by one use the headroom up; the first one that cannot be
         * waits in the backlog, and so do the next */
        for (;;) {
                int fd = connect_and_ping();

                if (!accepted_or_emfile(b.fds + n_held + 1)) {
                        pending[0] = fd;
                        break;
                }
                held[n_held++] = fd;
                cr_assert_lt(n_held, MAX_HELD, "the daemon never hit its descriptor limit");
        }
        cr_assert_leq(n_held, HEADROOM, "%d connections accepted with %d descriptors to spare", n_held, HEADROOM);
        for (unsigned i = 1; i < PENDING; i++)
                pending[i] = connect_and_ping();

        /* at the limit: a second of the daemon's CPU time, the load idle (not a wait on a
         * condition: the length of the measurement) */
        warnings = h_log_count(&D, EMFILE_LOG);
        cpu = proc_cpu_ms(D.pid);
        for (long long end = h_now_ms() + WINDOW_MS; h_now_ms() < end;) {
                h_notify_drain(&D);
                poll(NULL, 0, 50);
        }
        cpu = proc_cpu_ms(D.pid) - cpu;
        warnings = h_log_count(&D, EMFILE_LOG) - warnings;
        if (getenv("H_VERBOSE"))
                fprintf(stderr, "at the limit: %lld ms of CPU and %u warnings in %d ms\n", cpu, warnings, WINDOW_MS);
        cr_assert_lt(cpu, WINDOW_MS / 10, "the daemon used %lld ms of CPU in %d ms at its limit", cpu, WINDOW_MS);

        /* still serving its clients */
        h_load_add(l, 20);
        h_load_finish(l, LOAD_MS);

        /* the connections over the limit were told why and closed, not left waiting */
        for (int i = 0; i < n_held; i++)
                close(held[i]);
        for (unsigned i = 0; i < PENDING; i++) {
                struct pollfd p = { pending[i], POLLIN, 0 };
                char buf[512] = "";

                cr_assert_eq(poll(&p, 1, H_TIMEOUT_MS), 1, "connection %u over the limit left waiting", i);
                cr_assert_gt(recv(pending[i], buf, sizeof buf - 1, 0), 0);
                cr_assert_not_null(strstr(buf, "out of file descriptors"), "connection %u read: %s", i, buf);
                close(pending[i]);
        }
        cr_assert_eq(prlimit(D.pid, RLIMIT_NOFILE, &old, NULL), 0);
        finish(l, &b, "emfile");
        /* a pause logs once: a warning per retry would flood the journal while at the limit */
        cr_expect_leq(warnings, 2, "%u warnings in %d ms at the limit", warnings, WINDOW_MS);
}

/* ---- signals ---- */

/* Twenty reloads of an unchanged config under load restart nothing and cost no call; then
 * one that changes b restarts b alone, its calls in flight failing once each. */
Test(load, sighup) {
        struct h_load *l = start_a_and_b("", "\"restartDelay\":0.1", KINDS_B_MAY_FAIL);
        struct baseline b = baseline_take(2);

        for (unsigned i = 0; i < 20; i++) {
                cr_assert_eq(kill(D.pid, SIGHUP), 0);
                load_until_log(l, "reloaded: ", i + 1);
        }
        cr_assert_eq(h_load_stats(l).errors, 0, "a reload that changed nothing failed calls");
        cr_assert_eq(h_notify_count(&D, "RELOADING=1"), 20);
        servers_reset(&D);
        add_tagged("a", "", "");
        add_tagged("b", "\"restartDelay\":0.1", "\"--instructions\",\"changed\"");
        config_rewrite();
        h_load_add(l, 8);
        h_load_pump(l, 20);
        cr_assert_eq(kill(D.pid, SIGHUP), 0);
        load_until_log(l, "[b] starting -> ready", 2);
        cr_assert_eq(h_log_count(&D, "[a] starting -> ready"), 1, "a was restarted");
        finish(l, &b, "sighup");
}

/* Clients each with calls in flight in both servers (seen by them: progress came) when
 * SIGTERM arrives: each call gets exactly one answer before its connection ends; the daemon
 * exits 0, and nothing the servers started (b leaves a setsid grandchild) is left. */
Test(load, sigterm) {
        enum { N = 3, CALLS = 4 };
        struct h_client *x[N];
        int status = -1;

        add_tagged("a", "", "");
        add_tagged("b", "\"stopTimeout\":0.2,\"killTimeout\":0.2", "\"--grandchild-setsid\"");
        start(NULL);
        wait_all_ready(2);
        for (unsigned i = 0; i < N; i++) {
                x[i] = h_client_open(&D, false, NULL);
                for (unsigned j = 0; j < CALLS; j++)
                        h_client_request(x[i], sf("%u", j + 1), "tools/call",
                                         sf("{\"name\":\"%s\",\"arguments\":{\"ms\":30000},\"_meta\":{\"progressToken\":%u}}",
                                            j % 2 ? "b__sleep" : "a__sleep", j + 1));
        }
        for (unsigned i = 0; i < N; i++)
                for (unsigned j = 0; j < CALLS; j++) {
                        json_object *p;
                        while ((p = h_take(x[i], h_is_method, "notifications/progress", H_TIMEOUT_MS)) &&
                               json_object_get_int(h_get(p, "params.progressToken")) != (int)j + 1)
                                json_object_put(p);
                        cr_assert_not_null(p, "client %u: call %u made no progress", i, j + 1);
                        json_object_put(p);
                }
        cr_assert_eq(h_count_processes_with_env(tag_entry()), 3); /* a, b, b's grandchild */

        cr_assert_eq(kill(D.pid, SIGTERM), 0);
        for (unsigned i = 0; i < N; i++) {
                unsigned answers[CALLS] = { 0 };
                json_object *m;
                long long deadline = h_now_ms() + 2 * H_TIMEOUT_MS;

                while ((m = h_client_read(x[i], H_TIMEOUT_MS))) {
                        int id = json_object_get_int(h_get(m, "id"));
                        if (!h_get(m, "method")) {
                                cr_assert(id >= 1 && id <= CALLS, "client %u: an answer to %s", i, h_json_text(m));
                                answers[id - 1]++;
                        }
                        json_object_put(m);
                        cr_assert_lt(h_now_ms(), deadline, "client %u: the connection does not end", i);
                }
                for (unsigned j = 0; j < CALLS; j++)
                        cr_assert_eq(answers[j], 1, "client %u, call %u: %u answers", i, j + 1, answers[j]);
                h_client_close(x[i]);
        }
        for (long long deadline = h_now_ms() + 2 * H_TIMEOUT_MS;
             (status = h_wait_exit(&D, 20)) == -1 && h_now_ms() < deadline;)
                h_notify_drain(&D);
        cr_assert(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
        stop_clean(); /* nothing tagged is left */
}
