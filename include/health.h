/* Health checks of one ready server: a request every interval, answered within timeout
 * or counted as a failure: MCP ping to a legacy server, server/discover to a modern one
 * (the modern era has no ping; discover is the one request every modern server answers). Reports each outcome; the server decides what a run
 * of failures means. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct event;
struct child;

/* status: 0 when the ping was answered, -ETIMEDOUT for no answer within the timeout,
 * -EPROTO for an error answer, another negative errno when the connection failed. */
typedef void (*health_result_fn)(int status, void *userdata);

struct health {
        struct event *timer;
        struct child *child;
        const char *method;           /* "ping" or "server/discover" */
        uint64_t interval, timeout;   /* usec; interval 0: no checks */
        int64_t request;              /* outstanding ping, 0 none */
        unsigned failures;            /* in a row */
        health_result_fn result;
        void *userdata;
};

int health_init(struct health *h, struct event_base *base, health_result_fn result, void *userdata);
void health_done(struct health *h);
/* Begins checking a connection to a server of that era (failures start at 0). */
void health_start(struct health *h, struct child *ch, bool modern, uint64_t interval, uint64_t timeout);
void health_stop(struct health *h);
