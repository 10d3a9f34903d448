/* tools/list, prompts/list, resources/list and resources/templates/list: served from the
 * registry without a round trip, paged with the daemon's own cursors, and held back (up to
 * listWait) while servers are on their first start. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client-instances.h"
#include "config.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "list-wait.h"
#include "macro.h"
#include "methods.h"
#include "registry.h"
#include "view.h"

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

/* The page of l's list of kind from start to end as a result's JSON text: the items as
 * clients see them, joined between the envelope's bytes (no JSON tree is built for a page).
 * A modern client's carries its result type and caching hints (each page the same scope). */
static int write_page(const struct client *c, const struct client_lists *l, enum catalog_kind kind, size_t start,
                      size_t end, size_t n, char **ret, size_t *ret_len) {
        FILE *f = open_memstream(ret, ret_len);
        struct iovec parts[CATALOG_ITEM_PARTS];

        if (!f)
                return -ENOMEM;
        fprintf(f, "{\"%s\":[", catalog_kinds[kind].key);
        for (size_t i = start; i < end; i++) {
                size_t k = registry_entry_parts(client_lists_entry(l, kind, i), parts);

                if (i > start)
                        fputc(',', f);
                for (size_t j = 0; j < k; j++)
                        fwrite(parts[j].iov_base, 1, parts[j].iov_len, f);
        }
        fputc(']', f);
        if (end < n)
                fprintf(f, ",\"nextCursor\":\"" CURSOR_PREFIX "%zu\"", end);
        if (session_stateless(&c->session))
                fprintf(f, ",\"resultType\":\"complete\",\"ttlMs\":%d,\"cacheScope\":\"%s\"", CLIENT_CACHE_TTL_MS,
                        client_cache_scope(c));
        fputc('}', f);
        if (fclose(f) != 0) {
                free(*ret);
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

static void method_list_answer(struct client *c, json_object *id, json_object *params, enum catalog_kind kind) {
        struct daemon *d = c->daemon;
        struct client_lists l;
        size_t page = daemon_config(d)->list_page_size, n, start, end, len;
        _cleanup_free_ char *text = NULL;

        if (client_lists_get(c, &l) < 0) {
                client_reply_error(c, id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
                return;
        }
        /* Cursors count across the shared servers' items and then the client's instances'. */
        n = client_lists_size(&l, kind);
        if (parse_cursor(params, n, &start) < 0) {
                client_reply_error(c, id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: unknown cursor (cursors come from this daemon's last answer)", NULL);
                return;
        }
        end = page == 0 || n - start <= page ? n : start + page;
        if (write_page(c, &l, kind, start, end, n, &text, &len) < 0) {
                client_reply_error(c, id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
                return;
        }
        list_changes_answered(c, kind, start == 0);
        client_send_result_text(c, id, text, len, false, NULL); /* its hints are in it */
}

static bool list_waits(struct client *c, struct jsonrpc_msg *m) {
        return list_wait_needed_by(c);
}

static void list(struct client *c, struct jsonrpc_msg *m, enum catalog_kind kind, list_wait_handler *handle) {
        if (!method_params_object(c, m, true))
                return;
        /* A first list starts the client's instances, and waits for them as for any first start. */
        client_instances_need(c);
        if (!list_waiters_hold(c, m, handle, list_waits, (int)kind))
                method_list_answer(c, m->id, m->params, kind);
}

static void tools_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_TOOLS, tools_list);
}

static void prompts_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_PROMPTS, prompts_list);
}

static void resources_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_RESOURCES, resources_list);
}

static void templates_list(struct client *c, struct jsonrpc_msg *m) {
        list(c, m, CATALOG_TEMPLATES, templates_list);
}

const struct method method_tools_list = {
        .name = "tools/list",
        .flags = METHOD_MCP,
        .eras = METHOD_ERAS_ALL,
        .reach = METHOD_REACH_DAEMON,
        .handle = tools_list,
};
const struct method method_prompts_list = {
        .name = "prompts/list",
        .flags = METHOD_MCP,
        .eras = METHOD_ERAS_ALL,
        .reach = METHOD_REACH_DAEMON,
        .handle = prompts_list,
};
const struct method method_resources_list = {
        .name = "resources/list",
        .flags = METHOD_MCP,
        .eras = METHOD_ERAS_ALL,
        .reach = METHOD_REACH_DAEMON,
        .handle = resources_list,
};
const struct method method_templates_list = {
        .name = "resources/templates/list",
        .flags = METHOD_MCP,
        .eras = METHOD_ERAS_ALL,
        .reach = METHOD_REACH_DAEMON,
        .handle = templates_list,
};
