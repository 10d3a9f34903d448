/* mcpvisord: options, configuration, then the daemon's loop. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "macro.h"
#include "daemon.h"
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

/* --check-config: any error, even one that only skips a server, fails the check. */
static int check_config(const char *path, const struct options *o) {
        struct config_problems problems = { 0 };
        struct config c;
        int r = config_load(path, !o->config_path, &c, &problems);

        print_problems(&problems, stderr);
        if (r == 0) {
                if (problems.errors == 0)
                        printf("%s: valid: %zu server%s, %zu warning%s\n", path, c.n_servers,
                               c.n_servers == 1 ? "" : "s", problems.count, problems.count == 1 ? "" : "s");
                config_done(&c);
        }
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
                return check_config(path, &o);
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
