/* The restart throttle of one server, kept apart from the policy that decides whether to
 * restart at all (as s6 keeps its death tally apart from s6-permafailon):
 *   - the delay before the next start doubles with each exit that came soon after a start,
 *     from first_delay up to max_delay, and resets once the server ran healthy for
 *     reset_after;
 *   - the start limit: more than burst starts within interval means "failed". */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define BACKOFF_BURST_MAX 64

struct backoff {
        uint64_t first_delay, max_delay, reset_after; /* usec */
        unsigned burst;                               /* 0: no start limit */
        uint64_t interval;                            /* usec */
        unsigned quick_exits;      /* exits in a row without reset_after of healthy running */
        uint64_t healthy_since;    /* 0: not healthy in the current run */
        uint64_t starts[BACKOFF_BURST_MAX]; /* ring of recent start times */
        unsigned n_starts, next_slot;
};

void backoff_init(struct backoff *b, uint64_t first_delay, uint64_t max_delay, uint64_t reset_after,
                  unsigned burst, uint64_t interval);

/* Record events of the run. */
void backoff_started(struct backoff *b, uint64_t now);
void backoff_healthy(struct backoff *b, uint64_t now);

/* After an exit: the delay before the next start. Counts the exit. */
uint64_t backoff_next_delay(struct backoff *b, uint64_t now);

/* True if starting now would make more than burst starts within interval. */
bool backoff_limit_hit(const struct backoff *b, uint64_t now);

/* Forgets the last start: it never ran a process (the daemon was out of descriptors or
 * processes for a moment), so it must not bring the start limit closer. */
void backoff_unstart(struct backoff *b);

/* An operator's explicit start forgets the history. */
void backoff_reset(struct backoff *b);
