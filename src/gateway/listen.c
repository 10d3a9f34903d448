/* Listening sockets; see listen.h. */
#include "listen.h"

#include <event2/listener.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "macro.h"

/* How long to stop accepting after the process ran out of descriptors or memory. */
#define LISTEN_RESUME_MS 100

static int role_of_name(const char *name, unsigned n) {
        if (strcmp(name, "mcp") == 0)
                return LISTEN_MCP;
        if (strcmp(name, "control") == 0)
                return LISTEN_CONTROL;
        if (strcmp(name, "stored") == 0)
                return -1;      /* fd store entries are not sockets of ours */
        return n == 1 ? LISTEN_MCP : -EINVAL;
}

int listen_pick_activated(unsigned n, const int *fds, char *const *names, struct activated_fds *ret,
                          const char **ret_why) {
        struct activated_fds a = { .fd = { -1, -1 } };
        unsigned sockets = 0;

        for (unsigned i = 0; i < n; i++)
                sockets += !(names && names[i] && (strcmp(names[i], "stored") == 0 || strcmp(names[i], "http") == 0));
        for (unsigned i = 0; i < n; i++) {
                const char *name = names && names[i] ? names[i] : "unknown";
                int role;

                if (strcmp(name, "http") == 0) {
                        if (a.n_http == LISTEN_HTTP_MAX || sd_is_socket(fds[i], AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
                                *ret_why = "a socket named http is not a listening stream socket, or more than 16 were passed";
                                return -EINVAL;
                        }
                        a.http[a.n_http++] = fds[i];
                        continue;
                }
                role = role_of_name(name, sockets);

                if (role == -1)
                        continue;
                if (role < 0) {
                        *ret_why = "several sockets were passed and one has no usable name; set FileDescriptorName=mcp or FileDescriptorName=control";
                        return -EINVAL;
                }
                if (a.fd[role] >= 0) {
                        *ret_why = "two passed sockets have the same FileDescriptorName=";
                        return -EINVAL;
                }
                if (sd_is_socket_unix(fds[i], SOCK_STREAM, 1, NULL, 0) <= 0) {
                        *ret_why = "a passed socket is not a listening Unix stream socket (use ListenStream=/path)";
                        return -EINVAL;
                }
                a.fd[role] = fds[i];
        }
        if (a.fd[LISTEN_MCP] < 0 && a.fd[LISTEN_CONTROL] < 0) {
                *ret_why = "no socket named mcp or control was passed";
                return -EINVAL;
        }
        *ret = a;
        return 0;
}

static int make_address(const char *path, struct sockaddr_un *sa) {
        *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa->sun_path)
                return -ENAMETOOLONG;
        strcpy(sa->sun_path, path);
        return 0;
}

/* 0 when something answers at path, else the connect error (negative). */
static int probe_live(const struct sockaddr_un *sa) {
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        return RET_NERRNO(connect(fd, (const struct sockaddr *)sa, sizeof *sa));
}

static int mkdir_parents(const char *path) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        return 0;
}

