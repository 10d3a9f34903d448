/* A configured server's instances and spares; see pool.h. */
#include "pool.h"

#include <errno.h>
#include <event2/event.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "run-as.h"
#include "supervisor.h"
#include "time-util.h"

struct pool *pool_new(struct supervisor *sv, struct server_config *config) {
        struct pool *p = calloc(1, sizeof *p);

        if (!p) {
                server_config_free(config);
                return NULL;
        }
        p->sv = sv;
        p->config = config;
        return p;
}

static void member_free(struct pool_member *m) {
        if (m->idle)
                event_free(m->idle);
        free(m);
}

void pool_free(struct pool *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n; i++) {
                p->members[i]->server->pool = NULL;
                member_free(p->members[i]);
        }
        free(p->members);
        free(p->instructions);
        server_config_free(p->config);
        free(p);
}

void pool_instance_ready(struct pool *p, const struct server *s) {
        json_object *v;
        char *copy;

        if (!json_object_object_get_ex(s->catalog.initialize, "instructions", &v) || !json_object_is_type(v, json_type_string))
                return;
        if (p->instructions && strcmp(p->instructions, json_object_get_string(v)) == 0)
                return;
        if (!(copy = strdup(json_object_get_string(v))))
                return; /* out of memory: the ones kept stay */
        free(p->instructions);
        p->instructions = copy;
}

const char *pool_instructions(const struct pool *p) {
        return p->instructions;
}

const char *pool_name(const struct pool *p) {
        return p->config->name;
}

size_t pool_size(const struct pool *p) {
        return p->n;
}

struct server_owner pool_owner_for(const struct pool *p, uint64_t client_id, uid_t uid) {
        if (p->config->instances == INSTANCES_PER_USER)
                return (struct server_owner){ .kind = OWNER_USER, .uid = uid };
        return (struct server_owner){ .kind = OWNER_CLIENT, .client_id = client_id };
}

static bool same_owner(const struct server_owner *a, const struct server_owner *b) {
        if (a->kind != b->kind)
                return false;
        switch (a->kind) {
        case OWNER_USER:
                return a->uid == b->uid;
        case OWNER_CLIENT:
                return a->client_id == b->client_id;
        case OWNER_NONE:
        case OWNER_SPARE:
                return false; /* nobody's: never one owner's instance */
        }
        return false;
}

static struct pool_member *find_member(const struct pool *p, const struct server_owner *owner) {
        for (size_t i = 0; i < p->n; i++)
                if (same_owner(&p->members[i]->server->owner, owner))
                        return p->members[i];
        return NULL;
}

struct server *pool_find(const struct pool *p, const struct server_owner *owner) {
        struct pool_member *m = find_member(p, owner);

        return m ? m->server : NULL;
}

void pool_describe_owner(const struct server_owner *owner, char *buf, size_t size) {
        struct passwd pw, *found = NULL;
        char text[1024];

        switch (owner->kind) {
        case OWNER_USER:
                if (getpwuid_r(owner->uid, &pw, text, sizeof text, &found) == 0 && found)
                        snprintf(buf, size, "user %s (%u)", found->pw_name, (unsigned)owner->uid);
                else
                        snprintf(buf, size, "user %u", (unsigned)owner->uid);
                return;
        case OWNER_CLIENT:
                snprintf(buf, size, "client %llu", (unsigned long long)owner->client_id);
                return;
        case OWNER_SPARE:
                snprintf(buf, size, "spare");
                return;
        case OWNER_NONE:
                break;
        }
        snprintf(buf, size, "shared");
}

/* What clients see of the servers changed with instance s: who has which. */
static void members_changed(struct pool *p, const struct server *s) {
        supervisor_server_changed(p->sv, s, CATALOG_ALL_KINDS, true);
}

static void remove_member(struct pool *p, size_t i) {
        member_free(p->members[i]);
        p->members[i] = p->members[--p->n];
}

/* Lets go of member i: stopped, freed by the supervisor once ended (supervisor_collect). */
static void let_go(struct pool *p, size_t i, const char *why) {
        struct server *s = p->members[i]->server;
        char owner[128];

        pool_describe_owner(&s->owner, owner, sizeof owner);
        server_log(s, LOG_INFO, "stopping the instance of %s: %s", owner, why);
        remove_member(p, i);
        s->pool = NULL;
        s->removed = true;
        server_handle(s, SERVER_EV_STOP, why);
}

size_t pool_stop(struct pool *p, const struct server_owner *owner, const char *why) {
        struct server *last = NULL;
        size_t stopped = 0;

        for (size_t i = p->n; i-- > 0;)
                if (!owner || same_owner(&p->members[i]->server->owner, owner)) {
                        last = p->members[i]->server; /* freed after this loop iteration, not now */
                        let_go(p, i, why);
                        stopped++;
                }
        if (last)
                members_changed(p, last);
        return stopped;
}

void pool_client_gone(struct pool *p, uint64_t client_id) {
        struct server_owner owner = { .kind = OWNER_CLIENT, .client_id = client_id };

        if (p->config->instances == INSTANCES_PER_CLIENT)
                (void)pool_stop(p, &owner, "its client disconnected");
}

static void on_idle(evutil_socket_t fd, short what, void *userdata) {
        struct pool_member *m = userdata;
        struct server_owner owner = m->server->owner;

        (void)pool_stop(m->pool, &owner, "its user has had no client for instanceIdle");
}

