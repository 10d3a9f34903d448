/* The sd_notify side of the daemon: READY, STATUS, STOPPING, RELOADING and the watchdog
 * keep-alive, driven by a timer on the main loop so a wedged loop stops the pings. A STATUS=
 * change of the client count alone waits NOTIFY_STATUS_DELAY_USEC and goes out only if the
 * text then differs from the last one sent; a server's change and the state changes (READY,
 * STOPPING, RELOADING, ERRNO) go out at once with their status. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

struct event_base;
struct event;
struct logger;

/* Every sd_notify() opens a socket, asks for its buffer size and the caller's ids, sends and
 * closes: a dozen system calls. A client that lives for one request (a modern HTTP request
 * without a session) changes the client count twice, so a STATUS= per change would cost more
 * than the request itself. A status is for a person reading `systemctl status` (or a script
 * polling it): a fifth of a second late is not noticed, and it bounds STATUS= to five
 * datagrams a second however fast clients come and go (one that comes and goes within it
 * costs none). */
#define NOTIFY_STATUS_DELAY_USEC (USEC_PER_SEC / 5)

struct notify {
        const struct logger *log;
        uint64_t watchdog_usec;      /* 0: the watchdog is off */
        struct event *watchdog_timer;
        struct event *status_timer;  /* armed while status_next waits */
        char *status;                /* last STATUS= sent, to skip repeats */
        char *status_next;           /* the latest status asked for, not sent yet; NULL: none */
        bool ready;
};

/* Reads WATCHDOG_USEC/WATCHDOG_PID once and arms the keep-alive timer; makes the status timer. */
int notify_init(struct notify *n, struct event_base *base, const struct logger *log);
void notify_done(struct notify *n);

/* How often to ping for a given WATCHDOG_USEC: half of it, as sd_watchdog_enabled(3) advises. */
uint64_t notify_watchdog_period(uint64_t watchdog_usec);

/* These go out at once; their status, when given, replaces one still waiting. */
void notify_ready(struct notify *n, const char *status);
/* The daemon's status at once, if it differs from the last sent (a server's change: what a
 * bench or a script waiting on STATUS= times). */
void notify_status(struct notify *n, const char *fmt, ...) _printf_(2, 3);
/* The same within NOTIFY_STATUS_DELAY_USEC, if it then still differs from the last sent (the
 * latest asked for by then wins): for changes that come in floods, such as the client count. */
void notify_status_soon(struct notify *n, const char *fmt, ...) _printf_(2, 3);
void notify_stopping(struct notify *n, const char *status);
void notify_reloading(struct notify *n, const char *status);
/* Before a failing exit: STATUS= and ERRNO= so systemctl shows why. */
void notify_failure(struct notify *n, int error, const char *status);
