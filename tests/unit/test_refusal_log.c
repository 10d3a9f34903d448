/* Which refused HTTP requests are logged (refusal-log.c): each peer's first at once, its
 * repeats summarised once a period, the table of peers bounded against many addresses. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "refusal-log.h"

#define PERIOD 10000000ull /* 10 s */
#define T0 1000000000ull   /* a monotonic time well past 0 */

static struct refusal_peer v4(const char *text, unsigned port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        struct refusal_peer p;

        cr_assert_eq(inet_pton(AF_INET, text, &sa.sin_addr), 1);
        cr_assert_eq(refusal_peer_of_address((struct sockaddr *)&sa, &p), 0);
        return p;
}

static struct refusal_peer v6(const char *text) {
        struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
        struct refusal_peer p;

        cr_assert_eq(inet_pton(AF_INET6, text, &sa.sin6_addr), 1);
        cr_assert_eq(refusal_peer_of_address((struct sockaddr *)&sa, &p), 0);
        return p;
}

/* What a flush reported: the sum per peer kind and how many lines. */
struct flushed {
        unsigned lines;
        uint64_t peers;      /* refusals summarised for known peers */
        uint64_t others;
        char last[64];       /* the last known peer named */
};

static void on_summary(const struct refusal_peer *peer, uint64_t unlogged, void *userdata) {
        struct flushed *f = userdata;

        f->lines++;
        if (!peer) {
                f->others += unlogged;
                return;
        }
        f->peers += unlogged;
        refusal_peer_format(peer, f->last, sizeof f->last);
}

Test(refusal_log, first_logged_repeats_summarised_once) {
        struct refusal_log r;
        struct refusal_peer a = v4("192.0.2.7", 40000);
        struct flushed f = { 0 };

        refusal_log_init(&r, PERIOD);
        cr_assert(refusal_log_take(&r, &a, T0).log, "a peer's first refusal is logged");
        for (unsigned i = 1; i <= 19; i++) {
                struct refusal_peer again = v4("192.0.2.7", 40000 + i); /* new ports: the same peer */

                cr_assert_not(refusal_log_take(&r, &again, T0 + i).log, "repeat %u logged", i);
        }
        cr_assert_eq(refusal_log_flush(&r, T0 + 100, on_summary, &f), T0 + PERIOD, "due a period after its line");
        cr_assert_eq(f.lines, 0, "nothing before the period ends");
        cr_assert_eq(refusal_log_flush(&r, T0 + PERIOD, on_summary, &f), 0, "nothing more pending");
        cr_assert_eq(f.lines, 1);
        cr_assert_eq(f.peers, 19);
        cr_assert_str_eq(f.last, "192.0.2.7");
        cr_assert_eq(refusal_log_flush(&r, T0 + 3 * PERIOD, on_summary, &f), 0);
        cr_assert_eq(f.lines, 1, "a summary is said once");
}

Test(refusal_log, two_peers_each_logged) {
        struct refusal_log r;
        struct refusal_peer a = v4("127.0.0.1", 1), b = v4("127.0.0.2", 1), u = refusal_peer_of_uid(1000),
                            w = refusal_peer_of_uid(1001);

        refusal_log_init(&r, PERIOD);
        cr_assert(refusal_log_take(&r, &a, T0).log);
        cr_assert_not(refusal_log_take(&r, &a, T0 + 1).log);
        cr_assert(refusal_log_take(&r, &b, T0 + 2).log, "another address is another peer");
        cr_assert(refusal_log_take(&r, &u, T0 + 3).log, "a unix peer by its uid");
        cr_assert_not(refusal_log_take(&r, &u, T0 + 4).log);
        cr_assert(refusal_log_take(&r, &w, T0 + 5).log, "another uid");
}

/* A refusal after a quiet period is logged again, with the count its summary has not said yet. */
Test(refusal_log, after_a_period_logged_again) {
        struct refusal_log r;
        struct refusal_peer a = v6("2001:db8::1");
        struct refusal_note n;

        refusal_log_init(&r, PERIOD);
        cr_assert(refusal_log_take(&r, &a, T0).log);
        cr_assert_not(refusal_log_take(&r, &a, T0 + 1).log);
        cr_assert_not(refusal_log_take(&r, &a, T0 + 2).log);
        n = refusal_log_take(&r, &a, T0 + PERIOD);
        cr_assert(n.log);
        cr_assert_eq(n.unlogged, 2, "the repeats not summarised yet are said with it");
        n = refusal_log_take(&r, &a, T0 + 2 * PERIOD + 1);
        cr_assert(n.log);
        cr_assert_eq(n.unlogged, 0);
}

