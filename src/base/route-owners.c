/* The clients of a server's calls in flight; see route-owners.h. */
#include "route-owners.h"

#include <errno.h>

void route_owners_init(struct route_owners *o) {
        *o = (struct route_owners){ 0 };
        idmap_init(&o->owned);
        idmap_init(&o->abandoned);
}

void route_owners_done(struct route_owners *o) {
        idmap_done(&o->owned);
        idmap_done(&o->abandoned);
}

static uintptr_t count_of(const struct idmap *m, uint64_t number) {
        return (uintptr_t)idmap_get(m, (int64_t)number);
}

/* One call more for number in m: whether it is the client's first, or -ENOMEM. */
static int count_up(struct idmap *m, uint64_t number) {
        uintptr_t n = count_of(m, number) + 1;
        int r = idmap_put(m, (int64_t)number, (void *)n);

        return r < 0 ? r : n == 1;
}

/* One call less: whether it was the client's last. */
static bool count_down(struct idmap *m, uint64_t number) {
        uintptr_t n = count_of(m, number);

        if (n <= 1) {
                idmap_remove(m, (int64_t)number);
                return n == 1;
        }
        (void)idmap_put(m, (int64_t)number, (void *)(n - 1)); /* replaces: cannot fail */
        return false;
}

int route_owners_add(struct route_owners *o, uint64_t number, void *client) {
        int r = count_up(&o->owned, number);

        if (r > 0) {
                o->n_owners++;
                o->owners_sum += (uintptr_t)client;
        }
        return r < 0 ? r : 0;
}

void route_owners_drop(struct route_owners *o, uint64_t number, void *client) {
        if (count_down(&o->owned, number)) {
                o->n_owners--;
                o->owners_sum -= (uintptr_t)client;
        }
}

int route_owners_abandon(struct route_owners *o, uint64_t who) {
        int r = count_up(&o->abandoned, who);

        if (r > 0)
                o->n_abandoners++;
        return r < 0 ? r : 0;
}

void route_owners_end(struct route_owners *o, uint64_t who) {
        if (count_down(&o->abandoned, who))
                o->n_abandoners--;
}

unsigned route_owners_sole(const struct route_owners *o, void **ret) {
        *ret = o->n_owners == 1 ? (void *)o->owners_sum : NULL;
        return o->n_owners;
}

bool route_owners_abandoned_by_other(const struct route_owners *o, uint64_t who) {
        return o->n_abandoners > (count_of(&o->abandoned, who) > 0 ? 1u : 0u);
}
