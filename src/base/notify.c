/* sd_notify messages and the watchdog timer; see notify.h. */
#include "notify.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "log.h"

uint64_t notify_watchdog_period(uint64_t watchdog_usec) {
        return watchdog_usec / 2;
}

static void send_notify(struct notify *n, const char *text) {
        /* unset_environment=0: sd_notify reads $NOTIFY_SOCKET on every call and the
         * watchdog needs it for the daemon's whole life. */
        int r = sd_notify(0, text);
        if (r < 0)
                log_warning(n->log, "sd_notify failed: %s", strerror(-r));
}

static void watchdog_ping(evutil_socket_t fd, short what, void *userdata) {
        send_notify(userdata, "WATCHDOG=1");
}

static void status_due(evutil_socket_t fd, short what, void *userdata);

int notify_init(struct notify *n, struct event_base *base, const struct logger *log) {
        uint64_t usec = 0;
        int r;

        *n = (struct notify){ .log = log };
        n->status_timer = evtimer_new(base, status_due, n);
        if (!n->status_timer)
                return -ENOMEM;
        r = sd_watchdog_enabled(0, &usec);
        if (r < 0)
                log_warning(log, "ignoring an invalid WATCHDOG_USEC: %s", strerror(-r));
        if (r <= 0)
                return 0;

        uint64_t period = notify_watchdog_period(usec);
        struct timeval tv = { .tv_sec = (time_t)(period / USEC_PER_SEC),
                              .tv_usec = (suseconds_t)(period % USEC_PER_SEC) };
        n->watchdog_timer = event_new(base, -1, EV_PERSIST, watchdog_ping, n);
        if (!n->watchdog_timer || event_add(n->watchdog_timer, &tv) < 0)
                return -ENOMEM;
        n->watchdog_usec = usec;
        log_debug(log, "watchdog enabled: %" PRIu64 " ms, pinging every %" PRIu64 " ms", usec / 1000,
                  period / 1000);
        return 0;
}

void notify_done(struct notify *n) {
        if (n->watchdog_timer)
                event_free(n->watchdog_timer);
        if (n->status_timer)
                event_free(n->status_timer);
        free(n->status);
        free(n->status_next);
        *n = (struct notify){ 0 };
}

/* Remembers the status; false if it is the same as the last one sent. */
static bool status_changed(struct notify *n, const char *status) {
        if (n->status && strcmp(n->status, status) == 0)
                return false;
        free(n->status);
        n->status = strdup(status);
        return true;
}

/* Forgets the status waiting for its timer: a newer one is being sent. */
static void drop_status_next(struct notify *n) {
        free(n->status_next);
        n->status_next = NULL;
        if (n->status_timer)
                event_del(n->status_timer);
}

static void send_with_status(struct notify *n, const char *head, const char *status) {
        char *text;

        if (status) {
                drop_status_next(n);
                status_changed(n, status);
        }
        if (asprintf(&text, "%s%sSTATUS=%s", head, head[0] ? "\n" : "", status ? status : "") < 0)
                return;
        if (!status)
                text[strlen(head)] = '\0'; /* no STATUS= line at all */
        send_notify(n, text);
        free(text);
}

void notify_ready(struct notify *n, const char *status) {
        n->ready = true;
        send_with_status(n, "READY=1", status);
}

static void status_due(evutil_socket_t fd, short what, void *userdata) {
        struct notify *n = userdata;
        char *status = n->status_next;

        n->status_next = NULL;
        if (!n->status || strcmp(n->status, status) != 0)
                send_with_status(n, "", status);
        free(status);
}

_printf_(1, 0) static char *status_format(const char *fmt, va_list ap) {
        char *status;

        return vasprintf(&status, fmt, ap) < 0 ? NULL : status;
}

/* At once, if it differs from the last sent; it replaces one waiting for its timer. */
void notify_status(struct notify *n, const char *fmt, ...) {
        char *status;
        va_list ap;

        va_start(ap, fmt);
        status = status_format(fmt, ap);
        va_end(ap);
        if (!status)
                return;
        drop_status_next(n);
        if (!n->status || strcmp(n->status, status) != 0)
                send_with_status(n, "", status);
        free(status);
}

/* The timer is armed by the first change and not pushed back by the next ones: a steady
 * stream of changes still shows every NOTIFY_STATUS_DELAY_USEC. */
void notify_status_soon(struct notify *n, const char *fmt, ...) {
        const struct timeval delay = { .tv_sec = (time_t)(NOTIFY_STATUS_DELAY_USEC / USEC_PER_SEC),
                                       .tv_usec = (suseconds_t)(NOTIFY_STATUS_DELAY_USEC % USEC_PER_SEC) };
        char *status;
        va_list ap;

        va_start(ap, fmt);
        status = status_format(fmt, ap);
        va_end(ap);
        if (!status)
                return;
        if (n->status_next) {
                free(n->status_next);
                n->status_next = status;
        } else if (n->status && strcmp(n->status, status) == 0)
                free(status);
        else if (n->status_timer && evtimer_add(n->status_timer, &delay) == 0)
                n->status_next = status;
        else { /* no timer to wait on: at once rather than never */
                send_with_status(n, "", status);
                free(status);
        }
}

void notify_stopping(struct notify *n, const char *status) {
        send_with_status(n, "STOPPING=1", status);
}

void notify_reloading(struct notify *n, const char *status) {
        struct timespec ts;
        char head[96];

        /* MONOTONIC_USEC: ignored by systemd 252, required by 253+ for reloads. */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(head, sizeof head, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
                 (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000);
        send_with_status(n, head, status);
}

void notify_failure(struct notify *n, int error, const char *status) {
        char head[32];

        snprintf(head, sizeof head, "ERRNO=%d", error < 0 ? -error : error);
        send_with_status(n, head, status);
}
