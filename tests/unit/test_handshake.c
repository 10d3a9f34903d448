/* Unit tests for handshake.c (a server's MCP start, driven over a real child connection
 * on two pipes, the test playing the server) and catalog.c (what the handshake learns). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "server-conn.h"
#include "fake-server.h"
#include "handshake.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "time-util.h"
#include "unit-helpers.h"

static struct logger lg;
static struct jsonrpc_parser parser;
static struct child *ch;
static struct handshake hs;
static struct catalog cat;
static unsigned max_items = 1000000; /* what start() passes; a test lowers it */

static struct {
        unsigned calls;
        int r;
        char why[300];
} done;

static void on_message(struct child *c, struct jsonrpc_msg *m, void *userdata) {
}

static const struct child_ops ops = { .message = on_message };

static void on_done(int r, const char *why, void *userdata) {
        cr_assert_eq(userdata, &done);
        done.calls++;
        done.r = r;
        snprintf(done.why, sizeof done.why, "%s", why ? why : "");
}

static void setup(void) {
        log_capture_start();
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
        ch = server_connect(&lg, &parser, 1 << 20, &ops, NULL);
        handshake_init(&hs);
        catalog_init(&cat);
        max_items = 1000000;
}

static void teardown(void) {
        handshake_cancel(&hs);
        child_free(ch);
        ch = NULL;
        handshake_done(&hs);
        catalog_done(&cat);
        server_stop();
        jsonrpc_parser_done(&parser);
        log_capture_stop();
}

TestSuite(handshake, .init = setup, .fini = teardown);

/* Nothing more was sent: what the child queued is flushed and read, and no line is left. */
static void server_got_nothing_more(void) {
        struct evbuffer *rx = server_received();

        WAIT_UNTIL(child_input_queued(ch) == 0);
        for (int i = 0; i < 3; i++)
                loop_once();
        cr_assert_eq(evbuffer_get_length(rx), 0, "unexpected message: %.*s", (int)evbuffer_get_length(rx),
                     (const char *)evbuffer_pullup(rx, -1));
}

/* Reads a request for method; returns its id, and its params' cursor in cursor (or ""). */
static int64_t server_expects(const char *method, char *cursor, size_t size) {
        json_object *m = server_reads(), *id, *params, *c;
        int64_t ret;

        cr_assert_str_eq(str_field(m, "method"), method, "got %s", json_object_to_json_string(m));
        cr_assert(json_object_object_get_ex(m, "id", &id) && json_object_is_type(id, json_type_int),
                  "a request with an integer id: %s", json_object_to_json_string(m));
        ret = json_object_get_int64(id);
        if (cursor) {
                cursor[0] = '\0';
                if (json_object_object_get_ex(m, "params", &params) && json_object_object_get_ex(params, "cursor", &c))
                        snprintf(cursor, size, "%s", json_object_get_string(c));
        }
        json_object_put(m);
        return ret;
}

static void server_fails(int64_t id, const char *message) {
        char line[512];

        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32601,\"message\":\"%s\"}}\n",
                 (long long)id, message);
        server_says(line);
}

/* A start in era (MCP_ERA_UNKNOWN: probed, the probe waiting probe_usec). */
static void start_in(enum mcp_era era, uint64_t probe_usec) {
        cr_assert_eq(handshake_start(&hs, ch, "srv", max_items, NULL, era, probe_usec, &lg, on_done, &done), 0);
        cr_assert(hs.running);
}

/* A legacy start (initialize first), as "protocol": "legacy" asks. */
static void start(void) {
        start_in(MCP_ERA_LEGACY, 0);
}

/* initialize, checked; returns its id. */
static int64_t server_expects_initialize(void) {
        json_object *m = server_reads(), *params, *v, *info;
        int64_t id;

        cr_assert_str_eq(str_field(m, "jsonrpc"), "2.0");
        cr_assert_str_eq(str_field(m, "method"), "initialize");
        cr_assert(json_object_object_get_ex(m, "id", &v) && json_object_is_type(v, json_type_int));
        id = json_object_get_int64(v);
        cr_assert(json_object_object_get_ex(m, "params", &params));
        cr_assert_str_eq(str_field(params, "protocolVersion"), MCP_LATEST_VERSION);
        cr_assert(json_object_object_get_ex(params, "capabilities", &v) && json_object_is_type(v, json_type_object));
        cr_assert(json_object_object_get_ex(params, "clientInfo", &info));
        cr_assert_str_eq(str_field(info, "name"), "mcpvisor");
        cr_assert_not_null(str_field(info, "version"));
        json_object_put(m);
        return id;
}

static void server_expects_initialized(void) {
        json_object *m = server_reads();

        cr_assert_str_eq(str_field(m, "method"), "notifications/initialized", "got %s", json_object_to_json_string(m));
        cr_assert_not(json_object_object_get_ex(m, "id", NULL), "a notification has no id");
        json_object_put(m);
}

/* Runs initialize with this capabilities object and version; leaves the lists to the test. */
static void initialize_with(const char *version, const char *capabilities) {
        char result[512];
        int64_t id;

        start();
        id = server_expects_initialize();
        snprintf(result, sizeof result,
                 "{\"protocolVersion\":\"%s\",\"capabilities\":%s,\"serverInfo\":{\"name\":\"demo\",\"version\":\"1.0\"}}",
                 version, capabilities);
        server_answers(id, result);
        server_expects_initialized();
}

