/* Configurations that cannot work as written: misspelt and repeated keys, other clients'
 * shapes, programs that are not there. mcpvisord --check-config fails on each, naming
 * the JSON path; the daemon skips the servers concerned and runs the others, or refuses
 * a file it cannot read as meant. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct h_daemon D;
static char *out; /* the last run's stdout and stderr */

static void stop(void) {
        h_log_dump_if_verbose(&D);
        h_cleanup(&D);
        free(out);
        out = NULL;
}

TestSuite(config, .fini = stop, .timeout = 60);

/* Runs mcpvisor with config, the extra arguments and env; returns its exit status once it
 * exits by itself, with what it printed in out. */
static int run(const char *config, const char *const *args, const char *const *env) {
        int status;

        free(out);
        h_start(&D, &(struct h_opts){ .config = config, .extra_args = args, .env = env });
        status = h_wait_exit(&D, H_TIMEOUT_MS);
        out = h_log_text(&D);
        cr_assert_neq(status, -1, "mcpvisord did not exit; it printed:\n%s", out);
        cr_assert(WIFEXITED(status), "status %d; it printed:\n%s", status, out);
        h_cleanup(&D);
        return WEXITSTATUS(status);
}

static int check(const char *config) {
        return run(config, (const char *const[]){ "--check-config", NULL }, NULL);
}

#define expect_out(needle) cr_assert_not_null(strstr(out, needle), "no \"%s\" in:\n%s", needle, out)

/* An executable file in the test's directory; its path. */
static const char *make_program(const char *dir, const char *name, mode_t mode) {
        static char path[400];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs("#!/bin/sh\nexit 0\n", f);
        fclose(f);
        cr_assert_eq(chmod(path, mode), 0);
        return path;
}

/* The first case: the server ran without its arguments, and the check said valid. */
Test(config, check_misspelt_key_in_an_entry) {
        cr_assert_eq(check("{\"mcpServers\":{\"fs\":{\"command\":\"cat\",\"arg\":[\"-u\"]}}}"), 1, "%s", out);
        expect_out("error: mcpServers.fs.arg: unknown key; did you mean \"args\"?");
        expect_out("not valid: 1 error, 0 warnings");
        cr_assert_eq(check("{\"mcpServers\":{\"fs\":{\"command\":\"cat\",\"Args\":[]}}}"), 1, "%s", out);
        expect_out("mcpServers.fs.Args: unknown key; did you mean \"args\"?");
}

/* Zero servers because of a wrong key is that key's error, not "valid: 0 servers". */
Test(config, check_misspelt_section) {
        cr_assert_eq(check("{\"mcpservers\":{\"fs\":{\"command\":\"cat\"}}}"), 1, "%s", out);
        expect_out("error: mcpservers: unknown key; did you mean \"mcpServers\"?");
        cr_assert_eq(check("{\"mcpservers\":{}}"), 1, "%s", out);
        cr_assert_eq(check("{\"mcpvisor\":{\"logLevle\":\"debug\"},\"mcpServers\":{}}"), 1, "%s", out);
        expect_out("mcpvisor.logLevle: unknown key; did you mean \"logLevel\"?");
}

Test(config, check_zero_servers_said_plainly) {
        cr_assert_eq(check("{\"mcpServers\":{}}"), 0, "%s", out);
        expect_out("valid: 0 servers, 0 warnings");
        cr_assert_eq(check("{}"), 0, "%s", out);
        expect_out("valid: 0 servers, 0 warnings");
}

Test(config, check_vscode_shape) {
        cr_assert_eq(check("{\"inputs\":[],\"servers\":{\"fs\":{\"type\":\"stdio\",\"command\":\"cat\",\"args\":[],"
                           "\"env\":{\"A\":\"b\"}}}}"),
                     0, "%s", out);
        expect_out("valid: 1 server, 0 warnings");
        cr_assert_eq(check("{\"servers\":{}}"), 0, "%s", out);
        expect_out("valid: 0 servers");
        cr_assert_eq(check("{\"servers\":{\"a\":{\"command\":\"cat\"}},\"mcpServers\":{}}"), 1, "%s", out);
        expect_out("error: servers: both \"mcpServers\" and \"servers\"");
        cr_assert_eq(check("{\"servers\":{\"a\":{\"type\":\"stdio\",\"command\":\"cat\",\"envFile\":\"/srv/.env\"}}}"), 1,
                     "%s", out);
        expect_out("error: servers.a.envFile: not supported");
}

