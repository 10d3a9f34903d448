/* Which refused HTTP requests (a wrong or missing token, a foreign Origin, a limit) are
 * logged: each peer's first refusal at once, its repeats counted and summarised once a
 * period, so that one client retrying with a bad token is one line, not thousands, while a
 * second client's refusal is still seen at once. A peer is an address for TCP (its port
 * left out: a client's retries come from new ports) and a uid for a Unix socket.
 *
 * Bounded against a hostile client with many addresses: at most REFUSAL_LOG_PEERS peers are
 * remembered (the one refused least recently forgotten first), and at most
 * REFUSAL_LOG_NEW_PER_PERIOD new peers get a line of their own in a period; refusals beyond
 * that, and those of forgotten peers, are counted together and summarised as "others".
 * Pure logic: the caller gives the time and does the logging. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define REFUSAL_LOG_PEERS 64
#define REFUSAL_LOG_NEW_PER_PERIOD 16

struct refusal_peer {
        bool unix_peer;
        uid_t uid;               /* unix_peer */
        uint8_t addr[16];        /* otherwise: IPv6, or IPv4 mapped into it */
};

struct refusal_entry {
        struct refusal_peer peer;
        uint64_t logged_at;      /* its last line */
        uint64_t seen_at;        /* its last refusal: the least recent is forgotten first */
        uint64_t unlogged;       /* refusals since its last line */
};

struct refusal_log {
        uint64_t period;
        struct refusal_entry entries[REFUSAL_LOG_PEERS];
        size_t n_entries;
        uint64_t window_start;   /* of the period counting new peers' lines */
        unsigned new_logged;     /* new peers logged in it */
        uint64_t others;         /* refusals of peers not remembered, since their last summary */
        uint64_t others_logged_at;
};

/* What to do with one refusal. */
struct refusal_note {
        bool log;                /* log it now (the peer's first, or first after a quiet period) */
        uint64_t unlogged;       /* the peer's refusals not logged before it (not summarised yet) */
};

void refusal_log_init(struct refusal_log *r, uint64_t period_usec);
/* A refusal of peer at now (usec, monotonic). */
struct refusal_note refusal_log_take(struct refusal_log *r, const struct refusal_peer *peer, uint64_t now);

typedef void (*refusal_summary_fn)(const struct refusal_peer *peer, uint64_t unlogged, void *userdata);
/* Calls fn for each peer whose refusals since its last line went unlogged and whose last line
 * is a period old (peer NULL: the others), marking them logged. Returns when the next summary
 * is due (usec), 0 when none is pending. */
uint64_t refusal_log_flush(struct refusal_log *r, uint64_t now, refusal_summary_fn fn, void *userdata);

/* The peer of an AF_INET or AF_INET6 address (the port left out); -EAFNOSUPPORT otherwise. */
int refusal_peer_of_address(const struct sockaddr *sa, struct refusal_peer *ret);
struct refusal_peer refusal_peer_of_uid(uid_t uid);
/* "127.0.0.1", "::1", "unix peer uid 1000". */
void refusal_peer_format(const struct refusal_peer *peer, char *buf, size_t size);
