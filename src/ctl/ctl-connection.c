/* mcpvisorctl's side of a daemon socket; see ctl-connection.h. */
#include "ctl-connection.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ctl-format.h"
#include "ctl.h"
#include "time-util.h"

#define MAX_ANSWER_SIZE ((size_t)64 << 20) /* the longest line taken from the daemon */
#define READ_CHUNK ((size_t)65536)
#define JSON_DEPTH 128

static void print_connect_error(const char *path, enum ctl_socket_kind kind, int err, uint64_t timeout_usec) {
        char t[32];

        switch (err) {
        case ENOENT:
        case ECONNREFUSED:
                fprintf(stderr,
                        CTL_NAME ": cannot connect to %s: %s; is mcpvisor running? "
                                 "(systemctl start mcpvisor.socket, or systemctl --user start mcpvisor.socket)\n",
                        path, strerror(err));
                break;
        case EACCES:
        case EPERM:
                if (kind == CTL_SOCKET_CONTROL)
                        fprintf(stderr,
                                CTL_NAME ": permission denied on %s: the control socket is for root, the daemon's "
                                         "user and its controlGroup (see mcpvisor.json(5))\n",
                                path);
                else
                        fprintf(stderr,
                                CTL_NAME ": permission denied on %s: the MCP socket is for the daemon's user and "
                                         "the socket's group (SocketGroup= of mcpvisor.socket, or socketMode; see "
                                         "mcpvisor.json(5))\n",
                                path);
                break;
        case EAGAIN:
        case EINPROGRESS:
                fprintf(stderr, CTL_NAME ": cannot connect to %s: the daemon did not accept the connection within %s\n",
                        path, ctl_format_timeout(timeout_usec, t, sizeof t));
                break;
        case ENAMETOOLONG:
                fprintf(stderr, CTL_NAME ": cannot connect to %s: the path is too long for a Unix socket (at most %zu bytes)\n",
                        path, sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
                break;
        default:
                fprintf(stderr, CTL_NAME ": cannot connect to %s: %s\n", path, strerror(err));
        }
}

int ctl_socket_connect(const char *path, enum ctl_socket_kind kind, uint64_t timeout_usec) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = timeval_from_usec(timeout_usec);
        _cleanup_close_ int fd = -1;
        size_t len = strlen(path);

        if (len == 0 || len >= sizeof sa.sun_path) {
                print_connect_error(path, kind, len ? ENAMETOOLONG : ENOENT, timeout_usec);
                return len ? -ENAMETOOLONG : -ENOENT;
        }
        memcpy(sa.sun_path, path, len + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                int r = -errno;
                print_connect_error(path, kind, -r, timeout_usec);
                return r;
        }
        /* A Unix stream connect() blocks while the listener's queue is full; SO_SNDTIMEO
         * bounds that wait (and fails it with EAGAIN). */
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1)) < 0) {
                int r = -errno;
                print_connect_error(path, kind, -r, timeout_usec);
                return r;
        }
        return TAKE_FD(fd);
}

int ctl_conn_open(struct ctl_conn *c, const char *path, uint64_t timeout_usec) {
        int fd = ctl_socket_connect(path, CTL_SOCKET_CONTROL, timeout_usec);

        if (fd < 0)
                return fd;
        /* Every wait below is a poll() with a deadline; a blocking call must never outlast it. */
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
                int r = -errno;
                fprintf(stderr, CTL_NAME ": %s: %s\n", path, strerror(-r));
                close(fd);
                return r;
        }
        *c = (struct ctl_conn){ .fd = fd, .path = path };
        return 0;
}

void ctl_conn_done(struct ctl_conn *c) {
        if (c->fd >= 0)
                close(c->fd);
        free(c->buf);
        *c = (struct ctl_conn){ .fd = -1 };
}

/* What a request is waiting for, for its error messages. */
struct call {
        struct ctl_conn *conn;
        const char *method;
        uint64_t timeout_usec;
        uint64_t deadline;
};

static int remaining_ms(uint64_t deadline) {
        uint64_t now = now_usec();

        if (now >= deadline)
                return 0;
        /* rounded up: a poll() that returns a little early would only spin */
        return (int)((deadline - now + 999) / 1000);
}

