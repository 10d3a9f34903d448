/* Supervision of downstream servers, run for real with the demo server misbehaving on
 * command: start and handshake, the starting environment and process hygiene, spawn errors,
 * restarts and their throttle, health checks, the close sequence, processes left behind,
 * zombies, and stderr forwarding.
 *
 * What is observed: the daemon's log (D.log), its STATUS= datagrams, and /proc for the
 * server processes, whose pids the demo server writes to pidfiles in T, this test's own
 * directory (the config is written before the harness's D.dir exists). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;
static struct h_daemon OLD;              /* a daemon before D, on the same or other paths */
static char T[64];                       /* this test's own directory */
static char PIDFILE[128], GPIDFILE[128]; /* --pidfile, --grandchild-pidfile */
static char GGPIDFILE[140];              /* --grandchild-tree's great-grandchild's */

/* SigIgn bits of signals 32 and 33 (bit n-1 is signal n). */
#define GLIBC_INTERNAL_SIGNALS (3ull << 31)

/* Both misbehaviours a close sequence has to get past. */
#define STUBBORN "\"--ignore-stdin-eof\",\"--ignore-sigterm\""

static void setup(void) {
        strcpy(T, "/tmp/mcpvisor-sv-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        snprintf(PIDFILE, sizeof PIDFILE, "%s/server.pid", T);
        snprintf(GPIDFILE, sizeof GPIDFILE, "%s/grandchild.pid", T);
        snprintf(GGPIDFILE, sizeof GGPIDFILE, "%s.child", GPIDFILE);
        servers_reset(&D);
}

static void kill_tagged(const char *pidfile);
static void kill_lingering(const char *pidfile);

static void teardown(void) {
        servers_teardown();
        if (OLD.dir[0]) {
                h_stop(&OLD, SIGKILL, H_TIMEOUT_MS);
                h_cleanup(&OLD);
        }
        kill_tagged(PIDFILE);
        kill_tagged(GPIDFILE);
        kill_lingering(GPIDFILE);
        kill_lingering(GGPIDFILE);
        h_remove_tree(T);
}

TestSuite(supervise, .init = setup, .fini = teardown, .timeout = 30);

/* ---- helpers: files ---- */

static void write_file(const char *path, const char *text, mode_t mode) {
        FILE *f = fopen(path, "we");

        cr_assert_not_null(f, "cannot write %s", path);
        fputs(text, f);
        fclose(f);
        cr_assert_eq(chmod(path, mode), 0);
}

/* ---- helpers: expectations on the log, STATUS= and processes ---- */

/* Every wait here drains the daemon's NOTIFY datagrams: once their queue is full, its
 * sd_notify() blocks and the daemon stands still (see h_notify_drain). */
static void pause_draining(int ms) {
        h_notify_drain(&D);
        poll(NULL, 0, ms); /* the log, pidfiles and /proc have no readiness to wait on */
}

static void expect_log(const char *needle) {
        cr_assert(h_log_count_wait(&D, needle, 1, H_TIMEOUT_MS), "not in the log: %s", needle);
}

static void expect_no_log(const char *needle) {
        cr_assert_not(h_log_wait(&D, needle, 0), "in the log, but should not be: %s", needle);
}

static void expect_notify(const char *needle) {
        cr_assert(h_notify_wait(&D, needle, H_TIMEOUT_MS), "no datagram with \"%s\"; got %s", needle, D.notices);
}

/* Copies the first log line that contains every needle into out (which a failed assertion
 * may leave behind: no allocation); false if no line does. */
static bool find_line(const char *const *needles, size_t n, char *out, size_t size) {
        char *text = h_log_text(&D), *save = NULL;
        bool found = false;

        for (char *line = strtok_r(text, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
                size_t i = 0;
                while (i < n && strstr(line, needles[i]))
                        i++;
                if (i == n) {
                        snprintf(out, size, "%s", line);
                        found = true;
                }
        }
        free(text);
        return found;
}

/* Waits until one log line contains all the needles (a NULL-terminated list): a state
 * change and its cause, say, which other lines also mention. */
static void expect_line(const char *first, ...) __attribute__((sentinel));
static void expect_line(const char *first, ...) {
        const char *needles[8] = { first };
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        size_t n = 1;
        char line[8192];
        va_list ap;

        va_start(ap, first);
        while (n < 8 && (needles[n] = va_arg(ap, const char *)))
                n++;
        va_end(ap);
        while (!find_line(needles, n, line, sizeof line)) {
                cr_assert_lt(h_now_ms(), deadline, "no log line has all of \"%s\" \"%s\" \"%s\"", needles[0],
                             n > 1 ? needles[1] : "", n > 2 ? needles[2] : "");
                pause_draining(20);
        }
}

/* Waits until path holds a pid other than not_this (0: any) and returns it. */
static pid_t pidfile_wait(const char *path, pid_t not_this) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        pid_t pid;

        while ((pid = h_pidfile_wait(path, not_this, 0)) == 0) {
                cr_assert_lt(h_now_ms(), deadline, "no%s pid in %s", not_this ? " new" : "", path);
                pause_draining(10);
        }
        return pid;
}

/* Waits for the server to be ready, then returns its pid from PIDFILE. */
static pid_t ready_pid(const char *name) {
        expect_log(sf("[%s] starting -> ready", name));
        return pidfile_wait(PIDFILE, 0);
}

static bool exited_cleanly(int status) {
        return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void stop_daemon(void) {
        cr_assert(exited_cleanly(h_stop_draining(&D, SIGTERM, H_TIMEOUT_MS)), "SIGTERM did not end in exit 0");
}

static void expect_gone(pid_t pid, const char *what) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        while (!h_pid_gone(pid)) {
                cr_assert_lt(h_now_ms(), deadline, "%s (pid %d) is still running", what, (int)pid);
                pause_draining(10);
        }
}

static void ping_daemon(void) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_expect_result(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        h_close(c);
}

/* ---- start ---- */

Test(supervise, ready) {
        add_demo("demo", "", "");
        start(NULL);
        expect_log("[demo] starting -> ready: 10 tools, 1 prompts, 1 resources, 1 templates");
        expect_notify("STATUS=1/1 servers ready; 0 clients connected");
}

Test(supervise, disabled) {
        add_demo("sleeper", "\"disabled\":true", "");
        add_demo("awake", "", "");
        start(NULL);
        /* a disabled server counts neither as ready nor as not ready */
        expect_notify("STATUS=1/1 servers ready; 0 clients connected");
        expect_no_log("[sleeper] started");
        cr_assert_null(strstr(D.notices, "sleeper"), "STATUS mentions the disabled server: %s", D.notices);
}

/* Servers are started one a loop turn (issue 14), the daemon answering in between: an
 * operator's stop of a server still waiting for its turn stands, as one of a starting
 * server does, and the others start. */
#define MANY 30

Test(supervise, started_a_turn_at_a_time) {
        json_object *r, *row;

        for (int i = 0; i < MANY; i++)
                add_demo(sf("s%02d", i), "", "");
        start(NULL);
        r = h_control(&D, "stop", sf("{\"name\":\"s%02d\"}", MANY - 1));
        cr_assert_str_eq(h_str(r, "result.name"), sf("s%02d", MANY - 1));
        json_object_put(r);
        expect_notify(sf("STATUS=%d/%d servers ready; s%02d stopped", MANY - 1, MANY, MANY - 1));
        r = h_control(&D, "status", NULL);
        row = json_object_array_get_idx(h_get(r, "result.servers"), MANY - 1);
        cr_assert_str_eq(h_str(row, "name"), sf("s%02d", MANY - 1));
        cr_assert_str_eq(h_str(row, "state"), "stopped");
        cr_assert(strstr(h_str(row, "cause"), "stopped by uid"), "cause: %s", h_str(row, "cause"));
        json_object_put(r);
        stop_daemon();
}

/* ---- the starting environment and process hygiene ---- */

static void expect_env(const char *env, size_t len, const char *text, bool exact, bool present) {
        cr_assert_eq(h_environ_has(env, len, text, exact), present, "the server's environment %s %s",
                     present ? "lacks" : "has", text);
}

Test(supervise, clean_environment) {
        /* Things a daemon under systemd has that are not the server's business: its
         * NOTIFY_SOCKET (the harness sets one), the journal stream, unrelated variables. */
        static const char *const env[] = { "SECRET_DAEMON_VAR=x", "LANG=C.UTF-8", "TZ=UTC", "JOURNAL_STREAM=1:2",
                                           NULL };
        static char environ_buf[65536];
        size_t len;

        add_demo("envy", "\"env\":{\"FOO\":\"bar\"}", sf("\"--pidfile\",\"%s\"", PIDFILE));
        start(env);
        len = h_read_environ(ready_pid("envy"), environ_buf, sizeof environ_buf);
        cr_assert_gt(len, 0);
        expect_env(environ_buf, len, "FOO=bar", true, true);
        expect_env(environ_buf, len, "PATH=", false, true);
        expect_env(environ_buf, len, "LANG=C.UTF-8", true, true);
        expect_env(environ_buf, len, "TZ=UTC", true, true);
        expect_env(environ_buf, len, "MCPVISOR_SERVER=envy", true, true);
        expect_env(environ_buf, len, "MCPVISOR_INSTANCE=", false, true);
        expect_env(environ_buf, len, "NOTIFY_SOCKET=", false, false);
        expect_env(environ_buf, len, "JOURNAL_STREAM=", false, false);
        expect_env(environ_buf, len, "SECRET_DAEMON_VAR=", false, false);
        expect_env(environ_buf, len, "LISTEN_", false, false);
        expect_env(environ_buf, len, "WATCHDOG_", false, false);
}

/* Socket-activated, the servers carry the daemon's mark too (the activated socket's path):
 * the next daemon finds a dead one's units by it, which outlive the daemon's cgroup. */
Test(supervise, daemon_mark_when_socket_activated) {
        static char environ_buf[65536];
        char *config;
        size_t len;
        struct h_conn *c;

        add_demo("envy", "", sf("\"--pidfile\",\"%s\"", PIDFILE));
        config = config_text();
        h_start(&D, &(struct h_opts){ .config = config, .activate = true });
        free(config);
        c = h_connect(D.sock, H_TIMEOUT_MS); /* systemd-socket-activate starts it on the first connection */
        len = h_read_environ(ready_pid("envy"), environ_buf, sizeof environ_buf);
        cr_assert_gt(len, 0);
        expect_env(environ_buf, len, sf("MCPVISOR_DAEMON=%s", D.sock), true, true);
        h_close(c);
        stop_daemon();
}

/* The names in /proc/PID/fd, as "0,1,2". */
static void list_fds(pid_t pid, char *out, size_t size) {
        DIR *dir = opendir(sf("/proc/%d/fd", (int)pid));
        struct dirent *de;
        int fds[64], n = 0;
        size_t used = 0;

        cr_assert_not_null(dir);
        while ((de = readdir(dir)) && n < 64)
                if (de->d_name[0] != '.')
                        fds[n++] = atoi(de->d_name);
        closedir(dir);
        /* readdir order is the kernel's: sort for a stable text */
        for (int i = 1; i < n; i++)
                for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
                        int t = fds[j];
                        fds[j] = fds[j - 1];
                        fds[j - 1] = t;
                }
        out[0] = '\0';
        for (int i = 0; i < n; i++)
                used += (size_t)snprintf(out + used, size - used, "%s%d", i ? "," : "", fds[i]);
}

