/* A server's last lines; see line-ring.h. */
#include "line-ring.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static void drop_oldest(struct line_ring *r) {
        struct line_ring_line *l = &r->lines[r->first];

        r->bytes -= strlen(l->text);
        free(l->text);
        *l = (struct line_ring_line){ 0 };
        r->first = (r->first + 1) % LINE_RING_LINES;
        r->n--;
}

/* text cut to LINE_RING_LINE_MAX bytes, valid UTF-8, "…" after a cut. */
static char *kept_text(const char *text) {
        static const char ellipsis[] = "\xe2\x80\xa6";
        size_t len = strnlen(text, LINE_RING_LINE_MAX + 1);
        bool cut = len > LINE_RING_LINE_MAX;
        char *copy;

        if (cut)
                len = LINE_RING_LINE_MAX - (sizeof ellipsis - 1);
        copy = malloc(len + sizeof ellipsis);
        if (!copy)
                return NULL;
        memcpy(copy, text, len);
        copy[len] = '\0';
        utf8_mend(copy); /* also drops a character the cut split */
        if (cut)
                strcat(copy, ellipsis);
        return copy;
}

int line_ring_add(struct line_ring *r, const char *text, uint64_t realtime_usec) {
        char *copy;
        size_t len;

        if (text[strspn(text, " \t")] == '\0')
                return 0;
        copy = kept_text(text);
        if (!copy)
                return -ENOMEM;
        len = strlen(copy);
        while (r->n > 0 && (r->n == LINE_RING_LINES || r->bytes + len > LINE_RING_BYTES))
                drop_oldest(r);
        r->lines[(r->first + r->n) % LINE_RING_LINES] =
                (struct line_ring_line){ .seq = ++r->last_seq, .realtime_usec = realtime_usec, .text = copy };
        r->n++;
        r->bytes += len;
        return 0;
}

const struct line_ring_line *line_ring_get(const struct line_ring *r, size_t i) {
        return &r->lines[(r->first + i) % LINE_RING_LINES];
}

void line_ring_done(struct line_ring *r) {
        while (r->n > 0)
                drop_oldest(r);
}
