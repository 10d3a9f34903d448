/* mcpvisorctl against the built daemon, run for real: status as a table and as JSON, with
 * its exit statuses; start, stop and restart followed until the server settles; the
 * daemon's errors; reload; connect bridging an MCP session through its stdin and stdout;
 * and the errors that say what to do when a socket is missing, refuses us, or is silent.
 *
 * mcpvisorctl runs as a child with pipes on stdin, stdout and stderr (struct proc); every
 * wait on it has a deadline and drains the daemon's NOTIFY datagrams meanwhile (see
 * h_notify_drain), since a restart makes the daemon send several. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "servers.h"

#define CTL_TIMEOUT_MS 20000 /* longer than mcpvisorctl's own waits, so that they fail first */

static struct h_daemon D;
static char T[64];        /* this test's own directory */
static char PIDFILE[128]; /* the demo server's --pidfile */

static void setup(void) {
        /* D is zeroed per test (each runs in a process of its own); a daemon never started
         * must not have fd 0 closed as its NOTIFY socket by the teardown */
        D.notify_fd = -1;
        strcpy(T, "/tmp/mcpvisor-ctl-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        snprintf(PIDFILE, sizeof PIDFILE, "%s/demo.pid", T);
        servers_reset(&D);
        /* mcpvisorctl may exit before it has read all we write to it */
        signal(SIGPIPE, SIG_IGN);
}

static void teardown(void) {
        servers_teardown();
        h_remove_tree(T);
}

TestSuite(ctl, .init = setup, .fini = teardown, .timeout = 60);

/* mcpvisorctl ARGS... with stdin empty: its exit status, stdout and stderr in *p. */
static int run_env(struct proc *p, const char *const *args, const char *const *env) {
        proc_start(p, &D, args, env);
        proc_close_stdin(p);
        return proc_wait(p, CTL_TIMEOUT_MS);
}

/* mcpvisorctl against D's sockets; the result in a static proc (freed at the next call). */
static struct proc R;

#define CTL(...) ctl_run((const char *const[]){ "-C", D.control, "-s", D.sock, __VA_ARGS__, NULL })

static int ctl_run(const char *const *args) {
        proc_free(&R);
        return run_env(&R, args, NULL);
}

/* ---- expectations ---- */

static void expect_exit(int got, int want) {
        cr_assert_eq(got, want, "mcpvisorctl exited %d, expected %d; stdout: %s; stderr: %s", got, want, R.outbuf,
                     R.errbuf);
}

static void expect_contains(const char *text, const char *needle, const char *what) {
        cr_assert_not_null(strstr(text, needle), "%s lacks \"%s\": %s", what, needle, text);
}

/* The line of the status table that starts with name, split at runs of spaces. */
static unsigned row_fields(const char *table, const char *name, char fields[][64], unsigned max) {
        char *copy = strdup(table), *save = NULL;
        unsigned n = 0;

        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *fsave = NULL, *f = strtok_r(line, " ", &fsave);

                if (!f || strcmp(f, name) != 0)
                        continue;
                for (; f && n < max; f = strtok_r(NULL, " ", &fsave))
                        snprintf(fields[n++], 64, "%s", f);
                break;
        }
        free(copy);
        return n;
}

/* status --json, parsed; asserts it worked (exit 0 or 3). */
static json_object *status_json(void) {
        int r = CTL("status", "--json");
        json_object *o;

        cr_assert(r == 0 || r == 3, "status --json exited %d: %s", r, R.errbuf);
        o = json_tokener_parse(R.outbuf);
        cr_assert_not_null(o, "status --json printed no JSON: %s", R.outbuf);
        return o;
}

static json_object *server_entry(json_object *status, const char *name) {
        json_object *servers = h_get(status, "servers");

        for (size_t i = 0; servers && i < json_object_array_length(servers); i++)
                if (strcmp(h_str(json_object_array_get_idx(servers, i), "name"), name) == 0)
                        return json_object_array_get_idx(servers, i);
        cr_assert_fail("no server %s in the status: %s", name, h_json_text(status));
        return NULL;
}

/* Waits until status says server name is in state (by status --json, so through the CLI). */
static void wait_state(const char *name, const char *state) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        for (;;) {
                json_object *st = status_json();
                bool done = strcmp(h_str(server_entry(st, name), "state"), state) == 0;

                json_object_put(st);
                if (done)
                        return;
                cr_assert_gt(left_ms(deadline), 0, "%s did not reach %s within %d ms", name, state, H_TIMEOUT_MS);
                h_notify_drain(&D);
                poll(NULL, 0, 50); /* status is asked, not told: ask again shortly */
        }
}

/* Waits until the daemon logs that server name is ready (the n-th time). */
static void wait_ready_logged(const char *name, unsigned n) {
        cr_assert(h_log_count_wait(&D, sf("[%s] starting -> ready", name), n, H_TIMEOUT_MS), "%s did not become ready",
                  name);
}

/* Starts the daemon with the servers added so far; returns once its control socket is there. */
static void start_daemon(void) {
        start(NULL);
        h_close(h_connect(D.control, H_TIMEOUT_MS));
}

/* The demo server "demo", writing its pid to PIDFILE, after the servers added before;
 * started and ready. */
static pid_t start_demo(void) {
        pid_t pid;

        add_demo("demo", "", sf("\"--pidfile\",\"%s\"", PIDFILE));
        start_daemon();
        wait_ready_logged("demo", 1);
        pid = h_pidfile_wait(PIDFILE, 0, H_TIMEOUT_MS);
        cr_assert_gt(pid, 0, "demo wrote no pidfile");
        return pid;
}

/* ---- status ---- */

