/* Unit tests for registry.c: the merged view of the servers' catalogs. The servers are
 * fakes built by hand: the registry reads only config (name, prefix), state and catalog. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "log.h"
#include "names.h"
#include "registry.h"
#include "server.h"
#include "settings.h"

#define BIT(k) (1u << (k))
#define ALL_KINDS (BIT(CATALOG_TOOLS) | BIT(CATALOG_PROMPTS) | BIT(CATALOG_RESOURCES) | BIT(CATALOG_TEMPLATES))

static struct logger lg = { .max_priority = LOG_ERR, .identifier = "unit" }; /* warnings dropped */
static struct registry reg;
static struct server *fakes[16];
static size_t n_fakes;

static void setup(void) {
        registry_init(&reg, &lg, NULL);
}

static void teardown(void) {
        registry_done(&reg);
        for (size_t i = 0; i < n_fakes; i++) {
                struct server_config *c = (struct server_config *)fakes[i]->config;

                catalog_done(&fakes[i]->catalog);
                item_filter_done(&c->filter);
                free(c->name);
                free(c->prefix);
                free(c);
                free(fakes[i]);
        }
        n_fakes = 0;
}

TestSuite(registry, .init = setup, .fini = teardown);

static json_object *parse_json(const char *text) {
        json_object *o = json_tokener_parse(text);

        cr_assert_not_null(o, "bad test JSON: %s", text);
        return o;
}

/* The list the handshake would keep of the JSON array (NULL: not offered): what is no item
 * of kind is left out there, before the registry. */
static void set_items(struct server *s, enum catalog_kind kind, const char *json) {
        unsigned refused = 0;

        catalog_list_unref(s->catalog.lists[kind]);
        s->catalog.lists[kind] = NULL;
        if (!json)
                return;
        s->catalog.lists[kind] = catalog_list_new();
        cr_assert_eq(catalog_list_add_array(s->catalog.lists[kind], kind, json, strlen(json), SIZE_MAX, &refused), 0,
                     "bad test JSON: %s", json);
}

/* A server named name with prefix (NULL: its name; "": none), in state, offering the given
 * JSON arrays (NULL: not offered). */
static struct server *fake(const char *name, const char *prefix, enum server_state state, const char *tools,
                           const char *prompts, const char *resources, const char *templates) {
        struct server *s = calloc(1, sizeof *s);
        struct server_config *c = calloc(1, sizeof *c);

        cr_assert_not_null(s);
        cr_assert_not_null(c);
        cr_assert_lt(n_fakes, sizeof fakes / sizeof fakes[0]);
        c->name = strdup(name);
        c->prefix = prefix ? strdup(prefix) : NULL;
        s->config = c;
        s->state = state;
        catalog_init(&s->catalog);
        set_items(s, CATALOG_TOOLS, tools);
        set_items(s, CATALOG_PROMPTS, prompts);
        set_items(s, CATALOG_RESOURCES, resources);
        set_items(s, CATALOG_TEMPLATES, templates);
        fakes[n_fakes++] = s;
        return s;
}

/* The text clients are shown of e (valid until the next call). */
static const char *shown_text(const struct registry_entry *e) {
        static char text[4096];
        struct iovec parts[CATALOG_ITEM_PARTS];
        size_t n = registry_entry_parts(e, parts), len = 0;

        for (size_t i = 0; i < n; i++) {
                cr_assert_lt(len + parts[i].iov_len, sizeof text);
                memcpy(text + len, parts[i].iov_base, parts[i].iov_len);
                len += parts[i].iov_len;
        }
        text[len] = '\0';
        return text;
}

/* The "name" member of what clients are shown of e. */
static const char *exposed_name(const struct registry_entry *e) {
        static char name[256];
        json_object *o = parse_json(shown_text(e)), *v;

        cr_assert(json_object_object_get_ex(o, "name", &v));
        snprintf(name, sizeof name, "%s", json_object_get_string(v));
        json_object_put(o);
        return name;
}

static const struct registry_list *list(enum catalog_kind kind) {
        return &reg.lists[kind];
}

static void expect_tool(size_t i, const struct server *s, const char *name, const char *exposed) {
        const struct registry_entry *e;

        cr_assert_lt(i, list(CATALOG_TOOLS)->n);
        e = &list(CATALOG_TOOLS)->entries[i];
        cr_assert_eq(e->server, s, "tool %zu (%s): wrong server", i, e->name);
        cr_assert_str_eq(e->name, name);
        cr_assert_str_eq(exposed_name(e), exposed);
        cr_assert_eq(registry_find(&reg, CATALOG_TOOLS, exposed), e, "find \"%s\"", exposed);
}

/* Listing and naming */

Test(registry, empty) {
        registry_rebuild(&reg, NULL, 0, CATALOG_ALL_KINDS);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                cr_assert_eq(list(k)->n, 0);
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "x"));
        cr_assert_null(registry_find(&reg, CATALOG_RESOURCES, "file:///x"));
        cr_assert_null(registry_match_template(&reg, "file:///x"));
}

Test(registry, find_before_any_build) {
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "x"));
        cr_assert_null(registry_find(&reg, CATALOG_PROMPTS, "x"));
        cr_assert_null(registry_match_template(&reg, "x"));
}

Test(registry, two_servers_prefixed_in_name_order) {
        struct server *z = fake("zeta", NULL, SERVER_READY, "[{\"name\":\"search\"}]", NULL, NULL, NULL);
        struct server *a = fake("alpha", NULL, SERVER_READY, "[{\"name\":\"search\"},{\"name\":\"read\"}]", NULL, NULL, NULL);
        struct server *servers[] = { z, a };

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 3);
        expect_tool(0, a, "search", "alpha__search");
        expect_tool(1, a, "read", "alpha__read");
        expect_tool(2, z, "search", "zeta__search");
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "search"), "prefixed even when unambiguous");
        cr_assert_eq(list(CATALOG_PROMPTS)->n, 0);
}

