/* A server's starting environment; see environment.h. */
#include "environment.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credential.h"
#include "macro.h"
#include "run-as.h"
#include "settings.h"
#include "text.h"

/* For a unit, the service manager sets HOME itself, from its User= (which need not be
 * the daemon's user). */
static bool inherited(const char *entry, bool for_unit) {
        static const char *const names[] = { "PATH=", "HOME=", "LANG=", "TZ=", "LC_" };

        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (strncmp(entry, names[i], strlen(names[i])) == 0)
                        return strchr(entry, '=') != NULL && !(for_unit && i == 1);
        return false;
}

const char *environment_get(char *const *env, const char *name) {
        size_t len = strlen(name);

        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
                        return env[i] + len + 1;
        return NULL;
}

/* Replaces an existing NAME= entry or appends one; env has room (see environment_build). */
static int env_put(char **env, size_t *n, const char *name, const char *value) {
        size_t len = strlen(name);
        char *entry;

        if (asprintf(&entry, "%s=%s", name, value) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
                        free(env[i]);
                        env[i] = entry;
                        return 0;
                }
        env[(*n)++] = entry;
        return 0;
}

static void env_drop(char **env, size_t *n, const char *name) {
        size_t len = strlen(name);

        for (size_t i = 0; i < *n; i++)
                if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
                        free(env[i]);
                        env[i] = env[--*n];
                        env[*n] = NULL;
                        return;
                }
}