Test(ctl, status_prints_the_daemon_and_a_row_per_server) {
        char f[16][64];
        pid_t pid;
        const char *header;

        add_demo("off", "\"disabled\":true", "");
        pid = start_demo();
        expect_exit(CTL("status"), 0);
        cr_expect_str_empty(R.errbuf);
        expect_contains(R.outbuf, sf("mcpvisord 0.1.0, pid %d, up ", (int)D.pid), "the daemon line");
        expect_contains(R.outbuf, sf("config %s\n", D.config), "the daemon line");
        header = strstr(R.outbuf, "NAME");
        cr_assert_not_null(header, "no table header: %s", R.outbuf);
        cr_expect(strncmp(header, "NAME ", 5) == 0 && strstr(header, "STATE") && strstr(header, "PID") &&
                          strstr(header, "UPTIME") && strstr(header, "RESTARTS") && strstr(header, "LAST EXIT") &&
                          strstr(header, "TOOLS") && strstr(header, "IN-FLIGHT"),
                  "table header: %s", header);
        cr_expect(strstr(header, "LAUNCHER") && strstr(header, "MEMORY") && strstr(header, "PEAK") &&
                          strstr(header, "CPU") && strstr(header, "TASKS") && strstr(header, "PROTOCOL"),
                  "table header: %s", header);
        /* NAME STATE PID UPTIME RESTARTS LAST-EXIT TOOLS IN-FLIGHT LAUNCHER MEMORY PEAK CPU TASKS PROTOCOL
         * (its era and version: two fields) */
        cr_assert_eq(row_fields(R.outbuf, "demo", f, 16), 15, "demo's row: %s", R.outbuf);
        cr_expect_str_eq(f[1], "ready");
        cr_expect_str_eq(f[2], sf("%d", (int)pid));
        cr_expect(f[3][strlen(f[3]) - 1] == 's', "uptime as 12s or 3m12s: %s", f[3]);
        cr_expect_str_eq(f[4], "0");
        cr_expect_str_eq(f[5], "-");
        cr_expect_str_eq(f[6], "10");
        cr_expect_str_eq(f[7], "0");
        /* exec: the main process's resident memory and CPU time from /proc; tasks unknown */
        cr_expect_str_eq(f[8], "exec");
        cr_expect(strchr("KMG", f[9][strlen(f[9]) - 1]) != NULL, "memory as 3.2M: %s", f[9]);
        cr_expect(strchr("KMG", f[10][strlen(f[10]) - 1]) != NULL, "peak as 3.2M: %s", f[10]);
        cr_expect(f[11][strlen(f[11]) - 1] == 's', "CPU as 0.02s: %s", f[11]);
        cr_expect_str_eq(f[12], "-");
        cr_expect_str_eq(f[13], "legacy");
        cr_expect_str_eq(f[14], "2025-11-25");
        cr_assert_eq(row_fields(R.outbuf, "off", f, 16), 14, "off's row: %s", R.outbuf);
        cr_expect_str_eq(f[13], "-");
        cr_expect_str_eq(f[1], "disabled");
        cr_expect_str_eq(f[2], "-");
        cr_expect_str_eq(f[8], "-");
        cr_expect_str_eq(f[9], "-");
        /* the rows in config order: off before demo */
        cr_expect_lt(strstr(R.outbuf, "\noff "), strstr(R.outbuf, "\ndemo "), "config order: %s", R.outbuf);
}

Test(ctl, status_json_is_the_daemons_answer) {
        json_object *st, *s;
        pid_t pid = start_demo();

        expect_exit(CTL("status", "--json"), 0);
        st = json_tokener_parse(R.outbuf);
        cr_assert_not_null(st, "not JSON: %s", R.outbuf);
        cr_expect(strchr(R.outbuf, '\n') < R.outbuf + R.outlen - 1, "pretty-printed on several lines");
        cr_expect_eq(json_object_get_int(h_get(st, "daemon.pid")), D.pid);
        cr_expect_str_eq(h_str(st, "daemon.version"), "0.1.0");
        cr_expect_str_eq(h_str(st, "daemon.config"), D.config);
        s = server_entry(st, "demo");
        cr_expect_str_eq(h_str(s, "state"), "ready");
        cr_expect_eq(json_object_get_int(h_get(s, "pid")), pid);
        cr_expect_eq(json_object_get_int(h_get(s, "tools")), 10);
        cr_expect(json_object_is_type(h_get(s, "lastExit"), json_type_null), "lastExit null: %s", h_json_text(s));
        cr_expect_str_eq(h_str(s, "launcher"), "exec");
        cr_expect(json_object_is_type(h_get(s, "unit"), json_type_null), "no unit: %s", h_json_text(s));
        cr_expect_gt(json_object_get_int64(h_get(s, "memory")), 0, "memory: %s", h_json_text(s));
        cr_expect_geq(json_object_get_int64(h_get(s, "memoryPeak")), json_object_get_int64(h_get(s, "memory")));
        cr_expect(json_object_is_type(h_get(s, "cpuUsec"), json_type_int), "cpuUsec: %s", h_json_text(s));
        cr_expect(json_object_is_type(h_get(s, "tasks"), json_type_null), "tasks unknown with exec: %s", h_json_text(s));
        json_object_put(st);
}

Test(ctl, status_names_select_servers) {
        json_object *st;

        add_demo("other", "", "");
        start_demo();
        wait_state("other", "ready");
        expect_exit(CTL("status", "--json", "other"), 0);
        st = json_tokener_parse(R.outbuf);
        cr_assert_not_null(st, "not JSON: %s", R.outbuf);
        cr_expect_eq(json_object_array_length(h_get(st, "servers")), 1, "only other: %s", R.outbuf);
        cr_expect_str_eq(h_str(st, "servers.0.name"), "other");
        json_object_put(st);

        expect_exit(CTL("status", "demo"), 0);
        cr_expect_null(strstr(R.outbuf, "\nother "), "other is not asked for: %s", R.outbuf);
        expect_contains(R.outbuf, "\ndemo ", "status demo");

        expect_exit(CTL("status", "nosuch"), 1);
        cr_expect_str_eq(R.errbuf, "mcpvisorctl: unknown server 'nosuch'; configured: other, demo\n");
        cr_expect_str_empty(R.outbuf);
}

Test(ctl, status_exits_3_while_an_enabled_server_is_not_ready) {
        char f[16][64];

        add_demo("bad", "\"restart\":\"never\"", "\"--exit-at-start\",\"1\"");
        start_demo();
        wait_state("bad", "failed");
        expect_exit(CTL("status"), 3);
        /* bad failed - - 0 exit status 1 0 0 - - - - - - */
        cr_assert_eq(row_fields(R.outbuf, "bad", f, 16), 16, "bad's row: %s", R.outbuf);
        cr_expect_str_eq(f[1], "failed");
        cr_expect(strcmp(f[5], "exit") == 0 && strcmp(f[6], "status") == 0 && strcmp(f[7], "1") == 0,
                  "LAST EXIT: %s", R.outbuf);
        expect_exit(CTL("status", "demo"), 0); /* only the servers shown count */
        expect_exit(CTL("status", "--json"), 3);
}