Test(registry, one_server_still_prefixed) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"read_file\"}]", NULL, NULL, NULL);

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 1);
        expect_tool(0, s, "read_file", "fs__read_file");
}

Test(registry, prompts_prefixed) {
        struct server *s = fake("fs", NULL, SERVER_READY, NULL, "[{\"name\":\"summarize\",\"arguments\":[]}]", NULL, NULL);
        const struct registry_entry *e;

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_PROMPTS)->n, 1);
        e = registry_find(&reg, CATALOG_PROMPTS, "fs__summarize");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, s);
        cr_assert_str_eq(e->name, "summarize");
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "fs__summarize"), "kinds are separate");
}

/* NULL-terminated copies of the globs given, for a fake's filter. */
static char **globs(const char *first, ...) {
        char **v = calloc(8, sizeof *v);
        va_list ap;
        size_t n = 0;

        cr_assert_not_null(v);
        va_start(ap, first);
        for (const char *g = first; g && n < 7; g = va_arg(ap, const char *))
                v[n++] = strdup(g);
        va_end(ap);
        return v;
}

/* includeTools and friends: what a server does not offer is neither listed nor found, and
 * exclude wins over include. */
Test(registry, filtered_items_absent_exclude_wins) {
        struct server *s = fake("gh", NULL, SERVER_READY,
                                "[{\"name\":\"get_issue\"},{\"name\":\"get_secret\"},{\"name\":\"create_issue\"}]",
                                "[{\"name\":\"summarize\"},{\"name\":\"draft\"}]", "[{\"uri\":\"file:///a\"}]", NULL);
        struct server_config *c = (struct server_config *)s->config;

        c->filter.include[CATALOG_TOOLS] = globs("get_*", "create_issue", NULL);
        c->filter.exclude[CATALOG_TOOLS] = globs("*secret*", "create_issue", NULL);
        c->filter.exclude[CATALOG_PROMPTS] = globs("draft", NULL);
        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 1);
        expect_tool(0, s, "get_issue", "gh__get_issue");
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "gh__get_secret"));
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "gh__create_issue"), "exclude wins over include");
        cr_assert_eq(list(CATALOG_PROMPTS)->n, 1);
        cr_assert_not_null(registry_find(&reg, CATALOG_PROMPTS, "gh__summarize"));
        cr_assert_null(registry_find(&reg, CATALOG_PROMPTS, "gh__draft"));
        cr_assert_eq(list(CATALOG_RESOURCES)->n, 1, "resources are not filtered by name");

        /* A filter changed on reload: marked, the next read sees the new view. */
        strv_free(c->filter.exclude[CATALOG_TOOLS]);
        c->filter.exclude[CATALOG_TOOLS] = NULL;
        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS));
        cr_assert_eq(list(CATALOG_TOOLS)->n, 3);
}

/* A filtered item takes no exposed name: another server's item of that name keeps it. */
Test(registry, filtered_item_takes_no_name) {
        struct server *a = fake("a", "", SERVER_READY, "[{\"name\":\"search\"}]", NULL, NULL, NULL);
        struct server *b = fake("b", "", SERVER_READY, "[{\"name\":\"search\"}]", NULL, NULL, NULL);
        struct server *servers[] = { a, b };

        ((struct server_config *)a->config)->filter.exclude[CATALOG_TOOLS] = globs("search", NULL);
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 1);
        expect_tool(0, b, "search", "search");
}

Test(registry, prefix_override_and_empty_prefix) {
        struct server *g = fake("github", "gh", SERVER_READY, "[{\"name\":\"search\"}]", NULL, NULL, NULL);
        struct server *f = fake("fs", "", SERVER_READY, "[{\"name\":\"read_file\"}]", NULL, NULL, NULL);
        struct server *servers[] = { g, f };

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 2);
        expect_tool(0, f, "read_file", "read_file");
        expect_tool(1, g, "search", "gh__search");
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "github__search"));
}

Test(registry, custom_separator) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"read_file\"}]", "[{\"name\":\"p\"}]", NULL, NULL);

        registry_done(&reg);
        registry_init(&reg, &lg, ".");
        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        expect_tool(0, s, "read_file", "fs.read_file");
        cr_assert_not_null(registry_find(&reg, CATALOG_PROMPTS, "fs.p"));
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "fs__read_file"));
}

Test(registry, default_separator) {
        cr_assert_str_eq(reg.separator, NAMES_DEFAULT_SEPARATOR);
}

Test(registry, disallowed_tool_name_uses_fallback) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"read file\"}]", NULL, NULL, NULL);
        char want[NAME_MAX_LEN + 1];

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        name_expose("fs", "__", "read file", want);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 1);
        expect_tool(0, s, "read file", want);
        cr_assert(name_valid(want));
}

