/* Integration-test harness; see harness.h. */
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <grp.h>
#include <sys/mount.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

long long h_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining(long long deadline) {
        long long left = deadline - h_now_ms();
        return left > 0 ? (int)left : 0;
}

const char *h_daemon_path(void) {
        const char *p = getenv("MCPVISORD");
        return p ? p : MCPVISORD_PATH;
}

int h_run_daemon(const char *const *args, char *const *env, char *out, size_t outlen) {
        char path[] = "/tmp/mcpvisor-cli-XXXXXX";
        int fd = mkstemp(path), status;
        const char *argv[16] = { h_daemon_path() };
        posix_spawn_file_actions_t fa;
        ssize_t n;
        pid_t pid;

        cr_assert_geq(fd, 0);
        for (int i = 0; args[i]; i++) {
                cr_assert_lt(i + 2, 16, "too many arguments");
                argv[i + 1] = args[i];
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fd, 1);
        posix_spawn_file_actions_adddup2(&fa, fd, 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char **)argv, env ? env : (char *[]){ NULL }), 0);
        posix_spawn_file_actions_destroy(&fa);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        n = pread(fd, out, outlen - 1, 0);
        out[n > 0 ? n : 0] = '\0';
        close(fd);
        unlink(path);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

const char *h_demo_server_path(void) {
        return MCPVISOR_DEMO_SERVER_PATH;
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
        fputs(text, f);
        fclose(f);
}