/* The servers of the tests of why a server is not ready: "bad" wrote a line and exited 1
 * (not restarted), "deaf" did not answer initialize within startTimeout and ignored the end
 * of its stdin, so the daemon's SIGTERM ended it (restarted in 30 s), "slow" is still
 * starting, having said what it does. */
static void start_troubled_servers(void) {
        add_demo("bad", "\"restart\":\"never\"", "\"--exit-at-start\",\"1\"");
        add_demo("deaf", "\"startTimeout\":0.3,\"stopTimeout\":0.2,\"restartDelay\":30",
                 "\"--never-answer\",\"--ignore-stdin-eof\",\"--stderr\",\"loading the model\"");
        add_demo("slow", "\"startTimeout\":60,\"stopTimeout\":0.2", "\"--slow-start\",\"60000\",\"--stderr\",\"downloading \\u00e9\"");
        start_daemon();
        wait_state("bad", "failed");
        wait_state("deaf", "backoff");
}

static double number(json_object *o, const char *path) {
        json_object *v = h_get(o, path);

        cr_assert(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int), "%s is no number: %s",
                  path, h_json_text(o));
        return json_object_get_double(v);
}

/* The indented lines under the row of server name in a status table (malloc'd; "" for none). */
static char *notes_of(const char *table, const char *name) {
        const char *row = strstr(table, sf("\n%s ", name)), *end;

        cr_assert_not_null(row, "no row for %s: %s", name, table);
        row = strchr(row + 1, '\n') + 1;
        for (end = row; strncmp(end, "  ", 2) == 0; end = strchr(end, '\n') + 1)
                ;
        return strndup(row, (size_t)(end - row));
}

static void expect_notes(const char *name, const char *want) {
        char *got = notes_of(R.outbuf, name);

        cr_expect_str_eq(got, want, "the notes under %s in: %s", name, R.outbuf);
        free(got);
}

/* Under each server that is not ready: why, its last stderr line, and where its log is,
 * which is the daemon's stderr here (it is not the journal, so journalctl is not named). */
Test(ctl, status_table_says_why_a_server_is_not_ready) {
        const char *log;
        char *bad;

        add_demo("demo", "", "");
        start_troubled_servers();
        log = sf("  log: on mcpvisord's stderr (%s), not in the journal\n", D.log);
        wait_state("demo", "ready");
        expect_exit(CTL("status"), 3);
        expect_notes("demo", "");
        bad = notes_of(R.outbuf, "bad");
        /* "exit status 1 before it was ready", or "closed its stdout, then exit status 1" when
         * the end of its stdout was seen first */
        cr_expect(strstr(bad, "exit status 1") && strstr(bad, "exit status 1") < strstr(bad, "\n  stderr "), "%s", bad);
        expect_contains(bad, sf(" ago: exiting at start with 1\n%s", log), "bad's notes");
        cr_expect_eq(strncmp(bad, "  why: ", 7), 0, "%s", bad);
        free(bad);
        expect_contains(R.outbuf,
                        sf("\n  why: startTimeout (0.3 s) passed before it was ready, then stopped with SIGTERM after "
                           "stopTimeout (0.2 s); restarting in "),
                        "deaf's notes");
        expect_contains(R.outbuf, " ago: stdin closed; staying up until signalled\n", "deaf's notes");
        expect_contains(notes_of(R.outbuf, "slow"), "  why: starting for ", "slow's notes");
        expect_contains(notes_of(R.outbuf, "slow"), sf(" ago: downloading \xc3\xa9\n%s", log), "slow's notes");
        cr_expect_null(strstr(R.outbuf, "journalctl"), "journalctl named, but the log is on stderr: %s", R.outbuf);
        cr_expect_null(strstr(R.outbuf, "killed by"), "the daemon's SIGTERM taken for the cause: %s", R.outbuf);
}

/* A cause is never cut: the status (table and JSON) and a call's error carry it whole. It
 * was cut at about 270 bytes: "(install it, give an absolut". */
Test(ctl, a_long_cause_is_shown_whole) {
        static const char tail[] = "(install it, give an absolute path, or set env.PATH)";
        char path[700];
        json_object *st, *r;
        struct h_client *x;

        memset(path, 0, sizeof path);
        for (size_t i = 0; strlen(path) + 40 < sizeof path; i++)
                snprintf(path + strlen(path), sizeof path - strlen(path), "%s/opt/tool-%zu/bin", i ? ":" : "", i);
        add_entry("\"gone\":{\"command\":\"no-such-program-xyz\",\"env\":{\"PATH\":\"%s\"}}", path);
        add_demo("demo", "", "");
        start_daemon();
        wait_state("gone", "failed");
        st = status_json();
        expect_contains(h_str(server_entry(st, "gone"), "cause"), sf("not found in PATH=%s %s", path, tail), "the cause");
        json_object_put(st);
        expect_exit(CTL("status", "gone"), 3);
        expect_contains(R.outbuf, tail, "the status table");

        wait_ready_logged("demo", 1);
        x = cl_open();
        r = h_client_tool_call(x, "1", "gone__echo", "{\"text\":\"x\"}");
        expect_contains(h_json_text(r), tail, "the call's error");
        json_object_put(r);
        h_client_close(x);
}

