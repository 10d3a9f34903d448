/* One HTTP response of a remote server read into the messages it carries, as the HTTP
 * transport (transport-http.c) takes it apart: its kind from its status and Content-Type
 * (a JSON body, an event stream, a body that carries no message, a refusal), a JSON body
 * made one line, an event stream's "message" events handed on one line each and its other
 * events (the legacy "endpoint") apart, each message bounded by max bytes (past it only its
 * head, as oversize), and a refusal's body kept only as a quote for the journal. And, for
 * the words anyone may read, what came back: the status and the media type, never a byte of
 * the body. Pure: no I/O, no curl; fed what curl gives, in any chunks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "sse.h"

/* Of a refused answer's body, the bytes kept for the journal. */
#define HTTP_ANSWER_QUOTED 200
/* Bytes of a media type kept for words ("application/json"); a longer one is left out. */
#define HTTP_ANSWER_TYPE_MAX 47

enum http_answer_kind {
        HTTP_ANSWER_JSON,     /* application/json (or no type): one message, whole at the end */
        HTTP_ANSWER_EVENTS,   /* text/event-stream */
        HTTP_ANSWER_IGNORED,  /* 2xx with no message in it: a legacy POST's "Accepted", another type */
        HTTP_ANSWER_REFUSED,  /* not 2xx: the body's head is quoted in the journal, nothing more */
};

struct http_answer_sink {
        /* A message as one line (no CR or LF in it), len > 0; oversize: its first max bytes,
         * the rest dropped. data may be changed; it is valid during the call. */
        void (*message)(char *data, size_t len, bool oversize, void *userdata);
        /* An event of another type than "message" (the legacy "endpoint"); may be NULL. */
        void (*event)(const char *type, const char *data, size_t len, bool oversize, void *userdata);
        void *userdata;
};

struct http_answer {
        enum http_answer_kind kind;
        long status;
        size_t max;                 /* bytes of one message */
        const struct http_answer_sink *sink;
        char type[HTTP_ANSWER_TYPE_MAX + 1]; /* the media type, lower case, only token bytes; "" none */
        size_t body_bytes;          /* of the body, all kinds */
        unsigned messages;          /* handed to the sink (a JSON body's at the end) */
        bool oversize;              /* a JSON body passed max: its head went as oversize; stop */
        struct sse_parser sse;      /* EVENTS */
        char *json;                 /* JSON: the body so far, at most max bytes */
        size_t json_len, json_cap;
        char quote[HTTP_ANSWER_QUOTED + 1]; /* REFUSED: the body's head, for the journal */
        size_t quote_len;
};

/* Begins an answer of that status and Content-Type (NULL: none); carries_messages false
 * for a POST whose answer travels elsewhere (the legacy stream's). 0 or -ENOMEM. */
int http_answer_begin(struct http_answer *a, long status, const char *content_type, bool carries_messages, size_t max,
                      const struct http_answer_sink *sink);
/* The next n bytes of the body. Returns n, or less when the transfer should stop (a JSON
 * body over max, whose head went to the sink as oversize, or memory ran out). */
size_t http_answer_feed(struct http_answer *a, const char *data, size_t n);
/* The body is whole: a JSON body's message, one line, is returned (malloc'd, *len its
 * length; the caller owns it) and counted; NULL when there is none. */
char *http_answer_end(struct http_answer *a, size_t *len);
void http_answer_done(struct http_answer *a);

/* What came back, as words anyone may read (a status, a media type, whether a message
 * came; never the body): "HTTP 202 and no body", "HTTP 200 (text/html) and no message",
 * "HTTP 200 (application/json) and no response to it". */
const char *http_answer_words(const struct http_answer *a, char *buf, size_t size);
