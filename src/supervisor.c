/* All servers together; see supervisor.h. */
#include "supervisor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "config.h"
#include "jsonrpc.h"
#include "log.h"

extern char **environ;

void supervisor_server_changed(struct supervisor *sv) {
        if (sv->ops && sv->ops->changed)
                sv->ops->changed(sv->userdata);
}

void supervisor_server_ready(struct supervisor *sv, struct server *s) {
        if (sv->ops && sv->ops->ready)
                sv->ops->ready(s, sv->userdata);
}

void supervisor_server_notification(struct supervisor *sv, struct server *s, struct jsonrpc_msg *m) {
        if (sv->ops && sv->ops->notification)
                sv->ops->notification(s, m, sv->userdata);
}

void supervisor_server_request(struct supervisor *sv, struct server *s, struct jsonrpc_msg *m) {
        if (sv->ops && sv->ops->request)
                sv->ops->request(s, m, sv->userdata);
        else /* Nobody to ask: the server must not wait for an answer that never comes. */
                child_send(s->run->child, jsonrpc_error(m->id, JSONRPC_METHOD_NOT_FOUND, "Method not found", NULL));
}

uint64_t supervisor_next_instance(struct supervisor *sv) {
        return ++sv->next_instance;
}

struct server *supervisor_find(const struct supervisor *sv, const char *name) {
        for (size_t i = 0; i < sv->n_servers; i++)
                if (strcmp(sv->servers[i]->config->name, name) == 0)
                        return sv->servers[i];
        return NULL;
}

/* The server whose current process is pid, or NULL. */
static struct server *server_of_pid(const struct supervisor *sv, pid_t pid) {
        for (size_t i = 0; i < sv->n_servers; i++)
                if (sv->servers[i]->run && sv->servers[i]->run->proc.pid == pid)
                        return sv->servers[i];
        return NULL;
}

/* reaper_ops: the pid of a server's own process? Then it is reaped through its pidfd. */
static bool server_exited(pid_t pid, void *userdata) {
        struct server *s = server_of_pid(userdata, pid);

        /* Reaped here only if its pidfd agrees; otherwise the reaper's waitpid takes it, so
         * the reaper's loop can never spin on one zombie. */
        if (!s || s->run->proc.reaped || process_reap(&s->run->proc) <= 0)
                return false;
        server_handle(s, SERVER_EV_EXITED, NULL);
        return true;
}

/* reaper_ops: a server's own process, reaped and closed by its server, not the reaper. */
static bool is_server(pid_t pid, void *userdata) {
        return server_of_pid(userdata, pid) != NULL;
}

/* reaper_ops: a process of an instance that no longer runs is left behind. */
static bool left_behind(const char *server, uint64_t instance, double *kill_timeout, void *userdata) {
        struct supervisor *sv = userdata;
        struct server *s = server ? supervisor_find(sv, server) : NULL;

        if (s)
                *kill_timeout = s->config->kill_timeout;
        for (size_t i = 0; i < sv->n_servers; i++)
                if (sv->servers[i]->run && sv->servers[i]->run->number == instance)
                        return false;
        return true;
}

static const struct reaper_ops reaper_ops = {
        .server_exited = server_exited,
        .is_server = is_server,
        .left_behind = left_behind,
};

int supervisor_init(struct supervisor *sv, struct event_base *base, const struct logger *log,
                    struct jsonrpc_parser *parser, const struct config *config, const struct supervisor_ops *ops,
                    void *userdata) {
        int r;

        *sv = (struct supervisor){
                .base = base,
                .log = log,
                .parser = parser,
                .max_message_size = config->max_message_size,
                .credentials_dir = getenv("CREDENTIALS_DIRECTORY"),
                .daemon_env = environ,
        };
        TAILQ_INIT(&sv->retired);
        r = reaper_init(&sv->reaper, base, log, &reaper_ops, sv);
        if (r < 0)
                return r;
        sv->servers = calloc(config->n_servers + 1, sizeof *sv->servers);
        if (!sv->servers)
                return -ENOMEM;
        for (size_t i = 0; i < config->n_servers; i++) {
                sv->servers[i] = server_new(sv, &config->servers[i]);
                if (!sv->servers[i])
                        return -ENOMEM;
                sv->n_servers++;
        }
        /* Set last, so building the servers does not report half a state. */
        sv->ops = ops;
        sv->userdata = userdata;
        return 0;
}

