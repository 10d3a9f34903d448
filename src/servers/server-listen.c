/* The daemon's subscriptions/listen at a modern server; see server-listen.h. */
#include "server-listen.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "server-conn.h"
#include "time-util.h"

/* A listen that ended sooner than this after it opened is opened again this much later, so
 * that a server ending each at once is asked once a second, not in a loop. */
#define LISTEN_SHORT_USEC (1 * USEC_PER_SEC)

static void set_state(struct server_listen *l, enum listen_state state) {
        l->state = state;
        if (state != LISTEN_WAITING && l->timer)
                evtimer_del(l->timer);
}

static void arm(struct server_listen *l, uint64_t delay_usec) {
        struct timeval tv = timeval_from_usec(delay_usec);

        set_state(l, LISTEN_WAITING);
        evtimer_add(l->timer, &tv);
}

/* The open request forgotten here and given up at the server. */
static void cancel_request(struct server_listen *l) {
        json_object *params;

        if (l->request <= 0 || !l->child)
                return;
        child_cancel_request(l->child, l->request);
        params = json_object_new_object();
        json_object_object_add(params, "requestId", json_object_new_int64(l->request));
        json_object_object_add(params, "reason", json_object_new_string("the daemon's subscriptions changed"));
        (void)child_notify(l->child, "notifications/cancelled", params);
        l->request = 0;
}

static void on_ended(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct server_listen *l = userdata;
        uint64_t lasted = now_usec() - l->opened_at;

        l->request = 0;
        if (status < 0 || ch != l->child) { /* the connection ended: so did the run */
                set_state(l, LISTEN_STOPPED);
                return;
        }
        if (error) {
                json_object *message = NULL;
                json_object_object_get_ex(error, "message", &message);
                if (!l->acknowledged) { /* a refusal: asking again would be refused again */
                        log_emit(l->log, LOG_WARNING, &(struct log_subject){ .server = l->name },
                                 "refused subscriptions/listen (%.200s): its list changes and resource updates are not "
                                 "heard until it restarts",
                                 message ? json_object_get_string(message) : "an error");
                        set_state(l, LISTEN_REFUSED);
                        return;
                }
                /* one it took, then dropped (its stream cut, say): listened to again */
                log_emit(l->log, LOG_INFO, &(struct log_subject){ .server = l->name },
                         "its subscriptions/listen ended with an error after %llu ms (%.200s); listening again",
                         (unsigned long long)(lasted / 1000), message ? json_object_get_string(message) : "an error");
        } else {
                log_emit(l->log, LOG_DEBUG, &(struct log_subject){ .server = l->name },
                         "ended subscriptions/listen after %llu ms; listening again", (unsigned long long)(lasted / 1000));
        }
        arm(l, lasted < LISTEN_SHORT_USEC ? LISTEN_SHORT_USEC : 0);
}

static json_object *filter(const struct server_listen *l) {
        json_object *f = json_object_new_object(), *uris;

        if (l->lists & LISTEN_TOOLS)
                json_object_object_add(f, "toolsListChanged", json_object_new_boolean(true));
        if (l->lists & LISTEN_PROMPTS)
                json_object_object_add(f, "promptsListChanged", json_object_new_boolean(true));
        if (l->lists & LISTEN_RESOURCES)
                json_object_object_add(f, "resourcesListChanged", json_object_new_boolean(true));
        if (l->n_uris > 0) {
                uris = json_object_new_array_ext((int)l->n_uris);
                for (size_t i = 0; i < l->n_uris; i++)
                        json_object_array_add(uris, json_object_new_string(l->uris[i]));
                json_object_object_add(f, "resourceSubscriptions", uris);
        }
        return f;
}

