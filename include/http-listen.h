/* The HTTP front door's listening sockets: the addresses of http.listen bound by the daemon
 * and the sockets systemd passed (FileDescriptorName=http), all served by one evhttp. Like
 * the socket listener (listen.h), it never spins when descriptors run short: once fewer than
 * a reserve are left after a connection, or accept() fails (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM), every HTTP listener pauses, logged once, and resumes when a timer finds the
 * reserve free again; connections wait in the backlog meanwhile. The reserve is kept for the
 * control socket and for server (re)starts. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "listen.h"

struct event;
struct event_base;
struct evconnlistener;
struct evhttp;
struct evhttp_bound_socket;
struct http_address;
struct http_gates;
struct logger;
struct http_listen;

/* One address listened on, as operators read it (mcpvisorctl status). */
struct http_listener {
        struct http_listen *owner;
        struct evhttp_bound_socket *bound; /* NULL once stopped */
        struct evconnlistener *evl;        /* evhttp's, freed with bound */
        struct event *anchor;              /* finds this listener from libevent's error callback */
        char *name;                        /* "127.0.0.1:8765", "unix:/run/mcpvisor/http.sock" */
        bool unix_socket;                  /* peers are principals by SO_PEERCRED, no token needed */
        struct bound_socket bound_unix;    /* a Unix socket's node and lock, when we bound it */
};

enum http_accept_state {
        HTTP_ACCEPTING,
        HTTP_PAUSED,    /* descriptors short: listeners disabled, the resume timer armed */
        HTTP_FULL,      /* as paused, for unauthenticated connections at their cap (http-gate.h); not logged */
        HTTP_STOPPED,   /* the daemon stops: listeners closed */
};

struct http_listen {
        struct event_base *base;
        struct evhttp *evh;
        const struct logger *log;
        struct http_listener **listeners; /* each allocated alone: the anchors point at them */
        size_t n_listeners;
        enum http_accept_state state;
        struct event *resume_timer;
        int fd_limit;                  /* RLIMIT_NOFILE at start */
        int reserve;                   /* descriptors left to others (listen_fd_reserve()) */
        struct http_gates *gates;      /* each accepted connection goes through one (http-gate.h) */
};

/* Prepares listening for evh (not owned). */
int http_listen_init(struct http_listen *l, struct event_base *base, struct evhttp *evh, const struct logger *log);
/* Puts each connection accepted from now on behind a gate of gates. */
void http_listen_set_gates(struct http_listen *l, struct http_gates *gates);
/* Binds a configured address (mode: a Unix socket node's); logs and returns -errno on failure. */
int http_listen_bind(struct http_listen *l, const struct http_address *a, int mode);
/* Takes ownership of a listening socket passed by systemd. */
int http_listen_take_passed(struct http_listen *l, int fd);
/* Whether any listener is on TCP (there a token is needed). */
bool http_listen_has_tcp(const struct http_listen *l);
/* Closes every listener (the daemon is stopping); requests in progress go on. */
void http_listen_stop(struct http_listen *l);
void http_listen_done(struct http_listen *l);
/* The listeners as a JSON array of names, for the status answer. */
json_object *http_listen_json(const struct http_listen *l);

/* Whether a descriptor shortage is near: fewer than reserve left above the lowest free one
 * (or none at all). Pure, for tests: lowest_free is that descriptor or -errno. */
bool http_listen_short(int lowest_free, int fd_limit, int reserve);
