/* A client's class and view; see client-access.h. */
#include "client-access.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "client.h"
#include "daemon.h"
#include "view.h"

void client_access_done(struct client_access *a) {
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

void client_access_policy_changed(struct daemon *d) {
        views_invalidate(&d->views, &d->config.access);
        for (int s = 0; s < CLIENT_STATE_COUNT; s++) {
                struct client *c;

                TAILQ_FOREACH(c, &d->clients[s], entry) {
                        /* A profile the new policy lacks narrows to nothing (access.h). */
                        if (c->access.ready && compute_class(c) < 0)
                                client_log(c, LOG_WARNING, "out of memory computing its access class; kept the old one");
                        c->access.view = NULL;
                }
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

enum access_verdict client_access_entry(struct client *c, enum catalog_kind kind, const struct registry_entry *e) {
        struct view *w = client_view(c);

        return w ? view_verdict(w, &c->daemon->registry, kind, e) : ACCESS_NOT_FOUND;
}

static const struct registry_entry *known(struct client *c, enum catalog_kind kind, const struct registry_entry *e,
                                         enum access_verdict *verdict) {
        *verdict = e ? client_access_entry(c, kind, e) : ACCESS_NOT_FOUND;
        return *verdict == ACCESS_NOT_FOUND ? NULL : e;
}

const struct registry_entry *client_access_find(struct client *c, enum catalog_kind kind, const char *key,
                                                enum access_verdict *verdict) {
        return known(c, kind, registry_find(&c->daemon->registry, kind, key), verdict);
}

const struct registry_entry *client_access_find_uri(struct client *c, const char *uri, enum access_verdict *verdict) {
        const struct registry_entry *e = client_access_find(c, CATALOG_RESOURCES, uri, verdict);

        return e ? e : known(c, CATALOG_TEMPLATES, registry_match_template(&c->daemon->registry, uri), verdict);
}

bool client_sees_server(struct client *c, const struct server *s) {
        struct view *w = client_view(c);

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
