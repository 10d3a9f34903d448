/* Unit tests for listen.c: picking socket-activated fds and binding our own sockets. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen.h"
#include "unit-helpers.h"

static const char *tmpdir;

static void setup(void) {
        tmpdir = tmpdir_make();
}

static void teardown(void) {
        tmpdir_remove();
}

TestSuite(listen, .init = setup, .fini = teardown);

static struct sockaddr_un address(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        cr_assert_lt(strlen(path), sizeof sa.sun_path);
        strcpy(sa.sun_path, path);
        return sa;
}

/* A Unix socket of type bound at tmpdir/name; listening if asked. */
static int make_socket(int type, const char *name, bool listening) {
        struct sockaddr_un sa = address(tmp_path(name));
        int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

        cr_assert_geq(fd, 0);
        cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind %s: %s", sa.sun_path, strerror(errno));
        if (listening)
                cr_assert_eq(listen(fd, 8), 0);
        return fd;
}

static int make_listener(const char *name) {
        return make_socket(SOCK_STREAM, name, true);
}

/* 0 if something accepts connections at path, else -errno. */
static int try_connect(const char *path) {
        struct sockaddr_un sa = address(path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

        cr_assert_geq(fd, 0);
        r = connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ? -errno : 0;
        close(fd);
        return r;
}

static bool exists(const char *path) {
        struct stat st;

        return lstat(path, &st) == 0;
}

/* listen_pick_activated */

static int pick(unsigned n, const int *fds, char *const *names, struct activated_fds *ret, const char **why) {
        *ret = (struct activated_fds){ .fd = { -2, -2 } };
        *why = NULL;
        return listen_pick_activated(n, fds, names, ret, why);
}

Test(listen, pick_by_name) {
        int fds[] = { make_listener("a"), make_listener("b") };
        char *names[] = { "mcp", "control" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(2, fds, names, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], fds[0]);
        cr_assert_eq(a.fd[LISTEN_CONTROL], fds[1]);
}

Test(listen, pick_by_name_reversed) {
        int fds[] = { make_listener("a"), make_listener("b") };
        char *names[] = { "control", "mcp" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(2, fds, names, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], fds[1]);
        cr_assert_eq(a.fd[LISTEN_CONTROL], fds[0]);
}

Test(listen, pick_control_only) {
        int fds[] = { make_listener("a") };
        char *names[] = { "control" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(1, fds, names, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], -1);
        cr_assert_eq(a.fd[LISTEN_CONTROL], fds[0]);
}

Test(listen, pick_single_unnamed) {
        static const char *const single_names[] = { "unknown", "mcpvisor.socket", "" };
        int fds[] = { make_listener("a") };
        struct activated_fds a;
        const char *why;

        for (size_t i = 0; i < sizeof single_names / sizeof single_names[0]; i++) {
                char *names[] = { (char *)single_names[i] };

                cr_assert_eq(pick(1, fds, names, &a, &why), 0, "\"%s\": %s", single_names[i], why);
                cr_assert_eq(a.fd[LISTEN_MCP], fds[0], "\"%s\"", single_names[i]);
                cr_assert_eq(a.fd[LISTEN_CONTROL], -1);
        }
}

Test(listen, pick_without_names) {
        int fds[] = { make_listener("a") };
        char *names[] = { NULL };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(1, fds, NULL, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], fds[0]);
        cr_assert_eq(pick(1, fds, names, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], fds[0]);
}

Test(listen, pick_ignores_stored) {
        int pipefd[2];
        int fds[3] = { make_listener("a"), -1, make_listener("b") };
        char *names[] = { "mcp", "stored", "control" };
        struct activated_fds a;
        const char *why;

        /* An fd store entry need not be a socket at all. */
        cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
        fds[1] = pipefd[0];
        cr_assert_eq(pick(3, fds, names, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], fds[0]);
        cr_assert_eq(a.fd[LISTEN_CONTROL], fds[2]);
}

/* Regression test; it was a bug in src/listen.c:27: role_of_name() is given the total count n, fd store entries
 * included, so one unnamed socket next to a "stored" entry is rejected although the
 * header says fd store entries are ignored. */
Test(listen, pick_single_unnamed_with_stored) {
        int fds[] = { make_listener("s"), make_listener("a") };
        char *names[] = { "stored", "mcpvisor.socket" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(2, fds, names, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], fds[1]);
}