/* Harmless keys of other clients' entries warn; the check still passes. */
Test(config, check_other_clients_keys_warn) {
        cr_assert_eq(check("{\"mcpServers\":{\"fs\":{\"command\":\"cat\",\"autoApprove\":[\"read\"],\"timeout\":60,"
                           "\"disabled\":false,\"description\":\"files\",\"excludeTools\":[\"rm\"]}}}"),
                     0, "%s", out);
        expect_out("warning: mcpServers.fs.autoApprove: ignored");
        expect_out("warning: mcpServers.fs.timeout: ignored");
        cr_assert_null(strstr(out, "excludeTools"), "Gemini CLI's filter is applied, not warned about: %s", out);
        expect_out("valid: 1 server, 2 warnings");
}

Test(config, check_repeated_keys) {
        cr_assert_eq(check("{\"mcpServers\":{\"fs\":{\"command\":\"cat\"},\"fs\":{\"command\":\"cat\",\"args\":[]}}}"), 1,
                     "%s", out);
        expect_out("error: mcpServers.fs: given 2 times in the same object: keep one");
        cr_assert_eq(check("{\"mcpServers\":{\"fs\":{\"command\":\"cat\",\"env\":{\"A\":\"1\",\"A\":\"2\"}}}}"), 1, "%s", out);
        expect_out("error: mcpServers.fs.env.A: given 2 times");
}

/* What only a start would have shown. */
Test(config, check_programs) {
        char config[2048], dir[] = "/tmp/mcpvisor-it-prog-XXXXXX";
        const char *noexec;

        cr_assert_not_null(mkdtemp(dir));
        noexec = make_program(dir, "noexec", 0644);
        snprintf(config, sizeof config,
                 "{\"mcpServers\":{\"gone\":{\"command\":\"no-such-program-xyz\"},"
                 "\"noexec\":{\"command\":\"%s\"},"
                 "\"nowhere\":{\"command\":\"cat\",\"cwd\":\"%s/absent\"},"
                 "\"ok\":{\"command\":\"cat\"},"
                 "\"off\":{\"command\":\"also-no-such-program\",\"disabled\":true}}}",
                 noexec, dir);
        cr_assert_eq(check(config), 1, "%s", out);
        expect_out("error: mcpServers.gone.command: command 'no-such-program-xyz' not found in PATH=");
        expect_out("error: mcpServers.noexec.command: permission denied running");
        expect_out("error: mcpServers.nowhere.cwd: cannot use");
        expect_out("not valid: 3 errors");
        cr_assert_null(strstr(out, "mcpServers.ok"), "a good entry is blamed:\n%s", out);
        cr_assert_null(strstr(out, "mcpServers.off"), "a disabled server is not run, so not checked:\n%s", out);

        /* env.PATH is the server's own PATH */
        make_program(dir, "mine", 0755);
        snprintf(config, sizeof config, "{\"mcpServers\":{\"mine\":{\"command\":\"mine\",\"env\":{\"PATH\":\"%s\"}}}}", dir);
        cr_assert_eq(check(config), 0, "%s", out);
        expect_out("valid: 1 server, 0 warnings");
        snprintf(config, sizeof config, "{\"mcpServers\":{\"x\":{\"command\":\"cat\",\"env\":{\"PATH\":\"%s\"}}}}", dir);
        cr_assert_eq(check(config), 1, "%s", out);
        snprintf(config, sizeof config, "command 'cat' not found in PATH=%s (", dir);
        expect_out(config);
        /* a PATH that is a credential is the service's secret: not looked up in ours */
        cr_assert_eq(check("{\"mcpServers\":{\"x\":{\"command\":\"mine\",\"env\":{\"PATH\":{\"credential\":\"p\"}}}}}"), 0,
                     "%s", out);
        h_remove_tree(dir);
}

