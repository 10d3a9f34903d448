/* mcpvisorctl login NAME: signs the caller in to a server reached by URL with "auth":
 * "oauth". It listens on a loopback port of its own (RFC 8252), asks the daemon to begin
 * (the daemon discovers the server's authorization server, registers a client and keeps
 * the PKCE verifier), prints the authorization URL on a line of its own and opens it where
 * a browser is at hand ($BROWSER, else xdg-open under a graphical session), receives the
 * browser's redirect, answers it with a short page, and hands the code, state and iss to
 * the daemon, which exchanges them for the token and keeps it. The whole waits --timeout
 * (5 minutes: a human signs in).
 *
 * mcpvisorctl logout NAME: the caller's token forgotten, revoked at the authorization
 * server where it offers revocation.
 *
 * mcpvisorctl client-metadata NAME: the Client ID Metadata Document its administrator
 * publishes at the server's "clientMetadataUrl". */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl-connection.h"
#include "ctl-status.h"
#include "ctl.h"
#include "time-util.h"

#define LOGIN_TIMEOUT_USEC (300 * USEC_PER_SEC)
#define REQUEST_HEAD_MAX 8192

extern char **environ;

static uint64_t now_mono(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

/* A listening socket on 127.0.0.1, its port chosen by the kernel. */
static int listen_loopback(unsigned *ret_port) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 8) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        *ret_port = ntohs(a.sin_port);
        return fd;
}

/* $BROWSER as a shell command given the URL as "$1": at its "%s" (the convention of
 * $BROWSER), else after it. Malloc'd. */
static char *browser_command(const char *browser) {
        const char *at = strstr(browser, "%s");
        char *cmd = NULL;

        if (at ? asprintf(&cmd, "exec %.*s\"$1\"%s", (int)(at - browser), browser, at + 2) < 0
               : asprintf(&cmd, "exec %s \"$1\"", browser) < 0)
                return NULL;
        return cmd;
}

/* The browser, where there is one: $BROWSER, else xdg-open under a graphical session.
 * 0: none started. */
static pid_t open_browser(const char *url) {
        const char *browser = getenv("BROWSER");
        pid_t pid = 0;

        if (browser && *browser) {
                char *cmd = browser_command(browser);
                char *const argv[] = { "/bin/sh", "-c", cmd, "sh", (char *)url, NULL };
                int r = cmd ? posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) : -1;

                free(cmd);
                return r == 0 ? pid : 0;
        }
        if ((getenv("DISPLAY") && *getenv("DISPLAY")) || (getenv("WAYLAND_DISPLAY") && *getenv("WAYLAND_DISPLAY"))) {
                char *const argv[] = { "xdg-open", (char *)url, NULL };
                if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
                        return 0;
                return pid;
        }
        return 0;
}

static int hex_value(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A query value decoded in place ('+' a space, %XX a byte). */
static void decode(char *s) {
        char *out = s;

        for (; *s; s++) {
                if (*s == '+')
                        *out++ = ' ';
                else if (*s == '%' && hex_value(s[1]) >= 0 && hex_value(s[2]) >= 0) {
                        *out++ = (char)(hex_value(s[1]) * 16 + hex_value(s[2]));
                        s += 2;
                } else
                        *out++ = *s;
        }
        *out = '\0';
}

/* The redirect's parameters, pointers into query (decoded in place). */
struct redirect {
        char *code, *state, *iss, *error;
};

static void parse_query(char *query, struct redirect *r) {
        for (char *save = NULL, *pair = strtok_r(query, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(pair, '=');

                if (!eq)
                        continue;
                *eq = '\0';
                decode(eq + 1);
                if (strcmp(pair, "code") == 0)
                        r->code = eq + 1;
                else if (strcmp(pair, "state") == 0)
                        r->state = eq + 1;
                else if (strcmp(pair, "iss") == 0)
                        r->iss = eq + 1;
                else if (strcmp(pair, "error") == 0)
                        r->error = eq + 1;
        }
}

static void answer_browser(int fd, int status, const char *text) {
        char page[1024];
        int body_len = snprintf(page, sizeof page,
                                "<!doctype html><meta charset=utf-8><title>mcpvisor</title><p>%s</p>\n", text);
        char head[256];
        int head_len = snprintf(head, sizeof head,
                                "HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n"
                                "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                                status, status == 200 ? "OK" : "Not Found", body_len);

        if (write(fd, head, (size_t)head_len) < 0 || write(fd, page, (size_t)body_len) < 0) {
                /* the browser went away: nothing to tell it */
        }
}

/* Reads one request head from fd before deadline into buf; 0, or -ETIMEDOUT, -EIO. */
static int read_head(int fd, char *buf, size_t size, uint64_t deadline) {
        size_t len = 0;

        while (!strstr(buf, "\r\n\r\n") && len + 1 < size) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                uint64_t now = now_mono();
                ssize_t n;

                if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000 + 1)) <= 0)
                        return -ETIMEDOUT;
                n = read(fd, buf + len, size - 1 - len);
                if (n <= 0)
                        return -EIO;
                len += (size_t)n;
                buf[len] = '\0';
        }
        return 0;
}

