/* Unit tests for route-owners.c: which clients a server's calls belong to, counted as
 * calls start, are given up and end, so that one owner, several and "another client's
 * abandoned call may still run" are each known at once. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "route-owners.h"

/* Clients are never dereferenced: distinct addresses will do. */
static char client_a, client_b;
#define A 1, &client_a
#define B 2, &client_b

static struct route_owners o;

static void setup(void) {
        route_owners_init(&o);
}

static void teardown(void) {
        route_owners_done(&o);
}

TestSuite(route_owners, .init = setup, .fini = teardown);

static void *sole(unsigned want) {
        void *owner;

        cr_assert_eq(route_owners_sole(&o, &owner), want);
        return owner;
}

Test(route_owners, none) {
        cr_assert_null(sole(0));
        cr_assert_not(route_owners_abandoned_by_other(&o, 1));
}

Test(route_owners, one_client_many_calls) {
        for (int i = 0; i < 3; i++)
                cr_assert_eq(route_owners_add(&o, A), 0);
        cr_assert_eq(sole(1), &client_a);
        route_owners_drop(&o, A);
        route_owners_drop(&o, A);
        cr_assert_eq(sole(1), &client_a, "one call of a's is left");
        route_owners_drop(&o, A);
        cr_assert_null(sole(0));
}

Test(route_owners, two_clients_then_one) {
        cr_assert_eq(route_owners_add(&o, A), 0);
        cr_assert_eq(route_owners_add(&o, B), 0);
        cr_assert_eq(route_owners_add(&o, B), 0);
        cr_assert_null(sole(2));
        route_owners_drop(&o, A);
        cr_assert_eq(sole(1), &client_b, "b is the owner once a's call ended");
}

Test(route_owners, abandoned_by_other) {
        cr_assert_eq(route_owners_add(&o, A), 0);
        cr_assert_eq(route_owners_add(&o, B), 0);
        route_owners_drop(&o, B);
        cr_assert_eq(route_owners_abandon(&o, 2), 0);
        cr_assert_eq(sole(1), &client_a);
        cr_assert(route_owners_abandoned_by_other(&o, 1), "b's call may still run");
        cr_assert_not(route_owners_abandoned_by_other(&o, 2));
        route_owners_end(&o, 2);
        cr_assert_not(route_owners_abandoned_by_other(&o, 1), "b's call ended");
}

Test(route_owners, own_abandoned_call_is_not_another_s) {
        cr_assert_eq(route_owners_add(&o, A), 0);
        cr_assert_eq(route_owners_add(&o, A), 0);
        route_owners_drop(&o, A);
        cr_assert_eq(route_owners_abandon(&o, 1), 0);
        cr_assert_eq(sole(1), &client_a);
        cr_assert_not(route_owners_abandoned_by_other(&o, 1));
        cr_assert_eq(route_owners_abandon(&o, 2), 0); /* b left with a call running */
        cr_assert(route_owners_abandoned_by_other(&o, 1));
}

Test(route_owners, many_clients) {
        static char clients[1000];

        for (unsigned i = 0; i < 1000; i++)
                cr_assert_eq(route_owners_add(&o, i + 1, &clients[i]), 0);
        cr_assert_null(sole(1000));
        for (unsigned i = 0; i < 999; i++)
                route_owners_drop(&o, i + 1, &clients[i]);
        cr_assert_eq(sole(1), &clients[999]);
}