/* A server reached by URL has no program to look for: the check used to crash on it. */
Test(config, check_url_server) {
        cr_assert_eq(check("{\"mcpServers\":{\"r\":{\"url\":\"https://mcp.example.com/mcp\"},"
                           "\"s\":{\"type\":\"sse\",\"url\":\"http://127.0.0.1:9/sse\"},\"ok\":{\"command\":\"cat\"}}}"),
                     0, "%s", out);
        expect_out("valid: 3 servers, 0 warnings");
        cr_assert_eq(check("{\"mcpServers\":{\"r\":{\"url\":\"https://mcp.example.com/mcp\"},"
                           "\"gone\":{\"command\":\"no-such-program-xyz\"}}}"),
                     1, "%s", out);
        expect_out("error: mcpServers.gone.command: command 'no-such-program-xyz' not found");
}

/* Outside the service there is no $CREDENTIALS_DIRECTORY: the tokens' credentials are not
 * read (said once), and every other problem, the servers' and the daemon's, is told in the
 * same run. */
Test(config, check_tokens_outside_the_service) {
        const char *tokens = "\"http\":{\"listen\":[\"127.0.0.1:8765\"],\"tokens\":["
                             "{\"token\":{\"credential\":\"alice\"},\"user\":\"root\"},"
                             "{\"token\":{\"credential\":\"bob\"},\"user\":\"root\"}]}";
        char config[2048];
        const char *note;

        snprintf(config, sizeof config, "{\"mcpvisor\":{%s},\"mcpServers\":{\"ok\":{\"command\":\"cat\"}}}", tokens);
        cr_assert_eq(check(config), 0, "%s", out);
        expect_out("valid: 1 server, 0 warnings");
        note = strstr(out, "credentials are not read by --check-config");
        cr_assert_not_null(note, "%s", out);
        cr_assert_null(strstr(note + 1, "credentials are not read"), "said more than once:\n%s", out);
        cr_assert_null(strstr(out, "CREDENTIALS_DIRECTORY to read"), "%s", out);

        /* a token's shape is still checked, and the servers' problems are told beside the daemon's */
        snprintf(config, sizeof config,
                 "{\"mcpvisor\":{%s,\"logLevel\":\"loud\"},\"mcpServers\":{\"gone\":{\"command\":\"no-such-program-xyz\"},"
                 "\"bad\":{\"command\":\"cat\",\"arg\":[]}}}",
                 tokens);
        cr_assert_eq(check(config), 1, "%s", out);
        expect_out("error: mcpvisor.logLevel:");
        expect_out("error: mcpServers.bad.arg: unknown key");
        expect_out("error: mcpServers.gone.command: command 'no-such-program-xyz' not found");
        expect_out("not valid: 3 errors");
        cr_assert_eq(check("{\"mcpvisor\":{\"http\":{\"tokens\":[{\"token\":\"plain\",\"user\":\"root\"}]}}}"), 1, "%s", out);
        expect_out("error: mcpvisor.http.tokens[0].token: expected {\"credential\": ID}");
}

Test(config, check_missing_file) {
        cr_assert_eq(run(NULL, (const char *const[]){ "--check-config", "--config", "/nonexistent/mcpvisor.json", NULL }, NULL),
                     1, "%s", out);
        expect_out("/nonexistent/mcpvisor.json: error: cannot read the file: No such file or directory "
                   "(create it: an empty configuration is {\"mcpServers\": {}})");
}

/* The daemon runs without the default file (no servers until it is created), but the check
 * has nothing to call valid. */
Test(config, check_missing_default_file) {
        char dir[] = "/tmp/mcpvisor-it-xdg-XXXXXX", xdg[300], expected[400], buf[8192];

        if (geteuid() == 0 && access("/etc/mcpvisor/mcpvisor.json", F_OK) == 0)
                cr_skip_test("root's default file exists here: /etc/mcpvisor/mcpvisor.json");
        cr_assert_not_null(mkdtemp(dir));
        snprintf(xdg, sizeof xdg, "XDG_CONFIG_HOME=%s", dir);
        if (geteuid() == 0)
                snprintf(expected, sizeof expected, "/etc/mcpvisor/mcpvisor.json: error: cannot read the file");
        else
                snprintf(expected, sizeof expected, "%s/mcpvisor/mcpvisor.json: error: cannot read the file", dir);
        cr_assert_eq(h_run_daemon((const char *const[]){ "--check-config", NULL }, (char *[]){ xdg, NULL }, buf, sizeof buf),
                     1, "%s", buf);
        free(out);
        out = strdup(buf);
        expect_out(expected);
        expect_out("{\"mcpServers\": {}}");
        h_remove_tree(dir);
}