Test(ctl, status_json_has_the_facts_of_why_a_server_is_not_ready) {
        json_object *st, *s;

        start_troubled_servers();
        st = status_json();
        cr_expect_str_eq(h_str(st, "daemon.log.target"), "stderr");
        cr_expect_str_eq(h_str(st, "daemon.log.stderr"), D.log);

        s = server_entry(st, "bad");
        /* its stdout's end may be seen before its exit */
        cr_expect(strcmp(h_str(s, "why.kind"), "exit") == 0 || strcmp(h_str(s, "why.kind"), "connection") == 0, "%s",
                  h_json_text(s));
        cr_expect_eq(json_object_get_int(h_get(s, "why.exit.status")), 1, "%s", h_json_text(s));
        cr_expect_not(json_object_get_boolean(h_get(s, "why.exit.byDaemon")));
        expect_contains(h_str(s, "why.text"), "exit status 1", "why.text");
        cr_expect_str_eq(h_str(s, "lastStderr.line"), "exiting at start with 1");
        cr_expect_geq(number(s, "lastStderr.since"), 0);
        cr_expect(json_object_is_type(h_get(s, "restartIn"), json_type_null), "%s", h_json_text(s));
        cr_expect(json_object_get_boolean(h_get(s, "stderr")), "a process writes a stderr: %s", h_json_text(s));

        s = server_entry(st, "deaf");
        cr_expect_str_eq(h_str(s, "why.kind"), "startTimeout");
        cr_expect_eq(number(s, "why.timeout"), 0.3);
        cr_expect_str_eq(h_str(s, "why.exit.signal"), "SIGTERM");
        cr_expect(json_object_get_boolean(h_get(s, "why.exit.byDaemon")), "%s", h_json_text(s));
        cr_expect_str_eq(h_str(s, "why.exit.daemonSignal"), "SIGTERM");
        cr_expect_eq(number(s, "why.exit.stopTimeout"), 0.2);
        cr_expect_str_eq(h_str(s, "why.text"),
                         "startTimeout (0.3 s) passed before it was ready, then stopped with SIGTERM after stopTimeout (0.2 s)");
        expect_contains(h_str(s, "cause"), "; restarting in ", "cause");
        cr_expect(number(s, "restartIn") > 0 && number(s, "restartIn") <= 30, "%s", h_json_text(s));
        cr_expect_str_eq(h_str(s, "lastStderr.line"), "stdin closed; staying up until signalled");

        s = server_entry(st, "slow");
        cr_expect_str_eq(h_str(s, "state"), "starting");
        cr_expect(json_object_is_type(h_get(s, "why"), json_type_null), "%s", h_json_text(s));
        cr_expect_str_eq(h_str(s, "lastStderr.line"), "downloading \xc3\xa9");
        json_object_put(st);
}

/* ---- start, stop, restart ---- */

Test(ctl, restart_waits_for_a_new_ready_process) {
        pid_t before = start_demo(), after;
        json_object *st, *s;

        expect_exit(CTL("restart", "demo"), 0);
        cr_expect_str_eq(R.outbuf, "demo: ready (10 tools)\n");
        cr_expect_str_empty(R.errbuf);
        after = h_pidfile_wait(PIDFILE, before, H_TIMEOUT_MS);
        cr_assert_gt(after, 0, "no new process wrote its pid");
        cr_expect(h_pid_gone_wait(before, H_TIMEOUT_MS), "the old process %d is still there", (int)before);
        /* ready when mcpvisorctl returned: status says so at once, with the new pid */
        st = status_json();
        s = server_entry(st, "demo");
        cr_expect_str_eq(h_str(s, "state"), "ready");
        cr_expect_eq(json_object_get_int(h_get(s, "pid")), after);
        cr_expect_eq(json_object_get_int(h_get(s, "restarts")), 1);
        json_object_put(st);
}

Test(ctl, stop_then_start) {
        pid_t before = start_demo(), after;

        expect_exit(CTL("stop", "demo"), 0);
        cr_expect_str_eq(R.outbuf, "demo: stopped\n");
        cr_expect(h_pid_gone_wait(before, H_TIMEOUT_MS), "stopped, yet process %d is there", (int)before);
        expect_exit(CTL("status"), 3); /* demo is enabled and not ready */
        cr_expect_not_null(strstr(R.outbuf, "stopped"), "%s", R.outbuf);

        expect_exit(CTL("start", "demo"), 0);
        cr_expect_str_eq(R.outbuf, "demo: ready (10 tools)\n");
        after = h_pidfile_wait(PIDFILE, before, H_TIMEOUT_MS);
        cr_expect_gt(after, 0, "no new process after start");
        expect_exit(CTL("status"), 0);
}

Test(ctl, start_of_a_ready_server_says_ready) {
        pid_t pid = start_demo();

        expect_exit(CTL("start", "demo"), 0);
        cr_expect_str_eq(R.outbuf, "demo: ready (10 tools)\n");
        cr_expect_not(h_pid_gone(pid), "start of a ready server must not restart it");
}

Test(ctl, no_wait_returns_once_the_action_began) {
        start_demo();
        expect_exit(CTL("stop", "--no-wait", "demo"), 0);
        cr_expect_str_empty(R.outbuf);
        wait_state("demo", "stopped");
}

Test(ctl, unknown_server_is_the_daemons_error) {
        start_demo();
        expect_exit(CTL("restart", "nosuch"), 1);
        cr_expect_str_eq(R.errbuf, "mcpvisorctl: unknown server 'nosuch'; configured: demo\n");
        cr_expect_str_empty(R.outbuf);
}

Test(ctl, start_that_fails_says_why) {
        add_demo("bad", "\"restart\":\"never\"", "\"--exit-at-start\",\"3\"");
        start_daemon();
        wait_state("bad", "failed");
        expect_exit(CTL("start", "bad"), 1);
        cr_expect_str_empty(R.outbuf);
        cr_expect_eq(strncmp(R.errbuf, "bad: failed\n  why: ", 19), 0, "%s", R.errbuf);
        cr_expect(strstr(R.errbuf, "exit status 3") && strstr(R.errbuf, "exit status 3") < strstr(R.errbuf, "\n  stderr "),
                  "%s", R.errbuf);
        expect_contains(R.errbuf, "\n  stderr ", "stderr");
        expect_contains(R.errbuf, "s ago: exiting at start with 3\n", "stderr");
        expect_contains(R.errbuf, sf("\n  log: on mcpvisord's stderr (%s), not in the journal\n", D.log), "stderr");
}