Test(registry, only_ready_and_unhealthy_listed) {
        static const struct { enum server_state state; bool listed; } states[] = {
                { SERVER_STOPPED, false }, { SERVER_STARTING, false }, { SERVER_READY, true },
                { SERVER_UNHEALTHY, true }, { SERVER_STOPPING, false }, { SERVER_STOP_TERM, false },
                { SERVER_STOP_KILL, false }, { SERVER_BACKOFF, false }, { SERVER_FAILED, false },
        };
        const size_t n = sizeof states / sizeof states[0];
        struct server *servers[sizeof states / sizeof states[0]];

        for (size_t i = 0; i < n; i++) {
                char name[16], tools[64], resources[64];

                snprintf(name, sizeof name, "s%zu", i);
                snprintf(tools, sizeof tools, "[{\"name\":\"t\"}]");
                snprintf(resources, sizeof resources, "[{\"uri\":\"mem://%zu\"}]", i);
                servers[i] = fake(name, NULL, states[i].state, tools, "[{\"name\":\"p\"}]", resources,
                                  "[{\"uriTemplate\":\"x://{a}\"}]");
        }
        registry_rebuild(&reg, servers, n, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 2);
        cr_assert_eq(list(CATALOG_PROMPTS)->n, 2);
        cr_assert_eq(list(CATALOG_RESOURCES)->n, 2);
        cr_assert_eq(list(CATALOG_TEMPLATES)->n, 1, "a template listed by two servers is served by the first");
        for (size_t i = 0; i < n; i++) {
                char tool[32], uri[32];
                const struct registry_entry *t, *r;

                snprintf(tool, sizeof tool, "s%zu__t", i);
                snprintf(uri, sizeof uri, "mem://%zu", i);
                t = registry_find(&reg, CATALOG_TOOLS, tool);
                r = registry_find(&reg, CATALOG_RESOURCES, uri);
                if (states[i].listed) {
                        cr_assert_not_null(t, "%s in state %s", tool, server_state_name(states[i].state));
                        cr_assert_eq(t->server, servers[i]);
                        cr_assert_not_null(r);
                        cr_assert_eq(r->server, servers[i]);
                } else {
                        cr_assert_null(t, "%s in state %s", tool, server_state_name(states[i].state));
                        cr_assert_null(r);
                }
        }
}

/* Collisions */

Test(registry, collision_empty_prefix) {
        struct server *b = fake("b", "", SERVER_READY, "[{\"name\":\"search\"}]", NULL, NULL, NULL);
        struct server *a = fake("a", "", SERVER_READY, "[{\"name\":\"search\"}]", NULL, NULL, NULL);
        struct server *servers[] = { b, a };
        char fb[NAME_MAX_LEN + 1];

        name_fallback("b/search", fb);
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 2);
        expect_tool(0, a, "search", "search");
        expect_tool(1, b, "search", fb);
        cr_assert_eq(strncmp(fb, "b_search-", 9), 0);

        /* The outcome does not depend on the order the servers are given in. */
        servers[0] = a;
        servers[1] = b;
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        expect_tool(0, a, "search", "search");
        expect_tool(1, b, "search", fb);
}

Test(registry, collision_same_prefix_prompts) {
        struct server *b = fake("beta", "x", SERVER_READY, NULL, "[{\"name\":\"p\"}]", NULL, NULL);
        struct server *a = fake("alpha", "x", SERVER_READY, NULL, "[{\"name\":\"p\"}]", NULL, NULL);
        struct server *servers[] = { b, a };
        char fb[NAME_MAX_LEN + 1];
        const struct registry_entry *e;

        name_fallback("beta/p", fb);
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_PROMPTS)->n, 2);
        e = registry_find(&reg, CATALOG_PROMPTS, "x__p");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, a);
        e = registry_find(&reg, CATALOG_PROMPTS, fb);
        cr_assert_not_null(e);
        cr_assert_eq(e->server, b);
        cr_assert_str_eq(e->name, "p");
}

Test(registry, collision_with_prefixed_name) {
        /* "a" with no prefix offers "b__t", which is what "b" exposes for its "t": the name
         * (and the rules written for it) stays b's, though a comes first. */
        struct server *a = fake("a", "", SERVER_READY, "[{\"name\":\"b__t\"},{\"name\":\"x__t\"}]", NULL, NULL, NULL);
        struct server *b = fake("b", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *servers[] = { a, b };
        char fb[NAME_MAX_LEN + 1];

        name_fallback("a/b__t", fb);
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        expect_tool(0, a, "b__t", fb);
        expect_tool(1, a, "x__t", "x__t");
        expect_tool(2, b, "t", "b__t");
}

/* A prefixed name is its server's whether or not that server lists it now: a server without
 * a prefix never takes it meanwhile (to give it up, renamed, when the other comes), also
 * when its entries would be kept from the build before the other server was added. */
Test(registry, prefixed_name_reserved_while_its_server_is_away) {
        struct server *a = fake("a", "", SERVER_READY, "[{\"name\":\"b__t\"}]", NULL, NULL, NULL);
        struct server *b = fake("b", NULL, SERVER_BACKOFF, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *c = fake("c", "cc", SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *servers[] = { a, b, c };
        char fb[NAME_MAX_LEN + 1], fc[NAME_MAX_LEN + 1];

        name_fallback("a/b__t", fb);
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 1);
        expect_tool(0, a, "b__t", fb);
        b->state = SERVER_READY;
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        expect_tool(0, a, "b__t", fb);
        expect_tool(1, b, "t", "b__t");

        /* a server added later (a reload) with a prefix a's names begin with */
        set_items(a, CATALOG_TOOLS, "[{\"name\":\"b__t\"},{\"name\":\"cc__t\"}]");
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        expect_tool(1, a, "cc__t", "cc__t");
        name_fallback("a/cc__t", fc);
        registry_rebuild(&reg, servers, 3, CATALOG_ALL_KINDS);
        expect_tool(1, a, "cc__t", fc);
        expect_tool(3, c, "t", "cc__t");
}

Test(registry, duplicate_within_one_server) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"t\",\"description\":\"1\"},{\"name\":\"t\",\"description\":\"2\"}]",
                                NULL, NULL, NULL);
        char fb[NAME_MAX_LEN + 1];

        name_fallback("fs/t", fb);
        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 2);
        expect_tool(0, s, "t", "fs__t");
        expect_tool(1, s, "t", fb);
}

