/* What one class of connections (access.h) sees of the registry: for each list, the
 * entries it shows and the verdict on every entry, the list's signature as that class sees
 * it (list-changes.h compares a client's copy against it), and whether each server is
 * visible at all (its notifications and requests). A view is built once, when a connection
 * of its class first needs it, and dropped when the registry or the policy changes, so
 * lists are served from it and a call's check is one lookup.
 *
 * A server as a whole is visible when the rules allow it, or when they allow any of its
 * items: a rule that allows some tools of a server otherwise denied lets its notifications
 * reach whoever may call them. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "access.h"
#include "catalog.h"

struct registry;
struct registry_entry;
struct server;

struct view {
        struct access_class class;
        bool full;                                /* everything allowed: the registry as it is */
        uint8_t *verdicts[CATALOG_KIND_COUNT];    /* enum access_verdict per registry entry; NULL if full */
        size_t *shown[CATALOG_KIND_COUNT];        /* numbers of the entries listed, in order */
        size_t n_shown[CATALOG_KIND_COUNT];
        uint64_t signature[CATALOG_KIND_COUNT];
        json_object *servers;                     /* server name -> verdict, filled as asked */
};

struct views {
        const struct access_policy *policy;
        struct registry *registry;
        uint64_t registry_builds;                 /* the registry's count of builds the views are of */
        struct view **items;
        size_t n;
        uint64_t generation;                      /* counts the views dropped: a cached view pointer is
                                                   * good while this and the registry's builds are
                                                   * what they were (a read may rebuild the registry
                                                   * before views_get() notices: client-access.c) */
};

void views_init(struct views *v, const struct access_policy *policy, struct registry *registry);
void views_done(struct views *v);
/* The registry or the policy changed (policy may be a new one): every view is dropped. */
void views_invalidate(struct views *v, const struct access_policy *policy);
/* The view of class c, built now if needed; NULL when out of memory. The registry is
 * brought up to date first, and the views are dropped if it was rebuilt since they were
 * built. Valid, with the registry's entries it refers to, until the registry is next read
 * after a change (registry.h) or views_invalidate(): get it again after a registry_find(). */
struct view *views_get(struct views *v, const struct access_class *c);

/* The i-th entry c's view lists of kind (i < w->n_shown[kind]). */
const struct registry_entry *view_entry(const struct view *w, const struct registry *r, enum catalog_kind kind, size_t i);
/* The verdict on e, an entry of the registry's list of kind. */
enum access_verdict view_verdict(const struct view *w, const struct registry *r, enum catalog_kind kind,
                                 const struct registry_entry *e);
/* Whether s as a whole is visible to the view's class: ACCESS_ALLOW, _DENY or _NOT_FOUND. */
enum access_verdict view_server(struct view *w, const struct access_policy *a, const struct registry *r,
                                const struct server *s);

/* The access kind of a catalog kind's items (templates are resources). */
enum access_kind view_access_kind(enum catalog_kind kind);
