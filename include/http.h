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
#include "http-listen.h"

struct daemon;
struct evhttp;
struct evhttp_bound_socket;
struct event;

struct http_front {
        struct daemon *daemon;
        struct evhttp *evh;
        struct http_listen listen;
        struct idmap sessions;        /* session key (client-http.h) -> struct client */
        size_t n_sessions;
        uint64_t refused_at;          /* when the last refused request was logged (usec) */
        uint64_t refused_unlogged;    /* refused since, not logged one by one */
};

/* Starts listening on the configured addresses and on the passed fds (socket activation,
 * n of them). Nothing at all when neither is given. */
int http_front_start(struct http_front *f, struct daemon *d, const int *passed, size_t n_passed);
/* Stops accepting (the daemon is stopping); requests in progress are answered. */
void http_front_stop_listening(struct http_front *f);
void http_front_done(struct http_front *f);
/* The listeners as a JSON array of names, for the status answer. */
json_object *http_front_listeners_json(const struct http_front *f);