Test(registry, collision_fallback_taken_too) {
        char fb[NAME_MAX_LEN + 1], tools[256];
        struct server *a, *b;
        struct server *servers[2];

        name_fallback("b/search", fb);
        snprintf(tools, sizeof tools, "[{\"name\":\"search\"},{\"name\":\"%s\"}]", fb);
        a = fake("a", "", SERVER_READY, tools, NULL, NULL, NULL);
        b = fake("b", "", SERVER_READY, "[{\"name\":\"search\"},{\"name\":\"other\"}]", NULL, NULL, NULL);
        servers[0] = a;
        servers[1] = b;
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 3, "b's search is left out");
        expect_tool(0, a, "search", "search");
        expect_tool(1, a, fb, fb);
        expect_tool(2, b, "other", "other");
}

/* Malformed items: left out by the catalogue (catalog_list_add_array), never listed. */

Test(registry, items_without_name_skipped) {
        struct server *s = fake("fs", NULL, SERVER_READY,
                                "[{\"description\":\"no name\"},{\"name\":\"\"},{\"name\":5},{\"name\":null},\"str\",null,7,[],"
                                "{\"name\":\"ok\"}]",
                                "[{\"name\":false},{\"name\":\"p\"}]",
                                "[{\"name\":\"no uri\"},{\"uri\":\"\"},{\"uri\":3},{\"uri\":\"file:///a\"}]",
                                "[{\"uri\":\"x://{a}\"},{\"uriTemplate\":\"\"},{\"uriTemplate\":\"y://{b}\"}]");

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 1);
        expect_tool(0, s, "ok", "fs__ok");
        cr_assert_eq(list(CATALOG_PROMPTS)->n, 1);
        cr_assert_not_null(registry_find(&reg, CATALOG_PROMPTS, "fs__p"));
        cr_assert_eq(list(CATALOG_RESOURCES)->n, 1);
        cr_assert_not_null(registry_find(&reg, CATALOG_RESOURCES, "file:///a"));
        cr_assert_eq(list(CATALOG_TEMPLATES)->n, 1);
        cr_assert_str_eq(list(CATALOG_TEMPLATES)->entries[0].name, "y://{b}");
}

/* What clients see */

Test(registry, exposed_tool_keeps_other_keys_verbatim) {
        static const char tool[] =
                "{\"name\":\"search\",\"title\":\"Search\",\"description\":\"Finds things\","
                "\"inputSchema\":{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\","
                "\"properties\":{\"q\":{\"$ref\":\"#/$defs/query\"},\"n\":{\"type\":\"integer\",\"minimum\":1}},"
                "\"required\":[\"q\"],\"additionalProperties\":false,"
                "\"$defs\":{\"query\":{\"type\":\"string\",\"minLength\":1}}},"
                "\"outputSchema\":{\"type\":\"object\"},"
                "\"annotations\":{\"readOnlyHint\":true},\"_meta\":{\"x\":[1,2.5,null]}}";
        char arr[sizeof tool + 8];
        struct server *s;
        const struct catalog_item *orig;
        json_object *expected, *shown, *v;
        const struct registry_entry *e;

        snprintf(arr, sizeof arr, "[%s]", tool);
        s = fake("fs", NULL, SERVER_READY, arr, NULL, NULL, NULL);
        orig = s->catalog.lists[CATALOG_TOOLS]->items[0];

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        e = registry_find(&reg, CATALOG_TOOLS, "fs__search");
        cr_assert_not_null(e);
        cr_assert_eq(e->item, orig, "the server's own item");
        cr_assert_str_eq(e->exposed, "fs__search");

        /* Equal to the original with only "name" replaced. */
        expected = parse_json(tool);
        json_object_object_add(expected, "name", json_object_new_string("fs__search"));
        shown = parse_json(shown_text(e));
        cr_assert(json_object_equal(shown, expected), "exposed: %s", shown_text(e));
        cr_assert_str_eq(json_object_to_json_string_ext(shown, JSON_C_TO_STRING_PLAIN),
                         json_object_to_json_string_ext(expected, JSON_C_TO_STRING_PLAIN), "key order kept too");
        cr_assert(json_object_object_get_ex(shown, "inputSchema", &v));
        cr_assert(json_object_object_get_ex(v, "$schema", NULL));
        cr_assert(json_object_object_get_ex(v, "$defs", NULL));
        cr_assert(json_object_object_get_ex(v, "additionalProperties", NULL));

        /* The server's item is untouched, also after a second rebuild and after done. */
        cr_assert_str_eq(orig->text, tool);
        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        registry_done(&reg);
        cr_assert_str_eq(s->catalog.lists[CATALOG_TOOLS]->items[0]->text, tool);
        registry_init(&reg, &lg, NULL);
        json_object_put(expected);
        json_object_put(shown);
}

/* A name the server wrote with escapes is found decoded and shown renamed; without a
 * prefix, a name that needs none is shown as the server wrote it. */
