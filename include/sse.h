/* A parser of server-sent events (the text/event-stream format of the HTML standard), as
 * MCP's HTTP transports carry messages: fed bytes as they come, it reports each event's
 * type, data and id once its blank line arrives. An event's data is bounded: past max
 * bytes only its head is kept, and it is reported as oversize, never buffered whole.
 * Pure: no I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define SSE_EVENT_MAX 64   /* bytes of an event type kept; longer ones are cut */
#define SSE_ID_MAX 256     /* bytes of an event id kept; a longer id is ignored */

/* data: the event's data lines joined with '\n' (NUL-terminated), at most max bytes;
 * oversize: the data was longer, and data holds its first max bytes. The strings are
 * valid during the call. Returns 0, or nonzero to stop the parse (sse_feed returns it). */
typedef int (*sse_event_fn)(const char *type, const char *data, size_t len, bool oversize, void *userdata);

struct sse_parser {
        size_t max;                 /* bytes of data kept per event */
        char *data;                 /* grown as needed, up to max + 1 bytes */
        size_t len;                 /* of data */
        size_t cap;                 /* of data */
        bool has_data;              /* a data field was seen since the last dispatch */
        bool oversize;              /* data passed max */
        char field[16];             /* the current line's field name, while it is read */
        size_t field_len;
        bool in_value;              /* past the line's ':' */
        bool value_started;         /* the value's first byte (a space to skip) was seen */
        bool skip_line;             /* a comment, or a field we do not keep */
        enum { SSE_FIELD_NONE, SSE_FIELD_DATA, SSE_FIELD_EVENT, SSE_FIELD_ID } kind;
        char event[SSE_EVENT_MAX + 1];
        size_t event_len;
        char id_new[SSE_ID_MAX + 1];
        size_t id_new_len;
        bool id_too_long;
        char last_id[SSE_ID_MAX + 1]; /* the last event id seen, for Last-Event-ID; "" none */
        bool after_cr;              /* the last byte was CR: a LF next ends no line */
        bool line_empty;            /* nothing was read of the current line yet */
};

/* 0 or -ENOMEM. */
int sse_init(struct sse_parser *p, size_t max);
void sse_done(struct sse_parser *p);
/* Parses len bytes; reports each complete event to fn. 0, or what fn returned to stop. */
int sse_feed(struct sse_parser *p, const char *buf, size_t len, sse_event_fn fn, void *userdata);