void pool_user_left(struct pool *p, uid_t uid) {
        struct server_owner owner = { .kind = OWNER_USER, .uid = uid };
        struct pool_member *m = find_member(p, &owner);
        struct timeval tv = timeval_from_seconds(p->config->instance_idle);

        if (!m)
                return;
        if (!m->idle)
                m->idle = evtimer_new(p->sv->base, on_idle, m);
        if (!m->idle || p->config->instance_idle <= 0) {
                (void)pool_stop(p, &owner, "its user has no client left");
                return;
        }
        evtimer_add(m->idle, &tv);
}

/* A new instance for owner, queued to start; run_as (taken, may be NULL) the user it runs
 * as. NULL when out of memory (run_as freed). */
static struct pool_member *add_member(struct pool *p, const struct server_owner *owner, struct run_as *run_as) {
        struct pool_member *m = calloc(1, sizeof *m);
        struct server *s;

        if (!m) {
                run_as_free(run_as);
                return NULL;
        }
        if (p->n == p->size) {
                size_t size = p->size ? 2 * p->size : 4;
                struct pool_member **members = realloc(p->members, size * sizeof *members);

                if (!members) {
                        free(m);
                        run_as_free(run_as);
                        return NULL;
                }
                p->members = members;
                p->size = size;
        }
        s = server_new(p->sv, server_config_ref(p->config));
        if (!s || supervisor_add(p->sv, s) < 0) {
                server_free(s);
                free(m);
                run_as_free(run_as);
                return NULL;
        }
        s->owner = *owner;
        s->pool = p;
        /* Before its first start, never changed after; freed with it (supervisor.c). */
        s->run_as = run_as;
        m->server = s;
        m->pool = p;
        p->members[p->n++] = m;
        supervisor_queue(p->sv, s, SERVER_EV_START, owner->kind == OWNER_SPARE ? "a spare" : "first need");
        return m;
}

static size_t spares(const struct pool *p) {
        size_t n = 0;

        for (size_t i = 0; i < p->n; i++)
                n += p->members[i]->server->owner.kind == OWNER_SPARE;
        return n;
}

void pool_fill_spares(struct pool *p) {
        struct server_owner spare = { .kind = OWNER_SPARE };
        struct pool_member *made = NULL, *m;

        if (p->sv->stopping || p->config->disabled)
                return;
        while (spares(p) < p->config->spare_instances && p->n < p->config->max_instances && (m = add_member(p, &spare, NULL)))
                made = m;
        if (made)
                members_changed(p, made->server);
}

/* A spare owner may take: one that runs as the daemon's user (spares do), alive, the
 * readiest first. */
static struct pool_member *spare_for(const struct pool *p, const struct server_owner *owner) {
        struct pool_member *best = NULL;

        if (owner->kind == OWNER_USER && owner->uid != geteuid())
                return NULL;
        for (size_t i = 0; i < p->n; i++) {
                struct server *s = p->members[i]->server;

                if (s->owner.kind != OWNER_SPARE || s->state == SERVER_FAILED || server_stopping(s))
                        continue;
                if (!best || (s->state == SERVER_READY && best->server->state != SERVER_READY))
                        best = p->members[i];
        }
        return best;
}

static int refuse(char **error, int r, const char *fmt, ...) _printf_(3, 4);
static int refuse(char **error, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(error, fmt, ap) < 0)
                *error = NULL;
        va_end(ap);
        return r;
}

/* The user owner's instance runs as: NULL for the daemon's own (its uid, a client, a
 * spare), else resolved (run-as.h); whether this daemon may run it is its launcher's
 * decision, at each start. */
static int run_as_of(const struct server_owner *owner, struct run_as **ret, char **error) {
        *ret = NULL;
        *error = NULL;
        if (owner->kind != OWNER_USER || owner->uid == geteuid())
                return 0;
        return run_as_resolve(owner->uid, ret, error);
}

int pool_instance(struct pool *p, const struct server_owner *owner, struct server **ret, char **error) {
        struct pool_member *m = find_member(p, owner);
        struct run_as *run_as = NULL;
        char who[128], *why = NULL;
        int r;

        *error = NULL;
        if (m) {
                if (m->idle)
                        evtimer_del(m->idle);
                *ret = m->server;
                return 0;
        }
        if (p->sv->stopping)
                return refuse(error, -ESHUTDOWN, "server '%s': mcpvisord is stopping", pool_name(p));
        m = spare_for(p, owner);
        if (m || p->n < p->config->max_instances) /* named in the log only (a user's name is a lookup) */
                pool_describe_owner(owner, who, sizeof who);
        if (m) {
                m->server->owner = *owner;
                server_log(m->server, LOG_INFO, "a spare instance handed over to %s", who);
        } else if (p->n >= p->config->max_instances) {
                /* Logged by the caller, once per client: it asks again at each request. */
                return refuse(error, -EUSERS,
                              "server '%s' has reached its limit of %u instances (maxInstances); none is left for this client",
                              pool_name(p), p->config->max_instances);
        } else if ((r = run_as_of(owner, &run_as, &why)) < 0) {
                r = refuse(error, r, "server '%s': %s", pool_name(p), why ? why : "cannot find its user");
                free(why);
                return r;
        } else if (!(m = add_member(p, owner, run_as))) {
                return refuse(error, -ENOMEM, "server '%s': out of memory making an instance", pool_name(p));
        } else {
                server_log(m->server, LOG_INFO, "starting an instance for %s", who);
        }
        members_changed(p, m->server);
        pool_fill_spares(p);
        *ret = m->server;
        return 0;
}

void pool_reconfigure(struct pool *p, struct server_config *next) {
        if (server_config_equal(p->config, next)) {
                server_config_free(next);
                return;
        }
        (void)pool_stop(p, NULL, "its configuration changed");
        supervisor_retire_config(p->sv, p->config);
        p->config = next;
}
