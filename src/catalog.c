/* A server's offer; see catalog.h. */
#include "catalog.h"

const struct catalog_kind_info catalog_kinds[CATALOG_KIND_COUNT] = {
        [CATALOG_TOOLS] = { "tools/list", "tools", "tools" },
        [CATALOG_PROMPTS] = { "prompts/list", "prompts", "prompts" },
        [CATALOG_RESOURCES] = { "resources/list", "resources", "resources" },
        [CATALOG_TEMPLATES] = { "resources/templates/list", "resourceTemplates", "resources" },
};

void catalog_init(struct catalog *c) {
        *c = (struct catalog){ 0 };
}

void catalog_done(struct catalog *c) {
        json_object_put(c->initialize);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                json_object_put(c->items[k]);
        catalog_init(c);
}

void catalog_replace(struct catalog *dst, struct catalog *src) {
        catalog_done(dst);
        *dst = *src;
        catalog_init(src);
}

size_t catalog_count(const struct catalog *c, enum catalog_kind kind) {
        return c->items[kind] ? json_object_array_length(c->items[kind]) : 0;
}

json_object *catalog_capability(const struct catalog *c, const char *name) {
        json_object *caps, *cap;

        if (!c->initialize || !json_object_object_get_ex(c->initialize, "capabilities", &caps) ||
            !json_object_object_get_ex(caps, name, &cap) || !json_object_is_type(cap, json_type_object))
                return NULL;
        return cap;
}
