/* A server's MCP start, driven by replies; see handshake.h. */
#include "handshake.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server-conn.h"
#include "json-scan.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "version.h"

static void next_list(struct handshake *h, int from_kind);

const char *const mcp_era_names[] = { [MCP_ERA_UNKNOWN] = "unknown", [MCP_ERA_LEGACY] = "legacy",
                                      [MCP_ERA_MODERN] = "modern" };

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
        json_object_put(TAKE_PTR(h->capabilities));
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

static void on_page(struct child *ch, int status, json_object *result, json_object *error, void *userdata);
static void on_page_text(struct child *ch, const char *text, size_t len, const struct loan_offer *offer,
                         void *userdata);

/* Asks for the list being fetched, from cursor on (NULL: its first page). */
static void request_page(struct handshake *h, const char *cursor) {
        json_object *params = NULL;

        if (cursor) {
                params = json_object_new_object();
                json_object_object_add(params, "cursor", json_object_new_string(cursor));
        }
        h->request = child_request_result_text(h->child, catalog_kinds[h->kind].method, params, on_page, on_page_text, h);
        if (h->request < 0)
                finish(h, (int)h->request, "cannot send a list request");
}

/* One broken list should not keep the rest of the server from being used. */
static void list_failed(struct handshake *h, const char *why) {
        log_emit(h->log, LOG_WARNING, &(struct log_subject){ .server = h->name }, "%s failed (%s); serving the server without them",
                 catalog_kinds[h->kind].method, why);
        next_list(h, h->kind + 1);
}

/* The page's items appended while fewer than max_items are kept; then the next page (at
 * its cursor, a non-empty string) or the next list. When the server offers more than
 * max_items (an item left over, or a full list with another page to come), the rest is
 * never fetched. */
static void take_page(struct handshake *h, const char *text, size_t len) {
        const struct catalog_kind_info *info = &catalog_kinds[h->kind];
        const char *names[] = { info->key, "nextCursor" };
        struct catalog_list *list = h->catalog.lists[h->kind];
        _cleanup_free_ char *cursor = NULL;
        struct json_member m[2];
        int r;

        h->request = 0;
        if (json_scan_members(text, len, JSONRPC_MAX_DEPTH, names, 2, m) < 0 || m[0].count == 0 || *m[0].value != '[') {
                list_failed(h, "no array in the result");
                return;
        }
        r = catalog_list_add_array(list, h->kind, m[0].value, (size_t)(m[0].end - m[0].value), h->max_items, &h->refused);
        if (r == -ENOMEM) {
                finish(h, r, "out of memory reading a list");
                return;
        }
        if (m[1].count > 0 && *m[1].value == '"' && m[1].end - m[1].value > 2) {
                cursor = malloc((size_t)(m[1].end - m[1].value));
                if (!cursor) {
                        finish(h, -ENOMEM, "out of memory reading a list");
                        return;
                }
                json_scan_decode_string(m[1].value, (size_t)(m[1].end - m[1].value), cursor);
        }
        if (r == 1 || (list->n >= h->max_items && cursor)) {
                log_emit(h->log, LOG_WARNING, &(struct log_subject){ .server = h->name },
                         "offers more than %u %s; only the first %u are served (maxCatalogItems)", h->max_items,
                         info->key, h->max_items);
                next_list(h, h->kind + 1);
                return;
        }
        if (cursor && ++h->pages < HANDSHAKE_MAX_PAGES) {
                request_page(h, cursor);
                return;
        }
        if (cursor)
                log_emit(h->log, LOG_WARNING, &(struct log_subject){ .server = h->name },
                         "%s still had more after %d pages; using the first %zu entries", info->method,
                         HANDSHAKE_MAX_PAGES, list->n);
        next_list(h, h->kind + 1);
}

static void on_page_text(struct child *ch, const char *text, size_t len, const struct loan_offer *offer,
                         void *userdata) {
        take_page(userdata, text, len);
}

