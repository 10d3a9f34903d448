/* Small text helpers shared by modules that otherwise have nothing in common (a leaf: it
 * includes nothing of the daemon's, so mcpvisor-exec-credentials can take it alone). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* *error = the formatted text (malloc'd), or NULL when out of memory. */
void text_error(char **error, const char *fmt, ...) _printf_(2, 3);

/* Equal strings, NULL equal only to NULL. */
bool text_equal(const char *a, const char *b);
/* Equal NULL-terminated arrays, NULL equal to an empty one. */
bool text_strv_equal(char *const *a, char *const *b);

/* Room for need bytes in *buf, a buffer of *cap bytes grown as text comes in: doubled
 * (from 4 KiB) until it holds need, but never past max unless need is. false when memory
 * ran out (*buf and *cap are then as they were). */
bool text_room(char **buf, size_t *cap, size_t need, size_t max);