static void expect_success(void) {
        WAIT_UNTIL(done.calls == 1);
        cr_assert_eq(done.r, 0, "handshake failed: %s", done.why);
        cr_assert_not(hs.running);
        handshake_take(&hs, &cat);
}

Test(handshake, no_capabilities_no_lists) {
        initialize_with("2025-06-18", "{}");
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(ch->n_pending, 0);
        cr_assert_not_null(cat.initialize);
        cr_assert_str_eq(str_field(cat.initialize, "protocolVersion"), "2025-06-18");
        for (int k = 0; k < CATALOG_KIND_COUNT; k++) {
                cr_assert_null(cat.lists[k], "kind %d fetched without the capability", k);
                cr_assert_eq(catalog_count(&cat, k), 0);
        }
}

Test(handshake, tools_only) {
        initialize_with("2025-11-25", "{\"tools\":{\"listChanged\":true}}");
        int64_t id = server_expects("tools/list", NULL, 0);
        cr_assert_eq(done.calls, 0);
        server_answers(id, "{\"tools\":[{\"name\":\"a\"},{\"name\":\"b\"}]}");
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 2);
        cr_assert_null(cat.lists[CATALOG_PROMPTS]);
        cr_assert_null(cat.lists[CATALOG_RESOURCES]);
        cr_assert_null(cat.lists[CATALOG_TEMPLATES]);
        cr_assert_str_eq(key_at(cat.lists[CATALOG_TOOLS], 1), "b");
}

Test(handshake, all_lists_in_order) {
        initialize_with("2025-11-25", "{\"tools\":{},\"prompts\":{},\"resources\":{\"subscribe\":true},\"logging\":{}}");
        server_answers(server_expects("tools/list", NULL, 0), "{\"tools\":[{\"name\":\"t\"}]}");
        server_answers(server_expects("prompts/list", NULL, 0), "{\"prompts\":[{\"name\":\"p1\"},{\"name\":\"p2\"}]}");
        server_answers(server_expects("resources/list", NULL, 0), "{\"resources\":[]}");
        server_answers(server_expects("resources/templates/list", NULL, 0),
                       "{\"resourceTemplates\":[{\"uriTemplate\":\"file:///{p}\",\"name\":\"f\"}]}");
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 1);
        cr_assert_eq(catalog_count(&cat, CATALOG_PROMPTS), 2);
        cr_assert_not_null(cat.lists[CATALOG_RESOURCES], "an empty list is still a list");
        cr_assert_eq(catalog_count(&cat, CATALOG_RESOURCES), 0);
        cr_assert_eq(catalog_count(&cat, CATALOG_TEMPLATES), 1);
}

Test(handshake, resources_without_tools_and_prompts) {
        initialize_with("2024-11-05", "{\"resources\":{}}");
        server_answers(server_expects("resources/list", NULL, 0), "{\"resources\":[{\"uri\":\"a\",\"name\":\"a\"}]}");
        server_answers(server_expects("resources/templates/list", NULL, 0), "{\"resourceTemplates\":[]}");
        expect_success();
        server_got_nothing_more();
        cr_assert_null(cat.lists[CATALOG_TOOLS]);
        cr_assert_null(cat.lists[CATALOG_PROMPTS]);
        cr_assert_eq(catalog_count(&cat, CATALOG_RESOURCES), 1);
}

Test(handshake, cursors_followed) {
        char cursor[64];
        int64_t id;

        initialize_with("2025-11-25", "{\"tools\":{}}");
        id = server_expects("tools/list", cursor, sizeof cursor);
        cr_assert_str_eq(cursor, "", "the first page is asked without a cursor");
        server_answers(id, "{\"tools\":[{\"name\":\"1\"}],\"nextCursor\":\"page-2\"}");
        id = server_expects("tools/list", cursor, sizeof cursor);
        cr_assert_str_eq(cursor, "page-2");
        server_answers(id, "{\"tools\":[{\"name\":\"2\"},{\"name\":\"3\"}],\"nextCursor\":\"page-3\"}");
        id = server_expects("tools/list", cursor, sizeof cursor);
        cr_assert_str_eq(cursor, "page-3");
        server_answers(id, "{\"tools\":[{\"name\":\"4\"}],\"nextCursor\":\"\"}"); /* empty: the end */
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 4);
        for (int i = 0; i < 4; i++) {
                char name[4];
                snprintf(name, sizeof name, "%d", i + 1);
                cr_assert_str_eq(key_at(cat.lists[CATALOG_TOOLS], i), name);
        }
}

