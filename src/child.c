/* The MCP connection to a server process; see child.h. */
#include "child.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"
#include "write-now.h"

/* Lines from a misbehaving server are logged up to this many, then only counted. */
#define CHILD_GARBAGE_LOGGED 10
/* A large request goes out in few writes (bufferevent's default is 16 KiB a write). */
#define CHILD_WRITE_CHUNK (256 * 1024)
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
        event_del(ch->from);
        if (violation) {
                /* Nothing more it writes can be used: a server blocked writing the rest of
                 * a huge line gets EPIPE now, instead of SIGTERM after stopTimeout. */
                close(ch->from_fd);
                ch->from_fd = -1;
        }
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
                         ch->framer.max_line, CHILD_OVERSIZE_HEAD);
                mark_broken(ch, message, true);
                return;
        }
        snprintf(message, sizeof message,
                 "server '%s' answered with a message of more than %zu bytes (maxServerMessageSize); it was discarded",
                 ch->name, ch->framer.max_line);
        log_emit(ch->log, LOG_WARNING, &(struct log_subject){ .server = ch->name },
                 "discarded its answer to request %" PRId64 ", over maxServerMessageSize (%zu bytes)", id,
                 ch->framer.max_line);
        rq = find_request(ch, id);
        if (rq)
                fail_request(ch, rq, message);
}

/* A plain result for a request that takes its result as text goes on unparsed: parsing
 * it into a tree and writing it out again was most of the daemon's work per call. */
static bool handle_result_text(struct child *ch, const char *line, size_t len) {
        struct jsonrpc_result_text r;
        struct child_request *rq;
        child_result_text_fn result_text;
        void *userdata;

        if (!jsonrpc_scan_result(line, len, &r) || !(rq = find_request(ch, r.id)) || !rq->result_text)
                return false;
        result_text = rq->result_text;
        userdata = rq->userdata;
        request_free(ch, rq);
        result_text(ch, r.text, r.len, userdata);
        return true;
}

static void process_line(struct child *ch, const char *line, size_t len) {
        struct jsonrpc_msg m;

        if (handle_result_text(ch, line, len))
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

static void process_input(struct child *ch, bool at_eof) {
        struct frame fr;
        enum frame_kind kind;

        while (!ch->broken && (kind = framer_next(&ch->framer, NULL, at_eof, &fr)) != FRAME_NONE) {
                if (kind == FRAME_OVERSIZE) {
                        handle_oversize(ch, fr.data, fr.len);
                        framer_consume(&ch->framer, &fr);
                        continue;
                }
                process_line(ch, fr.data, fr.len);
                framer_consume(&ch->framer, &fr);
        }
}

static void on_from_readable(evutil_socket_t fd, short what, void *userdata) {
        struct child *ch = userdata;
        ssize_t n = framer_read(&ch->framer, fd);

        if (n > 0) {
                process_input(ch, false);
        } else if (n == 0) {
                process_input(ch, true);
                mark_broken(ch, "closed its stdout", false);
        } else if (n != -EAGAIN && n != -EINTR) {
                mark_broken(ch, n == -ENOMEM ? "out of memory reading its stdout" : "stdout read error", false);
        }
}

static void shut_input(struct child *ch) {
        evutil_socket_t fd = bufferevent_getfd(ch->to);

        /* Closing our end is the EOF the server sees on its stdin. setfd does not close. */
        bufferevent_disable(ch->to, EV_WRITE);
        bufferevent_setfd(ch->to, -1);
        if (fd >= 0)
                close(fd);
}

static void on_to_write(struct bufferevent *bev, void *userdata) {
        struct child *ch = userdata;

        if (ch->input_closed)
                shut_input(ch);
}

/* The bufferevent keeps its output's front frozen, so thaw it for the drain. */
static void drop_input(struct child *ch) {
        struct evbuffer *out = bufferevent_get_output(ch->to);

        evbuffer_unfreeze(out, 1);
        evbuffer_drain(out, evbuffer_get_length(out));
        evbuffer_freeze(out, 1);
}

static void on_to_event(struct bufferevent *bev, short what, void *userdata) {
        struct child *ch = userdata;

        if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
                /* EPIPE: nobody reads the server's stdin any more; drop what cannot be sent. */
                drop_input(ch);
                if (!ch->input_closed)
                        mark_broken(ch, "stopped reading its stdin", false);
        }
}

