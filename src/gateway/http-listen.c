/* The HTTP front door's listening sockets; see http-listen.h. */
#include "http-listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http-config.h"
#include "http-gate.h"
#include "log.h"
#include "macro.h"

/* What a connection reads or writes at most in one turn of the loop. */
#define HTTP_SINGLE_IO (1024 * 1024)
/* How long new connections wait, at least, once descriptors ran short. */
#define HTTP_RESUME_MS 100

/* The lowest free descriptor, as the next accept() would get it, or -errno (EMFILE). */
static int lowest_free_fd(const struct http_listen *l) {
        int fd = fcntl(evconnlistener_get_fd(l->listeners[0]->evl), F_DUPFD_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        close(fd);
        return fd;
}

bool http_listen_short(int lowest_free, int fd_limit, int reserve) {
        return lowest_free < 0 || lowest_free >= fd_limit - reserve;
}

static bool descriptors_short(const struct http_listen *l) {
        return http_listen_short(lowest_free_fd(l), l->fd_limit, l->reserve);
}

static void enable_all(struct http_listen *l, bool on) {
        for (size_t i = 0; i < l->n_listeners; i++)
                if (l->listeners[i]->bound)
                        (on ? evconnlistener_enable : evconnlistener_disable)(l->listeners[i]->evl);
}

static void close_all(struct http_listen *l) {
        for (size_t i = 0; i < l->n_listeners; i++) {
                struct http_listener *hl = l->listeners[i];

                if (!hl->bound)
                        continue;
                if (hl->anchor)
                        event_free(hl->anchor);
                hl->anchor = NULL;
                evhttp_del_accept_socket(l->evh, hl->bound); /* frees evl, closes the socket */
                hl->bound = NULL;
                hl->evl = NULL;
        }
}

/* The only mover of l->state; why (for a pause) is logged on the way from accepting. A
 * wait for unauthenticated connections to make room (HTTP_FULL) is not: under a flood it
 * comes and goes every second, and the gates log what they close. */
static void set_state(struct http_listen *l, enum http_accept_state to, const char *why) {
        struct timeval tv = { 0, HTTP_RESUME_MS * 1000 };
        enum http_accept_state from = l->state;

        if (from == HTTP_STOPPED)
                return;
        l->state = to;
        switch (to) {
        case HTTP_PAUSED:
        case HTTP_FULL:
                if (from == HTTP_ACCEPTING)
                        enable_all(l, false);
                if (to == HTTP_PAUSED && from != HTTP_PAUSED)
                        log_warning(l->log, "%s; pausing new HTTP connections", why);
                if (to == HTTP_FULL && from == HTTP_PAUSED) /* the descriptors' pause is over */
                        log_info(l->log, "accepting HTTP connections again");
                evtimer_add(l->resume_timer, &tv);
                break;
        case HTTP_ACCEPTING:
                if (from == HTTP_PAUSED)
                        log_info(l->log, "accepting HTTP connections again");
                if (from != HTTP_ACCEPTING)
                        enable_all(l, true);
                break;
        case HTTP_STOPPED:
                evtimer_del(l->resume_timer);
                close_all(l);
                break;
        }
}

static bool gates_full(const struct http_listen *l) {
        return l->gates && http_gates_full(l->gates);
}

static void resume(evutil_socket_t fd, short what, void *userdata) {
        struct http_listen *l = userdata;

        if (descriptors_short(l))
                set_state(l, HTTP_PAUSED, "file descriptors are short");
        else
                set_state(l, gates_full(l) ? HTTP_FULL : HTTP_ACCEPTING, NULL);
}

/* evhttp's hook for each connection it accepted: the bufferevent it would make itself, but
 * reading and writing up to HTTP_SINGLE_IO a turn, not libevent's 16 KiB: a large body
 * otherwise costs a loop turn every 16 KiB. And a look at what is left: the connection is
 * served; the next ones wait. */
static struct bufferevent *accepted(struct event_base *base, void *userdata) {
        struct http_listen *l = userdata;
        struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
        char why[128];

        if (l->state == HTTP_ACCEPTING && descriptors_short(l)) {
                snprintf(why, sizeof why, "fewer than %d file descriptors left (limit %d)", l->reserve, l->fd_limit);
                set_state(l, HTTP_PAUSED, why);
        }
        if (!bev)
                return NULL;
        bufferevent_set_max_single_read(bev, HTTP_SINGLE_IO);
        bufferevent_set_max_single_write(bev, HTTP_SINGLE_IO);
        if (!l->gates)
                return bev;
        bev = http_gates_wrap(l->gates, bev);
        if (l->state == HTTP_ACCEPTING && gates_full(l))
                set_state(l, HTTP_FULL, NULL);
        return bev;
}

/* Never runs: a listening socket is never half-closed. The event is there so that libevent's
 * error callback, which is handed evhttp rather than anything of ours, can find the listener
 * among the base's events by its socket. */
static void anchor_never(evutil_socket_t fd, short what, void *userdata) {
}

struct anchor_search {
        evutil_socket_t fd;
        struct http_listener *found;
};

static int find_anchor(const struct event_base *base, const struct event *ev, void *userdata) {
        struct anchor_search *s = userdata;

        if (event_get_callback(ev) != anchor_never || event_get_fd(ev) != s->fd)
                return 0;
        s->found = event_get_callback_arg(ev);
        return 1;
}

/* accept() failed with an error that repeats at once while the socket stays readable
 * (EMFILE, ENFILE, ENOBUFS, ENOMEM): without a pause the loop would spin on it. */
static void accept_failed(struct evconnlistener *evl, void *evh) {
        struct anchor_search s = { .fd = evconnlistener_get_fd(evl) };
        int err = EVUTIL_SOCKET_ERROR();
        char why[192];

        event_base_foreach_event(evconnlistener_get_base(evl), find_anchor, &s);
        if (!s.found) { /* cannot happen: each listener has its anchor while it listens */
                evconnlistener_disable(evl);
                return;
        }
        snprintf(why, sizeof why, "cannot accept HTTP connections on %s: %s", s.found->name, strerror(err));
        set_state(s.found->owner, HTTP_PAUSED, why);
}

static int add_listener(struct http_listen *l, int fd, const char *name, bool unix_socket) {
        struct http_listener **ls = realloc(l->listeners, (l->n_listeners + 1) * sizeof *ls);
        struct http_listener *hl;

        if (!ls) {
                close(fd);
                return -ENOMEM;
        }
        l->listeners = ls;
        hl = calloc(1, sizeof *hl);
        if (!hl) {
                close(fd);
                return -ENOMEM;
        }
        *hl = (struct http_listener){ .owner = l, .name = strdup(name), .unix_socket = unix_socket,
                                      .bound_unix = { .fd = -1, .lock_fd = -1 } };
        ls[l->n_listeners++] = hl;
        /* A passed socket may block, and the listener accepts until EAGAIN. */
        evutil_make_socket_nonblocking(fd);
        /* Our own listener, so that accepted connections are close-on-exec too; backlog 0:
         * the socket listens already (ours with SOMAXCONN, or systemd's), and -1 would cut
         * its backlog to 128, which connections waiting through a pause overflow. */
        hl->evl = evconnlistener_new(l->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
        if (!hl->evl) {
                close(fd);
                return -ENOMEM;
        }
        hl->anchor = event_new(l->base, fd, EV_CLOSED | EV_PERSIST, anchor_never, hl);
        hl->bound = evhttp_bind_listener(l->evh, hl->evl);
        if (!hl->name || !hl->anchor || !hl->bound || event_add(hl->anchor, NULL) < 0) {
                if (!hl->bound) {
                        evconnlistener_free(hl->evl);
                        hl->evl = NULL;
                }
                return -ENOMEM; /* the rest goes with http_listen_done() */
        }
        evconnlistener_set_error_cb(hl->evl, accept_failed);
        if (l->state == HTTP_PAUSED || l->state == HTTP_FULL)
                evconnlistener_disable(hl->evl);
        log_info(l->log, "HTTP front door listening on %s", name);
        return 0;
}

static int bind_tcp(struct http_listen *l, const struct http_address *a) {
        struct sockaddr_storage ss = { 0 };
        socklen_t len;
        char name[80];
        int fd, one = 1;
        bool v6 = strchr(a->host, ':') != NULL;

        if (v6) {
                struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;

                sa->sin6_family = AF_INET6;
                sa->sin6_port = htons((uint16_t)a->port);
                inet_pton(AF_INET6, a->host, &sa->sin6_addr);
                len = sizeof *sa;
        } else {
                struct sockaddr_in *sa = (struct sockaddr_in *)&ss;

                sa->sin_family = AF_INET;
                sa->sin_port = htons((uint16_t)a->port);
                inet_pton(AF_INET, a->host, &sa->sin_addr);
                len = sizeof *sa;
        }
        snprintf(name, sizeof name, v6 ? "[%s]:%u" : "%s:%u", a->host, a->port);
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                goto fail;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (v6)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
                int e = errno;

                close(fd);
                errno = e;
                goto fail;
        }
        return add_listener(l, fd, name, false);
fail:
        log_error(l->log, "cannot listen for HTTP on %s: %s", name, strerror(errno));
        return -errno;
}

static int bind_unix(struct http_listen *l, const struct http_address *a, int mode) {
        struct bound_socket b;
        char name[160];
        int r = listen_bind_unix(a->path, mode, &b);

        if (r < 0) {
                log_error(l->log, "cannot listen for HTTP on %s: %s", a->path, strerror(-r));
                return r;
        }
        snprintf(name, sizeof name, "unix:%s", a->path);
        r = add_listener(l, b.fd, name, true); /* the listener owns the socket */
        b.fd = -1;
        if (r < 0) {
                bound_socket_done(&b);
                return r;
        }
        l->listeners[l->n_listeners - 1]->bound_unix = b; /* the node and its lock: removed at exit */
        return 0;
}

int http_listen_bind(struct http_listen *l, const struct http_address *a, int mode) {
        return a->path ? bind_unix(l, a, mode) : bind_tcp(l, a);
}

int http_listen_take_passed(struct http_listen *l, int fd) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        char name[160] = "a socket passed by systemd";
        bool unix_socket = getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_UNIX;

        if (unix_socket) {
                _cleanup_free_ char *path = listen_socket_path(fd);

                if (path)
                        snprintf(name, sizeof name, "unix:%s (passed by systemd)", path);
        } else if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
                char host[INET6_ADDRSTRLEN];
                bool v6 = ss.ss_family == AF_INET6;

                inet_ntop(ss.ss_family, v6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr : (void *)&((struct sockaddr_in *)&ss)->sin_addr,
                          host, sizeof host);
                snprintf(name, sizeof name, v6 ? "[%s]:%u (passed by systemd)" : "%s:%u (passed by systemd)", host,
                         ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port));
        }
        return add_listener(l, fd, name, unix_socket);
}

