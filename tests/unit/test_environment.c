/* Unit tests for environment.c: a server's clean environment, credentials read into it,
 * and the program looked up in that environment's PATH. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "environment.h"
#include "run-as.h"
#include "settings.h"
#include "unit-helpers.h"

static const char *tmpdir;
static char **env;
static char *error;
static char *found; /* environment_find_program's answer */

static void setup(void) {
        tmpdir = tmpdir_make();
        env = NULL;
        error = NULL;
        found = NULL;
}

static void teardown(void) {
        strv_free(env);
        free(error);
        free(found);
        tmpdir_remove();
}

TestSuite(environment, .init = setup, .fini = teardown);

static void write_file(const char *path, const void *data, size_t len, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

        cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, data, len), (ssize_t)len);
        cr_assert_eq(fchmod(fd, mode), 0);
        close(fd);
}

static size_t count(char *const *strv) {
        size_t n = 0;

        while (strv && strv[n])
                n++;
        return n;
}

/* How many entries start with "name=". */
static unsigned count_named(char *const *strv, const char *name) {
        size_t len = strlen(name);
        unsigned n = 0;

        for (size_t i = 0; strv && strv[i]; i++)
                if (strncmp(strv[i], name, len) == 0 && strv[i][len] == '=')
                        n++;
        return n;
}

static int build_for(const char *daemon_id, struct env_var *vars, size_t n_vars, char **daemon_env, uint64_t instance,
                     const char *creds) {
        struct server_config s = { .name = (char *)"github", .command = (char *)"npx", .env = vars, .n_env = n_vars };

        strv_free(env);
        env = NULL;
        free(error);
        error = NULL;
        return environment_build(&s, daemon_env, daemon_id, instance, creds, NULL, &env, &error);
}

static int build(struct env_var *vars, size_t n_vars, char **daemon_env, uint64_t instance, const char *creds) {
        return build_for(NULL, vars, n_vars, daemon_env, instance, creds);
}

/* Another user's run has that user's HOME, USER and LOGNAME, not the daemon's HOME; what the
 * entry's env says still comes last. */
Test(environment, run_as_user_identity) {
        char *daemon_env[] = { "PATH=/usr/bin", "HOME=/var/lib/mcpvisor", "USER=mcpvisor", "LOGNAME=mcpvisor", NULL };
        struct run_as alice = { .uid = 1000, .gid = 1000, .user = (char *)"alice", .home = (char *)"/home/alice" };
        struct env_var home = { .name = (char *)"HOME", .value = (char *)"/srv/alice" };
        struct server_config s = { .name = (char *)"fs", .command = (char *)"npx" };

        cr_assert_eq(environment_build(&s, daemon_env, NULL, 3, NULL, &alice, &env, &error), 0);
        cr_assert_str_eq(environment_get(env, "HOME"), "/home/alice");
        cr_assert_str_eq(environment_get(env, "USER"), "alice");
        cr_assert_str_eq(environment_get(env, "LOGNAME"), "alice");
        cr_assert_eq(count_named(env, "HOME"), 1);
        strv_free(env);
        env = NULL;
        s.env = &home;
        s.n_env = 1;
        cr_assert_eq(environment_build(&s, daemon_env, NULL, 3, NULL, &alice, &env, &error), 0);
        cr_assert_str_eq(environment_get(env, "HOME"), "/srv/alice", "the entry's env is the last word");
        cr_assert_str_eq(environment_get(env, "USER"), "alice");
        strv_free(env);
        env = NULL;
        /* the daemon's own user: as before, no USER or LOGNAME of the daemon's passed on */
        cr_assert_eq(environment_build(&(struct server_config){ .name = (char *)"fs", .command = (char *)"npx" },
                                       daemon_env, NULL, 3, NULL, NULL, &env, &error), 0);
        cr_assert_str_eq(environment_get(env, "HOME"), "/var/lib/mcpvisor");
        cr_assert_null(environment_get(env, "USER"));
        cr_assert_null(environment_get(env, "LOGNAME"));
}

Test(environment, get) {
        char *e[] = { "A=1", "AB=2", "B=", "C", NULL };

        cr_assert_str_eq(environment_get(e, "A"), "1");
        cr_assert_str_eq(environment_get(e, "AB"), "2");
        cr_assert_str_eq(environment_get(e, "B"), "");
        cr_assert_null(environment_get(e, "C"), "an entry without '=' has no value");
        cr_assert_null(environment_get(e, "D"));
        cr_assert_null(environment_get(NULL, "A"));
}