Test(registry, escaped_names) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"d\":1,\"n\\u0061me\":\"r\\u0065ad\"}]", NULL, NULL, NULL);
        struct server *t = fake("gs", "", SERVER_READY, "[{\"name\":\"plain\",\"d\":2}]", NULL, NULL, NULL);
        struct server *servers[] = { s, t };
        const struct registry_entry *e;

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        e = registry_find(&reg, CATALOG_TOOLS, "fs__read");
        cr_assert_not_null(e);
        cr_assert_str_eq(e->name, "read");
        cr_assert_str_eq(shown_text(e), "{\"name\":\"fs__read\",\"d\":1}");
        e = registry_find(&reg, CATALOG_TOOLS, "plain");
        cr_assert_not_null(e);
        cr_assert_null(e->exposed, "its own name: no copy");
        cr_assert_str_eq(shown_text(e), "{\"name\":\"plain\",\"d\":2}");
}

Test(registry, resources_and_templates_exposed_as_they_are) {
        struct server *s = fake("fs", NULL, SERVER_READY, NULL, NULL,
                                "[{\"uri\":\"file:///a\",\"name\":\"a\",\"mimeType\":\"text/plain\"}]",
                                "[{\"uriTemplate\":\"file:///{path}\",\"name\":\"files\"}]");
        const struct registry_entry *e;

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        e = registry_find(&reg, CATALOG_RESOURCES, "file:///a");
        cr_assert_not_null(e);
        cr_assert_null(e->exposed, "a resource is not renamed");
        cr_assert_str_eq(shown_text(e), "{\"uri\":\"file:///a\",\"name\":\"a\",\"mimeType\":\"text/plain\"}");
        cr_assert_str_eq(e->name, "file:///a");
        cr_assert_str_eq(exposed_name(e), "a", "a resource's own \"name\" is left alone");
        cr_assert_eq(list(CATALOG_TEMPLATES)->n, 1);
        e = &list(CATALOG_TEMPLATES)->entries[0];
        cr_assert_null(e->exposed);
        cr_assert_str_eq(e->name, "file:///{path}");
        cr_assert_eq(registry_find(&reg, CATALOG_TEMPLATES, "file:///{path}"), e, "templates are indexed by their uriTemplate");
}

Test(registry, entries_survive_catalog_replacement) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"search\",\"description\":\"d\"}]", NULL,
                                "[{\"uri\":\"file:///a\"}]", NULL);
        const struct registry_entry *e;

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        /* The server restarts: its catalog is replaced before the registry is rebuilt. */
        set_items(s, CATALOG_TOOLS, "[{\"name\":\"other\"}]");
        set_items(s, CATALOG_RESOURCES, NULL);
        e = registry_find(&reg, CATALOG_TOOLS, "fs__search");
        cr_assert_not_null(e);
        cr_assert_str_eq(e->name, "search", "the registry holds its own references");
        e = registry_find(&reg, CATALOG_RESOURCES, "file:///a");
        cr_assert_not_null(e);
        cr_assert_str_eq(e->name, "file:///a");
        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "fs__search"));
        cr_assert_not_null(registry_find(&reg, CATALOG_TOOLS, "fs__other"));
        cr_assert_null(registry_find(&reg, CATALOG_RESOURCES, "file:///a"));
}

/* Finding */

Test(registry, find_each_kind) {
        struct server *a = fake("a", NULL, SERVER_READY, "[{\"name\":\"t1\"},{\"name\":\"t2\"}]", "[{\"name\":\"p1\"}]",
                                "[{\"uri\":\"mem://a/1\"},{\"uri\":\"mem://a/2\"}]", NULL);
        struct server *b = fake("b", NULL, SERVER_UNHEALTHY, "[{\"name\":\"t1\"}]", "[{\"name\":\"p1\"},{\"name\":\"p2\"}]",
                                "[{\"uri\":\"mem://b/1\"}]", NULL);
        struct server *servers[] = { a, b };
        const struct registry_entry *e;

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        e = registry_find(&reg, CATALOG_TOOLS, "b__t1");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, b);
        cr_assert_str_eq(e->name, "t1");
        e = registry_find(&reg, CATALOG_TOOLS, "a__t2");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, a);
        e = registry_find(&reg, CATALOG_PROMPTS, "b__p2");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, b);
        cr_assert_str_eq(e->name, "p2");
        e = registry_find(&reg, CATALOG_PROMPTS, "a__p1");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, a);
        e = registry_find(&reg, CATALOG_RESOURCES, "mem://b/1");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, b);
        e = registry_find(&reg, CATALOG_RESOURCES, "mem://a/2");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, a);

        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "t1"), "not by the server's own name");
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "a__p1"));
        cr_assert_null(registry_find(&reg, CATALOG_PROMPTS, "a__t1"));
        cr_assert_null(registry_find(&reg, CATALOG_RESOURCES, "mem://a/3"));
        cr_assert_null(registry_find(&reg, CATALOG_RESOURCES, "mem://a"));
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, ""));
}

Test(registry, resource_listed_twice_belongs_to_first) {
        struct server *b = fake("b", NULL, SERVER_READY, NULL, NULL,
                                "[{\"uri\":\"file:///shared\",\"name\":\"from b\"},{\"uri\":\"file:///b\"}]", NULL);
        struct server *a = fake("a", NULL, SERVER_READY, NULL, NULL,
                                "[{\"uri\":\"file:///shared\",\"name\":\"from a\"},{\"uri\":\"file:///a\"}]", NULL);
        struct server *servers[] = { b, a };
        const struct registry_entry *e;

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_RESOURCES)->n, 3, "listed once");
        e = registry_find(&reg, CATALOG_RESOURCES, "file:///shared");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, a);
        cr_assert_str_eq(exposed_name(e), "from a");
        cr_assert_eq(registry_find(&reg, CATALOG_RESOURCES, "file:///b")->server, b);
        cr_assert_eq(registry_find(&reg, CATALOG_RESOURCES, "file:///a")->server, a);
        for (size_t i = 0; i < list(CATALOG_RESOURCES)->n; i++)
                if (strcmp(list(CATALOG_RESOURCES)->entries[i].name, "file:///shared") == 0)
                        cr_assert_eq(list(CATALOG_RESOURCES)->entries[i].server, a);
}