/* Waits for the browser's GET /callback?...; other requests (a favicon) are answered 404.
 * Returns the connection, the head in buf and its parameters in *r; or a negative errno. */
static int receive_redirect(int listen_fd, uint64_t deadline, char *buf, size_t size, struct redirect *r) {
        for (;;) {
                struct pollfd p = { .fd = listen_fd, .events = POLLIN };
                uint64_t now = now_mono();
                char *target, *end, *query;
                int fd;

                if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000 + 1)) <= 0)
                        return -ETIMEDOUT;
                fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                buf[0] = '\0';
                if (read_head(fd, buf, size, deadline < now_mono() + 10 * USEC_PER_SEC ? deadline : now_mono() + 10 * USEC_PER_SEC) < 0 ||
                    strncmp(buf, "GET /callback", 13) != 0 || (buf[13] != '?' && buf[13] != ' ')) {
                        answer_browser(fd, 404, "Not the sign-in's address.");
                        close(fd);
                        continue;
                }
                target = buf + 4;
                end = strchr(target, ' ');
                if (end)
                        *end = '\0';
                query = strchr(target, '?');
                *r = (struct redirect){ 0 };
                if (query)
                        parse_query(query + 1, r);
                return fd;
        }
}

static json_object *finish_params(const char *name, const struct redirect *r) {
        json_object *p = json_object_new_object();

        json_object_object_add(p, "name", json_object_new_string(name));
        if (r->error)
                json_object_object_add(p, "error", json_object_new_string(r->error));
        if (r->code)
                json_object_object_add(p, "code", json_object_new_string(r->code));
        if (r->state)
                json_object_object_add(p, "state", json_object_new_string(r->state));
        if (r->iss)
                json_object_object_add(p, "iss", json_object_new_string(r->iss));
        return p;
}

static void reap(pid_t browser) {
        if (browser > 0 && waitpid(browser, NULL, WNOHANG) == 0) {
                /* a browser that opens a tab and lingers is left to itself */
        }
}

