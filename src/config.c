/* Configuration loading and validation; see config.h. */
#include "config.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

#define CONFIG_FILE_MAX (16 * 1024 * 1024)

void problems_add(struct config_problems *p, enum problem_severity severity, const char *path,
                  const char *fmt, ...) {
        struct config_problem *items = realloc(p->items, (p->count + 1) * sizeof *items);
        va_list ap;
        char *msg;

        if (!items)
                return;
        p->items = items;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        p->items[p->count++] = (struct config_problem){
                .severity = severity,
                .path = strdup(path ? path : ""),
                .message = msg,
        };
        if (severity == PROBLEM_ERROR)
                p->errors++;
}

void problems_done(struct config_problems *p) {
        for (size_t i = 0; i < p->count; i++) {
                free(p->items[i].path);
                free(p->items[i].message);
        }
        free(p->items);
        p->items = NULL;
        p->count = p->errors = 0;
}

void config_init_defaults(struct config *c) {
        *c = (struct config){
                .socket_mode = CONFIG_DEFAULT_SOCKET_MODE,
                .log_level = -1,
                .max_message_size = CONFIG_DEFAULT_MAX_MESSAGE,
                .client_output_limit = CONFIG_DEFAULT_OUTPUT_LIMIT,
                .shutdown_timeout = CONFIG_DEFAULT_SHUTDOWN_TIMEOUT,
        };
}

void config_done(struct config *c) {
        free(c->socket_path);
        free(c->control_socket_path);
        config_init_defaults(c);
}

/* A table of settings keeps each key's type, range and destination in one place. */
enum setting_type { SETTING_PATH, SETTING_SIZE, SETTING_SECONDS, SETTING_MODE, SETTING_LOG_LEVEL };

struct setting {
        const char *key;
        enum setting_type type;
        size_t offset;
        double min, max;
};

static const struct setting daemon_settings[] = {
        { "socket", SETTING_PATH, offsetof(struct config, socket_path), 0, 0 },
        { "controlSocket", SETTING_PATH, offsetof(struct config, control_socket_path), 0, 0 },
        { "socketMode", SETTING_MODE, offsetof(struct config, socket_mode), 0, 0777 },
        { "logLevel", SETTING_LOG_LEVEL, offsetof(struct config, log_level), 0, 0 },
        { "maxMessageSize", SETTING_SIZE, offsetof(struct config, max_message_size), 1024, 1u << 30 },
        { "clientOutputLimit", SETTING_SIZE, offsetof(struct config, client_output_limit), 4096, 1u << 30 },
        { "shutdownTimeout", SETTING_SECONDS, offsetof(struct config, shutdown_timeout), 0.1, 3600 },
};

static void apply_setting(const struct setting *s, json_object *v, const char *path, void *base,
                          struct config_problems *p) {
        void *dst = (char *)base + s->offset;

        switch (s->type) {
        case SETTING_PATH: {
                const char *str = json_object_get_string(v);
                if (!json_object_is_type(v, json_type_string) || str[0] != '/') {
                        problems_add(p, PROBLEM_ERROR, path, "expected an absolute path");
                        return;
                }
                free(*(char **)dst);
                *(char **)dst = strdup(str);
                return;
        }
        case SETTING_MODE: {
                const char *str = json_object_get_string(v);
                char *end;
                long mode = json_object_is_type(v, json_type_string) ? strtol(str, &end, 8) : -1;
                if (mode < 0 || *end || !*str || mode > (long)s->max) {
                        problems_add(p, PROBLEM_ERROR, path, "expected an octal mode string such as \"0660\"");
                        return;
                }
                *(int *)dst = (int)mode;
                return;
        }
        case SETTING_LOG_LEVEL: {
                int level = json_object_is_type(v, json_type_string)
                                    ? log_level_from_string(json_object_get_string(v)) : -EINVAL;
                if (level < 0) {
                        problems_add(p, PROBLEM_ERROR, path, "expected one of \"err\", \"warning\", \"notice\", \"info\", \"debug\"");
                        return;
                }
                *(int *)dst = level;
                return;
        }
        case SETTING_SIZE:
        case SETTING_SECONDS: {
                bool number = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
                double d = number ? json_object_get_double(v) : NAN;
                if (!number || !isfinite(d) || d < s->min || d > s->max) {
                        problems_add(p, PROBLEM_ERROR, path, "expected a number from %g to %g%s", s->min,
                                     s->max, s->type == SETTING_SECONDS ? " (seconds)" : " (bytes)");
                        return;
                }
                if (s->type == SETTING_SIZE)
                        *(size_t *)dst = (size_t)d;
                else
                        *(double *)dst = d;
                return;
        }
        }
}

