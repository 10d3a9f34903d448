/* The text/event-stream parser; see sse.h. Line by line as the HTML standard says: a line
 * ends at CR, LF or CRLF; "field: value" with one space after the colon dropped; a line
 * starting with ':' is a comment; a blank line dispatches the event. */
#include "sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* The data buffer grows as events need (most are small; one of the whole limit per
 * stream would be an mmap each). */
#define SSE_DATA_FIRST 4096

int sse_init(struct sse_parser *p, size_t max) {
        *p = (struct sse_parser){ .max = max, .line_empty = true };
        p->cap = max + 1 < SSE_DATA_FIRST ? max + 1 : SSE_DATA_FIRST;
        p->data = malloc(p->cap);
        if (!p->data)
                return -ENOMEM;
        p->data[0] = '\0';
        return 0;
}

/* Room for n more bytes and a NUL, within max; false when memory ran out. */
static bool data_room(struct sse_parser *p, size_t n) {
        return text_room(&p->data, &p->cap, p->len + n + 1, p->max + 1);
}

void sse_done(struct sse_parser *p) {
        free(p->data);
        p->data = NULL;
}

static void data_append(struct sse_parser *p, const char *s, size_t n) {
        size_t room = p->max - p->len;

        if (n > room) {
                p->oversize = true;
                n = room;
        }
        if (!data_room(p, n)) {
                p->oversize = true; /* out of memory: what was kept is its head */
                return;
        }
        memcpy(p->data + p->len, s, n);
        p->len += n;
        p->data[p->len] = '\0';
}

static void value_byte(struct sse_parser *p, char c) {
        switch (p->kind) {
        case SSE_FIELD_DATA:
                data_append(p, &c, 1);
                break;
        case SSE_FIELD_EVENT:
                if (p->event_len < SSE_EVENT_MAX)
                        p->event[p->event_len++] = c;
                break;
        case SSE_FIELD_ID:
                if (p->id_new_len < SSE_ID_MAX && c != '\0')
                        p->id_new[p->id_new_len++] = c;
                else
                        p->id_too_long = true;
                break;
        case SSE_FIELD_NONE:
                break;
        }
}

static void begin_value(struct sse_parser *p) {
        p->in_value = true;
        p->field[p->field_len] = '\0';
        if (strcmp(p->field, "data") == 0) {
                p->kind = SSE_FIELD_DATA;
                if (p->has_data)
                        data_append(p, "\n", 1);
                p->has_data = true;
        } else if (strcmp(p->field, "event") == 0) {
                p->kind = SSE_FIELD_EVENT;
                p->event_len = 0;
        } else if (strcmp(p->field, "id") == 0) {
                p->kind = SSE_FIELD_ID;
                p->id_new_len = 0;
                p->id_too_long = false;
        } else {
                p->kind = SSE_FIELD_NONE; /* "retry" and unknown fields */
        }
}

static int dispatch(struct sse_parser *p, sse_event_fn fn, void *userdata) {
        int r = 0;

        if (p->has_data) {
                p->event[p->event_len] = '\0';
                r = fn(p->event_len ? p->event : "message", p->data, p->len, p->oversize, userdata);
        }
        p->len = 0;
        p->data[0] = '\0';
        p->has_data = false;
        p->oversize = false;
        p->event_len = 0;
        return r;
}

/* The end of a line: a field without a colon is a field with an empty value. */
static int end_line(struct sse_parser *p, sse_event_fn fn, void *userdata) {
        int r = 0;

        if (p->line_empty)
                r = dispatch(p, fn, userdata);
        else if (!p->skip_line) {
                if (!p->in_value)
                        begin_value(p);
                if (p->kind == SSE_FIELD_ID && !p->id_too_long) {
                        memcpy(p->last_id, p->id_new, p->id_new_len);
                        p->last_id[p->id_new_len] = '\0';
                }
        }
        p->field_len = 0;
        p->in_value = p->value_started = p->skip_line = false;
        p->kind = SSE_FIELD_NONE;
        p->line_empty = true;
        return r;
}

static void line_byte(struct sse_parser *p, char c) {
        bool first = p->line_empty;

        p->line_empty = false;
        if (p->skip_line)
                return;
        if (first && c == ':') {
                p->skip_line = true;
                return;
        }
        if (!p->in_value) {
                if (c == ':')
                        begin_value(p);
                else if (p->field_len < sizeof p->field - 1)
                        p->field[p->field_len++] = c;
                else
                        p->skip_line = true; /* no field we know is this long */
                return;
        }
        if (!p->value_started) {
                p->value_started = true;
                if (c == ' ')
                        return;
        }
        value_byte(p, c);
}

int sse_feed(struct sse_parser *p, const char *buf, size_t len, sse_event_fn fn, void *userdata) {
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                int r;

                if (c == '\n' && p->after_cr) {
                        p->after_cr = false;
                        continue;
                }
                p->after_cr = c == '\r';
                if (c == '\r' || c == '\n') {
                        r = end_line(p, fn, userdata);
                        if (r != 0)
                                return r;
                        continue;
                }
                line_byte(p, c);
        }
        return 0;
}