Test(handshake, cursor_per_list) {
        char cursor[64];
        int64_t id;

        initialize_with("2025-11-25", "{\"tools\":{},\"prompts\":{}}");
        id = server_expects("tools/list", cursor, sizeof cursor);
        server_answers(id, "{\"tools\":[{\"name\":\"t1\"}],\"nextCursor\":\"t-2\"}");
        id = server_expects("tools/list", cursor, sizeof cursor);
        cr_assert_str_eq(cursor, "t-2");
        server_answers(id, "{\"tools\":[{\"name\":\"t2\"}]}");
        id = server_expects("prompts/list", cursor, sizeof cursor);
        cr_assert_str_eq(cursor, "", "a new list starts without a cursor");
        server_answers(id, "{\"prompts\":[{\"name\":\"p1\"}],\"nextCursor\":\"p-2\"}");
        id = server_expects("prompts/list", cursor, sizeof cursor);
        cr_assert_str_eq(cursor, "p-2");
        server_answers(id, "{\"prompts\":[]}");
        expect_success();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 2);
        cr_assert_eq(catalog_count(&cat, CATALOG_PROMPTS), 1);
}

Test(handshake, page_limit) {
        char cursor[64], result[128];
        unsigned pages = 0;

        initialize_with("2025-11-25", "{\"tools\":{}}");
        while (done.calls == 0) {
                int64_t id = server_expects("tools/list", cursor, sizeof cursor);
                pages++;
                cr_assert_leq(pages, HANDSHAKE_MAX_PAGES, "asked for more than HANDSHAKE_MAX_PAGES pages");
                snprintf(result, sizeof result, "{\"tools\":[{\"name\":\"t%u\"}],\"nextCursor\":\"after-%u\"}", pages, pages);
                server_answers(id, result);
                WAIT_UNTIL(done.calls == 1 || server_has_line());
        }
        cr_assert_eq(pages, HANDSHAKE_MAX_PAGES);
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), HANDSHAKE_MAX_PAGES);
        cr_assert(strstr(logged(), "tools/list still had more after 100 pages"), "log: %s", logged());
}

/* At most max_items of a list are kept; the pages after the cut are never asked for. */
Test(handshake, item_limit_stops_fetching) {
        int64_t id;

        max_items = 3;
        initialize_with("2025-11-25", "{\"tools\":{},\"prompts\":{}}");
        server_answers(server_expects("tools/list", NULL, 0), "{\"tools\":[{\"name\":\"1\"},{\"name\":\"2\"}],\"nextCursor\":\"c\"}");
        id = server_expects("tools/list", NULL, 0);
        server_answers(id, "{\"tools\":[{\"name\":\"3\"},{\"name\":\"4\"}],\"nextCursor\":\"d\"}");
        /* the next list, not the tools' third page */
        server_answers(server_expects("prompts/list", NULL, 0), "{\"prompts\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"}]}");
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 3);
        cr_assert_str_eq(key_at(cat.lists[CATALOG_TOOLS], 2), "3");
        cr_assert_eq(catalog_count(&cat, CATALOG_PROMPTS), 3, "exactly the limit is no cut");
        cr_assert(strstr(logged(), "[srv] offers more than 3 tools; only the first 3 are served (maxCatalogItems)"),
                  "log: %s", logged());
        cr_assert_eq(occurrences(logged(), "maxCatalogItems"), 1, "log: %s", logged());
}

/* A full list with a cursor for more is cut there, even when the next page would be empty. */
Test(handshake, item_limit_full_page_with_more) {
        max_items = 2;
        initialize_with("2025-11-25", "{\"tools\":{}}");
        server_answers(server_expects("tools/list", NULL, 0), "{\"tools\":[{\"name\":\"1\"},{\"name\":\"2\"}],\"nextCursor\":\"c\"}");
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 2);
        cr_assert(strstr(logged(), "offers more than 2 tools"), "log: %s", logged());
}

Test(handshake, list_error_tolerated) {
        initialize_with("2025-11-25", "{\"tools\":{},\"prompts\":{}}");
        server_fails(server_expects("tools/list", NULL, 0), "tools are broken today");
        server_answers(server_expects("prompts/list", NULL, 0), "{\"prompts\":[{\"name\":\"p\"}]}");
        expect_success();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 0);
        cr_assert_eq(catalog_count(&cat, CATALOG_PROMPTS), 1);
        const char *text = logged();
        cr_assert(strstr(text, "[srv] tools/list failed (tools are broken today)"), "log: %s", text);
}

Test(handshake, list_without_array_tolerated) {
        initialize_with("2025-11-25", "{\"resources\":{}}");
        server_answers(server_expects("resources/list", NULL, 0), "{\"resources\":{\"a\":1}}");
        server_fails(server_expects("resources/templates/list", NULL, 0), "Method not found");
        expect_success();
        cr_assert_eq(catalog_count(&cat, CATALOG_RESOURCES), 0);
        cr_assert_eq(catalog_count(&cat, CATALOG_TEMPLATES), 0);
        const char *text = logged();
        cr_assert(strstr(text, "resources/list failed (no array in the result)"), "log: %s", text);
        cr_assert(strstr(text, "resources/templates/list failed (Method not found)"), "log: %s", text);
}

Test(handshake, every_supported_version_accepted) {
        for (const char *const *v = mcp_supported_versions; *v; v++) {
                done.calls = 0;
                initialize_with(*v, "{}");
                expect_success();
                cr_assert_str_eq(str_field(cat.initialize, "protocolVersion"), *v);
        }
}