void supervisor_start_all(struct supervisor *sv) {
        for (size_t i = 0; i < sv->n_servers; i++) {
                struct server *s = sv->servers[i];

                if (s->config->disabled)
                        snprintf(s->cause, sizeof s->cause, "disabled in the configuration");
                else
                        server_handle(s, SERVER_EV_START, "configured");
        }
}

void supervisor_stop_all(struct supervisor *sv) {
        sv->stopping = true;
        for (size_t i = 0; i < sv->n_servers; i++)
                server_handle(sv->servers[i], SERVER_EV_STOP, "mcpvisord is stopping");
        sv->scan_due = true;
}

bool supervisor_idle(const struct supervisor *sv) {
        for (size_t i = 0; i < sv->n_servers; i++)
                if (server_running(sv->servers[i]))
                        return false;
        return TAILQ_EMPTY(&sv->retired) && sv->reaper.n_leftovers == 0 && !sv->scan_due;
}

void supervisor_collect(struct supervisor *sv) {
        struct instance *in;

        while ((in = TAILQ_FIRST(&sv->retired))) {
                TAILQ_REMOVE(&sv->retired, in, entry);
                instance_free(in);
        }
        if (sv->scan_due) {
                sv->scan_due = false;
                reaper_scan(&sv->reaper, sv->stopping);
        }
}

void supervisor_done(struct supervisor *sv) {
        for (size_t i = 0; i < sv->n_servers; i++) {
                struct server *s = sv->servers[i];
                if (s->run && !s->run->proc.reaped) {
                        server_log(s, LOG_WARNING, "still running at exit; killing pid %d", (int)s->run->proc.pid);
                        process_signal_group(&s->run->proc, SIGKILL);
                        (void)waitpid(s->run->proc.pid, NULL, 0);
                        s->run->proc.reaped = true;
                }
        }
        supervisor_collect(sv);
        for (size_t i = 0; i < sv->n_servers; i++)
                server_free(sv->servers[i]);
        free(sv->servers);
        sv->servers = NULL;
        sv->n_servers = 0;
        reaper_scan(&sv->reaper, true);
        reaper_kill_all(&sv->reaper);
        reaper_done(&sv->reaper);
}

/* What STATUS= says about a server that is not ready: its state, and for one that is not
 * running, the end of its last run ("exit status 1") or that it could not be run. */
static int status_entry(const struct server *s, char *buf, size_t size) {
        const char *why = NULL;

        if (s->state == SERVER_BACKOFF || s->state == SERVER_FAILED)
                why = s->last_exit[0] ? s->last_exit : "cannot start";
        return snprintf(buf, size, "; %s %s%s%s%s", s->config->name, server_state_name(s->state), why ? " (" : "",
                        why ? why : "", why ? ")" : "");
}

void supervisor_status(const struct supervisor *sv, char *buf, size_t size) {
        size_t enabled = 0, ready = 0, used;

        for (size_t i = 0; i < sv->n_servers; i++) {
                const struct server *s = sv->servers[i];
                if (s->config->disabled)
                        continue;
                enabled++;
                ready += s->state == SERVER_READY;
        }
        used = (size_t)snprintf(buf, size, "%zu/%zu servers ready", ready, enabled);
        for (size_t i = 0; i < sv->n_servers && used < size; i++) {
                const struct server *s = sv->servers[i];
                if (!s->config->disabled && s->state != SERVER_READY)
                        used += (size_t)status_entry(s, buf + used, size - used);
        }
}
