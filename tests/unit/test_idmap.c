/* Unit tests for idmap.c: the int64 -> pointer map (open addressing, linear probing,
 * tombstones): put/get/replace/remove, growth, extreme keys, and lookups that must end
 * however many tombstones a long churn leaves behind. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "idmap.h"

/* Values are never dereferenced: any non-NULL pointer will do. */
#define V(n) ((void *)(uintptr_t)(0x1000u + (uintptr_t)(n) * 8u))

static struct idmap m;

static void setup(void) {
        idmap_init(&m);
}

static void teardown(void) {
        idmap_done(&m);
}

TestSuite(idmap, .init = setup, .fini = teardown, .timeout = 30);

/* A bijection on 64-bit values (splitmix64's finaliser): distinct "random" keys. */
static int64_t mix(uint64_t x) {
        x += 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        return (int64_t)(x ^ (x >> 31));
}

static void expect_invariants(const struct idmap *map) {
        size_t live = 0;

        if (!map->cap) {
                cr_assert_eq(map->used, 0);
                return;
        }
        cr_assert_eq(map->cap & (map->cap - 1), 0, "cap %zu is a power of two", map->cap);
        for (size_t i = 0; i < map->cap; i++)
                if (map->slots[i].value)
                        live++;
        cr_assert_leq(map->used, map->filled);
        cr_assert_eq(live, map->filled, "filled counts live entries and tombstones");
        cr_assert_lt(map->filled, map->cap, "there is always an empty slot to end a probe");
}

Test(idmap, init_empty) {
        cr_assert_null(m.slots);
        cr_assert_eq(m.cap, 0);
        cr_assert_eq(m.used, 0);
        cr_assert_eq(m.filled, 0);
        cr_assert_null(idmap_get(&m, 0));
        cr_assert_null(idmap_get(&m, 42));
        cr_assert_null(idmap_remove(&m, 42));
        cr_assert_eq(m.used, 0);
}

Test(idmap, put_get) {
        cr_assert_eq(idmap_put(&m, 1, V(1)), 0);
        cr_assert_eq(idmap_put(&m, 2, V(2)), 0);
        cr_assert_eq(idmap_put(&m, 0, V(3)), 0);
        cr_assert_eq(idmap_get(&m, 1), V(1));
        cr_assert_eq(idmap_get(&m, 2), V(2));
        cr_assert_eq(idmap_get(&m, 0), V(3));
        cr_assert_null(idmap_get(&m, 3));
        cr_assert_null(idmap_get(&m, -1));
        cr_assert_eq(m.used, 3);
        expect_invariants(&m);
}

Test(idmap, replace) {
        cr_assert_eq(idmap_put(&m, 7, V(1)), 0);
        cr_assert_eq(idmap_put(&m, 7, V(2)), 0);
        cr_assert_eq(idmap_get(&m, 7), V(2));
        cr_assert_eq(m.used, 1, "replacing does not add an entry");
        cr_assert_eq(m.filled, 1);
        cr_assert_eq(idmap_remove(&m, 7), V(2));
        cr_assert_null(idmap_get(&m, 7));
}

Test(idmap, remove) {
        cr_assert_eq(idmap_put(&m, 10, V(10)), 0);
        cr_assert_eq(idmap_put(&m, 11, V(11)), 0);
        cr_assert_eq(idmap_remove(&m, 10), V(10));
        cr_assert_null(idmap_get(&m, 10));
        cr_assert_eq(idmap_get(&m, 11), V(11));
        cr_assert_null(idmap_remove(&m, 10), "a second remove finds nothing");
        cr_assert_null(idmap_remove(&m, 12), "removing a missing key");
        cr_assert_eq(m.used, 1);
        cr_assert_eq(idmap_remove(&m, 11), V(11));
        cr_assert_eq(m.used, 0);
        expect_invariants(&m);
}

Test(idmap, done_resets) {
        for (int i = 0; i < 100; i++)
                cr_assert_eq(idmap_put(&m, i, V(i)), 0);
        idmap_done(&m);
        cr_assert_null(m.slots);
        cr_assert_eq(m.cap, 0);
        cr_assert_eq(m.used, 0);
        cr_assert_null(idmap_get(&m, 5));
        cr_assert_eq(idmap_put(&m, 5, V(5)), 0, "usable again after done");
        cr_assert_eq(idmap_get(&m, 5), V(5));
}