static void on_page(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct handshake *h = userdata;
        const char *text;
        size_t len;

        h->request = 0;
        if (status < 0) {
                snprintf(h->error, sizeof h->error, "%s: %s", catalog_kinds[h->kind].method, transport_error(status));
                finish(h, status, h->error);
                return;
        }
        if (error) {
                list_failed(h, error_message(error));
                return;
        }
        /* A result json-c had to read (a member's name escaped, say): its items are kept
         * as text all the same. */
        text = json_object_to_json_string_length(result, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        if (!text) {
                finish(h, -ENOMEM, "out of memory reading a list");
                return;
        }
        take_page(h, text, len);
}

/* Says once per list what was left out of it. */
static void report_refused(struct handshake *h) {
        const struct catalog_kind_info *info = &catalog_kinds[h->kind];

        if (h->refused > 0)
                log_emit(h->log, LOG_WARNING, &(struct log_subject){ .server = h->name },
                         "%s: left out %u entr%s that %s no object with one non-empty string \"%s\"", info->method,
                         h->refused, h->refused == 1 ? "y" : "ies", h->refused == 1 ? "is" : "are", info->item_key);
        h->refused = 0;
}

/* Fetches the next list the server's capabilities allow, or finishes. */
static void next_list(struct handshake *h, int from_kind) {
        if (h->kind >= 0)
                report_refused(h);
        for (int k = from_kind; k < CATALOG_KIND_COUNT; k++) {
                if (!(h->kinds & (1u << k)) || !catalog_capability(&h->catalog, catalog_kinds[k].capability))
                        continue;
                h->kind = k;
                h->pages = 0;
                h->catalog.lists[k] = catalog_list_new();
                if (!h->catalog.lists[k]) {
                        finish(h, -ENOMEM, "out of memory reading a list");
                        return;
                }
                request_page(h, NULL);
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
        h->era = MCP_ERA_LEGACY;
        h->step = HANDSHAKE_LISTS;
        if (child_notify(h->child, "notifications/initialized", NULL) < 0) {
                finish(h, -EPIPE, "cannot send notifications/initialized");
                return;
        }
        next_list(h, 0);
}

static json_object *client_info(void) {
        json_object *info = json_object_new_object();

        json_object_object_add(info, "name", json_object_new_string("mcpvisor"));
        json_object_object_add(info, "version", json_object_new_string(MCPVISOR_VERSION));
        return info;
}

static json_object *initialize_params(json_object *capabilities) {
        json_object *params = json_object_new_object();

        json_object_object_add(params, "protocolVersion", json_object_new_string(MCP_LATEST_VERSION));
        json_object_object_add(params, "capabilities", capabilities ? capabilities : json_object_new_object());
        json_object_object_add(params, "clientInfo", client_info());
        return params;
}

/* What each request to a modern server carries in its _meta (basic/index: "Per-request
 * protocol fields"): our version, who we are, what we offer. */
static json_object *modern_meta(json_object *capabilities) {
        json_object *meta = json_object_new_object();

        json_object_object_add(meta, META_PROTOCOL_VERSION, json_object_new_string(MCP_MODERN_VERSION));
        json_object_object_add(meta, META_CLIENT_INFO, client_info());
        json_object_object_add(meta, META_CLIENT_CAPABILITIES,
                               capabilities ? json_object_get(capabilities) : json_object_new_object());
        return meta;
}

static int start_initialize(struct handshake *h) {
        h->step = HANDSHAKE_INITIALIZE;
        h->request = child_request(h->child, "initialize", initialize_params(TAKE_PTR(h->capabilities)), 0, on_initialize, h);
        return h->request < 0 ? (int)h->request : 0;
}

/* The probe said legacy: initialize on the same process, its requests without our _meta. */
static void fall_back_to_initialize(struct handshake *h, const char *what) {
        log_emit(h->log, LOG_INFO, &(struct log_subject){ .server = h->name },
                 "server/discover %s: a legacy server, initialized with MCP %s", what, MCP_LATEST_VERSION);
        child_set_meta(h->child, NULL);
        if (start_initialize(h) < 0)
                finish(h, (int)h->request, "cannot send initialize");
}

/* Whether list (a JSON array) names version. */
static bool names_version(json_object *list, const char *version) {
        size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;

        for (size_t i = 0; i < n; i++) {
                json_object *v = json_object_array_get_idx(list, i);

                if (json_object_is_type(v, json_type_string) && strcmp(json_object_get_string(v), version) == 0)
                        return true;
        }
        return false;
}

/* Whether list names any legacy version we speak. */
static bool names_legacy_version(json_object *list) {
        for (size_t i = 0; mcp_supported_versions[i]; i++)
                if (names_version(list, mcp_supported_versions[i]))
                        return true;
        return false;
}

/* The modern server's self-description in the shape initialize's result has (the
 * version, capabilities, serverInfo, instructions), so that what reads a server's
 * capabilities and instructions reads them alike for both eras. */
static json_object *described(json_object *result) {
        json_object *d = json_object_new_object(), *v, *meta;

        json_object_object_add(d, "protocolVersion", json_object_new_string(MCP_MODERN_VERSION));
        json_object_object_add(d, "capabilities",
                               json_object_object_get_ex(result, "capabilities", &v) && json_object_is_type(v, json_type_object)
                                       ? json_object_get(v)
                                       : json_object_new_object());
        if (json_object_object_get_ex(result, "_meta", &meta) && json_object_object_get_ex(meta, META_SERVER_INFO, &v) &&
            json_object_is_type(v, json_type_object))
                json_object_object_add(d, "serverInfo", json_object_get(v));
        if (json_object_object_get_ex(result, "instructions", &v) && json_object_is_type(v, json_type_string))
                json_object_object_add(d, "instructions", json_object_get(v));
        return d;
}

/* An error to server/discover (versioning: "Backward Compatibility"): a recognized modern
 * error says a modern server, which is not fallen back from; anything else, a legacy one.
 * Our one modern version refused: initialize if the server names a legacy version we
 * speak among those it supports (a dual-era server whose modern versions are not ours). */
static void discover_refused(struct handshake *h, json_object *error) {
        json_object *code = NULL, *data = NULL, *supported = NULL;
        int c;

        json_object_object_get_ex(error, "code", &code);
        c = json_object_is_type(code, json_type_int) ? json_object_get_int(code) : 0;
        if (c == MCP_ERROR_UNSUPPORTED_VERSION && json_object_object_get_ex(error, "data", &data) &&
            json_object_object_get_ex(data, "supported", &supported) && json_object_is_type(supported, json_type_array)) {
                if (names_legacy_version(supported) && h->probe) {
                        fall_back_to_initialize(h, "refused our modern version");
                        return;
                }
                fail(h, "server/discover: the server supports only MCP %.100s; mcpvisor speaks %s to %s",
                     json_object_to_json_string_ext(supported, JSON_C_TO_STRING_PLAIN), mcp_supported_versions[0],
                     MCP_MODERN_VERSION);
                return;
        }
        if (c == MCP_ERROR_UNSUPPORTED_VERSION || c == MCP_ERROR_MISSING_CAPABILITY || c == MCP_ERROR_HEADER_MISMATCH ||
            !h->probe) {
                fail(h, "server/discover failed: %s", error_message(error));
                return;
        }
        fall_back_to_initialize(h, "answered with an error");
}

static void on_discover(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct handshake *h = userdata;
        json_object *versions = NULL;

        h->request = 0;
        if (status == -ETIMEDOUT && h->probe) {
                fall_back_to_initialize(h, "had no answer within probeTimeout");
                return;
        }
        if (status < 0) {
                fail(h, "no answer to server/discover: %s", transport_error(status));
                return;
        }
        if (error) {
                discover_refused(h, error);
                return;
        }
        if (!json_object_is_type(result, json_type_object) ||
            !json_object_object_get_ex(result, "supportedVersions", &versions) ||
            !json_object_is_type(versions, json_type_array)) {
                if (h->probe)
                        fall_back_to_initialize(h, "answered with no supportedVersions");
                else
                        fail(h, "server/discover's result has no supportedVersions");
                return;
        }
        if (!names_version(versions, MCP_MODERN_VERSION)) {
                if (h->probe && names_legacy_version(versions)) {
                        fall_back_to_initialize(h, "named no modern version of ours");
                        return;
                }
                fail(h, "server/discover: the server supports only MCP %.100s; mcpvisor speaks %s to %s",
                     json_object_to_json_string_ext(versions, JSON_C_TO_STRING_PLAIN), mcp_supported_versions[0],
                     MCP_MODERN_VERSION);
                return;
        }
        h->catalog.initialize = described(result);
        h->era = MCP_ERA_MODERN;
        h->step = HANDSHAKE_LISTS;
        json_object_put(TAKE_PTR(h->capabilities));
        next_list(h, 0);
}

/* server/discover with our _meta, which every request to the connection carries until
 * the server turns out legacy. */
static int start_discover(struct handshake *h) {
        h->step = HANDSHAKE_DISCOVER;
        child_set_meta(h->child, modern_meta(h->capabilities));
        h->request = child_request(h->child, "server/discover", NULL, h->probe ? h->probe_usec : 0, on_discover, h);
        return h->request < 0 ? (int)h->request : 0;
}

int handshake_start(struct handshake *h, struct child *ch, const char *name, unsigned max_items,
                    json_object *capabilities, enum mcp_era era, uint64_t probe_usec, const struct logger *log,
                    handshake_done_fn done, void *userdata) {
        int r;

        handshake_done(h);
        handshake_init(h);
        *h = (struct handshake){ .child = ch, .log = log, .name = name, .max_items = max_items, .kind = -1, .done = done,
                                 .userdata = userdata, .running = true, .kinds = (1u << CATALOG_KIND_COUNT) - 1,
                                 .era = era, .probe = era == MCP_ERA_UNKNOWN, .probe_usec = probe_usec,
                                 .capabilities = capabilities ? capabilities : json_object_new_object() };
        r = era == MCP_ERA_LEGACY ? start_initialize(h) : start_discover(h);
        if (r < 0) {
                json_object_put(TAKE_PTR(h->capabilities));
                h->running = false;
                h->request = 0;
        }
        return r;
}

bool handshake_probing(const struct handshake *h) {
        return h->running && h->probe && h->step == HANDSHAKE_DISCOVER;
}

int handshake_refresh(struct handshake *h, struct child *ch, const struct catalog *current, unsigned kinds,
                      const char *name, unsigned max_items, const struct logger *log, handshake_done_fn done,
                      void *userdata) {
        handshake_done(h);
        handshake_init(h);
        *h = (struct handshake){ .child = ch, .log = log, .name = name, .max_items = max_items, .kind = -1, .done = done,
                                 .userdata = userdata, .running = true, .kinds = kinds, .step = HANDSHAKE_LISTS };
        /* Keep what is not being fetched again. */
        h->catalog.initialize = json_object_get(current->initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                if (!(kinds & (1u << k)))
                        h->catalog.lists[k] = catalog_list_ref(current->lists[k]);
        next_list(h, 0);
        return h->running || h->catalog.initialize ? 0 : -EIO;
}

bool handshake_initialized(const struct handshake *h) {
        return h->running && h->kind >= 0;
}

void handshake_cancel(struct handshake *h) {
        if (h->running && h->request > 0)
                child_cancel_request(h->child, h->request);
        json_object_put(TAKE_PTR(h->capabilities));
        h->running = false;
        h->request = 0;
}

void handshake_take(struct handshake *h, struct catalog *ret) {
        catalog_replace(ret, &h->catalog);
}
