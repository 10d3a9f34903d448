/* Configuration loading: the main file, its drop-ins, daemon settings and server entries. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audit.h"
#include "json-duplicates.h"
#include "names.h"
#include "settings.h"
#include "text.h"

#define CONFIG_FILE_MAX (16 * 1024 * 1024)
#define CONFIG_DROPIN_DIR "mcpvisor.d"
#define CONFIG_EMPTY_HINT "an empty configuration is {\"mcpServers\": {}}"

static _printf_(5, 0) void problems_addv(struct config_problems *p, const char *file, enum problem_severity severity,
                          const char *path, const char *fmt, va_list ap) {
        struct config_problem *items = realloc(p->items, (p->count + 1) * sizeof *items);
        char *msg;

        if (!items)
                return;
        p->items = items;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        p->items[p->count++] = (struct config_problem){
                .severity = severity,
                .file = file ? strdup(file) : NULL,
                .path = strdup(path ? path : ""),
                .message = msg,
        };
        if (severity == PROBLEM_ERROR)
                p->errors++;
}

void problems_add(struct config_problems *p, enum problem_severity severity, const char *path,
                  const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        problems_addv(p, p->file, severity, path, fmt, ap);
        va_end(ap);
}

void problems_add_in(struct config_problems *p, const char *file, enum problem_severity severity, const char *path,
                     const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        problems_addv(p, file, severity, path, fmt, ap);
        va_end(ap);
}

void problems_done(struct config_problems *p) {
        for (size_t i = 0; i < p->count; i++) {
                free(p->items[i].file);
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
                .max_server_message_size = CONFIG_DEFAULT_MAX_SERVER_MESSAGE,
                .client_output_limit = CONFIG_DEFAULT_OUTPUT_LIMIT,
                .server_input_limit = CONFIG_DEFAULT_SERVER_INPUT_LIMIT,
                .max_in_flight = CONFIG_DEFAULT_MAX_IN_FLIGHT,
                .max_clients_per_user = CONFIG_DEFAULT_MAX_CLIENTS_PER_USER,
                .shutdown_timeout = CONFIG_DEFAULT_SHUTDOWN_TIMEOUT,
                .list_wait = CONFIG_DEFAULT_LIST_WAIT,
                .list_page_size = CONFIG_DEFAULT_LIST_PAGE_SIZE,
                .audit = AUDIT_MODE_DENIED,
                .launcher = LAUNCHER_AUTO,
                .sandbox = CONFINEMENT_DEFAULT_SANDBOX,
                .max_http_sessions = HTTP_DEFAULT_MAX_SESSIONS,
                .http_session_idle = HTTP_DEFAULT_SESSION_IDLE,
                .mrtr_timeout = CONFIG_DEFAULT_MRTR_TIMEOUT,
                .mrtr_settle = CONFIG_DEFAULT_MRTR_SETTLE,
        };
}

void config_done(struct config *c) {
        free(c->socket_path);
        free(c->control_socket_path);
        free(c->tool_name_separator);
        free(c->control_group);
        access_policy_done(&c->access);
        http_config_done(&c->http);
        for (size_t i = 0; i < c->n_servers; i++)
                server_config_done(&c->servers[i]);
        free(c->servers);
        free(c->server_index);
        config_init_defaults(c);
}

/* Servers are found by name through a hash, so loading or reloading 1,000 servers costs
 * one lookup per entry, not a comparison of every entry with every other. An entry
 * taken out (server_config_take) has no name and is never found. */
static size_t name_slot(const struct config *c, const char *name) {
        return name_hash(name) & (c->server_index_size - 1);
}

static ssize_t find_server(const struct config *c, const char *name) {
        size_t mask = c->server_index_size - 1;

        if (c->server_index_size == 0) {
                for (size_t i = 0; i < c->n_servers; i++)
                        if (c->servers[i].name && strcmp(c->servers[i].name, name) == 0)
                                return (ssize_t)i;
                return -1;
        }
        for (size_t slot = name_slot(c, name);; slot = (slot + 1) & mask) {
                uint32_t v = c->server_index[slot];

                if (v == 0)
                        return -1;
                if (c->servers[v - 1].name && strcmp(c->servers[v - 1].name, name) == 0)
                        return (ssize_t)(v - 1);
        }
}

