/* Servers at fault under load: a server that crashes mid-call, hangs (SIGSTOP), exits during
 * initialize, writes garbage, closes its stdout but stays alive, ignores SIGTERM, leaves
 * setsid grandchildren or floods its stderr, while several clients keep calling.
 *
 * Each test runs two demo servers (demo/demo-server.c): "a", never at fault, whose calls
 * must all succeed, and "b", the one at fault, whose calls may get errors. Every request of
 * the load gets exactly one answer (h_load_finish), and afterwards the daemon is back at the
 * baseline it had once warmed up: the same descriptors, its RSS within a slack, no zombie
 * child, and the same number of processes carrying the test's tag in their environment
 * (servers and what they leave behind); once it stopped, none (teardown_no_orphans).
 *
 * Every wait drains the daemon's NOTIFY datagrams (h_load_pump, h_log_count_wait, ...): once
 * their queue is full, its sd_notify() blocks and the daemon stands still. */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;
static char T[64];                       /* this test's own directory */
static char PIDFILE[128], GPIDFILE[128]; /* b's --pidfile, --grandchild-pidfile */

static void setup(void) {
        strcpy(T, "/tmp/mcpvisor-faults-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        snprintf(PIDFILE, sizeof PIDFILE, "%s/b.pid", T);
        snprintf(GPIDFILE, sizeof GPIDFILE, "%s/b-grandchild.pid", T);
        servers_reset(&D);
}

static void teardown(void) {
        teardown_no_orphans();
        h_remove_tree(T);
}

TestSuite(faults, .init = setup, .fini = teardown, .timeout = 60);

/* The load: a's calls must succeed, b's may fail (b is at fault). The echoes carry a text
 * unique to the request, so an answer given to the wrong request or client shows. */
static const struct h_call_kind KINDS[] = {
        { "a__echo", NULL, false },
        { "b__echo", NULL, true },
        { "a__sleep", "{\"ms\":5}", false },
        { "b__sleep", "{\"ms\":50}", true },
};
/* For faults that must not cost b a single call. */
static const struct h_call_kind KINDS_ALL_OK[] = {
        { "a__echo", NULL, false },
        { "b__echo", NULL, false },
        { "a__sleep", "{\"ms\":5}", false },
        { "b__sleep", "{\"ms\":50}", false },
};
#define N_KINDS (sizeof KINDS / sizeof KINDS[0])
#define AFTER 20         /* requests per client once the fault is over */

/* b restarts at once, and as often as it has to. */
#define B_RESTART "\"restartDelay\":0.1,\"restartDelayMax\":0.2,\"startLimitBurst\":0"
/* Both misbehaviours a close sequence has to get past, and a short one. */
#define STUBBORN "\"--ignore-stdin-eof\",\"--ignore-sigterm\""
#define SHORT_STOP "\"stopTimeout\":0.2,\"killTimeout\":0.2"

/* ---- helpers ---- */

/* Keeps the load going until b answers a call again (after a fault, restarts may take a
 * few rounds of its backoff). */
static void load_until_b_serves(struct h_load *l) {
        struct h_client *x = h_client_open(&D, false, NULL);
        long long deadline = h_now_ms() + FAULT_MS;

        for (unsigned i = 1;; i++) {
                char id[16];
                json_object *r;
                bool ok;

                snprintf(id, sizeof id, "%u", i);
                h_client_tool_request(x, id, "b__echo", "{\"text\":\"back\"}");
                while (!(r = h_take(x, h_is_answer, id, 10))) {
                        cr_assert_lt(h_now_ms(), deadline, "b__echo was not answered");
                        if (h_load_pump(l, 20))
                                h_load_add(l, 4);
                }
                ok = h_get(r, "result") != NULL;
                json_object_put(r);
                if (ok)
                        break;
                cr_assert_lt(h_now_ms(), deadline, "b does not serve again");
                h_load_pump(l, 50);
        }
        h_client_close(x);
}

/* Ends the test: more requests after the fault, all answered exactly once; the daemon back
 * at its baseline (the load's clients still connected, as they were then); a clean stop. */
static void finish(struct h_load *l, const struct baseline *b, const char *what) {
        struct h_load_stats s, bs;
        long grown;

        h_load_add(l, AFTER);
        h_load_finish(l, LOAD_MS);
        cr_assert_eq(h_log_count(&D, "[a] starting -> ready"), 1, "a was restarted too");
        s = h_load_stats(l);
        bs = h_load_kind_stats(l, 1);
        /* a's slowest: its echoes and its sleeps */
        s.max_latency_ms = h_load_kind_stats(l, 0).max_latency_ms;
        if (h_load_kind_stats(l, 2).max_latency_ms > s.max_latency_ms)
                s.max_latency_ms = h_load_kind_stats(l, 2).max_latency_ms;
        grown = baseline_expect(b); /* its clients still connected, as at the baseline */
        h_load_free(l);
        stop_clean();
        if (getenv("H_VERBOSE"))
                fprintf(stderr, "%s: %u requests (%u errors, b: %u of %u), a's slowest %lld ms, RSS +%ld KiB\n", what,
                        s.sent, s.errors, bs.errors, bs.sent, s.max_latency_ms, grown);
}

static void expect_log(const char *needle) {
        cr_assert(h_log_count_wait(&D, needle, 1, H_TIMEOUT_MS), "not in the log: %s", needle);
}

/* ---- faults ---- */

/* b crashes three times while calls to a and to b are in flight from three clients. */
Test(faults, crash_mid_call) {
        struct h_client *crasher;
        struct h_load *l;
        struct baseline b;

        add_tagged("a", "", "");
        add_tagged("b", B_RESTART, "");
        l = start_loaded(2, KINDS, N_KINDS);
        b = baseline_take(2);
        crasher = h_client_open(&D, false, NULL);
        for (unsigned i = 0; i < 3; i++) {
                char id[16];
                json_object *r;

                snprintf(id, sizeof id, "%u", i + 1);
                h_load_add(l, 8);
                h_load_pump(l, 20); /* calls in flight, to b among others */
                h_client_tool_request(crasher, id, "b__crash", "{}");
                load_until_log(l, "[b] starting -> ready", i + 2);
                r = h_client_answer(crasher, id);
                cr_assert_not_null(strstr(h_str(r, "error.message"), "exited with status 3 during this call"), "%s",
                                   h_json_text(r));
                json_object_put(r);
        }
        h_client_close(crasher);
        finish(l, &b, "crash_mid_call");
}

/* A server with 20,000 tools (about 100 MiB of the daemon's memory; its own ten are cut)
 * crashes, then twice more: its old catalogue, freed once the new one is in, is given back,
 * so the daemon's RSS stays within the baseline's slack instead of growing by half the
 * catalogue at each restart. The baseline is taken after the first restart: the registry's
 * lists are built when read, so the daemon's heap reaches its size only once they have
 * been built from a catalogue and rebuilt without it. */
static void crash_big(struct h_client *x, unsigned i) {
        const char *id = sf("%u", i + 1);

        h_client_tool_request(x, id, "big__crash", "{}");
        cr_assert(h_log_count_wait(&D, "[big] starting -> ready", i + 2, H_TIMEOUT_MS), "big was not restarted");
        json_object_put(h_client_answer(x, id));
}

Test(faults, big_catalogue_restarts) {
        struct h_client *x;
        struct baseline b;

        add_tagged("big", "\"maxCatalogItems\":20000," B_RESTART, "\"--tools\",\"20000\"");
        start(NULL);
        wait_all_ready(1);
        x = h_client_open(&D, false, NULL);
        crash_big(x, 0);
        h_client_close_freed(&D, x); /* its socket is no part of the baseline */
        b = baseline_take(1);
        x = h_client_open(&D, false, NULL);
        for (unsigned i = 1; i < 3; i++)
                crash_big(x, i);
        h_client_close(x);
        baseline_expect(&b);
}

/* b stops dead (SIGSTOP) with calls in flight: they time out, its health check fails, the
 * close sequence ends in SIGKILL, and a new b serves. */
Test(faults, hang) {
        struct h_load *l;
        struct baseline b;
        pid_t pid;

        add_tagged("a", "", "");
        add_tagged("b",
                   "\"requestTimeout\":1,\"healthInterval\":0.2,\"healthTimeout\":0.3,\"healthFailures\":1," SHORT_STOP
                   "," B_RESTART,
                   sf("\"--pidfile\",\"%s\"", PIDFILE));
        l = start_loaded(2, KINDS, N_KINDS);
        b = baseline_take(2);
        pid = h_pidfile_wait(PIDFILE, 0, H_TIMEOUT_MS);
        cr_assert_gt(pid, 0);
        h_load_add(l, 8);
        h_load_pump(l, 20);
        cr_assert_eq(kill(pid, SIGSTOP), 0);
        load_until_log(l, "[b] starting -> ready", 2);
        /* a stopped process still dies of SIGTERM's default action */
        expect_log("[b] ready -> stopping: 1 health check failed in a row: no answer to ping within healthTimeout (0.3 s)");
        expect_log("[b] stopping -> backoff: 1 health check failed in a row: no answer to ping within healthTimeout "
                   "(0.3 s), then stopped with SIGTERM after stopTimeout (0.2 s)");
        cr_assert(h_pid_gone_wait(pid, H_TIMEOUT_MS), "the hung b (pid %d) is still there", (int)pid);
        finish(l, &b, "hang");
}

/* Calls whose requests wait unsent for a stopped b: the first few fill serverInputLimit
 * (4 MiB), the rest are refused at once, naming b; then b, having read nothing for
 * healthTimeout, is restarted, the queued calls fail, and the daemon holds no more than
 * the limit meanwhile. On the old code every call was queued (the daemon grew by each one,
 * 32 MiB in all) and b was restarted only by health checks, after healthFailures pings. */
#define BIG_CALLS 32
#define BIG_TEXT (1024 * 1024)
#define INPUT_LIMIT (4 * 1024 * 1024)

static char *big_echo(unsigned i) {
        char *args = malloc(BIG_TEXT + 64);
        int n;

        cr_assert_not_null(args);
        n = snprintf(args, 64, "{\"text\":\"%u:", i);
        memset(args + n, 'x', BIG_TEXT);
        strcpy(args + n + BIG_TEXT, "\"}");
        return args;
}

static bool is_any_answer(json_object *msg, const char *arg) {
        return json_object_object_get_ex(msg, "id", NULL) && !json_object_object_get_ex(msg, "method", NULL);
}

static void send_big_calls(struct h_client *x) {
        for (unsigned i = 1; i <= BIG_CALLS; i++) {
                char *args = big_echo(i);

                h_client_tool_request(x, sf("%u", i), "b__echo", args);
                free(args);
        }
}

/* Takes the answers of all the calls, each exactly once, and returns how many were queued
 * for the stopped b (they end with its run: "ended ... during this call"). The others were
 * refused at once, naming b: past the limit while b was stopped, or, when sending took
 * longer than healthTimeout (a loaded machine), because b was by then being restarted; or,
 * sent later still, answered by the restarted b. */
static unsigned take_big_answers(struct h_client *x) {
        bool seen[BIG_CALLS + 1] = { false };
        long long deadline = h_now_ms() + FAULT_MS;
        unsigned queued = 0;

        for (unsigned n = 0; n < BIG_CALLS; n++) {
                json_object *r;
                const char *m;
                int id;

                while (!(r = h_take(x, is_any_answer, NULL, 50)))
                        cr_assert_lt(h_now_ms(), deadline, "%u of %d calls answered", n, BIG_CALLS);
                id = json_object_get_int(h_get(r, "id"));
                cr_assert(id >= 1 && id <= BIG_CALLS && !seen[id], "answered twice or unknown: %.300s", h_json_text(r));
                seen[id] = true;
                if (!h_get(r, "error")) {
                        /* sent after b's restart, to the new b, which reads */
                        cr_assert_not_null(h_get(r, "result"), "%.300s", h_json_text(r));
                        json_object_put(r);
                        continue;
                }
                m = h_str(r, "error.message");
                if (strstr(m, "during this call"))
                        queued++;
                else if (strstr(m, "not reading"))
                        cr_assert(strstr(m, "server 'b' is not reading its input") &&
                                  strstr(m, "serverInputLimit (4194304 bytes)"), "%s", m);
                else
                        cr_assert(strstr(m, "server 'b' is not ready"), "%s", m);
                json_object_put(r);
        }
        return queued;
}

/* How many lines of the log file hold needle before the first that holds end: what one
 * run logged (on a slow build, calls sent after the restart may fill the new run's queue
 * too, which it logs once for itself). */
static unsigned count_before(const char *log, const char *needle, const char *end) {
        FILE *f = fopen(log, "re");
        char line[4096];
        unsigned n = 0;

        cr_assert_not_null(f, "%s", log);
        while (fgets(line, sizeof line, f) && !strstr(line, end))
                n += strstr(line, needle) != NULL;
        fclose(f);
        return n;
}

static bool log_has(const char *log, const char *needle) {
        FILE *f = fopen(log, "re");
        char line[4096];
        bool found = false;

        cr_assert_not_null(f, "%s", log);
        while (!found && fgets(line, sizeof line, f))
                found = strstr(line, needle) != NULL;
        fclose(f);
        return found;
}

/* RSS is checked without ASan only: under it, freed memory waits in the quarantine. */
#ifdef __SANITIZE_ADDRESS__
#define CHECK_RSS false
#else
#define CHECK_RSS true
#endif

Test(faults, server_input_bounded) {
        struct h_client *x;
        unsigned queued;
        long rss_before, rss_during;
        long long start_ms;
        json_object *r;
        pid_t pid;

        set_settings(sf("\"serverInputLimit\":%d", INPUT_LIMIT));
        add_tagged("a", "", "");
        add_tagged("b", "\"healthTimeout\":1," SHORT_STOP "," B_RESTART, sf("\"--pidfile\",\"%s\"", PIDFILE));
        start(NULL);
        wait_all_ready(2);
        x = h_client_open(&D, false, NULL);
        pid = h_pidfile_wait(PIDFILE, 0, H_TIMEOUT_MS);
        cr_assert_gt(pid, 0);
        rss_before = proc_rss_kib(D.pid);
        cr_assert_eq(kill(pid, SIGSTOP), 0);
        start_ms = h_now_ms();
        send_big_calls(x);
        rss_during = proc_rss_kib(D.pid);
        /* Once b's stall was seen (sending took longer than healthTimeout: a loaded machine),
         * its next run echoes the calls sent after, 1 MiB each, into this client's output,
         * which it reads only later: that memory is clientOutputLimit's, not this test's. */
        if (CHECK_RSS && !getenv("MCPVISOR_IT_WRAPPER") && !log_has(D.log, "[b] ready -> stopping"))
                cr_assert_lt(rss_during - rss_before, (INPUT_LIMIT + 16 * BIG_TEXT) / 1024,
                             "the daemon grew from %ld to %ld KiB", rss_before, rss_during);
        expect_log("[b] not reading its stdin: ");
        expect_log("[b] ready -> stopping: read none of its stdin for 1 s (healthTimeout) while ");
        cr_assert_eq(count_before(D.log, "refusing what would pass serverInputLimit (4194304 bytes)",
                                  "[b] ready -> stopping: read none of its stdin"),
                     1, "logged once for the stalled run's queue");
        cr_assert_lt(h_now_ms() - start_ms, 7000, "b's stall was seen after %lld ms", h_now_ms() - start_ms);
        queued = take_big_answers(x);
        if (getenv("H_VERBOSE"))
                fprintf(stderr, "server_input_bounded: %u of %d queued, RSS %ld -> %ld KiB\n", queued, BIG_CALLS,
                        rss_before, rss_during);
        cr_assert_leq(queued, INPUT_LIMIT / BIG_TEXT, "%u of %d calls queued past the limit", queued, BIG_CALLS);
        cr_assert(h_log_count_wait(&D, "[b] starting -> ready", 2, FAULT_MS), "b was not restarted");
        r = h_client_tool_call(x, "\"again\"", "b__echo", "{\"text\":\"back\"}");
        cr_assert_str_eq(h_result_text(r), "back");
        json_object_put(r);
        cr_assert_null(h_take(x, is_any_answer, NULL, 100), "an answer too many");
        h_client_close(x);
        stop_clean();
}

/* Rewrites b's entry to run with bad_args and reloads (SIGHUP), under load; waits for needle
 * to show three times (b failing again and again), then puts b back as it was. */
static void flap_by_reload(const char *b_keys, const char *bad_args, const char *needle, const char *what) {
        struct h_load *l;
        struct baseline b;

        add_tagged("a", "", "");
        add_tagged("b", b_keys, "");
        l = start_loaded(2, KINDS, N_KINDS);
        b = baseline_take(2);

        servers_reset(&D);
        add_tagged("a", "", "");
        add_tagged("b", b_keys, bad_args);
        config_rewrite();
        cr_assert_eq(kill(D.pid, SIGHUP), 0);
        load_until_log(l, needle, 3);

        servers_reset(&D);
        add_tagged("a", "", "");
        add_tagged("b", b_keys, "");
        config_rewrite();
        cr_assert_eq(kill(D.pid, SIGHUP), 0);
        load_until_log(l, "reloaded: ", 2);
        load_until_b_serves(l);
        finish(l, &b, what);
}

Test(faults, exit_during_initialize) {
        /* once per failure, whichever end the daemon sees first: "exit status 4 before it
         * was ready" or "closed its stdout, then exit status 4" */
        flap_by_reload(B_RESTART, "\"--exit-during-init\",\"4\"", "exit status 4",
                       "exit_during_initialize");
}

/* b closes its stdout after the handshake's tools/list, yet stays alive, deaf to its
 * stdin's end and to SIGTERM: each of its runs ends in SIGKILL. */
Test(faults, close_stdout_stays_alive) {
        flap_by_reload(SHORT_STOP "," B_RESTART, "\"--close-stdout\"," STUBBORN,
                       "[b] stopping -> backoff: closed its stdout", "close_stdout_stays_alive");
        cr_assert_geq(h_log_count(&D, "[b] still running 0.2 s after SIGTERM; sending SIGKILL"), 3);
}

/* b ignores its stdin's end and SIGTERM; an operator restarts it three times while calls
 * are in flight: each restart ends in SIGKILL, the old process is gone. */
Test(faults, ignores_sigterm) {
        struct h_load *l;
        struct baseline b;
        pid_t pid = 0;

        add_tagged("a", "", "");
        add_tagged("b", SHORT_STOP "," B_RESTART, sf(STUBBORN ",\"--pidfile\",\"%s\"", PIDFILE));
        l = start_loaded(2, KINDS, N_KINDS);
        b = baseline_take(2);
        for (unsigned i = 0; i < 3; i++) {
                json_object *r;

                pid = h_pidfile_wait(PIDFILE, pid, H_TIMEOUT_MS);
                cr_assert_gt(pid, 0, "b wrote no new pidfile");
                h_load_add(l, 8);
                h_load_pump(l, 20);
                r = h_control(&D, "restart", "{\"name\":\"b\"}");
                cr_assert_not_null(h_get(r, "result"), "%s", h_json_text(r));
                json_object_put(r);
                load_until_log(l, "[b] starting -> ready", i + 2);
                cr_assert(h_pid_gone_wait(pid, H_TIMEOUT_MS), "the old b (pid %d) is still there", (int)pid);
        }
        cr_assert_geq(h_log_count(&D, "[b] still running 0.2 s after SIGTERM; sending SIGKILL"), 3);
        finish(l, &b, "ignores_sigterm");
}

/* b leaves a sleeping grandchild in a session of its own at each start, then crashes with
 * calls in flight: each old grandchild is ended, the current one alone is left. */
Test(faults, setsid_grandchildren) {
        struct h_client *crasher;
        struct h_load *l;
        struct baseline b;
        pid_t grandchild = 0;

        add_tagged("a", "", "");
        add_tagged("b", B_RESTART, sf("\"--grandchild-setsid\",\"--grandchild-pidfile\",\"%s\"", GPIDFILE));
        l = start_loaded(2, KINDS, N_KINDS);
        b = baseline_take(3); /* a, b and b's grandchild */
        crasher = h_client_open(&D, false, NULL);
        for (unsigned i = 0; i < 3; i++) {
                char id[16];

                grandchild = h_pidfile_wait(GPIDFILE, grandchild, H_TIMEOUT_MS);
                cr_assert_gt(grandchild, 0, "b left no new grandchild");
                snprintf(id, sizeof id, "%u", i + 1);
                h_load_add(l, 8);
                h_load_pump(l, 20);
                h_client_tool_request(crasher, id, "b__crash", "{}");
                load_until_log(l, "[b] starting -> ready", i + 2);
                json_object_put(h_client_answer(crasher, id));
                cr_assert(h_pid_gone_wait(grandchild, H_TIMEOUT_MS), "the old grandchild (pid %d) is still there",
                          (int)grandchild);
        }
        h_client_close(crasher);
        finish(l, &b, "setsid_grandchildren");
}

/* b writes to its stderr without end: every call still succeeds, promptly, and the daemon
 * holds no more memory for it. */
Test(faults, stderr_flood) {
        struct h_load *l;
        struct baseline b;

        add_tagged("a", "", "");
        add_tagged("b", "", "\"--flood-stderr\",\"0\"");
        l = start_loaded(2, KINDS_ALL_OK, N_KINDS);
        b = baseline_take(2);
        cr_assert(h_log_count_wait(&D, "\nb: flood line ", 1000, H_TIMEOUT_MS), "the flood did not reach the log");
        for (unsigned i = 0; i < 4; i++) {
                h_load_add(l, 50);
                h_load_finish(l, LOAD_MS);
        }
        cr_assert_lt(h_load_stats(l).max_latency_ms, 3000, "a call took %lld ms", h_load_stats(l).max_latency_ms);
        finish(l, &b, "stderr_flood");
}

/* b writes a line that is not JSON before each of its answers: every call still succeeds. */
Test(faults, garbage_stdout) {
        struct h_load *l;
        struct baseline b;

        add_tagged("a", "", "");
        add_tagged("b", "", "\"--garbage\"");
        l = start_loaded(2, KINDS_ALL_OK, N_KINDS);
        b = baseline_take(2);
        h_load_add(l, 100);
        h_load_finish(l, LOAD_MS);
        expect_log("[b] server wrote something that is not MCP on stdout");
        finish(l, &b, "garbage_stdout");
}
