/* The sd_notify side of the daemon: READY, STATUS, STOPPING, RELOADING and the watchdog
 * keep-alive, driven by a timer on the main loop so a wedged loop stops the pings. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

struct event_base;
struct event;
struct logger;

struct notify {
        const struct logger *log;
        uint64_t watchdog_usec;      /* 0: the watchdog is off */
        struct event *watchdog_timer;
        char *status;                /* last STATUS= sent, to skip repeats */
        bool ready;
};

/* Reads WATCHDOG_USEC/WATCHDOG_PID once and arms the keep-alive timer. */
int notify_init(struct notify *n, struct event_base *base, const struct logger *log);
void notify_done(struct notify *n);

/* How often to ping for a given WATCHDOG_USEC: half of it, as sd_watchdog_enabled(3) advises. */
uint64_t notify_watchdog_period(uint64_t watchdog_usec);

void notify_ready(struct notify *n, const char *status);
void notify_status(struct notify *n, const char *fmt, ...) _printf_(2, 3);
void notify_stopping(struct notify *n, const char *status);
void notify_reloading(struct notify *n, const char *status);
/* Before a failing exit: STATUS= and ERRNO= so systemctl shows why. */
void notify_failure(struct notify *n, int error, const char *status);
