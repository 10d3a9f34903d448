/* Client connections; see client.h. */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "audit.h"
#include "client-access.h"
#include "daemon.h"
#include "json-scan.h"
#include "jsonrpc.h"
#include "log.h"
#include "time-util.h"

static const char *const state_names[] = {
        [CLIENT_ACTIVE] = "active",
        [CLIENT_DRAINING] = "draining",
        [CLIENT_JUSTFREE] = "justfree",
};

const char *client_state_name(enum client_state state) {
        return state_names[state];
}

void client_set_state(struct client *c, enum client_state state) {
        struct daemon *d = c->daemon;

        if (c->state == state)
                return;
        TAILQ_REMOVE(&d->clients[c->state], c, entry);
        d->client_count[c->state]--;
        c->state = state;
        TAILQ_INSERT_TAIL(&d->clients[state], c, entry);
        d->client_count[state]++;
        if (state == CLIENT_JUSTFREE)
                c->ops->stop(c);
        daemon_clients_changed(d);
}

void client_log(struct client *c, int priority, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int r;

        if (priority > c->daemon->log.max_priority)
                return;
        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r >= 0)
                log_emit(&c->daemon->log, priority, &(struct log_subject){ .client = c->id }, "%s", text);
}

static size_t unsent(struct client *c) {
        return c->ops->unsent(c);
}

/* A draining client closes once nothing is owed to it any more. */
static void maybe_finish(struct client *c) {
        if (c->state == CLIENT_DRAINING && c->pending == 0 && unsent(c) == 0)
                client_set_state(c, CLIENT_JUSTFREE);
}

bool client_hold_request(struct client *c, json_object *id) {
        unsigned limit = c->daemon->config.max_in_flight;
        json_object *data;
        char message[128];

        if (c->pending < limit) {
                c->pending++;
                c->held++;
                return true;
        }
        if (!c->told_in_flight) /* once: a client past it may send thousands */
                client_log(c, LOG_WARNING, "client reached maxInFlight (%u requests held); refusing more until some are answered",
                           limit);
        c->told_in_flight = true;
        snprintf(message, sizeof message, "too many requests in flight (maxInFlight %u); wait for answers before sending more",
                 limit);
        data = json_object_new_object();
        json_object_object_add(data, "maxInFlight", json_object_new_int64(limit));
        client_reply_error(c, id, JSONRPC_INTERNAL_ERROR, message, data);
        return false;
}

void client_request_done(struct client *c) {
        if (c->pending > 0)
                c->pending--;
        maybe_finish(c);
}

/* After a message: a client that does not read is dropped; a draining one whose last
 * answer went out at once is done. */
static void after_send(struct client *c, int r) {
        size_t limit = c->daemon->config.client_output_limit;

        if (r < 0) {
                /* Part of the line may have gone out: what follows would corrupt it. */
                client_log(c, LOG_ERR, "out of memory queueing a message; disconnecting");
                client_set_state(c, CLIENT_JUSTFREE);
                return;
        }
        if (unsent(c) > limit) {
                client_log(c, LOG_WARNING, "client is not reading its replies (%zu bytes unsent, limit %zu); disconnecting",
                           unsent(c), limit);
                client_set_state(c, CLIENT_JUSTFREE);
        }
        maybe_finish(c);
}

void client_output_added(struct client *c) {
        if (c->state != CLIENT_JUSTFREE)
                after_send(c, 0);
}

/* Whether msg is a response; *id is then the id it answers (NULL for JSON's null). */
static bool is_response(json_object *msg, json_object **id) {
        *id = NULL;
        return !json_object_object_get_ex(msg, "method", NULL) && json_object_object_get_ex(msg, "id", id);
}

/* A result the daemon built (or parsed from a server) to a modern client says its type. */
static void type_result(const struct client *c, json_object *msg) {
        json_object *result;

        if (session_stateless(&c->session) && json_object_object_get_ex(msg, "result", &result) &&
            json_object_is_type(result, json_type_object) && !json_object_object_get_ex(result, "resultType", NULL))
                json_object_object_add(result, "resultType", json_object_new_string("complete"));
}

void client_send_related(struct client *c, json_object *msg, json_object *related) {
        struct iovec parts[2];
        json_object *id;
        bool response;
        int r;

        if (c->state == CLIENT_JUSTFREE) {
                json_object_put(msg);
                return;
        }
        response = is_response(msg, &id);
        if (!response)
                id = related;
        else
                type_result(c, msg);
        r = jsonrpc_line(msg, parts);
        if (r >= 0)
                r = c->ops->send(c, parts, 2, response, id, NULL);
        json_object_put(msg);
        after_send(c, r);
}

void client_send(struct client *c, json_object *msg) {
        client_send_related(c, msg, NULL);
}

