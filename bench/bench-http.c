/* The Streamable HTTP front door beside the Unix socket (issue 18): N clients, each a
 * keep-alive TCP connection on loopback with one tools/call in flight (HTTP/1.1 has no more
 * per connection), and the same N clients on the Unix socket with one call in flight each,
 * on the same daemon: throughput, daemon CPU per call, and the latency of one client. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#define HTTP_CALL_TIMEOUT_NS (10 * (int64_t)1000000000)
#define MAX_LATENCY_SAMPLES 200000

static int write_all(int fd, const char *p, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int hclient_post(struct hclient *h, const char *token, const char *headers, const char *body) {
        char req[4096];
        int n = snprintf(req, sizeof req,
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                         "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                         "%s%s%s%sContent-Length: %zu\r\n\r\n%s",
                         token, h->sid[0] ? "Mcp-Session-Id: " : "", h->sid, h->sid[0] ? "\r\n" : "", headers, strlen(body),
                         body);

        h->sent_ns = now_ns();
        return n < (int)sizeof req ? write_all(h->fd, req, (size_t)n) : -E2BIG;
}

static int post(struct hclient *h, const char *token, const char *body) {
        return hclient_post(h, token, "", body);
}

/* The length of a chunked answer whose head is head bytes (a tool call's event stream,
 * which ends after its response), up to its last chunk; 0 when more must be read. The
 * search starts at the head's own last CRLF: an empty body is the last chunk alone. */
static size_t whole_chunked(const char *buf, size_t head) {
        const char *last = strstr(buf + head - 2, "\r\n0\r\n\r\n");

        return last ? (size_t)(last + 7 - buf) : 0;
}

/* A whole answer in the buffer: its length (headers and body), its status in *status; 0 when
 * more must be read. A chunked body (another gateway's event stream, ended after the
 * answer) is whole at its last, empty chunk. */
static size_t whole_answer(struct hclient *h, int *status) {
        char *end, *cl, *chunked;
        size_t head;

        h->buf[h->len] = '\0';
        end = strstr(h->buf, "\r\n\r\n");
        if (!end)
                return 0;
        head = (size_t)(end + 4 - h->buf);
        *status = atoi(h->buf + 9);
        chunked = strcasestr(h->buf, "\r\nTransfer-Encoding: chunked");
        if (chunked && chunked < end)
                return whole_chunked(h->buf, head);
        cl = strcasestr(h->buf, "\r\nContent-Length:");
        if (cl && cl < end && h->len < head + strtoul(cl + 17, NULL, 10))
                return 0;
        return head + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
}

void hclient_consume(struct hclient *h, size_t n) {
        memmove(h->buf, h->buf + n, h->len - n);
        h->len -= n;
}

int hclient_answer(struct hclient *h, int64_t deadline, size_t *ret_len) {
        int status;

        while (!(*ret_len = whole_answer(h, &status))) {
                struct pollfd p = { .fd = h->fd, .events = POLLIN };
                ssize_t n;

                if (poll(&p, 1, ms_left(deadline)) <= 0)
                        return -ETIMEDOUT;
                n = read(h->fd, h->buf + h->len, sizeof h->buf - h->len - 1);
                if (n <= 0)
                        return n == 0 ? -ECONNRESET : -errno;
                h->len += (size_t)n;
        }
        return status;
}

int hclient_connect(struct hclient *h, unsigned port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int one = 1;

        *h = (struct hclient){ .fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), .next_id = 2 };
        if (h->fd < 0 || connect(h->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
                return -errno;
        setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return 0;
}

int hclient_open(struct hclient *h, unsigned port, const char *token) {
        int64_t deadline = now_ns() + HTTP_CALL_TIMEOUT_NS;
        int status, r = hclient_connect(h, port);
        size_t len;
        char *sid;

        if (r < 0)
                return r;
        if (post(h, token, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                           "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}") < 0 ||
            (status = hclient_answer(h, deadline, &len)) != 200)
                return -EPROTO;
        sid = strcasestr(h->buf, "\r\nMcp-Session-Id: ");
        if (!sid || sscanf(sid + 18, "%63[0-9a-fA-F-]", h->sid) != 1) /* ours is hex, others' a UUID */
                return -EPROTO;
        hclient_consume(h, len);
        if (post(h, token, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}") < 0 ||
            hclient_answer(h, deadline, &len) != 202)
                return -EPROTO;
        hclient_consume(h, len);
        return 0;
}

static int send_call(struct hclient *h, const char *token, const char *tool) {
        char body[256];

        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"tools/call\",\"params\":{\"name\":\""
                 "%s\",\"arguments\":{\"text\":\"hello\"}}}", (unsigned long long)h->next_id++, tool);
        return post(h, token, body);
}