/* The daemon's answer to loginFinish, told to the browser and the terminal. */
static int finish(struct ctl_conn *conn, const char *name, int fd, const struct redirect *r, uint64_t timeout) {
        _cleanup_json_ json_object *params = finish_params(name, r), *result = NULL, *error = NULL;
        char text[512];

        if (ctl_call(conn, "loginFinish", params, timeout, &result, &error) < 0) {
                answer_browser(fd, 200, "mcpvisor: the sign-in did not finish; see the terminal.");
                return CTL_EXIT_FAILURE;
        }
        if (error) {
                answer_browser(fd, 200, "mcpvisor: the sign-in failed; see the terminal.");
                return ctl_print_daemon_error(error);
        }
        snprintf(text, sizeof text, "mcpvisor: signed in. You may close this tab.");
        answer_browser(fd, 200, text);
        printf("signed in to %s\n", name);
        return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

static int run_login(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL, *error = NULL;
        const char *path = ctl_control_path(ctl), *url;
        uint64_t deadline = now_mono() + ctl->timeout_usec;
        char redirect_uri[64], head[REQUEST_HEAD_MAX];
        struct redirect r;
        struct ctl_conn conn;
        unsigned port = 0;
        pid_t browser;
        int listen_fd, fd, rc;

        if (!path)
                return CTL_EXIT_FAILURE;
        listen_fd = listen_loopback(&port);
        if (listen_fd < 0) {
                fprintf(stderr, CTL_NAME ": login: cannot listen on 127.0.0.1 for the redirect: %s\n", strerror(-listen_fd));
                return CTL_EXIT_FAILURE;
        }
        snprintf(redirect_uri, sizeof redirect_uri, "http://127.0.0.1:%u/callback", port);
        json_object_object_add(params, "name", json_object_new_string(argv[0]));
        json_object_object_add(params, "redirectUri", json_object_new_string(redirect_uri));
        if (ctl_conn_open(&conn, path, ctl->timeout_usec) < 0) {
                close(listen_fd);
                return CTL_EXIT_FAILURE;
        }
        if (ctl_call(&conn, "login", params, ctl->timeout_usec, &result, &error) < 0 || error) {
                rc = error ? ctl_print_daemon_error(error) : CTL_EXIT_FAILURE;
                goto out;
        }
        url = ctl_json_str(result, "url");
        if (!url) {
                fprintf(stderr, CTL_NAME ": login: the daemon gave no URL\n");
                rc = CTL_EXIT_FAILURE;
                goto out;
        }
        fprintf(stderr, "Open this address to sign in to %s:\n", argv[0]);
        printf("%s\n", url);
        fflush(stdout);
        browser = open_browser(url);
        fd = receive_redirect(listen_fd, deadline, head, sizeof head, &r);
        if (fd < 0) {
                fprintf(stderr, CTL_NAME ": login: no sign-in came back within the timeout (--timeout SECONDS)\n");
                reap(browser);
                rc = CTL_EXIT_FAILURE;
                goto out;
        }
        rc = finish(&conn, argv[0], fd, &r, ctl->timeout_usec);
        explicit_bzero(head, sizeof head);
        close(fd);
        reap(browser);
out:
        close(listen_fd);
        ctl_conn_done(&conn);
        return rc;
}

static int run_logout(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL, *error = NULL;
        json_object *v;

        json_object_object_add(params, "name", json_object_new_string(argv[0]));
        if (ctl_call_once(ctl, "logout", params, &result, &error) < 0)
                return CTL_EXIT_FAILURE;
        if (error)
                return ctl_print_daemon_error(error);
        if (json_object_object_get_ex(result, "signedOut", &v) && json_object_get_boolean(v))
                printf("signed out of %s\n", argv[0]);
        else
                printf("%s: not signed in\n", argv[0]);
        return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

/* mcpvisorctl client-metadata NAME: the Client ID Metadata Document to publish at the
 * server's "clientMetadataUrl" (its client_id), as the daemon makes it. */
static int run_client_metadata(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL, *error = NULL;
        json_object *document;

        json_object_object_add(params, "name", json_object_new_string(argv[0]));
        if (ctl_call_once(ctl, "clientMetadata", params, &result, &error) < 0)
                return CTL_EXIT_FAILURE;
        if (error)
                return ctl_print_daemon_error(error);
        if (!json_object_object_get_ex(result, "document", &document)) {
                fprintf(stderr, CTL_NAME ": client-metadata: the daemon gave no document\n");
                return CTL_EXIT_FAILURE;
        }
        return ctl_print_finish(ctl_print_json(document), "document");
}

const struct ctl_command ctl_cmd_login = {
        .name = "login",
        .synopsis = "NAME",
        .summary = "sign in to a server with \"auth\": \"oauth\" (prints the address to open)",
        .min_args = 1,
        .max_args = 1,
        .options = CTL_OPT_TIMEOUT,
        .default_timeout_usec = LOGIN_TIMEOUT_USEC,
        .run = run_login,
};

const struct ctl_command ctl_cmd_logout = {
        .name = "logout",
        .synopsis = "NAME",
        .summary = "forget (and revoke) the sign-in token of a server",
        .min_args = 1,
        .max_args = 1,
        .options = CTL_OPT_TIMEOUT,
        .default_timeout_usec = CTL_DEFAULT_TIMEOUT_USEC,
        .run = run_logout,
};

const struct ctl_command ctl_cmd_client_metadata = {
        .name = "client-metadata",
        .synopsis = "NAME",
        .summary = "print the Client ID Metadata Document to publish at its \"clientMetadataUrl\"",
        .min_args = 1,
        .max_args = 1,
        .options = CTL_OPT_TIMEOUT,
        .default_timeout_usec = CTL_DEFAULT_TIMEOUT_USEC,
        .run = run_client_metadata,
};
