/* The exposed-name scheme; see names.h. */
#include "names.h"

#include <stdio.h>
#include <string.h>

static bool allowed(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.';
}

static bool all_allowed(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (!allowed(s[i]))
                        return false;
        return true;
}

bool name_valid(const char *name) {
        size_t len = strlen(name);

        return len >= 1 && len <= NAME_MAX_LEN && all_allowed(name, len);
}

bool name_separator_valid(const char *sep) {
        size_t len = strlen(sep);

        return len >= 1 && len <= 8 && all_allowed(sep, len);
}

static uint32_t hash_parts(const char *const *parts) {
        uint32_t h = 2166136261u;

        for (; *parts; parts++)
                for (const char *s = *parts; *s; s++)
                        h = (h ^ (uint8_t)*s) * 16777619u;
        return h;
}

uint32_t name_hash(const char *s) {
        return hash_parts((const char *const[]){ s, NULL });
}

/* The first 119 characters of the parts joined, each disallowed one made '_', then the hash. */
static void fallback_parts(const char *const *parts, char out[NAME_MAX_LEN + 1]) {
        const size_t keep = NAME_MAX_LEN - NAME_HASH_LEN - 1;
        size_t i = 0;

        for (const char *const *p = parts; *p && i < keep; p++)
                for (const char *s = *p; *s && i < keep; s++)
                        out[i++] = allowed(*s) ? *s : '_';
        snprintf(out + i, NAME_MAX_LEN + 1 - i, "-%08x", hash_parts(parts));
}

void name_fallback(const char *text, char out[NAME_MAX_LEN + 1]) {
        fallback_parts((const char *const[]){ text, NULL }, out);
}

bool name_expose(const char *prefix, const char *sep, const char *name, char out[NAME_MAX_LEN + 1]) {
        bool prefixed = prefix && *prefix;
        const char *const parts[] = { prefixed ? prefix : "", prefixed ? sep : "", name, NULL };
        size_t len = strlen(parts[0]) + strlen(parts[1]) + strlen(name);

        if (len >= 1 && len <= NAME_MAX_LEN && all_allowed(parts[0], strlen(parts[0])) &&
            all_allowed(parts[1], strlen(parts[1])) && all_allowed(name, strlen(name))) {
                snprintf(out, NAME_MAX_LEN + 1, "%s%s%s", parts[0], parts[1], name);
                return true;
        }
        fallback_parts(parts, out);
        return false;
}