/* A hex mask line of /proc/PID/status ("SigBlk:"). */
static unsigned long long status_mask(pid_t pid, const char *key) {
        FILE *f = fopen(sf("/proc/%d/status", (int)pid), "re");
        char line[256];
        unsigned long long mask = ~0ull;

        cr_assert_not_null(f);
        while (fgets(line, sizeof line, f))
                if (strncmp(line, key, strlen(key)) == 0)
                        mask = strtoull(line + strlen(key), NULL, 16);
        fclose(f);
        return mask;
}

Test(supervise, process_hygiene) {
        char fds[256], cwd[PATH_MAX], want[PATH_MAX], state;
        pid_t pid, ppid, pgid;
        ssize_t n;

        add_demo("tidy", sf("\"cwd\":\"%s\"", T), sf("\"--pidfile\",\"%s\"", PIDFILE));
        start(NULL);
        pid = ready_pid("tidy");

        list_fds(pid, fds, sizeof fds);
        cr_assert_str_eq(fds, "0,1,2", "the server inherited descriptors: %s", fds);
        /* the daemon ignores SIGPIPE, and here also SIGINT and SIGQUIT, which Criterion's
         * worker ignores: none of it may reach the server */
        cr_assert_eq(status_mask(pid, "SigBlk:"), 0, "blocked signals leaked into the server");
        /* glibc's posix_spawn (2.36 at least) leaves its internal signals 32 and 33 ignored in
         * every child, whatever the attributes say; no program can use those two anyway */
        cr_assert_eq(status_mask(pid, "SigIgn:") & ~GLIBC_INTERNAL_SIGNALS, 0,
                     "ignored signals leaked into the server");
        cr_assert(h_proc_stat(pid, &state, &ppid, &pgid));
        cr_assert_eq(pgid, pid, "not in a process group of its own (pgid %d)", (int)pgid);
        cr_assert_eq(ppid, D.pid, "its parent is %d, not the daemon", (int)ppid);
        n = readlink(sf("/proc/%d/cwd", (int)pid), cwd, sizeof cwd - 1);
        cr_assert_gt(n, 0);
        cwd[n] = '\0';
        cr_assert_not_null(realpath(T, want));
        cr_assert_str_eq(cwd, want, "cwd not honoured");
}

