/* The merged view of every ready server's offer; see registry.h. */
#include "registry.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "log.h"
#include "names.h"
#include "server.h"

/* Items dropped and built by a rebuild past which freed memory is given back to the system. */
#define REGISTRY_TRIM_AFTER 10000

static uint64_t signature(const struct registry_list *l);

void registry_set_separator(struct registry *r, const char *separator) {
        r->separator = separator ? separator : NAMES_DEFAULT_SEPARATOR;
}

void registry_init(struct registry *r, const struct logger *log, const char *separator) {
        *r = (struct registry){ .log = log };
        registry_set_separator(r, separator);
        /* Empty lists, as clients have seen them so far: the first build reports real changes only. */
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                r->lists[k].signature = signature(&r->lists[k]);
}

static void list_clear(struct registry_list *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->entries[i].exposed);
        for (size_t i = 0; i < l->n_blocks; i++)
                catalog_list_unref(l->blocks[i].items);
        free(l->entries);
        free(l->index);
        free(l->blocks);
        *l = (struct registry_list){ .signature = l->signature };
}

#define FNV64_OFFSET 14695981039346656037u

static uint64_t fnv64(uint64_t h, const void *data, size_t size) {
        const uint8_t *p = data;

        for (size_t i = 0; i < size; i++)
                h = (h ^ p[i]) * 1099511628211u;
        return h;
}

/* The entry of l found by key, whose name_hash() is hash, or NULL. */
static struct registry_entry *lookup_hashed(const struct registry_list *l, const char *key, uint32_t hash) {
        size_t mask = l->index_size - 1;

        if (l->index_size == 0)
                return NULL;
        for (size_t i = hash & mask;; i = (i + 1) & mask) {
                uint32_t v = l->index[i];

                if (v == 0)
                        return NULL;
                if (l->entries[v - 1].key_hash == hash && strcmp(l->entries[v - 1].key, key) == 0)
                        return &l->entries[v - 1];
        }
}

static struct registry_entry *lookup(const struct registry_list *l, const char *key) {
        return lookup_hashed(l, key, name_hash(key));
}

/* Indexes entry number i, whose key is not indexed yet. */
static void index_put(struct registry_list *l, size_t i) {
        size_t mask = l->index_size - 1, slot = l->entries[i].key_hash & mask;

        while (l->index[slot] != 0)
                slot = (slot + 1) & mask;
        l->index[slot] = (uint32_t)(i + 1);
}

/* What one rebuild of a list works with: the list it replaces, whose blocks and entries are
 * kept when unchanged (old_blocks finds a server's block). */
struct build {
        struct registry_list *old;
        struct idmap old_blocks;  /* server address -> block number + 1 */
        size_t kept, made;
        struct server *const *all; /* every server, listed or not: whose prefixes are taken */
        size_t n_all;
        uint64_t prefixes;         /* a hash of the set of their prefixes */
        const struct registry_list *outer; /* the outer registry's list of the kind, or NULL */
};

/* key is exposed in the list being built, or in the outer registry's (struct registry). */
static bool taken_hashed(const struct build *b, const struct registry_list *l, const char *key, uint32_t hash) {
        return lookup_hashed(l, key, hash) || (b->outer && lookup_hashed(b->outer, key, hash));
}

static bool taken(const struct build *b, const struct registry_list *l, const char *key) {
        return taken_hashed(b, l, key, name_hash(key));
}

size_t registry_entry_parts(const struct registry_entry *e, struct iovec parts[CATALOG_ITEM_PARTS]) {
        return catalog_item_parts(e->item, e->exposed, parts);
}

/* The FNV-1a of e's item as clients see it. */
static uint64_t entry_hash(const struct registry_entry *e) {
        struct iovec parts[CATALOG_ITEM_PARTS];
        size_t n = registry_entry_parts(e, parts);
        uint64_t h = FNV64_OFFSET;

        for (size_t i = 0; i < n; i++)
                h = fnv64(h, parts[i].iov_base, parts[i].iov_len);
        return h;
}

void registry_done(struct registry *r) {
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                list_clear(&r->lists[k]);
        json_object_put(r->warned);
        r->warned = NULL;
}

/* Rebuilds happen after every change of what servers list; say each collision once, not each time. */
static void warn_once(struct registry *r, const struct server *s, const char *fmt, ...) _printf_(3, 4);
static void warn_once(struct registry *r, const struct server *s, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (n < 0 || (r->warned && json_object_object_get_ex(r->warned, text, NULL)))
                return;
        if (!r->warned)
                r->warned = json_object_new_object();
        json_object_object_add(r->warned, text, NULL);
        log_emit(r->log, LOG_WARNING, &(struct log_subject){ .server = s->config->name }, "%s", text);
}