/* A modern client's results say their type (the specification: a 2026-07-28 result without
 * one is invalid), and a cacheable one its caching hints (client_cache_scope()); a legacy
 * server's never do. Where result (an object's text) lacks them, parts[3] becomes three:
 * its opening brace and what it lacks (written into head, of size), a comma when more
 * follows, and the rest of it, so that nothing of it is copied. How many parts there are now. */
static size_t typed_result(const struct client *c, bool cacheable, struct iovec parts[7], char *head, size_t size) {
        static const char *const names[] = { "resultType", "ttlMs", "cacheScope" };
        const char *text = parts[3].iov_base, *end = text + parts[3].iov_len, *brace, *next;
        struct json_member m[3];
        size_t len;

        if (!session_stateless(&c->session) || json_scan_members(text, parts[3].iov_len, JSONRPC_MAX_DEPTH, names, 3, m) < 0)
                return 5;
        cacheable = cacheable && m[1].count == 0 && m[2].count == 0;
        if (m[0].count > 0 && !cacheable)
                return 5;
        len = (size_t)snprintf(head, size, "{%s", m[0].count ? "" : "\"resultType\":\"complete\"");
        if (cacheable)
                len += (size_t)snprintf(head + len, size - len, "%s\"ttlMs\":%d,\"cacheScope\":\"%s\"", m[0].count ? "" : ",",
                                        CLIENT_CACHE_TTL_MS, client_cache_scope(c));
        for (brace = text; brace < end && *brace != '{'; brace++)
                ;
        for (next = brace + 1; next < end && strchr(" \t\r\n", *next); next++)
                ;
        parts[6] = parts[4];
        parts[5] = (struct iovec){ (void *)(brace + 1), (size_t)(end - brace - 1) };
        parts[4] = (struct iovec){ (void *)",", *next == '}' ? 0 : 1 };
        parts[3] = (struct iovec){ head, len };
        return 7;
}

void client_send_result_text(struct client *c, json_object *id, const char *result, size_t len, bool cacheable,
                             const struct loan_offer *offer) {
        struct iovec parts[7];
        char head[128];
        int r;

        if (c->state == CLIENT_JUSTFREE)
                return;
        r = jsonrpc_result_text_line(id, result, len, parts);
        if (r >= 0)
                r = c->ops->send(c, parts, typed_result(c, cacheable, parts, head, sizeof head), true, id, offer);
        after_send(c, r);
}

void client_reply_result(struct client *c, json_object *id, json_object *result) {
        client_send(c, jsonrpc_result(id, result));
}

void client_reply_error(struct client *c, json_object *id, int code, const char *message, json_object *data) {
        client_send(c, jsonrpc_error(id, code, message, data));
}

void client_receive_oversize(struct client *c, size_t max) {
        char msg[160];

        snprintf(msg, sizeof msg, "Invalid Request: message exceeds the %zu-byte line limit and was discarded", max);
        client_log(c, LOG_NOTICE, "discarded a message over the %zu-byte line limit", max);
        client_reply_error(c, NULL, JSONRPC_INVALID_REQUEST, msg, NULL);
}

void client_handle(struct client *c, struct jsonrpc_msg *m) {
        if (c->state == CLIENT_JUSTFREE)
                return;
        c->active_at = now_usec();
        session_handle(c, m);
}

void client_handle_held(struct client *c, void (*handle)(struct client *c, struct jsonrpc_msg *m), struct jsonrpc_msg *m) {
        if (c->state == CLIENT_JUSTFREE)
                return;
        /* The hold passes to what handle does now (a forward holds it again), so a client
         * at maxInFlight is not refused its own request, and a draining one stays until
         * it is answered. */
        if (c->pending > 0)
                c->pending--;
        handle(c, m);
        maybe_finish(c);
}

void client_receive(struct client *c, const char *data, size_t len) {
        struct jsonrpc_msg m;

        if (c->state == CLIENT_JUSTFREE)
                return;
        jsonrpc_parse(&c->daemon->parser, data, len, &m);
        client_handle(c, &m);
        jsonrpc_msg_done(&m);
}

void client_drain(struct client *c) {
        if (c->state != CLIENT_ACTIVE)
                return;
        c->ops->stop_reading(c);
        client_set_state(c, CLIENT_DRAINING);
        /* It can no longer answer what servers asked of it: the daemon tells them. */
        daemon_client_draining(c->daemon, c);
        maybe_finish(c);
}

void client_end_of_input(struct client *c, bool peer_gone) {
        if (c->state == CLIENT_JUSTFREE)
                return;
        if ((c->pending == 0 && unsent(c) == 0) || peer_gone) {
                /* Nobody to answer: its calls are cancelled downstream now, not when an
                 * answer finally fails to be written. */
                client_log(c, LOG_DEBUG, "connection closed by the client");
                client_set_state(c, CLIENT_JUSTFREE);
                return;
        }
        /* Half-close: the peer sent all it will; answer it, then close. */
        client_log(c, LOG_DEBUG, "end of input");
        client_drain(c);
}