Test(handshake, unsupported_version_rejected) {
        int64_t id;

        start();
        id = server_expects_initialize();
        server_answers(id, "{\"protocolVersion\":\"2099-01-01\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"x\"}}");
        WAIT_UNTIL(done.calls == 1);
        cr_assert_lt(done.r, 0);
        cr_assert(strstr(done.why, "2099-01-01"), "the error does not name the version: %s", done.why);
        cr_assert_not(hs.running);
        server_got_nothing_more(); /* neither notifications/initialized nor a list */
        cr_assert_eq(ch->n_pending, 0);
        handshake_take(&hs, &cat);
        cr_assert_null(cat.initialize);
}

Test(handshake, initialize_error_response) {
        int64_t id;

        start();
        id = server_expects_initialize();
        server_fails(id, "bad credentials");
        WAIT_UNTIL(done.calls == 1);
        cr_assert_lt(done.r, 0);
        cr_assert(strstr(done.why, "bad credentials"), "why: %s", done.why);
        server_got_nothing_more();
}

Test(handshake, initialize_result_without_version) {
        static const char *const results[] = { "{\"capabilities\":{}}", "{\"protocolVersion\":20250618}", "[]", "\"x\"" };

        for (size_t i = 0; i < sizeof results / sizeof results[0]; i++) {
                done.calls = 0;
                start();
                server_answers(server_expects_initialize(), results[i]);
                WAIT_UNTIL(done.calls == 1);
                cr_assert_lt(done.r, 0, "result %s accepted", results[i]);
                cr_assert(strstr(done.why, "protocolVersion"), "why: %s", done.why);
        }
        server_got_nothing_more();
}

Test(handshake, connection_lost_during_initialize) {
        start();
        server_expects_initialize();
        child_free(ch);
        ch = NULL;
        cr_assert_eq(done.calls, 1);
        cr_assert_lt(done.r, 0);
        cr_assert(strstr(done.why, "initialize"), "why: %s", done.why);
        cr_assert(strstr(done.why, "connection closed"), "why: %s", done.why);
        cr_assert_not(hs.running);
}

Test(handshake, connection_lost_during_list) {
        initialize_with("2025-11-25", "{\"prompts\":{}}");
        server_expects("prompts/list", NULL, 0);
        child_free(ch);
        ch = NULL;
        cr_assert_eq(done.calls, 1);
        cr_assert_eq(done.r, -ECONNRESET);
        cr_assert_str_eq(done.why, "prompts/list: connection closed");
}

Test(handshake, cancel_drops_late_answer) {
        int64_t id;

        start();
        id = server_expects_initialize();
        handshake_cancel(&hs);
        cr_assert_not(hs.running);
        cr_assert_eq(ch->n_pending, 0);
        server_answers(id, "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}}}");
        /* Something after it, to know the answer was read. */
        server_says("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n");
        WAIT_UNTIL(strstr(logged(), "dropped a response"));
        cr_assert_eq(done.calls, 0);
        server_got_nothing_more();
}

Test(handshake, cancel_during_list) {
        int64_t id;

        initialize_with("2025-11-25", "{\"tools\":{}}");
        id = server_expects("tools/list", NULL, 0);
        handshake_cancel(&hs);
        cr_assert_eq(ch->n_pending, 0);
        server_answers(id, "{\"tools\":[]}");
        WAIT_UNTIL(strstr(logged(), "dropped a response"));
        cr_assert_eq(done.calls, 0);
        child_free(ch); /* nothing pending: done is not called late either */
        ch = NULL;
        cr_assert_eq(done.calls, 0);
}

Test(handshake, take_moves_catalog) {
        initialize_with("2025-11-25", "{\"tools\":{}}");
        server_answers(server_expects("tools/list", NULL, 0), "{\"tools\":[{\"name\":\"x\"}]}");
        expect_success();
        cr_assert_null(hs.catalog.initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                cr_assert_null(hs.catalog.lists[k]);
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 1);
        cr_assert_not_null(catalog_capability(&cat, "tools"));
}

Test(handshake, runs_again_on_restart) {
        initialize_with("2025-11-25", "{\"tools\":{}}");
        server_answers(server_expects("tools/list", NULL, 0), "{\"tools\":[{\"name\":\"old\"}]}");
        WAIT_UNTIL(done.calls == 1);
        /* Not taken: a new start must not carry the old catalog over. */
        done.calls = 0;
        initialize_with("2025-11-25", "{\"prompts\":{}}");
        server_answers(server_expects("prompts/list", NULL, 0), "{\"prompts\":[{\"name\":\"new\"}]}");
        expect_success();
        cr_assert_null(cat.lists[CATALOG_TOOLS], "tools of the previous run kept");
        cr_assert_eq(catalog_count(&cat, CATALOG_PROMPTS), 1);
        cr_assert_null(catalog_capability(&cat, "tools"));
}

