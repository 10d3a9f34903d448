/* Unit tests for options.c: mcpvisord's command line. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "paths.h"

static FILE *errf;
static char *errbuf;
static size_t errlen;
static struct options opts;

static void setup(void) {
        errf = open_memstream(&errbuf, &errlen);
        cr_assert_not_null(errf);
}

static void teardown(void) {
        fclose(errf);
        free(errbuf);
}

/* A fresh error stream, so earlier messages cannot satisfy a later check. */
static void reset_err(void) {
        teardown();
        setup();
}

TestSuite(options, .init = setup, .fini = teardown);

static int parse_argv(char **argv) {
        int argc = 0, r;

        while (argv[argc])
                argc++;
        r = options_parse(argc, argv, &opts, errf);
        fflush(errf);
        return r;
}

/* PARSE("-c", "x"): argv[0] is the program name. */
#define PARSE(...) parse_argv((char *[]){ "mcpvisord", __VA_ARGS__, NULL })

static void expect_error(const char *needle) {
        cr_assert_not_null(strstr(errbuf, needle), "error output \"%s\" lacks \"%s\"", errbuf, needle);
        cr_assert_eq(errbuf[errlen - 1], '\n', "one complete line");
}

static void expect_no_output(void) {
        cr_assert_eq(errlen, 0, "unexpected error output: %s", errbuf);
}

Test(options, defaults) {
        char *argv[] = { "mcpvisord", NULL };

        cr_assert_eq(parse_argv(argv), 0);
        cr_assert_eq(opts.action, ACTION_RUN);
        cr_assert_null(opts.config_path);
        cr_assert_null(opts.socket_path);
        cr_assert_null(opts.control_socket_path);
        cr_assert_eq(opts.log_level, -1);
        expect_no_output();
}

/* Each way to write an option with a path, long_opt or short_opt with the path apart or
 * joined to it (a = between for the long one), sets *field to that path, and only that. */
static void expect_path_option(const char *long_opt, const char *short_opt, const char *const *field) {
        char joined[64];

        cr_assert_eq(PARSE((char *)long_opt, "/run/a"), 0);
        cr_assert_str_eq(*field, "/run/a");
        snprintf(joined, sizeof joined, "%s=/run/b", long_opt);
        cr_assert_eq(PARSE(joined), 0);
        cr_assert_str_eq(*field, "/run/b");
        cr_assert_eq(PARSE((char *)short_opt, "/run/c"), 0);
        cr_assert_str_eq(*field, "/run/c");
        snprintf(joined, sizeof joined, "%s/run/d", short_opt);
        cr_assert_eq(PARSE(joined), 0);
        cr_assert_str_eq(*field, "/run/d");
        cr_assert_eq(opts.action, ACTION_RUN);
        cr_assert_eq((opts.config_path != NULL) + (opts.socket_path != NULL) + (opts.control_socket_path != NULL), 1);
        expect_no_output();
}

Test(options, config) {
        expect_path_option("--config", "-c", &opts.config_path);
}

Test(options, socket) {
        expect_path_option("--socket", "-s", &opts.socket_path);
}

Test(options, control_socket) {
        expect_path_option("--control-socket", "-C", &opts.control_socket_path);
}

Test(options, log_level) {
        cr_assert_eq(PARSE("--log-level", "debug"), 0);
        cr_assert_eq(opts.log_level, 7);
        cr_assert_eq(PARSE("--log-level=warn"), 0);
        cr_assert_eq(opts.log_level, 4);
        cr_assert_eq(PARSE("-l", "3"), 0);
        cr_assert_eq(opts.log_level, 3);
        cr_assert_eq(PARSE("-lnotice"), 0);
        cr_assert_eq(opts.log_level, 5);
        expect_no_output();
}

Test(options, check_config) {
        cr_assert_eq(PARSE("--check-config"), 0);
        cr_assert_eq(opts.action, ACTION_CHECK_CONFIG);
        cr_assert_eq(PARSE("--check-config", "-c", "/x.json"), 0);
        cr_assert_eq(opts.action, ACTION_CHECK_CONFIG);
        cr_assert_str_eq(opts.config_path, "/x.json");
}

/* Both spellings of an option that picks what the program does pick action. */
static void expect_action_option(const char *long_opt, const char *short_opt, enum options_action action) {
        cr_assert_eq(PARSE((char *)long_opt), 0);
        cr_assert_eq(opts.action, action);
        cr_assert_eq(PARSE((char *)short_opt), 0);
        cr_assert_eq(opts.action, action);
        expect_no_output();
}

Test(options, help) {
        expect_action_option("--help", "-h", ACTION_HELP);
}

Test(options, version) {
        expect_action_option("--version", "-V", ACTION_VERSION);
}

Test(options, everything) {
        cr_assert_eq(PARSE("-c", "/c.json", "--socket=/m.sock", "-C", "/ctl.sock", "-l", "info"), 0);
        cr_assert_eq(opts.action, ACTION_RUN);
        cr_assert_str_eq(opts.config_path, "/c.json");
        cr_assert_str_eq(opts.socket_path, "/m.sock");
        cr_assert_str_eq(opts.control_socket_path, "/ctl.sock");
        cr_assert_eq(opts.log_level, 6);
}