struct http_run {
        struct daemon_run *d;
        struct hclient *c;
        unsigned n;
        const char *token;
        const char *tool;
        uint64_t done, errors;
        int64_t *lat;
        size_t n_lat;
        bool record;
};

/* Answers that came on client i; the next call sent for each. */
static int take(struct http_run *hr, struct hclient *h) {
        ssize_t n = read(h->fd, h->buf + h->len, sizeof h->buf - h->len - 1);
        size_t len;
        int status;

        if (n <= 0)
                return n == 0 ? -ECONNRESET : errno == EAGAIN ? 0 : -errno;
        h->len += (size_t)n;
        while ((len = whole_answer(h, &status))) {
                if (status != 200 || !strstr(h->buf, "\"result\""))
                        hr->errors++;
                if (hr->record && hr->n_lat < MAX_LATENCY_SAMPLES)
                        hr->lat[hr->n_lat++] = now_ns() - h->sent_ns;
                hr->done++;
                hclient_consume(h, len);
                if (send_call(h, hr->token, hr->tool) < 0)
                        return -EIO;
        }
        return 0;
}

static int pump(struct http_run *hr, int epfd, int64_t until) {
        struct epoll_event ev[64];

        while (now_ns() < until) {
                int n = epoll_wait(epfd, ev, 64, ms_left(until));
                for (int i = 0; i < n; i++) {
                        int r = ev[i].data.u32 == UINT32_MAX ? (daemon_pump(hr->d), 0) : take(hr, &hr->c[ev[i].data.u32]);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int measure_http(struct daemon_run *d, unsigned port, const char *token, const char *tool, unsigned clients,
                 double seconds, struct http_load *ret) {
        struct http_run hr = { .d = d, .n = clients, .token = token, .tool = tool, .c = calloc(clients, sizeof(struct hclient)),
                               .lat = malloc(MAX_LATENCY_SAMPLES * sizeof(int64_t)) };
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
        int epfd = epoll_create1(EPOLL_CLOEXEC), r = 0;
        struct proc_stat a, b;
        int64_t t0, t1;
        uint64_t done0;

        *ret = (struct http_load){ .clients = clients };
        if (!hr.c || !hr.lat || epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, d->notify_fd, &ev) < 0)
                r = -ENOMEM;
        /* Each client calls as soon as it is open, and those open go on calling while the next
         * ones open: another gateway (Node's HTTP server) closes a keep-alive connection
         * idle for 5 s, and opening 64 of its sessions takes longer than that. */
        for (unsigned i = 0; r >= 0 && i < clients; i++) {
                daemon_pump(d);
                r = hclient_open(&hr.c[i], port, token);
                ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = i };
                if (r >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, hr.c[i].fd, &ev) < 0)
                        r = -errno;
                if (r >= 0)
                        r = send_call(&hr.c[i], token, tool);
                if (r >= 0)
                        r = pump(&hr, epfd, now_ns() + 1000000);
        }
        if (r >= 0)
                r = pump(&hr, epfd, now_ns() + (int64_t)(seconds * 1e8) + 50000000); /* warm-up */
        if (r >= 0 && proc_stat(d->pid, &a)) {
                done0 = hr.done;
                hr.record = true;
                t0 = now_ns();
                r = pump(&hr, epfd, t0 + (int64_t)(seconds * 1e9));
                t1 = now_ns();
                if (r >= 0 && proc_stat(d->pid, &b) && hr.done > done0) {
                        double calls = (double)(hr.done - done0);
                        ret->calls_per_s = calls * 1e9 / (double)(t1 - t0);
                        ret->daemon_cpu_us = (double)(b.utime + b.stime - a.utime - a.stime) * 1e6 /
                                             (double)sysconf(_SC_CLK_TCK) / calls;
                        qsort(hr.lat, hr.n_lat, sizeof *hr.lat, cmp_i64);
                        ret->p50 = percentile(hr.lat, hr.n_lat, 50);
                        ret->p99 = percentile(hr.lat, hr.n_lat, 99);
                        ret->ok = hr.errors == 0;
                }
        }
        for (unsigned i = 0; hr.c && i < clients; i++)
                if (hr.c[i].fd > 0)
                        close(hr.c[i].fd);
        if (epfd >= 0)
                close(epfd);
        free(hr.c);
        free(hr.lat);
        daemon_pump(d);
        return r;
}