/* A client with many addresses (an IPv6 prefix): 16 new peers logged a period, the rest
 * counted as others, summarised in one line; the table never holds more than its size, and
 * the peers already known keep their place. */
Test(refusal_log, many_addresses_bounded) {
        struct refusal_log r;
        struct refusal_peer known = v4("198.51.100.1", 1);
        struct flushed f = { 0 };
        unsigned logged = 0;

        refusal_log_init(&r, PERIOD);
        cr_assert(refusal_log_take(&r, &known, T0).log);
        for (unsigned i = 0; i < 100000; i++) {
                struct refusal_peer p = v6("2001:db8::");

                p.addr[12] = (uint8_t)(i >> 24);
                p.addr[13] = (uint8_t)(i >> 16);
                p.addr[14] = (uint8_t)(i >> 8);
                p.addr[15] = (uint8_t)i;
                logged += refusal_log_take(&r, &p, T0 + 1 + i).log;
                cr_assert_leq(r.n_entries, REFUSAL_LOG_PEERS);
        }
        cr_assert_eq(logged, REFUSAL_LOG_NEW_PER_PERIOD - 1, "the known peer took one of the period's lines");
        cr_assert_not(refusal_log_take(&r, &known, T0 + 200000).log, "the known peer is still known");
        refusal_log_flush(&r, T0 + PERIOD + 1, on_summary, &f);
        cr_assert_eq(f.others, 100000 - (REFUSAL_LOG_NEW_PER_PERIOD - 1));
        cr_assert_eq(f.peers, 1);
        cr_assert_eq(f.lines, 2, "one line for the known peer, one for all the others");
}

/* Over many periods, new peers take the places of those refused least recently; what those
 * had not said goes to the others' count. */
Test(refusal_log, least_recent_forgotten) {
        struct refusal_log r;
        struct refusal_peer first = v4("10.0.0.1", 1);
        struct flushed f = { 0 };
        uint64_t now = T0;

        refusal_log_init(&r, PERIOD);
        cr_assert(refusal_log_take(&r, &first, now).log);
        cr_assert_not(refusal_log_take(&r, &first, now + 1).log); /* one unlogged */
        for (unsigned i = 0; i < REFUSAL_LOG_PEERS; i++) {
                struct refusal_peer p = v4("10.1.0.0", 1);

                p.addr[14] = (uint8_t)(i >> 8);
                p.addr[15] = (uint8_t)i;
                now += PERIOD / REFUSAL_LOG_NEW_PER_PERIOD + 1; /* under the new peers' cap */
                cr_assert(refusal_log_take(&r, &p, now).log, "new peer %u", i);
        }
        cr_assert_eq(r.n_entries, REFUSAL_LOG_PEERS);
        cr_assert(refusal_log_take(&r, &first, now + PERIOD).log, "forgotten: a first refusal again");
        refusal_log_flush(&r, now + PERIOD, on_summary, &f);
        cr_assert_eq(f.others, 1, "its unlogged refusal counted as the others'");
}

Test(refusal_log, peers_formatted) {
        struct refusal_peer p = v4("127.0.0.1", 8765), q = v6("::1"), u = refusal_peer_of_uid(4242);
        struct sockaddr_un_like { sa_family_t family; } unix_sa = { AF_UNIX };
        char buf[64];

        refusal_peer_format(&p, buf, sizeof buf);
        cr_assert_str_eq(buf, "127.0.0.1");
        refusal_peer_format(&q, buf, sizeof buf);
        cr_assert_str_eq(buf, "::1");
        refusal_peer_format(&u, buf, sizeof buf);
        cr_assert_str_eq(buf, "unix peer uid 4242");
        cr_assert_eq(refusal_peer_of_address((struct sockaddr *)&unix_sa, &p), -EAFNOSUPPORT);
}
