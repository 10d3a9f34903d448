/* JSON text checked without building anything; see json-scan.h. */
#include "json-scan.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "utf8.h"

void json_scan_init(struct json_scan *s, const char *text, size_t len, unsigned max_depth) {
        *s = (struct json_scan){ .p = text, .end = text + len, .max_depth = max_depth };
}

static size_t left(const struct json_scan *s) {
        return (size_t)(s->end - s->p);
}

void json_scan_ws(struct json_scan *s) {
        while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n'))
                s->p++;
}

bool json_scan_take(struct json_scan *s, char c) {
        if (s->p >= s->end || *s->p != c)
                return false;
        s->p++;
        return true;
}

#ifdef __SSE2__
/* Sixteen bytes at a time while none of them is '"', '\\', a control character or
 * non-ASCII: a signed compare finds both of the latter, bytes from 0x80 up being negative. */
static void skip_plain_vectors(struct json_scan *s) {
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);

        while (left(s) >= 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s->p);
                __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                            _mm_cmplt_epi8(v, space));

                if (_mm_movemask_epi8(stop))
                        return;
                s->p += 16;
        }
}
#else
static void skip_plain_vectors(struct json_scan *s) {
}
#endif

/* Eight bytes at a time while none of them is '"', '\\', a control character or
 * non-ASCII: most of a large result is such text. */
