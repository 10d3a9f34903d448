/* Unit tests for mcpvisorctl's ctl-format.c: durations, --timeout, tables. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-format.h"
#include "macro.h"

static const char *duration(double s) {
        static char buf[16];
        return ctl_format_duration(s, buf, sizeof buf);
}

Test(ctl_format, durations_read_at_a_glance) {
        cr_expect_str_eq(duration(0), "0s");
        cr_expect_str_eq(duration(0.9), "0s");
        cr_expect_str_eq(duration(45.7), "45s");
        cr_expect_str_eq(duration(60), "1m00s");
        cr_expect_str_eq(duration(192), "3m12s");
        cr_expect_str_eq(duration(3599), "59m59s");
        cr_expect_str_eq(duration(3600 * 2 + 5 * 60 + 30), "2h05m");
        cr_expect_str_eq(duration(86400 * 3 + 4 * 3600 + 59), "3d04h");
        cr_expect_str_eq(duration(-1), "-");
        cr_expect_str_eq(duration(NAN), "-");
}

Test(ctl_format, timeouts) {
        char buf[32];

        cr_expect_str_eq(ctl_format_timeout(10 * USEC_PER_SEC, buf, sizeof buf), "10 s");
        cr_expect_str_eq(ctl_format_timeout(USEC_PER_SEC / 2, buf, sizeof buf), "0.5 s");
}

Test(ctl_format, seconds_from_the_command_line) {
        uint64_t usec = 7;

        cr_expect_eq(ctl_parse_seconds("10", &usec), 0);
        cr_expect_eq(usec, 10 * USEC_PER_SEC);
        cr_expect_eq(ctl_parse_seconds("0.25", &usec), 0);
        cr_expect_eq(usec, USEC_PER_SEC / 4);
        cr_expect_eq(ctl_parse_seconds("1e-9", &usec), 0);
        cr_expect_eq(usec, 1, "a positive number is never zero time");
        usec = 7;
        cr_expect_eq(ctl_parse_seconds("0", &usec), -ERANGE);
        cr_expect_eq(ctl_parse_seconds("-1", &usec), -ERANGE);
        cr_expect_eq(ctl_parse_seconds("86401", &usec), -ERANGE);
        cr_expect_eq(ctl_parse_seconds("", &usec), -EINVAL);
        cr_expect_eq(ctl_parse_seconds(" 5", &usec), -EINVAL);
        cr_expect_eq(ctl_parse_seconds("5s", &usec), -EINVAL);
        cr_expect_eq(ctl_parse_seconds("nan", &usec), -EINVAL);
        cr_expect_eq(ctl_parse_seconds("inf", &usec), -EINVAL);
        cr_expect_eq(usec, 7, "left alone on errors");
}

/* What print(arg, out) writes, as a string (static, overwritten by the next call). */
static const char *captured(void (*print)(const void *arg, FILE *out), const void *arg) {
        static char *text;
        size_t len = 0;
        FILE *out;

        free(text);
        text = NULL;
        out = open_memstream(&text, &len);
        cr_assert_not_null(out);
        print(arg, out);
        fclose(out);
        return text;
}

static void print_table(const void *t, FILE *out) {
        ctl_table_print(t, out);
}

static void print_notes(const void *n, FILE *out) {
        ctl_format_notes(n, "  ", out);
}

/* The notes as mcpvisorctl prints them under a row. */
static const char *notes(const struct ctl_server_notes *n) {
        return captured(print_notes, n);
}

Test(ctl_format, tables_align_columns) {
        static const char *const header[] = { "NAME", "STATE", "LAST" };
        struct ctl_table t;

        cr_assert_eq(ctl_table_init(&t, header, 3), 0);
        for (const char *const *c = (const char *const[]){ "github", "ready", "-", "fs", "backoff", "exit status 1", NULL }; *c; c++)
                cr_assert_eq(ctl_table_add(&t, *c), 0);
        cr_expect_str_eq(captured(print_table, &t),
                         "NAME    STATE    LAST\n"
                         "github  ready    -\n"
                         "fs      backoff  exit status 1\n");
        ctl_table_done(&t);
}