static void index_server(struct config *c, size_t i) {
        size_t mask = c->server_index_size - 1, slot = name_slot(c, c->servers[i].name);

        while (c->server_index[slot] != 0)
                slot = (slot + 1) & mask;
        c->server_index[slot] = (uint32_t)(i + 1);
}

/* Indexes every entry anew, with room for one more; without memory, none (found by a walk). */
static void reindex_servers(struct config *c) {
        size_t size = 8;

        while (size <= 2 * (c->n_servers + 1))
                size *= 2;
        free(c->server_index);
        c->server_index = calloc(size, sizeof *c->server_index);
        c->server_index_size = c->server_index ? size : 0;
        for (size_t i = 0; c->server_index && i < c->n_servers; i++)
                index_server(c, i);
}

const struct server_config *config_find_server(const struct config *c, const char *name) {
        ssize_t i = find_server(c, name);

        return i < 0 ? NULL : &c->servers[i];
}

static int parse_separator(json_object *v, const char *path, void *dst, struct config_problems *p) {
        if (!json_object_is_type(v, json_type_string) || !name_separator_valid(json_object_get_string(v))) {
                problems_add(p, PROBLEM_ERROR, path, "expected 1-8 characters of A-Z a-z 0-9 _ - . (they join a server's prefix and a tool's name)");
                return -EINVAL;
        }
        free(*(char **)dst);
        *(char **)dst = strdup(json_object_get_string(v));
        return *(char **)dst ? 0 : -ENOMEM;
}

#define FIELD(key, type, field, lo, hi) { key, type, offsetof(struct config, field), lo, hi, NULL, NULL, NULL }

static const char *const audit_modes[] = { "off", "denied", "calls", NULL };

static const struct setting daemon_settings[] = {
        FIELD("socket", SETTING_PATH, socket_path, 0, 0),
        FIELD("controlSocket", SETTING_PATH, control_socket_path, 0, 0),
        FIELD("socketMode", SETTING_MODE, socket_mode, 0, 0777),
        FIELD("logLevel", SETTING_LOG_LEVEL, log_level, 0, 0),
        FIELD("maxMessageSize", SETTING_SIZE, max_message_size, 1024, 1u << 30),
        FIELD("maxServerMessageSize", SETTING_SIZE, max_server_message_size, 1024, 1u << 30),
        FIELD("clientOutputLimit", SETTING_SIZE, client_output_limit, 4096, 1u << 30),
        FIELD("serverInputLimit", SETTING_SIZE, server_input_limit, 4096, 1u << 30),
        FIELD("maxInFlight", SETTING_COUNT, max_in_flight, 1, 1000000),
        FIELD("maxClientsPerUser", SETTING_COUNT, max_clients_per_user, 0, 1000000),
        FIELD("shutdownTimeout", SETTING_SECONDS, shutdown_timeout, 0.1, 3600),
        { "toolNameSeparator", SETTING_CUSTOM, offsetof(struct config, tool_name_separator), 0, 0, NULL, parse_separator, NULL },
        FIELD("listWait", SETTING_SECONDS, list_wait, 0, 600),
        FIELD("listPageSize", SETTING_COUNT, list_page_size, 0, 1000000),
        FIELD("idleExit", SETTING_SECONDS, idle_exit, 0, 86400 * 7),
        FIELD("controlGroup", SETTING_STRING, control_group, 0, 0),
        { "access", SETTING_CUSTOM, offsetof(struct config, access), 0, 0, NULL, access_parse, NULL },
        { "audit", SETTING_CHOICE, offsetof(struct config, audit), 0, 0, audit_modes, NULL, NULL },
        { "profiles", SETTING_CUSTOM, offsetof(struct config, access), 0, 0, NULL, access_profiles_parse, NULL },
        { "launcher", SETTING_CHOICE, offsetof(struct config, launcher), 0, 0, launcher_names, NULL, NULL },
        { "sandbox", SETTING_CHOICE, offsetof(struct config, sandbox), 0, 0, confinement_sandbox_names, NULL, NULL },
        /* the Streamable HTTP front door (http-config.c) */
        { "http", SETTING_CUSTOM, offsetof(struct config, http), 0, 0, NULL, http_config_parse, NULL },
        FIELD("maxHttpSessions", SETTING_COUNT, max_http_sessions, 1, 1000000),
        FIELD("httpSessionIdle", SETTING_SECONDS, http_session_idle, 1, 86400 * 7),
        FIELD("mrtrTimeout", SETTING_SECONDS, mrtr_timeout, 0.1, 86400),
        FIELD("mrtrSettle", SETTING_SECONDS, mrtr_settle, 0.001, 10),
};