Test(environment, only_allowed_names_inherited) {
        char *daemon_env[] = {
                "PATH=/opt/bin:/usr/bin", "HOME=/var/lib/mcpvisor", "LANG=C.UTF-8", "LC_ALL=C", "LC_CTYPE=en_US.UTF-8",
                "TZ=Europe/Berlin", "USER=mcpvisor", "LANGUAGE=de", "PATHEXT=.exe", "TZDIR=/x", "HOMEDIR=/y",
                "NOTIFY_SOCKET=/run/systemd/notify", "LISTEN_FDS=2", "LISTEN_PID=1", "LISTEN_FDNAMES=a:b",
                "WATCHDOG_USEC=1000", "WATCHDOG_PID=1", "JOURNAL_STREAM=8:123", "CREDENTIALS_DIRECTORY=/run/credentials/x",
                "INVOCATION_ID=abc", "LD_PRELOAD=/evil.so", "SECRET=1", NULL,
        };

        cr_assert_eq(build(NULL, 0, daemon_env, 7, NULL), 0);
        cr_assert_null(error);
        cr_assert_str_eq(environment_get(env, "PATH"), "/opt/bin:/usr/bin");
        cr_assert_str_eq(environment_get(env, "HOME"), "/var/lib/mcpvisor");
        cr_assert_str_eq(environment_get(env, "LANG"), "C.UTF-8");
        cr_assert_str_eq(environment_get(env, "LC_ALL"), "C");
        cr_assert_str_eq(environment_get(env, "LC_CTYPE"), "en_US.UTF-8");
        cr_assert_str_eq(environment_get(env, "TZ"), "Europe/Berlin");
        cr_assert_str_eq(environment_get(env, ENV_SERVER), "github");
        cr_assert_str_eq(environment_get(env, ENV_INSTANCE), "7");
        cr_assert_eq(count(env), 8, "unexpected extra entries");
        static const char *const never[] = { "USER", "LANGUAGE", "PATHEXT", "TZDIR", "HOMEDIR", "NOTIFY_SOCKET",
                                             "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC",
                                             "WATCHDOG_PID", "JOURNAL_STREAM", "CREDENTIALS_DIRECTORY",
                                             "INVOCATION_ID", "LD_PRELOAD", "SECRET" };
        for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
                cr_assert_null(environment_get(env, never[i]), "%s must not be inherited", never[i]);
}

/* What a unit's Environment= may show: no value read from a credential (the unit loads
 * those itself), no daemon's HOME (systemd sets the unit user's), the rest as for exec. */
Test(environment, public_for_a_unit) {
        char *daemon_env[] = { "PATH=/opt/bin:/usr/bin", "HOME=/var/lib/mcpvisor", "LANG=C.UTF-8", "TZ=UTC",
                               "CREDENTIALS_DIRECTORY=/run/credentials/mcpvisor.service", "SECRET=1", NULL };
        struct env_var vars[] = { { .name = "PLAIN", .value = "x" }, { .name = "GITHUB_TOKEN", .credential = "gh-token" },
                                  { .name = "PATH", .credential = "path" } };
        struct server_config s = { .name = (char *)"github", .command = (char *)"npx", .env = vars, .n_env = 3 };

        strv_free(env);
        env = NULL;
        cr_assert_eq(environment_build_public(&s, daemon_env, "/run/mcpvisor/mcp.sock", 9, &env), 0,
                     "credentials are not read, so a missing directory is no error");
        cr_assert_str_eq(environment_get(env, "PATH"), "/opt/bin:/usr/bin", "a PATH credential is set by the helper");
        cr_assert_null(environment_get(env, "HOME"));
        cr_assert_null(environment_get(env, "GITHUB_TOKEN"));
        cr_assert_null(environment_get(env, "CREDENTIALS_DIRECTORY"));
        cr_assert_null(environment_get(env, "SECRET"));
        cr_assert_str_eq(environment_get(env, "PLAIN"), "x");
        cr_assert_str_eq(environment_get(env, "LANG"), "C.UTF-8");
        cr_assert_str_eq(environment_get(env, "TZ"), "UTC");
        cr_assert_str_eq(environment_get(env, ENV_SERVER), "github");
        cr_assert_str_eq(environment_get(env, ENV_INSTANCE), "9");
        cr_assert_str_eq(environment_get(env, ENV_DAEMON), "/run/mcpvisor/mcp.sock");
        cr_assert_eq(count(env), 7);

        /* a HOME the entry sets is its own */
        vars[0] = (struct env_var){ .name = "HOME", .value = "/srv/home" };
        strv_free(env);
        env = NULL;
        cr_assert_eq(environment_build_public(&s, daemon_env, NULL, 1, &env), 0);
        cr_assert_str_eq(environment_get(env, "HOME"), "/srv/home");
}

