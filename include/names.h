/* The name scheme of tools and prompts exposed to clients: server S's tool "search"
 * appears as "S__search" (the separator is configurable; a per-server prefix replaces S, and
 * an empty prefix exposes the name as it is, unless it begins with another server's prefix
 * and the separator: the registry keeps such names for that server). Prefixed by default even with one server, so
 * adding a server never renames a tool.
 *
 * Exposed names keep to the MCP tool-name rules: 1-128 characters of A-Z a-z 0-9 _ - .
 * When prefix + separator + name would break them, the fallback is stable and unique: the
 * name with every other character replaced by '_', cut to 119 characters, then '-' and 8 hex
 * digits of the FNV-1a hash of the unchanged prefixed name. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NAME_MAX_LEN 128
#define NAME_HASH_LEN 8
#define NAMES_DEFAULT_SEPARATOR "__"

/* 1-128 characters of the allowed set. */
bool name_valid(const char *name);
/* A separator is 1-8 characters of the allowed set. */
bool name_separator_valid(const char *sep);

uint32_t name_hash(const char *s);

/* Writes the exposed name into out (NAME_MAX_LEN + 1 bytes). prefix NULL or "": none.
 * Returns true if it is the plain prefixed name, false if the fallback was used. */
bool name_expose(const char *prefix, const char *sep, const char *name, char out[NAME_MAX_LEN + 1]);

/* The fallback form of any text, also used to tell colliding names apart. */
void name_fallback(const char *text, char out[NAME_MAX_LEN + 1]);
