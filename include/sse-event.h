/* Server-sent events as the HTTP front door writes them (client-http.c): one message an
 * event, under an id that names the event and its stream, "SEQ" on a session's GET stream
 * (stream 0) and "SEQ-STREAM" on a POST's own stream, so that a Last-Event-ID says which
 * stream to resume however old it is. Pure: no I/O. (sse.h parses the format.) */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* "id: SEQ[-STREAM]\n", the message as "data: " lines, and the blank line that ends the
 * event. The message is parts' text but for the newline that ends the last part (as
 * client.h's transports are handed a message); it may be empty (an event with an id and
 * no data). Its line breaks (LF, CR, CRLF: JSON may have some between its tokens) each
 * start a data line of its own, which the client joins again with LF. malloc'd, its
 * length in *ret_len; NULL when out of memory. */
char *sse_event_text(uint64_t seq, uint64_t stream, const struct iovec *parts, size_t n_parts, size_t *ret_len);

/* The same event in pieces, for writing a large message where its bytes are: when the
 * message holds no line break, its head ("id: SEQ[-STREAM]\ndata: ") into head (at least
 * SSE_EVENT_HEAD_MAX bytes) and its length; the event is then the head, the message (parts
 * without the last part's newline) and "\n\n", byte for byte sse_event_text()'s. 0 when the
 * message has a line break (or is empty): sse_event_text() then. */
#define SSE_EVENT_HEAD_MAX 64
size_t sse_event_head(uint64_t seq, uint64_t stream, const struct iovec *parts, size_t n_parts, char *head);
/* An id as sse_event_text() writes it: true with its numbers (stream 0 for "SEQ"); false for
 * anything else (a sign, a space, a number past 64 bits, a stream of 0 written out, ...). */
bool sse_event_id_parse(const char *text, uint64_t *ret_seq, uint64_t *ret_stream);