static void open_notify(struct h_daemon *d) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int one = 1;

        snprintf(d->notify_path, sizeof d->notify_path, "%s/notify.sock", d->dir);
        d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        cr_assert_geq(d->notify_fd, 0);
        strcpy(sa.sun_path, d->notify_path);
        cr_assert_eq(bind(d->notify_fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind notify: %s", strerror(errno));
        cr_assert_eq(setsockopt(d->notify_fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one), 0);
}

#define MAX_ARGS 64

static void add(const char **argv, int *n, const char *arg) {
        cr_assert_lt(*n, MAX_ARGS - 1);
        argv[(*n)++] = arg;
        argv[*n] = NULL;
}

/* The daemon's program, after MCPVISOR_IT_WRAPPER's words (split in place in buf). */
static void add_daemon(const char **argv, int *n, char *buf, size_t size, const char *nofile) {
        const char *wrapper = getenv("MCPVISOR_IT_WRAPPER");

        if (nofile[0]) {
                /* prlimit execs the command: the pid stays the daemon's */
                add(argv, n, "prlimit");
                add(argv, n, nofile);
                add(argv, n, "--");
        }

        if (wrapper) {
                cr_assert_lt(strlen(wrapper), size, "MCPVISOR_IT_WRAPPER is too long");
                strcpy(buf, wrapper);
                for (char *save = NULL, *word = strtok_r(buf, " \t", &save); word; word = strtok_r(NULL, " \t", &save))
                        add(argv, n, word);
        }
        add(argv, n, h_daemon_path());
}

void h_start(struct h_daemon *d, const struct h_opts *o) {
        static const struct h_opts defaults = { 0 };
        const char *argv[MAX_ARGS] = { 0 }, *envp[MAX_ARGS] = { 0 };
        char notify_env[400], watchdog_env[64], fdname_arg[128], path_env[1024], journal_env[96], wrapper[2048];
        char nofile[64] = "";
        posix_spawn_file_actions_t fa;
        int n = 0, e = 0, r;

        if (!o)
                o = &defaults;
        if (o->nofile)
                snprintf(nofile, sizeof nofile, "--nofile=%u:%u", o->nofile, o->nofile);
        memset(d, 0, sizeof *d);
        d->notify_fd = -1;
        strcpy(d->dir, "/tmp/mcpvisor-it-XXXXXX");
        cr_assert_not_null(mkdtemp(d->dir));
        snprintf(d->config, sizeof d->config, "%s/mcpvisor.json", d->dir);
        snprintf(d->sock, sizeof d->sock, "%s/mcp.sock", d->dir);
        snprintf(d->control, sizeof d->control, "%s/control.sock", d->dir);
        snprintf(d->log, sizeof d->log, "%s/daemon.log", d->dir);
        write_file(d->config, o->config ? o->config : "{}\n");
        open_notify(d);

        snprintf(notify_env, sizeof notify_env, "NOTIFY_SOCKET=%s", d->notify_path);
        snprintf(watchdog_env, sizeof watchdog_env, "WATCHDOG_USEC=%lu", o->watchdog_usec);
        snprintf(path_env, sizeof path_env, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        envp[e++] = path_env;
        for (const char *const *x = o->env; x && *x; x++) {
                cr_assert_lt(e, MAX_ARGS - 4);
                envp[e++] = *x;
        }
        if (o->journal_stream) {
                struct stat st;
                int fd = open(d->log, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                cr_assert(fd >= 0 && fstat(fd, &st) == 0);
                close(fd);
                snprintf(journal_env, sizeof journal_env, "JOURNAL_STREAM=%lu:%lu", (unsigned long)st.st_dev,
                         (unsigned long)st.st_ino);
                envp[e++] = journal_env;
        }
        if (o->activate) {
                add(argv, &n, "systemd-socket-activate");
                add(argv, &n, "-l");
                add(argv, &n, d->sock);
                if (o->activate_control) {
                        add(argv, &n, "-l");
                        add(argv, &n, d->control);
                }
                if (o->activate_http) {
                        add(argv, &n, "-l");
                        add(argv, &n, o->activate_http);
                }
                if (o->fdnames) {
                        snprintf(fdname_arg, sizeof fdname_arg, "--fdname=%s", o->fdnames);
                        add(argv, &n, fdname_arg);
                }
                add(argv, &n, "-E");
                add(argv, &n, notify_env);
                /* systemd-socket-activate passes the daemon only what -E names */
                for (const char *const *x = o->env; x && *x; x++) {
                        add(argv, &n, "-E");
                        add(argv, &n, *x);
                }
                if (o->watchdog_usec) {
                        add(argv, &n, "-E");
                        add(argv, &n, watchdog_env);
                }
                add_daemon(argv, &n, wrapper, sizeof wrapper, nofile);
        } else {
                envp[e++] = notify_env;
                if (o->watchdog_usec)
                        envp[e++] = watchdog_env;
                add_daemon(argv, &n, wrapper, sizeof wrapper, nofile);
                add(argv, &n, "--socket");
                add(argv, &n, d->sock);
                if (!o->control_beside) {
                        add(argv, &n, "--control-socket");
                        add(argv, &n, d->control);
                }
        }
        add(argv, &n, "--config");
        add(argv, &n, d->config);
        add(argv, &n, "--log-level");
        add(argv, &n, "debug");
        for (const char *const *a = o->extra_args; a && *a; a++)
                add(argv, &n, *a);

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        /* Criterion keeps its own descriptors open in the worker; none may leak in. */
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        r = posix_spawnp(&d->pid, argv[0], &fa, NULL, (char **)argv, (char **)envp);
        posix_spawn_file_actions_destroy(&fa);
        cr_assert_eq(r, 0, "cannot start %s: %s", argv[0], strerror(r));
}

static void drain_notify(struct h_daemon *d) {
        for (;;) {
                char buf[4096];
                union {
                        struct cmsghdr h;
                        char space[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 8)];
                } ctl;
                struct iovec iov = { buf, sizeof buf - 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof ctl };
                ssize_t len = recvmsg(d->notify_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

                if (len < 0)
                        return;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
                                d->notify_sender = ((struct ucred *)CMSG_DATA(c))->pid;
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                                for (int *fd = (int *)CMSG_DATA(c); (char *)fd < (char *)c + c->cmsg_len; fd++)
                                        close(*fd);
                }
                if (d->notices_len + (size_t)len + 2 < sizeof d->notices) {
                        memcpy(d->notices + d->notices_len, buf, (size_t)len);
                        d->notices_len += (size_t)len;
                        d->notices[d->notices_len++] = '|';
                        d->notices[d->notices_len] = '\0';
                }
        }
}

bool h_notify_wait(struct h_daemon *d, const char *needle, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                struct pollfd p = { d->notify_fd, POLLIN, 0 };
                drain_notify(d);
                if (strstr(d->notices, needle))
                        return true;
                if (remaining(deadline) == 0)
                        return false;
                poll(&p, 1, remaining(deadline));
        }
}

unsigned h_notify_count(struct h_daemon *d, const char *needle) {
        unsigned count = 0;

        drain_notify(d);
        for (const char *p = d->notices; (p = strstr(p, needle)); p += strlen(needle))
                count++;
        return count;
}

int h_wait_exit(struct h_daemon *d, int timeout_ms) {
        int status, pidfd;
        struct pollfd p;

        if (d->pid <= 0)
                return d->exit_status;
        pidfd = pidfd_open(d->pid, 0);
        if (pidfd >= 0) {
                p = (struct pollfd){ pidfd, POLLIN, 0 };
                poll(&p, 1, timeout_ms);
                close(pidfd);
        }
        if (waitpid(d->pid, &status, WNOHANG) != d->pid)
                return -1;
        d->pid = 0;
        d->exit_status = status;
        return status;
}

int h_stop(struct h_daemon *d, int sig, int timeout_ms) {
        int status;

        if (d->pid <= 0)
                return d->exit_status;
        kill(d->pid, sig);
        status = h_wait_exit(d, timeout_ms);
        if (status == -1) {
                kill(d->pid, SIGKILL);
                h_wait_exit(d, H_TIMEOUT_MS);
                return -1;
        }
        return status;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

bool h_cleanup(struct h_daemon *d) {
        int status = d->exit_status;

        if (d->pid > 0)
                status = h_stop(d, SIGTERM, H_TIMEOUT_MS);
        if (d->notify_fd >= 0)
                close(d->notify_fd);
        d->notify_fd = -1;
        if (d->dir[0] && !getenv("H_KEEP"))
                nftw(d->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        d->dir[0] = '\0';
        return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static char *read_all(const char *path) {
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t len = 0;

        if (!f)
                return strdup("");
        FILE *out = open_memstream(&text, &len);
        int ch;
        while ((ch = fgetc(f)) != EOF)
                fputc(ch, out);
        fclose(out);
        fclose(f);
        return text;
}

bool h_log_wait(struct h_daemon *d, const char *needle, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                char *text = read_all(d->log);
                bool found = strstr(text, needle) != NULL;
                free(text);
                if (found)
                        return true;
                if (remaining(deadline) == 0)
                        return false;
                poll(NULL, 0, 20); /* a file has no readiness to wait on; re-read shortly */
        }
}

void h_log_dump_if_verbose(struct h_daemon *d) {
        char *text;

        if (!getenv("H_VERBOSE") || !d->log[0])
                return;
        text = read_all(d->log);
        fprintf(stderr, "daemon log (%s):\n%s\n", d->log, text);
        free(text);
}

struct h_conn *h_connect(const char *path, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        strncpy(sa.sun_path, path, sizeof sa.sun_path - 1);
        for (;;) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                cr_assert_geq(fd, 0);
                if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
                        struct h_conn *c = calloc(1, sizeof *c);
                        c->fd = fd;
                        return c;
                }
                int err = errno;
                close(fd);
                if ((err != ENOENT && err != ECONNREFUSED) || remaining(deadline) == 0)
                        cr_assert_fail("cannot connect to %s: %s", path, strerror(err));
                poll(NULL, 0, 10); /* the socket does not exist yet: nothing to wait on */
        }
}

/* The child of h_connect_as(): 0 and the descriptor sent, or an errno as one byte. */
static _Noreturn void connect_as_child(int sv, const char *path, uid_t uid, gid_t gid, const gid_t *groups,
                                       size_t n_groups, const char *comm) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char buf[CMSG_SPACE(sizeof(int))] = { 0 }, err = 0;
        struct iovec iov = { .iov_base = &err, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int fd = -1;

        /* Only its end of the socketpair: another child's end held here would keep that
         * child waiting after its h_close(). */
        if (sv > 3)
                close_range(3, (unsigned)sv - 1, 0);
        close_range((unsigned)sv + 1, ~0u, 0);
        strncpy(sa.sun_path, path, sizeof sa.sun_path - 1);
        if (setgroups(n_groups, groups) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0 ||
            (comm && prctl(PR_SET_NAME, comm) < 0) || (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
            connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
                err = (char)errno;
        if (!err) {
                struct cmsghdr *cm;

                mh.msg_control = buf;
                mh.msg_controllen = sizeof buf;
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &fd, sizeof fd);
        }
        if (sendmsg(sv, &mh, MSG_NOSIGNAL) < 0)
                _exit(1);
        (void)!read(sv, &err, 1); /* until h_close() closes the other end */
        _exit(0);
}

static int receive_fd(int sv, int *ret_errno) {
        char buf[CMSG_SPACE(sizeof(int))], err = 0;
        struct iovec iov = { .iov_base = &err, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf };
        struct cmsghdr *cm;
        int fd = -1;

        cr_assert_eq(recvmsg(sv, &mh, MSG_CMSG_CLOEXEC), 1, "h_connect_as: the child sent nothing");
        cm = CMSG_FIRSTHDR(&mh);
        if (cm && cm->cmsg_type == SCM_RIGHTS)
                memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        *ret_errno = err;
        return fd;
}

struct h_conn *h_connect_as(const char *path, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                            const char *comm) {
        char dir[300];
        struct stat st;
        struct h_conn *c;
        int sv[2], fd, err;
        pid_t pid;

        cr_assert_eq(geteuid(), 0, "h_connect_as needs root");
        cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
        cr_assert(st.st_mode & 0002, "%s has mode %o: set socketMode \"0666\" so uid %u may connect", path,
                  (unsigned)(st.st_mode & 0777), (unsigned)uid);
        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = '\0';
        cr_assert_eq(chmod(dir, 0711), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                close(sv[0]);
                connect_as_child(sv[1], path, uid, gid, groups, n_groups, comm);
        }
        close(sv[1]);
        fd = receive_fd(sv[0], &err);
        if (fd < 0) {
                close(sv[0]);
                waitpid(pid, NULL, 0);
                cr_assert(err == ECONNREFUSED || err == EAGAIN, "h_connect_as uid %u: %s", (unsigned)uid, strerror(err));
                return NULL;
        }
        c = calloc(1, sizeof *c);
        *c = (struct h_conn){ .fd = fd, .as_pid = pid, .as_fd = sv[0] };
        return c;
}

void h_close(struct h_conn *c) {
        if (!c)
                return;
        if (c->as_pid > 0) {
                close(c->as_fd);
                waitpid(c->as_pid, NULL, 0);
        }
        close(c->fd);
        free(c->buf);
        free(c);
}

void h_send(struct h_conn *c, const char *text) {
        size_t len = strlen(text), off = 0;

        while (off < len) {
                ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);
                cr_assert_gt(n, 0, "send failed: %s", strerror(errno));
                off += (size_t)n;
        }
}

void h_sendf(struct h_conn *c, const char *fmt, ...) {
        char *text;
        va_list ap;

        va_start(ap, fmt);
        cr_assert_geq(vasprintf(&text, fmt, ap), 0);
        va_end(ap);
        h_send(c, text);
        free(text);
}

/* Reads more bytes; 0 on EOF/error, -1 on timeout, else bytes read. */
static ssize_t fill(struct h_conn *c, long long deadline) {
        struct pollfd p = { c->fd, POLLIN, 0 };
        ssize_t n;

        if (poll(&p, 1, remaining(deadline)) <= 0)
                return -1;
        if (c->cap - c->len < 65536) {
                c->cap = c->cap * 2 + 65536;
                c->buf = realloc(c->buf, c->cap);
        }
        n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (n <= 0)
                return 0;
        c->len += (size_t)n;
        return n;
}

static char *take_line(struct h_conn *c) {
        char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL, *line;
        size_t n;

        if (!nl)
                return NULL;
        n = (size_t)(nl - c->buf);
        line = strndup(c->buf, n);
        memmove(c->buf, nl + 1, c->len - n - 1);
        c->len -= n + 1;
        return line;
}

char *h_conn_take_line(struct h_conn *c) {
        return take_line(c);
}

bool h_conn_fill_now(struct h_conn *c) {
        return fill(c, h_now_ms()) != 0;
}

char *h_recv_line(struct h_conn *c, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                char *line = take_line(c);
                if (line)
                        return line;
                if (fill(c, deadline) <= 0)
                        return NULL;
        }
}

