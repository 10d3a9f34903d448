/* UTF-8 checks; see utf8.h. */
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. */
size_t utf8_sequence(const unsigned char *s, size_t len) {
        unsigned char lo = 0x80, hi = 0xBF;
        size_t n;

        if (len == 0)
                return 0;
        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xC2 && s[0] <= 0xDF)
                n = 2;
        else if (s[0] >= 0xE0 && s[0] <= 0xEF)
                n = 3, lo = s[0] == 0xE0 ? 0xA0 : 0x80, hi = s[0] == 0xED ? 0x9F : 0xBF;
        else if (s[0] >= 0xF0 && s[0] <= 0xF4)
                n = 4, lo = s[0] == 0xF0 ? 0x90 : 0x80, hi = s[0] == 0xF4 ? 0x8F : 0xBF;
        else
                return 0;
        if (len < n || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if (s[i] < 0x80 || s[i] > 0xBF)
                        return 0;
        return n;
}

bool utf8_valid(const char *s, size_t len) {
        const unsigned char *p = (const unsigned char *)s;

        for (size_t i = 0, n; i < len; i += n)
                if (!(n = utf8_sequence(p + i, len - i)))
                        return false;
        return true;
}

/* True if the bytes from i to the end could start a valid character that was cut. */
static bool cut_character(const unsigned char *p, size_t i, size_t len) {
        unsigned char full[4];
        size_t have = len - i;

        if (have >= 4 || p[i] < 0xC2 || p[i] > 0xF4)
                return false;
        memcpy(full, p + i, have);
        memset(full + have, 0x80, sizeof full - have); /* a neutral continuation */
        if (p[i] == 0xE0 && have == 1)
                full[1] = 0xA0;
        if (p[i] == 0xF0 && have == 1)
                full[1] = 0x90;
        return utf8_sequence(full, sizeof full) > have;
}

char *utf8_mend(char *s) {
        unsigned char *p = (unsigned char *)s;
        size_t len = strlen(s);

        for (size_t i = 0, n; i < len; i += n) {
                n = utf8_sequence(p + i, len - i);
                if (n)
                        continue;
                if (cut_character(p, i, len)) {
                        p[i] = '\0';
                        break;
                }
                p[i] = '?';
                n = 1;
        }
        return s;
}

/* The code point of a valid sequence of n bytes. */
static uint32_t code_point(const unsigned char *p, size_t n) {
        static const unsigned char lead_mask[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
        uint32_t cp = p[0] & lead_mask[n];

        for (size_t i = 1; i < n; i++)
                cp = (cp << 6) | (p[i] & 0x3f);
        return cp;
}

static bool hidden(uint32_t cp) {
        return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) ||
               (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff;
}

char *utf8_display(const char *s, size_t len, size_t max) {
        const unsigned char *p = (const unsigned char *)s;
        char *out = malloc((len < max ? len : max) + 1);
        size_t used = 0;

        if (!out)
                return NULL;
        for (size_t i = 0, n; i < len; i += n) {
                n = utf8_sequence(p + i, len - i);
                if (n == 0) {
                        if (used + 1 > max)
                                break;
                        out[used++] = '?';
                        n = 1;
                        continue;
                }
                if (hidden(code_point(p + i, n)))
                        continue;
                if (used + n > max)
                        break;
                memcpy(out + used, p + i, n);
                used += n;
        }
        out[used] = '\0';
        return out;
}
