/* Requests waiting for servers on their first start; see list-wait.h. */
#include "list-wait.h"

#include <event2/event.h>
#include <stdlib.h>

#include "client.h"
#include "config.h"
#include "daemon-handle.h"
#include "client-access.h"
#include "methods.h"
#include "server.h"
#include "supervisor.h"
#include "time-util.h"

bool list_wait_first_start(const struct server *s) {
        return (s->state == SERVER_STARTING || server_waits_turn(s)) && !s->catalog.initialize;
}

bool list_wait_needed(struct daemon *d) {
        const struct supervisor *sv = daemon_supervisor(d);

        for (size_t i = 0; i < sv->n_servers; i++)
                if (list_wait_first_start(sv->servers[i]))
                        return true;
        return false;
}

bool list_wait_needed_by(struct client *c) {
        const struct supervisor *sv = daemon_supervisor(c->daemon);

        for (size_t i = 0; i < sv->n_servers; i++) {
                const struct server *s = sv->servers[i];

                if (list_wait_first_start(s) && (s->owner.kind == OWNER_NONE || client_sees_server(c, s)))
                        return true;
        }
        return false;
}

bool list_waiters_has(const struct list_waits *lw, const struct client *c, enum catalog_kind kind) {
        const struct list_waiter *w;

        TAILQ_FOREACH(w, &lw->queue, entry)
                if (w->client == c && w->kind == (int)kind)
                        return true;
        return false;
}

static void waiter_free(struct list_waiter *w) {
        TAILQ_REMOVE(&w->list->queue, w, entry);
        if (w->timer)
                event_free(w->timer);
        jsonrpc_msg_done(&w->msg);
        free(w);
}

/* The request is handled again by its method, which never holds it a second time; the
 * client's hold on it passes to whatever the method does now. */
static void resume(struct list_waiter *w) {
        struct list_waits *lw = w->list;
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
        double wait = daemon_config(c->daemon)->list_wait;
        struct list_waits *lw = daemon_list_waits(c->daemon);
        struct timeval tv = timeval_from_seconds(wait);
        struct list_waiter *w;

        if (wait <= 0 || lw->resumed == m || !waits(c, m))
                return false;
        w = calloc(1, sizeof *w);
        if (w)
                w->timer = evtimer_new(daemon_event_base(c->daemon), on_deadline, w);
        if (!w || !w->timer) {
                free(w);
                return false; /* answered now, as if nothing were worth waiting for */
        }
        if (!client_hold_request(c, m->id)) {
                event_free(w->timer);
                free(w);
                return true;
        }
        *w = (struct list_waiter){ .list = lw, .client = c, .msg = *m, .handle = handle, .waits = waits,
                                   .kind = kind, .timer = w->timer };
        json_object_get(m->root);
        TAILQ_INSERT_TAIL(&lw->queue, w, entry);
        evtimer_add(w->timer, &tv);
        return true;
}

void list_waiters_flush(struct list_waits *lw) {
        struct list_waiter *w, *next;

        /* Handling one adds no waiter (it is never held again) and frees none (clients are
         * freed after the loop iteration). */
        for (w = TAILQ_FIRST(&lw->queue); w; w = next) {
                next = TAILQ_NEXT(w, entry);
                if (!w->waits(w->client, &w->msg))
                        resume(w);
        }
}

void list_waiters_client_gone(struct list_waits *lw, struct client *c) {
        struct list_waiter *w, *next;

        for (w = TAILQ_FIRST(&lw->queue); w; w = next) {
                next = TAILQ_NEXT(w, entry);
                if (w->client == c)
                        waiter_free(w);
        }
}

void list_waiters_done(struct list_waits *lw) {
        struct list_waiter *w;

        while ((w = TAILQ_FIRST(&lw->queue)))
                waiter_free(w);
}
