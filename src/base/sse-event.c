/* Server-sent events as the HTTP front door writes them; see sse-event.h. */
#include "sse-event.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_line_break(char ch) {
        return ch == '\n' || ch == '\r';
}

/* The message as data lines, into out when not NULL; returns their length. */
static size_t data_lines(char *out, const struct iovec *parts, size_t n_parts) {
        size_t n = 6;

        if (out)
                memcpy(out, "data: ", 6);
        for (size_t i = 0; i < n_parts; i++) {
                const char *p = parts[i].iov_base;
                size_t len = parts[i].iov_len - (i + 1 == n_parts && parts[i].iov_len > 0); /* its newline */

                for (size_t j = 0; j < len; j++) {
                        bool brk = is_line_break(p[j]);

                        if (brk && p[j] == '\r' && j + 1 < len && p[j + 1] == '\n')
                                j++; /* CRLF: one break */
                        if (out && brk)
                                memcpy(out + n, "\ndata: ", 7);
                        else if (out)
                                out[n] = p[j];
                        n += brk ? 7 : 1;
                }
        }
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