Test(ctl_format, a_rows_note_is_printed_under_it) {
        static const char *const header[] = { "NAME", "STATE" };
        struct ctl_table t;

        cr_assert_eq(ctl_table_init(&t, header, 2), 0);
        cr_assert_eq(ctl_table_add(&t, "github"), 0);
        cr_assert_eq(ctl_table_add(&t, "backoff"), 0);
        cr_assert_eq(ctl_table_note(&t, "  why: exit status 1\n  log: here\n"), 0);
        cr_assert_eq(ctl_table_add(&t, "fs"), 0);
        cr_assert_eq(ctl_table_add(&t, "ready"), 0);
        cr_expect_str_eq(captured(print_table, &t),
                         "NAME    STATE\n"
                         "github  backoff\n"
                         "  why: exit status 1\n"
                         "  log: here\n"
                         "fs      ready\n");
        ctl_table_done(&t);
}

/* The daemon's own SIGTERM after startTimeout: the cause says so, and the journal is named
 * only because the daemon logs there. */
Test(ctl_format, notes_say_why_what_it_said_and_where_the_log_is) {
        struct ctl_server_notes n = {
                .name = "github",
                .state = "backoff",
                .cause = "startTimeout (30 s) passed before it was ready, then stopped with SIGTERM after stopTimeout "
                         "(3 s); restarting in 1.5 s",
                .why = "startTimeout (30 s) passed before it was ready, then stopped with SIGTERM after stopTimeout (3 s)",
                .since = 4,
                .stderr_line = "GITHUB_PERSONAL_ACCESS_TOKEN not set",
                .stderr_since = 75,
                .log = CTL_LOG_JOURNAL,
        };

        cr_expect_str_eq(notes(&n), "  why: startTimeout (30 s) passed before it was ready, then stopped with SIGTERM "
                                    "after stopTimeout (3 s); restarting in 1.5 s\n"
                                    "  stderr 1m15s ago: GITHUB_PERSONAL_ACCESS_TOKEN not set\n"
                                    "  log: journalctl -t github (its stderr), journalctl MCPVISOR_SERVER=github (with "
                                    "mcpvisord's lines about it)\n");
        n.no_stderr = true; /* a server reached by URL: only the daemon's lines */
        n.stderr_line = NULL;
        cr_expect_str_eq(notes(&n), "  why: startTimeout (30 s) passed before it was ready, then stopped with SIGTERM "
                                    "after stopTimeout (3 s); restarting in 1.5 s\n"
                                    "  log: journalctl MCPVISOR_SERVER=github (mcpvisord's lines about it; it has no "
                                    "stderr)\n");
        n.no_stderr = false;
        n.log = CTL_LOG_STDERR;
        n.log_stderr = "/dev/pts/3";
        n.stderr_line = NULL;
        cr_expect_str_eq(notes(&n), "  why: startTimeout (30 s) passed before it was ready, then stopped with SIGTERM "
                                    "after stopTimeout (3 s); restarting in 1.5 s\n"
                                    "  log: on mcpvisord's stderr (/dev/pts/3), not in the journal\n");
        cr_expect_null(strstr(notes(&n), "journalctl"));
        n.log_stderr = NULL;
        n.cause = NULL; /* the facts' text stands in */
        cr_expect_str_eq(notes(&n), "  why: startTimeout (30 s) passed before it was ready, then stopped with SIGTERM "
                                    "after stopTimeout (3 s)\n"
                                    "  log: on mcpvisord's stderr, not in the journal\n");
        n.log = CTL_LOG_UNKNOWN; /* a daemon that does not say: no guess */
        n.why = NULL;
        cr_expect_str_eq(notes(&n), "");
}

Test(ctl_format, notes_of_a_server_still_starting) {
        struct ctl_server_notes n = {
                .name = "slow", .state = "starting", .cause = "configured", .since = 192,
                .stderr_line = "downloading", .stderr_since = 2,
        };

        cr_expect_str_eq(notes(&n), "  why: starting for 3m12s\n"
                                    "  stderr 2s ago: downloading\n");
        n.why = "exit status 1";
        cr_expect_str_eq(notes(&n), "  why: starting for 3m12s; its last run: exit status 1\n"
                                    "  stderr 2s ago: downloading\n");
}

/* A server's stderr is any bytes: nothing in it may drive the terminal. */
Test(ctl_format, notes_show_control_characters_as_question_marks) {
        struct ctl_server_notes n = {
                .name = "x", .state = "failed", .cause = "exit\tstatus 1",
                .stderr_line = "\x1b[31mred\x1b[0m \xc2\x9b" "2J caf\xc3\xa9\r", .stderr_since = 1,
        };

        cr_expect_str_eq(notes(&n), "  why: exit?status 1\n"
                                    "  stderr 1s ago: ?[31mred?[0m ?2J caf\xc3\xa9?\n");
}