Test(handshake, start_while_running_cancels_previous) {
        int64_t old;

        start();
        old = server_expects_initialize();
        start();
        int64_t id = server_expects_initialize();
        cr_assert_neq(id, old);
        cr_assert_eq(ch->n_pending, 1, "the first initialize is forgotten");
        server_answers(old, "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
        server_answers(id, "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
        server_expects_initialized();
        expect_success();
        cr_assert_eq(done.calls, 1);
}

/* Items kept as text (issue 14): what is no item of its kind is left out, said once per
 * list; the rest is kept byte for byte. */
Test(handshake, items_that_are_no_items_left_out) {
        initialize_with("2025-11-25", "{\"tools\":{}}");
        server_answers(server_expects("tools/list", NULL, 0),
                       "{\"tools\":[{\"name\":\"ok\", \"description\" : \"d\"},1,\"x\",[],{},{\"name\":\"\"},{\"name\":5},"
                       "{\"name\":\"a\",\"name\":\"b\"},{\"title\":\"no name\"},{\"n\\u0061me\":\"esc\\u00e9\"}]}");
        expect_success();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 2);
        cr_assert_str_eq(key_at(cat.lists[CATALOG_TOOLS], 0), "ok");
        cr_assert_str_eq(cat.lists[CATALOG_TOOLS]->items[0]->text, "{\"name\":\"ok\", \"description\" : \"d\"}",
                         "kept as the server wrote it");
        cr_assert_str_eq(key_at(cat.lists[CATALOG_TOOLS], 1), "esc\xc3\xa9");
        cr_assert(strstr(logged(), "[srv] tools/list: left out 8 entries that are no object with one non-empty string \"name\""),
                  "log: %s", logged());
        cr_assert_eq(occurrences(logged(), "left out"), 1, "log: %s", logged());
}

/* A cursor is sent back as the server wrote it, escapes and all. */
Test(handshake, cursor_with_escapes) {
        char cursor[64];

        initialize_with("2025-11-25", "{\"prompts\":{}}");
        server_answers(server_expects("prompts/list", NULL, 0),
                       "{\"nextCursor\":\"a\\\"b\\u00e9\",\"prompts\":[{\"name\":\"1\"}]}");
        int64_t id = server_expects("prompts/list", cursor, sizeof cursor);
        cr_assert_str_eq(cursor, "a\"b\xc3\xa9");
        server_answers(id, "{\"prompts\":[{\"name\":\"2\"}]}");
        expect_success();
        cr_assert_eq(catalog_count(&cat, CATALOG_PROMPTS), 2);
}

/* An answer the text path does not take (a member of the envelope spelled with an escape)
 * is read by json-c and its items are kept as text all the same. */
Test(handshake, page_read_by_json_c) {
        char line[256];

        initialize_with("2025-11-25", "{\"tools\":{}}");
        int64_t id = server_expects("tools/list", NULL, 0);
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"res\\u0075lt\":{\"tools\":[{\"name\":\"j\",\"x\":[1]}]}}\n",
                 (long long)id);
        server_says(line);
        expect_success();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 1);
        cr_assert_str_eq(cat.lists[CATALOG_TOOLS]->items[0]->text, "{\"name\":\"j\",\"x\":[1]}");
}

Test(handshake, two_arrays_the_last_taken) {
        initialize_with("2025-11-25", "{\"tools\":{}}");
        server_answers(server_expects("tools/list", NULL, 0), "{\"tools\":[{\"name\":\"first\"}],\"tools\":[{\"name\":\"last\"}]}");
        expect_success();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 1);
        cr_assert_str_eq(key_at(cat.lists[CATALOG_TOOLS], 0), "last", "as json-c reads it");
}

/* catalog.c */

static struct catalog c1, c2;

static void catalog_fini(void) {
        catalog_done(&c1);
        catalog_done(&c2);
}

/* ---- the modern era's probe ---- */

static const char *sf_line(const char *fmt, ...) _printf_(1, 2);
static const char *sf_line(const char *fmt, ...) {
        static char buf[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        return buf;
}

/* Reads server/discover: its _meta names our modern version, who we are and what we
 * offer (its capabilities an object). Returns its id. */
static int64_t server_expects_discover(void) {
        json_object *m = server_reads(), *params, *meta, *v;
        int64_t id;

        cr_assert_str_eq(str_field(m, "method"), "server/discover", "got %s", json_object_to_json_string(m));
        cr_assert(json_object_object_get_ex(m, "id", &v) && json_object_is_type(v, json_type_int));
        id = json_object_get_int64(v);
        cr_assert(json_object_object_get_ex(m, "params", &params) && json_object_object_get_ex(params, "_meta", &meta),
                  "no _meta: %s", json_object_to_json_string(m));
        cr_assert_str_eq(str_field(meta, META_PROTOCOL_VERSION), MCP_MODERN_VERSION);
        cr_assert(json_object_object_get_ex(meta, META_CLIENT_CAPABILITIES, &v) && json_object_is_type(v, json_type_object));
        cr_assert(json_object_object_get_ex(meta, META_CLIENT_INFO, &v));
        cr_assert_str_eq(str_field(v, "name"), "mcpvisor");
        json_object_put(m);
        return id;
}

static const char discover_result[] =
        "{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":{}},"
        "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"modern\",\"version\":\"2\"}},"
        "\"instructions\":\"use it\",\"ttlMs\":1000,\"cacheScope\":\"public\"}";

