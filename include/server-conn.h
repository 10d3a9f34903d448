/* The MCP connection to one server, as its client: JSON-RPC messages sent and received
 * through a transport (server-transport.h: the server's stdin and stdout, for now),
 * requests with daemon-chosen ids matched to their responses, and everything else the
 * server sends handed to the owner. It knows nothing of descriptors. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "idmap.h"

struct event;
struct event_base;
struct server_transport;
struct jsonrpc_msg;
struct jsonrpc_parser;
struct loan_offer;
struct logger;
struct child;

/* status: 0 with result or error set (a JSON-RPC error response), -ETIMEDOUT, or
 * -ECONNRESET when the connection ended before an answer. result/error are borrowed. */
typedef void (*child_reply_fn)(struct child *ch, int status, json_object *result, json_object *error,
                               void *userdata);

/* A plain result as the JSON text the server wrote, checked but not parsed; text is valid
 * during the call only, and longer for whoever takes a loan of it from offer (loan.h;
 * NULL: none offered). */
typedef void (*child_result_text_fn)(struct child *ch, const char *text, size_t len, const struct loan_offer *offer,
                                     void *userdata);

struct child_ops {
        /* A request or notification from the server (responses are matched here). */
        void (*message)(struct child *ch, struct jsonrpc_msg *m, void *userdata);
        /* The transport broke (the server closed its stdout or stopped reading its stdin),
         * or (violation) the server wrote what leaves its output unusable: a line over the
         * size limit that answers no call its head can tell, whose run must end as a
         * failure. why is valid during the call. */
        void (*broken)(struct child *ch, const char *why, bool violation, void *userdata);
};

struct child_request {
        TAILQ_ENTRY(child_request) entry;
        struct child *child;
        int64_t id;
        child_reply_fn reply;
        child_result_text_fn result_text;       /* NULL: results parsed, to reply */
        void *userdata;
        struct event *timer;
};

struct child {
        struct event_base *base;       /* for the requests' timers */
        const struct logger *log;
        const char *name;              /* the server's name, for logs */
        struct jsonrpc_parser *parser;
        struct server_transport *transport; /* owned */
        size_t max_line;               /* the transport's line limit (maxServerMessageSize), for errors */
        size_t input_limit;            /* as given to child_limit_input(); 0 none */
        int64_t next_id;
        TAILQ_HEAD(, child_request) pending;   /* in the order sent */
        struct idmap by_id;                     /* id -> child_request */
        unsigned n_pending;
        const struct child_ops *ops;
        void *userdata;
        json_object *meta;             /* merged into every request's params._meta; NULL: none */
        bool broken;                   /* nothing more is sent or received */
        unsigned garbage_lines;        /* lines that were not JSON-RPC */
};

/* Takes ownership of t (freed on failure), whose lines are at most max_line bytes. NULL
 * when out of memory. */
struct child *child_new(struct event_base *base, struct server_transport *t, size_t max_line, const char *name,
                        const struct logger *log, struct jsonrpc_parser *parser, const struct child_ops *ops,
                        void *userdata);
/* Fails every pending request with -ECONNRESET, then frees. */
void child_free(struct child *ch);

/* Bounds what is queued for the server: a message that would take the queue past limit
 * is refused with -ENOBUFS (one goes out whole when nothing is queued); a queue the server
 * takes nothing of for stall_usec breaks the connection. Either 0: no bound. */
void child_limit_input(struct child *ch, size_t limit, uint64_t stall_usec);
/* Bytes queued for the server, not yet taken by it. */
size_t child_input_queued(const struct child *ch);
/* Queued bytes past which sends are refused (child_limit_input()); 0 for none. */
size_t child_input_limit(const struct child *ch);

/* The members every request sent from now on carries in its params._meta (a modern-era
 * server's per-request version, client info and capabilities), over whatever _meta the
 * request has (its progressToken, say, is kept; a member of the same name is ours).
 * meta is consumed; NULL: a legacy server (or one not known yet), to which requests go
 * without the modern era's per-request members, whoever put them there (a modern
 * client's request forwarded). */
void child_set_meta(struct child *ch, json_object *meta);

/* The capabilities (bits of enum client_capability) of the daemon's own requests: all
 * those its meta offers. */
#define CHILD_CAPS_OURS (~0u)

/* Sends a request; reply is called exactly once (unless child_cancel_request is called);
 * reply NULL: nobody waits for the answer, which is dropped.
 * timeout_usec 0: none. params is consumed. Returns the request's id, or a negative errno. */
int64_t child_request(struct child *ch, const char *method, json_object *params, uint64_t timeout_usec,
                      child_reply_fn reply, void *userdata);
/* child_request() without a timeout, whose plain result (jsonrpc_scan_result) goes to
 * result_text unparsed; errors, failures and results json-c must read go to reply. Either
 * is called exactly once. */
int64_t child_request_result_text(struct child *ch, const char *method, json_object *params, child_reply_fn reply,
                                  child_result_text_fn result_text, void *userdata);
/* child_request_result_text() for a client's request, forwarded on its behalf: to a
 * modern server, the client capabilities in the meta are cut to caps (bits of enum
 * client_capability: those the server may ask of this caller through the daemon), so that
 * a server asks only what can be answered. */
int64_t child_forward(struct child *ch, const char *method, json_object *params, unsigned caps, child_reply_fn reply,
                      child_result_text_fn result_text, void *userdata);
/* Forget a request: its reply will not be called and a late response is dropped. */
void child_cancel_request(struct child *ch, int64_t id);
/* During ops->message: the id of our request on whose answer the message came (a server's
 * request made for that call, over HTTP); 0 when the transport cannot tell (stdio). */
int64_t child_related(const struct child *ch);
/* Sends a notification (params consumed). */
int child_notify(struct child *ch, const char *method, json_object *params);
/* Sends any message (consumed) as it is; -ENOBUFS past the input limit. */
int child_send(struct child *ch, json_object *msg);

/* Closes the server's input (its stdin) once what is queued has been written: the first
 * step of the MCP stdio shutdown. */
void child_close_input(struct child *ch);
