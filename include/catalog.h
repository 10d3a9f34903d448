/* What one server offers, as learned in its handshake: the initialize result (version,
 * capabilities, serverInfo, instructions) and its tools, prompts, resources and resource
 * templates. Replaced as a whole after every (re)start; routing reads it.
 *
 * Items are kept as the JSON text the server wrote (checked by json-scan.c, never parsed
 * into a tree) with their name, URI or URI template taken out: a tool costs its text and a
 * few words, where json-c's tree of it would cost 4 KiB. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

enum catalog_kind { CATALOG_TOOLS, CATALOG_PROMPTS, CATALOG_RESOURCES, CATALOG_TEMPLATES, CATALOG_KIND_COUNT };
/* Every kind, a bit each (1 << kind). */
#define CATALOG_ALL_KINDS ((1u << CATALOG_KIND_COUNT) - 1)

struct catalog_kind_info {
        const char *method;      /* "tools/list" */
        const char *key;         /* the array in the result: "tools" */
        const char *capability;  /* the server capability that allows the method */
        const char *item_key;    /* the member an item is known by: "name", "uri", "uriTemplate" */
};

extern const struct catalog_kind_info catalog_kinds[CATALOG_KIND_COUNT];

/* One item: an object with one non-empty string member item_key. */
struct catalog_item {
        uint32_t len;                  /* of its text */
        uint32_t cut_start, cut_end;   /* the key member with a comma beside it, within text */
        bool alone;                    /* the key member is its only member */
        char text[];                   /* its JSON text, NUL, then its key decoded, NUL */
};

/* Its name, URI or URI template, decoded. */
static inline const char *catalog_item_key(const struct catalog_item *it) {
        return it->text + it->len + 1;
}

/* The most parts catalog_item_parts() writes. */
#define CATALOG_ITEM_PARTS 5

/* A list of items, shared by reference: a refresh keeps the lists it does not fetch again,
 * and the registry keeps the lists its entries point into. */
struct catalog_list {
        unsigned refs;
        size_t n, cap;
        struct catalog_item **items;  /* owned */
};

struct catalog {
        json_object *initialize;                        /* the server's initialize result, owned */
        struct catalog_list *lists[CATALOG_KIND_COUNT]; /* a reference each; NULL when not offered */
};

void catalog_init(struct catalog *c);
void catalog_done(struct catalog *c);
/* Moves src into dst, releasing what dst held. */
void catalog_replace(struct catalog *dst, struct catalog *src);
size_t catalog_count(const struct catalog *c, enum catalog_kind kind);
/* The capability object the server declared, or NULL. */
json_object *catalog_capability(const struct catalog *c, const char *name);

/* An item of kind from its JSON text (valid: json-scan.h), copied. -EINVAL when it is not an
 * object whose key member is a non-empty string, -ENOENT when it has none, -EEXIST when it
 * has it twice (which one a client would read is the client's guess), -ENOMEM. */
int catalog_item_new(enum catalog_kind kind, const char *text, size_t len, struct catalog_item **ret);
/* The item as clients see it, as parts to write one after the other (returns how many):
 * its text as the server wrote it, or with exposed (a name: no character JSON escapes) as
 * its first member "name" in place of its own. */
size_t catalog_item_parts(const struct catalog_item *it, const char *exposed, struct iovec parts[CATALOG_ITEM_PARTS]);

/* An empty list with one reference; NULL when out of memory. */
struct catalog_list *catalog_list_new(void);
struct catalog_list *catalog_list_ref(struct catalog_list *l);
void catalog_list_unref(struct catalog_list *l);
/* Appends the items of the JSON array text (valid: json-scan.h) while l has fewer than max:
 * 1 when some were left over, else 0; -EINVAL when text is no array; -ENOMEM. Elements that
 * are no item of kind are left out and counted in *refused. */
int catalog_list_add_array(struct catalog_list *l, enum catalog_kind kind, const char *text, size_t len, size_t max,
                           unsigned *refused);
