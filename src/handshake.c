/* A server's MCP start, driven by replies; see handshake.h. */
#include "handshake.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "child.h"
#include "log.h"
#include "protocol.h"
#include "version.h"

static void next_list(struct handshake *h, int from_kind);

void handshake_init(struct handshake *h) {
        *h = (struct handshake){ .kind = -1 };
        catalog_init(&h->catalog);
}

void handshake_done(struct handshake *h) {
        handshake_cancel(h);
        catalog_done(&h->catalog);
}

static void finish(struct handshake *h, int r, const char *why) {
        h->running = false;
        h->request = 0;
        h->done(r, why, h->userdata);
}

static void fail(struct handshake *h, const char *fmt, ...) _printf_(2, 3);
static void fail(struct handshake *h, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(h->error, sizeof h->error, fmt, ap);
        va_end(ap);
        finish(h, -EPROTO, h->error);
}

static const char *error_message(json_object *error) {
        json_object *m;

        if (json_object_object_get_ex(error, "message", &m) && json_object_is_type(m, json_type_string))
                return json_object_get_string(m);
        return json_object_to_json_string(error);
}

static const char *transport_error(int status) {
        return status == -ETIMEDOUT ? "timed out" : "connection closed";
}

/* The result's nextCursor when it asks for another page, else NULL. */
static json_object *next_cursor(json_object *result) {
        json_object *cursor;

        if (json_object_object_get_ex(result, "nextCursor", &cursor) && json_object_is_type(cursor, json_type_string) &&
            json_object_get_string_len(cursor) > 0)
                return cursor;
        return NULL;
}

/* Appends a page's items while fewer than max_items are kept; true when the server offers
 * more than that (an item left over, or a full list with another page to come), so the
 * rest is never fetched. */
static bool add_page(struct handshake *h, json_object *items, json_object *result) {
        json_object *list = h->catalog.items[h->kind];
        size_t n = json_object_array_length(items);

        for (size_t i = 0; i < n; i++) {
                if (json_object_array_length(list) >= h->max_items)
                        return true;
                json_object_array_add(list, json_object_get(json_object_array_get_idx(items, i)));
        }
        return json_object_array_length(list) >= h->max_items && next_cursor(result);
}

static void on_list(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct handshake *h = userdata;
        const struct catalog_kind_info *info = &catalog_kinds[h->kind];
        json_object *items, *cursor;

        h->request = 0;
        if (status < 0) {
                snprintf(h->error, sizeof h->error, "%s: %s", info->method, transport_error(status));
                finish(h, status, h->error);
                return;
        }
        if (error || !json_object_object_get_ex(result, info->key, &items) ||
            !json_object_is_type(items, json_type_array)) {
                /* One broken list should not keep the rest of the server from being used. */
                log_emit(h->log, LOG_WARNING, &(struct log_subject){ .server = h->name },
                         "%s failed (%s); serving the server without them", info->method,
                         error ? error_message(error) : "no array in the result");
                next_list(h, h->kind + 1);
                return;
        }
        if (add_page(h, items, result)) {
                log_emit(h->log, LOG_WARNING, &(struct log_subject){ .server = h->name },
                         "offers more than %u %s; only the first %u are served (maxCatalogItems)", h->max_items,
                         info->key, h->max_items);
                next_list(h, h->kind + 1);
                return;
        }
        cursor = next_cursor(result);
        if (cursor) {
                if (++h->pages < HANDSHAKE_MAX_PAGES) {
                        json_object *params = json_object_new_object();
                        json_object_object_add(params, "cursor", json_object_get(cursor));
                        h->request = child_request(h->child, info->method, params, 0, on_list, h);
                        if (h->request < 0)
                                finish(h, (int)h->request, "cannot send a list request");
                        return;
                }
                log_emit(h->log, LOG_WARNING, &(struct log_subject){ .server = h->name },
                         "%s still had more after %d pages; using the first %zu entries", info->method,
                         HANDSHAKE_MAX_PAGES, json_object_array_length(h->catalog.items[h->kind]));
        }
        next_list(h, h->kind + 1);
}

