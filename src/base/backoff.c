/* The restart throttle; see backoff.h. Pure logic over timestamps the caller passes in. */
#include "backoff.h"

#include <string.h>

void backoff_init(struct backoff *b, uint64_t first_delay, uint64_t max_delay, uint64_t reset_after,
                  unsigned burst, uint64_t interval) {
        *b = (struct backoff){
                .first_delay = first_delay,
                .max_delay = max_delay < first_delay ? first_delay : max_delay,
                .reset_after = reset_after,
                .burst = burst > BACKOFF_BURST_MAX ? BACKOFF_BURST_MAX : burst,
                .interval = interval,
        };
}

void backoff_started(struct backoff *b, uint64_t now) {
        b->starts[b->next_slot] = now;
        b->next_slot = (b->next_slot + 1) % BACKOFF_BURST_MAX;
        if (b->n_starts < BACKOFF_BURST_MAX)
                b->n_starts++;
        b->healthy_since = 0;
}

void backoff_unstart(struct backoff *b) {
        if (b->n_starts == 0)
                return;
        b->next_slot = (b->next_slot + BACKOFF_BURST_MAX - 1) % BACKOFF_BURST_MAX;
        b->starts[b->next_slot] = 0;
        b->n_starts--;
}

void backoff_healthy(struct backoff *b, uint64_t now) {
        if (b->healthy_since == 0)
                b->healthy_since = now;
}

uint64_t backoff_next_delay(struct backoff *b, uint64_t now) {
        uint64_t delay = b->first_delay;

        if (b->healthy_since != 0 && now - b->healthy_since >= b->reset_after)
                b->quick_exits = 0;
        b->healthy_since = 0;
        for (unsigned i = 0; i < b->quick_exits && delay < b->max_delay; i++)
                delay *= 2;
        if (delay > b->max_delay)
                delay = b->max_delay;
        b->quick_exits++;
        return delay;
}

bool backoff_limit_hit(const struct backoff *b, uint64_t now) {
        unsigned recent = 0;

        if (b->burst == 0)
                return false;
        /* The n_starts slots before next_slot: after an unstart of a full ring they are not
         * the first n_starts. */
        for (unsigned j = 1; j <= b->n_starts; j++)
                if (now - b->starts[(b->next_slot + BACKOFF_BURST_MAX - j) % BACKOFF_BURST_MAX] < b->interval)
                        recent++;
        return recent >= b->burst;
}

void backoff_reset(struct backoff *b) {
        b->quick_exits = 0;
        b->healthy_since = 0;
        b->n_starts = 0;
        b->next_slot = 0;
        memset(b->starts, 0, sizeof b->starts);
}