Test(supervise, credential) {
        static char environ_buf[65536];
        char creds[128];

        snprintf(creds, sizeof creds, "%s/creds", T);
        cr_assert_eq(mkdir(creds, 0700), 0);
        write_file(sf("%s/tok", creds), "s3cret\n", 0400); /* as echo writes it: the newline is no part of it */
        const char *const env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };

        add_demo("keyed", "\"env\":{\"TOKEN\":{\"credential\":\"tok\"}}", sf("\"--pidfile\",\"%s\"", PIDFILE));
        start(env);
        size_t len = h_read_environ(ready_pid("keyed"), environ_buf, sizeof environ_buf);
        expect_env(environ_buf, len, "TOKEN=s3cret", true, true);
        expect_no_log("s3cret");
}

Test(supervise, credential_missing) {
        char creds[128];

        snprintf(creds, sizeof creds, "%s/creds", T);
        cr_assert_eq(mkdir(creds, 0700), 0); /* empty: no "tok" in it */
        const char *const env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };

        add_demo("needy", "\"env\":{\"TOKEN\":{\"credential\":\"tok\"}}", "");
        add_demo("good", "", "");
        start(env);
        expect_line("[needy] stopped -> failed: cannot start", "'tok'", NULL);
        expect_notify("STATUS=1/2 servers ready; needy failed");
}

/* ---- spawn errors ---- */

Test(supervise, missing_command) {
        add_entry("\"missing\":{\"command\":\"no-such-program-xyz\"}");
        add_demo("good", "", "");
        start(NULL);
        expect_line("[missing] stopped -> failed: cannot start: command 'no-such-program-xyz' not found in PATH", NULL);
        expect_notify("STATUS=1/2 servers ready; missing failed");
}

Test(supervise, not_executable) {
        char path[128];

        snprintf(path, sizeof path, "%s/not-executable", T);
        write_file(path, "#!/bin/sh\nexit 0\n", 0644);

        add_entry("\"noexec\":{\"command\":\"%s\"}", path);
        add_demo("good", "", "");
        start(NULL);
        expect_line("[noexec] stopped -> failed: cannot start: permission denied", NULL);
        expect_notify("STATUS=1/2 servers ready; noexec failed");
        ping_daemon();
}

/* Launcher "systemd" without a service manager: the launcher's daemon-wide part keeps why
 * it could not connect, and each start of its server says so; the others run. */
Test(supervise, systemd_launcher_without_a_manager_says_why) {
        add_demo("unit", "\"launcher\":\"systemd\"", "");
        add_demo("good", "", "");
        start(NULL);
        expect_line("servers with launcher \"systemd\" cannot start: ", NULL);
        expect_line("[unit] stopped -> backoff: cannot start: launcher \"systemd\" needs the service manager, and "
                    "mcpvisord has no connection to it (",
                    NULL);
        ping_daemon();
}

/* Launcher "auto" without a service manager is exec, which cannot confine: a server with
 * a confinement key fails to start, saying so, and is never run unconfined. */
Test(supervise, confinement_without_systemd_fails_to_start) {
        add_demo("boxed", "\"sandbox\":\"strict\",\"memoryMax\":\"64M\"", "");
        add_demo("good", "", "");
        start(NULL);
        expect_line("[boxed] stopped -> failed: cannot start: sandbox needs the systemd launcher, but this server is run "
                    "by the exec launcher",
                    NULL);
        expect_notify("STATUS=1/2 servers ready; boxed failed");
        ping_daemon();
}

/* ---- exits, restarts and the throttle ---- */

