/* A hash map from 64-bit ids to pointers (open addressing, linear probing, tombstones),
 * for the lookups on every forwarded message: a child's response by request id, a progress
 * notification by token. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct idmap_slot {
        int64_t key;
        void *value;      /* NULL: empty; IDMAP_TOMBSTONE: removed */
};

struct idmap {
        struct idmap_slot *slots;
        size_t cap;       /* a power of two, or 0 */
        size_t used;      /* live entries */
        size_t filled;    /* live entries and tombstones */
};

void idmap_init(struct idmap *m);
void idmap_done(struct idmap *m);
/* Adds or replaces; value must not be NULL. -ENOMEM on failure. */
int idmap_put(struct idmap *m, int64_t key, void *value);
void *idmap_get(const struct idmap *m, int64_t key);
/* Returns the removed value, or NULL. */
void *idmap_remove(struct idmap *m, int64_t key);