Test(idmap, extreme_and_negative_keys) {
        static const int64_t keys[] = { INT64_MIN, INT64_MIN + 1, -2, -1, 0, 1, INT64_MAX - 1, INT64_MAX,
                                        (int64_t)1 << 32, -((int64_t)1 << 32), (int64_t)1 << 62 };
        const size_t n = sizeof keys / sizeof keys[0];

        for (size_t i = 0; i < n; i++)
                cr_assert_eq(idmap_put(&m, keys[i], V(i)), 0);
        cr_assert_eq(m.used, n);
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(idmap_get(&m, keys[i]), V(i), "key %lld", (long long)keys[i]);
        cr_assert_eq(idmap_remove(&m, INT64_MIN), V(0));
        cr_assert_null(idmap_get(&m, INT64_MIN));
        cr_assert_eq(idmap_get(&m, INT64_MAX), V(7));
        cr_assert_eq(idmap_remove(&m, INT64_MAX), V(7));
        cr_assert_null(idmap_get(&m, INT64_MAX));
        cr_assert_eq(idmap_get(&m, -1), V(3));
        expect_invariants(&m);
}

Test(idmap, many_sequential) {
        const int64_t n = 100000;

        for (int64_t i = 0; i < n; i++)
                cr_assert_eq(idmap_put(&m, i, V(i)), 0);
        cr_assert_eq(m.used, (size_t)n);
        cr_assert_leq(m.filled * 4, m.cap * 3, "load stays at most 3/4");
        expect_invariants(&m);
        for (int64_t i = 0; i < n; i++)
                cr_assert_eq(idmap_get(&m, i), V(i), "key %lld", (long long)i);
        for (int64_t i = n; i < n + 1000; i++)
                cr_assert_null(idmap_get(&m, i));
        for (int64_t i = -1000; i < 0; i++)
                cr_assert_null(idmap_get(&m, i));
        /* Remove the odd ones. */
        for (int64_t i = 1; i < n; i += 2)
                cr_assert_eq(idmap_remove(&m, i), V(i));
        cr_assert_eq(m.used, (size_t)n / 2);
        for (int64_t i = 0; i < n; i++)
                if (i % 2)
                        cr_assert_null(idmap_get(&m, i));
                else
                        cr_assert_eq(idmap_get(&m, i), V(i));
        expect_invariants(&m);
}

Test(idmap, many_negative) {
        const int64_t n = 100000;

        for (int64_t i = 1; i <= n; i++)
                cr_assert_eq(idmap_put(&m, -i, V(i)), 0);
        for (int64_t i = 1; i <= n; i++)
                cr_assert_eq(idmap_get(&m, -i), V(i));
        for (int64_t i = 1; i <= n; i++)
                cr_assert_null(idmap_get(&m, i));
        expect_invariants(&m);
}

Test(idmap, many_random) {
        const uint64_t n = 100000;

        for (uint64_t i = 0; i < n; i++)
                cr_assert_eq(idmap_put(&m, mix(i), V(i)), 0);
        cr_assert_eq(m.used, n);
        for (uint64_t i = 0; i < n; i++)
                cr_assert_eq(idmap_get(&m, mix(i)), V(i));
        for (uint64_t i = n; i < n + 10000; i++)
                cr_assert_null(idmap_get(&m, mix(i)));
        for (uint64_t i = 0; i < n; i += 3)
                cr_assert_eq(idmap_remove(&m, mix(i)), V(i));
        for (uint64_t i = 0; i < n; i++)
                if (i % 3 == 0)
                        cr_assert_null(idmap_get(&m, mix(i)));
                else
                        cr_assert_eq(idmap_get(&m, mix(i)), V(i));
        expect_invariants(&m);
}

Test(idmap, keys_colliding_in_low_bits) {
        /* Multiples of a large power of two: identical low bits. */
        for (int64_t i = 0; i < 5000; i++)
                cr_assert_eq(idmap_put(&m, i << 40, V(i)), 0);
        for (int64_t i = 0; i < 5000; i++)
                cr_assert_eq(idmap_get(&m, i << 40), V(i));
        expect_invariants(&m);
}

Test(idmap, growth) {
        size_t last_cap = 0;
        int grew = 0;

        for (int64_t i = 0; i < 5000; i++) {
                cr_assert_eq(idmap_put(&m, i * 7919, V(i)), 0);
                if (m.cap != last_cap) {
                        cr_assert_gt(m.cap, last_cap, "the table only grows while nothing is removed");
                        grew++;
                        last_cap = m.cap;
                        /* Everything put so far survives the rehash. */
                        for (int64_t j = 0; j <= i; j++)
                                cr_assert_eq(idmap_get(&m, j * 7919), V(j));
                }
                cr_assert_leq(m.filled * 4, m.cap * 3);
        }
        cr_assert_geq(grew, 8);
        expect_invariants(&m);
}

Test(idmap, remove_then_reinsert) {
        size_t filled, cap;

        for (int64_t i = 0; i < 8; i++)
                cr_assert_eq(idmap_put(&m, i, V(i)), 0);
        cap = m.cap;
        cr_assert_eq(idmap_remove(&m, 3), V(3));
        filled = m.filled;
        cr_assert_eq(filled, 8, "a removed entry leaves a tombstone");
        cr_assert_eq(m.used, 7);
        cr_assert_eq(idmap_put(&m, 3, V(33)), 0);
        cr_assert_eq(idmap_get(&m, 3), V(33));
        cr_assert_eq(m.used, 8);
        cr_assert_eq(m.filled, filled, "reinserting reuses the tombstone");
        cr_assert_eq(m.cap, cap);
        for (int64_t i = 0; i < 8; i++)
                if (i != 3)
                        cr_assert_eq(idmap_get(&m, i), V(i));
        expect_invariants(&m);
}

