/* MCP ping health checks of one ready server: a ping every interval, answered within
 * timeout or counted as a failure. Reports each outcome; the server decides what a run
 * of failures means. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct event;
struct child;

/* ok: the ping was answered; else why is static text ("timed out", ...). */
typedef void (*health_result_fn)(bool ok, const char *why, void *userdata);

struct health {
        struct event *timer;
        struct child *child;
        uint64_t interval, timeout;   /* usec; interval 0: no checks */
        int64_t request;              /* outstanding ping, 0 none */
        unsigned failures;            /* in a row */
        health_result_fn result;
        void *userdata;
};

int health_init(struct health *h, struct event_base *base, health_result_fn result, void *userdata);
void health_done(struct health *h);
/* Begins checking a connection (failures start at 0). */
void health_start(struct health *h, struct child *ch, uint64_t interval, uint64_t timeout);
void health_stop(struct health *h);
