/* A client's class and view; see client-access.h. */
#include "client-access.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "server-conn.h"
#include "client.h"
#include "client-instances.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "subscriptions.h"
#include "view.h"

/* -32002 is "resource not found" from 2024-11-05 to 2025-11-25. */
#define RESOURCE_NOT_FOUND (-32002)

void client_access_done(struct client_access *a) {
        client_instances_free(a->instances);
        access_class_done(&a->class);
        free(a->profile);
        free(a->asked);
        *a = (struct client_access){};
}

static int compute_class(struct client *c) {
        struct client_access *a = &c->access;
        struct access_who who;
        struct access_class class;
        int r;

        client_access_who(c, &who);
        who.profile = a->profile;
        r = access_class_of(&c->daemon->config.access, &who, &class);
        if (r < 0)
                return r;
        access_class_done(&a->class);
        a->class = class;
        a->ready = true;
        a->view = NULL;
        return 0;
}

const char *client_access_profile(const struct client *c) {
        return c->access.profile;
}

int client_access_choose(struct client *c, const char *profile) {
        char *copy = NULL;

        if (profile && !access_profile_find(&c->daemon->config.access, profile))
                return -ENOENT;
        if (profile && !(copy = strdup(profile)))
                return -ENOMEM;
        free(c->access.profile);
        c->access.profile = copy;
        return compute_class(c);
}