Test(listen, pick_only_stored) {
        int fds[] = { make_listener("a") };
        char *names[] = { "stored" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(1, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(why);
        cr_assert_not_null(strstr(why, "mcp"), "%s", why);
}

Test(listen, pick_nothing) {
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(0, NULL, NULL, &a, &why), -EINVAL);
        cr_assert_not_null(why);
}

Test(listen, pick_two_unnamed) {
        int fds[] = { make_listener("a"), make_listener("b") };
        char *names[] = { "unknown", "unknown" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(2, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(why);
        cr_assert_not_null(strstr(why, "FileDescriptorName"), "%s", why);
        cr_assert_eq(pick(2, fds, NULL, &a, &why), -EINVAL);
        cr_assert_not_null(strstr(why, "FileDescriptorName"), "%s", why);
}

Test(listen, pick_one_named_one_not) {
        int fds[] = { make_listener("a"), make_listener("b") };
        char *names[] = { "mcp", "mcpvisor-control.socket" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(2, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(strstr(why, "FileDescriptorName"), "%s", why);
}

Test(listen, pick_duplicate_names) {
        int fds[] = { make_listener("a"), make_listener("b") };
        char *names[] = { "mcp", "mcp" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(2, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(why);
        cr_assert_not_null(strstr(why, "same FileDescriptorName"), "%s", why);
        names[0] = names[1] = "control";
        cr_assert_eq(pick(2, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(strstr(why, "same"), "%s", why);
}

Test(listen, pick_not_listening) {
        int fds[] = { make_socket(SOCK_STREAM, "a", false) };
        char *names[] = { "mcp" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(1, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(why);
        cr_assert_not_null(strstr(why, "listening"), "%s", why);
}

Test(listen, pick_datagram) {
        int fds[] = { make_listener("a"), make_socket(SOCK_DGRAM, "b", false) };
        char *names[] = { "mcp", "control" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pick(2, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(strstr(why, "ListenStream"), "%s", why);
}

Test(listen, pick_not_a_socket) {
        int pipefd[2];
        char *names[] = { "mcp" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
        cr_assert_eq(pick(1, pipefd, names, &a, &why), -EINVAL);
        cr_assert_not_null(why);
}

/* listen_bind_unix */

static void expect_socket_node(const char *path, mode_t mode) {
        struct stat st;

        cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
        cr_assert(S_ISSOCK(st.st_mode), "%s is not a socket", path);
        cr_assert_eq(st.st_mode & 0777, mode, "%s has mode %o, expected %o", path, st.st_mode & 0777, mode);
}

/* Undoes a successful bind; bound_socket_done() leaves fd to the listener that owns it. */
static void release(struct bound_socket *b) {
        int fd = b->fd;

        bound_socket_done(b);
        close(fd);
}

Test(listen, bind_fresh) {
        const char *path = tmp_path("mcp.sock");
        struct bound_socket b = { .fd = -1, .lock_fd = -1 };
        int flags;

        cr_assert_eq(listen_bind_unix(path, 0660, &b), 0);
        cr_assert_geq(b.fd, 0);
        cr_assert_geq(b.lock_fd, 0);
        cr_assert_str_eq(b.path, path);
        expect_socket_node(path, 0660);
        cr_assert(exists(tmp_path("mcp.sock.lock")));
        flags = fcntl(b.fd, F_GETFD);
        cr_assert(flags & FD_CLOEXEC);
        cr_assert(fcntl(b.fd, F_GETFL) & O_NONBLOCK);
        cr_assert_eq(try_connect(path), 0, "the socket must already listen");
        release(&b);
}

Test(listen, bind_mode_ignores_umask) {
        const char *path = tmp_path("a.sock");
        struct bound_socket b;

        umask(077);
        cr_assert_eq(listen_bind_unix(path, 0666, &b), 0);
        expect_socket_node(path, 0666);
        cr_assert_eq(umask(022), 077, "the process umask must be restored");
        release(&b);

        path = tmp_path("b.sock");
        cr_assert_eq(listen_bind_unix(path, 0600, &b), 0);
        expect_socket_node(path, 0600);
        release(&b);
}

Test(listen, bind_replaces_stale) {
        const char *path = tmp_path("mcp.sock");
        struct bound_socket b;

        close(make_socket(SOCK_STREAM, "mcp.sock", false));
        cr_assert(exists(path));
        cr_assert_eq(try_connect(path), -ECONNREFUSED);
        cr_assert_eq(listen_bind_unix(path, 0660, &b), 0);
        expect_socket_node(path, 0660);
        cr_assert_eq(try_connect(path), 0);
        release(&b);
}

Test(listen, bind_replaces_closed_listener) {
        const char *path = tmp_path("mcp.sock");
        struct bound_socket b;

        close(make_listener("mcp.sock"));
        cr_assert_eq(listen_bind_unix(path, 0600, &b), 0);
        expect_socket_node(path, 0600);
        release(&b);
}

Test(listen, bind_live_listener) {
        const char *path = tmp_path("mcp.sock");
        struct bound_socket b = { .fd = -1, .lock_fd = -1 };
        int live = make_listener("mcp.sock");

        cr_assert_eq(listen_bind_unix(path, 0660, &b), -EADDRINUSE);
        cr_assert_eq(b.fd, -1, "ret must be untouched on failure");
        cr_assert_eq(try_connect(path), 0, "the live daemon's socket must survive");
        close(live);
}

Test(listen, bind_twice) {
        const char *path = tmp_path("mcp.sock");
        struct bound_socket a, b;

        cr_assert_eq(listen_bind_unix(path, 0660, &a), 0);
        cr_assert_eq(listen_bind_unix(path, 0660, &b), -EADDRINUSE);
        cr_assert_eq(try_connect(path), 0);
        release(&a);
}

Test(listen, bind_lock_held) {
        const char *path = tmp_path("mcp.sock");
        struct bound_socket b;
        int lock = open(tmp_path("mcp.sock.lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0600);

        /* Another starter holds the lock: it is about to bind. */
        cr_assert_geq(lock, 0);
        cr_assert_eq(flock(lock, LOCK_EX | LOCK_NB), 0);
        cr_assert_eq(listen_bind_unix(path, 0660, &b), -EADDRINUSE);
        cr_assert_not(exists(path));
        close(lock);
        cr_assert_eq(listen_bind_unix(path, 0660, &b), 0);
        release(&b);
}

Test(listen, bind_regular_file) {
        const char *path = tmp_path("mcp.sock");
        struct bound_socket b;
        char buf[32] = { 0 };
        struct stat st;
        FILE *f = fopen(path, "w");

        cr_assert_not_null(f);
        fputs("precious", f);
        fclose(f);
        cr_assert_eq(listen_bind_unix(path, 0660, &b), -EEXIST);
        cr_assert_eq(lstat(path, &st), 0);
        cr_assert(S_ISREG(st.st_mode));
        f = fopen(path, "r");
        cr_assert_not_null(f);
        cr_assert_not_null(fgets(buf, sizeof buf, f));
        fclose(f);
        cr_assert_str_eq(buf, "precious");
}

Test(listen, bind_directory) {
        const char *path = tmp_path("dir");
        struct bound_socket b;
        struct stat st;

        cr_assert_eq(mkdir(path, 0700), 0);
        cr_assert_eq(listen_bind_unix(path, 0660, &b), -EEXIST);
        cr_assert_eq(lstat(path, &st), 0);
        cr_assert(S_ISDIR(st.st_mode));
}

Test(listen, bind_symlink) {
        const char *target = tmp_path("target"), *path = tmp_path("mcp.sock");
        struct bound_socket b;
        struct stat st;

        close(make_socket(SOCK_STREAM, "target", false));
        cr_assert_eq(symlink(target, path), 0);
        /* Not replaced even though it points at a stale socket: it is not ours. */
        cr_assert_eq(listen_bind_unix(path, 0660, &b), -EEXIST);
        cr_assert_eq(lstat(path, &st), 0);
        cr_assert(S_ISLNK(st.st_mode));
}

static char *path_of_length(size_t len) {
        char *p = malloc(len + 1);
        size_t dl = strlen(tmpdir);

        cr_assert_not_null(p);
        cr_assert_gt(len, dl + 2);
        memcpy(p, tmpdir, dl);
        p[dl] = '/';
        memset(p + dl + 1, 's', len - dl - 1);
        p[len] = '\0';
        return p;
}

Test(listen, bind_longest_path) {
        char *path = path_of_length(107);
        struct bound_socket b;

        cr_assert_eq(listen_bind_unix(path, 0660, &b), 0);
        expect_socket_node(path, 0660);
        release(&b);
        free(path);
}

Test(listen, bind_path_too_long) {
        char *path = path_of_length(108), lock[256];
        struct bound_socket b;

        cr_assert_eq(listen_bind_unix(path, 0660, &b), -ENAMETOOLONG);
        cr_assert_not(exists(path));
        snprintf(lock, sizeof lock, "%s.lock", path);
        cr_assert_not(exists(lock));
        free(path);

        path = path_of_length(300);
        cr_assert_eq(listen_bind_unix(path, 0660, &b), -ENAMETOOLONG);
        free(path);
}

Test(listen, bind_creates_parents) {
        const char *path = tmp_path("a/b/c/mcp.sock");
        struct bound_socket b;
        struct stat st;

        cr_assert_eq(listen_bind_unix(path, 0660, &b), 0);
        expect_socket_node(path, 0660);
        cr_assert_eq(stat(tmp_path("a/b/c"), &st), 0);
        cr_assert(S_ISDIR(st.st_mode));
        cr_assert_eq(try_connect(path), 0);
        release(&b);
}

Test(listen, bind_parent_is_file) {
        const char *path = tmp_path("file/mcp.sock");
        struct bound_socket b;
        FILE *f = fopen(tmp_path("file"), "w");

        cr_assert_not_null(f);
        fclose(f);
        cr_assert_lt(listen_bind_unix(path, 0660, &b), 0);
}

/* Regression test; it was a bug in src/listen.c:84: for an empty path (mcpvisord --socket '') mkdir_parents() starts
 * strchr() one byte past the end of strdup(""), and take_lock() then creates ".lock"
 * in the working directory. An empty path should be refused up front. */
Test(listen, bind_empty_path) {
        struct bound_socket b;

        cr_assert_eq(chdir(tmpdir), 0);
        cr_assert_lt(listen_bind_unix("", 0660, &b), 0);
        cr_assert_not(exists(tmp_path(".lock")), "a stray .lock was created in the working directory");
}

Test(listen, done_removes_nodes) {
        const char *path = tmp_path("mcp.sock"), *lock = tmp_path("mcp.sock.lock");
        struct bound_socket b;
        int fd;

        cr_assert_eq(listen_bind_unix(path, 0660, &b), 0);
        cr_assert(exists(path));
        cr_assert(exists(lock));
        fd = b.fd;
        bound_socket_done(&b);
        cr_assert_not(exists(path));
        cr_assert_not(exists(lock));
        cr_assert_null(b.path);
        cr_assert_eq(b.fd, -1);
        cr_assert_eq(b.lock_fd, -1);
        close(fd);
        /* The lock was released: binding again works. */
        cr_assert_eq(listen_bind_unix(path, 0660, &b), 0);
        release(&b);
}

Test(listen, done_on_unbound) {
        struct bound_socket b = { .fd = -1, .lock_fd = -1 };

        bound_socket_done(&b);
        cr_assert_null(b.path);
        cr_assert_eq(b.fd, -1);
        cr_assert_eq(b.lock_fd, -1);
}

/* issue 18: sockets named http are the HTTP front door's, TCP ones included, and do not make
 * an unnamed socket beside them ambiguous. */
Test(listen, pick_http_sockets) {
        int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fds[3] = { make_listener("a"), tcp, make_listener("b") };
        char *names[] = { "unknown", "http", "http" };
        struct activated_fds a;
        const char *why;

        cr_assert(tcp >= 0 && bind(tcp, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(tcp, 8) == 0);
        cr_assert_eq(pick(3, fds, names, &a, &why), 0, "%s", why);
        cr_assert_eq(a.fd[LISTEN_MCP], fds[0], "the one other socket is the MCP socket");
        cr_assert_eq(a.n_http, 2);
        cr_assert_eq(a.http[0], tcp);
        cr_assert_eq(a.http[1], fds[2]);
}

Test(listen, pick_http_refuses_what_does_not_listen) {
        int pipefd[2];
        int fds[2] = { make_listener("a"), -1 };
        char *names[] = { "mcp", "http" };
        struct activated_fds a;
        const char *why;

        cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
        fds[1] = pipefd[0];
        cr_assert_eq(pick(2, fds, names, &a, &why), -EINVAL);
        cr_assert_not_null(strstr(why, "http"), "%s", why);
}