Test(idmap, remove_all_then_reinsert) {
        for (int round = 0; round < 50; round++) {
                for (int64_t i = 0; i < 1000; i++)
                        cr_assert_eq(idmap_put(&m, i, V(i + round)), 0);
                for (int64_t i = 0; i < 1000; i++)
                        cr_assert_eq(idmap_get(&m, i), V(i + round));
                for (int64_t i = 0; i < 1000; i++)
                        cr_assert_eq(idmap_remove(&m, i), V(i + round));
                cr_assert_eq(m.used, 0);
                for (int64_t i = 0; i < 1000; i++)
                        cr_assert_null(idmap_get(&m, i));
        }
        expect_invariants(&m);
        cr_assert_leq(m.cap, 4096, "reinserting the same keys does not grow without bound");
}

Test(idmap, missing_after_many_removes) {
        for (int64_t i = 0; i < 20000; i++)
                cr_assert_eq(idmap_put(&m, i, V(i)), 0);
        for (int64_t i = 0; i < 20000; i++)
                cr_assert_eq(idmap_remove(&m, i), V(i));
        /* Every slot that held something is a tombstone now: lookups must still end. */
        for (int64_t i = -5000; i < 25000; i++)
                cr_assert_null(idmap_get(&m, i));
        for (int64_t i = 0; i < 1000; i++)
                cr_assert_null(idmap_remove(&m, mix((uint64_t)i)));
        expect_invariants(&m);
}

/* A constant 10 live keys through 1e6 operations: ids rising forever like request ids,
 * each removed a little after being put. The table must neither grow without bound nor
 * fill with tombstones so that a lookup never finds an empty slot. */
Test(idmap, churn_constant_size) {
        const int64_t live = 10, ops = 1000000;
        size_t max_cap = 0;

        for (int64_t i = 0; i < live; i++)
                cr_assert_eq(idmap_put(&m, i, V(i)), 0);
        for (int64_t i = live; i < live + ops / 2; i++) {
                cr_assert_eq(idmap_remove(&m, i - live), V(i - live));
                cr_assert_eq(idmap_put(&m, i, V(i)), 0);
                cr_assert_eq(m.used, (size_t)live);
                if (m.cap > max_cap)
                        max_cap = m.cap;
                if (i % 9973 == 0) {
                        for (int64_t j = i - live + 1; j <= i; j++)
                                cr_assert_eq(idmap_get(&m, j), V(j));
                        cr_assert_null(idmap_get(&m, i - live));
                        cr_assert_null(idmap_get(&m, i + 1));
                        cr_assert_null(idmap_get(&m, -i));
                        expect_invariants(&m);
                }
        }
        cr_assert_leq(max_cap, 128, "10 live keys need a small table, got cap %zu", max_cap);
        for (int64_t j = live + ops / 2 - live; j < live + ops / 2; j++)
                cr_assert_eq(idmap_get(&m, j), V(j));
        for (int64_t j = 0; j < live + ops / 2 - live; j += 997)
                cr_assert_null(idmap_get(&m, j));
        expect_invariants(&m);
}

/* The same with random keys and random choice of which live key goes. */
Test(idmap, churn_random) {
        int64_t keys[10];
        uint64_t next = 0, rng = 12345;
        size_t max_cap = 0;

        for (int i = 0; i < 10; i++) {
                keys[i] = mix(next++);
                cr_assert_eq(idmap_put(&m, keys[i], V(i)), 0);
        }
        for (int op = 0; op < 500000; op++) {
                int k;

                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                k = (int)((rng >> 33) % 10);
                cr_assert_eq(idmap_remove(&m, keys[k]), V(k));
                cr_assert_null(idmap_get(&m, keys[k]));
                keys[k] = mix(next++);
                cr_assert_eq(idmap_put(&m, keys[k], V(k)), 0);
                if (m.cap > max_cap)
                        max_cap = m.cap;
                if (op % 10007 == 0) {
                        for (int i = 0; i < 10; i++)
                                cr_assert_eq(idmap_get(&m, keys[i]), V(i));
                        cr_assert_null(idmap_get(&m, mix(next + 1000)));
                        expect_invariants(&m);
                }
        }
        cr_assert_eq(m.used, 10);
        cr_assert_leq(max_cap, 128);
        for (int i = 0; i < 10; i++)
                cr_assert_eq(idmap_get(&m, keys[i]), V(i));
}
