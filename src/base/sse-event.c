/* Server-sent events as the HTTP front door writes them; see sse-event.h. */
#include "sse-event.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the next line break may be, found with memchr() rather than byte by byte: a 10 MiB
 * result holds none, and was walked twice a byte at a time. Each of the two is searched
 * for again only once passed, so the walk stays linear. */
struct breaks {
        const char *nl, *cr; /* the next '\n' and '\r' at or after the walk, or end */
};

static const char *next_of(char ch, const char *from, const char *end) {
        const char *at = memchr(from, ch, (size_t)(end - from));

        return at ? at : end;
}

static const char *next_break(struct breaks *b, const char *p, const char *end) {
        if (b->nl < p)
                b->nl = next_of('\n', p, end);
        if (b->cr < p)
                b->cr = next_of('\r', p, end);
        return b->nl < b->cr ? b->nl : b->cr;
}

/* One part's bytes as data lines, into out + n when out is not NULL; returns n past them. */
static size_t part_lines(char *out, size_t n, const char *p, size_t len) {
        const char *end = p + len;
        struct breaks b = { .nl = next_of('\n', p, end), .cr = next_of('\r', p, end) };

        while (p < end) {
                const char *brk = next_break(&b, p, end);
                size_t run = (size_t)(brk - p);

                if (out)
                        memcpy(out + n, p, run);
                n += run;
                p = brk;
                if (p == end)
                        break;
                if (*p == '\r' && p + 1 < end && p[1] == '\n')
                        p++; /* CRLF: one break */
                p++;
                if (out)
                        memcpy(out + n, "\ndata: ", 7);
                n += 7;
        }
        return n;
}

/* The message as data lines, into out when not NULL; returns their length. */
static size_t data_lines(char *out, const struct iovec *parts, size_t n_parts) {
        size_t n = 6;

        if (out)
                memcpy(out, "data: ", 6);
        for (size_t i = 0; i < n_parts; i++)
                n = part_lines(out, n, parts[i].iov_base,
                               parts[i].iov_len - (i + 1 == n_parts && parts[i].iov_len > 0)); /* its newline */
        if (out)
                out[n] = '\n';
        return n + 1;
}

char *sse_event_text(uint64_t seq, uint64_t stream, const struct iovec *parts, size_t n_parts, size_t *ret_len) {
        char head[64];
        size_t used = stream ? (size_t)snprintf(head, sizeof head, "id: %" PRIu64 "-%" PRIu64 "\n", seq, stream)
                             : (size_t)snprintf(head, sizeof head, "id: %" PRIu64 "\n", seq);
        size_t data = data_lines(NULL, parts, n_parts);
        char *text = malloc(used + data + 1);

        if (!text)
                return NULL;
        memcpy(text, head, used);
        data_lines(text + used, parts, n_parts);
        text[used + data] = '\n';
        *ret_len = used + data + 1;
        return text;
}

size_t sse_event_head(uint64_t seq, uint64_t stream, const struct iovec *parts, size_t n_parts, char *head) {
        size_t total = 0;

        for (size_t i = 0; i < n_parts; i++) {
                size_t len = parts[i].iov_len - (i + 1 == n_parts && parts[i].iov_len > 0); /* its newline */

                if (memchr(parts[i].iov_base, '\n', len) || memchr(parts[i].iov_base, '\r', len))
                        return 0;
                total += len;
        }
        if (total == 0)
                return 0;
        return stream ? (size_t)snprintf(head, SSE_EVENT_HEAD_MAX, "id: %" PRIu64 "-%" PRIu64 "\ndata: ", seq, stream)
                      : (size_t)snprintf(head, SSE_EVENT_HEAD_MAX, "id: %" PRIu64 "\ndata: ", seq);
}

/* Digits at *p to their number, *p moved past them; false for none, past 64 bits, or a
 * leading zero (not how the number is written: each id has one text). */
static bool take_number(const char **p, uint64_t *ret) {
        char *end;
        unsigned long long n;

        if (**p < '0' || **p > '9' || ((*p)[0] == '0' && (*p)[1] >= '0' && (*p)[1] <= '9'))
                return false;
        errno = 0;
        n = strtoull(*p, &end, 10);
        if (errno == ERANGE)
                return false;
        *p = end;
        *ret = n;
        return true;
}

bool sse_event_id_parse(const char *text, uint64_t *ret_seq, uint64_t *ret_stream) {
        uint64_t seq, stream = 0;

        if (!text || !take_number(&text, &seq))
                return false;
        if (*text == '-') {
                text++;
                if (!take_number(&text, &stream) || stream == 0)
                        return false;
        }
        if (*text)
                return false;
        *ret_seq = seq;
        *ret_stream = stream;
        return true;
}