/* ---- a large result, and sessions held (issue 18's real sizes) ---- */

/* Reads one answer whole into a buffer grown as needed (a large result is far beyond
 * hclient's); its status, and its body's length in *ret_body. */
static int read_large_answer(int fd, struct daemon_run *d, int64_t deadline, size_t *ret_body) {
        size_t len = 0, cap = 0, head = 0, want = 0;
        bool chunked = false;
        char *buf = NULL;
        int status = 0, r = 0;

        while (r >= 0 && (!head || len < want)) {
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = d->notify_fd, .events = POLLIN } };
                ssize_t n;

                if (poll(p, 2, ms_left(deadline)) <= 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                if (p[1].revents)
                        daemon_pump(d);
                if (!p[0].revents)
                        continue;
                if (cap - len < 65536) {
                        char *nb = realloc(buf, cap = cap * 2 + 65536);
                        if (!nb) {
                                r = -ENOMEM;
                                break;
                        }
                        buf = nb;
                }
                n = read(fd, buf + len, cap - len - 1);
                if (n <= 0) {
                        r = n == 0 ? -ECONNRESET : -errno;
                        break;
                }
                len += (size_t)n;
                buf[len] = '\0';
                if (!head) {
                        char *end = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "\r\nContent-Length:");
                        if (end && cl && cl < end) {
                                head = (size_t)(end + 4 - buf);
                                want = head + strtoul(cl + 17, NULL, 10);
                                status = atoi(buf + 9);
                        } else if (end) {
                                /* A tool call's event stream (chunked): whole at its last chunk. */
                                head = (size_t)(end + 4 - buf);
                                chunked = true;
                                status = atoi(buf + 9);
                        }
                }
                if (chunked && (want = whole_chunked(buf, head)) == 0)
                        want = SIZE_MAX;
        }
        free(buf);
        *ret_body = want - head;
        return r < 0 ? r : status;
}

static int large_http_call(struct hclient *h, const char *token, size_t bytes, struct daemon_run *d, int64_t *ret) {
        char body[256];
        int64_t t0 = now_ns();
        size_t got;
        int r;

        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"tools/call\",\"params\":{\"name\":\""
                 BENCH_TOOL_PREFIX "blob\",\"arguments\":{\"bytes\":%zu}}}", (unsigned long long)h->next_id++, bytes);
        r = post(h, token, body);
        if (r >= 0)
                r = read_large_answer(h->fd, d, t0 + 6 * HTTP_CALL_TIMEOUT_NS, &got);
        if (r < 0)
                return r;
        *ret = now_ns() - t0;
        return r == 200 && got > bytes ? 0 : -EPROTO;
}