/* The daemon settings a reload cannot apply, each with how to compare it and how to keep
 * the running value: what they set up is made once, at start (sockets bound, their mode,
 * the HTTP front door's addresses). Every other row of daemon_settings applies at a
 * reload. A row with no keep applies in part: its note says what waits. */
struct restart_setting {
        const char *key;   /* as written in the file, under "mcpvisor" */
        const char *note;  /* what applies when; NULL: all of it waits for a restart */
        bool (*equal)(const struct config *a, const struct config *b);
        void (*keep)(struct config *next, struct config *running);
};

#define SWAP(a, b)                        \
        do {                              \
                __typeof__(a) swap_ = (a); \
                (a) = (b);                \
                (b) = swap_;              \
        } while (0)

static bool socket_equal(const struct config *a, const struct config *b) {
        return text_equal(a->socket_path, b->socket_path);
}

static void socket_keep(struct config *next, struct config *running) {
        SWAP(next->socket_path, running->socket_path);
}

static bool control_socket_equal(const struct config *a, const struct config *b) {
        return text_equal(a->control_socket_path, b->control_socket_path);
}

static void control_socket_keep(struct config *next, struct config *running) {
        SWAP(next->control_socket_path, running->control_socket_path);
}

static bool socket_mode_equal(const struct config *a, const struct config *b) {
        return a->socket_mode == b->socket_mode;
}

static void socket_mode_keep(struct config *next, struct config *running) {
        next->socket_mode = running->socket_mode;
}

static bool address_equal(const struct http_address *a, const struct http_address *b) {
        return text_equal(a->host, b->host) && a->port == b->port && text_equal(a->path, b->path);
}

static bool http_listen_equal(const struct config *a, const struct config *b) {
        if (a->http.n_listen != b->http.n_listen)
                return false;
        for (size_t i = 0; i < a->http.n_listen; i++)
                if (!address_equal(&a->http.listen[i], &b->http.listen[i]))
                        return false;
        return true;
}

static void http_listen_keep(struct config *next, struct config *running) {
        SWAP(next->http.listen, running->http.listen);
        SWAP(next->http.n_listen, running->http.n_listen);
}

static bool max_message_equal(const struct config *a, const struct config *b) {
        return a->max_message_size == b->max_message_size;
}

static const struct restart_setting restart_settings[] = {
        { "socket", NULL, socket_equal, socket_keep },
        { "controlSocket", NULL, control_socket_equal, control_socket_keep },
        { "socketMode", NULL, socket_mode_equal, socket_mode_keep },
        { "http.listen", NULL, http_listen_equal, http_listen_keep },
        { "maxMessageSize",
          "socket connections made from now on take it; HTTP requests when mcpvisord starts again", max_message_equal, NULL },
};

size_t config_keep_restart_settings(struct config *next, struct config *running,
                                    void (*changed)(const char *key, const char *note, void *userdata), void *userdata) {
        size_t n = 0;

        for (size_t i = 0; i < ARRAY_SIZE(restart_settings); i++) {
                const struct restart_setting *r = &restart_settings[i];

                if (!r->equal(next, running)) {
                        changed(r->key, r->note, userdata);
                        n++;
                }
                if (r->keep)
                        r->keep(next, running);
        }
        return n;
}