/* The daemon keeps failures apart: entries with errors are skipped, a program that is not
 * there fails its own server, and the good one runs. */
Test(config, daemon_skips_bad_entries_and_runs_the_rest) {
        char config[2048];
        const char *demo = h_demo_server_path();

        snprintf(config, sizeof config,
                 "{\"mcpServers\":{\"good\":{\"command\":\"%s\"},"
                 "\"typo\":{\"command\":\"%s\",\"arg\":[]},"
                 "\"twice\":{\"command\":\"%s\"},\"twice\":{\"command\":\"%s\"},"
                 "\"gone\":{\"command\":\"no-such-program-xyz\"}}}",
                 demo, demo, demo, demo);
        h_start(&D, &(struct h_opts){ .config = config });
        cr_assert(h_notify_wait(&D, "STATUS=1/2 servers ready; gone failed", H_TIMEOUT_MS), "got %s", D.notices);
        cr_assert(h_log_wait(&D, "error: mcpServers.typo.arg: unknown key; did you mean \"args\"?", 0));
        cr_assert(h_log_wait(&D, "error: mcpServers.twice: given 2 times", 0));
        cr_assert(h_log_wait(&D, "2 errors: the servers concerned are skipped", 0));
        cr_assert(h_log_wait(&D, "[gone] stopped -> failed: cannot start: command 'no-such-program-xyz' not found in PATH", 0));
}

/* The pid and state of the one server, from the control socket's status. */
static pid_t server_pid(const char **ret_state) {
        static char state[32];
        json_object *r = h_control(&D, "status", NULL);
        json_object *row = json_object_array_get_idx(h_get(r, "result.servers"), 0);
        pid_t pid;

        cr_assert_not_null(row, "%s", h_json_text(r));
        pid = (pid_t)json_object_get_int(h_get(row, "pid"));
        snprintf(state, sizeof state, "%s", h_str(row, "state"));
        json_object_put(r);
        *ret_state = state;
        return pid;
}

/* A NUL (\u0000) in an env value cut it short there on its way to the server, silently
 * (issue 14 item 13): --check-config refuses it naming its JSON path, and a reload that
 * brings one changes nothing: the server keeps running with the value it had. */
