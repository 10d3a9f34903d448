/* Unit tests for log.c: level names and the plain-stderr format. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

Test(log, level_names) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        for (int i = 0; i < 8; i++)
                cr_assert_eq(log_level_from_string(names[i]), i, "%s", names[i]);
        cr_assert_eq(log_level_from_string("err"), LOG_ERR);
        cr_assert_eq(log_level_from_string("debug"), LOG_DEBUG);
}

Test(log, level_case_insensitive) {
        cr_assert_eq(log_level_from_string("DEBUG"), LOG_DEBUG);
        cr_assert_eq(log_level_from_string("Info"), LOG_INFO);
        cr_assert_eq(log_level_from_string("WARN"), LOG_WARNING);
}

Test(log, level_aliases) {
        cr_assert_eq(log_level_from_string("error"), LOG_ERR);
        cr_assert_eq(log_level_from_string("warn"), LOG_WARNING);
        cr_assert_eq(log_level_from_string("critical"), LOG_CRIT);
        cr_assert_eq(log_level_from_string("emergency"), LOG_EMERG);
}

Test(log, level_digits) {
        for (int i = 0; i <= 7; i++) {
                char s[2] = { (char)('0' + i), '\0' };
                cr_assert_eq(log_level_from_string(s), i, "\"%s\"", s);
        }
}

Test(log, level_bad) {
        static const char *const bad[] = { "", "8", "9", "-1", "07", "10", "3x", "verbose", " info", "info ",
                                           "inf", "warnings", "trace" };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                cr_assert_eq(log_level_from_string(bad[i]), -EINVAL, "\"%s\"", bad[i]);
        cr_assert_eq(log_level_from_string(NULL), -EINVAL);
}

Test(log, level_to_string) {
        cr_assert_str_eq(log_level_to_string(LOG_EMERG), "emerg");
        cr_assert_str_eq(log_level_to_string(LOG_ALERT), "alert");
        cr_assert_str_eq(log_level_to_string(LOG_CRIT), "crit");
        cr_assert_str_eq(log_level_to_string(LOG_ERR), "err");
        cr_assert_str_eq(log_level_to_string(LOG_WARNING), "warning");
        cr_assert_str_eq(log_level_to_string(LOG_NOTICE), "notice");
        cr_assert_str_eq(log_level_to_string(LOG_INFO), "info");
        cr_assert_str_eq(log_level_to_string(LOG_DEBUG), "debug");
        cr_assert_str_eq(log_level_to_string(-1), "unknown");
        cr_assert_str_eq(log_level_to_string(8), "unknown");
}

Test(log, level_round_trip) {
        for (int i = 0; i <= 7; i++)
                cr_assert_eq(log_level_from_string(log_level_to_string(i)), i);
}

Test(log, logger_init_plain) {
        struct logger lg;

        unsetenv("JOURNAL_STREAM");
        logger_init(&lg, LOG_NOTICE);
        cr_assert_eq(lg.max_priority, LOG_NOTICE);
        cr_assert_not(lg.journal);
        cr_assert_str_eq(lg.identifier, "mcpvisord");
}

Test(log, logger_init_journal_stream) {
        struct logger lg;
        struct stat st;
        char env[64];

        cr_assert_eq(fstat(STDERR_FILENO, &st), 0);
        snprintf(env, sizeof env, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        setenv("JOURNAL_STREAM", env, 1);
        logger_init(&lg, LOG_INFO);
        cr_assert(lg.journal, "JOURNAL_STREAM names our stderr");

        /* A stale JOURNAL_STREAM (stderr redirected since) must not count. */
        snprintf(env, sizeof env, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
        setenv("JOURNAL_STREAM", env, 1);
        logger_init(&lg, LOG_INFO);
        cr_assert_not(lg.journal);

        setenv("JOURNAL_STREAM", "garbage", 1);
        logger_init(&lg, LOG_INFO);
        cr_assert_not(lg.journal);
}

static void plain_stderr(void) {
        unsetenv("JOURNAL_STREAM");
        cr_redirect_stderr();
}

Test(log, emit_plain, .init = plain_stderr) {
        struct logger lg;

        logger_init(&lg, LOG_INFO);
        log_info(&lg, "hello %d", 5);
        log_debug(&lg, "dropped");
        log_error(&lg, "bad %s", "thing");
        log_emit(&lg, LOG_WARNING, &(struct log_subject){ .server = "fs" }, "slow");
        log_emit(&lg, LOG_NOTICE, &(struct log_subject){ .client = 12 }, "bye");
        log_server_line(&lg, LOG_INFO, "fs", "raw line");
        log_server_line(&lg, LOG_DEBUG, "fs", "dropped too");
        fflush(stderr);
        cr_assert_stderr_eq_str("mcpvisord: info: hello 5\n"
                                "mcpvisord: err: bad thing\n"
                                "mcpvisord: warning: [fs] slow\n"
                                "mcpvisord: notice: [client 12] bye\n"
                                "fs: raw line\n");
}

Test(log, escape) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "", "" },
                { "plain text, caf\xc3\xa9", "plain text, caf\xc3\xa9" },
                { "a\nb", "a\\nb" },
                { "\r\t", "\\r\\t" },
                { "\x1b[31mred\x7f", "\\x1b[31mred\\x7f" },
                { "\x01\x1f", "\\x01\\x1f" },
                { "back\\slash", "back\\slash" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char *out = log_escape(cases[i].in);

                cr_assert_str_eq(out, cases[i].out, "case %zu", i);
                free(out);
        }
}

/* A peer's text (here a clientInfo.name) used to write a line of its own that looked
 * like the daemon's. */
Test(log, emit_plain_one_line_per_record, .init = plain_stderr) {
        struct logger lg;

        logger_init(&lg, LOG_INFO);
        log_emit(&lg, LOG_INFO, &(struct log_subject){ .client = 3 }, "initialized by %s",
                 "x\nmcpvisord: err: [good] ready -> failed: forged");
        log_server_line(&lg, LOG_INFO, "fs", "line\r\nfs: forged\x1b[2J");
        fflush(stderr);
        cr_assert_stderr_eq_str("mcpvisord: info: [client 3] initialized by x\\nmcpvisord: err: [good] ready -> failed: "
                                "forged\n"
                                "fs: line\\r\\nfs: forged\\x1b[2J\n");
}