json_object *h_recv(struct h_conn *c, int timeout_ms) {
        char *line = h_recv_line(c, timeout_ms);
        json_object *o;

        cr_assert_not_null(line, "no message from the daemon within %d ms", timeout_ms);
        cr_assert_null(strchr(line, '\r'), "a message contains a carriage return");
        o = json_tokener_parse(line);
        cr_assert_not_null(o, "the daemon sent a line that is not JSON: %s", line);
        free(line);
        return o;
}

json_object *h_call(struct h_conn *c, const char *line) {
        h_send(c, line);
        return h_recv(c, H_TIMEOUT_MS);
}

bool h_wait_eof(struct h_conn *c, int timeout_ms, size_t *lines) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                char *line;
                while ((line = take_line(c))) {
                        if (lines)
                                (*lines)++;
                        free(line);
                }
                ssize_t n = fill(c, deadline);
                if (n == 0)
                        return true;
                if (n < 0)
                        return false;
        }
}

void h_expect_result(struct h_conn *c, const char *line) {
        json_object *r = h_call(c, line);

        cr_assert(json_object_is_type(h_get(r, "result"), json_type_object), "expected a result for %s, got %s",
                  line, json_object_to_json_string(r));
        json_object_put(r);
}

void h_initialize(struct h_conn *c) {
        json_object *r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                                   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                                   "\"clientInfo\":{\"name\":\"harness\",\"version\":\"1\"}}}\n");
        cr_assert_str_eq(h_str(r, "result.protocolVersion"), "2025-11-25");
        json_object_put(r);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
}