static int by_name(const void *a, const void *b) {
        const struct server *x = *(struct server *const *)a, *y = *(struct server *const *)b;

        return strcmp(x->config->name, y->config->name);
}

/* The other server whose prefix and separator begin name, for the name of a server without
 * a prefix: such a name is that server's to give, whether it lists one now or not, or it
 * would take the name, and the rules written for it, from that server. */
static const struct server *prefix_owner(const struct registry *r, const struct build *b, const struct server *s,
                                         const char *name) {
        size_t sep = strlen(r->separator);

        if (!strstr(name, r->separator))
                return NULL; /* most names: no server's prefixed name */
        for (size_t i = 0; i < b->n_all; i++) {
                const char *prefix = server_prefix(b->all[i]);
                size_t len = strlen(prefix);

                if (b->all[i] != s && len > 0 && strncmp(name, prefix, len) == 0 && strncmp(name + len, r->separator, sep) == 0)
                        return b->all[i];
        }
        return NULL;
}

/* The exposed name of a tool or prompt, resolving collisions; false to skip it. */
static bool exposed_name(struct registry *r, const struct build *b, struct registry_list *l, const struct server *s,
                         const char *name, char out[NAME_MAX_LEN + 1], bool *clean) {
        const struct server_config *c = s->config;
        const char *prefix = server_prefix(s);
        const struct server *owner;
        char first[NAME_MAX_LEN + 1], *alt = NULL;
        bool ok;

        name_expose(prefix, r->separator, name, first);
        owner = *prefix ? NULL : prefix_owner(r, b, s, first);
        if (!owner && !taken(b, l, first)) {
                memcpy(out, first, sizeof first);
                return true;
        }
        *clean = false;
        if (asprintf(&alt, "%s/%s", c->name, name) < 0)
                return false;
        name_fallback(alt, out);
        free(alt);
        ok = !taken(b, l, out);
        if (owner && ok)
                warn_once(r, s, "'%s' is in the names of server '%s' (its prefix '%s'); this server's '%s' is exposed as '%s'",
                          first, owner->config->name, server_prefix(owner), name, out);
        else if (owner)
                warn_once(r, s, "'%s' is in the names of server '%s' (its prefix '%s'); this server's '%s' is left out (its fallback '%s' is taken too)",
                          first, owner->config->name, server_prefix(owner), name, out);
        else if (ok)
                warn_once(r, s, "'%s' is already exposed by another server; this server's '%s' is exposed as '%s'", first,
                          name, out);
        else
                warn_once(r, s, "'%s' is already exposed by another server; this server's '%s' is left out (its fallback '%s' is taken too)",
                          first, name, out);
        return ok;
}

/* The entry the last build made for item under the same key, whose name and hash still hold. */
static struct registry_entry *kept_entry(const struct build *b, const struct server *s, const struct catalog_item *item,
                                         const char *key, uint32_t key_hash) {
        struct registry_entry *e = lookup_hashed(b->old, key, key_hash);

        return e && e->item == item && e->server == s ? e : NULL;
}

static uint64_t hash_string(uint64_t h, const char *s) {
        return s ? fnv64(h, s, strlen(s) + 1) : fnv64(h, "", 0) * 31;
}

static uint64_t hash_globs(uint64_t h, char *const *globs) {
        h = fnv64(h, globs ? "[" : "-", 1);
        for (; globs && *globs; globs++)
                h = hash_string(h, *globs);
        return h;
}

/* What the exposed names of s's items of kind follow, besides the items themselves: for a
 * server without a prefix, the other servers' prefixes too. */
static uint64_t naming_of(const struct registry *r, const struct build *b, const struct server *s, enum catalog_kind kind) {
        uint64_t h = hash_string(hash_string(FNV64_OFFSET, server_prefix(s)), r->separator);

        if (!*server_prefix(s))
                h = fnv64(h, &b->prefixes, sizeof b->prefixes);
        if ((int)kind < ITEM_FILTER_KINDS)
                h = hash_globs(hash_globs(h, s->config->filter.include[kind]), s->config->filter.exclude[kind]);
        return h;
}

/* Takes the block the last build made of the same catalog, named the same way, as it is, if
 * none of its names was contested then or is taken now: its entries move to the new list. */
