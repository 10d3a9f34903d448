/* A small HTTP/1.1 client for the tests of the Streamable HTTP front door: one request on a
 * fresh or kept connection, the answer read whole (Content-Length) with a deadline, or a
 * stream read until a needle comes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct ht_answer {
        int status;            /* 0: no answer before the deadline */
        char headers[4096];
        char *body;            /* malloc'd, NUL-terminated; "" when none */
        size_t body_len;
};

/* A free TCP port on 127.0.0.1 (bound and released: the daemon binds it next). */
unsigned ht_free_port(void);

/* Whether something accepts connections on 127.0.0.1:port before the deadline (one
 * connection, closed at once, is made when it does). */
bool ht_wait_listening(unsigned port, int timeout_ms);
/* A connection to 127.0.0.1:port, or to the Unix socket path when port is 0. */
int ht_connect(unsigned port, const char *path);
/* Sends method path with extra header lines ("Name: value\r\n" each, may be "") and body
 * (may be NULL) on fd, and reads the answer: its Content-Length, or a chunked body (an
 * event stream that ends) to its last chunk, decoded. */
void ht_request(int fd, const char *method, const char *target, const char *headers, const char *body,
                size_t body_len, struct ht_answer *ret);
/* The same on a fresh connection, closed after. */
void ht_once(unsigned port, const char *method, const char *target, const char *headers, const char *body,
             struct ht_answer *ret);
void ht_answer_done(struct ht_answer *a);
/* A header's value in a, copied into buf; NULL when absent. */
const char *ht_header(const struct ht_answer *a, const char *name, char *buf, size_t size);

/* Reads a stream's bytes (its request sent already) onto the end of buf (a string) until
 * needle occurs or timeout_ms passes; returns whether it occurred. */
bool ht_stream_until(int fd, const char *needle, char *buf, size_t size, int timeout_ms);