Test(registry, match_template_longest_literal_prefix) {
        struct server *a = fake("a", NULL, SERVER_READY, NULL, NULL, NULL,
                                "[{\"uriTemplate\":\"file:///{path}\"},{\"uriTemplate\":\"db://{table}/{id}\"}]");
        struct server *b = fake("b", NULL, SERVER_READY, NULL, NULL, NULL,
                                "[{\"uriTemplate\":\"file:///home/{user}/notes\"},{\"uriTemplate\":\"file://{host}/x\"}]");
        struct server *servers[] = { b, a };
        const struct registry_entry *e;

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TEMPLATES)->n, 4);

        e = registry_match_template(&reg, "file:///home/bob/notes");
        cr_assert_not_null(e);
        cr_assert_str_eq(e->name, "file:///home/{user}/notes");
        cr_assert_eq(e->server, b);

        e = registry_match_template(&reg, "file:///etc/passwd");
        cr_assert_not_null(e);
        cr_assert_str_eq(e->name, "file:///{path}");
        cr_assert_eq(e->server, a);

        e = registry_match_template(&reg, "file://remote/x");
        cr_assert_not_null(e);
        cr_assert_str_eq(e->name, "file://{host}/x");

        e = registry_match_template(&reg, "db://users/7");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, a);

        cr_assert_null(registry_match_template(&reg, "http://example.com/"));
        cr_assert_null(registry_match_template(&reg, "file:"));
        cr_assert_null(registry_match_template(&reg, ""));
}

Test(registry, match_template_tie_goes_to_first_server) {
        struct server *b = fake("b", NULL, SERVER_READY, NULL, NULL, NULL, "[{\"uriTemplate\":\"mem://{x}\"}]");
        struct server *a = fake("a", NULL, SERVER_READY, NULL, NULL, NULL, "[{\"uriTemplate\":\"mem://{y}\"}]");
        struct server *servers[] = { b, a };
        const struct registry_entry *e;

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        e = registry_match_template(&reg, "mem://thing");
        cr_assert_not_null(e);
        cr_assert_eq(e->server, a);
}

/* Rebuild's changed bits */

Test(registry, rebuild_changed_bits) {
        struct server *a = fake("a", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, "[{\"uri\":\"mem://a\"}]", NULL);
        struct server *b = fake("b", NULL, SERVER_READY, "[{\"name\":\"t\"}]", "[{\"name\":\"p\"}]", NULL,
                                "[{\"uriTemplate\":\"mem://{b}\"}]");
        struct server *servers[] = { a, b };
        struct server *reversed[] = { b, a };

        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), ALL_KINDS, "first build of non-empty lists");
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), 0, "identical rebuild");
        cr_assert_eq(registry_rebuild(&reg, reversed, 2, CATALOG_ALL_KINDS), 0, "the same servers in another order");

        b->state = SERVER_UNHEALTHY;
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), 0, "unhealthy but running: still listed");

        b->state = SERVER_BACKOFF;
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS) | BIT(CATALOG_PROMPTS) | BIT(CATALOG_TEMPLATES),
                     "b leaving");
        cr_assert_eq(list(CATALOG_PROMPTS)->n, 0);
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), 0);

        b->state = SERVER_READY;
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS) | BIT(CATALOG_PROMPTS) | BIT(CATALOG_TEMPLATES),
                     "b back");

        a->state = SERVER_FAILED;
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS) | BIT(CATALOG_RESOURCES), "a leaving");

        b->state = SERVER_STOPPED;
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS) | BIT(CATALOG_PROMPTS) | BIT(CATALOG_TEMPLATES),
                     "everything gone");
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), 0);
}

Test(registry, rebuild_detects_content_changes) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"t\",\"description\":\"one\"}]", NULL,
                                "[{\"uri\":\"mem://a\"}]", NULL);

        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS) & BIT(CATALOG_TOOLS), BIT(CATALOG_TOOLS));
        set_items(s, CATALOG_TOOLS, "[{\"name\":\"t\",\"description\":\"two\"}]");
        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS), "a description changed");
        set_items(s, CATALOG_TOOLS, "[{\"name\":\"u\",\"description\":\"two\"}]");
        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS), "a tool renamed");
        set_items(s, CATALOG_TOOLS, "[{\"name\":\"u\",\"description\":\"two\"},{\"name\":\"v\"}]");
        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS), "a tool added");
        set_items(s, CATALOG_TOOLS, "[{\"name\":\"v\"},{\"name\":\"u\",\"description\":\"two\"}]");
        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS), "reordered");
        set_items(s, CATALOG_RESOURCES, "[{\"uri\":\"mem://b\"}]");
        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS), BIT(CATALOG_RESOURCES), "a resource replaced");
        set_items(s, CATALOG_RESOURCES, "[{\"uri\":\"mem://b\"}]");
        cr_assert_eq(registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS), 0, "a new but equal catalog");
}

Test(registry, rebuild_prefix_only_change_is_a_change) {
        /* The same tools moving to a server of another name: clients see new names. */
        struct server *a = fake("a", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *b = fake("b", NULL, SERVER_STOPPED, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *servers[] = { a, b };

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        a->state = SERVER_STOPPED;
        b->state = SERVER_READY;
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), BIT(CATALOG_TOOLS));
}

