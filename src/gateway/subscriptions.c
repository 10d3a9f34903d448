/* Reference-counted resource subscriptions; see subscriptions.h. */
#include "subscriptions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "client.h"
#include "jsonrpc.h"
#include "log.h"
#include "names.h"
#include "registry.h"
#include "server-conn.h"
#include "server.h"
#include "sub-listen.h"

/* Subscriptions are found by a hash of their URI; URIs whose hashes collide are chained,
 * and so are those of one URI at several servers (instances of a server list the same
 * URIs, each for its own clients). The one of uri at s, or with s NULL at a shared server. */
static struct subscription *find(struct subscriptions *subs, const struct server *s, const char *uri) {
        struct subscription *sub;

        for (sub = idmap_get(&subs->by_uri, name_hash(uri)); sub; sub = sub->same_hash)
                if (strcmp(sub->uri, uri) == 0 && (s ? sub->server == s : sub->server->owner.kind == OWNER_NONE))
                        return sub;
        return NULL;
}

static int index_add(struct subscriptions *subs, struct subscription *sub) {
        int64_t key = name_hash(sub->uri);

        sub->same_hash = idmap_get(&subs->by_uri, key);
        return idmap_put(&subs->by_uri, key, sub);
}

static void index_remove(struct subscriptions *subs, struct subscription *sub) {
        int64_t key = name_hash(sub->uri);
        struct subscription *prev = idmap_get(&subs->by_uri, key);

        if (prev == sub) {
                if (sub->same_hash) /* replaces the entry: cannot fail */
                        (void)idmap_put(&subs->by_uri, key, sub->same_hash);
                else
                        idmap_remove(&subs->by_uri, key);
                return;
        }
        while (prev && prev->same_hash != sub)
                prev = prev->same_hash;
        if (prev)
                prev->same_hash = sub->same_hash;
}

static struct subscriber *subscriber_of(const struct subscription *sub, const struct client *c) {
        for (size_t i = 0; i < sub->n_subscribers; i++)
                if (sub->subscribers[i]->client == c)
                        return sub->subscribers[i];
        return NULL;
}


static void sub_free(struct subscriptions *subs, struct subscription *sub) {
        for (size_t i = 0; i < sub->n_subscribers; i++) {
                LIST_REMOVE(sub->subscribers[i], by_client);
                free(sub->subscribers[i]);
        }
        index_remove(subs, sub);
        TAILQ_REMOVE(&subs->all, sub, entry);
        free(sub->uri);
        free(sub->subscribers);
        free(sub);
}

/* Ends one client's hold; the last one unsubscribes at the server. */
static void drop_subscriber(struct subscriptions *subs, struct subscriber *sr) {
        struct subscription *sub = sr->sub;

        sub->subscribers[sr->index] = sub->subscribers[--sub->n_subscribers];
        sub->subscribers[sr->index]->index = sr->index;
        LIST_REMOVE(sr, by_client);
        free(sr);
        if (sub->n_subscribers == 0) {
                server_resource_subscription(sub->server, sub->uri, false);
                sub_free(subs, sub);
        }
}

static int add_client(struct subscription *sub, struct client *c) {
        struct subscriber *sr;

        if (subscriber_of(sub, c))
                return 0;
        if (sub->n_subscribers == sub->cap) {
                size_t cap = sub->cap ? sub->cap * 2 : 4;
                struct subscriber **v = realloc(sub->subscribers, cap * sizeof *v);
                if (!v)
                        return -1;
                sub->subscribers = v;
                sub->cap = cap;
        }
        sr = calloc(1, sizeof *sr);
        if (!sr)
                return -1;
        *sr = (struct subscriber){ .sub = sub, .client = c, .index = sub->n_subscribers };
        sub->subscribers[sub->n_subscribers++] = sr;
        LIST_INSERT_HEAD(&c->subscriptions, sr, by_client);
        return 0;
}

