/* The Streamable HTTP front door (MCP 2025-11-25, and the versions before it that a client
 * negotiates): evhttp listeners on the addresses of the "http" setting (or the sockets
 * systemd passed as FileDescriptorName=http), each request checked (Origin, bearer token or
 * Unix peer, sizes) and handed to its session, a client like a socket connection
 * (client-http.h). GET /healthz answers without a token. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "http-gate.h"
#include "http-listen.h"
#include "refusal-log.h"

struct daemon;
struct evhttp;
struct http_oauth;
struct evhttp_bound_socket;
struct event;

struct http_front {
        struct daemon *daemon;
        struct evhttp *evh;
        struct http_listen listen;
        struct idmap sessions;        /* session key (client-http.h) -> struct client */
        size_t n_sessions;            /* counted by client-http.c through the two functions below */
        size_t sessions_peak;         /* the most since memory was last given back */
        struct refusal_log refusals;  /* which refused requests are logged */
        struct event *refusal_timer;  /* their summaries, due a period after a peer's line */
        struct http_gates gates;      /* connections whose peer has proved nothing yet */
        struct http_oauth *oauth;     /* http.oauth's issuer, keys and identities; NULL: none */
};

/* Starts listening on the configured addresses and on the passed fds (socket activation,
 * n of them). Nothing at all when neither is given. */
int http_front_start(struct http_front *f, struct daemon *d, const int *passed, size_t n_passed);
/* Stops accepting (the daemon is stopping); requests in progress are answered. */
void http_front_stop_listening(struct http_front *f);
void http_front_done(struct http_front *f);
/* A session was filed in sessions / taken out of it (client-http.c). */
void http_front_session_opened(struct http_front *f);
void http_front_session_ended(struct http_front *f);
/* The configuration was replaced (a reload): http.oauth's issuer may be another. */
void http_front_config_changed(struct http_front *f);
/* The listeners as a JSON array of names, for the status answer. */
json_object *http_front_listeners_json(const struct http_front *f);
/* A connection of peer refused or closed for why, logged as the refused requests are. */
void http_front_refused(struct http_front *f, const struct refusal_peer *peer, const char *why);