Test(environment, daemon_entry_without_equals_ignored) {
        char *daemon_env[] = { "LC_BROKEN", "PATH=/bin", NULL };

        cr_assert_eq(build(NULL, 0, daemon_env, 1, NULL), 0);
        cr_assert_eq(count_named(env, "LC_BROKEN"), 0);
        for (size_t i = 0; env[i]; i++)
                cr_assert_neq(strcmp(env[i], "LC_BROKEN"), 0);
        cr_assert_eq(count(env), 3);
}

Test(environment, default_path_when_none) {
        char *daemon_env[] = { "HOME=/root", NULL };

        cr_assert_eq(build(NULL, 0, daemon_env, 1, NULL), 0);
        cr_assert_str_eq(environment_get(env, "PATH"), ENVIRONMENT_DEFAULT_PATH);
        cr_assert_str_eq(environment_get(env, "HOME"), "/root");
        cr_assert_eq(count(env), 4);

        cr_assert_eq(build(NULL, 0, NULL, 1, NULL), 0, "no daemon environment at all");
        cr_assert_str_eq(environment_get(env, "PATH"), ENVIRONMENT_DEFAULT_PATH);
        cr_assert_eq(count(env), 3);
}

Test(environment, empty_inherited_path_kept) {
        char *daemon_env[] = { "PATH=", NULL };

        cr_assert_eq(build(NULL, 0, daemon_env, 1, NULL), 0);
        cr_assert_str_eq(environment_get(env, "PATH"), "");
        cr_assert_eq(count_named(env, "PATH"), 1);
}

Test(environment, configured_overrides_inherited) {
        char *daemon_env[] = { "PATH=/usr/bin", "LANG=C", "HOME=/root", NULL };
        struct env_var vars[] = {
                { .name = "PATH", .value = "/opt/node/bin" },
                { .name = "LANG", .value = "de_DE.UTF-8" },
                { .name = "GITHUB_TOKEN", .value = "t0k" },
                { .name = "EMPTY", .value = "" },
        };

        cr_assert_eq(build(vars, 4, daemon_env, 3, NULL), 0);
        cr_assert_str_eq(environment_get(env, "PATH"), "/opt/node/bin");
        cr_assert_str_eq(environment_get(env, "LANG"), "de_DE.UTF-8");
        cr_assert_str_eq(environment_get(env, "HOME"), "/root");
        cr_assert_str_eq(environment_get(env, "GITHUB_TOKEN"), "t0k");
        cr_assert_str_eq(environment_get(env, "EMPTY"), "");
        cr_assert_eq(count_named(env, "PATH"), 1);
        cr_assert_eq(count_named(env, "LANG"), 1);
        cr_assert_eq(count(env), 7);
}

Test(environment, configured_path_replaces_default) {
        struct env_var vars[] = { { .name = "PATH", .value = "/srv/bin" } };

        cr_assert_eq(build(vars, 1, NULL, 1, NULL), 0);
        cr_assert_str_eq(environment_get(env, "PATH"), "/srv/bin");
        cr_assert_eq(count_named(env, "PATH"), 1);
}

Test(environment, configured_may_set_names_never_inherited) {
        struct env_var vars[] = { { .name = "NODE_OPTIONS", .value = "--max-old-space-size=512" } };
        char *daemon_env[] = { "NODE_OPTIONS=--inspect", NULL };

        cr_assert_eq(build(vars, 1, daemon_env, 1, NULL), 0);
        cr_assert_str_eq(environment_get(env, "NODE_OPTIONS"), "--max-old-space-size=512");
        cr_assert_eq(count_named(env, "NODE_OPTIONS"), 1);
}