Test(ctl, start_that_backs_off_is_a_failure) {
        add_demo("flaky", "\"restartDelay\":30", "\"--exit-at-start\",\"1\"");
        start_daemon();
        wait_state("flaky", "backoff");
        expect_exit(CTL("restart", "flaky"), 1);
        cr_expect_eq(strncmp(R.errbuf, "flaky: backoff\n  why: ", 22), 0, "%s", R.errbuf);
        /* "exit status 1 before it was ready", or "closed its stdout, then exit status 1" when
         * the end of its stdout was seen first */
        expect_contains(R.errbuf, "exit status 1", "stderr");
        expect_contains(R.errbuf, "; restarting in ", "stderr");
}

/* startTimeout passed, and the daemon's SIGTERM ended the process it had asked to exit:
 * start and restart say the first, not "killed by SIGTERM". */
Test(ctl, start_says_startTimeout_passed_not_the_daemons_sigterm) {
        static const char why[] = "deaf: backoff\n  why: startTimeout (0.3 s) passed before it was ready, then stopped "
                                  "with SIGTERM after stopTimeout (0.2 s); restarting in ";

        add_demo("deaf", "\"startTimeout\":0.3,\"stopTimeout\":0.2,\"restartDelay\":30",
                 "\"--never-answer\",\"--ignore-stdin-eof\"");
        start_daemon();
        wait_state("deaf", "backoff");
        expect_exit(CTL("start", "deaf"), 1);
        cr_expect_eq(strncmp(R.errbuf, why, strlen(why)), 0, "%s", R.errbuf);
        cr_expect_null(strstr(R.errbuf, "killed by"), "%s", R.errbuf);
        expect_exit(CTL("restart", "deaf"), 1);
        cr_expect_eq(strncmp(R.errbuf, why, strlen(why)), 0, "%s", R.errbuf);
        expect_contains(R.errbuf, " ago: stdin closed; staying up until signalled\n", "its last stderr line");
}

/* Under systemd (its stderr is the journal) the log hint is journalctl, by the server's name. */
/* ---- logs ---- */

/* What a failed npx start writes: 30 lines of noise, npm's error, then the pointer to its
 * own log file, which is the last line. */
#define NPX_FAILURE                                                                                             \
        "for i in $(seq 1 30); do echo noise $i >&2; done; echo 'npm error code E404' >&2; "                   \
        "echo 'npm error 404 Not Found - GET https://registry.npmjs.org/nope' >&2; "                            \
        "echo 'npm error A complete log of this run can be found in: /root/.npm/_logs/x.log' >&2; exit 1"

static unsigned occurrences(const char *text, const char *needle) {
        unsigned n = 0;

        for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static void start_npx_failure(void) {
        add_entry("\"npx\": {\"command\": \"/bin/sh\", \"args\": [\"-c\", \"" NPX_FAILURE "\"], \"restart\": \"never\"}");
        start_daemon();
        wait_state("npx", "failed");
}

/* The last line alone is npm's pointer to its log file: status NAME shows the server's last
 * lines (about 20) under its row, the error among them. */
Test(ctl, status_name_shows_the_last_lines) {
        const char *lines, *error;

        start_npx_failure();
        expect_exit(CTL("status", "npx"), 3);
        lines = strstr(R.outbuf, "\nnpx, the last lines of its stderr:\n");
        cr_assert_not_null(lines, "%s", R.outbuf);
        error = strstr(lines, " npm error code E404\n");
        cr_assert_not_null(error, "the error is not among the lines shown: %s", R.outbuf);
        cr_assert_not_null(strstr(error, " npm error A complete log of this run can be found in:"), "%s", R.outbuf);
        cr_assert_null(strstr(lines, "noise 13\n"), "more than 20 lines kept: %s", R.outbuf);
        cr_assert_not_null(strstr(lines, "noise 14\n"), "fewer than 20 lines kept: %s", R.outbuf);
        /* no names, no lines: the table alone */
        expect_exit(CTL("status"), 3);
        cr_assert_null(strstr(R.outbuf, "the last lines"), "%s", R.outbuf);
}

/* logs NAME: the last 20 lines, -n the last N; an unknown name is the daemon's error. */
Test(ctl, logs_shows_the_last_lines) {
        start_npx_failure();
        expect_exit(CTL("logs", "npx"), 0);
        cr_assert_eq(occurrences(R.outbuf, "\n"), 20, "%s", R.outbuf);
        expect_contains(R.outbuf, " noise 14\n", "logs");
        expect_contains(R.outbuf, " npm error 404 Not Found - GET https://registry.npmjs.org/nope\n", "logs");
        expect_exit(CTL("logs", "-n", "2", "npx"), 0);
        cr_assert_eq(occurrences(R.outbuf, "\n"), 2, "%s", R.outbuf);
        cr_assert(strstr(R.outbuf, " npm error 404") && strstr(R.outbuf, " npm error A complete log"), "%s", R.outbuf);
        expect_exit(CTL("logs", "nope"), 1);
        expect_contains(R.errbuf, "unknown server 'nope'; configured: npx", "logs nope");
        expect_exit(CTL("logs", "-n", "0", "npx"), 2);
}

/* logs -f NAME: what the server writes next appears as it comes. */
Test(ctl, logs_follow_shows_new_lines) {
        struct h_client *x;
        struct proc p = { 0 };
        json_object *r;
        char *line;
        bool seen = false;

        start_demo();
        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "logs", "-f", "demo", NULL }, NULL);
        x = cl_open();
        r = h_client_tool_call(x, "1", "demo__log", "{\"text\":\"written later\"}");
        json_object_put(r);
        while (!seen && (line = proc_line(&p, H_TIMEOUT_MS))) {
                seen = strstr(line, " written later") != NULL;
                free(line);
        }
        cr_assert(seen, "logs -f did not show the new line: %s; stderr: %s", p.outbuf, p.errbuf);
        kill(p.pid, SIGTERM);
        proc_wait(&p, CTL_TIMEOUT_MS);
        proc_free(&p);
        h_client_close(x);
}