static bool keep_block(struct build *b, struct registry_list *l, struct registry_block *block) {
        void *found = idmap_get(&b->old_blocks, (int64_t)(intptr_t)block->server);
        struct registry_block *old = found ? &b->old->blocks[(uintptr_t)found - 1] : NULL;

        if (!old || !old->clean || old->items != block->items || old->naming != block->naming)
                return false;
        for (size_t i = old->start; i < old->start + old->n; i++)
                if (taken_hashed(b, l, b->old->entries[i].key, b->old->entries[i].key_hash))
                        return false;
        for (size_t i = old->start; i < old->start + old->n; i++) {
                struct registry_entry *e = &b->old->entries[i];

                l->entries[l->n] = *e;
                e->exposed = NULL; /* moved: the old list no longer holds it */
                index_put(l, l->n++);
        }
        b->kept += old->n;
        return true;
}

/* The name item is exposed by (NULL: left out), in exposed: a tool or prompt's, renamed;
 * a resource or template's, its own unless another server lists it. */
static const char *exposed_key(struct registry *r, const struct build *b, struct registry_list *l, enum catalog_kind kind,
                               struct registry_block *block, const char *key, char exposed[NAME_MAX_LEN + 1]) {
        struct server *s = block->server;

        if (kind == CATALOG_TOOLS || kind == CATALOG_PROMPTS) {
                /* Left out before naming: a filtered item takes no name from another's. */
                if (!item_filter_offers(&s->config->filter, kind, key) || !exposed_name(r, b, l, s, key, exposed, &block->clean))
                        return NULL;
                return strcmp(exposed, key) == 0 ? key : exposed;
        }
        if (taken(b, l, key)) {
                block->clean = false;
                warn_once(r, s, "%s %s is also listed by another server, which serves it",
                          kind == CATALOG_RESOURCES ? "resource" : "resource template", key);
                return NULL;
        }
        return key;
}

static void add_entry(struct registry *r, struct build *b, enum catalog_kind kind, struct registry_block *block,
                      const struct catalog_item *item) {
        struct registry_list *l = &r->lists[kind];
        struct server *s = block->server;
        const char *key = catalog_item_key(item), *found_by;
        struct registry_entry *kept, *e = &l->entries[l->n];
        char exposed[NAME_MAX_LEN + 1];
        uint32_t key_hash;

        found_by = exposed_key(r, b, l, kind, block, key, exposed);
        if (!found_by)
                return;
        key_hash = name_hash(found_by);
        kept = kept_entry(b, s, item, found_by, key_hash);
        *e = (struct registry_entry){ .server = s, .name = key, .key = key, .item = item, .key_hash = key_hash };
        if (kept) {
                /* Its name moves to the new list, as keep_block() moves whole blocks. */
                e->exposed = kept->exposed;
                kept->exposed = NULL;
                e->hash = kept->hash;
                b->kept++;
        } else {
                if (found_by != key && !(e->exposed = strdup(found_by))) {
                        block->clean = false; /* out of memory: left out */
                        return;
                }
                e->hash = entry_hash(e);
                b->made++;
        }
        if (e->exposed)
                e->key = e->exposed;
        index_put(l, l->n);
        l->n++;
}

static uint64_t signature(const struct registry_list *l) {
        return registry_signature_of(l, NULL, l->n);
}

static void build_list(struct registry *r, struct build *b, enum catalog_kind kind, struct server **sorted, size_t n) {
        struct registry_list *l = &r->lists[kind];
        size_t total = 0, size = 8;

        r->builds++;
        for (size_t i = 0; i < n; i++)
                total += catalog_count(&sorted[i]->catalog, kind);
        while (size < 2 * total)
                size *= 2;
        l->entries = calloc(total ? total : 1, sizeof *l->entries);
        l->index = calloc(size, sizeof *l->index);
        l->blocks = calloc(n ? n : 1, sizeof *l->blocks);
        if (!l->entries || !l->index || !l->blocks)
                return;
        l->index_size = size;
        for (size_t i = 0; i < b->old->n_blocks; i++)
                if (idmap_put(&b->old_blocks, (int64_t)(intptr_t)b->old->blocks[i].server, (void *)(uintptr_t)(i + 1)) < 0)
                        break; /* out of memory: the rest is built item by item */
        for (size_t i = 0; i < n; i++) {
                struct server *s = sorted[i];
                size_t items = catalog_count(&s->catalog, kind);
                struct registry_block *block = &l->blocks[l->n_blocks];

                if (items == 0)
                        continue;
                *block = (struct registry_block){ .server = s, .items = catalog_list_ref(s->catalog.lists[kind]),
                                                  .naming = naming_of(r, b, s, kind), .start = l->n, .clean = true };
                l->n_blocks++;
                if (!keep_block(b, l, block))
                        for (size_t j = 0; j < items; j++)
                                add_entry(r, b, kind, block, block->items->items[j]);
                block->n = l->n - block->start;
        }
}

