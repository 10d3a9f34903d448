/* The one view clients get of every ready server's offer: tools and prompts under their
 * exposed names (names.h), resources by URI, resource templates, each with the server that
 * serves it. Rebuilt from the servers' catalogs whenever one changes; lists are served
 * from here without a round trip, and calls are routed by it.
 *
 * Collisions are resolved deterministically: servers are taken in name order, the first
 * keeps an exposed name, a later one gets the fallback form of "server/name" (and a
 * warning). A URI listed by two servers belongs to the first. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"

struct server;
struct logger;

struct registry_entry {
        struct server *server;
        const char *name;        /* the server's own name for it (tools, prompts), or its URI
                                  * or URI template; borrowed from original */
        json_object *original;   /* the server's item, referenced */
        json_object *exposed;    /* what clients see: tools and prompts renamed, else original */
};

struct registry_list {
        struct registry_entry *entries;
        size_t n;
        json_object *index;      /* exposed name, URI or URI template -> entry number */
        uint64_t signature;      /* hash of what clients see, to tell whether it changed (and
                                  * whether a client's copy is current: list-changes.h) */
};

struct registry {
        const struct logger *log;
        const char *separator;
        struct registry_list lists[CATALOG_KIND_COUNT];
        json_object *warned;     /* collision warnings already logged (a set) */
};

void registry_init(struct registry *r, const struct logger *log, const char *separator);
void registry_done(struct registry *r);

/* A reload's toolNameSeparator (NULL: the default); names change at the next rebuild.
 * The string must live as long as the registry uses it. */
void registry_set_separator(struct registry *r, const char *separator);

/* Rebuilds from the servers that are ready (or unhealthy but running). Returns a bit per
 * catalog kind (1 << kind) whose client-visible list changed. */
unsigned registry_rebuild(struct registry *r, struct server *const *servers, size_t n);

/* 64-bit FNV-1a over the JSON text of the exposed items of l numbered shown[0..n) (all of
 * them in order when shown is NULL) as one array: clients are told of a change only when
 * their list's signature differs from the current one, so a collision would hide a change;
 * at 64 bits that chance is negligible. The text is written once into the array's buffer,
 * freed with it: json-c would keep each item's text cached in the item (about 300 bytes
 * per tool, for as long as it is listed) if each were written alone. */
uint64_t registry_signature_of(const struct registry_list *l, const size_t *shown, size_t n);

/* The entry exposed as key (a tool or prompt name, a resource URI or URI template), or NULL. */
const struct registry_entry *registry_find(const struct registry *r, enum catalog_kind kind, const char *key);
/* The template whose literal part before its first '{' is the longest prefix of uri. */
const struct registry_entry *registry_match_template(const struct registry *r, const char *uri);
