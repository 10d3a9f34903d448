/* All servers together; see supervisor.h. */
#include "supervisor.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server-conn.h"
#include "config.h"
#include "environment.h"
#include "jsonrpc.h"
#include "launcher.h"
#include "log.h"
#include "oauth-tokens.h"
#include "pool.h"
#include "run-as.h"
#include "process.h"

extern char **environ;

void supervisor_server_changed(struct supervisor *sv, const struct server *s, unsigned kinds, bool dropped) {
        if (sv->ops && sv->ops->changed)
                sv->ops->changed(s, kinds, dropped, sv->userdata);
}

void supervisor_server_ready(struct supervisor *sv, struct server *s) {
        if (s->pool)
                pool_instance_ready(s->pool, s);
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
                child_send(server_child(s), jsonrpc_error(m->id, JSONRPC_METHOD_NOT_FOUND, "Method not found", NULL));
}

uint64_t supervisor_next_run(struct supervisor *sv) {
        return ++sv->next_run;
}

struct server *supervisor_find(const struct supervisor *sv, const char *name) {
        for (size_t i = 0; i < sv->n_servers; i++)
                if (!sv->servers[i]->removed && sv->servers[i]->owner.kind == OWNER_NONE &&
                    strcmp(sv->servers[i]->config->name, name) == 0)
                        return sv->servers[i];
        return NULL;
}

struct pool *supervisor_find_pool(const struct supervisor *sv, const char *name) {
        for (size_t i = 0; i < sv->n_pools; i++)
                if (strcmp(pool_name(sv->pools[i]), name) == 0)
                        return sv->pools[i];
        return NULL;
}

struct server *const *supervisor_shared(struct supervisor *sv, size_t *ret_n) {
        struct server **shared = realloc(sv->shared, (sv->n_servers + 1) * sizeof *shared);
        size_t n = 0;

        if (!shared) { /* out of memory: the registry lists nothing until the next read */
                *ret_n = 0;
                return sv->shared;
        }
        sv->shared = shared;
        for (size_t i = 0; i < sv->n_servers; i++)
                if (sv->servers[i]->owner.kind == OWNER_NONE)
                        shared[n++] = sv->servers[i];
        *ret_n = n;
        return shared;
}

int supervisor_add(struct supervisor *sv, struct server *s) {
        struct server **servers = realloc(sv->servers, (sv->n_servers + 2) * sizeof *servers);

        if (!servers)
                return -ENOMEM;
        sv->servers = servers;
        sv->servers[sv->n_servers++] = s;
        sv->servers[sv->n_servers] = NULL;
        return 0;
}

void supervisor_client_gone(struct supervisor *sv, uint64_t client_id) {
        for (size_t i = 0; i < sv->n_pools; i++)
                pool_client_gone(sv->pools[i], client_id);
}

void supervisor_user_left(struct supervisor *sv, uid_t uid) {
        for (size_t i = 0; i < sv->n_pools; i++)
                if (sv->pools[i]->config->instances == INSTANCES_PER_USER)
                        pool_user_left(sv->pools[i], uid);
}

/* Appends a pool for c (taken). */
static int add_pool(struct supervisor *sv, struct server_config *c) {
        struct pool **pools = realloc(sv->pools, (sv->n_pools + 1) * sizeof *pools);
        struct pool *p;

        if (!pools) {
                server_config_free(c);
                return -ENOMEM;
        }
        sv->pools = pools;
        p = pool_new(sv, c);
        if (!p)
                return -ENOMEM;
        sv->pools[sv->n_pools++] = p;
        return 0;
}

/* The server whose current process is pid, or NULL. */
static struct server *server_of_pid(const struct supervisor *sv, pid_t pid) {
        for (size_t i = 0; i < sv->n_servers; i++)
                if (sv->servers[i]->run && run_main_pid(sv->servers[i]->run) == pid)
                        return sv->servers[i];
        return NULL;
}

