/* Requests waiting for servers on their first start; see list-wait.h. */
#include "list-wait.h"

#include <event2/event.h>
#include <stdlib.h>

#include "client.h"
#include "client-access.h"
#include "daemon.h"
#include "methods.h"
#include "time-util.h"

bool list_wait_first_start(const struct server *s) {
        return (s->state == SERVER_STARTING || server_waits_turn(s)) && !s->catalog.initialize;
}

bool list_wait_needed(const struct daemon *d) {
        const struct supervisor *sv = &d->supervisor;

        for (size_t i = 0; i < sv->n_servers; i++)
                if (list_wait_first_start(sv->servers[i]))
                        return true;
        return false;
}

bool list_wait_needed_by(struct client *c) {
        const struct supervisor *sv = &c->daemon->supervisor;

        for (size_t i = 0; i < sv->n_servers; i++) {
                const struct server *s = sv->servers[i];

                if (list_wait_first_start(s) && (s->owner.kind == OWNER_NONE || client_sees_server(c, s)))
                        return true;
        }
        return false;
}

bool list_waiters_has(const struct daemon *d, const struct client *c, enum catalog_kind kind) {
        const struct list_waiter *w;

        TAILQ_FOREACH(w, &d->list_waits.queue, entry)
                if (w->client == c && w->kind == (int)kind)
                        return true;
        return false;
}

static void waiter_free(struct list_waiter *w) {
        TAILQ_REMOVE(&w->daemon->list_waits.queue, w, entry);
        if (w->timer)
                event_free(w->timer);
        jsonrpc_msg_done(&w->msg);
        free(w);
}

/* The request is handled again by its method, which never holds it a second time; the
 * client's hold on it passes to whatever the method does now. */
static void resume(struct list_waiter *w) {
        struct list_waits *lw = &w->daemon->list_waits;
        struct jsonrpc_msg m = w->msg;
        struct client *c = w->client;
        list_wait_handler *handle = w->handle;

        w->msg = (struct jsonrpc_msg){ .kind = JSONRPC_INVALID };
        waiter_free(w);
        lw->resumed = &m;
        client_handle_held(c, handle, &m);
        lw->resumed = NULL;
        jsonrpc_msg_done(&m);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        resume(userdata);
}

bool list_waiters_hold(struct client *c, struct jsonrpc_msg *m, list_wait_handler *handle, list_wait_check *waits,
                       int kind) {
        struct daemon *d = c->daemon;
        struct timeval tv = timeval_from_seconds(d->config.list_wait);
        struct list_waiter *w;

        if (d->config.list_wait <= 0 || d->list_waits.resumed == m || !waits(c, m))
                return false;
        w = calloc(1, sizeof *w);
        if (w)
                w->timer = evtimer_new(d->base, on_deadline, w);
        if (!w || !w->timer) {
                free(w);
                return false; /* answered now, as if nothing were worth waiting for */
        }
        if (!client_hold_request(c, m->id)) {
                event_free(w->timer);
                free(w);
                return true;
        }
        *w = (struct list_waiter){ .daemon = d, .client = c, .msg = *m, .handle = handle, .waits = waits,
                                   .kind = kind, .timer = w->timer };
        json_object_get(m->root);
        TAILQ_INSERT_TAIL(&d->list_waits.queue, w, entry);
        evtimer_add(w->timer, &tv);
        return true;
}

void list_waiters_flush(struct daemon *d) {
        struct list_waiter *w, *next;

        /* Handling one adds no waiter (it is never held again) and frees none (clients are
         * freed after the loop iteration). */
        for (w = TAILQ_FIRST(&d->list_waits.queue); w; w = next) {
                next = TAILQ_NEXT(w, entry);
                if (!w->waits(w->client, &w->msg))
                        resume(w);
        }
}

void list_waiters_client_gone(struct daemon *d, struct client *c) {
        struct list_waiter *w, *next;

        for (w = TAILQ_FIRST(&d->list_waits.queue); w; w = next) {
                next = TAILQ_NEXT(w, entry);
                if (w->client == c)
                        waiter_free(w);
        }
}

void list_waiters_done(struct daemon *d) {
        struct list_waiter *w;

        while ((w = TAILQ_FIRST(&d->list_waits.queue)))
                waiter_free(w);
}