json_object *h_get(json_object *o, const char *dotted_path) {
        char *copy = strdup(dotted_path), *save = NULL;

        for (char *key = strtok_r(copy, ".", &save); key && o; key = strtok_r(NULL, ".", &save)) {
                if (json_object_is_type(o, json_type_array))
                        o = json_object_array_get_idx(o, (size_t)atoi(key));
                else if (!json_object_object_get_ex(o, key, &o))
                        o = NULL;
        }
        free(copy);
        return o;
}

int h_error_code(json_object *msg) {
        json_object *code = h_get(msg, "error.code");
        return code ? json_object_get_int(code) : 0;
}

const char *h_str(json_object *o, const char *dotted_path) {
        json_object *v = h_get(o, dotted_path);
        return v ? json_object_get_string(v) : "(missing)";
}

/* ---- Helpers for supervision tests; see harness.h ---- */

#include <ctype.h>
#include <dirent.h>

char *h_log_text(struct h_daemon *d) {
        return read_all(d->log);
}

unsigned h_log_count(struct h_daemon *d, const char *needle) {
        char *text = read_all(d->log);
        unsigned count = 0;

        for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
                count++;
        free(text);
        return count;
}

bool h_log_count_wait(struct h_daemon *d, const char *needle, unsigned n, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                h_notify_drain(d);
                if (h_log_count(d, needle) >= n)
                        return true;
                if (remaining(deadline) == 0)
                        return false;
                poll(NULL, 0, 20); /* a file has no readiness to wait on; re-read shortly */
        }
}

char *h_log_rest_wait(struct h_daemon *d, const char *needle, int timeout_ms) {
        char *text, *p, *end, *rest;

        if (!h_log_count_wait(d, needle, 1, timeout_ms))
                return NULL;
        text = h_log_text(d);
        p = strstr(text, needle) + strlen(needle);
        end = strchr(p, '\n');
        rest = strndup(p, end ? (size_t)(end - p) : strlen(p));
        free(text);
        return rest;
}

static pid_t read_pidfile(const char *path) {
        FILE *f = fopen(path, "re");
        int pid = 0;

        if (!f)
                return 0;
        if (fscanf(f, "%d", &pid) != 1)
                pid = 0;
        fclose(f);
        return (pid_t)pid;
}

pid_t h_pidfile_wait(const char *path, pid_t not_this, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                pid_t pid = read_pidfile(path);
                if (pid > 0 && pid != not_this)
                        return pid;
                if (remaining(deadline) == 0)
                        return 0;
                poll(NULL, 0, 10); /* written by another process: nothing to wait on */
        }
}

