/* The MCP connection to a server process; see server-conn.h. */
#include "server-conn.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "server-config.h"
#include "server-transport.h"
#include "time-util.h"

/* Lines from a misbehaving server are logged up to this many, then only counted. */
#define CHILD_GARBAGE_LOGGED 10
/* Of a line over the size limit, the bytes searched for the id of the call it answers. */
#define CHILD_OVERSIZE_HEAD 4096

static void request_free(struct child *ch, struct child_request *rq) {
        TAILQ_REMOVE(&ch->pending, rq, entry);
        idmap_remove(&ch->by_id, rq->id);
        ch->n_pending--;
        if (rq->timer)
                event_free(rq->timer);
        free(rq);
}

static struct child_request *find_request(struct child *ch, int64_t id) {
        return idmap_get(&ch->by_id, id);
}

/* Removes the request before calling back, so the callback may send or cancel freely. */
static void complete(struct child *ch, struct child_request *rq, int status, json_object *result,
                     json_object *error) {
        child_reply_fn reply = rq->reply;
        void *userdata = rq->userdata;

        request_free(ch, rq);
        if (reply)
                reply(ch, status, result, error, userdata);
}

static void on_request_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct child_request *rq = userdata;

        complete(rq->child, rq, -ETIMEDOUT, NULL, NULL);
}

static void mark_broken(struct child *ch, const char *why, bool violation) {
        if (ch->broken)
                return;
        ch->broken = true;
        /* After a violation nothing more it writes can be used: a server blocked writing the
         * rest of a huge line gets EPIPE now, instead of SIGTERM after stopTimeout. */
        ch->transport->ops->stop_receiving(ch->transport, violation);
        if (ch->ops->broken)
                ch->ops->broken(ch, why, violation, ch->userdata);
}

static void handle_response(struct child *ch, struct jsonrpc_msg *m) {
        struct child_request *rq = NULL;

        if (json_object_is_type(m->id, json_type_int))
                rq = find_request(ch, json_object_get_int64(m->id));
        if (!rq) {
                /* Normal after a timeout or cancellation: the answer came too late. */
                log_emit(ch->log, LOG_DEBUG, &(struct log_subject){ .server = ch->name },
                         "dropped a response to request %s that is no longer pending",
                         m->id ? json_object_to_json_string(m->id) : "null");
                return;
        }
        complete(ch, rq, 0, m->result, m->error);
}

static void handle_garbage(struct child *ch, const char *line, size_t len, const char *why) {
        ch->garbage_lines++;
        if (ch->garbage_lines <= CHILD_GARBAGE_LOGGED)
                log_emit(ch->log, LOG_WARNING, &(struct log_subject){ .server = ch->name },
                         "server wrote something that is not MCP on stdout (%s): %.*s%s", why,
                         len > 200 ? 200 : (int)len, line, len > 200 ? "..." : "");
        if (ch->garbage_lines == CHILD_GARBAGE_LOGGED)
                log_emit(ch->log, LOG_WARNING, &(struct log_subject){ .server = ch->name },
                         "further non-MCP output from this server is only counted");
}

/* Ends a request whose answer came but cannot be passed on, with an error saying why. */
static void fail_request(struct child *ch, struct child_request *rq, const char *message) {
        json_object *error, *data;

        error = json_object_new_object();
        data = json_object_new_object();
        json_object_object_add(error, "code", json_object_new_int(JSONRPC_INTERNAL_ERROR));
        json_object_object_add(error, "message", jsonrpc_text(message));
        json_object_object_add(data, "server", jsonrpc_text(ch->name));
        json_object_object_add(error, "data", data);
        complete(ch, rq, 0, NULL, error);
        json_object_put(error);
}

/* A broken answer to a pending request still ends it, with an error: left pending, the
 * call would wait for an answer that has already come. So does an answer refused for its
 * text, whose id json-c could read: nothing of it reaches the client. */
static void handle_broken_response(struct child *ch, struct jsonrpc_msg *m) {
        struct child_request *rq = NULL;
        json_object *id = jsonrpc_answer_id(m);
        char message[256];

        if (json_object_is_type(id, json_type_int))
                rq = find_request(ch, json_object_get_int64(id));
        if (!rq)
                return;
        snprintf(message, sizeof message, "server '%s' answered with an invalid response: %s", ch->name,
                 m->error_message);
        fail_request(ch, rq, message);
}

/* A line over the limit, of which we have at least its first max_line bytes. When its head
 * names the call it answers, that call fails and the rest of the line is dropped. When it
 * does not, the server's output can no longer be matched to calls: a call would wait for an
 * answer that came, so the connection ends as a broken one. */