Test(environment, identity_always_set_not_overridable) {
        char *daemon_env[] = { "MCPVISOR_SERVER=daemon", "MCPVISOR_INSTANCE=99", "MCPVISOR_DAEMON=/elsewhere",
                               "PATH=/bin", NULL };
        struct env_var vars[] = {
                { .name = ENV_SERVER, .value = "spoofed" },
                { .name = ENV_INSTANCE, .value = "0" },
                { .name = ENV_DAEMON, .value = "/spoofed.sock" },
        };

        cr_assert_eq(build_for("/run/user/1000/mcpvisor/mcp.sock", vars, 3, daemon_env, 18446744073709551615ull, NULL), 0);
        cr_assert_str_eq(environment_get(env, ENV_SERVER), "github");
        cr_assert_str_eq(environment_get(env, ENV_INSTANCE), "18446744073709551615");
        cr_assert_str_eq(environment_get(env, ENV_DAEMON), "/run/user/1000/mcpvisor/mcp.sock");
        cr_assert_eq(count_named(env, ENV_SERVER), 1);
        cr_assert_eq(count_named(env, ENV_INSTANCE), 1);
        cr_assert_eq(count_named(env, ENV_DAEMON), 1);
        /* socket-activated: no id, and the configured or inherited one is not passed on */
        cr_assert_eq(build(vars, 3, daemon_env, 1, NULL), 0);
        cr_assert_null(environment_get(env, ENV_DAEMON));
}

Test(environment, many_entries) {
        struct env_var vars[40];
        char names[40][16], *daemon_env[50];

        for (int i = 0; i < 40; i++) {
                snprintf(names[i], sizeof names[i], "V%d", i);
                vars[i] = (struct env_var){ .name = names[i], .value = names[i] };
        }
        for (int i = 0; i < 49; i++)
                daemon_env[i] = i % 2 ? "LC_X=1" : "JUNK=1";
        daemon_env[49] = NULL;
        cr_assert_eq(build(vars, 40, daemon_env, 1, NULL), 0);
        cr_assert_str_eq(environment_get(env, "V39"), "V39");
        cr_assert_str_eq(environment_get(env, "PATH"), ENVIRONMENT_DEFAULT_PATH);
        cr_assert_eq(count_named(env, "JUNK"), 0);
}

Test(environment, credential_read_newline_stripped) {
        struct env_var vars[] = {
                { .name = "GITHUB_TOKEN", .credential = "gh-token" },
                { .name = "API_KEY", .credential = "api" },
                { .name = "PLAIN", .value = "p" },
        };

        write_file(tmp_path("gh-token"), "ghp_secret\n", 11, 0400);
        write_file(tmp_path("api"), "no-newline", 10, 0400);
        cr_assert_eq(build(vars, 3, NULL, 1, tmpdir), 0);
        cr_assert_null(error);
        cr_assert_str_eq(environment_get(env, "GITHUB_TOKEN"), "ghp_secret");
        cr_assert_str_eq(environment_get(env, "API_KEY"), "no-newline");
        cr_assert_str_eq(environment_get(env, "PLAIN"), "p");
}

Test(environment, credential_only_one_newline_stripped) {
        struct env_var vars[] = { { .name = "T", .credential = "c" } };

        write_file(tmp_path("c"), "two\n\n", 5, 0400);
        cr_assert_eq(build(vars, 1, NULL, 1, tmpdir), 0);
        cr_assert_str_eq(environment_get(env, "T"), "two\n");
}

Test(environment, credential_empty) {
        struct env_var vars[] = { { .name = "T", .credential = "c" } };

        write_file(tmp_path("c"), "", 0, 0400);
        cr_assert_eq(build(vars, 1, NULL, 1, tmpdir), 0);
        cr_assert_str_eq(environment_get(env, "T"), "");
}

Test(environment, credential_overrides_inherited) {
        char *daemon_env[] = { "HOME=/root", NULL };
        struct env_var vars[] = { { .name = "HOME", .credential = "home" } };

        write_file(tmp_path("home"), "/secret/home\n", 13, 0400);
        cr_assert_eq(build(vars, 1, daemon_env, 1, tmpdir), 0);
        cr_assert_str_eq(environment_get(env, "HOME"), "/secret/home");
        cr_assert_eq(count_named(env, "HOME"), 1);
}

