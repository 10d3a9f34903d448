/* subscriptions/listen; see sub-listen.h. */
#include "sub-listen.h"

#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client-access.h"
#include "daemon.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "macro.h"
#include "registry.h"
#include "request-meta.h"
#include "subscriptions.h"

#define META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* The filter's list flags and the lists each covers (resources/list_changed stands for
 * templates too, as in the legacy era). */
static const struct flag {
        const char *name;
        const char *method;
        unsigned kinds;
} flags[] = {
        { "toolsListChanged", "notifications/tools/list_changed", 1u << CATALOG_TOOLS },
        { "promptsListChanged", "notifications/prompts/list_changed", 1u << CATALOG_PROMPTS },
        { "resourcesListChanged", "notifications/resources/list_changed",
          1u << CATALOG_RESOURCES | 1u << CATALOG_TEMPLATES },
};

/* params with _meta naming the subscription (params consumed; NULL: none). */
static json_object *with_subscription(json_object *params, json_object *id) {
        json_object *meta = json_object_new_object();

        if (!params)
                params = json_object_new_object();
        json_object_object_add(meta, META_SUBSCRIPTION_ID, json_object_get(id));
        json_object_object_add(params, "_meta", meta);
        return params;
}

static void record(struct client *c, struct sub_listen *l) {
        struct client_lists lists;

        if (client_lists_get(c, &lists) < 0)
                return;
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                if (l->kinds & (1u << k))
                        l->signature[k] = client_lists_signature(&lists, k);
}

/* Whether another listen of c than l names uri. */
static bool held_elsewhere(const struct client *c, const struct sub_listen *l, const char *uri) {
        const struct sub_listen *o;

        LIST_FOREACH(o, &c->listens, entry)
                for (size_t i = 0; o != l && i < o->n_uris; i++)
                        if (strcmp(o->uris[i], uri) == 0)
                                return true;
        return false;
}

/* The URIs of list (a JSON array) c may read and whose servers take subscriptions,
 * subscribed for c and kept in l; the array of them, for the acknowledgement. A URI c may
 * not read, or that no ready server lists, is left out, as what the server does not honour. */
static json_object *subscribe_uris(struct client *c, struct sub_listen *l, json_object *list) {
        json_object *granted = json_object_new_array();
        size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;

        l->uris = calloc(n < SUB_LISTEN_MAX_URIS ? n + 1 : SUB_LISTEN_MAX_URIS, sizeof *l->uris);
        for (size_t i = 0; l->uris && i < n && l->n_uris < SUB_LISTEN_MAX_URIS; i++) {
                json_object *u = json_object_array_get_idx(list, i);
                const struct registry_entry *e;
                enum access_verdict verdict;
                const char *uri;

                if (!json_object_is_type(u, json_type_string))
                        continue;
                uri = json_object_get_string(u);
                e = client_access_find_uri(c, uri, &verdict);
                if (!e || verdict != ACCESS_ALLOW ||
                    subscriptions_add(daemon_subscriptions(c->daemon), c, e->server, uri) < 0 ||
                    !(l->uris[l->n_uris] = strdup(uri)))
                        continue;
                l->n_uris++;
                json_object_array_add(granted, json_object_new_string(uri));
        }
        return granted;
}

void sub_listen_open(struct client *c, struct jsonrpc_msg *m) {
        json_object *filter = NULL, *v, *granted, *ack;
        struct sub_listen *l;

        if (json_object_object_get_ex(m->params, "notifications", &filter) && !json_object_is_type(filter, json_type_object)) {
                client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"notifications\" must be an object", NULL);
                return;
        }
        if (!client_hold_request(c, m->id))
                return;
        l = calloc(1, sizeof *l);
        if (!l) {
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
                client_request_done(c);
                return;
        }
        l->id = json_object_get(m->id);
        granted = json_object_new_object();
        for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
                if (filter && json_object_object_get_ex(filter, flags[i].name, &v) && json_object_get_boolean(v)) {
                        l->kinds |= flags[i].kinds;
                        json_object_object_add(granted, flags[i].name, json_object_new_boolean(1));
                }
        record(c, l);
        if (filter && json_object_object_get_ex(filter, "resourceSubscriptions", &v)) {
                json_object *uris = subscribe_uris(c, l, v);

                if (json_object_array_length(uris) > 0)
                        json_object_object_add(granted, "resourceSubscriptions", uris);
                else
                        json_object_put(uris); /* none honoured: left out, as a type not supported */
        }
        LIST_INSERT_HEAD(&c->listens, l, entry);
        client_log(c, LOG_DEBUG, "listening for %s", json_object_to_json_string_ext(granted, JSON_C_TO_STRING_PLAIN));
        ack = json_object_new_object();
        json_object_object_add(ack, "notifications", granted);
        client_send_related(c, jsonrpc_notification("notifications/subscriptions/acknowledged", with_subscription(ack, l->id)),
                            l->id);
}

