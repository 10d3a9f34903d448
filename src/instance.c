/* One run of a server; see instance.h. */
#include "instance.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "environment.h"
#include "log.h"
#include "server.h"
#include "settings.h"
#include "supervisor.h"
#include "time-util.h"

static void on_exit_event(struct process *p, void *userdata) {
        struct instance *in = userdata;

        if (process_reap(&in->proc) > 0)
                server_handle(in->server, SERVER_EV_EXITED, NULL);
}

/* argv for exec: the command as given (what ps shows), then the configured args. */
static char **make_argv(const struct server_config *c) {
        size_t n = 0;
        char **argv;

        while (c->args && c->args[n])
                n++;
        argv = calloc(n + 2, sizeof *argv);
        if (!argv)
                return NULL;
        argv[0] = c->command;
        for (size_t i = 0; i < n; i++)
                argv[i + 1] = c->args[i];
        return argv;
}

/* What a failed spawn means; a program that cannot be found is explained by environment.c. */
static int explain(int r, const struct server_config *c, const char *program, char **error) {
        int q;

        if (r == -ENOENT && c->cwd)
                q = asprintf(error, "cannot run %s in %s: %s (check command and cwd)", program, c->cwd, strerror(-r));
        else if (r == -EACCES)
                q = asprintf(error, "permission denied running %s (is it executable and readable by this user?)", program);
        else if (r == -EMFILE || r == -ENFILE)
                q = asprintf(error, "out of file descriptors (%s)",
                             r == -EMFILE ? "the daemon's RLIMIT_NOFILE: LimitNOFILE= of the unit" : "the system's fs.file-max");
        else if (r == -EAGAIN)
                q = asprintf(error, "cannot fork: process limit reached (TasksMax= of the unit, or RLIMIT_NPROC)");
        else
                q = asprintf(error, "cannot run %s: %s", program, strerror(-r));
        if (q < 0)
                *error = NULL;
        return r;
}

static int spawn(struct instance *in, const struct server_config *c, char **env, const struct child_ops *ops,
                 char **error) {
        struct supervisor *sv = in->server->sv;
        _cleanup_free_ char *program = NULL;
        _cleanup_free_ char **argv = NULL;
        struct process_pipes pipes;
        int r;

        r = environment_find_server_program(c, environment_get(env, "PATH"), &program, error);
        if (r < 0)
                return r;
        argv = make_argv(c);
        if (!argv)
                return -ENOMEM;
        r = process_spawn(&in->proc, sv->base, program, argv, env, c->cwd, &pipes, on_exit_event, in);
        if (r < 0)
                return explain(r, c, program, error);
        in->started_at = now_usec();
        if (stderr_reader_start(&in->err, sv->base, pipes.err, c->name, sv->log) == 0)
                in->child = child_new(sv->base, pipes.in, pipes.out, sv->max_server_message_size, c->name, sv->log,
                                      sv->parser, ops, in->server);
        else {
                close(pipes.in);
                close(pipes.out);
        }
        /* A server that stops reading its stdin is caught within the time a ping may take. */
        if (in->child)
                child_limit_input(in->child, sv->server_input_limit, usec_from_seconds(c->health_timeout));
        else {
                /* Out of memory after the spawn: end it; the pidfd still reports its exit. */
                server_log(in->server, LOG_ERR, "out of memory setting up its pipes; killing it");
                process_signal_group(&in->proc, SIGKILL);
        }
        return 0;
}

int instance_start(struct server *s, uint64_t number, const struct child_ops *ops, struct instance **ret,
                   char **error) {
        struct supervisor *sv = s->sv;
        struct instance *in = calloc(1, sizeof *in);
        char **env = NULL;
        int r;

        *error = NULL;
        if (!in)
                return -ENOMEM;
        in->server = s;
        in->number = number;
        process_init(&in->proc);
        r = environment_build(s->config, sv->daemon_env, sv->daemon_id, number, sv->credentials_dir, &env, error);
        if (r == 0)
                r = spawn(in, s->config, env, ops, error);
        strv_free(env);
        if (r < 0) {
                free(in);
                return r;
        }
        *ret = in;
        return 0;
}

void instance_retire(struct instance *in, struct instance_list *retired) {
        stderr_reader_finish(&in->err);
        child_free(in->child);
        in->child = NULL;
        /* The pidfd event may be the caller: it is freed with the instance, later. */
        TAILQ_INSERT_TAIL(retired, in, entry);
}

void instance_free(struct instance *in) {
        if (!in)
                return;
        stderr_reader_finish(&in->err);
        child_free(in->child);
        process_done(&in->proc);
        free(in);
}
