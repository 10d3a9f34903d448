/* JSON text checked without building anything: the RFC 8259 grammar, UTF-8 without
 * overlong forms or surrogates, \u escapes with surrogates in pairs, nesting bounded.
 * Never laxer than json-c's strict parser (fuzz_scan checks it), so text it accepts can be
 * passed on as it is where json-c would have accepted it. Allocates nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Starts a scan of text that must be one object or array (open is '{' or '['), past its
 * opening bracket and the space after it, at depth 1; false when text does not start so. */
bool json_scan_open(struct json_scan *s, const char *text, size_t len, unsigned max_depth, char open);

/* The whole of text is one JSON value, with whitespace around it allowed. */
bool json_scan_valid(const char *text, size_t len, unsigned max_depth);

/* Where one member of an object is in its text, so that it can be read, or the object
 * written without it, without building anything. */
struct json_member {
        unsigned count;                  /* times the object has it; the rest is of the last */
        const char *start, *end;         /* from its name's opening quote to its value's end */
        const char *value;               /* its value's first byte */
        const char *cut_start, *cut_end; /* it with one comma beside it (and the whitespace
                                          * between): what to leave out for the object without
                                          * it to stay valid; its span alone if it is the only one */
};

/* text is one JSON object (whitespace around it allowed): finds its members named names[0,
 * n) (names compared with their escapes decoded) into ret[0, n). Returns how many members
 * the object has, or -EINVAL when text is not one valid object. */
int json_scan_members(const char *text, size_t len, unsigned max_depth, const char *const *names, size_t n,
                      struct json_member *ret);

/* Called with each element of an array; a value other than 0 stops the walk. */
typedef int (*json_scan_element_fn)(const char *start, size_t len, void *userdata);
/* text is one JSON array: calls each for its elements in order. Returns 0, the value each
 * stopped with, or -EINVAL when text is not one valid array (after the elements before
 * the error). */
int json_scan_elements(const char *text, size_t len, unsigned max_depth, json_scan_element_fn each, void *userdata);

/* The JSON string text[0, len) (its quotes included, as json_scan_string() accepts it)
 * decoded into out, which has room for len bytes: escapes as UTF-8 (a pair of surrogate
 * escapes as one code point), then a NUL. Returns the decoded length (a \u0000 inside
 * ends the C string early, as json-c's strings do). */
size_t json_scan_decode_string(const char *text, size_t len, char *out);
