/* Unit tests for mcpvisor-exec-credentials: its arguments, the credentials moved into the
 * environment, and the program run as a unit would run it, with a credentials directory
 * of the test's own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credential.h"
#include "exec-credentials.h"
#include "macro.h"
#include "unit-helpers.h"

static char *error;

static void done(void) {
        free(error);
        error = NULL;
        tmpdir_remove();
}

TestSuite(exec_credentials, .fini = done);

static void write_credential(const char *id, const char *data, size_t len) {
        int fd = open(tmp_path(id), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        cr_assert_geq(fd, 0, "%s: %s", id, strerror(errno));
        write_all(fd, data, len);
        close(fd);
}

static int parse(char **argv, struct exec_credentials *c) {
        int argc = 0;

        while (argv[argc])
                argc++;
        free(error);
        error = NULL;
        return exec_credentials_parse(argc, argv, c, &error);
}

Test(exec_credentials, parse) {
        char *argv[] = { "helper", "GITHUB_TOKEN=gh", "_A1=api-key.v2", "--", "/usr/bin/npx", "-y", "--", "pkg", NULL };
        struct exec_credentials c;

        cr_assert_eq(parse(argv, &c), 0, "%s", error);
        cr_assert_eq(c.n_pairs, 2);
        cr_assert_str_eq(c.pairs[0], "GITHUB_TOKEN=gh");
        cr_assert_str_eq(c.pairs[1], "_A1=api-key.v2");
        cr_assert_str_eq(c.command[0], "/usr/bin/npx");
        cr_assert_str_eq(c.command[2], "--", "a later -- is the command's");
        cr_assert_str_eq(c.command[3], "pkg");
        cr_assert_null(c.command[4]);

        char *none[] = { "helper", "--", "true", NULL };
        cr_assert_eq(parse(none, &c), 0, "no credentials: the command alone");
        cr_assert_eq(c.n_pairs, 0);
        cr_assert_str_eq(c.command[0], "true");
}

Test(exec_credentials, parse_errors) {
        static const struct {
                char *argv[6];
                const char *message;
        } bad[] = {
                { { "helper", NULL }, "no '--' before the command" },
                { { "helper", "A=b", "true", NULL }, "'true' is not VAR=ID" },
                { { "helper", "A=b", "--", NULL }, "no command after '--'" },
                { { "helper", "--", NULL }, "no command after '--'" },
                { { "helper", "A", "--", "true", NULL }, "'A' is not VAR=ID" },
                { { "helper", "=id", "--", "true", NULL }, "'=id' is not VAR=ID" },
                { { "helper", "A=", "--", "true", NULL }, "'A=' is not VAR=ID" },
                { { "helper", "1A=id", "--", "true", NULL }, "'1A=id' is not VAR=ID" },
                { { "helper", "A-B=id", "--", "true", NULL }, "'A-B=id' is not VAR=ID" },
                { { "helper", "A=../x", "--", "true", NULL }, "'A=../x' is not VAR=ID" },
                { { "helper", "A=..", "--", "true", NULL }, "'A=..' is not VAR=ID" },
                { { "helper", "A=.", "--", "true", NULL }, "'A=.' is not VAR=ID" },
        };
        struct exec_credentials c;

        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                cr_assert_eq(parse((char **)bad[i].argv, &c), -EINVAL, "%s", bad[i].message);
                cr_assert_not_null(strstr(error, bad[i].message), "\"%s\" does not say \"%s\"", error, bad[i].message);
        }
}

/* The daemon's own reading, shared: one trailing newline dropped, no more. */
Test(exec_credentials, apply) {
        char *argv[] = { "helper", "TOKEN=gh", "TWO=two", "EMPTY=empty", "SAME=gh", "--", "true", NULL };
        struct exec_credentials c;

        write_credential("gh", "s3cret\n", 7);
        write_credential("two", "a\n\n", 3);
        write_credential("empty", "", 0);
        cr_assert_eq(parse(argv, &c), 0);
        cr_assert_eq(setenv("TOKEN", "old", 1), 0);
        cr_assert_eq(exec_credentials_apply(&c, tmpdir_make(), &error), 0, "%s", error);
        cr_assert_str_eq(getenv("TOKEN"), "s3cret");
        cr_assert_str_eq(getenv("TWO"), "a\n");
        cr_assert_str_eq(getenv("EMPTY"), "");
        cr_assert_str_eq(getenv("SAME"), "s3cret");
}