const char *config_restart_setting_key(size_t i) {
        return i < ARRAY_SIZE(restart_settings) ? restart_settings[i].key : NULL;
}

bool config_daemon_setting_known(const char *key) {
        const char *dot = strchr(key, '.');
        size_t len = dot ? (size_t)(dot - key) : strlen(key);

        for (size_t i = 0; i < ARRAY_SIZE(daemon_settings); i++)
                if (strlen(daemon_settings[i].key) == len && strncmp(daemon_settings[i].key, key, len) == 0)
                        return true;
        return false;
}

/* Adds or replaces (a drop-in may redefine a server) one valid entry. */
static int put_server(struct config *c, struct server_config *s) {
        ssize_t i = find_server(c, s->name);
        struct server_config *servers;

        if (i >= 0) {
                server_config_done(&c->servers[i]);
                c->servers[i] = *s;
                return 0;
        }
        /* Room for twice as many each time n_servers reaches a power of two: a realloc per
         * entry copied the array again and again. */
        if ((c->n_servers & (c->n_servers - 1)) == 0) {
                servers = realloc(c->servers, (c->n_servers ? 2 * c->n_servers : 1) * sizeof *servers);
                if (!servers)
                        return -ENOMEM;
                c->servers = servers;
        }
        c->servers[c->n_servers++] = *s;
        if (2 * c->n_servers < c->server_index_size)
                index_server(c, c->n_servers - 1);
        else
                reindex_servers(c);
        return 0;
}

static void remove_server(struct config *c, const char *name) {
        ssize_t i = find_server(c, name);

        if (i < 0)
                return;
        server_config_done(&c->servers[i]);
        memmove(&c->servers[i], &c->servers[i + 1], (c->n_servers - (size_t)i - 1) * sizeof *c->servers);
        c->n_servers--;
        reindex_servers(c);
}

/* One document being applied: the settings' base of its top-level keys. */
struct document {
        struct config *config;
        struct config_problems *problems;
        char **broken;   /* servers whose entry repeats a key, or that are defined twice */
        size_t n_broken;
        size_t fatal;    /* errors that the daemon cannot run with */
};

static bool is_broken(const struct document *doc, const char *name) {
        for (size_t i = 0; i < doc->n_broken; i++)
                if (strcmp(doc->broken[i], name) == 0)
                        return true;
        return false;
}

static void mark_broken(struct document *doc, const char *name) {
        char **broken;

        if (is_broken(doc, name))
                return;
        broken = realloc(doc->broken, (doc->n_broken + 1) * sizeof *broken);
        if (broken) {
                doc->broken = broken;
                doc->broken[doc->n_broken] = strdup(name);
        }
        if (!broken || !doc->broken[doc->n_broken])
                doc->fatal++; /* out of memory: refuse rather than run a server we doubt */
        else
                doc->n_broken++;
}

static bool is_servers_section(const char *key) {
        return strcmp(key, "mcpServers") == 0 || strcmp(key, "servers") == 0;
}

/* A repeated name in a server's entry (or a server defined twice) skips that server, as
 * any error in its entry does; anywhere else the document is refused. */
static void on_duplicate(const struct json_duplicate *d, void *userdata) {
        struct document *doc = userdata;
        _cleanup_free_ char *path = json_steps_path(d->steps, d->depth);

        problems_add(doc->problems, PROBLEM_ERROR, path ? path : "", "given %zu times in the same object: keep one",
                     d->count);
        if (d->depth >= 2 && d->steps[0].name && is_servers_section(d->steps[0].name) && d->steps[1].name)
                mark_broken(doc, d->steps[1].name);
        else
                doc->fatal++;
}

static void offset_to_position(const char *text, size_t offset, int *line, int *col);

/* The text was read by json-c first; a repeated name is what json-c could not tell. What
 * json-c reads but JSON has not (NaN, Infinity, a number ending in '.'), the walk cannot
 * follow: refused, so that no repeated name after it goes unseen and the file means the
 * same to every JSON reader (fuzz_config checks that the two readers agree). */
