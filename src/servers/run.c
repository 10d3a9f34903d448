/* One run of a server; see run.h. */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server-conn.h"
#include "environment.h"
#include "log.h"
#include "server.h"
#include "server-transport.h"
#include "settings.h"
#include "supervisor.h"
#include "time-util.h"

const struct run_words run_process_words = {
        .input = "stdin",
        .terminate = "sending SIGTERM",
        .terminated = "SIGTERM",
        .kill = "sending SIGKILL",
        .killed = "SIGKILL",
        .stuck = " (stuck in the kernel?)",
        .terminate_signal = SIGTERM,
        .kill_signal = SIGKILL,
};

const struct run_ops *const run_launchers[RUN_LAUNCHERS] = { &run_http_ops, &run_systemd_ops, &run_exec_ops };

void **run_launcher_part(struct supervisor *sv, const struct run_ops *ops) {
        for (size_t i = 0; i < RUN_LAUNCHERS; i++)
                if (run_launchers[i] == ops)
                        return &sv->launcher_parts[i];
        abort(); /* a launcher missing from the table is a bug */
}

/* The one place a run's launcher is picked: one that serves the server whatever it says
 * (a server reached by URL), else the one of the server's "launcher" (its own, else the
 * daemon's), "auto" as the daemon decided it once at start (supervisor_connect_manager). */
static const struct run_ops *run_ops_for(const struct server_config *c, const struct supervisor *sv) {
        int kind = c->launcher == LAUNCHER_SYSTEMD || c->launcher == LAUNCHER_EXEC ? c->launcher : sv->launcher_auto;

        for (size_t i = 0; i < RUN_LAUNCHERS; i++)
                if (run_launchers[i]->serves ? run_launchers[i]->serves(c) : run_launchers[i]->kind == kind)
                        return run_launchers[i];
        return &run_exec_ops;
}

bool run_explain_shortage(int r, char **error) {
        int q;

        if (r == -EMFILE || r == -ENFILE)
                q = asprintf(error, "out of file descriptors (%s)",
                             r == -EMFILE ? "the daemon's RLIMIT_NOFILE: LimitNOFILE= of the unit" : "the system's fs.file-max");
        else if (r == -EAGAIN)
                q = asprintf(error, "cannot fork: process limit reached (TasksMax= of the unit, or RLIMIT_NPROC)");
        else
                return false;
        if (q < 0)
                *error = NULL;
        return true;
}