Test(config, nul_in_an_env_value_is_refused) {
        static const char *const shape = "{\"mcpServers\":{\"s\":{\"command\":\"%s\",\"env\":{\"TOKEN\":\"%s\"}}}}";
        char good[1024], bad[1024], env[65536];
        const char *state;
        json_object *r, *p;
        pid_t pid, again;
        size_t len;
        FILE *f;

        snprintf(bad, sizeof bad, shape, h_demo_server_path(), "secret\\u0000tail");
        cr_assert_eq(check(bad), 1, "%s", out);
        expect_out("error: mcpServers.s.env.TOKEN: contains a NUL character (\\u0000)");
        expect_out("not valid: 1 error");

        snprintf(good, sizeof good, shape, h_demo_server_path(), "secret");
        h_start(&D, &(struct h_opts){ .config = good });
        cr_assert(h_notify_wait(&D, "STATUS=1/1 servers ready", H_TIMEOUT_MS), "got %s", D.notices);
        pid = server_pid(&state);
        cr_assert_gt(pid, 0);
        f = fopen(D.config, "we");
        cr_assert_not_null(f);
        fputs(bad, f);
        fclose(f);
        r = h_control(&D, "reload", NULL);
        cr_assert_eq(h_error_code(r), -32000, "expected a reload error: %s", h_json_text(r));
        p = json_object_array_get_idx(h_get(r, "error.data.problems"), 0);
        cr_assert_not_null(p, "%s", h_json_text(r));
        cr_assert_str_eq(h_str(p, "path"), "mcpServers.s.env.TOKEN", "%s", h_json_text(r));
        cr_assert_str_eq(h_str(p, "severity"), "error");
        cr_assert(strstr(h_str(p, "message"), "NUL"), "%s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "mcpServers.s.env.TOKEN: contains a NUL character", 0));
        cr_assert(h_log_wait(&D, "configuration not reloaded (1 error); nothing changed", 0));
        again = server_pid(&state);
        cr_assert_eq(again, pid, "the server was restarted");
        cr_assert_str_eq(state, "ready");
        len = h_read_environ(pid, env, sizeof env);
        cr_assert_gt(len, 0);
        cr_assert(h_environ_has(env, len, "TOKEN=secret", true), "the server's TOKEN changed");
        cr_assert_eq(h_log_count(&D, " -> stopping"), 0, "a server was stopped");
}

/* A file that cannot be read as meant is refused whole, as before. */
Test(config, daemon_refuses_a_misspelt_section) {
        cr_assert_neq(run("{\"mcpservers\":{\"fs\":{\"command\":\"cat\"}}}", NULL, NULL), 0, "%s", out);
        expect_out("mcpservers: unknown key; did you mean \"mcpServers\"?");
        cr_assert_neq(run("{\"mcpvisor\":{\"logLevel\":\"err\",\"logLevel\":\"info\"}}", NULL, NULL), 0, "%s", out);
        expect_out("mcpvisor.logLevel: given 2 times");
}

/* A FIFO named *.json beside the file (or as the file) made the open wait for a writer:
 * --check-config and the start-up hung. It is refused as what it is, like a drop-in that
 * cannot be read; a directory too. */
Test(config, fifo_config_files_are_refused) {
        char dir[] = "/tmp/mcpvisor-it-fifo-XXXXXX", main_path[300], dropins[300], fifo[400], expected[500];
        FILE *f;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(main_path, sizeof main_path, "%s/mcpvisor.json", dir);
        f = fopen(main_path, "we");
        cr_assert_not_null(f);
        fputs("{\"mcpServers\":{}}\n", f);
        cr_assert_eq(fclose(f), 0);
        snprintf(dropins, sizeof dropins, "%s/mcpvisor.d", dir);
        cr_assert_eq(mkdir(dropins, 0755), 0);
        snprintf(fifo, sizeof fifo, "%s/pipe.json", dropins);
        cr_assert_eq(mkfifo(fifo, 0644), 0);
        snprintf(expected, sizeof expected, "%s: error: cannot read the file: it is a FIFO; only regular files are read",
                 fifo);

        cr_assert_eq(run(NULL, (const char *const[]){ "--check-config", "--config", main_path, NULL }, NULL), 1, "%s",
                     out);
        expect_out(expected);
        cr_assert_eq(run(NULL, (const char *const[]){ "--config", main_path, NULL }, NULL), 1, "%s", out);
        expect_out(expected);

        /* the main file itself */
        cr_assert_eq(run(NULL, (const char *const[]){ "--check-config", "--config", fifo, NULL }, NULL), 1, "%s", out);
        expect_out(expected);
        cr_assert_eq(run(NULL, (const char *const[]){ "--check-config", "--config", dropins, NULL }, NULL), 1, "%s",
                     out);
        snprintf(expected, sizeof expected, "%s: error: cannot read the file: it is a directory", dropins);
        expect_out(expected);
        h_remove_tree(dir);
}

/* The exec launcher cannot confine: a confinement key it would have to ignore is an
 * error naming the key, whichever of the server and the daemon chose exec. */
Test(config, check_confinement_needs_systemd) {
        cr_assert_eq(check("{\"mcpvisor\":{\"launcher\":\"exec\"},\"mcpServers\":{\"fs\":{\"command\":\"cat\",\"memoryMax\":\"256M\"},"
                           "\"ok\":{\"command\":\"cat\"}}}"),
                     1, "%s", out);
        expect_out("error: mcpServers.fs.memoryMax: needs the systemd launcher: the exec launcher cannot confine a server, and "
                   "this server's launcher is \"exec\" (the daemon's, mcpvisor.launcher)");
        expect_out("not valid: 1 error");
        cr_assert_eq(check("{\"mcpServers\":{\"fs\":{\"command\":\"cat\",\"launcher\":\"exec\",\"sandbox\":\"strict\"}}}"), 1,
                     "%s", out);
        expect_out("error: mcpServers.fs.sandbox: needs the systemd launcher");
        cr_assert_eq(check("{\"mcpServers\":{\"fs\":{\"command\":\"cat\",\"sandbox\":\"strict\",\"memoryMax\":\"1G\","
                           "\"tasksMax\":32,\"cpuQuota\":\"50%\",\"network\":false,\"stateDirectory\":true}}}"),
                     0, "%s", out);
        expect_out("valid: 1 server, 0 warnings");
}
