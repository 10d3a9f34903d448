/* A server's offer; see catalog.h. */
#include "catalog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "jsonrpc.h"

const struct catalog_kind_info catalog_kinds[CATALOG_KIND_COUNT] = {
        [CATALOG_TOOLS] = { "tools/list", "tools", "tools", "name" },
        [CATALOG_PROMPTS] = { "prompts/list", "prompts", "prompts", "name" },
        [CATALOG_RESOURCES] = { "resources/list", "resources", "resources", "uri" },
        [CATALOG_TEMPLATES] = { "resources/templates/list", "resourceTemplates", "resources", "uriTemplate" },
};

void catalog_init(struct catalog *c) {
        *c = (struct catalog){ 0 };
}

void catalog_done(struct catalog *c) {
        json_object_put(c->initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                catalog_list_unref(c->lists[k]);
        catalog_init(c);
}

void catalog_replace(struct catalog *dst, struct catalog *src) {
        catalog_done(dst);
        *dst = *src;
        catalog_init(src);
}

size_t catalog_count(const struct catalog *c, enum catalog_kind kind) {
        return c->lists[kind] ? c->lists[kind]->n : 0;
}

json_object *catalog_capability(const struct catalog *c, const char *name) {
        json_object *caps, *cap;

        if (!c->initialize || !json_object_object_get_ex(c->initialize, "capabilities", &caps) ||
            !json_object_object_get_ex(caps, name, &cap) || !json_object_is_type(cap, json_type_object))
                return NULL;
        return cap;
}

int catalog_item_new(enum catalog_kind kind, const char *text, size_t len, struct catalog_item **ret) {
        const char *names[] = { catalog_kinds[kind].item_key };
        struct catalog_item *it;
        struct json_member m;
        size_t key_len;
        int members;

        *ret = NULL;
        /* Its first byte is its '{' (catalog_item_parts() writes what follows it). */
        if (len > UINT32_MAX / 2 || len == 0 || text[0] != '{')
                return -EINVAL;
        members = json_scan_members(text, len, JSONRPC_MAX_DEPTH, names, 1, &m);
        if (members < 0)
                return -EINVAL;
        if (m.count != 1)
                return m.count == 0 ? -ENOENT : -EEXIST;
        if (*m.value != '"' || m.end - m.value == 2)
                return -EINVAL;
        key_len = (size_t)(m.end - m.value);
        /* The decoded key is never longer than its quoted text. */
        it = malloc(sizeof *it + len + 1 + key_len);
        if (!it)
                return -ENOMEM;
        *it = (struct catalog_item){ .len = (uint32_t)len, .cut_start = (uint32_t)(m.cut_start - text),
                                     .cut_end = (uint32_t)(m.cut_end - text), .alone = members == 1 };
        memcpy(it->text, text, len);
        it->text[len] = '\0';
        json_scan_decode_string(m.value, key_len, it->text + len + 1);
        *ret = it;
        return 0;
}

size_t catalog_item_parts(const struct catalog_item *it, const char *exposed, struct iovec parts[CATALOG_ITEM_PARTS]) {
        static const char head[] = "{\"name\":\"", alone[] = "\"}", more[] = "\",";
        const char *text = it->text;

        if (!exposed) {
                parts[0] = (struct iovec){ (void *)text, it->len };
                return 1;
        }
        parts[0] = (struct iovec){ (void *)head, sizeof head - 1 };
        parts[1] = (struct iovec){ (void *)exposed, strlen(exposed) };
        if (it->alone) {
                parts[2] = (struct iovec){ (void *)alone, sizeof alone - 1 };
                return 3;
        }
        /* The rest of the object after its '{', without the member renamed. */
        parts[2] = (struct iovec){ (void *)more, sizeof more - 1 };
        parts[3] = (struct iovec){ (void *)(text + 1), it->cut_start - 1 };
        parts[4] = (struct iovec){ (void *)(text + it->cut_end), it->len - it->cut_end };
        return 5;
}

struct catalog_list *catalog_list_new(void) {
        struct catalog_list *l = calloc(1, sizeof *l);

        if (l)
                l->refs = 1;
        return l;
}

struct catalog_list *catalog_list_ref(struct catalog_list *l) {
        if (l)
                l->refs++;
        return l;
}

void catalog_list_unref(struct catalog_list *l) {
        if (!l || --l->refs > 0)
                return;
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i]);
        free(l->items);
        free(l);
}

static int list_add(struct catalog_list *l, struct catalog_item *it) {
        if (l->n == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 16;
                struct catalog_item **items = realloc(l->items, cap * sizeof *items);

                if (!items)
                        return -ENOMEM;
                l->items = items;
                l->cap = cap;
        }
        l->items[l->n++] = it;
        return 0;
}

struct page {
        struct catalog_list *list;
        enum catalog_kind kind;
        size_t max;
        unsigned *refused;
};

static int add_element(const char *start, size_t len, void *userdata) {
        struct page *p = userdata;
        struct catalog_item *it;
        int r;

        if (p->list->n >= p->max)
                return 1; /* one left over: the list is cut */
        r = catalog_item_new(p->kind, start, len, &it);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                (*p->refused)++;
                return 0;
        }
        r = list_add(p->list, it);
        if (r < 0)
                free(it);
        return r;
}

int catalog_list_add_array(struct catalog_list *l, enum catalog_kind kind, const char *text, size_t len, size_t max,
                           unsigned *refused) {
        struct page p = { .list = l, .kind = kind, .max = max, .refused = refused };

        return json_scan_elements(text, len, JSONRPC_MAX_DEPTH, add_element, &p);
}
