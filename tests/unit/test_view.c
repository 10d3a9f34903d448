/* Unit tests for view.c: what a class of connections sees of the registry, as the policy
 * (access.h) decides. The servers are fakes built by hand, as in test_registry.c. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "registry.h"
#include "server.h"
#include "unit-helpers.h"
#include "view.h"

static struct logger lg = { .max_priority = LOG_ERR, .identifier = "unit" };
static struct registry reg;
static struct config cfg;
static struct config_problems probs;
static struct views views;
static struct server *fakes[4];
static size_t n_fakes;

static void setup(void) {
        registry_init(&reg, &lg, NULL);
        config_init_defaults(&cfg);
        views_init(&views, &cfg.access, &reg);
}

static void teardown(void) {
        views_done(&views);
        registry_done(&reg);
        config_done(&cfg);
        problems_done(&probs);
        for (size_t i = 0; i < n_fakes; i++) {
                struct server_config *c = (struct server_config *)fakes[i]->config;

                catalog_done(&fakes[i]->catalog);
                free(c->name);
                free(c);
                free(fakes[i]);
        }
        n_fakes = 0;
}

TestSuite(view, .init = setup, .fini = teardown);

static void fake(const char *name, const char *tools, const char *resources) {
        struct server *s = calloc(1, sizeof *s);
        struct server_config *c = calloc(1, sizeof *c);

        cr_assert(s && c);
        c->name = strdup(name);
        s->config = c;
        s->state = SERVER_READY;
        catalog_init(&s->catalog);
        s->catalog.lists[CATALOG_TOOLS] = list_of(CATALOG_TOOLS, tools);
        s->catalog.lists[CATALOG_RESOURCES] = list_of(CATALOG_RESOURCES, resources);
        fakes[n_fakes++] = s;
}

static void policy(const char *settings) {
        char text[4096];

        snprintf(text, sizeof text, "{\"mcpvisor\": {%s}, \"mcpServers\": {}}", settings);
        config_done(&cfg);
        problems_done(&probs);
        cr_assert_eq(config_parse(text, strlen(text), &cfg, &probs), 0, "%s", probs.count ? probs.items[0].message : "");
        views_invalidate(&views, &cfg.access);
}

static void two_servers(void) {
        fake("github", "[{\"name\": \"get_issue\"}, {\"name\": \"create_issue\"}, {\"name\": \"merge_pr\"}]",
             "[{\"uri\": \"gh://a\"}]");
        fake("prod-db", "[{\"name\": \"query\"}]", "[{\"uri\": \"db://secret\"}]");
        registry_rebuild(&reg, fakes, n_fakes, CATALOG_ALL_KINDS);
}

static struct view *view_of(unsigned uid, const char *profile) {
        struct access_who who = { .uid = uid, .gid = uid, .profile = profile };
        struct access_class c = {};
        struct view *w;

        cr_assert_eq(access_class_of(&cfg.access, &who, &c), 0);
        w = views_get(&views, &c);
        access_class_done(&c);
        cr_assert_not_null(w);
        return w;
}

static const char *shown_name(struct view *w, enum catalog_kind kind, size_t i) {
        return view_entry(w, &reg, kind, i)->key;
}

Test(view, no_policy_sees_the_registry_as_it_is) {
        struct view *w;

        two_servers();
        policy("\"logLevel\": \"info\"");
        w = view_of(1000, NULL);
        cr_assert(w->full);
        cr_assert_eq(w->n_shown[CATALOG_TOOLS], 4);
        cr_assert_eq(w->signature[CATALOG_TOOLS], reg.lists[CATALOG_TOOLS].signature);
}

Test(view, denied_items_are_not_shown_and_their_verdict_is_kept) {
        const struct registry_entry *merge;
        struct view *bob, *alice;

        two_servers();
        policy("\"access\": {\"rules\": [{\"users\": [1001], \"tools\": [\"github__merge_*\"], \"action\": \"allow\"},"
               "{\"tools\": [\"github__merge_*\"], \"action\": \"deny\"}, {\"servers\": [\"prod-db\"], \"action\": \"deny\"}]}");
        bob = view_of(1002, NULL);
        cr_assert_eq(bob->n_shown[CATALOG_TOOLS], 2);
        /* In the registry's order: the server's own. */
        cr_assert_str_eq(shown_name(bob, CATALOG_TOOLS, 0), "github__get_issue");
        cr_assert_str_eq(shown_name(bob, CATALOG_TOOLS, 1), "github__create_issue");
        cr_assert_eq(bob->n_shown[CATALOG_RESOURCES], 1);
        merge = registry_find(&reg, CATALOG_TOOLS, "github__merge_pr");
        cr_assert_eq(view_verdict(bob, &reg, CATALOG_TOOLS, merge), ACCESS_DENY);
        cr_assert_neq(bob->signature[CATALOG_TOOLS], reg.lists[CATALOG_TOOLS].signature);
        alice = view_of(1001, NULL);
        cr_assert_neq(alice, bob);
        cr_assert_eq(view_verdict(alice, &reg, CATALOG_TOOLS, merge), ACCESS_ALLOW);
        cr_assert_eq(alice->n_shown[CATALOG_TOOLS], 3);
        /* One class, one view. */
        cr_assert_eq(view_of(1002, NULL), bob);
}

Test(view, a_server_is_visible_when_any_of_its_items_is) {
        struct view *alice, *bob;

        two_servers();
        policy("\"access\": {\"rules\": [{\"users\": [1001], \"tools\": [\"prod-db__query\"], \"action\": \"allow\"},"
               "{\"servers\": [\"prod-db\"], \"action\": \"deny\"}]}");
        alice = view_of(1001, NULL);
        bob = view_of(1002, NULL);
        cr_assert_eq(view_server(bob, &cfg.access, &reg, fakes[1]), ACCESS_DENY);
        cr_assert_eq(view_server(alice, &cfg.access, &reg, fakes[1]), ACCESS_ALLOW);
        cr_assert_eq(view_server(bob, &cfg.access, &reg, fakes[0]), ACCESS_ALLOW);
        cr_assert_eq(alice->n_shown[CATALOG_RESOURCES], 1, "prod-db's resource stays denied to alice");
}

Test(view, a_profile_shows_only_its_part_as_not_found) {
        struct view *w;

        two_servers();
        policy("\"profiles\": {\"triage\": {\"servers\": [\"github\"], \"tools\": [\"*get_*\"]}}");
        w = view_of(1002, "triage");
        cr_assert_not(w->full);
        cr_assert_eq(w->n_shown[CATALOG_TOOLS], 1);
        cr_assert_eq(view_verdict(w, &reg, CATALOG_TOOLS, registry_find(&reg, CATALOG_TOOLS, "prod-db__query")),
                     ACCESS_NOT_FOUND);
        cr_assert_eq(view_server(w, &cfg.access, &reg, fakes[1]), ACCESS_NOT_FOUND);
        cr_assert_eq(w->n_shown[CATALOG_RESOURCES], 1);
        cr_assert(view_of(1002, NULL)->full);
}

Test(view, invalidation_drops_every_view) {
        uint64_t gen = views.generation;

        two_servers();
        policy("\"access\": {\"default\": \"deny\"}");
        cr_assert_eq(view_of(1, NULL)->n_shown[CATALOG_TOOLS], 0);
        policy("\"access\": {\"default\": \"allow\"}");
        cr_assert_gt(views.generation, gen);
        cr_assert_eq(view_of(1, NULL)->n_shown[CATALOG_TOOLS], 4);
}