static void parse_daemon_settings(json_object *obj, struct config *c, struct config_problems *p) {
        if (!json_object_is_type(obj, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, "mcpvisor", "expected an object");
                return;
        }
        json_object_object_foreach(obj, key, value) {
                char path[256];
                const struct setting *s = NULL;

                snprintf(path, sizeof path, "mcpvisor.%s", key);
                for (size_t i = 0; i < ARRAY_SIZE(daemon_settings); i++)
                        if (strcmp(daemon_settings[i].key, key) == 0)
                                s = &daemon_settings[i];
                if (!s)
                        problems_add(p, PROBLEM_WARNING, path, "unknown key, ignored");
                else
                        apply_setting(s, value, path, c, p);
        }
}

/* Line and column of a byte offset, for parse errors a person can find. */
static void offset_to_position(const char *text, size_t offset, int *line, int *col) {
        *line = 1;
        *col = 1;
        for (size_t i = 0; i < offset && text[i]; i++) {
                if (text[i] == '\n') {
                        (*line)++;
                        *col = 1;
                } else
                        (*col)++;
        }
}

int config_parse(const char *text, size_t len, struct config *ret, struct config_problems *p) {
        json_tokener *tok = json_tokener_new();
        json_object *root;
        struct config c;
        enum json_tokener_error jerr;

        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        root = json_tokener_parse_ex(tok, text, (int)len);
        jerr = json_tokener_get_error(tok);
        if (!root || jerr != json_tokener_success) {
                int line, col;
                offset_to_position(text, json_tokener_get_parse_end(tok), &line, &col);
                problems_add(p, PROBLEM_ERROR, "", "not valid JSON at line %d, column %d: %s", line, col,
                             jerr == json_tokener_continue ? "unexpected end of file"
                                                           : json_tokener_error_desc(jerr));
                json_object_put(root);
                json_tokener_free(tok);
                return -EINVAL;
        }
        json_tokener_free(tok);
        if (!json_object_is_type(root, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, "", "expected a JSON object at the top level");
                json_object_put(root);
                return -EINVAL;
        }

        config_init_defaults(&c);
        json_object_object_foreach(root, key, value) {
                if (strcmp(key, "mcpvisor") == 0)
                        parse_daemon_settings(value, &c, p);
                else if (strcmp(key, "mcpServers") == 0) {
                        if (!json_object_is_type(value, json_type_object))
                                problems_add(p, PROBLEM_ERROR, "mcpServers", "expected an object of servers");
                } else
                        problems_add(p, PROBLEM_WARNING, key, "unknown key, ignored");
        }
        json_object_put(root);
        if (p->errors > 0) {
                config_done(&c);
                return -EINVAL;
        }
        *ret = c;
        return 0;
}

static int read_file(const char *path, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EISDIR;
        if (st.st_size > CONFIG_FILE_MAX)
                return -EFBIG;
        buf = malloc((size_t)st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        while (len < (size_t)st.st_size) {
                ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int config_load(const char *path, bool missing_ok, struct config *ret, struct config_problems *p) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        p->file = path;
        r = read_file(path, &text, &len);
        if (r == -ENOENT && missing_ok) {
                config_init_defaults(ret);
                return 0;
        }
        if (r < 0) {
                problems_add(p, PROBLEM_ERROR, "", "cannot read the file: %s", strerror(-r));
                return r;
        }
        return config_parse(text, len, ret, p);
}