/* reaper_ops: the pid of a server's own process? Then its launcher reaps it, and the
 * run's end reaches its server. */
static bool server_exited(pid_t pid, void *userdata) {
        struct supervisor *sv = userdata;
        struct server *s = server_of_pid(sv, pid);

        /* the sign-in tokens' key loader's child is its own to reap too */
        return (s && run_reap(s->run)) || oauth_tokens_child_exited(sv->tokens, pid);
}

/* reaper_ops: a server's own process, reaped and closed by its server, not the reaper. */
static uint64_t run_of(pid_t pid, const char **server, void *userdata) {
        struct server *s = server_of_pid(userdata, pid);

        if (!s)
                return 0;
        *server = s->config->name;
        return s->run->number;
}

/* reaper_ops: a process of a run that no longer runs is left behind. */
static bool left_behind(const char *server, uint64_t instance, void *userdata) {
        struct supervisor *sv = userdata;

        for (size_t i = 0; i < sv->n_servers; i++)
                if (sv->servers[i]->run && sv->servers[i]->run->number == instance)
                        return false;
        return true;
}

/* reaper_ops: the killTimeout of the server called server; 3 s for one we do not know. */
static double kill_timeout(const char *server, void *userdata) {
        struct server *s = supervisor_find(userdata, server);
        struct pool *p = s ? NULL : supervisor_find_pool(userdata, server);

        return s ? s->config->kill_timeout : p ? p->config->kill_timeout : 3.0;
}

/* reaper_ops: runs are numbered in the order they start. */
static uint64_t newest_run(void *userdata) {
        const struct supervisor *sv = userdata;

        return sv->next_run;
}

/* reaper_ops: a run numbered up to newest still runs. */
static bool run_up_to_running(uint64_t newest, void *userdata) {
        const struct supervisor *sv = userdata;

        for (size_t i = 0; i < sv->n_servers; i++)
                if (sv->servers[i]->run && sv->servers[i]->run->number <= newest)
                        return true;
        return false;
}

const struct reaper_ops supervisor_reaper_ops = {
        .server_exited = server_exited,
        .run_of = run_of,
        .left_behind = left_behind,
        .kill_timeout = kill_timeout,
        .newest_run = newest_run,
        .run_up_to_running = run_up_to_running,
};

static void on_start_turn(evutil_socket_t fd, short what, void *userdata);

/* Takes every server entry out of config into new servers, appended to sv->servers
 * (which has room for them). */