static void handle_oversize(struct child *ch, const char *head, size_t len) {
        struct child_request *rq;
        int64_t id;
        char message[256];

        if (!jsonrpc_scan_head_id(head, len < CHILD_OVERSIZE_HEAD ? len : CHILD_OVERSIZE_HEAD, &id)) {
                snprintf(message, sizeof message,
                         "wrote a line over maxServerMessageSize (%zu bytes) that names no call in its first %d bytes",
                         ch->max_line, CHILD_OVERSIZE_HEAD);
                mark_broken(ch, message, true);
                return;
        }
        snprintf(message, sizeof message,
                 "server '%s' answered with a message of more than %zu bytes (maxServerMessageSize); it was discarded",
                 ch->name, ch->max_line);
        log_emit(ch->log, LOG_WARNING, &(struct log_subject){ .server = ch->name },
                 "discarded its answer to request %" PRId64 ", over maxServerMessageSize (%zu bytes)", id,
                 ch->max_line);
        rq = find_request(ch, id);
        if (rq)
                fail_request(ch, rq, message);
}

/* A plain result for a request that takes its result as text goes on unparsed: parsing
 * it into a tree and writing it out again was most of the daemon's work per call. */
static bool handle_result_text(struct child *ch, const char *line, size_t len, const struct loan_offer *offer) {
        struct jsonrpc_result_text r;
        struct child_request *rq;
        child_result_text_fn result_text;
        void *userdata;

        if (!jsonrpc_scan_result(line, len, &r) || !(rq = find_request(ch, r.id)) || !rq->result_text)
                return false;
        result_text = rq->result_text;
        userdata = rq->userdata;
        request_free(ch, rq);
        result_text(ch, r.text, r.len, offer, userdata);
        return true;
}

static void process_line(struct child *ch, const char *line, size_t len, const struct loan_offer *offer) {
        struct jsonrpc_msg m;

        if (handle_result_text(ch, line, len, offer))
                return;
        jsonrpc_parse(ch->parser, line, len, &m);
        if (m.kind == JSONRPC_RESPONSE) {
                handle_response(ch, &m);
        } else if (m.kind == JSONRPC_INVALID) {
                handle_garbage(ch, line, len, m.error_message);
                if (jsonrpc_is_broken_response(&m) || m.refused_text)
                        handle_broken_response(ch, &m);
        } else if (ch->ops->message)
                ch->ops->message(ch, &m, ch->userdata);
        jsonrpc_msg_done(&m);
}

static void on_line(const char *line, size_t len, const struct loan_offer *offer, void *userdata) {
        process_line(userdata, line, len, offer);
}

static void on_oversize(const char *head, size_t len, void *userdata) {
        handle_oversize(userdata, head, len);
}

static void on_transport_broken(const char *why, void *userdata) {
        mark_broken(userdata, why, false);
}

/* A request whose answer came and went without its response: failed now, rather than
 * left to wait for what will not come. */
static void on_transport_unanswered(int64_t id, const char *what, void *userdata) {
        struct child *ch = userdata;
        struct child_request *rq = find_request(ch, id);
        char message[256];

        if (!rq)
                return;
        log_emit(ch->log, LOG_WARNING, &(struct log_subject){ .server = ch->name },
                 "request %" PRId64 " failed: the server answered it with %s", id, what);
        snprintf(message, sizeof message, "server '%s' answered the request with %s", ch->name, what);
        fail_request(ch, rq, message);
}

static const struct server_transport_events transport_events = {
        .line = on_line,
        .oversize = on_oversize,
        .broken = on_transport_broken,
        .unanswered = on_transport_unanswered,
};

struct child *child_new(struct event_base *base, struct server_transport *t, size_t max_line, const char *name,
                        const struct logger *log, struct jsonrpc_parser *parser, const struct child_ops *ops,
                        void *userdata) {
        struct child *ch = calloc(1, sizeof *ch);

        if (!ch) {
                t->ops->free(t);
                return NULL;
        }
        *ch = (struct child){ .base = base, .log = log, .name = name, .parser = parser, .transport = t,
                              .max_line = max_line, .next_id = 1, .ops = ops, .userdata = userdata };
        TAILQ_INIT(&ch->pending);
        idmap_init(&ch->by_id);
        server_transport_attach(t, &transport_events, ch);
        return ch;
}

void child_free(struct child *ch) {
        struct child_request *rq;

        if (!ch)
                return;
        ch->broken = true;
        while ((rq = TAILQ_FIRST(&ch->pending)))
                complete(ch, rq, -ECONNRESET, NULL, NULL);
        ch->transport->ops->free(ch->transport);
        idmap_done(&ch->by_id);
        json_object_put(ch->meta);
        free(ch);
}