static void on_input_taken(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *userdata) {
        struct child *ch = userdata;

        if (info->n_deleted == 0)
                return;
        ch->input_progress = now_usec();
        if (evbuffer_get_length(buf) == 0)
                ch->input_full = false;
}

static void arm_stall(struct child *ch, uint64_t usec) {
        struct timeval tv = timeval_from_usec(usec);

        evtimer_add(ch->stall_timer, &tv);
}

/* A server that takes nothing of its stdin would hold what is queued for it, and every
 * call behind it, for good: its queue is dropped and its connection ends as a broken one. */
static void on_stall_timer(evutil_socket_t fd, short what, void *userdata) {
        struct child *ch = userdata;
        size_t queued = child_input_queued(ch);
        uint64_t now = now_usec(), due = ch->input_progress + ch->stall_usec;
        char why[192];

        if (queued == 0 || ch->broken)
                return;
        if (now < due) {
                arm_stall(ch, due - now);
                return;
        }
        snprintf(why, sizeof why, "read none of its stdin for %g s (healthTimeout) while %zu bytes were queued for it",
                 (double)ch->stall_usec / 1e6, queued);
        drop_input(ch);
        ch->input_closed = true;
        shut_input(ch);
        mark_broken(ch, why, false);
}

/* Called after a message was queued or written: a queue that begins now is watched. */
static void watch_input(struct child *ch, size_t queued_before) {
        if (ch->stall_usec == 0 || child_input_queued(ch) == 0)
                return;
        if (queued_before == 0)
                ch->input_progress = now_usec();
        if (!evtimer_pending(ch->stall_timer, NULL))
                arm_stall(ch, ch->stall_usec);
}

/* Logged once a queue: until the server has taken all of it, every send past the limit
 * is refused the same way, and each caller is told. */
static bool over_input_limit(struct child *ch, const struct iovec *parts) {
        size_t queued = child_input_queued(ch);

        if (ch->input_limit == 0 || queued == 0)
                return false;
        if (queued < ch->input_limit && parts[0].iov_len + parts[1].iov_len <= ch->input_limit - queued)
                return false;
        if (!ch->input_full)
                log_emit(ch->log, LOG_WARNING, &(struct log_subject){ .server = ch->name },
                         "not reading its stdin: %zu bytes queued for it; refusing what would pass serverInputLimit (%zu bytes)",
                         queued, ch->input_limit);
        ch->input_full = true;
        return true;
}

struct child *child_new(struct event_base *base, int to_fd, int from_fd, size_t max_line, const char *name,
                        const struct logger *log, struct jsonrpc_parser *parser, const struct child_ops *ops,
                        void *userdata) {
        struct child *ch = calloc(1, sizeof *ch);

        if (ch) {
                ch->to = bufferevent_socket_new(base, to_fd, BEV_OPT_CLOSE_ON_FREE);
                ch->from = event_new(base, from_fd, EV_READ | EV_PERSIST, on_from_readable, ch);
                ch->stall_timer = evtimer_new(base, on_stall_timer, ch);
        }
        if (ch && ch->to)
                ch->input_taken = evbuffer_add_cb(bufferevent_get_output(ch->to), on_input_taken, ch);
        if (!ch || !ch->to || !ch->from || !ch->stall_timer || !ch->input_taken) {
                if (ch && ch->to)
                        bufferevent_free(ch->to);
                else
                        close(to_fd);
                if (ch && ch->from)
                        event_free(ch->from);
                if (ch && ch->stall_timer)
                        event_free(ch->stall_timer);
                close(from_fd);
                free(ch);
                return NULL;
        }
        ch->from_fd = from_fd;
        ch->log = log;
        ch->name = name;
        ch->parser = parser;
        ch->ops = ops;
        ch->userdata = userdata;
        ch->next_id = 1;
        TAILQ_INIT(&ch->pending);
        idmap_init(&ch->by_id);
        framer_init(&ch->framer, max_line);
        bufferevent_set_max_single_write(ch->to, CHILD_WRITE_CHUNK);
        bufferevent_setcb(ch->to, NULL, on_to_write, on_to_event, ch);
        event_add(ch->from, NULL);
        bufferevent_enable(ch->to, EV_WRITE);
        return ch;
}