static void find_duplicates(const char *text, size_t len, struct document *doc) {
        size_t stop = 0;
        int r = json_find_duplicates(text, len, JSON_TOKENER_DEFAULT_DEPTH, on_duplicate, doc, &stop);
        int line, col;

        if (r == -ENOMEM) {
                problems_add(doc->problems, PROBLEM_ERROR, "", "out of memory checking for repeated keys");
                doc->fatal++;
        } else if (r < 0) {
                offset_to_position(text, stop, &line, &col);
                problems_add(doc->problems, PROBLEM_ERROR, "",
                             "not valid JSON at line %d, column %d: NaN, Infinity and numbers ending in '.' are not JSON",
                             line, col);
                doc->fatal++;
        }
}

static int parse_daemon(json_object *v, const char *path, void *dst, struct config_problems *p) {
        struct document *doc = dst;

        return settings_apply(daemon_settings, ARRAY_SIZE(daemon_settings), v, path, doc->config, p) ? -EINVAL : 0;
}

/* "mcpServers", or VS Code's "servers". A bad entry only skips that server: returns
 * -EINVAL only when the section as a whole is unusable. */
static int parse_servers(json_object *obj, const char *section, void *dst, struct config_problems *p) {
        struct document *doc = dst;

        if (!json_object_is_type(obj, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, section, "expected an object of servers");
                return -EINVAL;
        }
        json_object_object_foreach(obj, name, entry) {
                _cleanup_free_ char *path = NULL;
                struct server_config s;
                int r;

                if (asprintf(&path, "%s.%s", section, name) < 0)
                        return -ENOMEM;
                r = server_config_parse(name, entry, path, &s, p);
                if (r == 0 && !is_broken(doc, name) && put_server(doc->config, &s) == 0)
                        continue;
                if (r == 0)
                        server_config_done(&s);
                remove_server(doc->config, name); /* a broken override does not resurrect the old entry */
        }
        return 0;
}

/* VS Code prompts for these and substitutes ${input:ID}; mcpvisor has nobody to ask. */
static int parse_inputs(json_object *v, const char *path, void *dst, struct config_problems *p) {
        if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > 0)
                problems_add(p, PROBLEM_WARNING, path,
                             "ignored: mcpvisor prompts for nothing, so ${input:ID} stays as written; "
                             "put the values in \"env\", secrets as {\"credential\": \"NAME\"}");
        return 0;
}

#define SECTION(key, parse) { key, SETTING_CUSTOM, 0, 0, 0, NULL, parse, NULL }

/* The top level, applied to a struct document. */
static const struct setting sections[] = {
        SECTION("mcpvisor", parse_daemon),
        SECTION("mcpServers", parse_servers),
        SECTION("servers", parse_servers),            /* VS Code's mcp.json */
        SECTION("inputs", parse_inputs),              /* VS Code's mcp.json */
        /* claude_desktop_config.json */
        { "globalShortcut", SETTING_NOTED, 0, 0, 0, NULL, NULL, "ignored: a setting of another MCP client" },
};

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

static bool only_space(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\r\n", s[i]) || s[i] == '\0')
                        return false;
        return true;
}

static json_object *parse_document(const char *text, size_t len, struct config_problems *p) {
        json_tokener *tok = json_tokener_new();
        json_object *root;
        enum json_tokener_error jerr;

        if (!tok)
                return NULL;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        root = json_tokener_parse_ex(tok, text, (int)len);
        size_t end = json_tokener_get_parse_end(tok);
        if (!root && json_tokener_get_error(tok) == json_tokener_continue)
                root = json_tokener_parse_ex(tok, " ", 1); /* completes a bare literal at the very end */
        jerr = json_tokener_get_error(tok);
        if (jerr != json_tokener_success) {
                int line, col;
                offset_to_position(text, end, &line, &col);
                problems_add(p, PROBLEM_ERROR, "", "not valid JSON at line %d, column %d: %s", line, col,
                             jerr == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(jerr));
                json_object_put(root);
                root = NULL;
        } else if (!json_object_is_type(root, json_type_object)) {
                problems_add(p, PROBLEM_ERROR, "", "expected a JSON object at the top level");
                json_object_put(root);
                root = NULL;
        } else if (!only_space(text + end, len - end)) {
                /* json-c stops at a NUL byte as if the text ended there */
                int line, col;
                offset_to_position(text, end, &line, &col);
                problems_add(p, PROBLEM_ERROR, "", "not valid JSON at line %d, column %d: %s after the top-level object",
                             line, col, text[end] == '\0' ? "a NUL byte" : "unexpected text");
                json_object_put(root);
                root = NULL;
        }
        json_tokener_free(tok);
        return root;
}