Test(ctl, the_log_hint_is_journalctl_when_the_daemon_logs_to_the_journal) {
        json_object *st;

        /* a journal of our own that nobody reads: the records are refused, not queued until
         * the daemon blocks, and none lands in the host's journal */
        close(h_fake_journald());
        add_demo("bad", "\"restart\":\"never\"", "\"--exit-at-start\",\"3\"");
        start_logging_to_journal();
        h_close(h_connect(D.control, H_TIMEOUT_MS));
        wait_state("bad", "failed");
        st = status_json();
        cr_expect_str_eq(h_str(st, "daemon.log.target"), "journal");
        cr_expect_null(h_get(st, "daemon.log.stderr"), "%s", h_json_text(st));
        json_object_put(st);
        expect_exit(CTL("status"), 3);
        expect_contains(R.outbuf,
                        "\n  log: journalctl -t bad (its stderr), journalctl MCPVISOR_SERVER=bad (with mcpvisord's lines "
                        "about it)\n",
                        "status");
        expect_exit(CTL("start", "bad"), 1);
        expect_contains(R.errbuf, "\n  log: journalctl -t bad (its stderr)", "start");
        cr_expect_null(strstr(R.errbuf, "mcpvisord's stderr"), "%s", R.errbuf);
}

Test(ctl, wait_gives_up_at_the_timeout) {
        long long t0;

        add_demo("slow", "", "\"--slow-start\",\"4000\"");
        start_daemon();
        t0 = h_now_ms();
        /* starting already: start only waits */
        expect_exit(CTL("start", "--timeout", "0.5", "slow"), 1);
        cr_expect_lt(h_now_ms() - t0, 3000, "gave up late");
        expect_contains(R.errbuf, "mcpvisorctl: slow did not settle within 0.5 s: still starting", "stderr");
}

/* ---- reload ---- */

static void write_config(const char *text) {
        FILE *f = fopen(D.config, "we");

        cr_assert_not_null(f);
        fputs(text, f);
        fclose(f);
}

Test(ctl, reload_reports_what_changed) {
        char *config;

        start_demo();
        add_demo("extra", "", "");
        config = config_text();
        write_config(config);
        free(config);
        expect_exit(CTL("reload"), 0);
        cr_expect_str_eq(R.outbuf, "added: extra; removed: none; changed: none; unchanged: 1\n");
        cr_expect_str_empty(R.errbuf);
        wait_state("extra", "ready");
}

Test(ctl, reload_of_an_invalid_config_fails_and_changes_nothing) {
        pid_t pid = start_demo();

        write_config(sf("{\"mcpServers\":{\"demo\":{\"command\":\"%s\"},\"extra\":{\"command\":5}}}", h_demo_server_path()));
        expect_exit(CTL("reload"), 1);
        cr_expect_str_empty(R.outbuf);
        expect_contains(R.errbuf, "mcpvisorctl: configuration not reloaded: 1 error; nothing changed\n", "stderr");
        expect_contains(R.errbuf, "mcpServers.extra.command: expected a string\n", "stderr");
        expect_exit(CTL("status", "--json"), 0);
        cr_expect_null(strstr(R.outbuf, "extra"), "nothing changed: %s", R.outbuf);
        cr_expect_not(h_pid_gone(pid), "nothing changed, yet demo was restarted");
}

Test(ctl, status_shows_a_removed_server_while_it_stops) {
        char f[10][64];
        char *config;

        /* it ignores the end of its stdin: stopping takes its stopTimeout, then SIGTERM */
        add_demo("gone", "\"stopTimeout\":2", "\"--ignore-stdin-eof\"");
        start_daemon();
        wait_ready_logged("gone", 1);
        servers_reset(&D);
        add_demo("demo", "", "");
        config = config_text();
        write_config(config);
        free(config);
        expect_exit(CTL("reload"), 0);
        cr_expect_str_eq(R.outbuf, "added: demo; removed: gone; changed: none; unchanged: 0\n");
        wait_ready_logged("demo", 1);
        expect_exit(CTL("status"), 0); /* a removed server is not meant to be ready */
        if (row_fields(R.outbuf, "gone", f, 10) == 0)
                return; /* already stopped and gone: nothing more to see */
        cr_expect_str_eq(f[1], "stopping");
        cr_expect_str_eq(f[2], "(removed)");
}

/* ---- connect (more in test_bridge.c) ---- */

Test(ctl, connect_to_a_missing_socket_says_what_to_do) {
        char path[128];

        snprintf(path, sizeof path, "%s/nothing.sock", T);
        expect_exit(ctl_run((const char *const[]){ "-s", path, "connect", NULL }), 1);
        cr_expect_str_empty(R.outbuf);
        cr_expect_str_eq(R.errbuf, sf("mcpvisorctl: cannot connect to %s: No such file or directory; is mcpvisor "
                                      "running? (systemctl start mcpvisor.socket, or systemctl --user start "
                                      "mcpvisor.socket)\n",
                                      path));
}

/* ---- errors, options and the environment ---- */

Test(ctl, missing_control_socket_says_what_to_do) {
        char path[128];

        snprintf(path, sizeof path, "%s/control.sock", T);
        expect_exit(ctl_run((const char *const[]){ "-C", path, "status", NULL }), 1);
        cr_expect_str_empty(R.outbuf);
        expect_contains(R.errbuf, sf("mcpvisorctl: cannot connect to %s: No such file or directory; is mcpvisor running?", path),
                        "stderr");
}

Test(ctl, a_silent_socket_times_out_naming_it) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        long long t0;
        int fd;

        /* listening, never accepting: connect() succeeds, no answer ever comes */
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s/silent.sock", T);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 8) == 0);
        t0 = h_now_ms();
        expect_exit(ctl_run((const char *const[]){ "-C", sa.sun_path, "--timeout", "0.3", "status", NULL }), 1);
        cr_expect_lt(h_now_ms() - t0, 3000, "gave up late");
        cr_expect_str_eq(R.errbuf,
                         sf("mcpvisorctl: the control socket %s did not answer 'status' within 0.3 s\n", sa.sun_path));
        close(fd);
}

Test(ctl, environment_names_the_sockets_and_options_win) {
        const char *env_ok[] = { NULL, NULL };
        char bogus[128];

        start_demo();
        env_ok[0] = sf("MCPVISOR_CONTROL_SOCKET=%s", D.control);
        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "status", NULL }, env_ok), 0);

        snprintf(bogus, sizeof bogus, "MCPVISOR_CONTROL_SOCKET=%s/none.sock", T);
        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "-C", D.control, "status", NULL }, (const char *const[]){ bogus, NULL }), 0);

        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "connect", NULL }, (const char *const[]){ sf("MCPVISOR_SOCKET=%s", D.sock), NULL }), 0);
        cr_expect_str_empty(R.errbuf, "connect with stdin empty: %s", R.errbuf);
}