int measure_http_large(struct daemon_run *d, unsigned port, const char *token, size_t bytes, unsigned runs,
                       struct large *ret) {
        int64_t *took = calloc(runs, sizeof *took), warm;
        struct hclient *h = calloc(1, sizeof *h);
        double tick_ms = 1000.0 / (double)sysconf(_SC_CLK_TCK);
        struct proc_stat st0 = { 0 }, st1;
        int r = took && h ? hclient_open(h, port, token) : -ENOMEM;

        *ret = (struct large){ .bytes = bytes };
        if (r >= 0) /* one unmeasured call first: buffers grow once */
                r = large_http_call(h, token, bytes, d, &warm);
        (void)proc_stat(d->pid, &st0);
        for (unsigned i = 0; i < runs && r >= 0; i++)
                r = large_http_call(h, token, bytes, d, &took[i]);
        if (r >= 0) {
                qsort(took, runs, sizeof *took, cmp_i64);
                ret->mb_per_s = (double)bytes / 1e6 / ((double)percentile(took, runs, 50) / 1e9);
                if (proc_stat(d->pid, &st1)) {
                        ret->daemon_user_ms = (double)(st1.utime - st0.utime) * tick_ms / (double)runs;
                        ret->daemon_sys_ms = (double)(st1.stime - st0.stime) * tick_ms / (double)runs;
                        ret->daemon_cpu_ms = ret->daemon_user_ms + ret->daemon_sys_ms;
                }
                ret->ok = true;
        }
        if (h && h->fd > 0)
                close(h->fd);
        free(h);
        free(took);
        return r;
}

/* A GET stream of h's session on a connection of its own, its headers read: the fd. */
static int open_stream(struct hclient *h, unsigned port, const char *token) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int64_t deadline = now_ns() + HTTP_CALL_TIMEOUT_NS;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        char buf[1024] = "";
        size_t len = 0;

        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
            dprintf(fd, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n"
                        "Mcp-Session-Id: %s\r\n\r\n", token, h->sid) < 0)
                goto fail;
        while (!strstr(buf, "\r\n\r\n")) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t n;

                if (poll(&p, 1, ms_left(deadline)) <= 0 || (n = read(fd, buf + len, sizeof buf - len - 1)) <= 0)
                        goto fail;
                len += (size_t)n;
                buf[len] = '\0';
        }
        if (strncmp(buf, "HTTP/1.1 200", 12) == 0)
                return fd;
fail:
        if (fd >= 0)
                close(fd);
        return -EPROTO;
}

int measure_http_sessions(struct daemon_run *d, unsigned port, const char *token, unsigned n, long rss_before,
                          struct idle *ret) {
        int *fds = malloc(2 * (size_t)n * sizeof *fds);
        struct hclient *h = malloc(sizeof *h);
        unsigned held = 0;
        int r = fds && h ? 0 : -ENOMEM;

        *ret = (struct idle){ .wanted = n };
        for (; r >= 0 && held < n; held++) {
                daemon_pump(d);
                r = hclient_open(h, port, token);
                fds[2 * held] = h->fd;
                if (r >= 0 && (fds[2 * held + 1] = open_stream(h, port, token)) < 0)
                        r = fds[2 * held + 1];
                if (r < 0 && h->fd >= 0)
                        close(h->fd);
        }
        if (r >= 0) {
                daemon_pump(d);
                ret->held = held;
                ret->rss_kib = proc_rss_kib(d->pid);
                ret->kib_per_client = (double)(ret->rss_kib - rss_before) / n;
                ret->ok = true;
        } else
                held--;
        for (unsigned i = 0; i < 2 * held; i++)
                close(fds[i]);
        free(fds);
        free(h);
        daemon_pump(d);
        return r;
}

/* ---- issue 25: before a peer proves itself ---- */

static int connect_loopback(unsigned port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                int r = -errno;

                if (fd >= 0)
                        close(fd);
                return r;
        }
        return fd;
}

/* Sends what fd takes now of the *left bytes still to send; false once the daemon has
 * answered (the answer's head in buf), closed or reset it. */
static bool push_body(int fd, size_t *left, char *buf, size_t size) {
        static char zeros[1 << 20];
        size_t len = strlen(buf);
        ssize_t n = -1;

        while (len + 1 < size && (n = recv(fd, buf + len, size - len - 1, MSG_DONTWAIT)) > 0) {
                len += (size_t)n;
                buf[len] = '\0';
        }
        if ((len + 1 < size && n == 0) || strstr(buf, "\r\n\r\n"))
                return false;
        while (*left > 0) {
                n = send(fd, zeros, *left < sizeof zeros ? *left : sizeof zeros, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0)
                        return errno == EAGAIN;
                *left -= (size_t)n;
        }
        return true;
}