/* Applies one document on top of c. Returns -EINVAL when the daemon cannot run with it
 * (bad JSON, an unknown or repeated key outside a server's entry, bad daemon settings);
 * errors in a server's entry only skip that server. */
static int apply_document(const char *text, size_t len, struct config *c, struct config_problems *p) {
        json_object *root = parse_document(text, len, p);
        struct document doc = { .config = c, .problems = p };

        if (!root)
                return -EINVAL;
        find_duplicates(text, len, &doc);
        if (json_object_object_get_ex(root, "mcpServers", NULL) && json_object_object_get_ex(root, "servers", NULL)) {
                problems_add(p, PROBLEM_ERROR, "servers",
                             "both \"mcpServers\" and \"servers\" (VS Code's name for it) are given: keep one");
                doc.fatal++;
        }
        doc.fatal += settings_apply(sections, ARRAY_SIZE(sections), root, "", &doc, p);
        json_object_put(root);
        for (size_t i = 0; i < doc.n_broken; i++)
                free(doc.broken[i]);
        free(doc.broken);
        return doc.fatal ? -EINVAL : 0;
}

/* A server without a "launcher" of its own gets the daemon's, known only once every file
 * was read (a drop-in may set it). One the exec launcher would run is skipped, as any
 * error in its entry does, when it gives confinement keys. The same for "sandbox", which
 * the exec launcher ignores when it is the daemon's: that one is not the entry's key. */
static void resolve_launchers(struct config *c, struct config_problems *p) {
        for (size_t i = 0; i < c->n_servers;) {
                struct server_config *s = &c->servers[i];

                if (!(s->confinement.keys & (1u << CONFINEMENT_KEY_SANDBOX)))
                        s->confinement.sandbox = c->sandbox;
                if (s->launcher != LAUNCHER_UNSET) {
                        i++;
                        continue;
                }
                if (c->launcher == LAUNCHER_EXEC && server_config_refuse_confinement(s, true, p) > 0) {
                        remove_server(c, s->name);
                        continue;
                }
                s->launcher = c->launcher;
                i++;
        }
}

/* What no single document can check, as drop-ins may define what another one names. */
static bool profile_exists(const char *name, void *arg) {
        return access_profile_find(arg, name) != NULL;
}

static int check_whole(struct config *c, struct config_problems *p) {
        size_t errors;

        resolve_launchers(c, p);
        errors = access_policy_check(&c->access, p);
        errors += http_config_check(&c->http, profile_exists, &c->access, p);
        return errors ? -EINVAL : 0;
}

