/* A server's stderr: read continuously so the server never blocks on it, cut into lines
 * of at most STDERR_LINE_MAX bytes, each logged under the server's own identity
 * (log_server_line), with a per-server rate limit that counts what it drops. The last
 * line that says something is kept, with its time, to explain an exit and for the status
 * answer: without its "<N>" prefix, valid UTF-8, and cut to STDERR_LAST_MAX - 1 bytes
 * (ending in "…" when cut); so are the last lines, in the server's ring (line-ring.h),
 * for mcpvisorctl status NAME and logs NAME. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "line-ring.h"
#include "rate-limit.h"

#define STDERR_LINE_MAX 4096
#define STDERR_RATE_INTERVAL_USEC (10 * 1000000ull)
#define STDERR_RATE_BURST 1000
#define STDERR_LAST_MAX 256

struct event_base;
struct bufferevent;
struct logger;

struct stderr_reader {
        const struct logger *log;
        const char *name;
        struct bufferevent *bev;
        bool discarding;           /* inside a line already cut at STDERR_LINE_MAX */
        struct rate_limit rate;    /* lines logged */
        struct line_ring *keep;    /* the server's last lines, every run's; NULL: none kept */
        char last[STDERR_LAST_MAX]; /* the last line read that is not blank, "" if none */
        uint64_t last_at;          /* when it was read (usec, monotonic) */
};

/* Takes ownership of fd. */
int stderr_reader_start(struct stderr_reader *r, struct event_base *base, int fd, const char *name,
                        const struct logger *log, struct line_ring *keep);
/* Reads what is left without waiting (the process has exited), logs it, and closes. */
void stderr_reader_finish(struct stderr_reader *r);