/* A daemon given --socket alone puts its control socket beside it, not in the default place
 * (root's /run/mcpvisor/, where the service's or another foreground daemon's is), and
 * mcpvisorctl given -s (or $MCPVISOR_SOCKET) alone finds it there. */
Test(ctl, control_socket_beside_the_given_mcp_socket) {
        struct stat st;

        add_demo("demo", "", "");
        start_with(&(struct h_opts){ .control_beside = true });
        h_close(h_connect(D.control, H_TIMEOUT_MS));
        cr_assert_eq(stat(D.control, &st), 0);
        cr_assert(S_ISSOCK(st.st_mode));
        cr_assert(h_log_wait(&D, sf("listening for control clients on %s", D.control), H_TIMEOUT_MS));
        wait_ready_logged("demo", 1);

        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "-s", D.sock, "status", NULL }, NULL), 0);
        expect_contains(R.outbuf, "demo", "status");
        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "status", NULL },
                            (const char *const[]){ sf("MCPVISOR_SOCKET=%s", D.sock), NULL }),
                    0);
        /* -C still wins */
        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "-s", D.sock, "-C", sf("%s/none.sock", T), "status", NULL }, NULL), 1);
        expect_contains(R.errbuf, sf("cannot connect to %s/none.sock", T), "stderr");
}

Test(ctl, user_picks_the_user_managers_socket) {
        const char *env[] = { sf("XDG_RUNTIME_DIR=%s", T), NULL };

        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "--user", "status", NULL }, env), 1);
        expect_contains(R.errbuf, sf("cannot connect to %s/mcpvisor/control.sock: No such file", T), "stderr");
        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "--user", "status", NULL }, NULL), 1);
        expect_contains(R.errbuf, "XDG_RUNTIME_DIR is not set", "stderr");
        if (access("/run/mcpvisor/control.sock", F_OK) == 0)
                return; /* a real system service is running here: --system would reach it */
        proc_free(&R);
        expect_exit(run_env(&R, (const char *const[]){ "--system", "status", NULL }, env), 1);
        expect_contains(R.errbuf, "cannot connect to /run/mcpvisor/control.sock", "stderr");
}

Test(ctl, usage_errors_exit_2) {
        expect_exit(ctl_run((const char *const[]){ NULL }), 2);
        expect_contains(R.errbuf, "no command", "stderr");
        expect_exit(ctl_run((const char *const[]){ "frobnicate", NULL }), 2);
        expect_contains(R.errbuf, "unknown command 'frobnicate'", "stderr");
        expect_exit(ctl_run((const char *const[]){ "restart", NULL }), 2);
        expect_exit(ctl_run((const char *const[]){ "restart", "a", "b", NULL }), 2);
        expect_exit(ctl_run((const char *const[]){ "--json", "restart", "a", NULL }), 2);
        expect_contains(R.errbuf, "--json does not apply to restart", "stderr");
        expect_exit(ctl_run((const char *const[]){ "--timeout", "soon", "status", NULL }), 2);
        expect_exit(ctl_run((const char *const[]){ "--bogus", "status", NULL }), 2);
        cr_expect_str_empty(R.outbuf);
}

Test(ctl, help_and_version) {
        expect_exit(ctl_run((const char *const[]){ "--version", NULL }), 0);
        cr_expect_str_eq(R.outbuf, "mcpvisorctl 0.1.0\n");
        expect_exit(ctl_run((const char *const[]){ "-h", NULL }), 0);
        expect_contains(R.outbuf, "Usage: mcpvisorctl", "--help");
        expect_contains(R.outbuf, "connect", "--help");
}

/* ---- access: root only (another uid through setpriv) ---- */