Test(supervise, crash_restarts_and_reinitializes) {
        pid_t first, second;

        /* initialize and the four lists are 5 requests; the first health ping is the 6th */
        add_demo("crashy", "\"healthInterval\":0.2,\"restartDelay\":0.1,\"restartDelayMax\":0.1",
                 sf("\"--exit-after\",\"6\",\"--pidfile\",\"%s\"", PIDFILE));
        start(NULL);
        first = ready_pid("crashy");
        expect_line("[crashy] ", "-> backoff: ", "exit status 1; restarting in 0.1 s", NULL);
        /* the restart did the whole handshake again: the catalogue is reported again */
        cr_assert(h_log_count_wait(&D, "[crashy] starting -> ready: 10 tools, 1 prompts", 2, H_TIMEOUT_MS),
                  "no second handshake");
        second = pidfile_wait(PIDFILE, first);
        cr_assert_neq(second, first);
        expect_gone(first, "the crashed instance");
}

Test(supervise, start_limit) {
        add_demo("limit", "\"restartDelay\":0.05,\"startLimitBurst\":3,\"startLimitInterval\":60",
                 "\"--exit-at-start\",\"3\"");
        start(NULL);
        expect_line("[limit] ", "-> failed: ", "exit status 3", "started 3 times within 60 s, giving up", NULL);
        expect_notify("limit failed");
        cr_assert_eq(h_log_count(&D, "[limit] started "), 3, "not exactly 3 spawns");
}

Test(supervise, restart_never) {
        add_demo("never", "\"restart\":\"never\",\"healthInterval\":0.2,\"restartDelay\":0.05",
                 "\"--exit-after\",\"6\"");
        start(NULL);
        expect_line("[never] ", "-> failed: ", "exit status 1", NULL);
        expect_notify("never failed");
        /* a restart would come after restartDelay, 0.05 s: ten times that is plenty */
        cr_assert_not(h_log_count_wait(&D, "[never] started ", 2, 500), "restarted despite restart=never");
}

Test(supervise, clean_exit_is_not_restarted) {
        static const char *const backoff[] = { "[clean] ", "-> backoff: " };
        char line[8192];

        /* on-failure, the default: an exit with status 0 is no failure */
        add_demo("clean", "\"healthInterval\":0.2,\"restartDelay\":0.05",
                 "\"--exit-after\",\"6\",\"--exit-code\",\"0\"");
        start(NULL);
        expect_line("[clean] ", "exit status 0", NULL); /* the first run's end */
        cr_assert_not(find_line(backoff, 2, line, sizeof line), "exit status 0 was taken for a failure: %s", line);
        expect_line("[clean] ", "-> stopped: ", "exit status 0", NULL);
        cr_assert_not(h_log_count_wait(&D, "[clean] started ", 2, 500), "restarted after exit status 0");
        expect_notify("clean stopped");
}

Test(supervise, exit_during_init) {
        add_demo("init4", "\"restartDelay\":0.2", "\"--exit-during-init\",\"4\"");
        start(NULL);
        /* "exit status 4 before it was ready", or "closed its stdout, then exit status 4" when
         * the end of its stdout was seen first */
        expect_line("[init4] ", "-> backoff: ", "exit status 4", "; restarting in", NULL);
        expect_notify("init4 backoff (exit status 4)");
}

Test(supervise, start_timeout) {
        add_demo("mute", "\"startTimeout\":0.3,\"restartDelay\":0.2", "\"--never-answer\"");
        start(NULL);
        expect_line("[mute] starting -> stopping: startTimeout (0.3 s) passed before it was ready", NULL);
        /* closing its stdin is enough: it exits on EOF */
        expect_line("[mute] stopping -> backoff: startTimeout (0.3 s) passed before it was ready, then exit status",
                    "restarting in", NULL);
        expect_no_log("sending SIGTERM");
}

/* The daemon's own SIGTERM is not the cause: the timeouts that led to it are. */
Test(supervise, start_timeout_then_the_daemons_sigterm) {
        add_demo("deaf", "\"startTimeout\":0.3,\"stopTimeout\":0.2,\"restartDelay\":30",
                 "\"--never-answer\",\"--ignore-stdin-eof\"");
        start(NULL);
        expect_line("[deaf] stopping -> backoff: startTimeout (0.3 s) passed before it was ready, then stopped with "
                    "SIGTERM after stopTimeout (0.2 s); restarting in 30 s",
                    NULL);
        expect_notify("deaf backoff (startTimeout passed)");
        expect_no_log("killed by SIGTERM");
}

Test(supervise, unhealthy_then_restart) {
        add_demo("sick",
                 "\"healthInterval\":0.2,\"healthTimeout\":0.2,\"healthFailures\":2,\"restartDelay\":0.1",
                 "\"--ping-fail-after\",\"1\"");
        start(NULL);
        expect_line("[sick] ready -> unhealthy: health check failed (1 of 2): no answer to ping within "
                    "healthTimeout (0.2 s)",
                    NULL);
        expect_line("[sick] unhealthy -> stopping: 2 health checks failed in a row: no answer to ping within "
                    "healthTimeout (0.2 s)",
                    NULL);
        expect_line("[sick] stopping -> backoff: ", "restarting in", NULL);
        cr_assert(h_log_count_wait(&D, "[sick] starting -> ready: 10 tools", 2, H_TIMEOUT_MS), "not restarted");
}

Test(supervise, bad_protocol_version) {
        add_demo("old", "\"restartDelay\":0.2", "\"--protocol-version\",\"1999-01-01\"");
        start(NULL);
        expect_line("[old] starting -> stopping: ", "1999-01-01", "does not", NULL);
        expect_line("[old] stopping -> backoff: ", "restarting in", NULL);
}

