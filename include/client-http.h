/* The Streamable HTTP transport of a client (client.h): one MCP session, issued at
 * initialize under an unguessable Mcp-Session-Id. Each POSTed request is answered on its
 * own HTTP request when its response comes: as application/json, or, for a tool call or a
 * request asking for progress from a client that takes text/event-stream and only when the
 * call's progress or a server's request made during it must go first, as an event stream
 * of its own that carries those, then its response. Everything else the daemon sends the client (list changes, log
 * messages, ...) goes on the session's GET stream. Events are numbered across the session's
 * streams, and the last 64 of them (at most 1 MiB) are kept to be sent again after a
 * dropped stream (Last-Event-ID). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct client;
struct evhttp_request;
struct daemon;
struct http_front;
struct http_token;
struct jsonrpc_msg;
struct principal;

/* The random part of a session id: 128 bits, written as 32 hex digits. */
#define CLIENT_HTTP_ID_LEN 32

/* Who asked, as the front door established it for a request. */
struct http_caller {
        struct principal *principal;  /* taken by client_http_new() */
        const char *remote;           /* "192.0.2.1:51234", "unix peer pid 1234" */
        const struct http_token *token; /* the token it presented (the configuration's);
                                       * NULL on the Unix socket */
};

/* What a client over HTTP is: a session (opened by initialize, named by Mcp-Session-Id on
 * each request), or one modern-era request (2026-07-28) with no session: a client for its
 * one POST, named to nobody, which ends once that request is answered, or cancelled by
 * its connection's close. */
enum http_kind { HTTP_SESSION, HTTP_ONE_REQUEST };

/* A new session for caller; NULL when out of memory (nothing taken). *ret_key is the key the
 * front door files it under (http_front.sessions). */
struct client *client_http_new(struct http_front *f, struct http_caller *caller, enum http_kind kind, int64_t *ret_key);
/* The session named by a Mcp-Session-Id header, for the key http-front.c found it under:
 * true when id is this session's whole id (compared in constant time). */
bool client_http_id_matches(const struct client *c, const char *id);
/* Whether a later request's caller is the one that opened the session: the very token that
 * opened it (another token of the same user is another caller), or on the Unix socket the
 * same uid without a token. */
bool client_http_same_caller(const struct client *c, uid_t uid, const struct http_token *token);
/* The configuration was replaced (a reload; the old one is still there): each session opened
 * with a token is bound to the new configuration's token of the same secret and takes its
 * principal (user, groups) and profile; a session whose token is gone is ended. Called
 * before the access classes are computed anew. */
void client_http_config_changed(struct daemon *d);
/* The key of a session id's text, or 0 when it is not one of ours in form. */
int64_t client_http_key_of(const char *id);

/* A POSTed message m (parsed; still the caller's) for the session: a request is answered on
 * req when its response comes; anything else is handled and req answered 202 at once. */
void client_http_post(struct client *c, struct evhttp_request *req, struct jsonrpc_msg *m);
/* GET: the session's event stream, from the event after last_event_id (the header's text;
 * NULL or not one of ours: from the first one not yet written to it). The Last-Event-ID of
 * a POST's own stream sends what is kept of that stream after it instead, then ends. */
void client_http_get(struct client *c, struct evhttp_request *req, const char *last_event_id);
/* The session idle the longest of a user at maxClientsPerUser (limit), as user_counts_take()
 * chose it (only HTTP sessions are ever listed idle there): ended, and logged with how long
 * it was idle, to admit that user's new client. */
struct user_idle;
void client_http_end_idle(struct user_idle *e, unsigned limit);
/* DELETE: the session ends (its calls cancelled downstream). */
void client_http_delete(struct client *c, struct evhttp_request *req);