static void dequeue_end(struct client *c) {
        if (!c->end_queued)
                return;
        TAILQ_REMOVE(&c->daemon->clients_ended, c, end_entry);
        c->end_queued = false;
}

void client_queue_end(struct client *c) {
        if (c->end_queued)
                return;
        c->end_queued = true;
        TAILQ_INSERT_TAIL(&c->daemon->clients_ended, c, end_entry);
}

void client_read_end(struct client *c) {
        dequeue_end(c);
        if (c->state == CLIENT_ACTIVE && c->ops->read_end)
                c->ops->read_end(c);
}

void client_output_flushed(struct client *c) {
        maybe_finish(c);
}

struct client_peer client_peer(const struct client *c) {
        struct client_peer p = { 0 };

        if (c->ops->peer)
                c->ops->peer(c, &p);
        return p;
}

const char *client_name(const struct client *c) {
        return c->session.client_name;
}

const char *client_version(const struct client *c) {
        return c->session.client_version;
}

void client_audit_subject(const struct client *c, struct audit_record *r) {
        struct client_peer peer = client_peer(c);

        r->client = c->id;
        r->uid = c->principal.uid;
        r->pid = c->principal.pid;
        r->token = peer.token;
        r->remote = peer.remote;
        r->client_name = client_name(c);
}

void client_set_principal(struct client *c, struct principal *p) {
        principal_done(&c->principal);
        c->principal = *p;
        *p = (struct principal){ 0 };
}

int client_life_priority(const struct client *c) {
        return c->ops->life_priority ? c->ops->life_priority(c) : LOG_INFO;
}

static void log_connected(struct client *c) {
        const struct principal *p = &c->principal;
        struct client_peer peer = client_peer(c);

        if (peer.remote) {
                client_log(c, client_life_priority(c), "MCP client connected (from %s%s%s, uid %u%s%s%s, gid %u) over %s", peer.remote,
                           peer.token ? " with the token of " : "", peer.token ?: "", (unsigned)p->uid, p->user ? " (" : "",
                           p->user ?: "", p->user ? ")" : "", (unsigned)p->gid, c->ops->name);
                return;
        }
        client_log(c, client_life_priority(c), "%s client connected (pid %d, command %s, uid %u%s%s%s, gid %u) over %s",
                   c->role == LISTEN_CONTROL ? "control" : "MCP", (int)p->pid, p->comm[0] ? p->comm : "unknown",
                   (unsigned)p->uid, p->user ? " (" : "", p->user ?: "", p->user ? ")" : "", (unsigned)p->gid,
                   c->ops->name);
}

struct client *client_new(struct daemon *d, enum listen_role role, const struct client_transport_ops *ops,
                          void *transport, struct principal *principal) {
        struct client *c = calloc(1, sizeof *c);

        if (!c)
                return NULL;
        c->daemon = d;
        c->id = ++d->next_client_id;
        c->role = role;
        c->ops = ops;
        c->transport = transport;
        c->principal = *principal;
        *principal = (struct principal){ 0 };
        c->connected_at = now_usec();
        c->active_at = c->connected_at;
        c->state = CLIENT_ACTIVE;
        session_init(&c->session);
        TAILQ_INIT(&c->routes);
        TAILQ_INSERT_TAIL(&d->clients[CLIENT_ACTIVE], c, entry);
        d->client_count[CLIENT_ACTIVE]++;
        log_connected(c);
        daemon_clients_changed(d);
        return c;
}

unsigned client_in_flight(const struct client *c) {
        return c->pending;
}

uint64_t client_requests_held(const struct client *c) {
        return c->held;
}

const struct principal *client_principal(const struct client *c) {
        return &c->principal;
}

void client_access_who(const struct client *c, struct access_who *ret) {
        *ret = (struct access_who){
                .uid = c->principal.uid,
                .gid = c->principal.gid,
                .groups = c->principal.groups,
                .n_groups = c->principal.n_groups,
                .profile = NULL, /* the principal only: the profile it chose is client-access.c's, which
                                  * sets it where a decision needs it (compute_class()) */
        };
}

void client_free(struct client *c) {
        struct daemon *d;

        if (!c)
                return;
        d = c->daemon;
        TAILQ_REMOVE(&d->clients[c->state], c, entry);
        d->client_count[c->state]--;
        dequeue_end(c);
        session_done(&c->session);
        client_access_done(&c->access);
        principal_done(&c->principal);
        c->ops->free(c);
        free(c);
}