Test(supervise, close_stdout) {
        add_demo("mouth", "\"restartDelay\":0.1", "\"--close-stdout\"");
        start(NULL);
        expect_line("[mouth] ", "-> stopping: closed its stdout", NULL);
        expect_line("[mouth] stopping -> backoff: closed its stdout", "restarting in", NULL);
        cr_assert(h_log_count_wait(&D, "[mouth] started ", 2, H_TIMEOUT_MS), "not restarted");
}

Test(supervise, garbage_stdout) {
        add_demo("junk", "", "\"--garbage\"");
        start(NULL);
        expect_line("[junk] server wrote something that is not MCP on stdout", NULL);
        expect_log("[junk] starting -> ready: 10 tools");
        expect_notify("STATUS=1/1 servers ready");
}

/* ---- the close sequence ---- */

Test(supervise, close_sequence_stdin_only) {
        pid_t pid;

        add_demo("polite", "", sf("\"--pidfile\",\"%s\"", PIDFILE));
        start(NULL);
        pid = ready_pid("polite");
        stop_daemon();
        expect_log("[polite] ready -> stopping: mcpvisord is stopping");
        expect_log("[polite] stopping -> stopped");
        expect_no_log("sending SIGTERM");
        expect_gone(pid, "the server");
}

Test(supervise, close_sequence_sigterm) {
        pid_t pid;

        add_demo("deaf", "\"stopTimeout\":0.3", sf("\"--ignore-stdin-eof\",\"--pidfile\",\"%s\"", PIDFILE));
        start(NULL);
        pid = ready_pid("deaf");
        stop_daemon();
        expect_log("[deaf] still running 0.3 s after its stdin was closed; sending SIGTERM");
        expect_no_log("sending SIGKILL");
        expect_gone(pid, "the server");
}

Test(supervise, close_sequence_sigkill) {
        long long t0, elapsed;
        pid_t pid;

        add_demo("stubborn", "\"stopTimeout\":0.3,\"killTimeout\":0.3", sf(STUBBORN ",\"--pidfile\",\"%s\"", PIDFILE));
        start(NULL);
        pid = ready_pid("stubborn");
        t0 = h_now_ms();
        stop_daemon();
        elapsed = h_now_ms() - t0;
        expect_log("[stubborn] still running 0.3 s after its stdin was closed; sending SIGTERM");
        expect_log("[stubborn] still running 0.3 s after SIGTERM; sending SIGKILL");
        /* 10 ms of slack: both clock reads truncate, and libevent's timers run off a time it
         * caches once per loop pass */
        cr_assert_geq(elapsed, 590, "stopped in %lld ms: the timeouts were not waited out", elapsed);
        cr_assert_lt(elapsed, 3000, "stopping took %lld ms", elapsed);
        expect_gone(pid, "the server");
}

Test(supervise, parallel_shutdown) {
        static const char keys[] = "\"stopTimeout\":0.5,\"killTimeout\":0.5";
        long long t0, elapsed;
        int status;

        add_demo("s1", keys, STUBBORN);
        add_demo("s2", keys, STUBBORN);
        add_demo("s3", keys, STUBBORN);
        start(NULL);
        expect_notify("STATUS=3/3 servers ready");
        t0 = h_now_ms();
        status = h_stop_draining(&D, SIGTERM, H_TIMEOUT_MS);
        elapsed = h_now_ms() - t0;
        /* none of them clears its environment: such a line is one of their own processes,
         * caught exiting, taken for a leftover (see shutdown_with_a_server_without_environment) */
        expect_no_log("that cleared its environment");
        cr_assert(exited_cleanly(status), "SIGTERM did not end in exit 0");
        cr_assert_eq(h_log_count(&D, "sending SIGKILL"), 3);
        /* one after the other would be 3 s */
        cr_assert_lt(elapsed, 2000, "stopping took %lld ms: servers closed one by one?", elapsed);
        cr_assert_geq(elapsed, 990, "stopped in %lld ms: the timeouts were not waited out", elapsed);
}

/* A server whose own process has an empty environment (run through env -i) carries no
 * MCPVISOR_* marks. When the other server's exit makes the daemon look for leftovers during
 * shutdown, it must still know that pid as a server's own process, not a leftover: one
 * taken for a leftover is reaped by the server's pidfd path and the leftover entry would
 * never go, keeping the daemon from ever finishing its stop. A server's own process that
 * is exiting has an empty environ too, so this also happens, at random, with plain servers. */
Test(supervise, shutdown_with_a_server_without_environment) {
        pid_t pid;
        int status;

        add_demo("plain", "", "");
        add_entry("\"bare\":{\"command\":\"/usr/bin/env\",\"args\":[\"-i\",\"%s\",\"--ignore-stdin-eof\","
                  "\"--pidfile\",\"%s\"],\"stopTimeout\":0.3,\"killTimeout\":0.3}",
                  h_demo_server_path(), PIDFILE);
        start(NULL);
        expect_notify("STATUS=2/2 servers ready");
        pid = pidfile_wait(PIDFILE, 0);
        status = h_stop_draining(&D, SIGTERM, 2000); /* 0.3 s expected */
        expect_no_log(sf("pid %d was left behind", (int)pid));
        cr_assert(exited_cleanly(status), "the daemon did not finish stopping");
        expect_log("[bare] still running 0.3 s after its stdin was closed; sending SIGTERM");
}

/* ---- processes left behind, and zombies ---- */

Test(supervise, setsid_grandchild_ended_at_stop) {
        pid_t gpid, pgid;
        char state;

        add_demo("escapee", "", sf("\"--grandchild-setsid\",\"--grandchild-pidfile\",\"%s\"", GPIDFILE));
        start(NULL);
        expect_log("[escapee] starting -> ready");
        gpid = pidfile_wait(GPIDFILE, 0);
        cr_assert(h_proc_stat(gpid, &state, NULL, &pgid) && pgid == gpid, "the grandchild did not leave the group");
        stop_daemon();
        expect_log(sf("pid %d was left behind by its server", (int)gpid));
        expect_gone(gpid, "the setsid grandchild");
}