static void close_fds(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

/* The three pipes: the daemon's ends (non-blocking) in ours[] (its stdin's write end, its
 * stdout's and stderr's read ends), the server's in *theirs. All close-on-exec. */
static int make_pipes(int ours[3], struct run_stdio *theirs) {
        int fds[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };

        for (int k = 0; k < 3; k++)
                if (pipe2(fds[k], O_CLOEXEC) < 0) {
                        int r = -errno;

                        close_fds(&fds[0][0], 6);
                        return r;
                }
        ours[0] = fds[0][1];
        ours[1] = fds[1][0];
        ours[2] = fds[2][0];
        *theirs = (struct run_stdio){ .in = fds[0][0], .out = fds[1][1], .err = fds[2][1] };
        for (int k = 0; k < 3; k++)
                (void)fcntl(ours[k], F_SETFL, O_NONBLOCK);
        return 0;
}

/* The MCP connection over t (taken in any case). A server that stops taking what is sent
 * to it is caught within the time a ping may take. */
static int connect_child(struct run *in, const struct server_config *c, const struct child_ops *ops,
                         struct server_transport *t) {
        struct supervisor *sv = in->server->sv;

        in->child = child_new(sv->base, t, sv->max_server_message_size, c->name, sv->log, sv->parser, ops, in->server);
        if (!in->child)
                return -ENOMEM;
        child_limit_input(in->child, sv->server_input_limit, usec_from_seconds(c->health_timeout));
        return 0;
}

/* Undoes a connection for a run that never started: nothing was sent or logged yet. */
static void disconnect(struct run *in) {
        child_free(in->child);
        in->child = NULL;
        stderr_reader_finish(&in->err);
}

/* The three pipes, the stderr reader and the MCP connection on the daemon's ends; the
 * server's ends in *theirs, for the launcher's start. */
static int connect_pipes(struct run *in, const struct server_config *c, const struct child_ops *ops,
                         struct run_stdio *theirs, char **error) {
        struct supervisor *sv = in->server->sv;
        struct server_transport *t;
        int ours[3], r;

        r = make_pipes(ours, theirs);
        if (r < 0) {
                run_explain_shortage(r, error);
                return r;
        }
        r = stderr_reader_start(&in->err, sv->base, ours[2], c->name, sv->log, &in->server->stderr_lines) < 0 ? -ENOMEM : 0;
        if (r < 0) {
                close_fds(ours, 2);
        } else {
                t = transport_pipe_new(sv->base, ours[0], ours[1], sv->max_server_message_size, c->name, sv->log);
                r = t ? connect_child(in, c, ops, t) : -ENOMEM;
        }
        if (r < 0) {
                close_fds((int[]){ theirs->in, theirs->out, theirs->err }, 3);
                disconnect(in);
        }
        return r;
}

/* The MCP connection on a transport the launcher made: no pipes, no stderr. */
static int connect_transport(struct run *in, const struct server_config *c, const struct child_ops *ops,
                             char **error) {
        struct server_transport *t = NULL;
        int r;

        r = in->ops->open_transport(in, c, &t, error);
        return r < 0 ? r : connect_child(in, c, ops, t);
}

/* The one way a run starts, whatever its launcher: the connection (over a transport the
 * launcher makes, else over pipes whose other ends the program gets), then the launcher's
 * start. */
static int launch(struct run *in, const struct server_config *c, char **env, const struct child_ops *ops,
                  char **error) {
        struct run_stdio theirs, *stdio = NULL;
        int r;

        if (in->ops->open_transport) {
                r = connect_transport(in, c, ops, error);
        } else {
                r = connect_pipes(in, c, ops, &theirs, error);
                stdio = &theirs;
        }
        if (r < 0)
                return r;
        r = in->ops->start(in, c, env, stdio, error);
        if (r < 0) {
                disconnect(in);
                return r;
        }
        in->started_at = now_usec();
        return 0;
}

int run_start(struct server *s, uint64_t number, const struct child_ops *ops, struct run **ret,
                   char **error) {
        struct supervisor *sv = s->sv;
        struct run *in = calloc(1, sizeof *in);
        char **env = NULL;
        int r;

        *error = NULL;
        if (!in)
                return -ENOMEM;
        in->server = s;
        in->number = number;
        in->ops = run_ops_for(s->config, sv);
        r = in->ops->check ? in->ops->check(s->config, error) : 0;
        /* A launcher that makes its own transport starts no program here: no environment. */
        if (r == 0 && !in->ops->open_transport)
                r = environment_build(s->config, sv->daemon_env, sv->daemon_id, number, sv->credentials_dir, s->run_as,
                                      &env, error);
        if (r == 0)
                r = launch(in, s->config, env, ops, error);
        strv_free(env);
        if (r < 0) {
                if (in->launcher) /* a start that failed leaves none; an opened transport may */
                        in->ops->free(in);
                free(in);
                return r;
        }
        *ret = in;
        return 0;
}

void run_retire(struct run *in, struct run_list *retired) {
        stderr_reader_finish(&in->err);
        child_free(in->child);
        in->child = NULL;
        /* The launcher's event may be the caller: it is freed with the run, later. */
        TAILQ_INSERT_TAIL(retired, in, entry);
}

void run_free(struct run *in) {
        if (!in)
                return;
        stderr_reader_finish(&in->err);
        child_free(in->child);
        if (in->launcher)
                in->ops->free(in);
        free(in);
}

void run_ended(struct run *in) {
        if (in->ended)
                return;
        in->ended = true;
        server_handle(in->server, SERVER_EV_EXITED, NULL);
}

void **run_launcher_part_of(const struct run *in) {
        return run_launcher_part(in->server->sv, in->ops);
}

struct event_base *run_event_base(const struct run *in) {
        return in->server->sv->base;
}

bool run_running(const struct run *in) {
        return !in->ended;
}

pid_t run_main_pid(const struct run *in) {
        return in->ops->main_pid(in);
}

int run_terminate(struct run *in) {
        return in->ops->terminate(in);
}

int run_kill(struct run *in) {
        return in->ops->kill(in);
}

void run_kill_wait(struct run *in) {
        in->ops->kill_wait(in);
        in->ended = true;
}

bool run_reap(struct run *in) {
        return !in->ended && in->ops->reap && in->ops->reap(in);
}

void run_describe_end(const struct run *in, struct server_exit *ret) {
        server_exit_done(ret);
        in->ops->describe_end(in, ret);
}

const char *run_describe(const struct run *in, char *buf, size_t size) {
        return in->ops->describe(in, buf, size);
}

const struct run_words *run_words_of(const struct run *in) {
        return in->ops->words;
}

const char *run_target(const struct run *in) {
        return in->ops->target(in->server->config);
}

const struct run_ops *run_launcher_for(const struct server *s) {
        return run_ops_for(s->config, s->sv);
}

const char *run_launcher_name(const struct run *in) {
        return in->ops->name;
}

void run_usage_of(const struct run *in, struct run_usage *ret) {
        in->ops->usage(in, ret);
}