/* The signature is the content's: a server that leaves and comes back with the same items
 * gives the list its old signature again (list-changes.c tells clients nothing then), and a
 * list with other items gets another one. */
Test(registry, signature_follows_content) {
        struct server *a = fake("a", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *b = fake("b", NULL, SERVER_READY, "[{\"name\":\"t\"},{\"name\":\"u\"}]", NULL, NULL, NULL);
        struct server *servers[] = { a, b };
        uint64_t both, without_b;

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        both = list(CATALOG_TOOLS)->signature;
        b->state = SERVER_BACKOFF;
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        without_b = list(CATALOG_TOOLS)->signature;
        cr_assert_neq(without_b, both);
        b->state = SERVER_READY;
        set_items(b, CATALOG_TOOLS, "[{\"name\":\"t\"},{\"name\":\"u\"}]"); /* a new catalog, equal */
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->signature, both);
        set_items(b, CATALOG_TOOLS, "[{\"name\":\"t\"}]");
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_neq(list(CATALOG_TOOLS)->signature, both);
        cr_assert_neq(list(CATALOG_TOOLS)->signature, without_b);
}

/* A rebuild keeps the entries (the renamed copy, its hash) of items that are the same
 * server object under the same exposed name, and makes new ones for the rest: what a
 * rebuild allocates follows what changed (issue 14). */
Test(registry, rebuild_keeps_unchanged_entries) {
        struct server *a = fake("a", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, "[{\"uri\":\"file:///r\"}]", NULL);
        struct server *b = fake("b", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *servers[] = { a, b };
        const char *a_tool, *b_tool;
        uint64_t signature;

        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        a_tool = list(CATALOG_TOOLS)->entries[0].exposed;
        b_tool = list(CATALOG_TOOLS)->entries[1].exposed;
        signature = list(CATALOG_TOOLS)->signature;
        set_items(b, CATALOG_TOOLS, "[{\"name\":\"t\"}]"); /* a new catalog, equal */
        cr_assert_eq(registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS), 0);
        cr_assert_eq(list(CATALOG_TOOLS)->entries[0].exposed, a_tool, "a's tool kept");
        cr_assert_neq(list(CATALOG_TOOLS)->entries[1].exposed, b_tool, "b's new item copied anew");
        cr_assert_eq(list(CATALOG_TOOLS)->signature, signature);
        expect_tool(1, b, "t", "b__t");
        cr_assert_eq(registry_find(&reg, CATALOG_RESOURCES, "file:///r")->server, a);

        /* Another exposed name for the same item: a new copy under it. */
        registry_set_separator(&reg, "-");
        registry_rebuild(&reg, servers, 2, CATALOG_ALL_KINDS);
        cr_assert_neq(list(CATALOG_TOOLS)->entries[0].exposed, a_tool);
        expect_tool(0, a, "t", "a-t");
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "a__t"));
        cr_assert_neq(list(CATALOG_TOOLS)->signature, signature);
}

/* A server's entries are kept whole only while none of its names is contested: one that
 * took a fallback name gets its own back when the other server leaves, and gives it up
 * again when that one returns, as a build from nothing would name them. */
Test(registry, kept_blocks_follow_collisions) {
        struct server *x = fake("x", "", SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        struct server *y = fake("y", "", SERVER_READY, "[{\"name\":\"t\"},{\"name\":\"u\"}]", NULL,
                                "[{\"uri\":\"file:///r\"}]", NULL);
        struct server *z = fake("z", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, "[{\"uri\":\"file:///r\"}]", NULL);
        struct server *servers[] = { x, y, z };
        char fallback[NAME_MAX_LEN + 1];

        name_fallback("y/t", fallback);
        for (int round = 0; round < 2; round++) {
                x->state = SERVER_READY;
                registry_rebuild(&reg, servers, 3, CATALOG_ALL_KINDS);
                cr_assert_eq(list(CATALOG_TOOLS)->n, 4);
                expect_tool(0, x, "t", "t");
                expect_tool(1, y, "t", fallback);
                expect_tool(2, y, "u", "u");
                expect_tool(3, z, "t", "z__t");
                cr_assert_eq(registry_find(&reg, CATALOG_RESOURCES, "file:///r")->server, y);

                x->state = SERVER_BACKOFF;
                registry_rebuild(&reg, servers, 3, CATALOG_ALL_KINDS);
                cr_assert_eq(list(CATALOG_TOOLS)->n, 3);
                expect_tool(0, y, "t", "t");
                expect_tool(1, y, "u", "u");
                expect_tool(2, z, "t", "z__t");

                y->state = SERVER_BACKOFF;
                registry_rebuild(&reg, servers, 3, CATALOG_ALL_KINDS);
                cr_assert_eq(registry_find(&reg, CATALOG_RESOURCES, "file:///r")->server, z, "z's resource, kept aside, now served");
                y->state = SERVER_READY;
                registry_rebuild(&reg, servers, 3, CATALOG_ALL_KINDS);
                cr_assert_eq(registry_find(&reg, CATALOG_RESOURCES, "file:///r")->server, y);
                cr_assert_eq(list(CATALOG_RESOURCES)->n, 1);
        }
}

/* A filter changed live (the same catalog, the same server) names the items anew. */
Test(registry, kept_blocks_follow_filters) {
        struct server *a = fake("a", NULL, SERVER_READY, "[{\"name\":\"t\"},{\"name\":\"u\"}]", NULL, NULL, NULL);
        struct server_config *c = (struct server_config *)a->config;
        struct server *servers[] = { a };

        registry_rebuild(&reg, servers, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 2);
        c->filter.exclude[CATALOG_TOOLS] = calloc(2, sizeof(char *));
        c->filter.exclude[CATALOG_TOOLS][0] = strdup("u");
        registry_rebuild(&reg, servers, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 1);
        expect_tool(0, a, "t", "a__t");
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "a__u"));
}

