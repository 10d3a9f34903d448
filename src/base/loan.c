/* Bytes lent by reference; see loan.h. */
#include "loan.h"

#include <stdint.h>

struct loan *loan_hold(struct loan *l) {
        l->refs++;
        return l;
}

void loan_put(struct loan *l) {
        if (l && --l->refs == 0)
                l->free(l);
}

struct loan *loan_take(const struct loan_offer *o, const void *p, size_t len) {
        uintptr_t at = (uintptr_t)p, from, to;

        if (!o || !o->take || len == 0)
                return NULL;
        from = (uintptr_t)o->data;
        to = from + o->len;
        if (at < from || at > to || len > to - at)
                return NULL;
        return o->take(o);
}

void loan_release_cb(const void *data, size_t len, void *loan) {
        loan_put(loan);
}