void child_free(struct child *ch) {
        struct child_request *rq;

        if (!ch)
                return;
        ch->broken = true;
        while ((rq = TAILQ_FIRST(&ch->pending)))
                complete(ch, rq, -ECONNRESET, NULL, NULL);
        evbuffer_remove_cb_entry(bufferevent_get_output(ch->to), ch->input_taken);
        bufferevent_free(ch->to);
        event_free(ch->stall_timer);
        event_free(ch->from);
        if (ch->from_fd >= 0)
                close(ch->from_fd);
        idmap_done(&ch->by_id);
        framer_done(&ch->framer);
        free(ch);
}

void child_limit_input(struct child *ch, size_t limit, uint64_t stall_usec) {
        ch->input_limit = limit;
        ch->stall_usec = stall_usec;
}

size_t child_input_queued(const struct child *ch) {
        return evbuffer_get_length(bufferevent_get_output(ch->to));
}

size_t child_input_limit(const struct child *ch) {
        return ch->input_limit;
}

int child_send(struct child *ch, json_object *msg) {
        size_t queued = child_input_queued(ch);
        struct iovec parts[2];
        int r = 0;

        if (ch->input_closed || ch->broken)
                r = -EPIPE;
        else if (jsonrpc_line(msg, parts) < 0)
                r = -ENOMEM;
        else if (over_input_limit(ch, parts))
                r = -ENOBUFS;
        else if (write_now(ch->to, parts, 2) < 0) {
                /* Part of the line may have gone out, and what follows would corrupt it. Its
                 * stdin is closed instead: the server ends, and is seen to, as any that exits. */
                log_emit(ch->log, LOG_ERR, &(struct log_subject){ .server = ch->name },
                         "out of memory writing to the server's stdin; closing it");
                ch->input_closed = true;
                shut_input(ch);
                r = -ENOMEM;
        } else
                watch_input(ch, queued);
        json_object_put(msg);
        return r;
}

static int64_t send_request(struct child *ch, const char *method, json_object *params, uint64_t timeout_usec,
                            child_reply_fn reply, child_result_text_fn result_text, void *userdata) {
        struct child_request *rq = calloc(1, sizeof *rq);
        int r;

        if (!rq) {
                json_object_put(params);
                return -ENOMEM;
        }
        *rq = (struct child_request){ .child = ch, .id = ch->next_id++, .reply = reply, .result_text = result_text,
                                      .userdata = userdata };
        r = child_send(ch, jsonrpc_request(rq->id, method, params));
        if (r == 0 && timeout_usec > 0) {
                struct timeval tv = timeval_from_usec(timeout_usec);
                rq->timer = evtimer_new(bufferevent_get_base(ch->to), on_request_timeout, rq);
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
        return send_request(ch, method, params, timeout_usec, reply, NULL, userdata);
}

int64_t child_request_result_text(struct child *ch, const char *method, json_object *params, child_reply_fn reply,
                                  child_result_text_fn result_text, void *userdata) {
        return send_request(ch, method, params, 0, reply, result_text, userdata);
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
        if (ch->input_closed)
                return;
        ch->input_closed = true;
        if (evbuffer_get_length(bufferevent_get_output(ch->to)) == 0)
                shut_input(ch);
}