void child_limit_input(struct child *ch, size_t limit, uint64_t stall_usec) {
        ch->input_limit = limit;
        ch->transport->ops->limit_input(ch->transport, limit, stall_usec);
}

size_t child_input_queued(const struct child *ch) {
        return ch->transport->ops->queued(ch->transport);
}

size_t child_input_limit(const struct child *ch) {
        return ch->input_limit;
}

int child_send(struct child *ch, json_object *msg) {
        struct iovec parts[2];
        int r;

        if (ch->broken)
                r = -EPIPE;
        else if (jsonrpc_line(msg, parts) < 0)
                r = -ENOMEM;
        else
                r = ch->transport->ops->send(ch->transport, parts, 2);
        json_object_put(msg);
        return r;
}

/* The request written from its parts (jsonrpc_request_line()), the envelope object only
 * for a method that is not plain text. Takes params. */
static int send_request_line(struct child *ch, int64_t id, const char *method, json_object *params) {
        char head[JSONRPC_REQUEST_HEAD_MAX];
        struct iovec parts[4];
        int r;

        if (ch->broken) {
                json_object_put(params);
                return -EPIPE;
        }
        r = jsonrpc_request_line(id, method, params, head, parts);
        if (r == -EINVAL)
                return child_send(ch, jsonrpc_request(id, method, params));
        r = r < 0 ? -ENOMEM : ch->transport->ops->send(ch->transport, parts, 4);
        json_object_put(params);
        return r;
}

void child_set_meta(struct child *ch, json_object *meta) {
        json_object_put(ch->meta);
        ch->meta = meta;
}

/* The modern era's per-request members of _meta (basic/index: "Per-request protocol
 * fields"). A legacy server gets none of them: its session said its version and our
 * capabilities once, at initialize, and a server speaking both eras would take a request
 * naming a modern version for a modern one. The era's other io.modelcontextprotocol/
 * members are kept: the legacy era has some of its own (related-task, ...). */
static const char *const modern_request_members[] = { META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES,
                                                      META_CLIENT_INFO, META_LOG_LEVEL, NULL };

static bool modern_request_member(const char *key) {
        for (const char *const *m = modern_request_members; *m; m++)
                if (strcmp(key, *m) == 0)
                        return true;
        return false;
}

static bool names_modern_member(json_object *meta) {
        if (!json_object_is_type(meta, json_type_object))
                return false;
        json_object_object_foreach(meta, key, value) {
                (void)value;
                if (modern_request_member(key))
                        return true;
        }
        return false;
}

/* A new object with params' members but _meta, whose value (borrowed) is put in *meta;
 * NULL when out of memory. */
static json_object *copy_but_meta(json_object *params, json_object **meta) {
        json_object *out = json_object_new_object();

        *meta = NULL;
        if (!out || !params)
                return out;
        json_object_object_foreach(params, key, value) {
                if (strcmp(key, "_meta") == 0)
                        *meta = value;
                else
                        json_object_object_add(out, key, json_object_get(value));
        }
        return out;
}

/* params (consumed) for a legacy server: the same object unless its _meta names the
 * modern era's members, else a copy without them (a client's own members, such as its
 * progressToken, kept). The caller's params and _meta may be shared (a client's request
 * forwarded as it came), so they are copied, never changed. NULL when out of memory. */
static json_object *legacy_params(json_object *params) {
        json_object *out, *old, *kept;

        if (!json_object_is_type(params, json_type_object) || !json_object_object_get_ex(params, "_meta", &old) ||
            !names_modern_member(old))
                return params;
        out = copy_but_meta(params, &old);
        kept = json_object_new_object();
        if (!out || !kept) {
                json_object_put(out);
                json_object_put(kept);
                json_object_put(params);
                return NULL;
        }
        json_object_object_foreach(old, key, value)
                if (!modern_request_member(key))
                        json_object_object_add(kept, key, json_object_get(value));
        if (json_object_object_length(kept) > 0)
                json_object_object_add(out, "_meta", kept);
        else
                json_object_put(kept);
        json_object_put(params);
        return out;
}

/* What our client capabilities (an object, borrowed) become for a request made for a
 * caller declaring caps: the capabilities the caller cannot answer left out, so that the
 * server asks only what reaches someone who can. A new reference; NULL when out of memory. */
