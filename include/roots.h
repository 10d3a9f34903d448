/* The roots of one server ("roots" in its entry): MCP Root objects, each a file:// URI and
 * an optional name, that the daemon itself answers the server's roots/list with (see
 * upcall.h). Written in the configuration as {"uri": ..., "name": ...}, as a URI
 * string, or as an absolute path, which becomes a file:// URI with everything but the
 * characters a URI path may hold percent-encoded. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct config_problems;

struct root {
        char *uri;  /* file:///..., or file://localhost/... */
        char *name; /* NULL: none */
};

struct roots {
        struct root *items;
        size_t n;
};

/* A settings-table parser (SETTING_CUSTOM) for "roots": an array of roots into dst, a
 * struct roots; each bad item, and each URI given twice, is a problem at its JSON path. */
int roots_parse(json_object *v, const char *path, void *dst, struct config_problems *p);
void roots_done(struct roots *r);
bool roots_equal(const struct roots *a, const struct roots *b);
/* dst's roots are replaced by src's; src is left empty. */
void roots_move(struct roots *dst, struct roots *src);

/* Why uri is not a local file:// URI ("expected ...", static or written to buf), or NULL
 * when it is one. */
const char *root_uri_problem(const char *uri, char *buf, size_t size);
/* The file:// URI of an absolute path, malloc'd; NULL when out of memory. */
char *root_uri_from_path(const char *path);

/* roots/list's result: {"roots": [{"uri": ..., "name": ...}, ...]}. */
json_object *roots_result(const struct roots *r);