int measure_http_unauth_bodies(struct daemon_run *d, unsigned port, unsigned n, size_t bytes, struct unauth_bodies *ret) {
        int *fds = calloc(n, sizeof *fds);
        size_t *left = calloc(n, sizeof *left);
        char (*answers)[256] = calloc(n, sizeof *answers);
        struct pollfd *p = calloc(n, sizeof *p);
        int64_t deadline = now_ns() + 60 * (int64_t)1000000000;
        unsigned open = 0;
        int r = fds && left && answers && p ? 0 : -ENOMEM;

        for (unsigned i = 0; fds && i < n; i++)
                fds[i] = -1;
        *ret = (struct unauth_bodies){ .n = n, .bytes = bytes, .rss_before = proc_rss_kib(d->pid) };
        ret->rss_peak = ret->rss_before;
        for (unsigned i = 0; r >= 0 && i < n; i++, open++) {
                if ((fds[i] = connect_loopback(port)) < 0) {
                        r = fds[i];
                        break;
                }
                dprintf(fds[i], "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                "Content-Length: %zu\r\n\r\n", bytes);
                left[i] = bytes;
        }
        while (r >= 0 && open > 0 && now_ns() < deadline) {
                long rss;

                for (unsigned i = 0; i < n; i++)
                        p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN | (left[i] ? POLLOUT : 0) };
                poll(p, n, 100);
                daemon_pump(d);
                for (unsigned i = 0; i < n; i++)
                        if (fds[i] >= 0 && !push_body(fds[i], &left[i], answers[i], sizeof answers[i])) {
                                ret->refused += strncmp(answers[i], "HTTP/1.1 401", 12) == 0;
                                close(fds[i]);
                                fds[i] = -1;
                                open--;
                        }
                rss = proc_rss_kib(d->pid);
                ret->rss_peak = rss > ret->rss_peak ? rss : ret->rss_peak;
        }
        daemon_pump(d);
        ret->rss_after = proc_rss_kib(d->pid);
        ret->ok = r >= 0 && open == 0;
        for (unsigned i = 0; fds && i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(fds);
        free(left);
        free(answers);
        free(p);
        return r < 0 ? r : open ? -ETIMEDOUT : 0;
}

int measure_http_slow_heads(struct daemon_run *d, unsigned port, const char *token, unsigned n, struct slow_heads *ret) {
        enum { PINGS = 200 };
        int *fds = malloc(n * sizeof *fds);
        int64_t ping[PINGS], t0, settle = now_ns() + 2 * (int64_t)1000000000;
        struct conn c = { .rfd = -1, .wfd = -1 };
        struct hclient *h = malloc(sizeof *h);
        unsigned opened = 0;
        int r = fds && h ? 0 : -ENOMEM;

        *ret = (struct slow_heads){ .n = n };
        for (; r >= 0 && opened < n; opened++) {
                if ((fds[opened] = connect_loopback(port)) < 0) {
                        r = fds[opened];
                        break;
                }
                dprintf(fds[opened], "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"); /* and never the rest */
        }
        while (r >= 0 && now_ns() < settle) { /* the caps' first rounds: grace over, the oldest closed */
                daemon_pump(d);
                poll(NULL, 0, 50);
        }
        if (r >= 0 && (r = conn_unix(&c, d->sock)) >= 0)
                r = conn_initialize(&c, d, now_ns() + HTTP_CALL_TIMEOUT_NS);
        for (unsigned i = 0; r >= 0 && i < PINGS; i++)
                r = conn_ping(&c, d, HTTP_CALL_TIMEOUT_NS, &ping[ret->pings++]);
        if (r >= 0) {
                t0 = now_ns();
                r = hclient_open(h, port, token);
                ret->session_ns = now_ns() - t0;
                close(h->fd);
        }
        if (r >= 0) {
                qsort(ping, ret->pings, sizeof *ping, cmp_i64);
                ret->ping_p50 = percentile(ping, ret->pings, 50);
                ret->ping_max = ping[ret->pings - 1];
                ret->rss_kib = proc_rss_kib(d->pid);
                ret->fds = proc_fd_count(d->pid);
                ret->ok = true;
        }
        conn_close(&c);
        for (unsigned i = 0; i < opened; i++)
                close(fds[i]);
        free(fds);
        free(h);
        daemon_pump(d);
        return r;
}
