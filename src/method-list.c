/* tools/list, prompts/list, resources/list and resources/templates/list: served from the
 * registry without a round trip, paged with the daemon's own cursors, and held back (up to
 * listWait) while servers are on their first start. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "list-wait.h"
#include "methods.h"

/* Cursors are opaque to clients; ours say where the next page starts. */
#define CURSOR_PREFIX "mcpvisor:"

static int parse_cursor(json_object *params, size_t n, size_t *ret) {
        json_object *cursor;
        const char *s;
        char *end;
        unsigned long long v;

        *ret = 0;
        if (!params || !json_object_object_get_ex(params, "cursor", &cursor) || json_object_is_type(cursor, json_type_null))
                return 0;
        if (!json_object_is_type(cursor, json_type_string))
                return -EINVAL;
        s = json_object_get_string(cursor);
        if (strncmp(s, CURSOR_PREFIX, strlen(CURSOR_PREFIX)) != 0)
                return -EINVAL;
        s += strlen(CURSOR_PREFIX);
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || v > n)
                return -EINVAL;
        *ret = (size_t)v;
        return 0;
}

void method_list_answer(struct client *c, json_object *id, json_object *params, enum catalog_kind kind) {
        struct daemon *d = c->daemon;
        const struct view *w = client_view(c);
        size_t page = d->config.list_page_size, n, start, end;
        json_object *result, *items;
        char next[64];

        if (!w) {
                client_reply_error(c, id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
                return;
        }
        n = w->n_shown[kind];
        if (parse_cursor(params, n, &start) < 0) {
                client_reply_error(c, id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: unknown cursor (cursors come from this daemon's last answer)", NULL);
                return;
        }
        end = page == 0 || n - start <= page ? n : start + page;
        items = json_object_new_array_ext((int)(end - start));
        for (size_t i = start; i < end; i++)
                json_object_array_add(items, json_object_get(view_entry(w, &d->registry, kind, i)->exposed));
        result = json_object_new_object();
        json_object_object_add(result, catalog_kinds[kind].key, items);
        if (end < n) {
                snprintf(next, sizeof next, CURSOR_PREFIX "%zu", end);
                json_object_object_add(result, "nextCursor", json_object_new_string(next));
        }
        list_changes_answered(c, kind, start == 0);
        client_reply_result(c, id, result);
}

static void list(struct client *c, struct jsonrpc_msg *m, enum catalog_kind kind) {
        if (!method_params_object(c, m, true))
                return;
        if (list_wait_needed(c->daemon) && c->daemon->config.list_wait > 0)
                list_waiters_add(c->daemon, c, m, kind);
        else
                method_list_answer(c, m->id, m->params, kind);
}

static void tools_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_TOOLS);
}

static void prompts_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_PROMPTS);
}

static void resources_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_RESOURCES);
}

static void templates_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_TEMPLATES);
}

const struct method method_tools_list = { .name = "tools/list", .flags = METHOD_MCP, .handle = tools_list };
const struct method method_prompts_list = { .name = "prompts/list", .flags = METHOD_MCP, .handle = prompts_list };
const struct method method_resources_list = { .name = "resources/list", .flags = METHOD_MCP, .handle = resources_list };
const struct method method_templates_list = {
        .name = "resources/templates/list", .flags = METHOD_MCP, .handle = templates_list,
};