static int no_answer(const struct call *k) {
        char t[32];

        fprintf(stderr, CTL_NAME ": the control socket %s did not answer '%s' within %s\n", k->conn->path, k->method,
                ctl_format_timeout(k->timeout_usec, t, sizeof t));
        return -ETIMEDOUT;
}

/* Waits for events on the connection until the call's deadline: 0 when ready, -ETIMEDOUT. */
static int wait_for(const struct call *k, short events) {
        for (;;) {
                struct pollfd p = { .fd = k->conn->fd, .events = events };
                int ms = remaining_ms(k->deadline), n;

                if (ms == 0)
                        return no_answer(k);
                n = poll(&p, 1, ms);
                if (n > 0)
                        return 0; /* readable, writable, or hung up: the next call says which */
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

static int send_all(const struct call *k, const char *text, size_t len) {
        while (len > 0) {
                ssize_t n = send(k->conn->fd, text, len, MSG_NOSIGNAL);

                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        int r = wait_for(k, POLLOUT);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
                        return -EPIPE; /* it hung up, maybe after saying why: the caller reads that */
                if (n < 0) {
                        int r = -errno;
                        fprintf(stderr, CTL_NAME ": cannot send '%s' to the control socket %s: %s\n", k->method,
                                k->conn->path, strerror(-r));
                        return r;
                }
                text += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Moves the next complete line out of the buffer into *ret_line; 0 if there is none yet. */
static int take_line(struct ctl_conn *c, char **ret_line) {
        char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
        size_t n;

        if (!nl)
                return 0;
        n = (size_t)(nl - c->buf);
        *ret_line = strndup(c->buf, n);
        if (!*ret_line)
                return -ENOMEM;
        memmove(c->buf, nl + 1, c->len - n - 1);
        c->len -= n + 1;
        return 1;
}

/* Reads more bytes into the buffer, waiting until the deadline. */
static int fill(const struct call *k) {
        struct ctl_conn *c = k->conn;

        if (c->len >= MAX_ANSWER_SIZE) {
                fprintf(stderr, CTL_NAME ": the control socket %s sent a line longer than %zu MiB\n", c->path,
                        MAX_ANSWER_SIZE >> 20);
                return -EMSGSIZE;
        }
        if (c->cap - c->len < READ_CHUNK) {
                char *buf = realloc(c->buf, c->cap + READ_CHUNK);
                if (!buf)
                        return -ENOMEM;
                c->buf = buf;
                c->cap += READ_CHUNK;
        }
        for (;;) {
                ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
                int r;

                if (n > 0) {
                        c->len += (size_t)n;
                        return 0;
                }
                if (n == 0 || errno == ECONNRESET) {
                        fprintf(stderr, CTL_NAME ": the daemon closed the control socket %s without answering '%s'\n",
                                c->path, k->method);
                        return -ECONNRESET;
                }
                if (errno != EAGAIN && errno != EINTR) {
                        r = -errno;
                        fprintf(stderr, CTL_NAME ": cannot read from the control socket %s: %s\n", c->path, strerror(-r));
                        return r;
                }
                r = wait_for(k, POLLIN);
                if (r < 0)
                        return r;
        }
}

static json_object *parse_line(const char *line) {
        json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
        json_object *o;

        if (!tok)
                return NULL;
        o = json_tokener_parse_ex(tok, line, (int)strlen(line));
        if (o && json_tokener_get_error(tok) != json_tokener_success) {
                json_object_put(o);
                o = NULL;
        }
        json_tokener_free(tok);
        return o;
}

/* Reads the next message off the connection. */
static int read_message(const struct call *k, json_object **ret_msg) {
        for (;;) {
                _cleanup_free_ char *line = NULL;
                int r = take_line(k->conn, &line);

                if (r < 0)
                        return r;
                if (r == 0) {
                        r = fill(k);
                        if (r < 0)
                                return r;
                        continue;
                }
                *ret_msg = parse_line(line);
                if (!*ret_msg || !json_object_is_type(*ret_msg, json_type_object)) {
                        json_putp(ret_msg);
                        fprintf(stderr, CTL_NAME ": the control socket %s sent something that is not JSON-RPC: %.200s\n",
                                k->conn->path, line);
                        return -EBADMSG;
                }
                return 0;
        }
}

/* Our answer: our id, or a null id with an error (the daemon refusing the connection or the
 * line). Notifications and anything else are not for us. */
static bool is_our_answer(json_object *msg, int64_t id) {
        json_object *v;

        if (json_object_object_get_ex(msg, "method", NULL) || !json_object_object_get_ex(msg, "id", &v))
                return false;
        if (!v)
                return json_object_object_get_ex(msg, "error", NULL);
        return json_object_is_type(v, json_type_int) && json_object_get_int64(v) == id;
}

static int build_request(int64_t id, const char *method, json_object *params, char **ret_text) {
        _cleanup_json_ json_object *req = json_object_new_object();
        const char *text;

        if (!req || json_object_object_add(req, "jsonrpc", json_object_new_string("2.0")) < 0 ||
            json_object_object_add(req, "id", json_object_new_int64(id)) < 0 ||
            json_object_object_add(req, "method", json_object_new_string(method)) < 0 ||
            json_object_object_add(req, "params", params ? json_object_get(params) : json_object_new_object()) < 0)
                return -ENOMEM;
        text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || asprintf(ret_text, "%s\n", text) < 0)
                return -ENOMEM;
        return 0;
}

static int split_answer(const struct call *k, json_object *msg, json_object **ret_result, json_object **ret_error) {
        json_object *v;

        if (json_object_object_get_ex(msg, "error", &v) && json_object_is_type(v, json_type_object)) {
                *ret_result = NULL;
                *ret_error = json_object_get(v);
                return 0;
        }
        if (json_object_object_get_ex(msg, "result", &v)) {
                *ret_result = json_object_get(v);
                *ret_error = NULL;
                return 0;
        }
        fprintf(stderr, CTL_NAME ": the control socket %s answered '%s' with neither a result nor an error: %.200s\n",
                k->conn->path, k->method, json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
        return -EBADMSG;
}

int ctl_call(struct ctl_conn *c, const char *method, json_object *params, uint64_t timeout_usec,
             json_object **ret_result, json_object **ret_error) {
        struct call k = { .conn = c, .method = method, .timeout_usec = timeout_usec,
                          .deadline = now_usec() + timeout_usec };
        _cleanup_free_ char *text = NULL;
        int64_t id = ++c->last_id;
        int r;

        r = build_request(id, method, params, &text);
        if (r < 0) {
                fprintf(stderr, CTL_NAME ": out of memory\n");
                return r;
        }
        /* A daemon that refuses us answers at once and closes, maybe before our request is
         * out: what it said is still to be read. */
        r = send_all(&k, text, strlen(text));
        if (r < 0 && r != -EPIPE)
                return r;
        for (;;) {
                _cleanup_json_ json_object *msg = NULL;

                r = read_message(&k, &msg);
                if (r < 0)
                        return r;
                if (is_our_answer(msg, id))
                        return split_answer(&k, msg, ret_result, ret_error);
        }
}

int ctl_call_once(struct ctl *ctl, const char *method, json_object *params, json_object **ret_result,
                  json_object **ret_error) {
        const char *path = ctl_control_path(ctl);
        struct ctl_conn c;
        int r;

        if (!path)
                return -ENOENT;
        r = ctl_conn_open(&c, path, ctl->timeout_usec);
        if (r < 0)
                return r;
        r = ctl_call(&c, method, params, ctl->timeout_usec, ret_result, ret_error);
        ctl_conn_done(&c);
        return r;
}

int ctl_print_daemon_error(json_object *error) {
        json_object *m;

        if (json_object_object_get_ex(error, "message", &m) && json_object_is_type(m, json_type_string))
                fprintf(stderr, CTL_NAME ": %s\n", json_object_get_string(m));
        else
                fprintf(stderr, CTL_NAME ": the daemon answered with an error: %s\n",
                        json_object_to_json_string_ext(error, JSON_C_TO_STRING_PLAIN));
        return CTL_EXIT_FAILURE;
}

int ctl_print_json(json_object *answer) {
        const char *text = json_object_to_json_string_ext(
                answer, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!text)
                return -ENOMEM;
        return printf("%s\n", text) < 0 ? -EIO : 0;
}

int ctl_print_finish(int r, const char *what) {
        if (r < 0 || fflush(stdout) != 0) {
                fprintf(stderr, CTL_NAME ": cannot print the %s: %s\n", what, strerror(r < 0 ? -r : errno));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}
