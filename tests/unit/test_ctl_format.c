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

Test(ctl_format, tables_align_columns) {
        static const char *const header[] = { "NAME", "STATE", "LAST" };
        struct ctl_table t;
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);

        cr_assert_not_null(out);
        cr_assert_eq(ctl_table_init(&t, header, 3), 0);
        for (const char *const *c = (const char *const[]){ "github", "ready", "-", "fs", "backoff", "exit status 1", NULL }; *c; c++)
                cr_assert_eq(ctl_table_add(&t, *c), 0);
        ctl_table_print(&t, out);
        ctl_table_done(&t);
        fclose(out);
        cr_expect_str_eq(text,
                         "NAME    STATE    LAST\n"
                         "github  ready    -\n"
                         "fs      backoff  exit status 1\n");
        free(text);
}