/* A list request of a modern server: its _meta is ours. */
static int64_t server_expects_modern(const char *method) {
        json_object *m = server_reads(), *params, *meta, *v;
        int64_t id;

        cr_assert_str_eq(str_field(m, "method"), method, "got %s", json_object_to_json_string(m));
        cr_assert(json_object_object_get_ex(m, "id", &v));
        id = json_object_get_int64(v);
        cr_assert(json_object_object_get_ex(m, "params", &params) && json_object_object_get_ex(params, "_meta", &meta),
                  "no _meta: %s", json_object_to_json_string(m));
        cr_assert_str_eq(str_field(meta, META_PROTOCOL_VERSION), MCP_MODERN_VERSION);
        json_object_put(m);
        return id;
}

Test(handshake, probe_finds_a_modern_server) {
        json_object *v;

        start_in(MCP_ERA_UNKNOWN, 5 * USEC_PER_SEC);
        cr_assert(handshake_probing(&hs));
        server_answers(server_expects_discover(), discover_result);
        /* no initialize, no initialized: the lists, each with our _meta */
        server_answers(server_expects_modern("tools/list"), "{\"resultType\":\"complete\",\"tools\":[{\"name\":\"t\"}],\"ttlMs\":5}");
        expect_success();
        cr_assert_eq(hs.era, MCP_ERA_MODERN);
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), 1);
        cr_assert_not_null(catalog_capability(&cat, "tools"));
        cr_assert_str_eq(str_field(cat.initialize, "protocolVersion"), MCP_MODERN_VERSION);
        cr_assert_str_eq(str_field(cat.initialize, "instructions"), "use it");
        cr_assert(json_object_object_get_ex(cat.initialize, "serverInfo", &v));
        cr_assert_str_eq(str_field(v, "name"), "modern");
        cr_assert_not_null(ch->meta, "what follows on the connection carries our _meta");
}

/* Any error that is no modern one, whatever its code, says legacy (stdio: "Backward
 * Compatibility"): initialize follows on the same connection, without our _meta. */
static void probe_refused_with(int code) {
        char line[256];
        json_object *m, *params;

        start_in(MCP_ERA_UNKNOWN, 5 * USEC_PER_SEC);
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":%d,\"message\":\"no\"}}\n",
                 (long long)server_expects_discover(), code);
        server_says(line);
        m = server_reads();
        cr_assert_str_eq(str_field(m, "method"), "initialize");
        cr_assert(json_object_object_get_ex(m, "params", &params));
        cr_assert_not(json_object_object_get_ex(params, "_meta", NULL), "initialize carries no modern _meta");
        server_answers(json_object_get_int64(json_object_object_get(m, "id")), "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
        json_object_put(m);
        server_expects_initialized();
        expect_success();
        cr_assert_eq(hs.era, MCP_ERA_LEGACY);
        cr_assert_null(ch->meta);
}

Test(handshake, probe_method_not_found_is_legacy) {
        probe_refused_with(-32601);
}

Test(handshake, probe_invalid_params_is_legacy) {
        probe_refused_with(-32602);
}

Test(handshake, probe_other_error_is_legacy) {
        probe_refused_with(-32000);
}