int http_listen_init(struct http_listen *l, struct event_base *base, struct evhttp *evh, const struct logger *log) {
        struct rlimit rl;

        *l = (struct http_listen){ .base = base, .evh = evh, .log = log, .fd_limit = 1024 };
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                l->fd_limit = rl.rlim_cur < 1 << 30 ? (int)rl.rlim_cur : 1 << 30;
        l->reserve = listen_fd_reserve(l->fd_limit);
        l->resume_timer = evtimer_new(base, resume, l);
        if (!l->resume_timer)
                return -ENOMEM;
        evhttp_set_bevcb(evh, accepted, l);
        return 0;
}

void http_listen_set_gates(struct http_listen *l, struct http_gates *gates) {
        l->gates = gates;
}

bool http_listen_has_tcp(const struct http_listen *l) {
        for (size_t i = 0; i < l->n_listeners; i++)
                if (!l->listeners[i]->unix_socket)
                        return true;
        return false;
}

void http_listen_stop(struct http_listen *l) {
        if (l->resume_timer) /* else nothing ever listened */
                set_state(l, HTTP_STOPPED, NULL);
}

void http_listen_done(struct http_listen *l) {
        http_listen_stop(l);
        for (size_t i = 0; i < l->n_listeners; i++) {
                struct http_listener *hl = l->listeners[i];

                free(hl->name);
                if (hl->bound_unix.path)
                        bound_socket_done(&hl->bound_unix);
                free(hl);
        }
        free(l->listeners);
        if (l->resume_timer)
                event_free(l->resume_timer);
        *l = (struct http_listen){ 0 };
}

json_object *http_listen_json(const struct http_listen *l) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; i < l->n_listeners; i++)
                if (l->listeners[i]->bound)
                        json_object_array_add(a, json_object_new_string(l->listeners[i]->name));
        return a;
}
