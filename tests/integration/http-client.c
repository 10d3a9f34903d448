/* A small HTTP/1.1 client; see http-client.h. */
#include "http-client.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

unsigned ht_free_port(void) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof sa;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
                  getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
        close(fd);
        return ntohs(sa.sin_port);
}

bool ht_wait_listening(unsigned port, int timeout_ms) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                bool up = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;

                if (fd >= 0)
                        close(fd);
                if (up)
                        return true;
                if (h_now_ms() > deadline)
                        return false;
                poll(NULL, 0, 10); /* another process's bind(): nothing to wait on */
        }
}

int ht_connect(unsigned port, const char *path) {
        int fd;

        if (port) {
                struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect to port %u: %s",
                          port, strerror(errno));
        } else {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };

                snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect to %s: %s", path,
                          strerror(errno));
        }
        return fd;
}

static void send_all(int fd, const char *data, size_t len) {
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return; /* the daemon may answer (413) and close before taking it all */
                data += n;
                len -= (size_t)n;
        }
}

/* Reads more into buf (grown), waiting until the deadline; false at its end or EOF. */
static bool read_more(int fd, char **buf, size_t *len, size_t *cap, long long deadline) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        long long left = deadline - h_now_ms();
        ssize_t n;

        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                return false;
        if (*cap - *len < 65536) {
                *cap = *cap * 2 + 65536;
                *buf = realloc(*buf, *cap);
                cr_assert_not_null(*buf);
        }
        n = read(fd, *buf + *len, *cap - *len - 1);
        if (n <= 0)
                return false;
        *len += (size_t)n;
        (*buf)[*len] = '\0';
        return true;
}

/* The body of a chunked answer (an event stream that ends), read to its last chunk (or
 * the deadline) and decoded; buf is freed. */
static void read_chunked(int fd, char **buf, size_t *len, size_t *cap, size_t start, long long deadline,
                         struct ht_answer *ret) {
        const char *at;
        size_t out = 0;

        while (!(*len >= start + 5 && (memcmp(*buf + start, "0\r\n\r\n", 5) == 0 || strstr(*buf + start, "\r\n0\r\n\r\n"))))
                if (!read_more(fd, buf, len, cap, deadline))
                        break;
        ret->body = malloc(*len - start + 1);
        cr_assert_not_null(ret->body);
        for (at = *buf + start; at < *buf + *len;) {
                char *end;
                size_t n = strtoul(at, &end, 16);

                if (end == at || n == 0 || !(end = strstr(end, "\r\n")) || end + 2 + n > *buf + *len)
                        break;
                memcpy(ret->body + out, end + 2, n);
                out += n;
                at = end + 2 + n + 2;
        }
        ret->body[out] = '\0';
        ret->body_len = out;
        free(*buf);
}

void ht_request(int fd, const char *method, const char *target, const char *headers, const char *body,
                size_t body_len, struct ht_answer *ret) {
        char head[8192];
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        size_t len = 0, cap = 0, want, head_len;
        char *buf = NULL, *end, *cl;
        int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %zu\r\n\r\n", method,
                         target, headers, body ? body_len : 0);

        *ret = (struct ht_answer){ 0 };
        send_all(fd, head, (size_t)n);
        if (body)
                send_all(fd, body, body_len);
        while (!(buf && (end = strstr(buf, "\r\n\r\n"))))
                if (!read_more(fd, &buf, &len, &cap, deadline)) {
                        free(buf);
                        ret->body = strdup("");
                        return;
                }
        sscanf(buf, "HTTP/1.1 %d", &ret->status);
        snprintf(ret->headers, sizeof ret->headers, "%.*s", (int)(end - buf), buf);
        if (strcasestr(ret->headers, "\r\nTransfer-Encoding: chunked")) {
                read_chunked(fd, &buf, &len, &cap, (size_t)(end + 4 - buf), deadline, ret);
                return;
        }
        cl = strcasestr(ret->headers, "\r\nContent-Length:");
        head_len = (size_t)(end + 4 - buf); /* an offset: reading more moves buf */
        want = head_len + (cl ? strtoul(cl + 17, NULL, 10) : 0);
        while (len < want && read_more(fd, &buf, &len, &cap, deadline))
                ;
        ret->body_len = len > head_len ? len - head_len : 0;
        ret->body = malloc(ret->body_len + 1);
        cr_assert_not_null(ret->body);
        memcpy(ret->body, buf + head_len, ret->body_len);
        ret->body[ret->body_len] = '\0';
        free(buf);
}

void ht_once(unsigned port, const char *method, const char *target, const char *headers, const char *body,
             struct ht_answer *ret) {
        int fd = ht_connect(port, NULL);

        ht_request(fd, method, target, headers, body, body ? strlen(body) : 0, ret);
        close(fd);
}

void ht_answer_done(struct ht_answer *a) {
        free(a->body);
        a->body = NULL;
}

const char *ht_header(const struct ht_answer *a, const char *name, char *buf, size_t size) {
        char needle[128];
        const char *at, *end;

        snprintf(needle, sizeof needle, "\r\n%s:", name);
        at = strcasestr(a->headers, needle);
        if (!at)
                return NULL;
        at += strlen(needle);
        while (*at == ' ')
                at++;
        end = strstr(at, "\r\n");
        snprintf(buf, size, "%.*s", (int)(end ? end - at : (long)strlen(at)), at);
        return buf;
}

bool ht_stream_until(int fd, const char *needle, char *buf, size_t size, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        size_t len = strlen(buf);

        while (!strstr(buf, needle)) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                long long left = deadline - h_now_ms();
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0 || len + 1 >= size)
                        return false;
                n = read(fd, buf + len, size - len - 1);
                if (n <= 0)
                        return false;
                len += (size_t)n;
                buf[len] = '\0';
        }
        return true;
}
