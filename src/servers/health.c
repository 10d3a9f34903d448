/* Health checks; see health.h. */
#include "health.h"

#include <errno.h>
#include <event2/event.h>
#include <string.h>

#include "server-conn.h"
#include "time-util.h"

static void schedule(struct health *h) {
        struct timeval tv = timeval_from_usec(h->interval);

        evtimer_add(h->timer, &tv);
}

static void on_pong(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct health *h = userdata;
        if (status == 0 && error)
                status = -EPROTO;
        h->request = 0;
        h->failures = status == 0 ? 0 : h->failures + 1;
        schedule(h);
        h->result(status, h->userdata);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct health *h = userdata;

        if (h->request != 0 || !h->child)
                return;
        h->request = child_request(h->child, h->method, NULL, h->timeout, on_pong, h);
        if (h->request < 0) {
                h->request = 0;
                schedule(h);
        }
}

int health_init(struct health *h, struct event_base *base, health_result_fn result, void *userdata) {
        *h = (struct health){ .result = result, .userdata = userdata };
        h->timer = evtimer_new(base, on_timer, h);
        return h->timer ? 0 : -ENOMEM;
}

void health_start(struct health *h, struct child *ch, bool modern, uint64_t interval, uint64_t timeout) {
        health_stop(h);
        h->child = ch;
        h->method = modern ? "server/discover" : "ping";
        h->interval = interval;
        h->timeout = timeout;
        h->failures = 0;
        if (interval > 0)
                schedule(h);
}

void health_stop(struct health *h) {
        if (h->request > 0 && h->child)
                child_cancel_request(h->child, h->request);
        h->request = 0;
        h->child = NULL;
        if (h->timer)
                evtimer_del(h->timer);
}

void health_done(struct health *h) {
        health_stop(h);
        if (h->timer)
                event_free(h->timer);
        h->timer = NULL;
}