/* The header: a bit per kind "whose client-visible list changed". An empty list before
 * and after is no change, also on the first build. */
Test(registry, first_build_of_empty_lists_changes_nothing) {
        unsigned changed = registry_rebuild(&reg, NULL, 0, CATALOG_ALL_KINDS);

        cr_assert_eq(changed, 0, "nothing before, nothing now: got %#x", changed);
}

Test(registry, first_build_sets_only_non_empty_kinds) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);

        unsigned changed = registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);

        cr_assert_eq(changed, BIT(CATALOG_TOOLS), "only the tools list changed: got %#x", changed);
}

Test(registry, first_build_not_listed_changes_nothing) {
        struct server *s = fake("fs", NULL, SERVER_STARTING, "[{\"name\":\"t\"}]", "[{\"name\":\"p\"}]", NULL, NULL);

        unsigned changed = registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);

        cr_assert_eq(changed, 0, "a starting server is not listed yet: got %#x", changed);
}

Test(registry, done_and_reuse) {
        struct server *s = fake("fs", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);

        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        registry_done(&reg);
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "fs__t"));
        registry_done(&reg); /* twice is harmless */
        registry_init(&reg, &lg, NULL);
        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_not_null(registry_find(&reg, CATALOG_TOOLS, "fs__t"));
}

Test(registry, many_tools) {
        char *tools = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&tools, &len);
        struct server *s;

        cr_assert_not_null(f);
        fputc('[', f);
        for (int i = 0; i < 2000; i++)
                fprintf(f, "%s{\"name\":\"tool_%d\"}", i ? "," : "", i);
        fputc(']', f);
        fclose(f);
        s = fake("big", NULL, SERVER_READY, tools, NULL, NULL, NULL);
        free(tools);
        registry_rebuild(&reg, &s, 1, CATALOG_ALL_KINDS);
        cr_assert_eq(list(CATALOG_TOOLS)->n, 2000);
        for (int i = 0; i < 2000; i += 37) {
                char name[32];
                const struct registry_entry *e;

                snprintf(name, sizeof name, "big__tool_%d", i);
                e = registry_find(&reg, CATALOG_TOOLS, name);
                cr_assert_not_null(e, "%s", name);
                cr_assert_eq(e, &list(CATALOG_TOOLS)->entries[i]);
        }
}

/* Marked kinds, rebuilt when read (issue 14: a rebuild per server state change made 1,000
 * servers take 27 s to start) */

static unsigned source_calls;

static struct server *const *fakes_source(void *userdata, size_t *ret_n) {
        source_calls++;
        *ret_n = n_fakes;
        return fakes;
}

static void use_fakes_source(void) {
        source_calls = 0;
        registry_set_source(&reg, &(struct registry_source){ .servers = fakes_source });
}

Test(registry, changes_between_reads_cost_one_rebuild) {
        struct server *s[8];
        char name[8];
        uint64_t builds;

        use_fakes_source();
        for (size_t i = 0; i < 8; i++) {
                snprintf(name, sizeof name, "s%zu", i);
                s[i] = fake(name, NULL, SERVER_STARTING, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        }
        builds = reg.builds;
        for (size_t i = 0; i < 8; i++) {
                s[i]->state = SERVER_READY;
                registry_mark(&reg, CATALOG_ALL_KINDS);
        }
        cr_assert_eq(reg.builds, builds, "rebuilt before anything was read");
        cr_assert_not_null(registry_find(&reg, CATALOG_TOOLS, "s7__t"), "a read sees every change made before it");
        cr_assert_eq(registry_list(&reg, CATALOG_TOOLS)->n, 8);
        cr_assert_eq(source_calls, 1, "eight changes, then reads: one rebuild, not %u", source_calls);
        cr_assert_eq(reg.builds, builds + CATALOG_KIND_COUNT, "each kind built once");
}

Test(registry, only_marked_kinds_are_rebuilt) {
        struct server *a = fake("a", NULL, SERVER_READY, "[{\"name\":\"t\"}]", "[{\"name\":\"p\"}]", NULL, NULL);
        uint64_t builds;

        use_fakes_source();
        registry_mark(&reg, CATALOG_ALL_KINDS);
        cr_assert_eq(registry_list(&reg, CATALOG_PROMPTS)->n, 1);
        builds = reg.builds;
        set_items(a, CATALOG_TOOLS, "[{\"name\":\"t\"},{\"name\":\"u\"}]");
        registry_mark(&reg, BIT(CATALOG_TOOLS));
        cr_assert_eq(registry_list(&reg, CATALOG_TOOLS)->n, 2, "the marked kind sees the change");
        cr_assert_eq(reg.builds, builds + 1, "only the tools were rebuilt");
        cr_assert_not_null(registry_find(&reg, CATALOG_PROMPTS, "a__p"));
        cr_assert_eq(reg.builds, builds + 1, "an unmarked read builds nothing");
}

Test(registry, nothing_marked_nothing_rebuilt) {
        use_fakes_source();
        fake("a", NULL, SERVER_READY, "[{\"name\":\"t\"}]", NULL, NULL, NULL);
        registry_mark(&reg, 0);
        cr_assert_null(registry_find(&reg, CATALOG_TOOLS, "a__t"), "a change that lists nothing new leaves the list");
        cr_assert_eq(source_calls, 0);
}
