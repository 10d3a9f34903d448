/* A server's configured roots; see roots.h. */
#include "roots.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "settings.h"

#define ROOT_FORMS "a file:// URI, an absolute path or {\"uri\": ..., \"name\": ...}"

/* What a URI path holds as it is (RFC 3986: pchar without pct-encoded, and '/'). */
static bool path_char(unsigned char c) {
        return isascii(c) && (isalnum(c) || (c && strchr("-._~!$&'()*+,;=:@/", c)));
}

#define ENCODE_HINT " (or write the absolute path, which is encoded for you)"

static const char *bad_char(unsigned char c, char *buf, size_t size) {
        if (c == '%')
                return "'%' must start a percent-encoding such as %20 (%25 for '%' itself)";
        if (c >= ' ' && c < 0x7f)
                snprintf(buf, size, "'%c' must be percent-encoded as %%%02X" ENCODE_HINT, c, c);
        else
                snprintf(buf, size, "byte 0x%02X must be percent-encoded as %%%02X" ENCODE_HINT, c, c);
        return buf;
}

const char *root_uri_problem(const char *uri, char *buf, size_t size) {
        const char *authority, *path;

        if (strncmp(uri, "file://", 7) != 0)
                return "expected " ROOT_FORMS;
        authority = uri + 7;
        path = strchr(authority, '/');
        if (!path)
                return "expected file:///PATH";
        /* Servers read roots as paths on their own host. */
        if (path != authority && !(path - authority == 9 && strncasecmp(authority, "localhost", 9) == 0))
                return "expected a root on this host: file:///PATH or file://localhost/PATH";
        for (const char *c = path; *c; c++) {
                if (*c == '?' || *c == '#')
                        return "a root is a directory: its URI has no query ('?') or fragment ('#')";
                if (*c == '%' && isxdigit((unsigned char)c[1]) && isxdigit((unsigned char)c[2]))
                        c += 2;
                else if (!path_char((unsigned char)*c))
                        return bad_char((unsigned char)*c, buf, size);
        }
        return NULL;
}

char *root_uri_from_path(const char *path) {
        char *uri = malloc(strlen("file://") + 3 * strlen(path) + 1), *o;

        if (!uri)
                return NULL;
        o = stpcpy(uri, "file://");
        for (const unsigned char *c = (const unsigned char *)path; *c; c++)
                if (path_char(*c))
                        *o++ = (char)*c;
                else
                        o += sprintf(o, "%%%02X", *c);
        *o = '\0';
        return uri;
}

static void root_done(struct root *r) {
        free(r->uri);
        free(r->name);
        *r = (struct root){};
}

void roots_done(struct roots *r) {
        for (size_t i = 0; i < r->n; i++)
                root_done(&r->items[i]);
        free(r->items);
        *r = (struct roots){};
}

void roots_move(struct roots *dst, struct roots *src) {
        roots_done(dst);
        *dst = *src;
        *src = (struct roots){};
}

/* The URI that v (a string at path) stands for, into *ret. */
static int parse_uri(json_object *v, const char *path, char **ret, struct config_problems *p) {
        const char *text = json_object_get_string(v), *why;
        char buf[160];

        if (!json_object_is_type(v, json_type_string)) {
                problems_add(p, PROBLEM_ERROR, path, "expected %s", ROOT_FORMS);
                return -EINVAL;
        }
        if (settings_string_cut(v, path, p))
                return -EINVAL;
        why = text[0] == '/' ? NULL : root_uri_problem(text, buf, sizeof buf);
        if (why) {
                problems_add(p, PROBLEM_ERROR, path, "%s", why);
                return -EINVAL;
        }
        *ret = text[0] == '/' ? root_uri_from_path(text) : strdup(text);
        return *ret ? 0 : -ENOMEM;
}

/* {"uri": ..., "name": ...}: the members a Root has, "uri" required. */
static int parse_root_object(json_object *v, const char *path, struct root *ret, struct config_problems *p) {
        json_object *uri, *name = NULL;
        char item[768]; /* path is at most 512 */

        json_object_object_foreach(v, key, value) {
                (void)value;
                if (strcmp(key, "uri") != 0 && strcmp(key, "name") != 0) {
                        snprintf(item, sizeof item, "%s.%s", path, key);
                        problems_add(p, PROBLEM_ERROR, item, "unknown key: a root has \"uri\" and, optionally, \"name\"");
                        return -EINVAL;
                }
        }
        if (!json_object_object_get_ex(v, "uri", &uri)) {
                problems_add(p, PROBLEM_ERROR, path, "missing \"uri\": a file:// URI or an absolute path");
                return -EINVAL;
        }
        if (json_object_object_get_ex(v, "name", &name) && !json_object_is_type(name, json_type_string)) {
                snprintf(item, sizeof item, "%s.name", path);
                problems_add(p, PROBLEM_ERROR, item, "expected a string");
                return -EINVAL;
        }
        snprintf(item, sizeof item, "%s.uri", path);
        if (parse_uri(uri, item, &ret->uri, p) < 0)
                return -EINVAL;
        if (name && !(ret->name = strdup(json_object_get_string(name))))
                return -ENOMEM;
        return 0;
}

static int parse_root(json_object *v, const char *path, struct root *ret, struct config_problems *p) {
        int r;

        *ret = (struct root){};
        r = json_object_is_type(v, json_type_object) ? parse_root_object(v, path, ret, p) : parse_uri(v, path, &ret->uri, p);
        if (r == -ENOMEM)
                problems_add(p, PROBLEM_ERROR, path, "out of memory");
        if (r < 0)
                root_done(ret);
        return r;
}

static bool listed(const struct roots *r, const char *uri) {
        for (size_t i = 0; i < r->n; i++)
                if (strcmp(r->items[i].uri, uri) == 0)
                        return true;
        return false;
}

int roots_parse(json_object *v, const char *path, void *dst, struct config_problems *p) {
        struct roots *r = dst, next = {};
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
        int ret = 0;

        if (!json_object_is_type(v, json_type_array)) {
                problems_add(p, PROBLEM_ERROR, path, "expected an array of roots, each %s", ROOT_FORMS);
                return -EINVAL;
        }
        next.items = calloc(n ? n : 1, sizeof *next.items);
        if (!next.items)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct root root;
                char item[512];

                snprintf(item, sizeof item, "%s[%zu]", path, i);
                if (parse_root(json_object_array_get_idx(v, i), item, &root, p) < 0) {
                        ret = -EINVAL;
                        continue;
                }
                if (listed(&next, root.uri)) {
                        problems_add(p, PROBLEM_ERROR, item, "%s is a root already", root.uri);
                        root_done(&root);
                        ret = -EINVAL;
                        continue;
                }
                next.items[next.n++] = root;
        }
        if (ret == 0)
                roots_move(r, &next);
        roots_done(&next);
        return ret;
}

static bool str_equal(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

bool roots_equal(const struct roots *a, const struct roots *b) {
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (!str_equal(a->items[i].uri, b->items[i].uri) || !str_equal(a->items[i].name, b->items[i].name))
                        return false;
        return true;
}

json_object *roots_result(const struct roots *r) {
        json_object *result = json_object_new_object(), *list = json_object_new_array();

        for (size_t i = 0; i < r->n; i++) {
                json_object *root = json_object_new_object();

                json_object_object_add(root, "uri", json_object_new_string(r->items[i].uri));
                if (r->items[i].name)
                        json_object_object_add(root, "name", json_object_new_string(r->items[i].name));
                json_object_array_add(list, root);
        }
        json_object_object_add(result, "roots", list);
        return result;
}