unsigned registry_rebuild(struct registry *r, struct server *const *servers, size_t n, unsigned kinds) {
        struct server **sorted = calloc(n ? n : 1, sizeof *sorted);
        unsigned changed = 0;
        size_t m = 0, moved = 0; /* items dropped and built */
        uint64_t prefixes = 0;

        if (!sorted) {
                /* The marked lists may name servers freed since: drop them rather than keep
                 * them; still marked, they are built again at the next read. */
                for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                        if (kinds & (1u << k))
                                list_clear(&r->lists[k]);
                return 0;
        }
        r->dirty &= ~kinds;
        for (size_t i = 0; i < n; i++) {
                prefixes += hash_string(FNV64_OFFSET, server_prefix(servers[i])); /* in any order */
                if (server_state_listed(servers[i]->state))
                        sorted[m++] = servers[i];
        }
        qsort(sorted, m, sizeof *sorted, by_name);
        for (int k = 0; k < CATALOG_KIND_COUNT; k++) {
                struct registry_list old = r->lists[k];
                struct build b = { .old = &old, .all = servers, .n_all = n, .prefixes = prefixes,
                                   .outer = r->outer ? &r->outer->lists[k] : NULL };

                if (!(kinds & (1u << k)))
                        continue;
                idmap_init(&b.old_blocks);
                r->lists[k] = (struct registry_list){ 0 };
                build_list(r, &b, k, sorted, m);
                r->lists[k].signature = signature(&r->lists[k]);
                moved += old.n - b.kept + b.made;
                list_clear(&old);
                idmap_done(&b.old_blocks);
                if (r->lists[k].signature != old.signature)
                        changed |= 1u << k;
        }
        free(sorted);
        /* A big catalogue replaced (a server restarted, its list changed) leaves its old items,
         * and the page they came in, free in the middle of the heap, where glibc keeps them:
         * given back, a restart of a server with 100k tools no longer grows the daemon by
         * two thirds. Only when big lists changed, so its cost (a walk of the free lists) is rare. */
        if (changed && moved >= REGISTRY_TRIM_AFTER)
                malloc_trim(0);
        return changed;
}

void registry_set_source(struct registry *r, const struct registry_source *source) {
        r->source = *source;
}

void registry_set_outer(struct registry *r, struct registry *outer) {
        r->outer = outer;
}

void registry_mark(struct registry *r, unsigned kinds) {
        r->dirty |= kinds & CATALOG_ALL_KINDS;
}

unsigned registry_sync(struct registry *r) {
        struct server *const *servers;
        unsigned kinds;
        size_t n = 0;

        if (r->outer) /* before kinds is read: whoever marks it marks r too */
                (void)registry_sync(r->outer);
        kinds = r->dirty;
        if (!kinds || !r->source.servers)
                return 0;
        servers = r->source.servers(r->source.userdata, &n);
        log_debug(r->log, "rebuilding %d list%s of what %zu servers offer", __builtin_popcount(kinds),
                  __builtin_popcount(kinds) == 1 ? "" : "s", n);
        return registry_rebuild(r, servers, n, kinds);
}

const struct registry_list *registry_list(struct registry *r, enum catalog_kind kind) {
        (void)registry_sync(r);
        return &r->lists[kind];
}

const struct registry_entry *registry_find(struct registry *r, enum catalog_kind kind, const char *key) {
        return lookup(registry_list(r, kind), key);
}

const struct registry_entry *registry_match_template(struct registry *r, const char *uri) {
        const struct registry_list *l = registry_list(r, CATALOG_TEMPLATES);
        const struct registry_entry *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; i < l->n; i++) {
                const char *t = l->entries[i].name;
                size_t len = strcspn(t, "{");

                if (strncmp(uri, t, len) == 0 && (!best || len > best_len)) {
                        best = &l->entries[i];
                        best_len = len;
                }
        }
        return best;
}

uint64_t registry_signature_of(const struct registry_list *l, const size_t *shown, size_t n) {
        uint64_t h = FNV64_OFFSET;

        for (size_t i = 0; i < n; i++)
                h = fnv64(h, &l->entries[shown ? shown[i] : i].hash, sizeof(uint64_t));
        return h ^ (uint64_t)n;
}