/* for_unit: the values read from credentials are left out (see environment.h). */
static int put_configured(const struct server_config *s, const char *credentials_dir, bool for_unit, char **env,
                          size_t *n, char **error) {
        for (size_t i = 0; i < s->n_env; i++) {
                const struct env_var *e = &s->env[i];
                _cleanup_free_ char *secret = NULL;
                int r;

                if (e->credential && for_unit)
                        continue;
                if (e->credential) {
                        r = credential_read_for("env", e->name, credentials_dir, e->credential, &secret, error);
                        if (r < 0)
                                return r;
                }
                r = env_put(env, n, e->name, secret ? secret : e->value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Another user's run has that user's HOME, USER and LOGNAME, as a login would, not the
 * daemon's; what the entry's env says still comes after. */
static int put_identity(const struct run_as *as, char **env, size_t *n) {
        int r;

        if (!as)
                return 0;
        if ((r = env_put(env, n, "HOME", as->home)) < 0 || (r = env_put(env, n, "USER", as->user)) < 0)
                return r;
        return env_put(env, n, "LOGNAME", as->user);
}

static int build(const struct server_config *s, char *const *daemon_env, const char *daemon_id, uint64_t instance,
                 const char *credentials_dir, const struct run_as *as, bool for_unit, char ***ret, char **error) {
        size_t n = 0, cap = s->n_env + 7;
        char **env, number[32];
        int r = 0;

        for (size_t i = 0; daemon_env && daemon_env[i]; i++)
                cap++;
        env = calloc(cap + 1, sizeof *env);
        if (!env)
                return -ENOMEM;
        for (size_t i = 0; daemon_env && daemon_env[i] && r == 0; i++)
                if (inherited(daemon_env[i], for_unit))
                        r = (env[n] = strdup(daemon_env[i])) ? (n++, 0) : -ENOMEM;
        if (r == 0 && !environment_get(env, "PATH"))
                r = env_put(env, &n, "PATH", ENVIRONMENT_DEFAULT_PATH);
        if (r == 0)
                r = put_identity(as, env, &n);
        if (r == 0)
                r = put_configured(s, credentials_dir, for_unit, env, &n, error);
        snprintf(number, sizeof number, "%" PRIu64, instance);
        if (r == 0)
                r = env_put(env, &n, ENV_SERVER, s->name);
        if (r == 0)
                r = env_put(env, &n, ENV_INSTANCE, number);
        /* Ours alone to set: a wrong one would let another daemon end these processes. */
        if (r == 0 && daemon_id)
                r = env_put(env, &n, ENV_DAEMON, daemon_id);
        else if (r == 0)
                env_drop(env, &n, ENV_DAEMON);
        if (r < 0) {
                strv_free(env);
                return r;
        }
        *ret = env;
        return 0;
}

int environment_build(const struct server_config *s, char *const *daemon_env, const char *daemon_id,
                      uint64_t instance, const char *credentials_dir, const struct run_as *as, char ***ret,
                      char **error) {
        return build(s, daemon_env, daemon_id, instance, credentials_dir, as, false, ret, error);
}

int environment_build_public(const struct server_config *s, char *const *daemon_env, const char *daemon_id,
                             uint64_t instance, char ***ret) {
        return build(s, daemon_env, daemon_id, instance, NULL, NULL, true, ret, NULL);
}

static bool runnable(const char *path, int *error) {
        struct stat st;

        if (stat(path, &st) < 0) {
                *error = errno;
                return false;
        }
        if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
                *error = EACCES;
                return false;
        }
        return true;
}

int environment_find_program(const char *command, const char *path_list, char **ret) {
        const char *p = path_list;
        int error = ENOENT, seen = ENOENT;

        if (strchr(command, '/'))
                return (*ret = strdup(command)) ? 0 : -ENOMEM;
        while (p && *p) {
                size_t len = strcspn(p, ":");
                _cleanup_free_ char *candidate = NULL;

                /* An empty entry means the current directory, a classic trap: skip it. */
                if (len > 0 && asprintf(&candidate, "%.*s/%s", (int)len, p, command) < 0)
                        return -ENOMEM;
                if (candidate && runnable(candidate, &error)) {
                        *ret = TAKE_PTR(candidate);
                        return 0;
                }
                if (error == EACCES)
                        seen = EACCES;
                p += len + (p[len] == ':');
        }
        return -seen;
}

/* The credential env.PATH is read from, or NULL. */
static const char *path_credential(const struct server_config *s) {
        for (size_t i = 0; i < s->n_env; i++)
                if (strcmp(s->env[i].name, "PATH") == 0)
                        return s->env[i].credential;
        return NULL;
}

bool environment_path_is_credential(const struct server_config *s) {
        return path_credential(s) != NULL;
}

const char *environment_server_path(const struct server_config *s, char *const *daemon_env) {
        const char *path = NULL;

        for (size_t i = 0; i < s->n_env; i++)
                if (strcmp(s->env[i].name, "PATH") == 0 && s->env[i].value)
                        path = s->env[i].value;
        if (!path)
                path = environment_get(daemon_env, "PATH");
        return path ? path : ENVIRONMENT_DEFAULT_PATH;
}

/* A command with a '/' is not looked up: it must be there, relative to the server's cwd. */
static int check_given_path(const struct server_config *s, const char *program) {
        _cleanup_free_ char *joined = NULL;
        struct stat st;
        int error;

        if (program[0] != '/' && s->cwd && asprintf(&joined, "%s/%s", s->cwd, program) < 0)
                return -ENOMEM;
        if (stat(joined ? joined : program, &st) == 0 && S_ISDIR(st.st_mode))
                return -EISDIR;
        return runnable(joined ? joined : program, &error) ? 0 : -error;
}

/* The error is a server's cause, which its clients see: a PATH read from a credential is
 * named, never shown. */
static int explain_program(int r, const struct server_config *s, const char *path_list, char **error) {
        const char *credential = path_credential(s);
        int q;

        if (r == -ENOENT && !strchr(s->command, '/') && credential)
                q = asprintf(error, "command '%s' not found in PATH (from credential '%s') (install it, give an "
                             "absolute path, or set env.PATH)", s->command, credential);
        else if (r == -ENOENT && !strchr(s->command, '/'))
                q = asprintf(error, "command '%s' not found in PATH=%s (install it, give an absolute path, or set env.PATH)",
                             s->command, path_list ? path_list : "");
        else if (r == -ENOENT || r == -ENOTDIR)
                q = asprintf(error, "command '%s' does not exist (check command%s)", s->command,
                             s->command[0] != '/' && s->cwd ? " and cwd" : "");
        else if (r == -EACCES)
                q = asprintf(error, "permission denied running %s (is it executable and readable by this user?)",
                             s->command);
        else
                q = asprintf(error, "cannot run %s: %s", s->command, strerror(-r));
        if (q < 0)
                *error = NULL;
        return r;
}

int environment_find_server_program(const struct server_config *s, const char *path_list, char **ret, char **error) {
        _cleanup_free_ char *program = NULL;
        int r;

        r = environment_find_program(s->command, path_list, &program);
        if (r == 0 && strchr(s->command, '/'))
                r = check_given_path(s, program);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return explain_program(r, s, path_list, error);
        *ret = TAKE_PTR(program);
        return 0;
}

int environment_check_cwd(const struct server_config *s, char **error) {
        struct stat st;
        int q = 0;

        if (!s->cwd)
                return 0;
        if (stat(s->cwd, &st) < 0)
                q = asprintf(error, "cannot use %s as the working directory: %s", s->cwd, strerror(errno));
        else if (!S_ISDIR(st.st_mode))
                q = asprintf(error, "%s is not a directory", s->cwd);
        else
                return 0;
        if (q < 0)
                *error = NULL;
        return -EINVAL;
}