int subscriptions_add(struct subscriptions *subs, struct client *c, struct server *s, const char *uri) {
        struct subscription *sub = find(subs, s, uri), *shared = s->owner.kind == OWNER_NONE ? find(subs, NULL, uri) : NULL;
        json_object *cap, *v;

        if (!sub && shared)
                return -EXDEV;
        if (!sub) {
                cap = catalog_capability(&s->catalog, "resources");
                if (!cap || !json_object_object_get_ex(cap, "subscribe", &v) || !json_object_get_boolean(v))
                        return -EOPNOTSUPP;
                sub = calloc(1, sizeof *sub);
                if (!sub || !(sub->uri = strdup(uri)) || index_add(subs, sub) < 0) {
                        if (sub)
                                free(sub->uri);
                        free(sub);
                        return -ENOMEM;
                }
                sub->server = s;
                TAILQ_INSERT_TAIL(&subs->all, sub, entry);
                server_resource_subscription(sub->server, uri, true);
        }
        return add_client(sub, c) < 0 ? -ENOMEM : 0;
}

void subscriptions_remove(struct subscriptions *subs, struct client *c, const char *uri) {
        struct subscriber *sr;

        LIST_FOREACH(sr, &c->subscriptions, by_client)
                if (strcmp(sr->sub->uri, uri) == 0) {
                        drop_subscriber(subs, sr);
                        return;
                }
}

void subscriptions_client_gone(struct subscriptions *subs, struct client *c) {
        struct subscriber *sr;

        while ((sr = LIST_FIRST(&c->subscriptions)))
                drop_subscriber(subs, sr);
}

void subscriptions_server_ready(struct subscriptions *subs, struct server *s) {
        struct subscription *sub;

        TAILQ_FOREACH(sub, &subs->all, entry)
                if (sub->server == s)
                        server_resource_subscription(s, sub->uri, true);
}

/* Whether c may go on hearing of sub's URI: the verdict on the entry its view finds for it
 * (of sub's server), or, while that server lists nothing (restarting), on the URI itself. */
static bool may_hold(struct client *c, const struct subscription *sub) {
        enum access_verdict verdict;
        const struct registry_entry *e = client_access_find_uri(c, sub->uri, &verdict);

        if (e)
                return verdict == ACCESS_ALLOW && e->server == sub->server;
        return !server_serving(sub->server) && client_sees_server(c, sub->server) &&
               client_access_uri(c, sub->server, sub->uri) == ACCESS_ALLOW;
}

void subscriptions_client_redecide(struct subscriptions *subs, struct client *c) {
        struct subscriber *sr, *next;

        for (sr = LIST_FIRST(&c->subscriptions); sr; sr = next) {
                next = LIST_NEXT(sr, by_client);
                if (may_hold(c, sr->sub))
                        continue;
                client_log(c, LOG_INFO, "its subscription to %s ended: it may no longer read it", sr->sub->uri);
                drop_subscriber(subs, sr);
        }
}

void subscriptions_updated(struct subscriptions *subs, struct server *s, struct jsonrpc_msg *m) {
        struct subscription *sub;
        json_object *v;

        if (!json_object_is_type(m->params, json_type_object) || !json_object_object_get_ex(m->params, "uri", &v) ||
            !json_object_is_type(v, json_type_string))
                return;
        sub = find(subs, s, json_object_get_string(v));
        if (!sub)
                return;
        for (size_t i = 0; i < sub->n_subscribers; i++) {
                struct client *c = sub->subscribers[i]->client;

                if (!may_hold(c, sub))
                        continue;
                if (session_stateless(&c->session)) /* a modern client's, under its listens */
                        sub_listen_resource_updated(c, sub->uri, m->params);
                else
                        client_send(c, jsonrpc_notification("notifications/resources/updated", json_object_get(m->params)));
        }
}

void subscriptions_init(struct subscriptions *subs) {
        TAILQ_INIT(&subs->all);
        idmap_init(&subs->by_uri);
}

void subscriptions_done(struct subscriptions *subs) {
        struct subscription *sub;

        while ((sub = TAILQ_FIRST(&subs->all)))
                sub_free(subs, sub);
        idmap_done(&subs->by_uri);
}

void subscriptions_server_gone(struct subscriptions *subs, const struct server *s) {
        struct subscription *sub, *next;

        for (sub = TAILQ_FIRST(&subs->all); sub; sub = next) {
                next = TAILQ_NEXT(sub, entry);
                if (sub->server == s)
                        sub_free(subs, sub);
        }
}