int config_parse(const char *text, size_t len, struct config *ret, struct config_problems *p) {
        struct config c;
        int r;

        config_init_defaults(&c);
        r = apply_document(text, len, &c, p);
        if (r == 0)
                r = check_whole(&c, p);
        if (r < 0) {
                config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

static const char *file_type_name(mode_t mode) {
        if (S_ISDIR(mode))
                return "a directory";
        if (S_ISFIFO(mode))
                return "a FIFO";
        if (S_ISSOCK(mode))
                return "a socket";
        if (S_ISCHR(mode))
                return "a character device";
        if (S_ISBLK(mode))
                return "a block device";
        return "not a regular file";
}

/* O_NONBLOCK: opening a FIFO for reading would wait for a writer, the whole daemon with it
 * (at start-up, --check-config, or a reload). What is not a regular file is refused after
 * the open, by fstat() of what was opened, with its type in *ret_type. */
static int read_file(const char *path, char **ret, size_t *ret_len, mode_t *ret_type) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                *ret_type = st.st_mode;
                return -EBADFD;
        }
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

static int apply_file(const char *path, struct config *c, struct config_problems *p) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        mode_t type = 0;
        int r;

        p->file = path;
        r = read_file(path, &text, &len, &type);
        if (r == -ENOENT) {
                problems_add(p, PROBLEM_ERROR, "", "cannot read the file: %s (create it: " CONFIG_EMPTY_HINT ")",
                             strerror(-r));
                return r;
        }
        if (r == -EBADFD) {
                problems_add(p, PROBLEM_ERROR, "", "cannot read the file: it is %s; only regular files are read",
                             file_type_name(type));
                return r;
        }
        if (r < 0) {
                problems_add(p, PROBLEM_ERROR, "", "cannot read the file: %s", strerror(-r));
                return r;
        }
        return apply_document(text, len, c, p);
}

static int is_json_file(const struct dirent *e) {
        size_t len = strlen(e->d_name);
        return e->d_name[0] != '.' && len > 5 && strcmp(e->d_name + len - 5, ".json") == 0;
}

/* The first error of two. */
static int first_error(int r, int q) {
        return r < 0 ? r : q;
}

/* mcpvisor.d/NAME.json beside the main file, in name order; for the daemon, up to the
 * first file refused, for the check every one. */
static int apply_dropins(const char *main_path, enum config_purpose purpose, struct config *c,
                         struct config_problems *p) {
        _cleanup_free_ char *copy = strdup(main_path), *dir = NULL;
        struct dirent **entries = NULL;
        int n, r = 0;

        if (!copy || asprintf(&dir, "%s/" CONFIG_DROPIN_DIR, dirname(copy)) < 0)
                return -ENOMEM;
        n = scandir(dir, &entries, is_json_file, alphasort);
        if (n < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                if ((r == 0 || purpose == CONFIG_FOR_CHECK) && asprintf(&path, "%s/%s", dir, entries[i]->d_name) >= 0)
                        r = first_error(r, apply_file(path, c, p));
                free(entries[i]);
        }
        free(entries);
        p->file = main_path;
        return r;
}

/* The daemon's read is all or nothing: the first file refused ends it. The check's reads
 * every file and checks the whole whatever was refused, so that one run tells every
 * problem, and keeps what it read. */
static int load(const char *path, bool missing_ok, enum config_purpose purpose, struct config *c,
                struct config_problems *p) {
        int r;

        config_init_defaults(c);
        if (purpose == CONFIG_FOR_CHECK)
                c->http.credentials = HTTP_CREDENTIALS_UNREAD;
        if (missing_ok && access(path, F_OK) < 0 && errno == ENOENT) {
                /* No main file (the default path): drop-ins alone may still add servers. */
                p->file = path;
                problems_add(p, PROBLEM_WARNING, "",
                             "does not exist: no servers but those of " CONFIG_DROPIN_DIR "/ beside it, if any "
                             "(create it, then reload: " CONFIG_EMPTY_HINT ")");
                r = 0;
        } else
                r = apply_file(path, c, p);
        if (r == -ENOMEM || (r < 0 && purpose == CONFIG_FOR_DAEMON))
                return r;
        r = first_error(r, apply_dropins(path, purpose, c, p));
        if (r == 0 || purpose == CONFIG_FOR_CHECK)
                r = first_error(r, check_whole(c, p));
        return r;
}

int config_load(const char *path, bool missing_ok, struct config *ret, struct config_problems *p) {
        struct config c;
        int r = load(path, missing_ok, CONFIG_FOR_DAEMON, &c, p);

        if (r < 0) {
                config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int config_load_for_check(const char *path, struct config *ret, struct config_problems *p) {
        int r = load(path, false, CONFIG_FOR_CHECK, ret, p);

        if (r == -ENOMEM)
                config_done(ret);
        return r;
}