static int add_servers(struct supervisor *sv, struct config *config) {
        for (size_t i = 0; i < config->n_servers; i++) {
                struct server_config *c = server_config_take(&config->servers[i]);
                struct server *s;

                if (c && c->instances != INSTANCES_SHARED) {
                        if (add_pool(sv, c) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (!(s = c ? server_new(sv, c) : NULL))
                        return -ENOMEM;
                sv->servers[sv->n_servers++] = s;
        }
        return 0;
}

int supervisor_init(struct supervisor *sv, struct event_base *base, const struct logger *log,
                    struct jsonrpc_parser *parser, struct config *config, const struct supervisor_ops *ops,
                    void *userdata) {
        int r;

        *sv = (struct supervisor){
                .base = base,
                .log = log,
                .parser = parser,
                .max_server_message_size = config->max_server_message_size,
                .server_input_limit = config->server_input_limit,
                .credentials_dir = getenv("CREDENTIALS_DIRECTORY"),
                .daemon_env = environ,
                .launcher_auto = LAUNCHER_EXEC,
        };
        TAILQ_INIT(&sv->retired);
        r = reaper_init(&sv->reaper, base, log, &supervisor_reaper_ops, sv);
        if (r < 0)
                return r;
        sv->start_turn = event_new(base, -1, 0, on_start_turn, sv);
        if (!sv->start_turn)
                return -ENOMEM;
        (void)event_priority_set(sv->start_turn, EVENT_PRIORITY_SPAWN);
        sv->servers = calloc(config->n_servers + 1, sizeof *sv->servers);
        if (!sv->servers)
                return -ENOMEM;
        r = add_servers(sv, config);
        if (r < 0)
                return r;
        /* Set last, so building the servers does not report half a state. */
        sv->ops = ops;
        sv->userdata = userdata;
        return 0;
}

static int tokens_loop(void *userdata, struct curl_loop **ret, const char **error) {
        return launcher_http_loop(userdata, ret, error);
}

struct oauth_tokens *supervisor_tokens(struct supervisor *sv) {
        if (!sv->tokens &&
            oauth_tokens_new(&(struct oauth_tokens_params){ .base = sv->base,
                                                            .log = sv->log,
                                                            .credentials_dir = sv->credentials_dir,
                                                            .loop = tokens_loop,
                                                            .userdata = sv },
                             &sv->tokens) < 0)
                sv->tokens = NULL;
        return sv->tokens;
}

void supervisor_mark(struct supervisor *sv, const char *daemon_id) {
        free(sv->daemon_id);
        sv->daemon_id = strdup(daemon_id);
        if (!sv->daemon_id)
                log_warning(sv->log, "out of memory; servers will not carry %s=", ENV_DAEMON);
}

void supervisor_claim(struct supervisor *sv, const char *daemon_id) {
        reaper_end_predecessors(&sv->reaper, daemon_id);
}

/* Whether some server is run by this launcher (each has its own or the daemon's). */
static bool launcher_used(const struct supervisor *sv, int daemon_launcher, int launcher) {
        if (daemon_launcher == launcher)
                return true;
        for (size_t i = 0; i < sv->n_servers; i++)
                if (sv->servers[i]->config->launcher == launcher)
                        return true;
        for (size_t i = 0; i < sv->n_pools; i++)
                if (sv->pools[i]->config->launcher == launcher)
                        return true;
        return false;
}

void supervisor_connect_manager(struct supervisor *sv, int launcher, const char *daemon_id) {
        for (size_t i = 0; i < RUN_LAUNCHERS; i++) {
                const struct run_ops *ops = run_launchers[i];
                struct run_setup setup = {
                        .sv = sv,
                        .named = ops->kind >= 0 && launcher_used(sv, launcher, ops->kind),
                        .by_auto = ops->kind >= 0 && launcher_used(sv, launcher, LAUNCHER_AUTO),
                        .daemon_id = daemon_id,
                };

                if (ops->init && (setup.named || setup.by_auto))
                        ops->init(&sv->launcher_parts[i], &setup);
        }
}

/* A server of c that a launcher picked by what it serves (not by kind) runs. */
static bool claimed(const struct server_config *s) {
        for (size_t i = 0; i < RUN_LAUNCHERS; i++)
                if (run_launchers[i]->serves && run_launchers[i]->serves(s))
                        return true;
        return false;
}

/* c names ops as its launcher, or as the launcher of a server it would run. */
static bool named_by(const struct run_ops *ops, const struct config *c) {
        if (c->launcher == ops->kind)
                return true;
        for (size_t i = 0; i < c->n_servers; i++)
                if (c->servers[i].launcher == ops->kind && !c->servers[i].disabled && !claimed(&c->servers[i]))
                        return true;
        return false;
}

/* A launcher's daemon-wide part is made at start only (the service manager's connection):
 * one that c names though this daemon's start did not make it waits for a restart. */
bool supervisor_manager_waits_for_restart(const struct supervisor *sv, const struct config *c) {
        for (size_t i = 0; i < RUN_LAUNCHERS; i++) {
                const struct run_ops *ops = run_launchers[i];

                if (ops->init && ops->kind >= 0 && !sv->launcher_parts[i] && named_by(ops, c))
                        return true;
        }
        return false;
}

void supervisor_start_all(struct supervisor *sv) {
        for (size_t i = 0; i < sv->n_servers; i++) {
                struct server *s = sv->servers[i];

                if (s->config->disabled) {
                        server_mark_disabled(s);
                        continue;
                }
                supervisor_queue(sv, s, SERVER_EV_START, "configured");
        }
        for (size_t i = 0; i < sv->n_pools; i++)
                pool_fill_spares(sv->pools[i]);
}

void supervisor_queue(struct supervisor *sv, struct server *s, enum server_event ev, const char *detail) {
        server_queue(s, ev, detail);
        /* Where it is in servers is not known here: the next turn looks from the start. */
        sv->start_from = 0;
        event_active(sv->start_turn, 0, 0);
}

/* A turn takes PROCESS_SPAWNS_PER_POLL spawns, or SUPERVISOR_STOPS_PER_TURN restarts of
 * running servers, which only close their stdin (each one's spawn comes with its exit, a
 * turn of its own), whichever comes first. */
static void on_start_turn(evutil_socket_t fd, short what, void *userdata) {
        struct supervisor *sv = userdata;
        unsigned spawns = 0, stops = 0;

        while (spawns < PROCESS_SPAWNS_PER_POLL && stops < SUPERVISOR_STOPS_PER_TURN && sv->start_from < sv->n_servers) {
                struct server *s = sv->servers[sv->start_from++];
                bool stop = server_running(s);

                if (!s->queued)
                        continue;
                server_handle(s, s->queued_event, s->queued_detail);
                stop ? stops++ : spawns++;
        }
        if (sv->start_from < sv->n_servers) {
                event_active(sv->start_turn, 0, 0);
                /* The loop would run on while an event is active: the daemon's work after
                 * each iteration (STATUS=, freeing) is done between turns too. */
                event_base_loopbreak(sv->base);
        }
}

/* The servers moved in the array: the queue is looked through again from its start. */
static void servers_moved(struct supervisor *sv) {
        sv->start_from = 0;
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
        return TAILQ_EMPTY(&sv->retired) && sv->reaper.n_leftovers == 0 && !sv->scan_due && !sv->reaper.rescan &&
               !reaper_scanning(&sv->reaper);
}

void supervisor_retire_config(struct supervisor *sv, struct server_config *c) {
        struct server_config **list = realloc(sv->retired_configs, (sv->n_retired_configs + 1) * sizeof *list);

        if (!list) {
                /* Rather a small leak than a use after free. */
                log_warning(sv->log, "out of memory; keeping replaced settings of %s", c->name);
                return;
        }
        sv->retired_configs = list;
        sv->retired_configs[sv->n_retired_configs++] = c;
}

/* A server, and the user an instance of its pool ran as (pool.h), which is the instance's
 * own: a server's run_as is freed after it (server.h). */
static void free_server(struct server *s) {
        struct run_as *run_as = s->owner.kind != OWNER_NONE ? (struct run_as *)s->run_as : NULL;

        server_free(s);
        run_as_free(run_as);
}

/* Frees removed servers once nothing of theirs is left: no process, no run to free. */
static void free_removed(struct supervisor *sv) {
        size_t kept = 0;
        bool freed = false;

        for (size_t i = 0; i < sv->n_servers; i++) {
                struct server *s = sv->servers[i];

                if (!s->removed || server_running(s)) {
                        sv->servers[kept++] = s;
                        continue;
                }
                server_log(s, LOG_DEBUG, "removed from the configuration and stopped; forgetting it");
                if (sv->ops && sv->ops->removed)
                        sv->ops->removed(s, sv->userdata);
                free_server(s);
                freed = true;
        }
        sv->n_servers = kept;
        /* Stopped before being freed, so no longer listed: nothing clients see changes. */
        if (freed) {
                servers_moved(sv);
                supervisor_server_changed(sv, NULL, 0, false);
        }
}

static void free_retired_configs(struct supervisor *sv) {
        for (size_t i = 0; i < sv->n_retired_configs; i++)
                server_config_free(sv->retired_configs[i]);
        free(sv->retired_configs);
        sv->retired_configs = NULL;
        sv->n_retired_configs = 0;
}

void supervisor_collect(struct supervisor *sv) {
        struct run *in;

        /* The requests lost with these runs were answered earlier in this iteration
         * (router_collect), so nothing points into them or, next, their removed servers. */
        while ((in = TAILQ_FIRST(&sv->retired))) {
                TAILQ_REMOVE(&sv->retired, in, entry);
                run_free(in);
        }
        free_removed(sv);
        for (size_t i = 0; i < sv->n_servers; i++)
                server_adopt_pending(sv->servers[i]);
        free_retired_configs(sv);
        if (sv->scan_due || sv->reaper.rescan) {
                sv->scan_due = false;
                reaper_scan_soon(&sv->reaper);
        }
}

void supervisor_done(struct supervisor *sv) {
        for (size_t i = 0; i < sv->n_servers; i++) {
                struct server *s = sv->servers[i];
                if (s->run && run_running(s->run)) {
                        char what[192];

                        server_log(s, LOG_WARNING, "still running at exit; ending %s",
                                   run_describe(s->run, what, sizeof what));
                        run_kill_wait(s->run);
                }
        }
        supervisor_collect(sv);
        /* The pools first: they point at their instances. */
        for (size_t i = 0; i < sv->n_pools; i++)
                pool_free(sv->pools[i]);
        free(sv->pools);
        sv->pools = NULL;
        sv->n_pools = 0;
        for (size_t i = 0; i < sv->n_servers; i++)
                free_server(sv->servers[i]);
        free(sv->servers);
        sv->servers = NULL;
        free(sv->shared);
        sv->shared = NULL;
        sv->n_servers = 0;
        free_retired_configs(sv);
        /* A leftover's own children are ours once it is reaped: look again, a few levels deep
         * (on a second SIGTERM the daemon gets here without waiting for its leftovers). */
        for (unsigned level = 0; level < 8 && (level == 0 || sv->reaper.rescan); level++) {
                reaper_scan(&sv->reaper);
                reaper_kill_all(&sv->reaper);
        }
        reaper_done(&sv->reaper);
        if (sv->start_turn)
                event_free(sv->start_turn);
        sv->start_turn = NULL;
        /* Before the curl loop its refreshes and revocations are transfers of. */
        oauth_tokens_free(sv->tokens);
        sv->tokens = NULL;
        /* After the runs, whose calls, watches and transfers were the launchers' parts'. */
        for (size_t i = 0; i < RUN_LAUNCHERS; i++) {
                if (run_launchers[i]->done)
                        run_launchers[i]->done(sv->launcher_parts[i]);
                sv->launcher_parts[i] = NULL;
        }
        free(sv->daemon_id);
        sv->daemon_id = NULL;
}

/* key is one of the arrays supervisor_reload() put in summary. */
static void summary_add(json_object *summary, const char *key, const char *name) {
        json_object *list;

        if (json_object_object_get_ex(summary, key, &list))
                json_object_array_add(list, json_object_new_string(name));
}

/* The entry called name in next, when it is run as a shared server. */
static const struct server_config *shared_entry(const struct config *next, const char *name) {
        const struct server_config *c = config_find_server(next, name);

        return c && c->instances == INSTANCES_SHARED ? c : NULL;
}

/* Pools whose entry is gone from next, or is run shared now: their instances stop. */
static void remove_missing_pools(struct supervisor *sv, const struct config *next, json_object *summary) {
        size_t kept = 0;

        for (size_t i = 0; i < sv->n_pools; i++) {
                struct pool *p = sv->pools[i];
                const struct server_config *c = config_find_server(next, pool_name(p));

                if (c && c->instances != INSTANCES_SHARED) {
                        sv->pools[kept++] = p;
                        continue;
                }
                if (!c)
                        summary_add(summary, "removed", pool_name(p));
                (void)pool_stop(p, NULL, "removed from the configuration");
                pool_free(p);
        }
        sv->n_pools = kept;
}

/* Servers no longer in next (or run as instances now): closed gracefully, freed once
 * stopped (free_removed). */
static void remove_missing(struct supervisor *sv, const struct config *next, json_object *summary) {
        remove_missing_pools(sv, next, summary);
        for (size_t i = 0; i < sv->n_servers; i++) {
                struct server *s = sv->servers[i];

                if (s->removed || s->owner.kind != OWNER_NONE || shared_entry(next, s->config->name))
                        continue;
                summary_add(summary, "removed", s->config->name);
                s->removed = true;
                server_handle(s, SERVER_EV_STOP, "removed from the configuration");
        }
}

static int by_name(const void *a, const void *b) {
        return strcmp((*(struct server *const *)a)->config->name, (*(struct server *const *)b)->config->name);
}

static int name_vs_server(const void *name, const void *s) {
        return strcmp(name, (*(struct server *const *)s)->config->name);
}

/* The servers not removed, sorted by name: a reload finds each entry's server in log time
 * (not a walk of them all per entry: a million comparisons with 1,000 servers). */
struct by_name {
        struct server **servers;
        size_t n;
};

static void sort_by_name(const struct supervisor *sv, struct by_name *ret) {
        *ret = (struct by_name){ .servers = calloc(sv->n_servers + 1, sizeof *ret->servers) };
        for (size_t i = 0; ret->servers && i < sv->n_servers; i++)
                if (!sv->servers[i]->removed && sv->servers[i]->owner.kind == OWNER_NONE)
                        ret->servers[ret->n++] = sv->servers[i];
        if (ret->servers)
                qsort(ret->servers, ret->n, sizeof *ret->servers, by_name);
}

static struct server *find_sorted(const struct supervisor *sv, const struct by_name *sorted, const char *name) {
        struct server **found;

        if (!sorted->servers) /* out of memory: the walk */
                return supervisor_find(sv, name);
        found = bsearch(name, sorted->servers, sorted->n, sizeof *sorted->servers, name_vs_server);
        return found ? *found : NULL;
}

/* An entry of next run as instances, taken: its pool reconfigured, or a new pool. */
static void apply_pool_entry(struct supervisor *sv, struct server_config *c, json_object *summary) {
        struct pool *p = supervisor_find_pool(sv, c->name);

        if (!p) {
                summary_add(summary, "added", c->name);
                if (add_pool(sv, c) < 0)
                        log_error(sv->log, "out of memory applying the configuration of %s", c->name);
                return;
        }
        summary_add(summary, server_config_equal(p->config, c) ? "unchanged" : "changed", c->name);
        pool_reconfigure(p, c);
}

/* One entry of next, taken: kept, reconfigured or added. */
static struct server *apply_entry(struct supervisor *sv, const struct by_name *sorted, struct server_config *c,
                                  json_object *summary) {
        struct server *s = find_sorted(sv, sorted, c->name);
        const struct server_config *current;

        if (!s) {
                summary_add(summary, "added", c->name);
                s = server_new(sv, c);
                if (s && !s->config->disabled)
                        supervisor_queue(sv, s, SERVER_EV_START, "added to the configuration");
                else if (s)
                        server_mark_disabled(s);
                return s;
        }
        current = s->next_config ? s->next_config : s->config;
        if (server_config_equal(current, c)) {
                summary_add(summary, "unchanged", c->name);
                server_config_free(c);
                return s;
        }
        summary_add(summary, "changed", c->name);
        server_reconfigure(s, c);
        return s;
}

int supervisor_reload(struct supervisor *sv, struct config *next, json_object *summary) {
        size_t n_old = sv->n_servers, n = 0;
        struct server **servers = calloc(n_old + next->n_servers + 1, sizeof *servers);
        struct by_name sorted;

        if (!servers)
                return -ENOMEM;
        for (const char *const *k = (const char *const[]){ "added", "removed", "changed", "unchanged", NULL }; *k; k++)
                json_object_object_add(summary, *k, json_object_new_array());
        remove_missing(sv, next, summary);
        sort_by_name(sv, &sorted);
        /* The new order is the config's, then what is still stopping after its removal. */
        for (size_t i = 0; i < next->n_servers; i++) {
                struct server_config *c = server_config_take(&next->servers[i]);
                struct server *s;

                if (c && c->instances != INSTANCES_SHARED) {
                        apply_pool_entry(sv, c, summary);
                        continue;
                }
                s = c ? apply_entry(sv, &sorted, c, summary) : NULL;

                if (s)
                        servers[n++] = s;
                else
                        log_error(sv->log, "out of memory applying the configuration of %s", next->servers[i].name);
        }
        /* Then the instances, and what is still stopping after its removal. */
        for (size_t i = 0; i < n_old; i++)
                if (sv->servers[i]->removed || sv->servers[i]->owner.kind != OWNER_NONE)
                        servers[n++] = sv->servers[i];
        free(sorted.servers);
        free(sv->servers);
        sv->servers = servers;
        sv->n_servers = n;
        servers_moved(sv);
        /* Spares, once the servers are in their new array. */
        for (size_t i = 0; i < sv->n_pools; i++)
                pool_fill_spares(sv->pools[i]);
        /* The separator or a prefix may have changed every exposed name. */
        supervisor_server_changed(sv, NULL, CATALOG_ALL_KINDS, false);
        return 0;
}

/* Ready, with no restart waiting for its turn: a reload's restarts are not done until the
 * last queued one is. */
static bool ready_for_good(const struct server *s) {
        return s->state == SERVER_READY && !s->queued;
}

/* What STATUS= says about a server that is not ready: its state, and for one that is not
 * running, the end of its last run ("exit status 1") or that it could not be run. */
static int status_entry(const struct server *s, char *buf, size_t size) {
        const char *why = NULL;
        char brief[128];

        if (!s->queued && (s->state == SERVER_BACKOFF || s->state == SERVER_FAILED))
                why = server_cause_brief(&s->why, brief, sizeof brief);
        return snprintf(buf, size, "; %s %s%s%s%s", s->config->name,
                        s->queued ? server_running(s) ? "restart queued" : "queued" : server_state_name(s->state),
                        why ? " (" : "",
                        why ? why : "", why ? ")" : "");
}

/* An instance is counted in the instances, not the servers. */
static bool counted_as_server(const struct server *s) {
        return !s->config->disabled && !s->removed && s->owner.kind == OWNER_NONE;
}

void supervisor_status(const struct supervisor *sv, char *buf, size_t size) {
        size_t enabled = 0, ready = 0, used, instances = 0, instances_ready = 0;

        for (size_t i = 0; i < sv->n_servers; i++) {
                const struct server *s = sv->servers[i];
                if (!s->removed && s->owner.kind != OWNER_NONE) {
                        instances++;
                        instances_ready += ready_for_good(s);
                }
                if (!counted_as_server(s))
                        continue;
                enabled++;
                ready += ready_for_good(s);
        }
        used = (size_t)snprintf(buf, size, "%zu/%zu servers ready", ready, enabled);
        if (instances > 0 && used < size)
                used += (size_t)snprintf(buf + used, size - used, ", %zu/%zu instances", instances_ready, instances);
        for (size_t i = 0; i < sv->n_servers && used < size; i++) {
                const struct server *s = sv->servers[i];
                if (counted_as_server(s) && !ready_for_good(s))
                        used += (size_t)status_entry(s, buf + used, size - used);
        }
}
