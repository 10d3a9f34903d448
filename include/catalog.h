/* What one server offers, as learned in its handshake: the initialize result (version,
 * capabilities, serverInfo, instructions) and its tools, prompts, resources and resource
 * templates. Replaced as a whole after every (re)start; routing reads it. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

enum catalog_kind { CATALOG_TOOLS, CATALOG_PROMPTS, CATALOG_RESOURCES, CATALOG_TEMPLATES, CATALOG_KIND_COUNT };
/* Every kind, a bit each (1 << kind). */
#define CATALOG_ALL_KINDS ((1u << CATALOG_KIND_COUNT) - 1)

struct catalog_kind_info {
        const char *method;      /* "tools/list" */
        const char *key;         /* the array in the result: "tools" */
        const char *capability;  /* the server capability that allows the method */
};

extern const struct catalog_kind_info catalog_kinds[CATALOG_KIND_COUNT];

struct catalog {
        json_object *initialize;                 /* the server's initialize result, owned */
        json_object *items[CATALOG_KIND_COUNT];  /* arrays, owned; NULL when not offered */
};

void catalog_init(struct catalog *c);
void catalog_done(struct catalog *c);
/* Moves src into dst, releasing what dst held. */
void catalog_replace(struct catalog *dst, struct catalog *src);
size_t catalog_count(const struct catalog *c, enum catalog_kind kind);
/* The capability object the server declared, or NULL. */
json_object *catalog_capability(const struct catalog *c, const char *name);