static json_object *offered_to(json_object *ours, unsigned caps) {
        json_object *out;
        bool all = true;

        for (int i = 0; i < CLIENT_CAP_COUNT; i++)
                if (!(caps & (1u << i)) && json_object_object_get_ex(ours, client_capability_names[i], NULL))
                        all = false;
        if (all)
                return json_object_get(ours);
        out = json_object_new_object();
        if (!out)
                return NULL;
        json_object_object_foreach(ours, key, value) {
                int cap = client_capability_of(key);

                if (cap < 0 || (caps & (1u << cap)))
                        json_object_object_add(out, key, json_object_get(value));
        }
        return out;
}

/* params (consumed) for a modern server, as a new object: the connection's meta merged
 * into its _meta, over the request's own members (a client's progressToken is kept; the
 * era's own members are ours), our capabilities cut to caps. Params that are no object
 * (absent params become one) go as they are. NULL when out of memory. */
static json_object *modern_params(const struct child *ch, json_object *params, unsigned caps) {
        json_object *out, *meta, *old = NULL;

        if (params && !json_object_is_type(params, json_type_object))
                return params;
        out = copy_but_meta(params, &old);
        meta = json_object_new_object();
        if (!out || !meta) {
                json_object_put(out);
                json_object_put(meta);
                json_object_put(params);
                return NULL;
        }
        if (json_object_is_type(old, json_type_object)) {
                json_object_object_foreach(old, key, value)
                        json_object_object_add(meta, key, json_object_get(value));
        }
        json_object_object_foreach(ch->meta, key, value) {
                json_object *v = strcmp(key, META_CLIENT_CAPABILITIES) == 0 && json_object_is_type(value, json_type_object)
                                         ? offered_to(value, caps)
                                         : json_object_get(value);

                if (!v) {
                        json_object_put(out);
                        json_object_put(meta);
                        json_object_put(params);
                        return NULL;
                }
                json_object_object_add(meta, key, v);
        }
        json_object_object_add(out, "_meta", meta);
        json_object_put(params);
        return out;
}

/* params (consumed) as a request to this server carries them, whichever era its client
 * speaks: the server's era decides, here, for every request written toward it. */
static json_object *params_for_server(const struct child *ch, json_object *params, unsigned caps) {
        return ch->meta ? modern_params(ch, params, caps) : legacy_params(params);
}

static int64_t send_request(struct child *ch, const char *method, json_object *params, unsigned caps,
                            uint64_t timeout_usec, child_reply_fn reply, child_result_text_fn result_text,
                            void *userdata) {
        bool had_params = params != NULL;
        struct child_request *rq = calloc(1, sizeof *rq);
        int r;

        params = params_for_server(ch, params, caps);
        if (!rq || ((ch->meta || had_params) && !params)) {
                free(rq);
                json_object_put(params);
                return -ENOMEM;
        }
        *rq = (struct child_request){ .child = ch, .id = ch->next_id++, .reply = reply, .result_text = result_text,
                                      .userdata = userdata };
        r = send_request_line(ch, rq->id, method, params);
        if (r == 0 && timeout_usec > 0) {
                struct timeval tv = timeval_from_usec(timeout_usec);
                rq->timer = evtimer_new(ch->base, on_request_timeout, rq);
                if (!rq->timer || evtimer_add(rq->timer, &tv) < 0)
                        r = -ENOMEM;
        }
        if (r == 0)
                r = idmap_put(&ch->by_id, rq->id, rq);
        if (r < 0) {
                if (rq->timer)
                        event_free(rq->timer);
                free(rq);
                return r;
        }
        TAILQ_INSERT_TAIL(&ch->pending, rq, entry);
        ch->n_pending++;
        return rq->id;
}

int64_t child_request(struct child *ch, const char *method, json_object *params, uint64_t timeout_usec,
                      child_reply_fn reply, void *userdata) {
        return send_request(ch, method, params, CHILD_CAPS_OURS, timeout_usec, reply, NULL, userdata);
}

int64_t child_request_result_text(struct child *ch, const char *method, json_object *params, child_reply_fn reply,
                                  child_result_text_fn result_text, void *userdata) {
        return send_request(ch, method, params, CHILD_CAPS_OURS, 0, reply, result_text, userdata);
}

int64_t child_forward(struct child *ch, const char *method, json_object *params, unsigned caps, child_reply_fn reply,
                      child_result_text_fn result_text, void *userdata) {
        return send_request(ch, method, params, caps, 0, reply, result_text, userdata);
}

int64_t child_related(const struct child *ch) {
        return ch->transport->related;
}

void child_cancel_request(struct child *ch, int64_t id) {
        struct child_request *rq = find_request(ch, id);

        if (rq)
                request_free(ch, rq);
}

int child_notify(struct child *ch, const char *method, json_object *params) {
        return child_send(ch, jsonrpc_notification(method, params));
}

void child_close_input(struct child *ch) {
        ch->transport->ops->close_input(ch->transport);
}