Test(environment, credential_missing) {
        struct env_var vars[] = { { .name = "GITHUB_TOKEN", .credential = "gh-token" } };

        cr_assert_eq(build(vars, 1, NULL, 1, tmpdir), -ENOENT);
        cr_assert_null(env, "nothing returned on failure");
        cr_assert_not_null(error);
        cr_assert(strstr(error, "'gh-token'"), "error does not name the credential: %s", error);
        cr_assert(strstr(error, "GITHUB_TOKEN"), "error does not name the variable: %s", error);
}

Test(environment, credential_without_credentials_dir) {
        struct env_var vars[] = { { .name = "PLAIN", .value = "x" }, { .name = "GITHUB_TOKEN", .credential = "gh-token" } };

        cr_assert_lt(build(vars, 2, NULL, 1, NULL), 0);
        cr_assert_null(env);
        cr_assert_not_null(error);
        cr_assert(strstr(error, "gh-token"), "error does not name the credential: %s", error);
        cr_assert(strstr(error, "LoadCredential="), "error does not say how to fix it: %s", error);
}

Test(environment, credential_oversized) {
        struct env_var vars[] = { { .name = "T", .credential = "big" } };
        size_t len = 64 * 1024 + 1;
        char *data = malloc(len);

        cr_assert_not_null(data);
        memset(data, 'a', len);
        write_file(tmp_path("big"), data, len, 0400);
        cr_assert_lt(build(vars, 1, NULL, 1, tmpdir), 0);
        cr_assert_null(env);
        cr_assert_not_null(error);
        cr_assert(strstr(error, "'big'"), "error does not name the credential: %s", error);

        /* Exactly the limit is fine. */
        write_file(tmp_path("big"), data, len - 1, 0400);
        cr_assert_eq(build(vars, 1, NULL, 1, tmpdir), 0, "%s", error ? error : "");
        cr_assert_eq(strlen(environment_get(env, "T")), len - 1);
        free(data);
}

Test(environment, credential_with_nul) {
        struct env_var vars[] = { { .name = "T", .credential = "bin" } };

        write_file(tmp_path("bin"), "abc\0def\n", 8, 0400);
        cr_assert_lt(build(vars, 1, NULL, 1, tmpdir), 0);
        cr_assert_null(env);
        cr_assert_not_null(error);
        cr_assert(strstr(error, "'bin'"), "error does not name the credential: %s", error);
}

Test(environment, credential_is_directory) {
        struct env_var vars[] = { { .name = "T", .credential = "d" } };

        cr_assert_eq(mkdir(tmp_path("d"), 0700), 0);
        cr_assert_lt(build(vars, 1, NULL, 1, tmpdir), 0);
        cr_assert_null(env);
        cr_assert_not_null(error);
        cr_assert(strstr(error, "'d'"), "error does not name the credential: %s", error);
}

/* An executable file at tmpdir/dir/name. */
static void make_program(const char *dir, const char *name, mode_t mode) {
        char path[256];

        mkdir(tmp_path(dir), 0755);
        snprintf(path, sizeof path, "%s/%s/%s", tmpdir, dir, name);
        write_file(path, "#!/bin/sh\n", 10, mode);
}

static void free_found(void) {
        free(found);
        found = NULL;
}

Test(environment, find_with_slash_used_as_is) {
        cr_assert_eq(environment_find_program("./server.js", "/nonexistent", &found), 0);
        cr_assert_str_eq(found, "./server.js");
        free_found();
        cr_assert_eq(environment_find_program("/usr/bin/does-not-exist-mcpvisor", NULL, &found), 0);
        cr_assert_str_eq(found, "/usr/bin/does-not-exist-mcpvisor");
        free_found();
        cr_assert_eq(environment_find_program("bin/x", "", &found), 0);
        cr_assert_str_eq(found, "bin/x");
}

Test(environment, find_in_second_path_entry) {
        char path_list[300];

        make_program("a", "other", 0755);
        make_program("b", "prog", 0755);
        snprintf(path_list, sizeof path_list, "%s:%s", tmp_path("a"), tmp_path("b"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), 0);
        cr_assert_str_eq(found, tmp_path("b/prog"));
}

