/* What a class of connections sees; see view.h. */
#include "view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "server.h"

enum access_kind view_access_kind(enum catalog_kind kind) {
        static const enum access_kind kinds[CATALOG_KIND_COUNT] = {
                [CATALOG_TOOLS] = ACCESS_TOOL, [CATALOG_PROMPTS] = ACCESS_PROMPT,
                [CATALOG_RESOURCES] = ACCESS_RESOURCE, [CATALOG_TEMPLATES] = ACCESS_RESOURCE,
        };
        return kinds[kind];
}

static void view_free(struct view *w) {
        if (!w)
                return;
        access_class_done(&w->class);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++) {
                free(w->verdicts[k]);
                free(w->shown[k]);
        }
        json_object_put(w->servers);
        free(w);
}

static bool class_sees_all(const struct access_policy *a, const struct access_class *c) {
        return !c->profile && a->n_rules == 0 && a->default_action == ACCESS_RULE_ALLOW;
}

static int build_kind(struct view *w, const struct access_policy *a, const struct registry *r, enum catalog_kind kind) {
        const struct registry_list *l = &r->lists[kind];

        w->verdicts[kind] = calloc(l->n ? l->n : 1, sizeof *w->verdicts[kind]);
        w->shown[kind] = calloc(l->n ? l->n : 1, sizeof *w->shown[kind]);
        if (!w->verdicts[kind] || !w->shown[kind])
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                const struct registry_entry *e = &l->entries[i];
                struct access_target t = { view_access_kind(kind), e->server->config->name, e->key };
                enum access_verdict v = w->full ? ACCESS_ALLOW : access_decide_class(a, &w->class, &t).verdict;

                w->verdicts[kind][i] = (uint8_t)v;
                if (v == ACCESS_ALLOW)
                        w->shown[kind][w->n_shown[kind]++] = i;
        }
        w->signature[kind] = w->n_shown[kind] == l->n ? l->signature
                                                      : registry_signature_of(l, w->shown[kind], w->n_shown[kind]);
        return 0;
}

static struct view *view_build(const struct access_policy *a, const struct registry *r, const struct access_class *c) {
        struct view *w = calloc(1, sizeof *w);

        if (!w || access_class_copy(&w->class, c) < 0 || !(w->servers = json_object_new_object())) {
                view_free(w);
                return NULL;
        }
        w->full = class_sees_all(a, c);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                if (build_kind(w, a, r, k) < 0) {
                        view_free(w);
                        return NULL;
                }
        return w;
}

void views_init(struct views *v, const struct access_policy *policy, struct registry *registry) {
        *v = (struct views){ .policy = policy, .registry = registry };
}

static void views_clear(struct views *v) {
        for (size_t i = 0; i < v->n; i++)
                view_free(v->items[i]);
        free(v->items);
        v->items = NULL;
        v->n = 0;
}

void views_done(struct views *v) {
        views_clear(v);
        *v = (struct views){};
}

void views_invalidate(struct views *v, const struct access_policy *policy) {
        views_clear(v);
        v->policy = policy;
        v->generation++;
}

struct view *views_get(struct views *v, const struct access_class *c) {
        struct view **items, *w;

        (void)registry_sync(v->registry);
        if (v->registry->builds != v->registry_builds) {
                views_clear(v);
                v->registry_builds = v->registry->builds;
                v->generation++;
        }
        for (size_t i = 0; i < v->n; i++)
                if (access_class_equal(&v->items[i]->class, c))
                        return v->items[i];
        items = realloc(v->items, (v->n + 1) * sizeof *items);
        if (!items)
                return NULL;
        v->items = items;
        w = view_build(v->policy, v->registry, c);
        if (w)
                v->items[v->n++] = w;
        return w;
}

const struct registry_entry *view_entry(const struct view *w, const struct registry *r, enum catalog_kind kind, size_t i) {
        return &r->lists[kind].entries[w->shown[kind][i]];
}

enum access_verdict view_verdict(const struct view *w, const struct registry *r, enum catalog_kind kind,
                                 const struct registry_entry *e) {
        return (enum access_verdict)w->verdicts[kind][e - r->lists[kind].entries];
}

static bool any_item_allowed(const struct view *w, const struct registry *r, const struct server *s) {
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                for (size_t i = 0; i < w->n_shown[k]; i++)
                        if (view_entry(w, r, k, i)->server == s)
                                return true;
        return false;
}

enum access_verdict view_server(struct view *w, const struct access_policy *a, const struct registry *r,
                                const struct server *s) {
        const char *name = s->config->name;
        struct access_target t = { ACCESS_SERVER, name, NULL };
        enum access_verdict v;
        json_object *known;

        if (w->full)
                return ACCESS_ALLOW;
        if (json_object_object_get_ex(w->servers, name, &known))
                return (enum access_verdict)json_object_get_int(known);
        v = access_decide_class(a, &w->class, &t).verdict;
        if (v == ACCESS_DENY && any_item_allowed(w, r, s))
                v = ACCESS_ALLOW;
        json_object_object_add(w->servers, name, json_object_new_int(v));
        return v;
}