Test(options, short_cluster) {
        cr_assert_eq(PARSE("-Vc", "/x.json"), 0);
        cr_assert_eq(opts.action, ACTION_VERSION);
        cr_assert_str_eq(opts.config_path, "/x.json");
}

Test(options, bad_log_level) {
        cr_assert_eq(PARSE("--log-level", "loud"), -EINVAL);
        expect_error("'loud'");
        expect_error("log level");
        expect_error("debug");
}

Test(options, missing_argument) {
        static const char *const opts_with_arg[] = { "-c", "--config", "-s", "--socket", "-C",
                                                     "--control-socket", "-l", "--log-level" };

        for (size_t i = 0; i < sizeof opts_with_arg / sizeof opts_with_arg[0]; i++) {
                char *argv[] = { "mcpvisord", (char *)opts_with_arg[i], NULL };
                char want[64];

                reset_err();
                cr_assert_eq(parse_argv(argv), -EINVAL, "%s", opts_with_arg[i]);
                snprintf(want, sizeof want, "'%s' needs an argument", opts_with_arg[i]);
                cr_assert_not_null(strstr(errbuf, want), "\"%s\" lacks \"%s\"", errbuf, want);
        }
}

Test(options, unknown_long) {
        cr_assert_eq(PARSE("--bogus"), -EINVAL);
        expect_error("'--bogus'");
        expect_error("--help");
}

Test(options, unknown_short) {
        cr_assert_eq(PARSE("-x"), -EINVAL);
        expect_error("'-x'");
}

Test(options, unknown_after_valid) {
        cr_assert_eq(PARSE("-c", "/a.json", "--nope"), -EINVAL);
        expect_error("'--nope'");
}

/* Regression test; it was a bug in src/options.c:66: argv[optind - 1] names the wrong word when the unknown letter is
 * not the last of a cluster (optind has not advanced yet): "-xh" is reported as
 * "unknown option 'mcpvisord'". */
Test(options, unknown_in_cluster) {
        cr_assert_eq(PARSE("-xh"), -EINVAL);
        expect_error("-x");
        cr_assert_null(strstr(errbuf, "'mcpvisord'"), "%s", errbuf);
}

Test(options, flag_with_argument) {
        cr_assert_eq(PARSE("--help=yes"), -EINVAL);
        expect_error("--help=yes");
}

Test(options, stray_argument) {
        cr_assert_eq(PARSE("extra"), -EINVAL);
        expect_error("unexpected argument 'extra'");
}

Test(options, stray_argument_among_options) {
        /* GNU getopt permutes: the positional is found after the options. */
        cr_assert_eq(PARSE("-c", "/a.json", "stray", "-V"), -EINVAL);
        expect_error("'stray'");
}

Test(options, stray_after_double_dash) {
        cr_assert_eq(PARSE("--", "-V"), -EINVAL);
        expect_error("'-V'");
}

Test(options, double_dash_alone) {
        cr_assert_eq(PARSE("--"), 0);
        cr_assert_eq(opts.action, ACTION_RUN);
}

Test(options, parse_twice) {
        cr_assert_eq(PARSE("-c", "/a.json", "-V"), 0);
        cr_assert_eq(opts.action, ACTION_VERSION);
        /* A fresh parse: nothing carries over from the first. */
        cr_assert_eq(PARSE("-s", "/b.sock"), 0);
        cr_assert_eq(opts.action, ACTION_RUN);
        cr_assert_null(opts.config_path);
        cr_assert_str_eq(opts.socket_path, "/b.sock");
        cr_assert_eq(opts.log_level, -1);
}

Test(options, parse_after_error) {
        /* The first parse stops inside a cluster; getopt's state must be reset. */
        cr_assert_eq(PARSE("-Vl"), -EINVAL);
        cr_assert_eq(PARSE("-h"), 0);
        cr_assert_eq(opts.action, ACTION_HELP);
        cr_assert_eq(PARSE("-x", "-h"), -EINVAL);
        cr_assert_eq(PARSE("-c", "/z.json"), 0);
        cr_assert_str_eq(opts.config_path, "/z.json");
}

Test(options, usage) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        options_usage(f);
        fclose(f);
        cr_assert_not_null(strstr(out, "Usage: mcpvisord"));
        cr_assert_not_null(strstr(out, PATH_DEFAULT_CONFIG));
        static const char *const words[] = { "--config", "--socket", "--control-socket", "--log-level",
                                             "--check-config", "--help", "--version", "FileDescriptorName=mcp" };
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
                cr_assert_not_null(strstr(out, words[i]), "usage lacks %s", words[i]);
        cr_assert_null(strstr(out, "%s"));
        free(out);
}

Test(options, relative_socket_paths_refused) {
        cr_assert_eq(PARSE("--socket", "mcp.sock"), -EINVAL);
        cr_assert_eq(PARSE("-C", "ctl.sock"), -EINVAL);
        cr_assert_eq(PARSE("-s", "/run/x/mcp.sock"), 0);
}
