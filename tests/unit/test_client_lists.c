/* Unit tests for a client's lists over two registries (client-access.h's client_lists):
 * the shared servers' view, then the client's own instances' (client-instances.h), with
 * cursors over both and a signature of both; and who owns an instance (client_owns()).
 * The servers are fakes built by hand, as in test_view.c; the clients too (only the fields
 * client_owns() reads). The daemon around them is covered by tests/integration/test_instances.c. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client-access.h"
#include "client-instances.h"
#include "config.h"
#include "log.h"
#include "registry.h"
#include "server.h"
#include "unit-helpers.h"
#include "view.h"

static struct logger lg = { .max_priority = LOG_ERR, .identifier = "unit" };
static struct registry shared, own;
static struct config cfg;
static struct config_problems probs;
static struct views shared_views, own_views;
static struct server *fakes[6];
static size_t n_fakes;

static void setup(void) {
        registry_init(&shared, &lg, NULL);
        registry_init(&own, &lg, NULL);
        config_init_defaults(&cfg);
        views_init(&shared_views, &cfg.access, &shared);
        views_init(&own_views, &cfg.access, &own);
}

static void teardown(void) {
        views_done(&shared_views);
        views_done(&own_views);
        registry_done(&shared);
        registry_done(&own);
        config_done(&cfg);
        problems_done(&probs);
        for (size_t i = 0; i < n_fakes; i++) {
                catalog_done(&fakes[i]->catalog);
                free(fakes[i]->config->name);
                free(fakes[i]->config->prefix);
                free(fakes[i]->config);
                free(fakes[i]);
        }
        n_fakes = 0;
}

TestSuite(client_lists, .init = setup, .fini = teardown);

static struct server *fake(const char *name, struct server_owner owner, const char *tools) {
        struct server *s = calloc(1, sizeof *s);
        struct server_config *c = calloc(1, sizeof *c);

        cr_assert(s && c);
        c->name = strdup(name);
        s->config = c;
        s->owner = owner;
        s->state = SERVER_READY;
        catalog_init(&s->catalog);
        s->catalog.lists[CATALOG_TOOLS] = list_of(CATALOG_TOOLS, tools);
        fakes[n_fakes++] = s;
        return s;
}

static void policy(const char *settings) {
        char text[4096];

        snprintf(text, sizeof text, "{\"mcpvisor\": {%s}, \"mcpServers\": {}}", settings);
        config_done(&cfg);
        problems_done(&probs);
        cr_assert_eq(config_parse(text, strlen(text), &cfg, &probs), 0, "%s", probs.count ? probs.items[0].message : "");
        views_invalidate(&shared_views, &cfg.access);
        views_invalidate(&own_views, &cfg.access);
}

static struct view *view_of(struct views *v, unsigned uid) {
        struct access_who who = { .uid = uid, .gid = uid };
        struct access_class c = {};
        struct view *w;

        cr_assert_eq(access_class_of(&cfg.access, &who, &c), 0);
        w = views_get(v, &c);
        access_class_done(&c);
        cr_assert_not_null(w);
        return w;
}

/* A shared server s with two tools, and client 7's instance of c with three. */
static void shared_and_own(const char *settings) {
        struct server *s = fake("s", (struct server_owner){ .kind = OWNER_NONE }, "[{\"name\": \"echo\"}, {\"name\": \"add\"}]");
        struct server *c = fake("c", (struct server_owner){ .kind = OWNER_CLIENT, .client_id = 7 },
                                "[{\"name\": \"navigate\"}, {\"name\": \"snapshot\"}, {\"name\": \"remember\"}]");

        registry_rebuild(&shared, &s, 1, CATALOG_ALL_KINDS);
        registry_rebuild(&own, &c, 1, CATALOG_ALL_KINDS);
        policy(settings);
}

static struct client_lists lists(unsigned uid, bool with_own) {
        return (struct client_lists){ .registry = { &shared, with_own ? &own : NULL },
                                      .view = { view_of(&shared_views, uid), with_own ? view_of(&own_views, uid) : NULL } };
}

Test(client_lists, shared_then_own_under_the_same_names) {
        shared_and_own("\"logLevel\": \"info\"");
        struct client_lists l = lists(1000, true);
        static const char *const want[] = { "s__echo", "s__add", "c__navigate", "c__snapshot", "c__remember" };

        cr_assert_eq(client_lists_size(&l, CATALOG_TOOLS), 5);
        for (size_t i = 0; i < 5; i++)
                cr_assert_str_eq(client_lists_entry(&l, CATALOG_TOOLS, i)->key, want[i], "item %zu", i);
        cr_assert_eq(client_lists_entry(&l, CATALOG_TOOLS, 3)->server, fakes[1], "an entry of its own registry");
        cr_assert_eq(client_lists_size(&l, CATALOG_PROMPTS), 0);
}

Test(client_lists, without_instances_the_shared_list_alone) {
        shared_and_own("\"logLevel\": \"info\"");
        struct client_lists l = lists(1000, false);

        cr_assert_eq(client_lists_size(&l, CATALOG_TOOLS), 2);
        cr_assert_eq(client_lists_signature(&l, CATALOG_TOOLS), l.view[0]->signature[CATALOG_TOOLS],
                     "a client with no instance is told of changes as before");
}