Test(handshake, probe_unanswered_is_legacy_after_its_timeout) {
        uint64_t t0 = now_usec();
        int64_t id;

        start_in(MCP_ERA_UNKNOWN, 200 * 1000);
        (void)server_expects_discover();
        WAIT_UNTIL(server_has_line());
        /* libevent's timers run on CLOCK_MONOTONIC_COARSE, a tick behind now_usec()'s clock:
         * a margin of a few ticks, far from what falling back at once would take. */
        cr_assert_geq(now_usec() - t0, 150 * 1000, "initialize before the probe's timeout");
        id = server_expects_initialize();
        server_answers(id, "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
        server_expects_initialized();
        expect_success();
        cr_assert_eq(hs.era, MCP_ERA_LEGACY);
}

/* A modern server that does not speak our version, naming only versions we do not
 * speak: the start fails, saying which it speaks (no initialize: it is modern). */
Test(handshake, probe_unsupported_version_fails) {
        start_in(MCP_ERA_UNKNOWN, 5 * USEC_PER_SEC);
        server_says(sf_line("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32022,\"message\":\"Unsupported protocol "
                            "version\",\"data\":{\"supported\":[\"2099-01-01\"],\"requested\":\"2026-07-28\"}}}\n",
                            (long long)server_expects_discover()));
        WAIT_UNTIL(done.calls == 1);
        cr_assert_lt(done.r, 0);
        cr_assert(strstr(done.why, "2099-01-01"), "%s", done.why);
        server_got_nothing_more();
}

/* -32022 naming a legacy version we speak: a dual-era server whose modern versions are
 * not ours, initialized. */
Test(handshake, probe_unsupported_version_with_a_legacy_one_initializes) {
        start_in(MCP_ERA_UNKNOWN, 5 * USEC_PER_SEC);
        server_says(sf_line("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32022,\"message\":\"Unsupported\","
                            "\"data\":{\"supported\":[\"2099-01-01\",\"2025-11-25\"]}}}\n",
                            (long long)server_expects_discover()));
        server_answers(server_expects_initialize(), "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}");
        server_expects_initialized();
        expect_success();
        cr_assert_eq(hs.era, MCP_ERA_LEGACY);
}

/* "protocol": "modern": discover without a timeout of its own, and an error fails the start. */
Test(handshake, modern_configured_error_fails) {
        start_in(MCP_ERA_MODERN, 0);
        cr_assert_not(handshake_probing(&hs));
        server_fails(server_expects_discover(), "nope");
        WAIT_UNTIL(done.calls == 1);
        cr_assert_lt(done.r, 0);
        server_got_nothing_more();
}

TestSuite(catalog, .fini = catalog_fini);

Test(catalog, kinds_table) {
        cr_assert_str_eq(catalog_kinds[CATALOG_TOOLS].method, "tools/list");
        cr_assert_str_eq(catalog_kinds[CATALOG_TOOLS].key, "tools");
        cr_assert_str_eq(catalog_kinds[CATALOG_TOOLS].capability, "tools");
        cr_assert_str_eq(catalog_kinds[CATALOG_PROMPTS].method, "prompts/list");
        cr_assert_str_eq(catalog_kinds[CATALOG_PROMPTS].key, "prompts");
        cr_assert_str_eq(catalog_kinds[CATALOG_PROMPTS].capability, "prompts");
        cr_assert_str_eq(catalog_kinds[CATALOG_RESOURCES].method, "resources/list");
        cr_assert_str_eq(catalog_kinds[CATALOG_RESOURCES].key, "resources");
        cr_assert_str_eq(catalog_kinds[CATALOG_RESOURCES].capability, "resources");
        cr_assert_str_eq(catalog_kinds[CATALOG_TEMPLATES].method, "resources/templates/list");
        cr_assert_str_eq(catalog_kinds[CATALOG_TEMPLATES].key, "resourceTemplates");
        cr_assert_str_eq(catalog_kinds[CATALOG_TEMPLATES].capability, "resources");
}

Test(catalog, empty) {
        catalog_init(&c1);
        cr_assert_null(c1.initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++) {
                cr_assert_null(c1.lists[k]);
                cr_assert_eq(catalog_count(&c1, k), 0);
        }
        cr_assert_null(catalog_capability(&c1, "tools"));
        catalog_done(&c1);
        catalog_done(&c1); /* twice: fine */
}

Test(catalog, capability) {
        catalog_init(&c1);
        c1.initialize = json_tokener_parse("{\"protocolVersion\":\"2025-11-25\",\"capabilities\":"
                                           "{\"tools\":{\"listChanged\":true},\"prompts\":true,\"logging\":{}}}");
        cr_assert_not_null(c1.initialize);
        json_object *tools = catalog_capability(&c1, "tools");
        cr_assert_not_null(tools);
        cr_assert(json_object_object_get_ex(tools, "listChanged", NULL));
        cr_assert_not_null(catalog_capability(&c1, "logging"));
        cr_assert_null(catalog_capability(&c1, "prompts"), "a capability is an object");
        cr_assert_null(catalog_capability(&c1, "resources"));

        catalog_done(&c1);
        c1.initialize = json_tokener_parse("{\"protocolVersion\":\"2025-11-25\"}");
        cr_assert_null(catalog_capability(&c1, "tools"), "no capabilities at all");
        catalog_done(&c1);
        c1.initialize = json_tokener_parse("{\"capabilities\":[\"tools\"]}");
        cr_assert_null(catalog_capability(&c1, "tools"));
}

Test(catalog, count) {
        catalog_init(&c1);
        c1.lists[CATALOG_PROMPTS] = list_of(CATALOG_PROMPTS, "[{\"name\":\"1\"},{\"name\":\"2\"},{\"name\":\"3\"}]");
        c1.lists[CATALOG_TOOLS] = list_of(CATALOG_TOOLS, "[]");
        cr_assert_eq(catalog_count(&c1, CATALOG_PROMPTS), 3);
        cr_assert_eq(catalog_count(&c1, CATALOG_TOOLS), 0);
        cr_assert_eq(catalog_count(&c1, CATALOG_TEMPLATES), 0);
}

Test(catalog, replace_moves_and_releases) {
        json_object *init;

        catalog_init(&c1);
        catalog_init(&c2);
        c1.initialize = json_tokener_parse("{\"old\":true}");
        c1.lists[CATALOG_TOOLS] = list_of(CATALOG_TOOLS, "[{\"name\":\"1\"}]");
        c2.initialize = init = json_tokener_parse("{\"new\":true}");
        c2.lists[CATALOG_RESOURCES] = list_of(CATALOG_RESOURCES, "[{\"uri\":\"a:1\"},{\"uri\":\"a:2\"}]");
        catalog_replace(&c1, &c2);
        cr_assert_eq(c1.initialize, init);
        cr_assert_null(c1.lists[CATALOG_TOOLS], "the old lists are released, not merged");
        cr_assert_eq(catalog_count(&c1, CATALOG_RESOURCES), 2);
        cr_assert_null(c2.initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                cr_assert_null(c2.lists[k]);
}

/* The item as clients see it, its parts joined. */
static const char *shown(const struct catalog_item *it, const char *exposed) {
        static char out[512];
        struct iovec parts[CATALOG_ITEM_PARTS];
        size_t n = catalog_item_parts(it, exposed, parts), len = 0;

        for (size_t i = 0; i < n; i++) {
                cr_assert_lt(len + parts[i].iov_len, sizeof out);
                memcpy(out + len, parts[i].iov_base, parts[i].iov_len);
                len += parts[i].iov_len;
        }
        out[len] = '\0';
        return out;
}

static struct catalog_item *item(int kind, const char *text) {
        struct catalog_item *it;

        cr_assert_eq(catalog_item_new(kind, text, strlen(text), &it), 0, "%s", text);
        return it;
}

/* The renamed item: "name" first, then the rest as the server wrote it, and valid JSON
 * equal to the original with the name replaced. */
Test(catalog, renamed_item_written) {
        static const struct { const char *text, *key, *renamed; } cases[] = {
                { "{\"name\":\"a\",\"b\":1}", "a", "{\"name\":\"S__a\",\"b\":1}" },
                { "{\"b\":1,\"name\":\"a\"}", "a", "{\"name\":\"S__a\",\"b\":1}" },
                { "{\"b\":1,\"name\":\"a\",\"c\":{\"name\":\"in\"}}", "a", "{\"name\":\"S__a\",\"b\":1,\"c\":{\"name\":\"in\"}}" },
                { "{\"name\":\"a\"}", "a", "{\"name\":\"S__a\"}" },
                { "{ \"name\" : \"a\" }", "a", "{\"name\":\"S__a\"}" },
                { "{ \"d\" : \"x\" , \"name\" : \"a\" }", "a", "{\"name\":\"S__a\", \"d\" : \"x\" }" },
                { "{\"name\":\"q\\\"uote\\\\d\",\"d\":\"\\n\"}", "q\"uote\\d", "{\"name\":\"S__a\",\"d\":\"\\n\"}" },
                { "{\"n\\u0061me\":\"\\u00e9\\ud83d\\ude00\",\"d\":1}", "\xc3\xa9\xf0\x9f\x98\x80", "{\"name\":\"S__a\",\"d\":1}" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                struct catalog_item *it = item(CATALOG_TOOLS, cases[i].text);
                const char *out;

                cr_assert_str_eq(catalog_item_key(it), cases[i].key, "%s", cases[i].text);
                cr_assert_str_eq(shown(it, NULL), cases[i].text, "shown as it came when not renamed");
                out = shown(it, "S__a");
                cr_assert_str_eq(out, cases[i].renamed, "%s", cases[i].text);
                json_object *o = json_tokener_parse(out), *v;
                cr_assert_not_null(o, "%s", out);
                cr_assert(json_object_object_get_ex(o, "name", &v));
                cr_assert_str_eq(json_object_get_string(v), "S__a");
                json_object_put(o);
                free(it);
        }
}

Test(catalog, items_refused) {
        static const struct { int kind; const char *text; int r; } cases[] = {
                { CATALOG_TOOLS, "[]", -EINVAL },
                { CATALOG_TOOLS, "\"name\"", -EINVAL },
                { CATALOG_TOOLS, " {\"name\":\"a\"}", -EINVAL }, /* an element starts at its '{' */
                { CATALOG_TOOLS, "{\"name\":\"\"}", -EINVAL },
                { CATALOG_TOOLS, "{\"name\":null}", -EINVAL },
                { CATALOG_TOOLS, "{\"name\":[\"a\"]}", -EINVAL },
                { CATALOG_TOOLS, "{\"uri\":\"a\"}", -ENOENT },
                { CATALOG_TOOLS, "{\"name\":\"a\",\"name\":\"a\"}", -EEXIST },
                { CATALOG_TOOLS, "{\"name\":\"a\",\"na\\u006de\":\"b\"}", -EEXIST },
                { CATALOG_RESOURCES, "{\"name\":\"a\"}", -ENOENT },
                { CATALOG_TEMPLATES, "{\"uri\":\"a\"}", -ENOENT },
        };
        struct catalog_item *it;

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                cr_assert_eq(catalog_item_new(cases[i].kind, cases[i].text, strlen(cases[i].text), &it), cases[i].r,
                             "%s", cases[i].text);
                cr_assert_null(it);
        }
        it = item(CATALOG_TEMPLATES, "{\"uriTemplate\":\"file:///{p}\",\"name\":\"f\"}");
        cr_assert_str_eq(catalog_item_key(it), "file:///{p}");
        free(it);
}

Test(catalog, list_cut_at_max) {
        struct catalog_list *l = catalog_list_new();
        unsigned refused = 0;
        const char *page = "[{\"name\":\"1\"},2,{\"name\":\"3\"},{\"name\":\"4\"}]";

        cr_assert_eq(catalog_list_add_array(l, CATALOG_TOOLS, page, strlen(page), 2, &refused), 1, "one left over");
        cr_assert_eq(l->n, 2);
        cr_assert_eq(refused, 1);
        cr_assert_str_eq(key_at(l, 1), "3");
        cr_assert_eq(catalog_list_add_array(l, CATALOG_TOOLS, "{}", 2, 10, &refused), -EINVAL);
        cr_assert_eq(catalog_list_ref(l), l);
        catalog_list_unref(l);
        cr_assert_eq(l->refs, 1);
        catalog_list_unref(l);
}

