/* mcpvisord: options, configuration, then the daemon's loop. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"
#include "daemon.h"
#include "environment.h"
#include "options.h"
#include "paths.h"
#include "version.h"

static void print_problems(const struct config_problems *p, FILE *out) {
        for (size_t i = 0; i < p->count; i++) {
                const struct config_problem *q = &p->items[i];
                fprintf(out, "%s: %s%s%s%s\n", q->file ? q->file : "(config)",
                        q->severity == PROBLEM_ERROR ? "error: " : "warning: ", q->path,
                        q->path[0] ? ": " : "", q->message ? q->message : "(out of memory)");
        }
}

/* The command line wins over the file. */
static int apply_options(struct config *c, const struct options *o) {
        if (o->socket_path && !(c->socket_path = (free(c->socket_path), strdup(o->socket_path))))
                return -ENOMEM;
        if (o->control_socket_path &&
            !(c->control_socket_path = (free(c->control_socket_path), strdup(o->control_socket_path))))
                return -ENOMEM;
        if (o->log_level >= 0)
                c->log_level = o->log_level;
        return 0;
}

static int load_config(const char *path, const struct options *o, struct config *ret) {
        struct config_problems problems = { 0 };
        int r = config_load(path, !o->config_path, ret, &problems);

        print_problems(&problems, stderr);
        if (r == 0 && problems.errors > 0)
                fprintf(stderr, "%s: %zu error%s: the servers concerned are skipped\n", path, problems.errors,
                        problems.errors == 1 ? "" : "s");
        problems_done(&problems);
        return r;
}

/* What only starting a server would show: its program missing or not executable, its
 * working directory not one. Checked in this process's environment (PATH above all), which
 * is the daemon's only when run the way the unit runs it. Disabled servers are not run. */
static void check_runnable(const struct config *c, struct config_problems *p) {
        for (size_t i = 0; i < c->n_servers; i++) {
                const struct server_config *s = &c->servers[i];
                _cleanup_free_ char *program = NULL, *error = NULL, *path = NULL;
                const char *key;

                if (s->disabled || s->remote.url)
                        continue; /* a server reached by URL runs no program */
                if (environment_check_cwd(s, &error) < 0)
                        key = "cwd";
                else if (environment_path_is_credential(s) && !strchr(s->command, '/'))
                        continue; /* its PATH is a secret the service gets, not this process */
                else if (environment_find_server_program(s, environment_server_path(s, environ), &program, &error) < 0)
                        key = "command";
                else
                        continue;
                if (asprintf(&path, "%s.%s", s->json_path, key) >= 0)
                        problems_add_in(p, s->file, PROBLEM_ERROR, path, "%s", error ? error : "out of memory");
        }
}

static size_t count_disabled(const struct config *c) {
        size_t n = 0;

        for (size_t i = 0; i < c->n_servers; i++)
                n += c->servers[i].disabled;
        return n;
}

static void print_verdict(const char *path, const struct config *c, const struct config_problems *p) {
        size_t warnings = p->count - p->errors, disabled;

        if (p->errors > 0 || !c) {
                fprintf(stderr, "%s: not valid: %zu error%s, %zu warning%s\n", path, p->errors,
                        p->errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
                return;
        }
        printf("%s: valid: %zu server%s", path, c->n_servers, c->n_servers == 1 ? "" : "s");
        disabled = count_disabled(c);
        if (disabled > 0)
                printf(" (%zu disabled)", disabled);
        printf(", %zu warning%s\n", warnings, warnings == 1 ? "" : "s");
}

/* Said once, whatever the number of tokens: what the check could not look at. */
static void print_unread_credentials(const struct config *c) {
        if (c->http.n_tokens > 0)
                fprintf(stderr, "note: credentials are not read by --check-config (they are the service's, in its "
                                "$CREDENTIALS_DIRECTORY): the secrets of http.tokens (%zu) are read when the daemon "
                                "starts\n",
                        c->http.n_tokens);
}

/* --check-config: exits 0 only when the daemon would run every server. Any error fails,
 * even one the daemon would survive by skipping a server; so does a missing file, even
 * the default one (the daemon runs without it, with no servers). Every problem is told,
 * the servers' beside the daemon settings'. */
static int check_config(const char *path) {
        struct config_problems problems = { 0 };
        struct config c;
        int r = config_load_for_check(path, &c, &problems);

        if (r != -ENOMEM)
                check_runnable(&c, &problems);
        print_problems(&problems, stderr);
        if (r != -ENOMEM)
                print_unread_credentials(&c);
        print_verdict(path, r != -ENOMEM ? &c : NULL, &problems);
        if (r != -ENOMEM)
                config_done(&c);
        r = r < 0 || problems.errors > 0 ? 1 : 0;
        problems_done(&problems);
        return r;
}

static int run(struct config *config, const char *path, const struct options *o) {
        struct config_source source = {
                .path = path,
                .missing_ok = !o->config_path,
                .log_level = o->log_level,
                .socket_path = o->socket_path,
                .control_socket_path = o->control_socket_path,
        };
        struct daemon d;
        int r;

        r = daemon_init(&d, config, &source);
        if (r < 0) {
                notify_failure(&d.notify, r, "failed to start; see the journal");
                daemon_done(&d);
                return 1;
        }
        r = daemon_run(&d);
        daemon_done(&d);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        _cleanup_free_ char *default_path = NULL;
        const char *path;
        struct options o;
        struct config config;
        int r;

        if (options_parse(argc, argv, &o, stderr) < 0)
                return 2;
        switch (o.action) {
        case ACTION_HELP:
                options_usage(stdout);
                return 0;
        case ACTION_VERSION:
                printf("mcpvisord %s\n", MCPVISOR_VERSION);
                return 0;
        case ACTION_CHECK_CONFIG:
        case ACTION_RUN:
                break;
        }
        /* Without --config: the system's file as root, the user's own otherwise. */
        path = o.config_path ? o.config_path : (default_path = path_default_config());
        if (!path) {
                fprintf(stderr, "mcpvisord: no configuration path: set HOME or XDG_CONFIG_HOME, or pass --config\n");
                return 1;
        }
        if (o.action == ACTION_CHECK_CONFIG)
                return check_config(path);
        if (load_config(path, &o, &config) < 0)
                return 1;
        if (apply_options(&config, &o) < 0)
                return 1;
        /* A peer that hangs up must cost us an EPIPE, not the process. */
        signal(SIGPIPE, SIG_IGN);
        r = run(&config, path, &o);
        config_done(&config);
        return r;
}
