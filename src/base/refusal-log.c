/* Which refused HTTP requests are logged; see refusal-log.h. */
#include "refusal-log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

void refusal_log_init(struct refusal_log *r, uint64_t period_usec) {
        *r = (struct refusal_log){ .period = period_usec };
}

static bool same_peer(const struct refusal_peer *a, const struct refusal_peer *b) {
        if (a->unix_peer != b->unix_peer)
                return false;
        return a->unix_peer ? a->uid == b->uid : memcmp(a->addr, b->addr, sizeof a->addr) == 0;
}

static struct refusal_entry *find(struct refusal_log *r, const struct refusal_peer *peer) {
        for (size_t i = 0; i < r->n_entries; i++)
                if (same_peer(&r->entries[i].peer, peer))
                        return &r->entries[i];
        return NULL;
}

/* A slot for a new peer: a free one, else the least recently refused peer's, whose
 * unlogged refusals are the others' from now on. */
static struct refusal_entry *slot_for_new(struct refusal_log *r) {
        struct refusal_entry *lru;

        if (r->n_entries < REFUSAL_LOG_PEERS)
                return &r->entries[r->n_entries++];
        lru = &r->entries[0];
        for (size_t i = 1; i < r->n_entries; i++)
                if (r->entries[i].seen_at < lru->seen_at)
                        lru = &r->entries[i];
        r->others += lru->unlogged;
        return lru;
}

static struct refusal_note take_new(struct refusal_log *r, const struct refusal_peer *peer, uint64_t now) {
        struct refusal_entry *e;

        if (now - r->window_start >= r->period) {
                r->window_start = now;
                r->new_logged = 0;
        }
        if (r->new_logged >= REFUSAL_LOG_NEW_PER_PERIOD) {
                r->others++; /* many new peers at once: counted, and none displaces a known one */
                return (struct refusal_note){ .log = false };
        }
        r->new_logged++;
        e = slot_for_new(r);
        *e = (struct refusal_entry){ .peer = *peer, .logged_at = now, .seen_at = now };
        return (struct refusal_note){ .log = true };
}

struct refusal_note refusal_log_take(struct refusal_log *r, const struct refusal_peer *peer, uint64_t now) {
        struct refusal_entry *e = find(r, peer);
        struct refusal_note note;

        if (!e)
                return take_new(r, peer, now);
        e->seen_at = now;
        if (now - e->logged_at < r->period) {
                e->unlogged++;
                return (struct refusal_note){ .log = false };
        }
        note = (struct refusal_note){ .log = true, .unlogged = e->unlogged };
        e->unlogged = 0;
        e->logged_at = now;
        return note;
}

/* The earlier of a due time and the next one found (0: none yet). */
static uint64_t earlier(uint64_t next, uint64_t due) {
        return next == 0 || due < next ? due : next;
}

uint64_t refusal_log_flush(struct refusal_log *r, uint64_t now, refusal_summary_fn fn, void *userdata) {
        uint64_t next = 0;

        for (size_t i = 0; i < r->n_entries; i++) {
                struct refusal_entry *e = &r->entries[i];

                if (e->unlogged == 0)
                        continue;
                if (now - e->logged_at < r->period) {
                        next = earlier(next, e->logged_at + r->period);
                        continue;
                }
                fn(&e->peer, e->unlogged, userdata);
                e->unlogged = 0;
                e->logged_at = now;
        }
        if (r->others > 0) {
                if (now - r->others_logged_at < r->period)
                        return earlier(next, r->others_logged_at + r->period);
                fn(NULL, r->others, userdata);
                r->others = 0;
                r->others_logged_at = now;
        }
        return next;
}

int refusal_peer_of_address(const struct sockaddr *sa, struct refusal_peer *ret) {
        *ret = (struct refusal_peer){ 0 };
        if (sa->sa_family == AF_INET6) {
                memcpy(ret->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, sizeof ret->addr);
                return 0;
        }
        if (sa->sa_family != AF_INET)
                return -EAFNOSUPPORT;
        ret->addr[10] = ret->addr[11] = 0xff; /* ::ffff:a.b.c.d */
        memcpy(ret->addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
}

struct refusal_peer refusal_peer_of_uid(uid_t uid) {
        return (struct refusal_peer){ .unix_peer = true, .uid = uid };
}

void refusal_peer_format(const struct refusal_peer *peer, char *buf, size_t size) {
        static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };
        char host[INET6_ADDRSTRLEN] = "?";

        if (peer->unix_peer) {
                snprintf(buf, size, "unix peer uid %u", (unsigned)peer->uid);
                return;
        }
        if (memcmp(peer->addr, v4_mapped, sizeof v4_mapped) == 0)
                inet_ntop(AF_INET, peer->addr + 12, host, sizeof host);
        else
                inet_ntop(AF_INET6, peer->addr, host, sizeof host);
        snprintf(buf, size, "%s", host);
}
