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

struct hclient {
        int fd;
        char sid[64];
        char buf[65536];
        size_t len;
        uint64_t next_id;
        int64_t sent_ns;
};

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

static int post(struct hclient *h, const char *token, const char *body) {
        char req[2048];
        int n = snprintf(req, sizeof req,
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                         "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                         "%s%s%sContent-Length: %zu\r\n\r\n%s",
                         token, h->sid[0] ? "Mcp-Session-Id: " : "", h->sid, h->sid[0] ? "\r\n" : "", strlen(body), body);

        h->sent_ns = now_ns();
        return n < (int)sizeof req ? write_all(h->fd, req, (size_t)n) : -E2BIG;
}

/* The length of a chunked answer whose head is head bytes (a tool call's event stream,
 * which ends after its response), up to its last chunk; 0 when more must be read. */
static size_t whole_chunked(struct hclient *h, size_t head) {
        const char *last = strstr(h->buf + head, "\r\n0\r\n\r\n");

        return last ? (size_t)(last + 7 - h->buf) : 0;
}

/* A whole answer in the buffer: its length (headers and body), its status in *status; 0 when
 * more must be read. */
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
                return whole_chunked(h, head);
        cl = strcasestr(h->buf, "\r\nContent-Length:");
        if (cl && cl < end && h->len < head + strtoul(cl + 17, NULL, 10))
                return 0;
        return head + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
}

static void consume(struct hclient *h, size_t n) {
        memmove(h->buf, h->buf + n, h->len - n);
        h->len -= n;
}

/* Reads until a whole answer is there (blocking, with a deadline); its status. */
static int read_answer(struct hclient *h, int64_t deadline, size_t *ret_len) {
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

static int open_client(struct hclient *h, unsigned port, const char *token) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int64_t deadline = now_ns() + HTTP_CALL_TIMEOUT_NS;
        int one = 1, status;
        size_t len;
        char *sid;

        *h = (struct hclient){ .fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), .next_id = 2 };
        if (h->fd < 0 || connect(h->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
                return -errno;
        setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (post(h, token, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                           "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}") < 0 ||
            (status = read_answer(h, deadline, &len)) != 200)
                return -EPROTO;
        sid = strcasestr(h->buf, "\r\nMcp-Session-Id: ");
        if (!sid || sscanf(sid + 18, "%63[0-9a-f]", h->sid) != 1)
                return -EPROTO;
        consume(h, len);
        if (post(h, token, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}") < 0 ||
            read_answer(h, deadline, &len) != 202)
                return -EPROTO;
        consume(h, len);
        return 0;
}

static int send_call(struct hclient *h, const char *token) {
        char body[256];

        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"tools/call\",\"params\":{\"name\":\""
                 BENCH_TOOL_PREFIX "echo\",\"arguments\":{\"text\":\"hello\"}}}", (unsigned long long)h->next_id++);
        return post(h, token, body);
}

struct http_run {
        struct daemon_run *d;
        struct hclient *c;
        unsigned n;
        const char *token;
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
                consume(h, len);
                if (send_call(h, hr->token) < 0)
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

int measure_http(struct daemon_run *d, unsigned port, const char *token, unsigned clients, double seconds,
                 struct http_load *ret) {
        struct http_run hr = { .d = d, .n = clients, .token = token, .c = calloc(clients, sizeof(struct hclient)),
                               .lat = malloc(MAX_LATENCY_SAMPLES * sizeof(int64_t)) };
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
        int epfd = epoll_create1(EPOLL_CLOEXEC), r = 0;
        struct proc_stat a, b;
        int64_t t0, t1;
        uint64_t done0;

        *ret = (struct http_load){ .clients = clients };
        if (!hr.c || !hr.lat || epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, d->notify_fd, &ev) < 0)
                r = -ENOMEM;
        for (unsigned i = 0; r >= 0 && i < clients; i++) {
                daemon_pump(d);
                r = open_client(&hr.c[i], port, token);
                ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = i };
                if (r >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, hr.c[i].fd, &ev) < 0)
                        r = -errno;
        }
        for (unsigned i = 0; r >= 0 && i < clients; i++)
                r = send_call(&hr.c[i], token);
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
