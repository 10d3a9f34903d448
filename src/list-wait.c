/* List requests waiting for servers on their first start; see list-wait.h. */
#include "list-wait.h"

#include <event2/event.h>
#include <stdlib.h>

#include "client.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "methods.h"
#include "time-util.h"

bool list_wait_needed(const struct daemon *d) {
        const struct supervisor *sv = &d->supervisor;

        for (size_t i = 0; i < sv->n_servers; i++) {
                const struct server *s = sv->servers[i];
                if ((s->state == SERVER_STARTING || server_waits_turn(s)) && !s->catalog.initialize)
                        return true;
        }
        return false;
}

bool list_waiters_has(const struct daemon *d, const struct client *c, enum catalog_kind kind) {
        const struct list_waiter *w;

        TAILQ_FOREACH(w, &d->list_waiters, entry)
                if (w->client == c && w->kind == kind)
                        return true;
        return false;
}

static void waiter_free(struct list_waiter *w) {
        TAILQ_REMOVE(&w->daemon->list_waiters, w, entry);
        if (w->timer)
                event_free(w->timer);
        json_object_put(w->id);
        json_object_put(w->params);
        free(w);
}

static void answer(struct list_waiter *w) {
        struct client *c = w->client;

        method_list_answer(c, w->id, w->params, w->kind);
        waiter_free(w);
        client_request_done(c);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        answer(userdata);
}

void list_waiters_add(struct daemon *d, struct client *c, struct jsonrpc_msg *m, enum catalog_kind kind) {
        struct list_waiter *w;
        struct timeval tv = timeval_from_seconds(d->config.list_wait);

        if (!client_hold_request(c, m->id))
                return;
        w = calloc(1, sizeof *w);
        if (w)
                w->timer = evtimer_new(d->base, on_deadline, w);
        if (!w || !w->timer) {
                free(w);
                method_list_answer(c, m->id, m->params, kind);
                client_request_done(c);
                return;
        }
        w->daemon = d;
        w->client = c;
        w->id = json_object_get(m->id);
        w->params = json_object_get(m->params);
        w->kind = kind;
        TAILQ_INSERT_TAIL(&d->list_waiters, w, entry);
        evtimer_add(w->timer, &tv);
}

void list_waiters_flush(struct daemon *d, bool all) {
        struct list_waiter *w;

        if (!all && list_wait_needed(d))
                return;
        while ((w = TAILQ_FIRST(&d->list_waiters)))
                answer(w);
}

void list_waiters_client_gone(struct daemon *d, struct client *c) {
        struct list_waiter *w, *next;

        for (w = TAILQ_FIRST(&d->list_waiters); w; w = next) {
                next = TAILQ_NEXT(w, entry);
                if (w->client == c)
                        waiter_free(w);
        }
}

void list_waiters_done(struct daemon *d) {
        struct list_waiter *w;

        while ((w = TAILQ_FIRST(&d->list_waiters)))
                waiter_free(w);
}