Test(environment, find_first_match_wins) {
        char path_list[300];

        make_program("a", "prog", 0755);
        make_program("b", "prog", 0755);
        snprintf(path_list, sizeof path_list, "%s:%s", tmp_path("a"), tmp_path("b"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), 0);
        cr_assert_str_eq(found, tmp_path("a/prog"));
}

Test(environment, find_not_executable) {
        char path_list[300];

        make_program("a", "prog", 0644);
        snprintf(path_list, sizeof path_list, "%s", tmp_path("a"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), -EACCES);
        cr_assert_null(found);
}

Test(environment, find_directory_not_runnable) {
        char path_list[300];

        mkdir(tmp_path("a"), 0755);
        cr_assert_eq(mkdir(tmp_path("a/prog"), 0755), 0);
        snprintf(path_list, sizeof path_list, "%s", tmp_path("a"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), -EACCES);
}

Test(environment, find_skips_non_executable_for_later_match) {
        char path_list[300];

        make_program("a", "prog", 0644);
        make_program("b", "prog", 0755);
        snprintf(path_list, sizeof path_list, "%s:%s", tmp_path("a"), tmp_path("b"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), 0);
        cr_assert_str_eq(found, tmp_path("b/prog"));
}

Test(environment, find_eacces_reported_over_later_enoent) {
        char path_list[300];

        make_program("a", "prog", 0644);
        mkdir(tmp_path("b"), 0755);
        snprintf(path_list, sizeof path_list, "%s:%s:/nonexistent-mcpvisor", tmp_path("a"), tmp_path("b"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), -EACCES);
}

Test(environment, find_missing) {
        char path_list[300];

        mkdir(tmp_path("a"), 0755);
        snprintf(path_list, sizeof path_list, "%s:/nonexistent-mcpvisor:/etc/passwd", tmp_path("a"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), -ENOENT);
        cr_assert_null(found);
        cr_assert_eq(environment_find_program("prog", "", &found), -ENOENT);
        cr_assert_eq(environment_find_program("prog", NULL, &found), -ENOENT);
}

Test(environment, find_empty_entries_skipped) {
        char path_list[300], cwd[4096];

        /* A runnable "prog" in the current directory must not be found through an empty entry. */
        cr_assert_not_null(getcwd(cwd, sizeof cwd));
        make_program("here", "prog", 0755);
        cr_assert_eq(chdir(tmp_path("here")), 0);
        cr_assert_eq(environment_find_program("prog", ":", &found), -ENOENT);
        cr_assert_eq(environment_find_program("prog", "::", &found), -ENOENT);
        cr_assert_eq(environment_find_program("prog", "/nonexistent-mcpvisor:", &found), -ENOENT);
        cr_assert_eq(environment_find_program("prog", ":/nonexistent-mcpvisor", &found), -ENOENT);
        cr_assert_null(found);

        make_program("b", "prog", 0755);
        snprintf(path_list, sizeof path_list, "::%s:", tmp_path("b"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), 0);
        cr_assert_str_eq(found, tmp_path("b/prog"));
        cr_assert_eq(chdir(cwd), 0);
}

Test(environment, find_trailing_slash_in_entry) {
        char path_list[300];

        make_program("b", "prog", 0755);
        snprintf(path_list, sizeof path_list, "%s/", tmp_path("b"));
        cr_assert_eq(environment_find_program("prog", path_list, &found), 0);
        cr_assert_eq(access(found, X_OK), 0, "%s", found);
}

/* ---- what a start (and mcpvisord --check-config) says about a program ---- */

Test(environment, server_path) {
        struct env_var path_var = { .name = (char *)"PATH", .value = (char *)"/opt/x/bin" };
        struct env_var secret = { .name = (char *)"PATH", .credential = (char *)"p" };
        struct server_config s = { .command = (char *)"x" };
        char *daemon_env[] = { (char *)"PATH=/usr/bin:/bin", NULL };

        cr_assert_str_eq(environment_server_path(&s, daemon_env), "/usr/bin:/bin");
        cr_assert_str_eq(environment_server_path(&s, NULL), ENVIRONMENT_DEFAULT_PATH);
        s.env = &path_var;
        s.n_env = 1;
        cr_assert_str_eq(environment_server_path(&s, daemon_env), "/opt/x/bin");
        /* the same answer as the environment the server gets */
        cr_assert_eq(environment_build(&(struct server_config){ .name = (char *)"x", .env = &path_var, .n_env = 1 },
                                       daemon_env, NULL, 1, NULL, NULL, &env, &error),
                     0);
        cr_assert_str_eq(environment_get(env, "PATH"), environment_server_path(&s, daemon_env));
        s.env = &secret;
        cr_assert_str_eq(environment_server_path(&s, daemon_env), "/usr/bin:/bin", "a credential is unknown until the start");
}

