/* Unit tests for server-cause.c: the words for why a server's run ended, rendered from the
 * facts server.c keeps (kind, detail, numbers, and how the process ended). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "macro.h"
#include "server-cause.h"

static struct server_cause C;

static void reset(void) {
        server_cause_done(&C);
        C = (struct server_cause){ 0 };
}

TestSuite(server_cause, .fini = reset);

/* The cause's text, compared and freed. */
static void expect_text(const char *want) {
        char *text = server_cause_text(&C);

        cr_assert_not_null(text);
        cr_expect_str_eq(text, want);
        free(text);
}

static void ended(int code, int status) {
        C.exit = (struct server_exit){ .code = code, .status = status };
}

/* The daemon had sent sig (SIGTERM after stopTimeout 5 s, SIGKILL after killTimeout 2 s). */
static void ended_after(int code, int status, int sig) {
        C.exit = (struct server_exit){
                .code = code, .status = status, .signal_sent = sig, .stop_timeout = 5, .kill_timeout = 2,
        };
}

static const char *exit_text(int code, int status, int sig) {
        static char buf[128];
        struct server_exit e = { .code = code, .status = status, .signal_sent = sig, .stop_timeout = 5, .kill_timeout = 2 };
        _cleanup_free_ char *text = server_exit_text(&e);

        cr_assert_not_null(text);
        snprintf(buf, sizeof buf, "%s", text);
        return buf;
}

/* e's text, compared and freed. */
static void expect_exit_text(const struct server_exit *e, const char *want) {
        _cleanup_free_ char *text = server_exit_text(e);

        cr_assert_not_null(text);
        cr_expect_str_eq(text, want);
}

Test(server_cause, exits_in_words) {
        cr_expect_str_eq(exit_text(CLD_EXITED, 1, 0), "exit status 1");
        cr_expect_str_eq(exit_text(CLD_KILLED, SIGKILL, 0), "killed by SIGKILL");
        cr_expect_str_eq(exit_text(CLD_DUMPED, SIGSEGV, 0), "dumped core on SIGSEGV");
        cr_expect_str_eq(exit_text(0, 0, 0), "");
        cr_expect(server_exit_clean(&(struct server_exit){ .code = CLD_EXITED, .status = 0 }));
        cr_expect_not(server_exit_clean(&(struct server_exit){ .code = CLD_EXITED, .status = 1 }));
        cr_expect_not(server_exit_clean(&(struct server_exit){ .code = 0 }));
}

/* A process the daemon's own signal ended is not "killed by SIGTERM": the daemon sent it,
 * after a timeout the text names. */
Test(server_cause, the_daemons_signal_names_its_timeout) {
        cr_expect_str_eq(exit_text(CLD_KILLED, SIGTERM, SIGTERM), "stopped with SIGTERM after stopTimeout (5 s)");
        cr_expect_str_eq(exit_text(CLD_KILLED, SIGTERM, SIGKILL), "stopped with SIGTERM after stopTimeout (5 s)");
        cr_expect_str_eq(exit_text(CLD_KILLED, SIGKILL, SIGKILL),
                         "stopped with SIGKILL after stopTimeout (5 s) and killTimeout (2 s)");
        cr_expect(server_exit_by_daemon(&(struct server_exit){ .code = CLD_KILLED, .status = SIGTERM, .signal_sent = SIGTERM }));
        /* someone else's signal, or an exit of its own, is said as it is, after ours */
        cr_expect_str_eq(exit_text(CLD_KILLED, SIGKILL, SIGTERM), "killed by SIGKILL after SIGTERM at stopTimeout (5 s)");
        cr_expect_str_eq(exit_text(CLD_EXITED, 0, SIGTERM), "exit status 0 after SIGTERM at stopTimeout (5 s)");
        cr_expect_str_eq(exit_text(CLD_EXITED, 1, SIGKILL), "exit status 1 after SIGKILL at killTimeout (2 s)");
        cr_expect_not(server_exit_by_daemon(&(struct server_exit){ .code = CLD_KILLED, .status = SIGKILL, .signal_sent = SIGTERM }));
        cr_expect_str_eq(exit_text(CLD_KILLED, SIGTERM, 0), "killed by SIGTERM");
        cr_expect_not(server_exit_by_daemon(&(struct server_exit){ .code = CLD_KILLED, .status = SIGTERM }));
}

Test(server_cause, a_start_timeout_says_so_before_the_signal) {
        server_cause_set(&C, SERVER_CAUSE_START_TIMEOUT, NULL);
        C.timeout = 0.5;
        expect_text("startTimeout (0.5 s) passed before it was ready");
        ended(CLD_EXITED, 0);
        expect_text("startTimeout (0.5 s) passed before it was ready, then exit status 0");
        ended_after(CLD_KILLED, SIGTERM, SIGTERM);
        expect_text("startTimeout (0.5 s) passed before it was ready, then stopped with SIGTERM after stopTimeout (5 s)");
}

Test(server_cause, brief_for_a_status_line) {
        char buf[128];

        server_cause_set(&C, SERVER_CAUSE_START_TIMEOUT, NULL);
        ended_after(CLD_KILLED, SIGTERM, SIGTERM);
        cr_expect_str_eq(server_cause_brief(&C, buf, sizeof buf), "startTimeout passed");
        server_cause_set(&C, SERVER_CAUSE_HEALTH, "connection closed");
        cr_expect_str_eq(server_cause_brief(&C, buf, sizeof buf), "health checks failed");
        server_cause_set(&C, SERVER_CAUSE_CONNECTION, "closed its stdout");
        cr_expect_str_eq(server_cause_brief(&C, buf, sizeof buf), "closed its stdout");
        ended(CLD_EXITED, 4);
        cr_expect_str_eq(server_cause_brief(&C, buf, sizeof buf), "exit status 4");
        server_cause_set(&C, SERVER_CAUSE_SPAWN, NULL);
        C.error = ENOENT;
        cr_expect_str_eq(server_cause_brief(&C, buf, sizeof buf), "cannot start");
}