Test(supervise, setsid_grandchild_of_crashed_instance_ended) {
        pid_t gpid;

        add_demo("orphaner", "\"restart\":\"never\",\"healthInterval\":0.2",
                 sf("\"--exit-after\",\"6\",\"--grandchild-setsid\",\"--grandchild-pidfile\",\"%s\"", GPIDFILE));
        start(NULL);
        gpid = pidfile_wait(GPIDFILE, 0);
        expect_line("[orphaner] ", "-> failed: ", NULL);
        expect_line("[orphaner] ", sf("pid %d was left behind by its server; sending SIGTERM", (int)gpid), NULL);
        expect_gone(gpid, "the grandchild of the crashed instance");
        cr_assert_eq(h_wait_exit(&D, 0), -1, "the daemon exited");
        ping_daemon();
}

Test(supervise, same_group_grandchild_ended) {
        pid_t pid, gpid, pgid;
        char state;

        add_demo("family", "", sf("\"--pidfile\",\"%s\",\"--grandchild-same-group\",\"--grandchild-pidfile\",\"%s\"",
                 PIDFILE, GPIDFILE));
        start(NULL);
        pid = ready_pid("family");
        gpid = pidfile_wait(GPIDFILE, 0);
        cr_assert(h_proc_stat(gpid, &state, NULL, &pgid) && pgid == pid, "the grandchild is not in the server's group");
        stop_daemon();
        expect_gone(gpid, "the same-group grandchild");
        expect_gone(pid, "the server");
}

/* --grandchild-tree: the server, a child in its group, a grandchild that left the session
 * and cleared its environment, so no MCPVISOR_* mark says whose it is, and its own child in
 * yet another session. The daemon, their subreaper, attributes them by ancestry. */
struct tree {
        pid_t grandchild, great;
};

/* Waits for a run's tree (not prev's): its grandchild has shed its environment. */
static struct tree tree_wait(struct tree prev) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        struct tree t = { .grandchild = pidfile_wait(GPIDFILE, prev.grandchild) };
        char env[4096];

        while (h_read_environ(t.grandchild, env, sizeof env) > 0) { /* until its execve */
                cr_assert_lt(h_now_ms(), deadline, "the grandchild %d kept its environment", (int)t.grandchild);
                pause_draining(10);
        }
        /* written by the lingering grandchild, so only after its exec */
        t.great = pidfile_wait(GGPIDFILE, prev.great);
        return t;
}

static struct tree start_tree(const char *name, const char *keys, const char *args) {
        add_demo(name, keys, sf("%s\"--grandchild-tree\",\"--grandchild-pidfile\",\"%s\"", args, GPIDFILE));
        start(NULL);
        expect_log(sf("[%s] starting -> ready", name));
        return tree_wait((struct tree){ 0 });
}

static void expect_tree_gone(struct tree t, const char *when) {
        expect_gone(t.grandchild, sf("the grandchild without environment, %s,", when));
        expect_gone(t.great, sf("its child in a session of its own, %s,", when));
}

Test(supervise, env_less_grandchild_ended_when_its_server_stops) {
        struct tree t = start_tree("tree", "\"stopTimeout\":0.2,\"killTimeout\":0.2", "");
        json_object *r = h_control(&D, "stop", "{\"name\":\"tree\"}");

        cr_assert_not_null(json_object_object_get(r, "result"), "stop: %s", json_object_to_json_string(r));
        json_object_put(r);
        expect_tree_gone(t, "after its server's stop");
        expect_line("[tree] ", sf("pid %d was left behind by its server; sending SIGTERM", (int)t.grandchild), NULL);
        cr_assert_eq(h_wait_exit(&D, 0), -1, "the daemon exited");
}

/* restart: always, and each run crashes after a second (its sixth answer, pings included)
 * leaving such a tree: none outlives its run. 36 piled up in 20 s when only the
 * environment told whose they were. */
Test(supervise, env_less_grandchildren_of_crashing_runs_do_not_accumulate) {
        struct tree t = start_tree("crasher", "\"restart\":\"always\",\"healthInterval\":0.2,\"restartDelay\":0.05,"
                                   "\"restartDelayMax\":0.05,\"startLimitBurst\":0", "\"--exit-after\",\"6\",");

        for (int run = 1; run <= 3; run++) {
                struct tree next = tree_wait(t);

                expect_tree_gone(t, sf("of run %d", run));
                t = next;
        }
        cr_assert_eq(h_log_count(&D, "cleared its environment"), 0, "attributed by ancestry, not by name");
        stop_daemon();
        expect_tree_gone(t, "of the last run");
}

Test(supervise, env_less_grandchild_ended_when_the_daemon_stops) {
        struct tree t = start_tree("tree", "\"stopTimeout\":0.2,\"killTimeout\":0.2", "");

        stop_daemon();
        expect_tree_gone(t, "after the daemon's stop");
}

/* The other way round: a running server's grandchild without mark whose parent dies, so
 * that it is re-parented to the daemon while its server runs. The daemon saw it below the
 * server when another server's run ended; when a third one's ends, it is still the running
 * server's by that record, and kept. */
