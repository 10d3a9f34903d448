/* Id-to-pointer hash map; see idmap.h. */
#include "idmap.h"

#include <errno.h>
#include <stdlib.h>

static char tombstone;
#define IDMAP_TOMBSTONE ((void *)&tombstone)

void idmap_init(struct idmap *m) {
        *m = (struct idmap){ 0 };
}

void idmap_done(struct idmap *m) {
        free(m->slots);
        idmap_init(m);
}

static size_t slot_of(int64_t key, size_t cap) {
        uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing spreads sequential ids */

        return (size_t)(h >> 32) & (cap - 1);
}

static int grow(struct idmap *m) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct idmap_slot *old = m->slots;
        size_t old_cap = m->cap;

        /* Mostly tombstones: rehash at the same size. */
        if (m->cap && m->used * 4 < m->cap)
                cap = m->cap;
        m->slots = calloc(cap, sizeof *m->slots);
        if (!m->slots) {
                m->slots = old;
                return -ENOMEM;
        }
        m->cap = cap;
        m->used = m->filled = 0;
        for (size_t i = 0; i < old_cap; i++)
                if (old[i].value && old[i].value != IDMAP_TOMBSTONE)
                        idmap_put(m, old[i].key, old[i].value);
        free(old);
        return 0;
}

static struct idmap_slot *lookup(const struct idmap *m, int64_t key) {
        if (!m->cap)
                return NULL;
        for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
                struct idmap_slot *s = &m->slots[i];
                if (!s->value)
                        return NULL;
                if (s->value != IDMAP_TOMBSTONE && s->key == key)
                        return s;
        }
}

int idmap_put(struct idmap *m, int64_t key, void *value) {
        struct idmap_slot *s = lookup(m, key);
        size_t i;

        if (s) {
                s->value = value;
                return 0;
        }
        if ((m->filled + 1) * 4 > m->cap * 3 && grow(m) < 0)
                return -ENOMEM;
        for (i = slot_of(key, m->cap); m->slots[i].value && m->slots[i].value != IDMAP_TOMBSTONE;
             i = (i + 1) & (m->cap - 1))
                ;
        if (!m->slots[i].value)
                m->filled++;
        m->slots[i] = (struct idmap_slot){ .key = key, .value = value };
        m->used++;
        return 0;
}

void *idmap_get(const struct idmap *m, int64_t key) {
        struct idmap_slot *s = lookup(m, key);

        return s ? s->value : NULL;
}

void *idmap_remove(struct idmap *m, int64_t key) {
        struct idmap_slot *s = lookup(m, key);
        void *value;

        if (!s)
                return NULL;
        value = s->value;
        s->value = IDMAP_TOMBSTONE;
        m->used--;
        return value;
}