Test(client_lists, signature_covers_both) {
        shared_and_own("\"logLevel\": \"info\"");
        struct client_lists with = lists(1000, true), without = lists(1000, false);
        uint64_t both = client_lists_signature(&with, CATALOG_TOOLS);

        cr_assert_neq(both, client_lists_signature(&without, CATALOG_TOOLS));
        /* its instance's list changes: its signature does, the shared one's does not */
        catalog_list_unref(fakes[1]->catalog.lists[CATALOG_TOOLS]);
        fakes[1]->catalog.lists[CATALOG_TOOLS] = list_of(CATALOG_TOOLS, "[{\"name\": \"navigate\"}]");
        registry_rebuild(&own, &fakes[1], 1, CATALOG_ALL_KINDS);
        struct client_lists after = lists(1000, true);
        cr_assert_eq(after.view[0]->signature[CATALOG_TOOLS], with.view[0]->signature[CATALOG_TOOLS]);
        cr_assert_neq(client_lists_signature(&after, CATALOG_TOOLS), both);
        cr_assert_eq(client_lists_size(&after, CATALOG_TOOLS), 3);
}

Test(client_lists, rules_apply_to_an_instance_as_to_a_shared_server) {
        shared_and_own("\"access\": {\"rules\": [{\"tools\": [\"c__remember\", \"s__add\"], \"action\": \"deny\"}]}");
        struct client_lists l = lists(1000, true);

        cr_assert_eq(client_lists_size(&l, CATALOG_TOOLS), 3);
        cr_assert_str_eq(client_lists_entry(&l, CATALOG_TOOLS, 0)->key, "s__echo");
        cr_assert_str_eq(client_lists_entry(&l, CATALOG_TOOLS, 1)->key, "c__navigate");
        cr_assert_str_eq(client_lists_entry(&l, CATALOG_TOOLS, 2)->key, "c__snapshot");
        const struct registry_entry *e = registry_find(&own, CATALOG_TOOLS, "c__remember");
        cr_assert_eq(view_verdict(l.view[1], &own, CATALOG_TOOLS, e), ACCESS_DENY);
}

Test(client_lists, owners) {
        struct client a = { .id = 7, .role = LISTEN_MCP, .principal = { .uid = 1000 } };
        struct client b = { .id = 8, .role = LISTEN_MCP, .principal = { .uid = 1000 } };
        struct client other = { .id = 9, .role = LISTEN_MCP, .principal = { .uid = 1001 } };
        struct server *per_client = fake("c", (struct server_owner){ .kind = OWNER_CLIENT, .client_id = 7 }, "[]");
        struct server *per_user = fake("u", (struct server_owner){ .kind = OWNER_USER, .uid = 1000 }, "[]");
        struct server *spare = fake("c", (struct server_owner){ .kind = OWNER_SPARE }, "[]");
        struct server *shared_server = fake("s", (struct server_owner){ .kind = OWNER_NONE }, "[]");

        cr_assert(client_owns(&a, per_client));
        cr_assert_not(client_owns(&b, per_client), "another client of the same user");
        cr_assert(client_owns(&a, per_user) && client_owns(&b, per_user), "a user's clients share its instance");
        cr_assert_not(client_owns(&other, per_user));
        cr_assert_not(client_owns(&a, spare), "a spare is nobody's");
        cr_assert_not(client_owns(&a, shared_server), "a shared server is everybody's, owned by none");
}

/* A name a shared server already exposes is its own: the instance's item gets the fallback
 * form in the client's registry, and a URI both list is left out of it. */
Test(client_lists, a_name_the_shared_servers_have_gets_the_fallback) {
        struct server *s = fake("s", (struct server_owner){ .kind = OWNER_NONE }, "[{\"name\": \"navigate\"}]");
        struct server *c = fake("c", (struct server_owner){ .kind = OWNER_CLIENT, .client_id = 7 },
                                "[{\"name\": \"navigate\"}, {\"name\": \"snapshot\"}]");

        s->config->prefix = strdup("c"); /* the shared s exposes c__navigate */
        registry_rebuild(&shared, &s, 1, CATALOG_ALL_KINDS);
        registry_set_outer(&own, &shared);
        registry_rebuild(&own, &c, 1, CATALOG_ALL_KINDS);
        policy("\"logLevel\": \"info\"");
        struct client_lists l = lists(1000, true);

        cr_assert_eq(client_lists_size(&l, CATALOG_TOOLS), 3);
        cr_assert_str_eq(client_lists_entry(&l, CATALOG_TOOLS, 0)->key, "c__navigate");
        cr_assert_eq(client_lists_entry(&l, CATALOG_TOOLS, 0)->server, s);
        const char *fallback = client_lists_entry(&l, CATALOG_TOOLS, 1)->key;
        cr_assert_neq(strcmp(fallback, "c__navigate"), 0, "two tools of one name in one list");
        cr_assert_str_eq(client_lists_entry(&l, CATALOG_TOOLS, 2)->key, "c__snapshot");
        cr_assert_eq(registry_find(&own, CATALOG_TOOLS, fallback)->server, c);
}