Test(supervise, env_less_grandchild_of_a_running_server_kept) {
        long long deadline;
        pid_t middle, ppid;
        struct tree t;
        char state;

        add_demo("other1", "", "");
        add_demo("other2", "", "");
        t = start_tree("tree", "", "");
        json_object_put(h_control(&D, "stop", "{\"name\":\"other1\"}"));
        expect_log("[other1] stopping -> stopped");
        cr_assert(h_proc_stat(t.grandchild, &state, &middle, NULL));
        cr_assert_eq(kill(middle, SIGKILL), 0);
        for (deadline = h_now_ms() + H_TIMEOUT_MS; !h_proc_stat(t.grandchild, &state, &ppid, NULL) || ppid != D.pid;) {
                cr_assert_lt(h_now_ms(), deadline, "the grandchild was not re-parented to the daemon");
                pause_draining(10);
        }
        json_object_put(h_control(&D, "stop", "{\"name\":\"other2\"}"));
        expect_log("[other2] stopping -> stopped");
        cr_assert_not(h_pid_gone_wait(t.grandchild, 300), "a running server's grandchild was ended");
        cr_assert_not(h_pid_gone(t.great), "a running server's great-grandchild was ended");
        expect_no_log("was left behind");
        stop_daemon();
        expect_tree_gone(t, "after the daemon's stop");
}

/* A child the daemon had before it started anything: a wrapper's `sleep 1000 &` before its
 * `exec mcpvisord`, as `exec > >(tee log)` or a container's entrypoint leave. It is no
 * server's leftover: not ended when a run ends, nor when the daemon stops. */
Test(supervise, child_inherited_from_the_wrapper_left_alone) {
        const char *old = getenv("MCPVISOR_IT_WRAPPER");
        char script[200], pidfile[200], wrapper[2048];
        FILE *f;
        pid_t sleeper;

        snprintf(script, sizeof script, "%s/wrapper.sh", T);
        snprintf(pidfile, sizeof pidfile, "%s/inherited.pid", T);
        f = fopen(script, "we");
        cr_assert_not_null(f);
        fprintf(f, "sleep 1000 &\necho $! > %s\nexec \"$@\"\n", pidfile);
        fclose(f);
        snprintf(wrapper, sizeof wrapper, "/bin/sh %s%s%s", script, old ? " " : "", old ? old : "");
        setenv("MCPVISOR_IT_WRAPPER", wrapper, 1);
        add_demo("brief", "", "");
        start(NULL);
        old ? setenv("MCPVISOR_IT_WRAPPER", old, 1) : unsetenv("MCPVISOR_IT_WRAPPER");
        sleeper = pidfile_wait(pidfile, 0);
        expect_log("[brief] starting -> ready");
        json_object_put(h_control(&D, "stop", "{\"name\":\"brief\"}"));
        expect_log("[brief] stopping -> stopped");
        cr_assert_not(h_pid_gone_wait(sleeper, 300), "the wrapper's child was ended when a run ended");
        stop_daemon();
        cr_assert_not(h_pid_gone(sleeper), "the wrapper's child was ended when the daemon stopped");
        expect_no_log("was left behind");
        kill(sleeper, SIGKILL);
}

/* ---- a daemon SIGKILLed outside systemd ---- */

/* A daemon before D: on its own paths, with a server ignoring its stdin's end and SIGTERM
 * (PIDFILE) and one whose setsid grandchild leaves its group (GPIDFILE), both tagged. The
 * first one's stderr is /dev/null: its note about stdin's end must not die of SIGPIPE on a
 * pipe nobody reads once the daemon is gone. */
static void start_predecessor(struct h_daemon *old) {
        const char *tag = strchr(tag_entry(), '=') + 1;

        h_start(old, &(struct h_opts){
                .config = sf("{\"mcpServers\":{"
                             "\"deaf\":{\"command\":\"/bin/sh\",\"args\":[\"-c\",\"exec \\\"$0\\\" "
                             "--ignore-stdin-eof --ignore-sigterm --pidfile %s 2>/dev/null\",\"%s\"],"
                             "\"env\":{\"MCPVISOR_IT_TAG\":\"%s\"}},"
                             "\"escapee\":{\"command\":\"%s\",\"args\":[\"--grandchild-setsid\",\"--grandchild-pidfile\",\"%s\"],"
                             "\"env\":{\"MCPVISOR_IT_TAG\":\"%s\"}}}}\n",
                             PIDFILE, h_demo_server_path(), tag, h_demo_server_path(), GPIDFILE, tag) });
        cr_assert(h_notify_wait(old, "STATUS=2/2 servers ready", H_TIMEOUT_MS), "the first daemon's servers: %s",
                  old->notices);
}

/* What a failed test left of the predecessor's (its servers ignore SIGTERM): for teardown. */
static void kill_tagged(const char *pidfile) {
        pid_t pid = h_pidfile_wait(pidfile, 0, 0);
        char env[65536];
        size_t len;

        if (pid <= 0 || h_pid_gone(pid))
                return;
        len = h_read_environ(pid, env, sizeof env);
        if (h_environ_has(env, len, tag_entry(), true))
                kill(pid, SIGKILL);
}

/* What a failed test left of a --grandchild-tree (no mark in its environment): for teardown. */
static void kill_lingering(const char *pidfile) {
        pid_t pid = h_pidfile_wait(pidfile, 0, 0);
        char path[64], cmdline[256] = "";
        FILE *f;
        size_t n;

        if (pid <= 0 || h_pid_gone(pid))
                return;
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return;
        n = fread(cmdline, 1, sizeof cmdline - 1, f);
        fclose(f);
        if (n > 0 && memmem(cmdline, n, "\0--linger\0", 10))
                kill(pid, SIGKILL);
}

/* D on the paths of old. */
static void start_on_paths_of(const struct h_daemon *old) {
        const char *const args[] = { "--socket", old->sock, "--control-socket", old->control, NULL };
        char *config = config_text();

        h_start(&D, &(struct h_opts){ .config = config, .extra_args = args });
        free(config);
}

