/* Small text helpers; see text.h. */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void text_error(char **error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(error, fmt, ap) < 0)
                *error = NULL;
        va_end(ap);
}

bool text_equal(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

bool text_strv_equal(char *const *a, char *const *b) {
        for (; a && b && *a && *b; a++, b++)
                if (strcmp(*a, *b) != 0)
                        return false;
        return (!a || !*a) && (!b || !*b);
}

bool text_room(char **buf, size_t *cap, size_t need, size_t max) {
        size_t n = *cap ? *cap : 4096;
        char *p;

        if (need <= *cap)
                return true;
        while (n < need)
                n *= 2;
        if (n > max)
                n = max > need ? max : need;
        p = realloc(*buf, n);
        if (!p)
                return false;
        *buf = p;
        *cap = n;
        return true;
}
