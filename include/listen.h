/* The daemon's listening sockets: taken from systemd socket activation by name, or bound
 * by the daemon itself with stale-socket detection. A listener turns clients away when
 * descriptors run short (keeping a reserve for others, and a spare descriptor to close a
 * client over the limit cleanly) instead of spinning the loop. */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

struct event_base;
struct evconnlistener;
struct event;
struct logger;

enum listen_role { LISTEN_MCP, LISTEN_CONTROL, LISTEN_ROLE_COUNT };

/* Sockets of the HTTP front door systemd may pass (FileDescriptorName=http), at most. */
#define LISTEN_HTTP_MAX 16

struct activated_fds {
        int fd[LISTEN_ROLE_COUNT];   /* -1: not passed */
        int http[LISTEN_HTTP_MAX];   /* FileDescriptorName=http: TCP or Unix (http-front.h) */
        unsigned n_http;
};

/* Picks the MCP and control sockets from fds passed by systemd: by FileDescriptorName=
 * "mcp"/"control"; a single fd with another name is the MCP socket; fd store entries are
 * ignored; those named "http" (listening stream sockets of any family) are the HTTP front
 * door's. On error, *ret_why explains it in words a unit author can act on. */
int listen_pick_activated(unsigned n, const int *fds, char *const *names, struct activated_fds *ret,
                          const char **ret_why);

/* The path a listening Unix socket is bound to (getsockname), malloc'd; NULL for one with
 * no path (unnamed or abstract) or on error. */
char *listen_socket_path(int fd);

/* A socket the daemon bound itself; removed again at exit. */
struct bound_socket {
        int fd;
        int lock_fd;      /* flock()ed "<path>.lock": serialises racing starters */
        char *path;
};

/* Binds path (mode applied to the node). -EADDRINUSE when a live daemon answers there
 * or another one is starting; a stale node is replaced; anything else that is not a
 * socket is left alone (-EEXIST). */
int listen_bind_unix(const char *path, int mode, struct bound_socket *ret);
void bound_socket_done(struct bound_socket *b);

struct listener;
typedef void (*listener_accept_fn)(struct listener *l, int fd, const struct ucred *peer, void *userdata);

struct listener {
        struct evconnlistener *evl;
        int spare_fd;                 /* /dev/null, closed for a moment to turn away a client on EMFILE */
        int fd_limit;                 /* RLIMIT_NOFILE at start */
        int reserve;                  /* descriptors kept free for others; 0: none */
        const char *refusal;          /* line written to a client turned away, or NULL */
        struct event *resume_timer;   /* re-enables accepting after EMFILE and friends */
        const struct logger *log;
        listener_accept_fn on_accept;
        void *userdata;
        const char *name;
        bool accept_failing; /* accept failed since the last success: warned once */
        bool refusing;       /* a client was turned away since the last one accepted: warned once */
};

/* How many descriptors the MCP listener leaves to the control socket and to server
 * (re)starts: an eighth of the limit, at least 16 and at most 256. */
int listen_fd_reserve(int fd_limit);

/* Takes ownership of fd (a listening, bound stream socket). */
int listener_start(struct listener *l, struct event_base *base, int fd, const char *name,
                   const struct logger *log, listener_accept_fn on_accept, void *userdata);
void listener_stop(struct listener *l);
/* A client accepted with fewer than reserve descriptors left after it is sent refusal (one
 * line, may be NULL) and closed at once, as is one that accept() would fail with EMFILE. */
void listener_set_reserve(struct listener *l, int reserve, const char *refusal);
/* Sends line (may be NULL) without waiting, and closes fd: for a client turned away. */
void listen_turn_away(int fd, const char *line);