Test(supervise, sigkilled_daemon_leftovers_ended_by_the_next) {
        pid_t pid, gpid;

        start_predecessor(&OLD);
        pid = pidfile_wait(PIDFILE, 0);
        gpid = pidfile_wait(GPIDFILE, 0);
        h_stop(&OLD, SIGKILL, H_TIMEOUT_MS);
        /* PR_SET_PDEATHSIG: the direct child ignoring EOF and SIGTERM goes with the daemon */
        cr_assert(h_pid_gone_wait(pid, 1000), "the server (pid %d) outlived its SIGKILLed daemon", (int)pid);
        cr_assert_not(h_pid_gone(gpid), "the setsid grandchild is out of PR_SET_PDEATHSIG's reach");

        add_demo("fresh", "", "");
        start_on_paths_of(&OLD);
        expect_log(sf("pid %d was left behind by a previous mcpvisord on this socket; sending SIGTERM", (int)gpid));
        expect_gone(gpid, "the setsid grandchild of the SIGKILLed daemon");
        expect_notify("STATUS=1/1 servers ready");
        struct h_conn *c = h_connect(OLD.sock, H_TIMEOUT_MS);
        h_expect_result(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        h_close(c);
        stop_daemon();
}

Test(supervise, daemon_on_other_socket_leaves_servers_alone) {
        pid_t pid, gpid;

        start_predecessor(&OLD);
        pid = pidfile_wait(PIDFILE, 0);
        gpid = pidfile_wait(GPIDFILE, 0);
        add_demo("other", "", "");
        start(NULL);
        expect_notify("STATUS=1/1 servers ready");
        expect_no_log("previous mcpvisord");
        cr_assert_not(h_pid_gone_wait(gpid, 300), "another daemon's setsid grandchild was ended");
        cr_assert_not(h_pid_gone(pid), "another daemon's server was ended");
        stop_daemon();
        /* The first daemon's own close sequence still ends all of it. */
        cr_assert(exited_cleanly(h_stop(&OLD, SIGTERM, 2 * H_TIMEOUT_MS)), "the first daemon did not stop cleanly");
        cr_assert(h_pid_gone_wait(gpid, H_TIMEOUT_MS) && h_pid_gone_wait(pid, H_TIMEOUT_MS));
}

/* Polls until the daemon has no children at all (zombies included), then asserts that it
 * stays so for a while: nothing is running, so nothing may appear. */
static void expect_no_children(int settle_ms) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        while (h_count_children(D.pid, false) > 0) {
                cr_assert_lt(h_now_ms(), deadline, "the daemon still has %u children, %u of them zombies",
                             h_count_children(D.pid, false), h_count_children(D.pid, true));
                pause_draining(20);
        }
        for (long long end = h_now_ms() + settle_ms; h_now_ms() < end; pause_draining(20))
                cr_assert_eq(h_count_children(D.pid, true), 0, "a zombie appeared");
        cr_assert_eq(h_count_children(D.pid, false), 0);
}

Test(supervise, no_zombies) {
        char name[32];

        snprintf(name, sizeof name, "nz%d", (int)getpid()); /* unique: other tests run beside this one */

        /* crash, restart, crash...: each run also leaves a grandchild in its group, which
         * the daemon must end and reap too; the start limit ends the cycle */
        add_demo(name,
                 "\"healthInterval\":0.2,\"restartDelay\":0.05,\"restartDelayMax\":0.05,"
                 "\"startLimitBurst\":4,\"startLimitInterval\":60",
                 "\"--exit-after\",\"6\",\"--grandchild-same-group\"");
        start(NULL);
        expect_line(sf("[%s] ", name), "giving up", NULL);
        cr_assert_eq(h_log_count(&D, sf("[%s] started ", name)), 4);
        expect_no_children(300);
        stop_daemon();
        cr_assert_eq(h_count_server_processes(name), 0, "processes of %s outlived the daemon", name);
}

/* ---- stderr ---- */

Test(supervise, stderr_lines) {
        add_demo("talker", "", "\"--stderr\",\"hello from talker\"");
        start(NULL);
        expect_log("\ntalker: hello from talker\n");
}

static size_t longest_line(const char *text) {
        size_t longest = 0;

        for (const char *p = text; *p;) {
                size_t len = strcspn(p, "\n");
                if (len > longest)
                        longest = len;
                p += len + (p[len] == '\n');
        }
        return longest;
}

Test(supervise, stderr_long_line) {
        char *text;
        size_t longest;

        add_demo("longline", "", "\"--long-stderr-line\",\"100000\"");
        start(NULL);
        expect_log("[line cut at 4096 bytes]");
        expect_log("[longline] starting -> ready");
        stop_daemon(); /* all of its stderr has been read now */
        text = h_log_text(&D);
        longest = longest_line(text);
        free(text);
        cr_assert_leq(longest, 4300, "a log line of %zu bytes", longest);
        cr_assert_eq(h_log_count(&D, "longline: xxx"), 1, "the rest of the long line was logged too");
}

Test(supervise, stderr_flood) {
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n";
        struct h_conn *c;
        unsigned lines;

        add_demo("flood", "", "\"--flood-stderr\",\"0\"");
        start(NULL);
        expect_log("[flood] starting -> ready");
        /* the daemon keeps serving while the flood goes on */
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        for (int i = 0; i < 5; i++) {
                long long t0 = h_now_ms();
                h_expect_result(c, ping);
                cr_assert_lt(h_now_ms() - t0, 1000, "a ping took %lld ms", h_now_ms() - t0);
        }
        h_close(c);
        /* 1000 lines per 10 s get through; the rest is counted and reported, at the latest
         * when the server's stderr is finished, at stop */
        cr_assert(h_log_count_wait(&D, "\nflood: flood line ", 1000, H_TIMEOUT_MS), "the flood did not reach the log");
        stop_daemon();
        expect_log("[flood] server wrote too fast to its stderr: ");
        expect_log(" lines dropped");
        lines = h_log_count(&D, "\nflood: flood line ");
        cr_assert_lt(lines, 1100, "%u flood lines in the log", lines);
}