/* Fetches the next list the server's capabilities allow, or finishes. */
static void next_list(struct handshake *h, int from_kind) {
        for (int k = from_kind; k < CATALOG_KIND_COUNT; k++) {
                if (!(h->kinds & (1u << k)) || !catalog_capability(&h->catalog, catalog_kinds[k].capability))
                        continue;
                h->kind = k;
                h->pages = 0;
                h->catalog.items[k] = json_object_new_array();
                h->request = child_request(h->child, catalog_kinds[k].method, NULL, 0, on_list, h);
                if (h->request < 0)
                        finish(h, (int)h->request, "cannot send a list request");
                return;
        }
        finish(h, 0, NULL);
}

static void on_initialize(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct handshake *h = userdata;
        json_object *version;

        h->request = 0;
        if (status < 0) {
                fail(h, "no answer to initialize: %s", transport_error(status));
                return;
        }
        if (error) {
                fail(h, "initialize failed: %s", error_message(error));
                return;
        }
        if (!json_object_is_type(result, json_type_object) ||
            !json_object_object_get_ex(result, "protocolVersion", &version) ||
            !json_object_is_type(version, json_type_string)) {
                fail(h, "initialize result has no protocolVersion");
                return;
        }
        if (!protocol_version_supported(json_object_get_string(version))) {
                fail(h, "server speaks MCP %s, which mcpvisor does not (it speaks 2024-11-05 to 2025-11-25)",
                     json_object_get_string(version));
                return;
        }
        h->catalog.initialize = json_object_get(result);
        if (child_notify(h->child, "notifications/initialized", NULL) < 0) {
                finish(h, -EPIPE, "cannot send notifications/initialized");
                return;
        }
        next_list(h, 0);
}

static json_object *initialize_params(json_object *capabilities) {
        json_object *params = json_object_new_object(), *info = json_object_new_object();

        json_object_object_add(info, "name", json_object_new_string("mcpvisor"));
        json_object_object_add(info, "version", json_object_new_string(MCPVISOR_VERSION));
        json_object_object_add(params, "protocolVersion", json_object_new_string(MCP_LATEST_VERSION));
        json_object_object_add(params, "capabilities", capabilities ? capabilities : json_object_new_object());
        json_object_object_add(params, "clientInfo", info);
        return params;
}

int handshake_start(struct handshake *h, struct child *ch, const char *name, unsigned max_items,
                    json_object *capabilities, const struct logger *log, handshake_done_fn done, void *userdata) {
        handshake_done(h);
        handshake_init(h);
        *h = (struct handshake){ .child = ch, .log = log, .name = name, .max_items = max_items, .kind = -1, .done = done,
                                 .userdata = userdata, .running = true, .kinds = (1u << CATALOG_KIND_COUNT) - 1 };
        h->request = child_request(ch, "initialize", initialize_params(capabilities), 0, on_initialize, h);
        if (h->request < 0) {
                h->running = false;
                return (int)h->request;
        }
        return 0;
}

int handshake_refresh(struct handshake *h, struct child *ch, const struct catalog *current, unsigned kinds,
                      const char *name, unsigned max_items, const struct logger *log, handshake_done_fn done,
                      void *userdata) {
        handshake_done(h);
        handshake_init(h);
        *h = (struct handshake){ .child = ch, .log = log, .name = name, .max_items = max_items, .kind = -1, .done = done,
                                 .userdata = userdata, .running = true, .kinds = kinds };
        /* Keep what is not being fetched again. */
        h->catalog.initialize = json_object_get(current->initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                if (!(kinds & (1u << k)))
                        h->catalog.items[k] = json_object_get(current->items[k]);
        next_list(h, 0);
        return h->running || h->catalog.initialize ? 0 : -EIO;
}

bool handshake_initialized(const struct handshake *h) {
        return h->running && h->kind >= 0;
}

void handshake_cancel(struct handshake *h) {
        if (h->running && h->request > 0)
                child_cancel_request(h->child, h->request);
        h->running = false;
        h->request = 0;
}

void handshake_take(struct handshake *h, struct catalog *ret) {
        catalog_replace(ret, &h->catalog);
}