static int find_server(const char *command, const char *cwd, const char *path_list) {
        struct server_config s = { .command = (char *)command, .cwd = (char *)cwd };

        free_found();
        free(error);
        error = NULL;
        return environment_find_server_program(&s, path_list, &found, &error);
}

Test(environment, server_program_found) {
        char path_list[300];

        make_program("b", "prog", 0755);
        snprintf(path_list, sizeof path_list, "/nonexistent-mcpvisor:%s", tmp_path("b"));
        cr_assert_eq(find_server("prog", NULL, path_list), 0);
        cr_assert_str_eq(found, tmp_path("b/prog"));
        cr_assert_null(error);
        cr_assert_eq(find_server(tmp_path("b/prog"), NULL, NULL), 0);
        cr_assert_eq(find_server("./prog", tmp_path("b"), NULL), 0, "relative to cwd: %s", error);
        cr_assert_str_eq(found, "./prog", "exec'd as written, after the chdir");
}

Test(environment, server_program_not_found) {
        cr_assert_eq(find_server("no-such-prog", NULL, "/nonexistent-mcpvisor:/also-not"), -ENOENT);
        cr_assert_null(found);
        cr_assert_str_eq(error, "command 'no-such-prog' not found in PATH=/nonexistent-mcpvisor:/also-not "
                                "(install it, give an absolute path, or set env.PATH)");
        cr_assert_eq(find_server("/nonexistent-mcpvisor/prog", NULL, NULL), -ENOENT, "a path is checked, not looked up");
        cr_assert_str_eq(error, "command '/nonexistent-mcpvisor/prog' does not exist (check command)");
        cr_assert_eq(find_server("./prog", tmp_path(""), NULL), -ENOENT);
        cr_assert_str_eq(error, "command './prog' does not exist (check command and cwd)");
}

/* A PATH read from a credential is a secret: the error (a cause clients see) names the
 * credential, never its value. */
Test(environment, server_program_not_found_in_a_credential_path) {
        struct env_var vars[] = { { .name = "PATH", .credential = "path" } };
        struct server_config s = { .command = (char *)"no-such-prog", .env = vars, .n_env = 1 };

        cr_assert_eq(environment_find_server_program(&s, "/secret-mcpvisor:/also-not", &found, &error), -ENOENT);
        cr_assert_str_eq(error, "command 'no-such-prog' not found in PATH (from credential 'path') "
                                "(install it, give an absolute path, or set env.PATH)");
}

Test(environment, server_program_not_runnable) {
        char path_list[300];

        make_program("a", "prog", 0644);
        snprintf(path_list, sizeof path_list, "%s", tmp_path("a"));
        cr_assert_eq(find_server("prog", NULL, path_list), -EACCES);
        cr_assert(strstr(error, "permission denied running prog"), "%s", error);
        cr_assert_eq(find_server(tmp_path("a/prog"), NULL, NULL), -EACCES);
        cr_assert(strstr(error, "permission denied running"), "%s", error);
        cr_assert_eq(find_server(tmp_path("a"), NULL, NULL), -EISDIR);
        cr_assert(strstr(error, "Is a directory"), "%s", error);
}

Test(environment, check_cwd) {
        struct server_config s = { .command = (char *)"x" };

        cr_assert_eq(environment_check_cwd(&s, &error), 0, "no cwd: the daemon's");
        s.cwd = (char *)tmpdir;
        cr_assert_eq(environment_check_cwd(&s, &error), 0);
        s.cwd = (char *)"/nonexistent-mcpvisor";
        cr_assert_eq(environment_check_cwd(&s, &error), -EINVAL);
        cr_assert_str_eq(error, "cannot use /nonexistent-mcpvisor as the working directory: No such file or directory");
        free(error);
        error = NULL;
        s.cwd = (char *)"/etc/passwd";
        cr_assert_eq(environment_check_cwd(&s, &error), -EINVAL);
        cr_assert_str_eq(error, "/etc/passwd is not a directory");
}