/* mcpvisorctl ARGS as uid/gid 65534 (nobody). */
static int run_as_nobody(const char *const *args) {
        const char *argv[24] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", MCPVISORCTL_PATH };
        const char *envp[] = { "PATH=/usr/bin:/bin", NULL };
        posix_spawn_file_actions_t fa;
        int n = 5, out[2], err[2], r;
        pid_t pid;
        struct proc *p = &R;

        for (; *args; args++) {
                cr_assert_lt(n, 23);
                argv[n++] = *args;
        }
        proc_free(&R);
        cr_assert(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_adddup2(&fa, err[1], 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        r = posix_spawnp(&pid, "setpriv", &fa, NULL, (char **)argv, (char **)envp);
        posix_spawn_file_actions_destroy(&fa);
        cr_assert_eq(r, 0, "setpriv: %s", strerror(r));
        close(out[1]);
        close(err[1]);
        proc_adopt(p, &D, pid, -1, out[0], err[0]);
        return proc_wait(p, CTL_TIMEOUT_MS);
}

static void skip_unless_root(void) {
        if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
                cr_skip_test("needs root and setpriv to run mcpvisorctl as another user");
}

Test(ctl, a_socket_we_may_not_open_says_who_may) {
        skip_unless_root();
        start_demo();
        cr_assert_eq(chmod(D.dir, 0711), 0); /* the socket's own mode (0660) is the gate */
        expect_exit(run_as_nobody((const char *const[]){ "-C", D.control, "status", NULL }), 1);
        cr_expect_str_eq(R.errbuf,
                         sf("mcpvisorctl: permission denied on %s: the control socket is for root, the daemon's user "
                            "and its controlGroup (see mcpvisor.json(5))\n",
                            D.control));
}

Test(ctl, the_daemon_refusing_a_peer_is_an_error) {
        skip_unless_root();
        set_settings("\"socketMode\":\"0666\"");
        start_demo();
        cr_assert_eq(chmod(D.dir, 0711), 0);
        expect_exit(run_as_nobody((const char *const[]){ "-C", D.control, "status", NULL }), 1);
        expect_contains(R.errbuf, "mcpvisorctl: permission denied: the control socket is for root", "stderr");
        cr_expect_str_empty(R.outbuf);
}

/* ---- mcpvisorctl access: what a user would see, and the rule that decides ---- */

/* The fields of the access table's row for kind and name, split at runs of spaces. */
static unsigned access_row(const char *kind, const char *name, char fields[][64], unsigned max) {
        char *copy = strdup(R.outbuf), *save = NULL;
        unsigned n = 0;

        for (char *line = strtok_r(copy, "\n", &save); line && n == 0; line = strtok_r(NULL, "\n", &save)) {
                char *fsave = NULL, *f = strtok_r(line, " ", &fsave), *g = strtok_r(NULL, " ", &fsave);

                if (!f || !g || strcmp(f, kind) != 0 || strcmp(g, name) != 0)
                        continue;
                snprintf(fields[n++], 64, "%s", f);
                for (; g && n < max; g = strtok_r(NULL, " ", &fsave))
                        snprintf(fields[n++], 64, "%s", g);
        }
        free(copy);
        return n;
}

/* kind name server verdict rule ("not found" is two words: verdict "not", rule "found"). */
static void expect_access(const char *kind, const char *name, const char *verdict, const char *rule) {
        char f[8][64];
        unsigned n = access_row(kind, name, f, 8);
        bool not_found = strcmp(verdict, "not found") == 0;

        cr_assert_geq(n, not_found ? 6u : 5u, "no row for %s %s: %s", kind, name, R.outbuf);
        cr_expect_str_eq(not_found ? "not found" : f[3], verdict, "%s %s: %s", kind, name, R.outbuf);
        if (not_found)
                cr_expect_str_eq(sf("%s %s", f[3], f[4]), "not found", "%s %s: %s", kind, name, R.outbuf);
        cr_expect_str_eq(f[not_found ? 5 : 4], rule, "%s %s: rule; %s", kind, name, R.outbuf);
}

/* Server a, filtered to echo, env and add; rules for nobody and root, and a profile. */
static void start_with_rules(void) {
        set_settings("\"access\":{\"rules\":["
                     "{\"users\":[\"nobody\"],\"tools\":[\"a__add\"],\"action\":\"allow\"},"
                     "{\"users\":[\"nobody\"],\"servers\":[\"a\"],\"action\":\"deny\"},"
                     "{\"users\":[\"root\"],\"tools\":[\"a__env\"],\"action\":\"deny\"}]},"
                     "\"profiles\":{\"small\":{\"tools\":[\"a__add\"]}}");
        add_demo("a", "\"includeTools\":[\"e*\",\"add\"]", "");
        start_daemon();
        wait_ready_logged("a", 1);
}

Test(ctl, access_shows_each_verdict_and_the_rule_that_decided) {
        start_with_rules();
        expect_exit(CTL("access", "--user", "root"), 0);
        expect_contains(R.outbuf, "user root (uid 0, gid 0, groups 0", "the first line");
        expect_contains(R.outbuf, "profile none; 3 rules, default allow", "the first line");
        expect_access("server", "a", "allow", "default");
        expect_access("tool", "a__echo", "allow", "default");
        expect_access("tool", "a__env", "deny", "3");
        expect_access("prompt", "a__greeting", "allow", "default");
        cr_expect_null(strstr(R.outbuf, "a__sleep"), "a filtered tool is listed: %s", R.outbuf);

        /* nobody, by name and by uid: a is denied, but visible through the tool it may call */
        for (const char *const *who = (const char *const[]){ "nobody", "65534", NULL }; *who; who++) {
                expect_exit(CTL("access", "--user", *who), 0);
                expect_access("server", "a", "allow", "1");
                expect_contains(R.outbuf, "denied as a whole; visible because a__add is allowed", "the server's note");
                expect_access("tool", "a__add", "allow", "1");
                expect_access("tool", "a__echo", "deny", "2");
                expect_access("resource", "demo://readme", "deny", "2");
        }

        /* a profile narrows: what is outside it is not found */
        expect_exit(CTL("access", "--user", "root", "--profile", "small"), 0);
        expect_contains(R.outbuf, "profile small;", "the first line");
        expect_access("tool", "a__echo", "not found", "profile");
        expect_access("tool", "a__add", "allow", "default");
}

Test(ctl, access_json_has_the_rule_numbers) {
        json_object *o, *tools;

        start_with_rules();
        expect_exit(CTL("access", "--user", "nobody", "--json"), 0);
        o = json_tokener_parse(R.outbuf);
        cr_assert_not_null(o, "not JSON: %s", R.outbuf);
        cr_expect_eq(json_object_get_int(h_get(o, "uid")), 65534);
        cr_expect(json_object_is_type(h_get(o, "profile"), json_type_null));
        tools = h_get(o, "tools");
        cr_assert_eq(json_object_array_length(tools), 3, "%s", h_json_text(tools));
        for (size_t i = 0; i < 3; i++) {
                json_object *t = json_object_array_get_idx(tools, i);
                bool add = strcmp(h_str(t, "name"), "a__add") == 0;

                cr_expect_str_eq(h_str(t, "server"), "a");
                cr_expect_str_eq(h_str(t, "verdict"), add ? "allow" : "deny", "%s", h_json_text(t));
                cr_expect_eq(json_object_get_int(h_get(t, "rule")), add ? 1 : 2, "%s", h_json_text(t));
        }
        cr_expect_str_eq(h_str(json_object_array_get_idx(h_get(o, "servers"), 0), "throughItem"), "a__add");
        json_object_put(o);
}

Test(ctl, access_errors) {
        start_with_rules();
        expect_exit(CTL("access", "--user", "no-such-user-here"), 1);
        expect_contains(R.errbuf, "mcpvisorctl: unknown user 'no-such-user-here': no such user on this host", "stderr");
        expect_exit(CTL("access", "--user", "root", "--profile", "huge"), 1);
        expect_contains(R.errbuf, "mcpvisorctl: unknown profile 'huge'; the profiles are: small", "stderr");
        cr_expect_str_empty(R.outbuf);
        expect_exit(CTL("access"), 2);
        expect_contains(R.errbuf, "access needs --user NAME", "stderr");
        expect_exit(CTL("access", "--user", "root", "extra"), 2);
        expect_exit(CTL("status", "--profile", "small"), 2);
        expect_contains(R.errbuf, "--profile does not apply to status", "stderr");
}