bool h_proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgid) {
        struct proc_stat st;

        if (!proc_stat(pid, &st))
                return false;
        *state = st.state;
        if (ppid)
                *ppid = st.ppid;
        if (pgid)
                *pgid = st.pgid;
        return true;
}

bool h_pid_gone(pid_t pid) {
        char state;

        if (kill(pid, 0) < 0 && errno == ESRCH)
                return true;
        return !h_proc_stat(pid, &state, NULL, NULL) || state == 'Z' || state == 'X';
}

bool h_pid_gone_wait(pid_t pid, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                if (h_pid_gone(pid))
                        return true;
                if (remaining(deadline) == 0)
                        return false;
                poll(NULL, 0, 10); /* not our child: no pidfd wait for a zombie's end */
        }
}

struct child_match {
        pid_t ppid;
        bool zombies_only;
};

static bool is_child(pid_t pid, void *arg) {
        const struct child_match *m = arg;
        pid_t parent;
        char state;

        return h_proc_stat(pid, &state, &parent, NULL) && parent == m->ppid && (!m->zombies_only || state == 'Z');
}

unsigned h_count_children(pid_t ppid, bool zombies_only) {
        int count = proc_count(is_child, &(struct child_match){ .ppid = ppid, .zombies_only = zombies_only });

        cr_assert_geq(count, 0, "cannot read /proc");
        return (unsigned)count;
}

size_t h_read_environ(pid_t pid, char *buf, size_t size) {
        char path[64];
        size_t len = 0;
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
                len += (size_t)n;
        close(fd);
        buf[len] = '\0';
        return len;
}

bool h_environ_has(const char *env, size_t len, const char *text, bool exact) {
        for (size_t i = 0; i < len; i += strlen(env + i) + 1)
                if (exact ? strcmp(env + i, text) == 0 : strncmp(env + i, text, strlen(text)) == 0)
                        return true;
        return false;
}

unsigned h_count_server_processes(const char *server) {
        static char env[256 * 1024];
        char entry[128];
        DIR *dir = opendir("/proc");
        struct dirent *de;
        unsigned count = 0;

        cr_assert_not_null(dir);
        snprintf(entry, sizeof entry, "MCPVISOR_SERVER=%s", server);
        while ((de = readdir(dir))) {
                pid_t pid;
                size_t len;

                if (!isdigit((unsigned char)de->d_name[0]))
                        continue;
                pid = (pid_t)atoi(de->d_name);
                len = h_read_environ(pid, env, sizeof env);
                if (len && h_environ_has(env, len, entry, true) &&
                    h_environ_has(env, len, "MCPVISOR_INSTANCE=", false) && !h_pid_gone(pid))
                        count++;
        }
        closedir(dir);
        return count;
}

int h_fake_journald(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0)
                cr_skip_test("needs root and mount namespaces to stand in for journald");
        cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        if (mkdir("/run/systemd", 0755) < 0 && errno != EEXIST)
                cr_skip_test("cannot create /run/systemd");
        cr_assert_eq(mount("tmpfs", "/run/systemd", "tmpfs", 0, "mode=0755"), 0, "%s", strerror(errno));
        cr_assert_eq(mkdir("/run/systemd/journal", 0755), 0);
        strcpy(sa.sun_path, "/run/systemd/journal/socket");
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        return fd;
}

void h_remove_tree(const char *dir) {
        if (dir && dir[0])
                nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

void h_notify_drain(struct h_daemon *d) {
        if (d->notify_fd >= 0)
                drain_notify(d);
}

int h_stop_draining(struct h_daemon *d, int sig, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        int status;

        if (d->pid <= 0)
                return d->exit_status;
        kill(d->pid, sig);
        while ((status = h_wait_exit(d, 20)) == -1 && remaining(deadline) > 0)
                h_notify_drain(d);
        if (status == -1) {
                kill(d->pid, SIGKILL);
                h_wait_exit(d, H_TIMEOUT_MS);
        }
        return status;
}

/* ---- Helpers for routing tests; see harness.h ---- */

char *h_recv_line_draining(struct h_daemon *d, struct h_conn *c, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                struct pollfd p[2] = { { c->fd, POLLIN, 0 }, { d->notify_fd, POLLIN, 0 } };
                char *line = take_line(c);

                if (line)
                        return line;
                h_notify_drain(d);
                if (remaining(deadline) == 0)
                        return NULL;
                if (poll(p, 2, remaining(deadline)) <= 0)
                        continue; /* the deadline passed: checked above */
                /* readable now: fill() does not wait */
                if (p[0].revents && fill(c, h_now_ms()) == 0)
                        return NULL; /* EOF */
        }
}

/* ---- Helpers for MCP clients; see harness.h ---- */

static struct h_client *client_connect(struct h_daemon *d) {
        struct h_client *x = calloc(1, sizeof *x);

        cr_assert_not_null(x);
        x->d = d;
        x->c = h_connect(d->sock, H_TIMEOUT_MS);
        x->inbox = json_object_new_array();
        return x;
}

/* initialize, declaring capabilities (JSON text), then notifications/initialized. */
static void client_initialize(struct h_client *x, const char *capabilities, json_object **init_result) {
        json_object *r;
        char *params;

        cr_assert_geq(asprintf(&params,
                               "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":%s,"
                               "\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}",
                               capabilities),
                      0);
        r = h_client_call(x, "0", "initialize", params);
        free(params);
        cr_assert_str_eq(h_str(r, "result.protocolVersion"), "2025-11-25", "initialize: %s", h_json_text(r));
        if (init_result)
                *init_result = r;
        else
                json_object_put(r);
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
}