Test(exec_credentials, apply_errors) {
        char *argv[] = { "helper", "TOKEN=gh", "--", "true", NULL };
        char big[CREDENTIAL_MAX + 1];
        struct exec_credentials c;

        cr_assert_eq(parse(argv, &c), 0);
        cr_assert_eq(exec_credentials_apply(&c, NULL, &error), -ENOENT);
        cr_assert_str_eq(error, "no $CREDENTIALS_DIRECTORY: the unit has no LoadCredential= for TOKEN=gh");
        free(error);
        error = NULL;
        cr_assert_eq(exec_credentials_apply(&c, tmpdir_make(), &error), -ENOENT);
        cr_assert_not_null(strstr(error, "TOKEN: cannot read credential 'gh' from "), "%s", error);
        cr_assert_not_null(strstr(error, "No such file or directory"), "%s", error);
        free(error);
        error = NULL;
        memset(big, 'x', sizeof big);
        write_credential("gh", big, sizeof big);
        cr_assert_eq(exec_credentials_apply(&c, tmpdir_make(), &error), -EBADMSG);
        cr_assert_str_eq(error, "TOKEN: credential 'gh' is not text of at most 65536 bytes");
        free(error);
        error = NULL;
        write_credential("gh", "a\0b", 3);
        cr_assert_eq(exec_credentials_apply(&c, tmpdir_make(), &error), -EBADMSG);
        cr_assert_null(getenv("TOKEN"), "nothing set from a bad credential");

        char *none[] = { "helper", "--", "true", NULL };
        cr_assert_eq(parse(none, &c), 0);
        cr_assert_eq(exec_credentials_apply(&c, NULL, &error), 0, "no credentials need no directory");
}

/* ---- the program ---- */

struct run {
        int status;
        char out[4096], err[4096];
};

static void read_into(int fd, char *buf, size_t size) {
        size_t len = 0;
        ssize_t n;

        while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        close(fd);
}

/* Runs the helper with args in an environment of env alone; its exit status and output. */
static void run_helper(char **args, char **env, struct run *ret) {
        char *argv[16] = { EXEC_CREDENTIALS_PATH };
        posix_spawn_file_actions_t actions;
        int out[2], err[2];
        pid_t pid;

        for (size_t i = 0; args[i]; i++)
                argv[i + 1] = args[i];
        cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
        cr_assert_eq(posix_spawn(&pid, argv[0], &actions, NULL, argv, env), 0);
        posix_spawn_file_actions_destroy(&actions);
        close(out[1]);
        close(err[1]);
        read_into(out[0], ret->out, sizeof ret->out);
        read_into(err[0], ret->err, sizeof ret->err);
        cr_assert_eq(waitpid(pid, &ret->status, 0), pid);
        cr_assert(WIFEXITED(ret->status), "status %d", ret->status);
        ret->status = WEXITSTATUS(ret->status);
}

/* As a unit runs it: the secret in the command's environment, the directory not. */
/* The daemon's read for a setting: each error names the setting and the credential, never
 * what the file holds, and says where the credential is given. */