static void skip_plain_words(struct json_scan *s) {
        const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
        uint64_t v, quote, backslash;

        while (left(s) >= 8) {
                memcpy(&v, s->p, 8);
                quote = v ^ (ones * '"');
                backslash = v ^ (ones * '\\');
                /* A byte's high bit ends up set if it is zero (in quote or backslash), below
                 * 0x20 (v - 0x20 borrows), or 0x80 and above (v itself). */
                if ((((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | (v - ones * 0x20) | v) & highs)
                        return;
                s->p += 8;
        }
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* \uXXXX at p: its code unit, or -1. */
static long take_u_escape(struct json_scan *s) {
        long unit = 0;

        if (left(s) < 6 || s->p[0] != '\\' || s->p[1] != 'u')
                return -1;
        for (int i = 2; i < 6; i++) {
                int h = hex_value(s->p[i]);
                if (h < 0)
                        return -1;
                unit = unit * 16 + h;
        }
        s->p += 6;
        return unit;
}

/* A backslash escape at p. A high surrogate must be followed by a low one. */
static bool take_escape(struct json_scan *s) {
        long unit;

        if (left(s) >= 2 && s->p[1] != 'u' && s->p[1] && strchr("\"\\/bfnrt", s->p[1])) {
                s->p += 2;
                return true;
        }
        unit = take_u_escape(s);
        if (unit >= 0xdc00 && unit <= 0xdfff)
                return false;
        if (unit >= 0xd800 && unit <= 0xdbff) {
                unit = take_u_escape(s);
                return unit >= 0xdc00 && unit <= 0xdfff;
        }
        return unit >= 0;
}

bool json_scan_string(struct json_scan *s) {
        size_t n;

        if (!json_scan_take(s, '"'))
                return false;
        for (;;) {
                skip_plain_vectors(s);
                skip_plain_words(s);
                while (s->p < s->end && (unsigned char)*s->p >= 0x20 && (unsigned char)*s->p < 0x80 && *s->p != '"' &&
                       *s->p != '\\')
                        s->p++;
                if (s->p >= s->end || (unsigned char)*s->p < 0x20)
                        return false;
                if (*s->p == '"') {
                        s->p++;
                        return true;
                }
                if (*s->p == '\\') {
                        if (!take_escape(s))
                                return false;
                        continue;
                }
                n = utf8_sequence((const unsigned char *)s->p, left(s));
                if (n == 0)
                        return false;
                s->p += n;
        }
}

static bool take_digits(struct json_scan *s) {
        const char *start = s->p;

        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
                s->p++;
        return s->p > start;
}

static bool take_number(struct json_scan *s) {
        json_scan_take(s, '-');
        if (!json_scan_take(s, '0') && !take_digits(s))
                return false;
        if (json_scan_take(s, '.') && !take_digits(s))
                return false;
        if (json_scan_take(s, 'e') || json_scan_take(s, 'E')) {
                if (!json_scan_take(s, '+'))
                        json_scan_take(s, '-');
                if (!take_digits(s))
                        return false;
        }
        return true;
}

static bool take_word(struct json_scan *s, const char *word) {
        size_t n = strlen(word);

        if (left(s) < n || memcmp(s->p, word, n) != 0)
                return false;
        s->p += n;
        return true;
}

/* One member at p, which moves past it. */
static bool take_member(struct json_scan *s, const char **key_end, const char **value) {
        if (!json_scan_string(s))
                return false;
        *key_end = s->p;
        json_scan_ws(s);
        if (!json_scan_take(s, ':'))
                return false;
        json_scan_ws(s);
        *value = s->p;
        return json_scan_value(s);
}

static bool take_member_or_element(struct json_scan *s, bool object) {
        const char *key_end, *value;

        return object ? take_member(s, &key_end, &value) : json_scan_value(s);
}

static bool take_container(struct json_scan *s, char close) {
        bool object = close == '}';

        s->depth++;
        s->p++;
        json_scan_ws(s);
        if (!json_scan_take(s, close)) {
                do {
                        json_scan_ws(s);
                        if (!take_member_or_element(s, object))
                                return false;
                        json_scan_ws(s);
                } while (json_scan_take(s, ','));
                if (!json_scan_take(s, close))
                        return false;
        }
        s->depth--;
        return true;
}

bool json_scan_value(struct json_scan *s) {
        /* As json-c counts: every value inside a container is one level deeper, scalars
         * included, and a value max_depth levels down is refused. */
        if (s->p >= s->end || s->depth >= s->max_depth)
                return false;
        switch (*s->p) {
        case '"':
                return json_scan_string(s);
        case '{':
                return take_container(s, '}');
        case '[':
                return take_container(s, ']');
        case 't':
                return take_word(s, "true");
        case 'f':
                return take_word(s, "false");
        case 'n':
                return take_word(s, "null");
        default:
                return take_number(s);
        }
}

bool json_scan_valid(const char *text, size_t len, unsigned max_depth) {
        struct json_scan s;

        json_scan_init(&s, text, len, max_depth);
        json_scan_ws(&s);
        if (!json_scan_value(&s))
                return false;
        json_scan_ws(&s);
        return s.p == s.end;
}

/* Code point cp as UTF-8 at out; its length. */
static size_t put_utf8(char *out, uint32_t cp) {
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}

/* One escape at p, before end (checked by the scan): what it stands for, written at out. */
static size_t decode_escape(const char **p, const char *end, char *out) {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        struct json_scan s = { .p = *p, .end = end };
        long unit, low;

        if ((*p)[1] != 'u') {
                out[0] = to[strchr(from, (*p)[1]) - from];
                *p += 2;
                return 1;
        }
        unit = take_u_escape(&s);
        if (unit >= 0xd800 && unit <= 0xdbff) {
                low = take_u_escape(&s);
                unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        }
        *p = s.p;
        return put_utf8(out, (uint32_t)unit);
}

size_t json_scan_decode_string(const char *text, size_t len, char *out) {
        const char *p = text + 1, *end = text + len - 1;
        size_t n = 0;

        while (p < end) {
                const char *backslash = memchr(p, '\\', (size_t)(end - p));
                size_t plain = backslash ? (size_t)(backslash - p) : (size_t)(end - p);

                memcpy(out + n, p, plain);
                n += plain;
                p += plain;
                if (backslash)
                        n += decode_escape(&p, end, out + n);
        }
        out[n] = '\0';
        return strlen(out);
}

/* Whether the string key[0, len) (quotes included) is name, escapes decoded. */
static bool key_is(const char *key, size_t len, const char *name) {
        size_t want = strlen(name);
        char decoded[128];

        if (!memchr(key, '\\', len))
                return len == want + 2 && memcmp(key + 1, name, want) == 0;
        /* An escape is at most six bytes for each byte it stands for. */
        if (len > sizeof decoded || len > 6 * want + 2)
                return false;
        return json_scan_decode_string(key, len, decoded) == want && memcmp(decoded, name, want) == 0;
}

/* The member key[0, end) whose value starts at value, after the member that ended at
 * prev_end (NULL: it is the first): counted for each name it has. Its cut, until another
 * member follows, takes the comma before it. */
static void note_member(const char *key, const char *key_end, const char *value, const char *end,
                        const char *prev_end, const char *const *names, size_t n, struct json_member *ret) {
        for (size_t i = 0; i < n; i++)
                if (key_is(key, (size_t)(key_end - key), names[i]))
                        ret[i] = (struct json_member){ .count = ret[i].count + 1, .start = key, .end = end, .value = value,
                                                       .cut_start = prev_end ? prev_end : key, .cut_end = end };
}

/* The member next starts at next: the member found just before it (ending at prev_end)
 * is cut with the comma after it instead. */
static void member_follows(const char *prev_end, const char *next, size_t n, struct json_member *ret) {
        for (size_t i = 0; i < n; i++)
                if (ret[i].count && ret[i].end == prev_end) {
                        ret[i].cut_start = ret[i].start;
                        ret[i].cut_end = next;
                }
}

bool json_scan_open(struct json_scan *s, const char *text, size_t len, unsigned max_depth, char open) {
        json_scan_init(s, text, len, max_depth);
        json_scan_ws(s);
        if (!json_scan_take(s, open))
                return false;
        s->depth = 1;
        json_scan_ws(s);
        return true;
}

int json_scan_members(const char *text, size_t len, unsigned max_depth, const char *const *names, size_t n,
                      struct json_member *ret) {
        const char *prev_end = NULL, *key, *key_end, *value;
        struct json_scan s;
        int members = 0;

        memset(ret, 0, n * sizeof *ret);
        if (!json_scan_open(&s, text, len, max_depth, '{'))
                return -EINVAL;
        if (!json_scan_take(&s, '}')) {
                do {
                        json_scan_ws(&s);
                        key = s.p;
                        if (prev_end)
                                member_follows(prev_end, key, n, ret);
                        if (!take_member(&s, &key_end, &value))
                                return -EINVAL;
                        note_member(key, key_end, value, s.p, prev_end, names, n, ret);
                        prev_end = s.p;
                        members++;
                        json_scan_ws(&s);
                } while (json_scan_take(&s, ','));
                if (!json_scan_take(&s, '}'))
                        return -EINVAL;
        }
        json_scan_ws(&s);
        return s.p == s.end ? members : -EINVAL;
}

int json_scan_elements(const char *text, size_t len, unsigned max_depth, json_scan_element_fn each, void *userdata) {
        struct json_scan s;
        const char *start;
        int r;

        if (!json_scan_open(&s, text, len, max_depth, '['))
                return -EINVAL;
        if (!json_scan_take(&s, ']')) {
                do {
                        json_scan_ws(&s);
                        start = s.p;
                        if (!json_scan_value(&s))
                                return -EINVAL;
                        r = each(start, (size_t)(s.p - start), userdata);
                        if (r != 0)
                                return r;
                        json_scan_ws(&s);
                } while (json_scan_take(&s, ','));
                if (!json_scan_take(&s, ']'))
                        return -EINVAL;
        }
        json_scan_ws(&s);
        return s.p == s.end ? 0 : -EINVAL;
}