struct h_client *h_client_open(struct h_daemon *d, bool raw, json_object **init_result) {
        struct h_client *x = client_connect(d);

        if (!raw)
                client_initialize(x, "{}", init_result);
        return x;
}

struct h_client *h_client_open_with(struct h_daemon *d, const char *capabilities, json_object **init_result) {
        struct h_client *x = client_connect(d);

        client_initialize(x, capabilities, init_result);
        return x;
}

void h_client_close(struct h_client *x) {
        if (!x)
                return;
        h_close(x->c);
        json_object_put(x->inbox);
        free(x);
}

void h_client_close_freed(struct h_daemon *d, struct h_client *x) {
        const char *needle = "; 0 clients connected|";
        unsigned before = h_notify_count(d, needle);
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        h_client_close(x);
        while (h_notify_count(d, needle) <= before) {
                cr_assert_lt(h_now_ms(), deadline, "the daemon did not free a closed client; got %s", d->notices);
                poll(NULL, 0, 10); /* h_notify_count() drains the datagrams that came meanwhile */
        }
}

const char *h_json_text(json_object *o) {
        return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

json_object *h_client_read(struct h_client *x, int timeout_ms) {
        char *line = h_recv_line_draining(x->d, x->c, timeout_ms);
        json_object *o;

        if (!line)
                return NULL;
        o = json_tokener_parse(line);
        cr_assert_not_null(o, "the daemon sent a line that is not JSON: %.300s", line);
        free(line);
        return o;
}

bool h_is_answer(json_object *msg, const char *arg) {
        json_object *id;

        return json_object_object_get_ex(msg, "id", &id) && !json_object_object_get_ex(msg, "method", NULL) &&
               strcmp(h_json_text(id), arg) == 0;
}

bool h_is_method(json_object *msg, const char *arg) {
        return strcmp(h_str(msg, "method"), arg) == 0;
}

json_object *h_take(struct h_client *x, h_matcher match, const char *arg, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        json_object *msg;

        for (size_t i = 0; i < json_object_array_length(x->inbox); i++) {
                msg = json_object_array_get_idx(x->inbox, i);
                if (match(msg, arg)) {
                        json_object_get(msg);
                        json_object_array_del_idx(x->inbox, i, 1);
                        return msg;
                }
        }
        for (;;) {
                msg = h_client_read(x, remaining(deadline));
                if (!msg)
                        return NULL;
                if (match(msg, arg))
                        return msg;
                json_object_array_add(x->inbox, msg);
        }
}

unsigned h_inbox_drop(struct h_client *x, h_matcher match, const char *arg) {
        unsigned n = 0;

        for (size_t i = json_object_array_length(x->inbox); i-- > 0;)
                if (match(json_object_array_get_idx(x->inbox, i), arg)) {
                        json_object_array_del_idx(x->inbox, i, 1);
                        n++;
                }
        return n;
}

void h_client_request(struct h_client *x, const char *id, const char *method, const char *params) {
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"%s\"%s%s}\n", id, method,
                params ? ",\"params\":" : "", params ? params : "");
}

json_object *h_client_answer(struct h_client *x, const char *id) {
        json_object *msg = h_take(x, h_is_answer, id, H_TIMEOUT_MS);

        cr_assert_not_null(msg, "no answer for id %s within %d ms", id, H_TIMEOUT_MS);
        return msg;
}

json_object *h_client_call(struct h_client *x, const char *id, const char *method, const char *params) {
        h_client_request(x, id, method, params);
        return h_client_answer(x, id);
}

void h_client_tool_request(struct h_client *x, const char *id, const char *name, const char *arguments) {
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"tools/call\","
                      "\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n", id, name, arguments);
}

json_object *h_client_tool_call(struct h_client *x, const char *id, const char *name, const char *arguments) {
        h_client_tool_request(x, id, name, arguments);
        return h_client_answer(x, id);
}

const char *h_result_text(json_object *msg) {
        cr_assert_not_null(h_get(msg, "result.content"), "expected a tool result, got %s", h_json_text(msg));
        return h_str(msg, "result.content.0.text");
}

const char *h_names_of(json_object *msg, const char *key, const char *field) {
        /* grown as needed, kept for the next call: lists of thousands of names */
        static char *buf;
        static size_t cap;
        char path[64];
        json_object *items;
        size_t used = 0;

        snprintf(path, sizeof path, "result.%s", key);
        items = h_get(msg, path);
        cr_assert(json_object_is_type(items, json_type_array), "no %s array in %s", key, h_json_text(msg));
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                const char *name = h_str(json_object_array_get_idx(items, i), field);
                size_t n = strlen(name) + 1;

                if (used + n + 1 > cap) {
                        cap = (used + n + 1) * 2;
                        buf = realloc(buf, cap);
                        cr_assert_not_null(buf);
                }
                used += (size_t)sprintf(buf + used, "%s%s", i ? "," : "", name);
        }
        return used ? buf : "";
}