/* The new listen first, then the old one cancelled: an update in between reaches one. */
static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct server_listen *l = userdata;
        json_object *params;
        int64_t id;

        if (l->state != LISTEN_WAITING || !l->child)
                return;
        if (!l->lists && l->n_uris == 0) { /* nothing to hear of */
                cancel_request(l);
                set_state(l, LISTEN_IDLE);
                return;
        }
        params = json_object_new_object();
        json_object_object_add(params, "notifications", filter(l));
        id = child_request(l->child, "subscriptions/listen", params, 0, on_ended, l);
        if (id < 0) {
                log_emit(l->log, LOG_WARNING, &(struct log_subject){ .server = l->name },
                         "cannot send subscriptions/listen: %s; trying again in a second", strerror((int)-id));
                arm(l, LISTEN_SHORT_USEC);
                return;
        }
        cancel_request(l);
        l->request = id;
        l->opened_at = now_usec();
        l->acknowledged = false;
        set_state(l, LISTEN_OPEN);
}

int server_listen_init(struct server_listen *l, struct event_base *base, const struct logger *log) {
        *l = (struct server_listen){ .state = LISTEN_STOPPED, .log = log };
        l->timer = evtimer_new(base, on_timer, l);
        return l->timer ? 0 : -ENOMEM;
}

static void forget_uris(struct server_listen *l) {
        for (size_t i = 0; i < l->n_uris; i++)
                free(l->uris[i]);
        l->n_uris = 0;
}

void server_listen_done(struct server_listen *l) {
        server_listen_stop(l);
        free(l->uris);
        l->uris = NULL;
        l->cap_uris = 0;
        if (l->timer)
                event_free(l->timer);
        l->timer = NULL;
}

void server_listen_start(struct server_listen *l, struct child *ch, const char *name, unsigned lists) {
        server_listen_stop(l);
        l->child = ch;
        l->name = name;
        l->lists = lists;
        arm(l, 0);
}

void server_listen_stop(struct server_listen *l) {
        cancel_request(l);
        l->child = NULL;
        l->lists = 0;
        forget_uris(l);
        set_state(l, LISTEN_STOPPED);
}

static ssize_t find_uri(const struct server_listen *l, const char *uri) {
        for (size_t i = 0; i < l->n_uris; i++)
                if (strcmp(l->uris[i], uri) == 0)
                        return (ssize_t)i;
        return -1;
}

int server_listen_uri(struct server_listen *l, const char *uri, bool on) {
        ssize_t at = find_uri(l, uri);

        if (on == (at >= 0))
                return 0;
        if (on) {
                if (l->n_uris == l->cap_uris) {
                        size_t cap = l->cap_uris ? l->cap_uris * 2 : 4;
                        char **v = realloc(l->uris, cap * sizeof *v);
                        if (!v)
                                return -ENOMEM;
                        l->uris = v;
                        l->cap_uris = cap;
                }
                if (!(l->uris[l->n_uris] = strdup(uri)))
                        return -ENOMEM;
                l->n_uris++;
        } else {
                free(l->uris[at]);
                memmove(&l->uris[at], &l->uris[at + 1], (l->n_uris - (size_t)at - 1) * sizeof *l->uris);
                l->n_uris--;
        }
        if (l->state == LISTEN_OPEN || l->state == LISTEN_IDLE)
                arm(l, 0);
        return 0;
}

bool server_listen_notification(struct server_listen *l, struct jsonrpc_msg *m) {
        json_object *meta, *id;
        int64_t listen = 0;

        /* the listen's id is the daemon's affair with the server: no client hears it */
        if (json_object_is_type(m->params, json_type_object) && json_object_object_get_ex(m->params, "_meta", &meta) &&
            json_object_is_type(meta, json_type_object)) {
                if (json_object_object_get_ex(meta, META_SUBSCRIPTION_ID, &id) && json_object_is_type(id, json_type_int))
                        listen = json_object_get_int64(id);
                json_object_object_del(meta, META_SUBSCRIPTION_ID);
                if (json_object_object_length(meta) == 0)
                        json_object_object_del(m->params, "_meta");
        }
        if (strcmp(m->method, "notifications/subscriptions/acknowledged") != 0)
                return false;
        /* a replaced listen's may come late: only the open one's counts */
        if (listen == 0 || listen != l->request)
                return true;
        l->acknowledged = true;
        log_emit(l->log, LOG_DEBUG, &(struct log_subject){ .server = l->name }, "acknowledged subscriptions/listen: %s",
                 m->params ? json_object_to_json_string_ext(m->params, JSON_C_TO_STRING_PLAIN) : "{}");
        return true;
}
