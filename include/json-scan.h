/* JSON text checked without building anything: the RFC 8259 grammar, UTF-8 without
 * overlong forms or surrogates, \u escapes with surrogates in pairs, nesting bounded.
 * Never laxer than json-c's strict parser (fuzz_scan checks it), so text it accepts can be
 * passed on as it is where json-c would have accepted it. Allocates nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct json_scan {
        const char *p, *end;    /* the next byte, and the end of the text */
        unsigned depth;         /* containers open around p */
        unsigned max_depth;     /* values this many containers down are refused, as json-c does */
};

void json_scan_init(struct json_scan *s, const char *text, size_t len, unsigned max_depth);
/* Skips JSON whitespace (space, tab, CR, LF). */
void json_scan_ws(struct json_scan *s);
/* Consumes c if it is the next byte. */
bool json_scan_take(struct json_scan *s, char c);
/* One value at p, which moves past it; false if there is none there. */
bool json_scan_value(struct json_scan *s);
/* One string at p, which moves past its closing quote. */
bool json_scan_string(struct json_scan *s);

/* The whole of text is one JSON value, with whitespace around it allowed. */
bool json_scan_valid(const char *text, size_t len, unsigned max_depth);