const char *h_tool_names(json_object *msg) {
        return h_names_of(msg, "tools", "name");
}

bool h_has_item(const char *list, const char *name) {
        size_t n = strlen(name);

        for (const char *p = list; (p = strstr(p, name)); p += n)
                if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
                        return true;
        return false;
}

/* ---- Helpers for the control socket (test_reload.c); see harness.h ---- */

json_object *h_control(struct h_daemon *d, const char *method, const char *params) {
        struct h_conn *c = h_connect(d->control, H_TIMEOUT_MS);
        json_object *o;
        char *line;

        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"%s%s}\n", method, params ? ",\"params\":" : "",
                params ? params : "");
        line = h_recv_line_draining(d, c, H_TIMEOUT_MS);
        h_close(c);
        cr_assert_not_null(line, "no answer to control request %s within %d ms", method, H_TIMEOUT_MS);
        o = json_tokener_parse(line);
        cr_assert_not_null(o, "the control socket sent a line that is not JSON: %.300s", line);
        free(line);
        return o;
}
/* ---- end of the control socket helpers ---- */

/* ---- Helpers for fault-injection tests; see harness.h ---- */

#include <stdint.h>

static bool has_env_entry(pid_t pid, void *arg) {
        static char env[256 * 1024];
        size_t len = h_read_environ(pid, env, sizeof env);

        return len && h_environ_has(env, len, arg, true) && !h_pid_gone(pid);
}

unsigned h_count_processes_with_env(const char *entry) {
        int count = proc_count(has_env_entry, (void *)entry);

        cr_assert_geq(count, 0, "cannot read /proc");
        return (unsigned)count;
}

/* One client of a load: its requests are numbered from 0, sent with id number + 1. */
struct load_client {
        struct h_client *x;
        unsigned given, sent, answered, in_flight;
        uint8_t *answers;            /* per request: answers received */
        long long *sent_at;          /* per request, ms */
        bool eof;
};

struct h_load {
        struct h_daemon *d;
        struct load_client *clients;
        unsigned n, window;
        const struct h_call_kind *kinds;
        size_t n_kinds;
        struct h_load_stats total, *per_kind;
};

struct h_load *h_load_new(struct h_daemon *d, unsigned clients, unsigned window, const struct h_call_kind *kinds,
                          size_t n_kinds) {
        struct h_load *l = calloc(1, sizeof *l);

        cr_assert(l && clients > 0 && window > 0 && n_kinds > 0);
        *l = (struct h_load){ .d = d, .n = clients, .window = window, .kinds = kinds, .n_kinds = n_kinds };
        l->clients = calloc(clients, sizeof *l->clients);
        l->per_kind = calloc(n_kinds, sizeof *l->per_kind);
        cr_assert(l->clients && l->per_kind);
        for (unsigned i = 0; i < clients; i++)
                l->clients[i].x = h_client_open(d, false, NULL);
        return l;
}

void h_load_add(struct h_load *l, unsigned n) {
        for (unsigned i = 0; i < l->n; i++) {
                struct load_client *c = &l->clients[i];
                unsigned total = c->given + n;

                c->answers = realloc(c->answers, total * sizeof *c->answers);
                c->sent_at = realloc(c->sent_at, total * sizeof *c->sent_at);
                cr_assert(c->answers && c->sent_at);
                memset(c->answers + c->given, 0, n * sizeof *c->answers);
                c->given = total;
        }
}

static size_t load_kind(const struct h_load *l, unsigned client, unsigned seq) {
        return (client + seq) % l->n_kinds;
}

static void load_unique_text(char *buf, size_t size, unsigned client, unsigned seq) {
        snprintf(buf, size, "c%u-%u", client, seq);
}

static void load_send_one(struct h_load *l, unsigned client) {
        struct load_client *c = &l->clients[client];
        const struct h_call_kind *k = &l->kinds[load_kind(l, client, c->sent)];
        char text[64], args[128];

        if (!k->arguments) {
                load_unique_text(text, sizeof text, client, c->sent);
                snprintf(args, sizeof args, "{\"text\":\"%s\"}", text);
        }
        h_sendf(c->x->c, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                         "\"arguments\":%s}}\n", c->sent + 1, k->tool, k->arguments ? k->arguments : args);
        c->sent_at[c->sent] = h_now_ms();
        c->sent++;
        c->in_flight++;
        l->total.sent++;
        l->per_kind[load_kind(l, client, c->sent - 1)].sent++;
}

static void load_send(struct h_load *l) {
        for (unsigned i = 0; i < l->n; i++) {
                struct load_client *c = &l->clients[i];

                while (!c->eof && c->sent < c->given && c->in_flight < l->window)
                        load_send_one(l, i);
        }
}

static bool load_done(const struct h_load *l) {
        for (unsigned i = 0; i < l->n; i++) {
                const struct load_client *c = &l->clients[i];

                if (!c->eof && (c->sent < c->given || c->in_flight > 0))
                        return false;
        }
        return true;
}

/* Both the totals and the kind's counts take every event. */
#define LOAD_COUNT(l, kind, field) ((l)->total.field++, (l)->per_kind[kind].field++)