/* unsubscribe: its URIs no other listen of its client names are ended for the client
 * (false when the client is being freed, which subscriptions.c handles itself). */
static void listener_free(struct client *c, struct sub_listen *l, bool unsubscribe) {
        for (size_t i = 0; i < l->n_uris; i++) {
                if (unsubscribe && !held_elsewhere(c, l, l->uris[i]))
                        subscriptions_remove(daemon_subscriptions(c->daemon), c, l->uris[i]);
                free(l->uris[i]);
        }
        free(l->uris);
        LIST_REMOVE(l, entry);
        json_object_put(l->id);
        free(l);
}

bool sub_listen_cancel(struct client *c, json_object *id) {
        struct sub_listen *l;

        LIST_FOREACH(l, &c->listens, entry)
                if (json_object_equal(l->id, id)) {
                        listener_free(c, l, true);
                        client_request_done(c);
                        return true;
                }
        return false;
}

void sub_listen_end(struct client *c) {
        struct sub_listen *l;

        while ((l = LIST_FIRST(&c->listens))) {
                json_object *result = with_subscription(NULL, l->id), *id = json_object_get(l->id);

                listener_free(c, l, true);
                client_reply_result(c, id, result);
                json_object_put(id);
                client_request_done(c);
        }
}

void sub_listen_client_gone(struct client *c) {
        while (LIST_FIRST(&c->listens))
                listener_free(c, LIST_FIRST(&c->listens), false);
}

/* Tells l of each list it hears of whose signature in c's view is not what it was told. */
static void tell(struct client *c, struct sub_listen *l, const struct client_lists *lists) {
        for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
                bool changed = false;

                for (int k = 0; k < CATALOG_KIND_COUNT; k++) {
                        uint64_t now;

                        if (!(flags[i].kinds & l->kinds & (1u << k)))
                                continue;
                        now = client_lists_signature(lists, k);
                        changed |= now != l->signature[k];
                        l->signature[k] = now;
                }
                if (changed)
                        client_send_related(c, jsonrpc_notification(flags[i].method, with_subscription(NULL, l->id)), l->id);
        }
}

void sub_listen_lists_changed(struct daemon *d) {
        struct client *c, *next;

        for (c = TAILQ_FIRST(&d->clients[CLIENT_ACTIVE]); c; c = next) {
                struct client_lists lists;
                struct sub_listen *l, *l_next;

                next = TAILQ_NEXT(c, entry);
                if (LIST_EMPTY(&c->listens) || client_lists_get(c, &lists) < 0)
                        continue;
                /* A client dropped for not reading is freed later: its listeners stay until then. */
                for (l = LIST_FIRST(&c->listens); l && c->state == CLIENT_ACTIVE; l = l_next) {
                        l_next = LIST_NEXT(l, entry);
                        tell(c, l, &lists);
                }
        }
}

void sub_listen_resource_updated(struct client *c, const char *uri, json_object *params) {
        struct sub_listen *l;

        LIST_FOREACH(l, &c->listens, entry)
                for (size_t i = 0; i < l->n_uris; i++)
                        if (strcmp(l->uris[i], uri) == 0) {
                                client_send_related(c,
                                                    jsonrpc_notification("notifications/resources/updated",
                                                                         with_subscription(jsonrpc_copy_with(params, NULL, NULL), l->id)),
                                                    l->id);
                                break;
                        }
}