static bool same_profile(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

int client_access_ask(struct client *c, const char *profile) {
        struct client_access *a = &c->access;
        bool following = a->ready && same_profile(a->profile, a->asked);
        char *copy = NULL;

        if (profile && !(copy = strdup(profile)))
                return -ENOMEM;
        free(a->asked);
        a->asked = copy;
        return following && !same_profile(a->profile, profile) ? client_access_choose(c, profile) : 0;
}

void client_access_redecide(struct client *c) {
        /* A profile the new policy lacks narrows to nothing (access.h). */
        if (c->access.ready && compute_class(c) < 0)
                client_log(c, LOG_WARNING, "out of memory computing its access class; kept the old one");
        c->access.view = NULL;
        subscriptions_client_redecide(&c->daemon->subscriptions, c);
}

void client_access_policy_changed(struct daemon *d) {
        views_invalidate(&d->views, &d->config.access);
        client_instances_policy_changed(d);
        for (int s = 0; s < CLIENT_STATE_COUNT; s++) {
                struct client *c;

                TAILQ_FOREACH(c, &d->clients[s], entry)
                        client_access_redecide(c);
        }
}

struct view *client_view(struct client *c) {
        struct client_access *a = &c->access;
        struct daemon *d = c->daemon;

        (void)registry_sync(&d->registry);
        if (a->view && a->generation == d->views.generation && a->registry_builds == d->registry.builds)
                return a->view;
        if (!a->ready && compute_class(c) < 0)
                return NULL;
        a->view = views_get(&d->views, &a->class);
        a->generation = d->views.generation;
        a->registry_builds = d->registry.builds;
        return a->view;
}

/* c's view of its own instances; NULL when it has none (or out of memory). */
static struct view *own_view(struct client *c) {
        struct client_instances *ci = client_instances_of(c);

        if (!ci || (!c->access.ready && compute_class(c) < 0))
                return NULL;
        return views_get(&ci->views, &c->access.class);
}

int client_lists_get(struct client *c, struct client_lists *ret) {
        struct client_instances *ci = client_instances_of(c);

        *ret = (struct client_lists){ .registry = { &c->daemon->registry, ci ? &ci->registry : NULL } };
        ret->view[0] = client_view(c);
        ret->view[1] = ci ? own_view(c) : NULL;
        return ret->view[0] && (!ci || ret->view[1]) ? 0 : -ENOMEM;
}

size_t client_lists_size(const struct client_lists *l, enum catalog_kind kind) {
        return l->view[0]->n_shown[kind] + (l->view[1] ? l->view[1]->n_shown[kind] : 0);
}

const struct registry_entry *client_lists_entry(const struct client_lists *l, enum catalog_kind kind, size_t i) {
        size_t shared = l->view[0]->n_shown[kind];

        return i < shared ? view_entry(l->view[0], l->registry[0], kind, i)
                          : view_entry(l->view[1], l->registry[1], kind, i - shared);
}

uint64_t client_lists_signature(const struct client_lists *l, enum catalog_kind kind) {
        uint64_t h = l->view[0]->signature[kind];

        /* With no instance, the shared view's alone, as before instances existed. */
        return l->view[1] ? (h ^ 0x9e3779b97f4a7c15ull) * 0x100000001b3ull + l->view[1]->signature[kind] : h;
}

enum access_verdict client_access_entry(struct client *c, enum catalog_kind kind, const struct registry_entry *e) {
        struct client_instances *ci;
        struct view *w;

        if (e->server->owner.kind == OWNER_NONE) {
                w = client_view(c);
                return w ? view_verdict(w, &c->daemon->registry, kind, e) : ACCESS_NOT_FOUND;
        }
        ci = client_instances_of(c);
        w = client_owns(c, e->server) ? own_view(c) : NULL;
        return w ? view_verdict(w, &ci->registry, kind, e) : ACCESS_NOT_FOUND;
}

static const struct registry_entry *known(struct client *c, enum catalog_kind kind, const struct registry_entry *e,
                                         enum access_verdict *verdict) {
        *verdict = e ? client_access_entry(c, kind, e) : ACCESS_NOT_FOUND;
        return *verdict == ACCESS_NOT_FOUND ? NULL : e;
}

/* In the shared registry first: a name both have is the shared server's. */
static const struct registry_entry *find(struct client *c, enum catalog_kind kind, const char *key) {
        const struct registry_entry *e = registry_find(&c->daemon->registry, kind, key);
        struct client_instances *ci;

        if (e)
                return e;
        client_instances_need(c);
        ci = client_instances_of(c);
        return ci ? registry_find(&ci->registry, kind, key) : NULL;
}

static const struct registry_entry *match_template(struct client *c, const char *uri) {
        const struct registry_entry *e = registry_match_template(&c->daemon->registry, uri);
        struct client_instances *ci = client_instances_of(c);

        return e || !ci ? e : registry_match_template(&ci->registry, uri);
}

const struct registry_entry *client_access_find(struct client *c, enum catalog_kind kind, const char *key,
                                                enum access_verdict *verdict) {
        return known(c, kind, find(c, kind, key), verdict);
}

/* The verdict on t for c's view w, out of the rules and the profile. */
static enum access_verdict decide(struct client *c, const struct view *w, const struct access_target *t) {
        return w->full ? ACCESS_ALLOW : access_decide_class(&c->daemon->config.access, &w->class, t).verdict;
}

enum access_verdict client_access_uri(struct client *c, const struct server *s, const char *uri) {
        struct view *w = client_view(c);

        return w ? decide(c, w, &(struct access_target){ ACCESS_RESOURCE, s->config->name, uri }) : ACCESS_NOT_FOUND;
}

const struct registry_entry *client_access_find_uri(struct client *c, const char *uri, enum access_verdict *verdict) {
        const struct registry_entry *e = client_access_find(c, CATALOG_RESOURCES, uri, verdict);
        enum access_verdict v;

        if (e)
                return e;
        e = known(c, CATALOG_TEMPLATES, match_template(c, uri), verdict);
        if (!e)
                return NULL;
        /* The template's verdict is on its uriTemplate; what is read is the URI. Not found
         * outweighs denied, which outweighs allowed (the enum's order). */
        v = client_access_uri(c, e->server, uri);
        if (v > *verdict)
                *verdict = v;
        return *verdict == ACCESS_NOT_FOUND ? NULL : e;
}

bool client_sees_server(struct client *c, const struct server *s) {
        struct view *w;

        if (s->owner.kind != OWNER_NONE) {
                w = client_owns(c, s) ? own_view(c) : NULL;
                return w && view_server(w, &c->daemon->config.access, &client_instances_of(c)->registry, s) == ACCESS_ALLOW;
        }
        w = client_view(c);
        return w && view_server(w, &c->daemon->config.access, &c->daemon->registry, s) == ACCESS_ALLOW;
}

void client_access_deny(struct client *c, json_object *id, const char *method, int code, const char *what,
                        const char *target, const char *server) {
        struct daemon *d = c->daemon;
        struct audit_record r = { .server = server, .method = method, .target = target, .outcome = AUDIT_DENIED };
        json_object *data = json_object_new_object();
        char message[400];

        snprintf(message, sizeof message, "permission denied: %s '%.300s'", what, target);
        json_object_object_add(data, what, json_object_new_string(target));
        client_reply_error(c, id, code, message, data);
        client_audit_subject(c, &r);
        audit_emit(&d->log, d->config.audit, &r);
}

/* A denial with no request to answer (a notification, an answer), recorded as
 * client_access_deny() records one. */
static void audit_denied(struct client *c, const char *method, const char *target, const char *server) {
        struct audit_record r = { .server = server, .method = method, .target = target, .outcome = AUDIT_DENIED };

        client_audit_subject(c, &r);
        audit_emit(&c->daemon->log, c->daemon->config.audit, &r);
}

static const char *kind_word(enum catalog_kind kind) {
        return kind == CATALOG_TOOLS ? "tool" : kind == CATALOG_PROMPTS ? "prompt" : "resource";
}

/* The verdict on ask of m for c toward s. */
static enum access_verdict pass_verdict(struct client *c, const struct server *s, const struct access_ask *ask) {
        struct view *w = client_view(c);
        const struct registry_entry *e;
        enum access_verdict v = ACCESS_NOT_FOUND;

        if (!w)
                return ACCESS_DENY; /* out of memory: refuse */
        /* Another owner's instance is none of this client's world. */
        if (s->owner.kind != OWNER_NONE && !client_owns(c, s))
                return ACCESS_NOT_FOUND;
        switch (ask->about) {
        case ACCESS_ABOUT_SERVER:
                return decide(c, w, &(struct access_target){ ACCESS_SERVER, s->config->name, NULL });
        case ACCESS_ABOUT_ITEM:
                e = ask->kind == CATALOG_RESOURCES ? client_access_find_uri(c, ask->key, &v)
                                                   : client_access_find(c, ask->kind, ask->key, &v);
                /* An item of another server is none of this one's: the caller routed wrong. */
                return e && e->server != s ? ACCESS_DENY : v;
        case ACCESS_ABOUT_ASKED:
                return client_sees_server(c, s) ? ACCESS_ALLOW : ACCESS_DENY;
        }
        return ACCESS_DENY;
}

/* A request refused by client_access_pass(), answered and audited. */
static void refuse_request(struct client *c, const struct server *s, const struct jsonrpc_msg *m,
                           const struct access_ask *ask, enum access_verdict v) {
        int code = strcmp(m->method, "resources/read") == 0 ? RESOURCE_NOT_FOUND : JSONRPC_INVALID_PARAMS;
        char message[256];

        if (ask->about == ACCESS_ABOUT_ITEM && v == ACCESS_DENY) {
                client_access_deny(c, m->id, m->method, code, kind_word(ask->kind), ask->key, s->config->name);
                return;
        }
        if (ask->about == ACCESS_ABOUT_ITEM) {
                /* Not in its world: as a target that does not exist (method-forward.c). */
                snprintf(message, sizeof message, "Unknown %s: %.200s", kind_word(ask->kind), ask->key);
                client_reply_error(c, m->id, code, message, NULL);
                audit_denied(c, m->method, ask->key, s->config->name);
                return;
        }
        if (v == ACCESS_DENY) {
                json_object *data = json_object_new_object();

                snprintf(message, sizeof message, "permission denied: method '%.200s'", m->method);
                json_object_object_add(data, "method", json_object_new_string(m->method));
                client_reply_error(c, m->id, JSONRPC_METHOD_NOT_FOUND, message, data);
        } else {
                /* Outside its world: what a method no server takes gets (method-passthrough.c). */
                snprintf(message, sizeof message, "Method not found: %.200s", m->method);
                client_reply_error(c, m->id, JSONRPC_METHOD_NOT_FOUND, message, NULL);
        }
        audit_denied(c, m->method, NULL, s->config->name);
}

bool client_access_pass(struct client *c, const struct server *s, const struct jsonrpc_msg *m, const struct access_ask *ask) {
        enum access_verdict v = pass_verdict(c, s, ask);

        if (v == ACCESS_ALLOW)
                return true;
        if (m->kind == JSONRPC_REQUEST) {
                refuse_request(c, s, m, ask, v);
                return false;
        }
        client_log(c, LOG_DEBUG, "dropped its %s %s to server '%s': %s", m->kind == JSONRPC_NOTIFICATION ? "notification" : "answer",
                   m->method ? m->method : "", s->config->name, access_verdict_to_string(v));
        audit_denied(c, m->method ? m->method : "response", ask->about == ACCESS_ABOUT_ITEM ? ask->key : NULL, s->config->name);
        return false;
}

void client_access_notify(struct client *c, struct server *s, const struct jsonrpc_msg *m) {
        if (!server_serving(s)) {
                client_log(c, LOG_DEBUG, "ignoring notification %s (server '%s' is not ready)", m->method, s->config->name);
                return;
        }
        if (client_access_pass(c, s, m, &(struct access_ask){ .about = ACCESS_ABOUT_SERVER }))
                (void)child_send(server_child(s), json_object_get(m->root));
}

/* One user's view is another's unless no rule, profile or instance tells them apart. */
const char *client_cache_scope(const struct client *c) {
        const struct daemon *d = c->daemon;
        const struct access_policy *a = &d->config.access;

        if (a->n_rules > 0 || a->n_profiles > 0 || a->default_action != ACCESS_RULE_ALLOW || d->supervisor.n_pools > 0)
                return "private";
        return "public";
}

void client_add_cache_hints(const struct client *c, json_object *result) {
        json_object_object_add(result, "ttlMs", json_object_new_int64(CLIENT_CACHE_TTL_MS));
        json_object_object_add(result, "cacheScope", json_object_new_string(client_cache_scope(c)));
}