static void load_account(struct h_load *l, unsigned client, unsigned seq, json_object *msg) {
        struct load_client *c = &l->clients[client];
        size_t kind = load_kind(l, client, seq);
        const struct h_call_kind *k = &l->kinds[kind];
        long long latency = h_now_ms() - c->sent_at[seq];
        bool wrong;
        char text[64];

        if (c->answers[seq]++ > 0) {
                LOAD_COUNT(l, kind, duplicates);
                return;
        }
        c->answered++;
        c->in_flight--;
        if (h_get(msg, "result")) {
                LOAD_COUNT(l, kind, results);
                load_unique_text(text, sizeof text, client, seq);
                wrong = !k->arguments && strcmp(h_str(msg, "result.content.0.text"), text) != 0;
        } else {
                LOAD_COUNT(l, kind, errors);
                wrong = !k->may_fail;
        }
        if (wrong) {
                LOAD_COUNT(l, kind, wrong);
                if (getenv("H_VERBOSE"))
                        fprintf(stderr, "load: client %u, id %u: %s\n", client, seq + 1, h_json_text(msg));
        }
        if (!k->may_fail) {
                if (latency > l->total.max_latency_ms)
                        l->total.max_latency_ms = latency;
                if (latency > l->per_kind[kind].max_latency_ms)
                        l->per_kind[kind].max_latency_ms = latency;
        }
}

/* An answer (no "method") is accounted for; anything else (notifications) is not ours. */
static void load_take(struct h_load *l, unsigned client, const char *line) {
        struct load_client *c = &l->clients[client];
        json_object *msg = json_tokener_parse(line), *id;
        int64_t n;

        cr_assert_not_null(msg, "the daemon sent a line that is not JSON: %.300s", line);
        if (!json_object_object_get_ex(msg, "method", NULL) && json_object_object_get_ex(msg, "id", &id)) {
                n = json_object_is_type(id, json_type_int) ? json_object_get_int64(id) : 0;
                if (n >= 1 && n <= (int64_t)c->sent)
                        load_account(l, client, (unsigned)(n - 1), msg);
                else
                        l->total.strays++;
        }
        json_object_put(msg);
}

static void load_take_lines(struct h_load *l, unsigned client) {
        char *line;

        while ((line = take_line(l->clients[client].x->c))) {
                load_take(l, client, line);
                free(line);
        }
}

bool h_load_pump(struct h_load *l, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        struct pollfd *p = calloc(l->n + 1, sizeof *p);

        cr_assert_not_null(p);
        for (;;) {
                for (unsigned i = 0; i < l->n; i++)
                        load_take_lines(l, i);
                load_send(l);
                h_notify_drain(l->d);
                if (load_done(l) || remaining(deadline) == 0)
                        break;
                for (unsigned i = 0; i < l->n; i++)
                        p[i] = (struct pollfd){ l->clients[i].eof ? -1 : l->clients[i].x->c->fd, POLLIN, 0 };
                p[l->n] = (struct pollfd){ l->d->notify_fd, POLLIN, 0 };
                if (poll(p, l->n + 1, remaining(deadline)) <= 0)
                        continue;
                for (unsigned i = 0; i < l->n; i++)
                        if (p[i].revents && fill(l->clients[i].x->c, h_now_ms()) == 0 && !l->clients[i].eof) {
                                l->clients[i].eof = true;
                                l->total.eofs++;
                        }
        }
        free(p);
        return load_done(l);
}

void h_load_finish(struct h_load *l, int timeout_ms) {
        bool done = h_load_pump(l, timeout_ms);
        struct h_load_stats s = l->total;

        cr_assert(done, "the load did not finish within %d ms: %u sent, %u answered", timeout_ms, s.sent,
                  s.results + s.errors);
        cr_assert_eq(s.eofs, 0, "%u load clients were disconnected", s.eofs);
        cr_assert_eq(s.duplicates, 0, "%u requests were answered more than once", s.duplicates);
        cr_assert_eq(s.strays, 0, "%u answers to no request", s.strays);
        cr_assert_eq(s.wrong, 0, "%u wrong answers (an error where a result was due, or another's echo)", s.wrong);
        for (unsigned i = 0; i < l->n; i++) {
                const struct load_client *c = &l->clients[i];

                cr_assert_eq(c->answered, c->given, "client %u: %u of %u requests answered", i, c->answered,
                             c->given);
                for (unsigned seq = 0; seq < c->given; seq++)
                        cr_assert_eq(c->answers[seq], 1, "client %u, id %u: %u answers", i, seq + 1,
                                     c->answers[seq]);
        }
}

struct h_load_stats h_load_stats(const struct h_load *l) {
        return l->total;
}

struct h_load_stats h_load_kind_stats(const struct h_load *l, size_t kind) {
        cr_assert_lt(kind, l->n_kinds);
        return l->per_kind[kind];
}

void h_load_free(struct h_load *l) {
        if (!l)
                return;
        for (unsigned i = 0; i < l->n; i++) {
                h_client_close(l->clients[i].x);
                free(l->clients[i].answers);
                free(l->clients[i].sent_at);
        }
        free(l->clients);
        free(l->per_kind);
        free(l);
}
/* ---- end of the fault-injection helpers ---- */

void h_teardown_expect(bool ok, const char *what) {
        if (ok)
                return;
        fprintf(stderr, "teardown check failed: %s\n", what);
        abort();
}
