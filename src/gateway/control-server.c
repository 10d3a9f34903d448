/* "start", "stop" and "restart" NAME on the control socket: an operator's command fed to
 * the server's state machine. The answer says what state it went to at once; mcpvisorctl
 * follows the rest with "status". NAME run as instances (pool.h): stop and restart stop
 * all its instances, or with "user" (a name or uid) or "client" (an id) one owner's, each
 * made again on its owner's next need; the answer says how many stopped. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "macro.h"
#include "methods.h"
#include "pool.h"
#include "supervisor.h"

/* The error for a control command naming no configured server: the names it could use. */
static void reply_unknown_server(struct client *c, struct jsonrpc_msg *m, const char *name) {
        const struct supervisor *sv = daemon_supervisor(c->daemon);
        _cleanup_free_ char *message = NULL;
        size_t size = 0, listed = 0;
        FILE *f = open_memstream(&message, &size);

        if (!f) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "unknown server", NULL);
                return;
        }
        fprintf(f, "unknown server '%.64s'; configured:", name);
        for (size_t i = 0; i < sv->n_servers; i++)
                if (!sv->servers[i]->removed && sv->servers[i]->owner.kind == OWNER_NONE)
                        fprintf(f, "%s %s", listed++ ? "," : "", sv->servers[i]->config->name);
        for (size_t i = 0; i < sv->n_pools; i++)
                fprintf(f, "%s %s", listed++ ? "," : "", pool_name(sv->pools[i]));
        if (listed == 0)
                fputs(" none", f);
        if (fclose(f) != 0) {
                free(message);
                message = NULL;
        }
        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, message ? message : "unknown server", NULL);
}

struct server *control_named_server(struct client *c, struct jsonrpc_msg *m) {
        json_object *v;
        struct server *s;

        if (!method_params_object(c, m, false))
                return NULL;
        if (!json_object_object_get_ex(m->params, "name", &v) || !json_object_is_type(v, json_type_string)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"name\" (a string) is required", NULL);
                return NULL;
        }
        s = supervisor_find(daemon_supervisor(c->daemon), json_object_get_string(v));
        if (!s && supervisor_find_pool(daemon_supervisor(c->daemon), json_object_get_string(v)))
                /* Which of its instances? Each is a row of the status answer. */
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "this server is run as instances, each with its own log lines: see its rows in mcpvisorctl status",
                                   NULL);
        else if (!s)
                reply_unknown_server(c, m, json_object_get_string(v));
        return s;
}

/* params' "user" (a name or a uid) or "client" (an id) as the owner of an instance of p;
 * *ret_all when neither is given. -EINVAL, answered. */
static int owner_param(struct client *c, struct jsonrpc_msg *m, const struct pool *p, struct server_owner *ret,
                       bool *ret_all) {
        json_object *v;
        const char *text;
        char *end;
        unsigned long long n;

        *ret_all = false;
        if (json_object_object_get_ex(m->params, "client", &v)) {
                text = json_object_get_string(v);
                errno = 0;
                n = strtoull(text ? text : "", &end, 10);
                if (!text || !*text || *end || errno || p->config->instances != INSTANCES_PER_CLIENT) {
                        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                           p->config->instances != INSTANCES_PER_CLIENT
                                                   ? "Invalid params: \"client\" names an instance of a per-client server"
                                                   : "Invalid params: \"client\" is a client's id",
                                           NULL);
                        return -EINVAL;
                }
                *ret = (struct server_owner){ .kind = OWNER_CLIENT, .client_id = n };
                return 0;
        }
        if (json_object_object_get_ex(m->params, "user", &v)) {
                struct passwd pw, *found = NULL;
                char buf[1024];

                text = json_object_get_string(v);
                errno = 0;
                n = strtoull(text ? text : "", &end, 10);
                if (text && *text && !*end && !errno && n < (uid_t)-1)
                        *ret = (struct server_owner){ .kind = OWNER_USER, .uid = (uid_t)n };
                else if (text && getpwnam_r(text, &pw, buf, sizeof buf, &found) == 0 && found)
                        *ret = (struct server_owner){ .kind = OWNER_USER, .uid = found->pw_uid };
                else {
                        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: no such user", NULL);
                        return -EINVAL;
                }
                if (p->config->instances != INSTANCES_PER_USER) {
                        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                           "Invalid params: \"user\" names an instance of a per-user server", NULL);
                        return -EINVAL;
                }
                return 0;
        }
        *ret_all = true;
        return 0;
}

/* stop or restart of a server run as instances: they stop; each is made again on its
 * owner's next need. */
static void pool_command(struct client *c, struct jsonrpc_msg *m, struct pool *p, enum server_event ev,
                         const char *verb) {
        struct server_owner owner;
        json_object *result;
        char detail[96];
        bool all;
        size_t n;

        if (ev == SERVER_EV_START) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                   "a server run as instances starts an instance on each client's first need", NULL);
                return;
        }
        if (owner_param(c, m, p, &owner, &all) < 0)
                return;
        snprintf(detail, sizeof detail, "%s by uid %u (mcpvisorctl)", verb, (unsigned)client_principal(c)->uid);
        n = pool_stop(p, all ? NULL : &owner, detail);
        result = json_object_new_object();
        json_object_object_add(result, "name", json_object_new_string(pool_name(p)));
        json_object_object_add(result, "stopped", json_object_new_int64((int64_t)n));
        client_reply_result(c, m->id, result);
}

static void command(struct client *c, struct jsonrpc_msg *m, enum server_event ev, const char *verb) {
        json_object *result, *v;
        struct server *s;
        struct pool *p;
        char detail[96];

        if (m->params && json_object_object_get_ex(m->params, "name", &v) && json_object_is_type(v, json_type_string) &&
            (p = supervisor_find_pool(daemon_supervisor(c->daemon), json_object_get_string(v)))) {
                pool_command(c, m, p, ev, verb);
                return;
        }
        s = control_named_server(c, m);
        if (!s)
                return;
        snprintf(detail, sizeof detail, "%s by uid %u (mcpvisorctl)", verb, (unsigned)client_principal(c)->uid);
        server_handle(s, ev, detail);
        result = json_object_new_object();
        json_object_object_add(result, "name", json_object_new_string(s->config->name));
        json_object_object_add(result, "state", json_object_new_string(server_state_name(s->state)));
        client_reply_result(c, m->id, result);
}

static void start(struct client *c, struct jsonrpc_msg *m) {
        command(c, m, SERVER_EV_START, "started");
}

static void stop(struct client *c, struct jsonrpc_msg *m) {
        command(c, m, SERVER_EV_STOP, "stopped");
}

static void restart(struct client *c, struct jsonrpc_msg *m) {
        command(c, m, SERVER_EV_RESTART, "restarted");
}

const struct method control_start = CONTROL_METHOD("start", start);
const struct method control_stop = CONTROL_METHOD("stop", stop);
const struct method control_restart = CONTROL_METHOD("restart", restart);