Test(exec_credentials, read_for_a_setting) {
        char big[CREDENTIAL_MAX + 1];
        char *value = NULL;
        const char *dir = tmpdir_make();

        write_credential("gh", "s3cret\n", 7);
        cr_assert_eq(credential_read_for("header", "Authorization", dir, "gh", &value, &error), 0);
        cr_assert_str_eq(value, "s3cret");
        free(value);
        cr_assert_null(error);

        cr_assert_eq(credential_read_for("env", "TOKEN", NULL, "gh", &value, &error), -ENOENT);
        cr_assert_str_eq(error, "env TOKEN needs credential 'gh', but the daemon has no credentials "
                                "(add LoadCredential=gh:/path/to/secret or SetCredential= to mcpvisor.service)");
        free(error);
        error = NULL;
        cr_assert_eq(credential_read_for("header", "X-Key", dir, "missing", &value, &error), -ENOENT);
        cr_assert_not_null(strstr(error, "header X-Key: cannot read credential 'missing' from "), "%s", error);
        cr_assert_not_null(strstr(error, "(check LoadCredential= in mcpvisor.service)"), "%s", error);
        free(error);
        error = NULL;
        memset(big, 'x', sizeof big);
        write_credential("gh", big, sizeof big);
        cr_assert_eq(credential_read_for("env", "TOKEN", dir, "gh", &value, &error), -EBADMSG);
        cr_assert_str_eq(error, "env TOKEN: credential 'gh' is not text of at most 65536 bytes");
        cr_assert_null(strstr(error, "xxxx"));
}

Test(exec_credentials, runs_the_command_with_its_credentials) {
        char dir_var[300], *env[] = { dir_var, "PATH=/usr/bin:/bin", "KEPT=1", NULL };
        struct run r;

        write_credential("gh", "s3cret\n", 7);
        write_credential("api", "k", 1);
        snprintf(dir_var, sizeof dir_var, "CREDENTIALS_DIRECTORY=%s", tmpdir_make());
        run_helper((char *[]){ "TOKEN=gh", "API_KEY=api", "--", "sh", "-c",
                               "printf '%s|%s|%s|%s' \"$TOKEN\" \"$API_KEY\" \"$KEPT\" \"${CREDENTIALS_DIRECTORY-unset}\"", NULL },
                   env, &r);
        cr_assert_eq(r.status, 0, "stderr: %s", r.err);
        cr_assert_str_eq(r.out, "s3cret|k|1|unset");
        cr_assert_str_eq(r.err, "");
}

Test(exec_credentials, exit_statuses) {
        char dir_var[300], *env[] = { dir_var, "PATH=/usr/bin:/bin", NULL };
        struct run r;

        snprintf(dir_var, sizeof dir_var, "CREDENTIALS_DIRECTORY=%s", tmpdir_make());
        run_helper((char *[]){ "TOKEN=missing", "--", "true", NULL }, env, &r);
        cr_assert_eq(r.status, EXEC_CREDENTIALS_FAILED);
        cr_assert_not_null(strstr(r.err, "mcpvisor-exec-credentials: TOKEN: cannot read credential 'missing'"), "%s", r.err);

        run_helper((char *[]){ "TOKEN", "--", "true", NULL }, env, &r);
        cr_assert_eq(r.status, EXEC_CREDENTIALS_FAILED);
        cr_assert_not_null(strstr(r.err, "usage: mcpvisor-exec-credentials VAR=ID [VAR=ID...] -- COMMAND [ARGS...]"), "%s",
                           r.err);

        run_helper((char *[]){ "--", "no-such-program-xyz", NULL }, env, &r);
        cr_assert_eq(r.status, EXEC_CREDENTIALS_NOT_FOUND);
        cr_assert_not_null(strstr(r.err, "cannot run no-such-program-xyz: No such file or directory"), "%s", r.err);

        run_helper((char *[]){ "--", (char *)tmpdir_make(), NULL }, env, &r);
        cr_assert_eq(r.status, EXEC_CREDENTIALS_CANNOT_RUN, "a directory: %s", r.err);

        run_helper((char *[]){ "--", "sh", "-c", "exit 3", NULL }, env, &r);
        cr_assert_eq(r.status, 3, "the command's own status");
}
