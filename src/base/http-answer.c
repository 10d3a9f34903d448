/* One HTTP response of a remote server read into its messages; see http-answer.h. */
#include "http-answer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text.h"

/* The media type of a Content-Type, for words: lower case, up to its parameters, and only
 * if it is made of token bytes and fits (anything else is left out, never quoted). */
static void media_type(const char *content_type, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = '\0';
        if (!content_type)
                return;
        content_type += strspn(content_type, " \t");
        for (const char *p = content_type; *p && *p != ';' && *p != ' ' && *p != '\t'; p++) {
                char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;

                if (n + 1 >= size || !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("!#$&^_.+-/", c))) {
                        buf[0] = '\0';
                        return;
                }
                buf[n++] = c;
        }
        buf[n] = '\0';
}

int http_answer_begin(struct http_answer *a, long status, const char *content_type, bool carries_messages, size_t max,
                      const struct http_answer_sink *sink) {
        *a = (struct http_answer){ .status = status, .max = max, .sink = sink };
        media_type(content_type, a->type, sizeof a->type);
        if (status < 200 || status > 299)
                a->kind = HTTP_ANSWER_REFUSED;
        else if (!carries_messages)
                a->kind = HTTP_ANSWER_IGNORED;
        else if (strcmp(a->type, "text/event-stream") == 0)
                a->kind = HTTP_ANSWER_EVENTS;
        else if (!content_type || strcmp(a->type, "application/json") == 0)
                a->kind = HTTP_ANSWER_JSON;
        else
                a->kind = HTTP_ANSWER_IGNORED;
        if (a->kind == HTTP_ANSWER_EVENTS && sse_init(&a->sse, max) < 0) {
                a->kind = HTTP_ANSWER_IGNORED;
                return -ENOMEM;
        }
        return 0;
}

void http_answer_done(struct http_answer *a) {
        if (a->kind == HTTP_ANSWER_EVENTS)
                sse_done(&a->sse);
        free(a->json);
        a->json = NULL;
        a->json_len = a->json_cap = 0;
}

/* A message's JSON text may span lines (a pretty-printed body): outside its strings a
 * line break is whitespace, inside them JSON allows none, so each becomes a space and
 * the message one line. False for an empty message (an event that only carries an id),
 * which is none. */
static bool make_one_line(char *data, size_t len) {
        size_t i = 0;

        for (size_t k = 0; k < len; k++)
                if (data[k] == '\n' || data[k] == '\r')
                        data[k] = ' ';
        while (i < len && (data[i] == ' ' || data[i] == '\t'))
                i++;
        return i < len;
}

static void hand_on(struct http_answer *a, char *data, size_t len, bool oversize) {
        if (!make_one_line(data, len) && !oversize)
                return;
        a->messages++;
        a->sink->message(data, len, oversize, a->sink->userdata);
}

static int on_event(const char *type, const char *data, size_t len, bool oversize, void *userdata) {
        struct http_answer *a = userdata;

        if (strcmp(type, "message") == 0)
                hand_on(a, (char *)data, len, oversize); /* the parser's own buffer */
        else if (a->sink->event)
                a->sink->event(type, data, len, oversize, a->sink->userdata);
        return 0;
}

/* Room for n more bytes of a JSON body, grown as it comes (most answers are small; a
 * buffer of the whole limit per call would be an mmap and munmap each). */
static bool json_room(struct http_answer *a, size_t n) {
        return text_room(&a->json, &a->json_cap, a->json_len + n, a->max);
}

static size_t take_json(struct http_answer *a, const char *data, size_t n) {
        if (n > a->max - a->json_len) {
                /* up to the limit: the head the connection searches for the call's id */
                size_t head = a->max - a->json_len;

                if (json_room(a, head)) {
                        memcpy(a->json + a->json_len, data, head);
                        a->json_len += head;
                }
                a->oversize = true;
                hand_on(a, a->json, a->json_len, true);
                return 0;
        }
        if (!json_room(a, n))
                return 0;
        memcpy(a->json + a->json_len, data, n);
        a->json_len += n;
        return n;
}

size_t http_answer_feed(struct http_answer *a, const char *data, size_t n) {
        size_t quote;

        if (a->oversize)
                return 0;
        a->body_bytes += n;
        switch (a->kind) {
        case HTTP_ANSWER_REFUSED:
                quote = n < HTTP_ANSWER_QUOTED - a->quote_len ? n : HTTP_ANSWER_QUOTED - a->quote_len;
                memcpy(a->quote + a->quote_len, data, quote);
                a->quote_len += quote;
                a->quote[a->quote_len] = '\0';
                return n;
        case HTTP_ANSWER_EVENTS:
                (void)sse_feed(&a->sse, data, n, on_event, a);
                return n;
        case HTTP_ANSWER_JSON:
                return take_json(a, data, n);
        case HTTP_ANSWER_IGNORED:
                return n;
        }
        return n;
}

char *http_answer_end(struct http_answer *a, size_t *len) {
        char *json;

        if (a->kind != HTTP_ANSWER_JSON || a->oversize || a->json_len == 0 || !make_one_line(a->json, a->json_len))
                return NULL;
        json = a->json;
        *len = a->json_len;
        a->json = NULL;
        a->json_len = a->json_cap = 0;
        a->messages++;
        return json;
}

const char *http_answer_words(const struct http_answer *a, char *buf, size_t size) {
        const char *what;

        if (a->kind == HTTP_ANSWER_REFUSED) {
                snprintf(buf, size, "HTTP %ld", a->status);
                return buf;
        }
        if (a->messages > 0)
                what = " and no response to it";
        else if (a->body_bytes == 0)
                what = " and no body";
        else
                what = " and no message";
        snprintf(buf, size, "HTTP %ld%s%s%s%s", a->status, a->type[0] ? " (" : "", a->type, a->type[0] ? ")" : "", what);
        return buf;
}
