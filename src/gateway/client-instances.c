/* A client's own instances and its registry of them; see client-instances.h. */
#include "client-instances.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "daemon.h"
#include "pool.h"

struct client_instances *client_instances_of(const struct client *c) {
        return c->access.instances;
}

void client_instances_free(struct client_instances *ci) {
        if (!ci)
                return;
        views_done(&ci->views);
        registry_done(&ci->registry);
        free(ci->servers);
        json_object_put(ci->refused);
        free(ci);
}

bool client_owns(const struct client *c, const struct server *s) {
        switch (s->owner.kind) {
        case OWNER_CLIENT:
                return s->owner.client_id == c->id;
        case OWNER_USER:
                return c->role == LISTEN_MCP && s->owner.uid == client_principal(c)->uid;
        case OWNER_NONE:
        case OWNER_SPARE:
                break;
        }
        return false;
}

/* registry_source: c's instances as they are now, one per pool at most. */
static struct server *const *own_servers(void *userdata, size_t *ret_n) {
        struct client *c = userdata;
        struct client_instances *ci = c->access.instances;
        const struct supervisor *sv = &c->daemon->supervisor;
        struct server **servers = realloc(ci->servers, (sv->n_pools + 1) * sizeof *servers);

        ci->n_servers = 0;
        /* The shared registry's, which a reload may have changed. */
        registry_set_separator(&ci->registry, c->daemon->registry.separator);
        if (servers) {
                ci->servers = servers;
                for (size_t i = 0; i < sv->n_pools; i++) {
                        struct server_owner owner = pool_owner_for(sv->pools[i], c->id, client_principal(c)->uid);
                        struct server *s = pool_find(sv->pools[i], &owner);

                        if (s)
                                ci->servers[ci->n_servers++] = s;
                }
        }
        *ret_n = ci->n_servers;
        return ci->servers;
}

static struct client_instances *instances_make(struct client *c) {
        struct daemon *d = c->daemon;
        struct client_instances *ci;

        if (c->access.instances)
                return c->access.instances;
        ci = calloc(1, sizeof *ci);
        if (!ci || !(ci->refused = json_object_new_object())) {
                free(ci);
                return NULL;
        }
        registry_init(&ci->registry, &d->log, d->registry.separator);
        registry_set_source(&ci->registry, &(struct registry_source){ .servers = own_servers, .userdata = c });
        /* A name the shared servers expose is theirs: an instance's gets the fallback form. */
        registry_set_outer(&ci->registry, &d->registry);
        registry_mark(&ci->registry, CATALOG_ALL_KINDS);
        views_init(&ci->views, &d->config.access, &ci->registry);
        c->access.instances = ci;
        return ci;
}

/* Whether c's class may see the server of pool p at all (a profile or a rule may hide it). */
static bool may_see(struct client *c, const struct pool *p) {
        struct access_target t = { ACCESS_SERVER, pool_name(p), NULL };

        if (p->config->disabled || (!c->access.ready && !client_view(c)))
                return false;
        return access_decide_class(&c->daemon->config.access, &c->access.class, &t).verdict != ACCESS_NOT_FOUND;
}

bool client_sees_pool(struct client *c, const struct pool *p) {
        struct access_target t = { ACCESS_SERVER, pool_name(p), NULL };

        if (p->config->disabled || (!c->access.ready && !client_view(c)))
                return false;
        return access_decide_class(&c->daemon->config.access, &c->access.class, &t).verdict == ACCESS_ALLOW;
}

static void record_refusal(struct client *c, struct client_instances *ci, const struct pool *p, const char *why) {
        if (json_object_object_get_ex(ci->refused, pool_name(p), NULL))
                return;
        client_log(c, LOG_WARNING, "%s", why ? why : "no instance: out of memory");
        json_object_object_add(ci->refused, pool_name(p), json_object_new_string(why ? why : "out of memory"));
}

void client_instances_need(struct client *c) {
        struct supervisor *sv = &c->daemon->supervisor;

        if (c->role != LISTEN_MCP)
                return;
        for (size_t i = 0; i < sv->n_pools; i++) {
                struct pool *p = sv->pools[i];
                struct server_owner owner;
                struct client_instances *ci;
                struct server *s;
                char *why = NULL;

                if (!may_see(c, p))
                        continue;
                owner = pool_owner_for(p, c->id, client_principal(c)->uid);
                ci = instances_make(c);
                if (!ci)
                        return;
                if (pool_instance(p, &owner, &s, &why) < 0)
                        record_refusal(c, ci, p, why);
                else
                        json_object_object_del(ci->refused, pool_name(p));
                free(why);
        }
}

void client_instances_changed(struct daemon *d, unsigned kinds) {
        if (kinds == 0)
                return;
        for (int st = 0; st < CLIENT_STATE_COUNT; st++) {
                struct client *c;

                TAILQ_FOREACH(c, &d->clients[st], entry)
                        if (c->access.instances)
                                registry_mark(&c->access.instances->registry, kinds);
        }
}

void client_instances_policy_changed(struct daemon *d) {
        for (int st = 0; st < CLIENT_STATE_COUNT; st++) {
                struct client *c;

                TAILQ_FOREACH(c, &d->clients[st], entry)
                        if (c->access.instances)
                                views_invalidate(&c->access.instances->views, &d->config.access);
        }
}

void client_instances_gone(struct client *c) {
        struct daemon *d = c->daemon;
        uid_t uid = client_principal(c)->uid;

        if (c->role != LISTEN_MCP)
                return;
        supervisor_client_gone(&d->supervisor, c->id);
        if (user_counts_get(&d->user_counts, uid) == 0)
                supervisor_user_left(&d->supervisor, uid);
}

struct client *client_instances_owner(struct daemon *d, const struct server *s) {
        struct client *c, *found = NULL;

        if (s->owner.kind != OWNER_CLIENT && s->owner.kind != OWNER_USER)
                return NULL;
        TAILQ_FOREACH(c, &d->clients[CLIENT_ACTIVE], entry) {
                if (!client_owns(c, s))
                        continue;
                if (found)
                        return NULL; /* which of them? */
                found = c;
        }
        return found;
}

const char *client_instances_refusal(const struct client *c, const char *name) {
        const struct client_instances *ci = c->access.instances;
        const char *sep = c->daemon->registry.separator;

        if (!ci)
                return NULL;
        json_object_object_foreach(ci->refused, server, why) {
                const struct pool *p = supervisor_find_pool(&c->daemon->supervisor, server);
                const char *prefix = p && p->config->prefix ? p->config->prefix : server;
                size_t len = strlen(prefix);

                if (len > 0 && strncmp(name, prefix, len) == 0 && strncmp(name + len, sep, strlen(sep)) == 0)
                        return json_object_get_string(why);
        }
        return NULL;
}