Test(server_cause, an_exit_of_its_own_is_the_exit) {
        server_cause_set(&C, SERVER_CAUSE_EXIT, NULL);
        ended(CLD_EXITED, 3);
        expect_text("exit status 3");
        C.starting = true;
        expect_text("exit status 3 before it was ready");
}

Test(server_cause, a_broken_connection_then_the_exit) {
        server_cause_set(&C, SERVER_CAUSE_CONNECTION, "closed its stdout");
        expect_text("closed its stdout"); /* still stopping */
        ended(CLD_EXITED, 1);
        expect_text("closed its stdout, then exit status 1");
}

Test(server_cause, a_request_is_the_whole_story) {
        server_cause_set(&C, SERVER_CAUSE_REQUEST, "stopped by uid 0 (mcpvisorctl)");
        ended(CLD_EXITED, 0);
        expect_text("stopped by uid 0 (mcpvisorctl)");
}

Test(server_cause, a_spawn_error_names_the_errno) {
        server_cause_set(&C, SERVER_CAUSE_SPAWN, NULL);
        C.error = ENOENT;
        expect_text("cannot start: No such file or directory");
        /* what run_start() says to fix, when it says it */
        server_cause_set(&C, SERVER_CAUSE_SPAWN, "command 'npx' not found in PATH=/usr/bin (install it, ...)");
        C.error = ENOENT;
        expect_text("cannot start: command 'npx' not found in PATH=/usr/bin (install it, ...)");
}

Test(server_cause, health_failures_count_and_say_the_last) {
        server_cause_set(&C, SERVER_CAUSE_HEALTH, "ping answered with an error");
        C.failures = 3;
        ended(CLD_EXITED, 0);
        expect_text("3 health checks failed in a row: ping answered with an error, then exit status 0");
        server_cause_set(&C, SERVER_CAUSE_HEALTH, "no answer to ping within healthTimeout (1 s)");
        C.failures = 1;
        ended_after(CLD_KILLED, SIGTERM, SIGTERM);
        expect_text("1 health check failed in a row: no answer to ping within healthTimeout (1 s), then stopped with "
                    "SIGTERM after stopTimeout (5 s)");
}

/* A cause is the daemon's sentence, read by people: never cut (one was cut at 256 bytes,
 * "(install it, give an absolut"). */
Test(server_cause, details_are_copied_whole_and_valid_utf8) {
        char detail[4096], expected[4200];
        _cleanup_free_ char *text = NULL;

        memset(detail, 'p', sizeof detail);
        memcpy(detail, "command 'npx' not found in PATH=", 32);
        strcpy(detail + sizeof detail - 60, " (install it, give an absolute path, or set env.PATH)");
        server_cause_set(&C, SERVER_CAUSE_SPAWN, detail);
        cr_assert_not_null(C.detail);
        cr_expect_str_eq(C.detail, detail);
        text = server_cause_text(&C);
        snprintf(expected, sizeof expected, "cannot start: %s", detail);
        cr_expect_str_eq(text, expected);
        server_cause_set(&C, SERVER_CAUSE_HANDSHAKE, "bad \xff byte");
        cr_expect_str_eq(C.detail, "bad ? byte");
        server_cause_set(&C, SERVER_CAUSE_HANDSHAKE, "");
        cr_expect_null(C.detail);
}

/* A launcher's reason (the systemd launcher's Result=oom-kill) is said instead of the
 * signal, alone or after the daemon's own, and in the cause of a run that ended. */
Test(server_cause, a_launchers_reason_replaces_the_signal) {
        struct server_exit e = { .code = CLD_KILLED, .status = SIGKILL };

        server_exit_set_reason(&e, "killed by the OOM killer (memoryMax 256M)");
        expect_exit_text(&e, "killed by the OOM killer (memoryMax 256M)");
        e.signal_sent = SIGTERM;
        e.stop_timeout = 5;
        e.status = SIGKILL;
        expect_exit_text(&e, "killed by the OOM killer (memoryMax 256M) after SIGTERM at stopTimeout (5 s)");
        server_cause_set(&C, SERVER_CAUSE_EXIT, NULL);
        server_exit_copy(&C.exit, &(struct server_exit){ .code = CLD_KILLED, .status = SIGKILL, .reason = e.reason });
        server_exit_done(&e);
        expect_text("killed by the OOM killer (memoryMax 256M)");
        cr_expect_not(server_exit_by_daemon(&C.exit));
}

/* A reason far longer than a line (a long unit name and a service manager's error) is
 * said whole in the exit's text and the cause's, made valid UTF-8, and owned: a copy
 * outlives its source. */
Test(server_cause, a_long_reason_is_said_whole) {
        char reason[600], want[700];
        struct server_exit e = { .code = CLD_EXITED, .status = 255 };

        memset(reason, 'r', sizeof reason - 1);
        reason[sizeof reason - 1] = '\0';
        memcpy(reason, "unit ", 5);
        reason[300] = '\xff';
        server_exit_set_reason(&e, reason);
        reason[300] = '?';
        expect_exit_text(&e, reason);
        server_cause_set(&C, SERVER_CAUSE_CONNECTION, "closed its stdout");
        server_exit_copy(&C.exit, &e);
        server_exit_done(&e);
        cr_assert_null(e.reason);
        snprintf(want, sizeof want, "closed its stdout, then %s", reason);
        expect_text(want);
        server_exit_set_reason(&C.exit, "");
        cr_expect_null(C.exit.reason);
}
