/* The one view clients get of every ready server's offer: tools and prompts under their
 * exposed names (names.h), resources by URI, resource templates, each with the server that
 * serves it. Lists are served from here without a round trip, and calls are routed by it.
 *
 * A server entering or leaving `ready`, or its catalog changing, marks the kinds it lists
 * out of date (registry_mark); they are rebuilt from the servers' catalogs when next read,
 * so any number of changes between two reads cost one rebuild, and a read always sees the
 * servers as they are (1,000 servers starting cost one rebuild a read, not 1,000).
 *
 * A rebuild takes the entries of a server whose catalog and naming (prefix, separator,
 * filter) are unchanged from the last build as they were, unless one of their names is
 * taken by then or was contested in the last build; for the other servers, it keeps the entry
 * (exposed name and hash) of each item that is the same item under the same exposed name.
 * What it reads and allocates follows what changed: a reload that changes one of 1,000
 * servers does not rebuild every item of every server.
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
                                  * or URI template; borrowed from item */
        const char *key;         /* what it is found by: exposed, or name */
        const struct catalog_item *item; /* the server's item, in its block's list */
        char *exposed;           /* owned: the name clients see a tool or prompt by when it is
                                  * not name; NULL: the item is shown as the server wrote it */
        uint64_t hash;           /* FNV-1a of the item as clients see it (registry_entry_parts) */
        uint32_t key_hash;       /* name_hash() of key */
};

/* The entries one server's catalog gave a list: kept whole by the next build when its
 * catalog and naming are the same and none of its names is taken by then. */
struct registry_block {
        struct server *server;   /* compared, never followed: it may be freed by the next build */
        struct catalog_list *items; /* the catalog's list they came from, referenced: their items */
        uint64_t naming;         /* hash of what named them: prefix, separator, filter */
        size_t start, n;         /* its entries */
        bool clean;              /* none was renamed or left out for another server's name */
};

struct registry_list {
        struct registry_entry *entries;
        size_t n;
        uint32_t *index;         /* open addressing by key: entry number + 1, 0 for a free slot */
        size_t index_size;       /* a power of two above twice n, or 0 */
        struct registry_block *blocks; /* in the entries' order */
        size_t n_blocks;
        uint64_t signature;      /* hash of what clients see, to tell whether it changed (and
                                  * whether a client's copy is current: list-changes.h) */
};

/* Where marked lists are rebuilt from: the servers as they are at the time. */
struct registry_source {
        struct server *const *(*servers)(void *userdata, size_t *ret_n);
        void *userdata;
};

struct registry {
        const struct logger *log;
        struct registry *outer;  /* listed before this one to the same clients (a client's own
                                  * instances': the shared registry): a name or URI it has is
                                  * taken here too (the fallback name; a URI left out) */
        const char *separator;
        struct registry_list lists[CATALOG_KIND_COUNT];
        json_object *warned;     /* collision warnings already logged (a set) */
        struct registry_source source;
        unsigned dirty;          /* kinds whose lists may be out of date (1 << kind) */
        uint64_t builds;         /* lists built, one per kind rebuilt */
};

void registry_init(struct registry *r, const struct logger *log, const char *separator);
void registry_done(struct registry *r);

/* A reload's toolNameSeparator (NULL: the default); names change at the next rebuild.
 * The string must live as long as the registry uses it. */
void registry_set_separator(struct registry *r, const char *separator);

/* Rebuilds the kinds given (a bit each, 1 << kind) from the servers that are ready (or
 * unhealthy but running); those are no longer marked. Returns the kinds whose
 * client-visible list changed. */
unsigned registry_rebuild(struct registry *r, struct server *const *servers, size_t n, unsigned kinds);

void registry_set_source(struct registry *r, const struct registry_source *source);
/* outer's names are taken in r (see struct registry); outer is brought up to date first at
 * each of r's reads. Whoever changes outer marks r too. */
void registry_set_outer(struct registry *r, struct registry *outer);
/* What clients see of these kinds may have changed: rebuilt from the source when next read. */
void registry_mark(struct registry *r, unsigned kinds);
/* Rebuilds what is marked; returns the kinds whose client-visible list changed. */
unsigned registry_sync(struct registry *r);

/* The list of kind, up to date. The entries stay valid until the registry is next read
 * after a registry_mark(). */
const struct registry_list *registry_list(struct registry *r, enum catalog_kind kind);

/* 64-bit FNV-1a over the hashes of the exposed items of l numbered shown[0..n) (all of
 * them in order when shown is NULL), each the FNV-1a of the item's JSON text: clients are
 * told of a change only when their list's signature differs from the current one, so a
 * collision would hide a change; at 64 bits that chance is negligible. An item's text is
 * hashed once, when its entry is made; a rebuild keeps the entries whose server item and
 * exposed name are unchanged, so a reload that changes one of 1,000 servers does not hash
 * every item of every list again. */
uint64_t registry_signature_of(const struct registry_list *l, const size_t *shown, size_t n);
/* The entry's item as clients see it, as parts to write in turn (catalog_item_parts()). */
size_t registry_entry_parts(const struct registry_entry *e, struct iovec parts[CATALOG_ITEM_PARTS]);
/* The entry exposed as key (a tool or prompt name, a resource URI or URI template), or NULL. */
const struct registry_entry *registry_find(struct registry *r, enum catalog_kind kind, const char *key);
/* The template whose literal part before its first '{' is the longest prefix of uri. */
const struct registry_entry *registry_match_template(struct registry *r, const char *uri);