/* Decides whether the node at path may be replaced: only a socket nobody answers on. */
static int check_stale(const struct sockaddr_un *sa) {
        struct stat st;
        int r;

        if (lstat(sa->sun_path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        r = probe_live(sa);
        if (r == 0)
                return -EADDRINUSE;
        if (r != -ECONNREFUSED && r != -ENOENT)
                return r;
        return 0;
}

static int take_lock(const char *path) {
        _cleanup_free_ char *lock_path = NULL;
        _cleanup_close_ int fd = -1;

        if (asprintf(&lock_path, "%s.lock", path) < 0)
                return -ENOMEM;
        fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
        return TAKE_FD(fd);
}

int listen_bind_unix(const char *path, int mode, struct bound_socket *ret) {
        _cleanup_close_ int fd = -1, lock_fd = -1;
        struct sockaddr_un sa;
        mode_t old_umask;
        int r;

        if (path[0] != '/')
                return -EINVAL; /* relative paths would depend on the working directory */
        r = make_address(path, &sa);
        if (r < 0)
                return r;
        r = mkdir_parents(path);
        if (r < 0)
                return r;
        r = check_stale(&sa);
        if (r < 0)
                return r;
        lock_fd = take_lock(path);
        if (lock_fd < 0)
                return lock_fd;
        /* Someone may have bound between our probe and our lock: always check again. */
        r = check_stale(&sa);
        if (r < 0)
                return r;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        old_umask = umask(0777 & ~(mode_t)mode);
        r = RET_NERRNO(bind(fd, (struct sockaddr *)&sa, sizeof sa));
        umask(old_umask);
        if (r < 0)
                return r;
        if (chmod(path, (mode_t)mode) < 0 || listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                (void)unlink(path);
                return r;
        }
        *ret = (struct bound_socket){ .fd = TAKE_FD(fd), .lock_fd = TAKE_FD(lock_fd), .path = strdup(path) };
        return 0;
}

void bound_socket_done(struct bound_socket *b) {
        if (b->path) {
                _cleanup_free_ char *lock_path = NULL;
                (void)unlink(b->path);
                if (asprintf(&lock_path, "%s.lock", b->path) >= 0)
                        (void)unlink(lock_path);
        }
        closep(&b->lock_fd);
        free(b->path);
        *b = (struct bound_socket){ .fd = -1, .lock_fd = -1 };
}

int listen_fd_reserve(int fd_limit) {
        int reserve = fd_limit / 8;

        return reserve < 16 ? 16 : reserve > 256 ? 256 : reserve;
}

void listen_turn_away(int fd, const char *line) {
        if (line)
                (void)!send(fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL);
        close(fd);
}

static void turn_away(struct listener *l, int fd) {
        listen_turn_away(fd, l->refusal);
}

/* Descriptors are allocated lowest first, so fd - 1 below the new one are all in use: at
 * fd >= limit - reserve, fewer than reserve are left. One comparison per accept; descriptors
 * freed below the new one make it err on the side of accepting. */
static bool over_reserve(const struct listener *l, int fd) {
        return l->reserve > 0 && fd >= l->fd_limit - l->reserve;
}

static void accepted(struct evconnlistener *evl, evutil_socket_t fd, struct sockaddr *sa, int salen,
                     void *userdata) {
        struct listener *l = userdata;
        struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
        socklen_t len = sizeof cred;

        if (over_reserve(l, fd)) {
                if (!l->refusing)
                        log_warning(l->log,
                                    "fewer than %d file descriptors left (limit %d); turning away new clients of the %s socket",
                                    l->reserve, l->fd_limit, l->name);
                l->refusing = true;
                turn_away(l, fd);
                return;
        }
        if (l->refusing)
                log_info(l->log, "accepting clients of the %s socket again", l->name);
        l->refusing = false;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                log_debug(l->log, "SO_PEERCRED failed on the %s socket: %s", l->name, strerror(errno));
        if (l->accept_failing)
                log_info(l->log, "accepting on the %s socket again", l->name);
        l->accept_failing = false;
        l->on_accept(l, fd, &cred, l->userdata);
}

static void resume(evutil_socket_t fd, short what, void *userdata) {
        struct listener *l = userdata;

        evconnlistener_enable(l->evl);
}

/* Out of descriptors: the spare one makes room to take the waiting client and close it,
 * so it hears why at once and the socket stops being readable for it. */
static bool take_and_close(struct listener *l) {
        int fd;

        if (l->spare_fd < 0)
                return false;
        closep(&l->spare_fd);
        fd = accept4(evconnlistener_get_fd(l->evl), NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
                turn_away(l, fd);
        l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        return fd >= 0;
}

/* accept() failed with an error that will repeat at once (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM): the socket stays readable, so the client is closed with the spare descriptor, or
 * the socket is not watched for a moment. Warned once per shortage, not at every retry,
 * until a connection is accepted again. */
static void accept_failed(struct evconnlistener *evl, void *userdata) {
        struct listener *l = userdata;
        struct timeval tv = { 0, LISTEN_RESUME_MS * 1000 };
        int err = EVUTIL_SOCKET_ERROR();
        bool closed = err == EMFILE && take_and_close(l);

        if (!l->accept_failing)
                log_warning(l->log, "cannot accept on the %s socket: %s; %s", l->name, strerror(err),
                            closed ? "closing new connections" : "pausing new connections");
        l->accept_failing = true;
        if (closed)
                return;
        evconnlistener_disable(evl);
        event_add(l->resume_timer, &tv);
}

int listener_start(struct listener *l, struct event_base *base, int fd, const char *name,
                   const struct logger *log, listener_accept_fn on_accept, void *userdata) {
        struct rlimit rl;

        *l = (struct listener){ .log = log, .on_accept = on_accept, .userdata = userdata, .name = name, .spare_fd = -1,
                                .fd_limit = INT_MAX };
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < INT_MAX)
                l->fd_limit = (int)rl.rlim_cur;

        /* Activated sockets are blocking unless the unit says NonBlocking=yes. */
        if (evutil_make_socket_nonblocking(fd) < 0 || evutil_make_socket_closeonexec(fd) < 0)
                return -errno;
        l->resume_timer = evtimer_new(base, resume, l);
        /* backlog 0: the socket already listens (ours, or systemd's). */
        l->evl = evconnlistener_new(base, accepted, l,
                                    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
        if (!l->evl || !l->resume_timer) {
                listener_stop(l);
                return -ENOMEM;
        }
        evconnlistener_set_error_cb(l->evl, accept_failed);
        l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* none: accept_failed pauses instead */
        return 0;
}

void listener_set_reserve(struct listener *l, int reserve, const char *refusal) {
        l->reserve = reserve;
        l->refusal = refusal;
}

void listener_stop(struct listener *l) {
        if (l->evl) {
                evconnlistener_free(l->evl);
                closep(&l->spare_fd); /* opened once evl was */
        }
        if (l->resume_timer)
                event_free(l->resume_timer);
        *l = (struct listener){ .spare_fd = -1 };
}

char *listen_socket_path(int fd) {
        struct sockaddr_un sa = { 0 };
        socklen_t len = sizeof sa;
        size_t n;

        if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sun_family != AF_UNIX ||
            len <= offsetof(struct sockaddr_un, sun_path) || sa.sun_path[0] == '\0')
                return NULL;
        n = len - offsetof(struct sockaddr_un, sun_path);
        return strndup(sa.sun_path, n < sizeof sa.sun_path ? n : sizeof sa.sun_path);
}
