/* What the harnesses share: reading a fuzzer's input as a stream of small decisions, and
 * checking invariants loudly. Every take_* returns zeros once the input is used up, so
 * any input, however short, decodes to some run. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct fuzz_input {
        const uint8_t *data;
        size_t size;
};

static inline bool input_empty(const struct fuzz_input *in) {
        return in->size == 0;
}

static inline uint8_t take_u8(struct fuzz_input *in) {
        uint8_t v;

        if (in->size == 0)
                return 0;
        v = in->data[0];
        in->data++;
        in->size--;
        return v;
}

static inline uint16_t take_u16(struct fuzz_input *in) {
        return (uint16_t)(take_u8(in) | take_u8(in) << 8);
}

static inline uint32_t take_u32(struct fuzz_input *in) {
        return (uint32_t)take_u16(in) | (uint32_t)take_u16(in) << 16;
}

/* One of n choices (n > 0). */
static inline unsigned take_choice(struct fuzz_input *in, unsigned n) {
        return take_u8(in) % n;
}

/* Up to max bytes, the length first; *len is how many were taken. The bytes stay in the
 * input buffer (no copy). */
static inline const uint8_t *take_bytes(struct fuzz_input *in, size_t max, size_t *len) {
        const uint8_t *p = in->data;
        size_t n = take_u8(in);

        p = in->data;
        if (n > max)
                n = max;
        if (n > in->size)
                n = in->size;
        in->data += n;
        in->size -= n;
        *len = n;
        return p;
}

/* A NUL-terminated string of up to max bytes (malloc'd; NUL bytes in the input end it early). */
static inline char *take_string(struct fuzz_input *in, size_t max) {
        size_t len;
        const uint8_t *p = take_bytes(in, max, &len);
        char *s = malloc(len + 1);

        if (!s)
                abort();
        memcpy(s, p, len);
        s[len] = '\0';
        return s;
}

/* An invariant of the code under test failed: say which, then abort so that libFuzzer
 * (or the replay's ctest) records the input. */
#define fuzz_check(cond, ...)                                                                      \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "\nINVARIANT FAILED at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
                        fprintf(stderr, __VA_ARGS__);                                              \
                        fprintf(stderr, "\n");                                                     \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)
