/* Unit tests for server-cause.c: the words for why a server's run ended, rendered from the
 * facts server.c keeps (kind, detail, numbers, and how the process ended). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

Test(server_cause, exits_in_words) {
        char buf[64];

        cr_expect_str_eq(server_exit_text(&(struct server_exit){ CLD_EXITED, 1 }, buf, sizeof buf), "exit status 1");
        cr_expect_str_eq(server_exit_text(&(struct server_exit){ CLD_KILLED, SIGKILL }, buf, sizeof buf),
                         "killed by SIGKILL");
        cr_expect_str_eq(server_exit_text(&(struct server_exit){ CLD_DUMPED, SIGSEGV }, buf, sizeof buf),
                         "dumped core on SIGSEGV");
        cr_expect_str_eq(server_exit_text(&(struct server_exit){ 0 }, buf, sizeof buf), "");
        cr_expect(server_exit_clean(&(struct server_exit){ CLD_EXITED, 0 }));
        cr_expect_not(server_exit_clean(&(struct server_exit){ CLD_EXITED, 1 }));
        cr_expect_not(server_exit_clean(&(struct server_exit){ 0 }));
}

Test(server_cause, an_exit_of_its_own_is_the_exit) {
        server_cause_set(&C, SERVER_CAUSE_EXIT, NULL);
        ended(CLD_EXITED, 3);
        expect_text("exit status 3");
        C.starting = true;
        expect_text("exited while starting, then exit status 3");
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
}

Test(server_cause, health_failures_count_and_say_the_last) {
        server_cause_set(&C, SERVER_CAUSE_HEALTH, "ping answered with an error");
        C.failures = 3;
        ended(CLD_EXITED, 0);
        expect_text("3 health checks failed in a row (ping answered with an error), then exit status 0");
}

Test(server_cause, details_are_copied_capped_and_valid_utf8) {
        char detail[SERVER_CAUSE_DETAIL_MAX + 10];

        /* "é" (2 bytes) repeated, so that the cap falls inside a character */
        memset(detail, 'a', 1);
        for (size_t i = 1; i + 1 < sizeof detail; i += 2)
                memcpy(detail + i, "\xc3\xa9", 2);
        detail[sizeof detail - 1] = '\0';
        server_cause_set(&C, SERVER_CAUSE_HANDSHAKE, detail);
        cr_assert_not_null(C.detail);
        cr_expect_leq(strlen(C.detail), SERVER_CAUSE_DETAIL_MAX);
        cr_expect_eq(strlen(C.detail) % 2, 1, "cut between characters: %zu bytes", strlen(C.detail));
        server_cause_set(&C, SERVER_CAUSE_HANDSHAKE, "bad \xff byte");
        cr_expect_str_eq(C.detail, "bad ? byte");
        server_cause_set(&C, SERVER_CAUSE_HANDSHAKE, "");
        cr_expect_null(C.detail);
}
