/* Unit tests for handshake.c (a server's MCP start, driven over a real child connection
 * on two pipes, the test playing the server) and catalog.c (what the handshake learns). */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "child.h"
#include "handshake.h"
#include "jsonrpc.h"
#include "log.h"
#include "protocol.h"
#include "time-util.h"

#define WAIT_USEC (10 * USEC_PER_SEC)

static struct event_base *base;
static struct event *tick;
static struct logger lg;
static struct jsonrpc_parser parser;
static struct child *ch;
static struct handshake hs;
static struct catalog cat;
static int srv_in = -1;  /* the server's stdin: the test reads what the daemon sent */
static int srv_out = -1; /* the server's stdout: the test writes */
static struct event *rx_event;
static struct evbuffer *rx;
static int log_fd = -1;
static int saved_stderr = -1;
static char log_path[64];
static char *log_text;

static struct {
        unsigned calls;
        int r;
        char why[300];
} done;

static void on_tick(evutil_socket_t fd, short what, void *userdata) {
}

static void loop_once(void) {
        struct timeval tv = { .tv_sec = 0, .tv_usec = 50000 };

        evtimer_add(tick, &tv);
        event_base_loop(base, EVLOOP_ONCE);
}

#define WAIT_UNTIL(cond)                                                        \
        do {                                                                    \
                uint64_t deadline_ = now_usec() + WAIT_USEC;                    \
                while (!(cond) && now_usec() < deadline_)                       \
                        loop_once();                                            \
                cr_assert(cond, "timed out waiting for: %s", #cond);            \
        } while (0)

static void on_rx(evutil_socket_t fd, short what, void *userdata) {
        int k = evbuffer_read(rx, fd, 65536);

        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                event_del(rx_event);
}

static const char *logged(void) {
        struct stat st;

        fflush(stderr);
        cr_assert_eq(fstat(log_fd, &st), 0);
        free(log_text);
        log_text = calloc(1, (size_t)st.st_size + 1);
        cr_assert_not_null(log_text);
        cr_assert_eq(pread(log_fd, log_text, (size_t)st.st_size, 0), st.st_size);
        return log_text;
}

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
        int to[2], from[2];

        signal(SIGPIPE, SIG_IGN);
        unsetenv("JOURNAL_STREAM");
        snprintf(log_path, sizeof log_path, "/tmp/mcpvisor-unit-log-XXXXXX");
        log_fd = mkstemp(log_path);
        cr_assert_geq(log_fd, 0);
        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        cr_assert_geq(saved_stderr, 0);
        cr_assert_eq(dup2(log_fd, STDERR_FILENO), STDERR_FILENO);
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
        base = event_base_new();
        cr_assert_not_null(base);
        tick = evtimer_new(base, on_tick, NULL);
        rx = evbuffer_new();
        cr_assert_not_null(rx);
        cr_assert_eq(pipe2(to, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(from, O_CLOEXEC), 0);
        cr_assert_eq(fcntl(to[1], F_SETFL, O_NONBLOCK), 0);
        cr_assert_eq(fcntl(from[0], F_SETFL, O_NONBLOCK), 0);
        cr_assert_eq(fcntl(to[0], F_SETFL, O_NONBLOCK), 0);
        srv_in = to[0];
        srv_out = from[1];
        rx_event = event_new(base, srv_in, EV_READ | EV_PERSIST, on_rx, NULL);
        cr_assert_not_null(rx_event);
        cr_assert_eq(event_add(rx_event, NULL), 0);
        ch = child_new(base, to[1], from[0], 1 << 20, "srv", &lg, &parser, &ops, NULL);
        cr_assert_not_null(ch);
        handshake_init(&hs);
        catalog_init(&cat);
}

static void teardown(void) {
        handshake_cancel(&hs);
        child_free(ch);
        ch = NULL;
        handshake_done(&hs);
        catalog_done(&cat);
        event_free(rx_event);
        evbuffer_free(rx);
        close(srv_in);
        if (srv_out >= 0)
                close(srv_out);
        event_free(tick);
        event_base_free(base);
        jsonrpc_parser_done(&parser);
        free(log_text);
        unlink(log_path);
        close(log_fd);
        /* Back to the real stderr, where sanitizer reports at exit must go. */
        fflush(stderr);
        dup2(saved_stderr, STDERR_FILENO);
        close(saved_stderr);
}

TestSuite(handshake, .init = setup, .fini = teardown);

static void server_says(const char *s) {
        size_t len = strlen(s);

        while (len > 0) {
                ssize_t k = write(srv_out, s, len);
                cr_assert_gt(k, 0, "write: %s", strerror(errno));
                s += k;
                len -= (size_t)k;
        }
}

static bool rx_has_line(void) {
        return evbuffer_search(rx, "\n", 1, NULL).pos >= 0;
}

/* The next message the daemon sent (the caller puts it). */
static json_object *server_reads(void) {
        WAIT_UNTIL(rx_has_line());
        size_t n;
        char *line = evbuffer_readln(rx, &n, EVBUFFER_EOL_LF);
        json_object *m = json_tokener_parse(line);

        cr_assert_not_null(m, "not JSON: %s", line);
        free(line);
        return m;
}

/* Nothing more was sent: what the child queued is flushed and read, and no line is left. */
static void server_got_nothing_more(void) {
        WAIT_UNTIL(evbuffer_get_length(bufferevent_get_output(ch->to)) == 0);
        for (int i = 0; i < 3; i++)
                loop_once();
        cr_assert_eq(evbuffer_get_length(rx), 0, "unexpected message: %.*s", (int)evbuffer_get_length(rx),
                     (const char *)evbuffer_pullup(rx, -1));
}

static const char *str_field(json_object *m, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(m, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
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

static void server_answers(int64_t id, const char *result_json) {
        char *line;

        cr_assert(asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}\n", (long long)id, result_json) > 0);
        server_says(line);
        free(line);
}

static void server_fails(int64_t id, const char *message) {
        char line[512];

        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32601,\"message\":\"%s\"}}\n",
                 (long long)id, message);
        server_says(line);
}

static void start(void) {
        cr_assert_eq(handshake_start(&hs, ch, "srv", &lg, on_done, &done), 0);
        cr_assert(hs.running);
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
                cr_assert_null(cat.items[k], "kind %d fetched without the capability", k);
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
        cr_assert_null(cat.items[CATALOG_PROMPTS]);
        cr_assert_null(cat.items[CATALOG_RESOURCES]);
        cr_assert_null(cat.items[CATALOG_TEMPLATES]);
        cr_assert_str_eq(str_field(json_object_array_get_idx(cat.items[CATALOG_TOOLS], 1), "name"), "b");
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
        cr_assert_not_null(cat.items[CATALOG_RESOURCES], "an empty list is still a list");
        cr_assert_eq(catalog_count(&cat, CATALOG_RESOURCES), 0);
        cr_assert_eq(catalog_count(&cat, CATALOG_TEMPLATES), 1);
}

Test(handshake, resources_without_tools_and_prompts) {
        initialize_with("2024-11-05", "{\"resources\":{}}");
        server_answers(server_expects("resources/list", NULL, 0), "{\"resources\":[{\"uri\":\"a\",\"name\":\"a\"}]}");
        server_answers(server_expects("resources/templates/list", NULL, 0), "{\"resourceTemplates\":[]}");
        expect_success();
        server_got_nothing_more();
        cr_assert_null(cat.items[CATALOG_TOOLS]);
        cr_assert_null(cat.items[CATALOG_PROMPTS]);
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
                cr_assert_str_eq(str_field(json_object_array_get_idx(cat.items[CATALOG_TOOLS], i), "name"), name);
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
                WAIT_UNTIL(done.calls == 1 || rx_has_line());
        }
        cr_assert_eq(pages, HANDSHAKE_MAX_PAGES);
        expect_success();
        server_got_nothing_more();
        cr_assert_eq(catalog_count(&cat, CATALOG_TOOLS), HANDSHAKE_MAX_PAGES);
        cr_assert(strstr(logged(), "tools/list still had more after 100 pages"), "log: %s", logged());
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
                cr_assert_null(hs.catalog.items[k]);
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
        cr_assert_null(cat.items[CATALOG_TOOLS], "tools of the previous run kept");
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

/* catalog.c */

static struct catalog c1, c2;

static void catalog_fini(void) {
        catalog_done(&c1);
        catalog_done(&c2);
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
                cr_assert_null(c1.items[k]);
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
        c1.items[CATALOG_PROMPTS] = json_tokener_parse("[1,2,3]");
        c1.items[CATALOG_TOOLS] = json_object_new_array();
        cr_assert_eq(catalog_count(&c1, CATALOG_PROMPTS), 3);
        cr_assert_eq(catalog_count(&c1, CATALOG_TOOLS), 0);
        cr_assert_eq(catalog_count(&c1, CATALOG_TEMPLATES), 0);
}

Test(catalog, replace_moves_and_releases) {
        json_object *init;

        catalog_init(&c1);
        catalog_init(&c2);
        c1.initialize = json_tokener_parse("{\"old\":true}");
        c1.items[CATALOG_TOOLS] = json_tokener_parse("[1]");
        c2.initialize = init = json_tokener_parse("{\"new\":true}");
        c2.items[CATALOG_RESOURCES] = json_tokener_parse("[1,2]");
        catalog_replace(&c1, &c2);
        cr_assert_eq(c1.initialize, init);
        cr_assert_null(c1.items[CATALOG_TOOLS], "the old lists are released, not merged");
        cr_assert_eq(catalog_count(&c1, CATALOG_RESOURCES), 2);
        cr_assert_null(c2.initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                cr_assert_null(c2.items[k]);
}
