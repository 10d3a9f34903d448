/* Fuzz target "router": a whole daemon in-process (daemon_init with two or three servers),
 * driven by a script of operations decoded from the input. Clients are socketpairs given
 * to client_new() as if accepted; servers are fake processes (fake-process.c) whose pipes
 * the harness plays: by default a well-behaved MCP server that answers the handshake,
 * lists and pings, with everything else (answers, wrong ids, progress, notifications,
 * requests to the client, garbage, closing, exiting) on the script's command. The loop
 * runs one non-blocking iteration at a time with the daemon's between-iteration work, so
 * no timer fires on its own: a script op expires a chosen pending timer instead, which
 * keeps runs deterministic.
 *
 * Input: [config: 4 bytes] [per server slot: 3 bytes of behaviour] [ops...]; each op is one
 * byte (low 5 bits the op, high 3 bits its target) followed by its own arguments.
 *
 * Invariants, checked as it runs:
 *   - every line the daemon writes to a client or a server is one valid JSON-RPC 2.0 object;
 *   - a client gets responses only for ids it sent, each at most once (ids it sent once);
 *     progress only under tokens it sent;
 *   - a server gets requests with strictly increasing integer ids on each connection;
 *   - a client gets a list_changed only for a list it asked for, and once per asking;
 *   - between iterations: a client's pending count is its routes plus its list waits; a
 *     server's in_flight is the routes to it, its abandoned the given-up ones; registry
 *     entries name listed servers;
 * and at the end, where every client half-closes, every server answers all it is asked, and
 * the daemon is stopped:
 *   - each half-closed client got exactly one answer per request (not cancelled) and was
 *     closed by the daemon;
 *   - the daemon stops (no client left, every server process reaped), with no route, list
 *     wait or server request left, and every fake process freed;
 *   - no crash, leak or undefined behaviour (ASan, UBSan, LeakSanitizer).
 *
 * MCPVISOR_FUZZ_LOG=debug (or another level) shows the daemon's log on stderr, and
 * MCPVISOR_FUZZ_TRACE=1 every op and every line between the harness and the daemon. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server-conn.h"
#include "client.h"
#include "client-socket.h"
#include "daemon.h"
#include "fake-process.h"
#include "fuzz-input.h"
#include "run.h"
#include "list-wait.h"
#include "log.h"
#include "router.h"
#include "scratch.h"
#include "server.h"

#define MAX_CLIENTS 4
#define MAX_SLOTS 3       /* server behaviours; the config has 1-3 servers, a reload up to 4 */
#define MAX_SPECS 4
#define FINAL_ROUNDS 300
#define WRITE_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* ---- what the harness remembers ---- */

struct sent_id {
        char *text;          /* the id as JSON */
        unsigned answers;
        bool duplicate;      /* sent more than once: the count means nothing */
        bool cancelled;      /* the client cancelled it: zero or one answer */
};

struct fclient {
        bool connected, half_closed, closed, eof;
        bool unreliable;     /* raw bytes or a partial write: ids no longer tracked */
        int fd;
        struct evbuffer *rx;
        struct sent_id *ids;
        size_t n_ids;
        char **tokens;       /* progress tokens it sent, as JSON */
        size_t n_tokens;
        json_object *upcalls; /* requests the daemon sent it (from servers) */
        int64_t next_id;
        unsigned lists_asked; /* bit per list_changed (list_notices): asked for since told */
};

/* The list_changed notifications, and the list methods each one is about. */
static const struct {
        const char *notification, *methods[2];
} list_notices[] = {
        { "notifications/tools/list_changed", { "tools/list" } },
        { "notifications/prompts/list_changed", { "prompts/list" } },
        { "notifications/resources/list_changed", { "resources/list", "resources/templates/list" } },
};

struct behaviour {
        bool auto_init, auto_lists, auto_ping, auto_calls, ignore_term, stay_on_eof;
        unsigned version;
        unsigned caps;
        unsigned catalog;
};

struct fchild {
        struct fake_process *fp;
        struct behaviour beh;
        unsigned slot;
        struct evbuffer *rx;
        json_object *pending;     /* requests from the daemon not answered yet */
        json_object *done_ids;    /* ids answered or cancelled, for late and duplicate answers */
        json_object *upcall_ids;  /* ids of its own requests to clients */
        int64_t last_id;
        int64_t next_upcall;
        bool stdin_eof;
        bool partial;             /* its stdout ends in the middle of a line (garbage) */
        unsigned pages_sent;
};

struct server_spec {
        bool present, disabled;
        unsigned slot;
        unsigned name;            /* index into server_names */
        unsigned restart;
        unsigned prefix;
        unsigned caps;
        unsigned generation;      /* changes its args: a changed server */
        unsigned roots;           /* 0 none, 1 or 2: one of two lists (when offered roots) */
        bool request_timeout, zero_delay, health;
};

struct config_spec {
        struct server_spec servers[MAX_SPECS];
        unsigned separator, page_size;
        bool list_wait, small_messages, broken;
};

struct harness {
        bool ready;
        char dir[64], config_path[96], socket_path[96], control_path[96];
        int log_level;
        struct daemon d;
        bool daemon_up, stopping, stop_deadline_fired;
        struct config_spec spec;
        struct behaviour slots[MAX_SLOTS];
        struct fclient clients[MAX_CLIENTS];
        bool final;               /* teardown: servers answer everything and exit when asked */
        bool trace;               /* MCPVISOR_FUZZ_TRACE: every op and line on stderr */
        int64_t next_token;
        struct json_tokener *tok;
};

static struct harness H;

static const char *const server_names[] = { "s0", "s1", "s2", "a", "a__b", "echo", "E.c-d", "s3" };

/* "x" then two-byte characters: the daemon's "%.Ns" limits are even, so any of them cuts
 * this text in the middle of a character, which must not reach a client as such. */
static const char *wide_text(void) {
        static char text[1 + 2 * 140 + 1];

        if (!text[0]) {
                text[0] = 'x';
                for (size_t i = 0; i < 140; i++)
                        memcpy(text + 1 + 2 * i, "\xc3\xa9", 2);
        }
        return text;
}

/* ---- JSON helpers ---- */

static json_object *jstr(const char *s) {
        return json_object_new_string(s);
}

static json_object *jint(int64_t v) {
        return json_object_new_int64(v);
}

static json_object *jobj(void) {
        return json_object_new_object();
}

static void jset(json_object *o, const char *key, json_object *v) {
        json_object_object_add(o, key, v);
}

static json_object *message(json_object *id, const char *method, json_object *params) {
        json_object *m = jobj();

        jset(m, "jsonrpc", jstr("2.0"));
        if (id)
                jset(m, "id", id);
        if (method)
                jset(m, "method", jstr(method));
        if (params)
                jset(m, "params", params);
        return m;
}

static json_object *response(json_object *id, json_object *result, json_object *error) {
        json_object *m = jobj();

        jset(m, "jsonrpc", jstr("2.0"));
        jset(m, "id", id);
        if (result)
                jset(m, "result", result);
        if (error)
                jset(m, "error", error);
        return m;
}

static json_object *error_object(int code, const char *text) {
        json_object *e = jobj();

        jset(e, "code", jint(code));
        jset(e, "message", jstr(text));
        return e;
}

static char *json_text(json_object *o) {
        char *s = strdup(json_object_to_json_string_ext(o, WRITE_FLAGS));

        fuzz_check(s != NULL, "out of memory");
        return s;
}

static const char *str_member(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

/* Writes without blocking; false if it did not all go (the peer is not reading). */
static bool write_all(int fd, const void *data, size_t len) {
        const char *p = data;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return false;
                p += n;
                len -= (size_t)n;
        }
        return true;
}

/* Sends one message (consumed) as a line. */
static bool write_message(int fd, json_object *msg, const char *who) {
        size_t len;
        const char *text = json_object_to_json_string_length(msg, WRITE_FLAGS, &len);
        bool ok = fd >= 0 && write_all(fd, text, len) && write_all(fd, "\n", 1);

        if (H.trace)
                fprintf(stderr, "fuzz: %s says %s%s\n", who, text, ok ? "" : " (not sent)");
        json_object_put(msg);
        return ok;
}

/* Parses one line the daemon wrote; every such line must be a JSON-RPC 2.0 object. */
static json_object *parse_daemon_line(const char *line, size_t len, const char *to) {
        json_object *o, *v;

        json_tokener_reset(H.tok);
        o = json_tokener_parse_ex(H.tok, line, (int)len);
        fuzz_check(o && json_tokener_get_error(H.tok) == json_tokener_success &&
                           json_tokener_get_parse_end(H.tok) == len,
                   "the daemon wrote a line that is not one JSON value to %s: %.*s", to, (int)len, line);
        fuzz_check(json_object_is_type(o, json_type_object), "not an object to %s: %.*s", to, (int)len, line);
        fuzz_check(json_object_object_get_ex(o, "jsonrpc", &v) && json_object_is_type(v, json_type_string) &&
                           strcmp(json_object_get_string(v), "2.0") == 0,
                   "no \"jsonrpc\": \"2.0\" in a line to %s: %.*s", to, (int)len, line);
        return o;
}

/* Calls fn for each complete line in buf, then drains them. */
static void for_each_line(struct evbuffer *buf, const char *to, void (*fn)(json_object *msg, void *userdata),
                          void *userdata) {
        for (;;) {
                struct evbuffer_ptr nl = evbuffer_search(buf, "\n", 1, NULL);
                json_object *msg;
                char *line;

                if (nl.pos < 0)
                        return;
                line = (char *)evbuffer_pullup(buf, nl.pos + 1);
                msg = parse_daemon_line(line, (size_t)nl.pos, to);
                if (H.trace)
                        fprintf(stderr, "fuzz: %s got %.*s\n", to, (int)nl.pos, line);
                evbuffer_drain(buf, (size_t)nl.pos + 1);
                fn(msg, userdata);
                json_object_put(msg);
        }
}

/* Reads what is there; true at end of file. */
static bool read_available(int fd, struct evbuffer *buf) {
        for (;;) {
                int n = evbuffer_read(buf, fd, 65536);
                if (n > 0)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return false;
                return true; /* EOF, or the daemon's end is gone */
        }
}

/* ---- the configuration file ---- */

static json_object *server_entry(const struct server_spec *s) {
        static const char *const restarts[] = { "on-failure", "always", "never" };
        static const char *const caps[] = { "roots", "sampling", "elicitation" };
        json_object *e = jobj(), *args = json_object_new_array(), *cc = json_object_new_array();
        char arg[32];

        snprintf(arg, sizeof arg, "%u-%u", s->slot, s->generation);
        json_object_array_add(args, jstr(arg));
        jset(e, "command", jstr("/bin/true")); /* must exist in PATH lookup; never run */
        jset(e, "args", args);
        jset(e, "restart", jstr(restarts[s->restart % 3]));
        /* Long deadlines: only the script's EXPIRE op ends them. */
        jset(e, "startTimeout", jint(3600));
        jset(e, "stopTimeout", jint(3600));
        jset(e, "killTimeout", jint(3600));
        jset(e, "healthInterval", jint(s->health ? 3600 : 0));
        jset(e, "healthTimeout", jint(3600));
        jset(e, "healthFailures", jint(1 + s->caps % 2));
        jset(e, "requestTimeout", jint(s->request_timeout ? 3600 : 0));
        /* A zero delay restarts in the next iteration: deterministic too. */
        jset(e, "restartDelay", jint(s->zero_delay ? 0 : 3600));
        jset(e, "startLimitBurst", jint(s->zero_delay ? 3 : 5));
        if (s->prefix == 1)
                jset(e, "prefix", jstr(""));
        else if (s->prefix == 2)
                jset(e, "prefix", jstr("p"));
        for (unsigned i = 0; i < 3; i++)
                if (s->caps & (1u << i))
                        json_object_array_add(cc, jstr(caps[i]));
        jset(e, "clientCapabilities", cc);
        if (s->roots % 3 && (s->caps & 1)) /* 1 -> 2 and back: told without a restart */
                jset(e, "roots", json_tokener_parse(s->roots % 3 == 1 ? "[\"/srv/one\"]"
                                                                      : "[\"/srv/one\",{\"uri\":\"file:///srv/two\",\"name\":\"two\"}]"));
        if (s->disabled)
                jset(e, "disabled", json_object_new_boolean(1));
        return e;
}

static void write_config(void) {
        static const char *const separators[] = { NULL, "__", ".", "-x-" };
        static const int page_sizes[] = { 0, 1, 2, 500 };
        json_object *root = jobj(), *settings = jobj(), *servers = jobj();
        const struct config_spec *c = &H.spec;
        const char *text;
        int fd;

        jset(settings, "socket", jstr(H.socket_path));
        jset(settings, "controlSocket", jstr(H.control_path));
        jset(settings, "listWait", jint(c->list_wait ? 600 : 0));
        jset(settings, "listPageSize", jint(page_sizes[c->page_size % 4]));
        if (separators[c->separator % 4])
                jset(settings, "toolNameSeparator", jstr(separators[c->separator % 4]));
        if (c->small_messages)
                jset(settings, "maxMessageSize", jint(1024));
        jset(root, "mcpvisor", settings);
        for (unsigned i = 0; i < MAX_SPECS; i++)
                if (c->servers[i].present)
                        jset(servers, server_names[c->servers[i].name % ARRAY_LEN(server_names)],
                             server_entry(&c->servers[i]));
        jset(root, "mcpServers", servers);
        text = c->broken ? "{\"mcpServers\": {\"x\": {}}, \"mcpvisor\": {\"listWait\": -1}}"
                         : json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
        fd = open(H.config_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        fuzz_check(fd >= 0 && write_all(fd, text, strlen(text)), "cannot write %s", H.config_path);
        close(fd);
        json_object_put(root);
}

/* ---- servers: the harness's side of a fake process ---- */

static struct behaviour decode_behaviour(struct fuzz_input *in) {
        uint8_t f = take_u8(in), caps = take_u8(in), catalog = take_u8(in);

        /* Mostly well-behaved: most inputs should reach routing. */
        return (struct behaviour){
                .auto_init = (f & 0x03) != 0x03,
                .auto_lists = (f & 0x0c) != 0x0c,
                .auto_ping = !(f & 0x10),
                .auto_calls = (f & 0x60) == 0x60,
                .ignore_term = f & 0x80,
                .stay_on_eof = (caps & 0xc0) == 0xc0,
                .version = catalog >> 5,
                .caps = caps,
                .catalog = catalog,
        };
}

static void on_spawned(struct fake_process *fp, void *userdata) {
        struct fchild *ch = calloc(1, sizeof *ch);
        const char *arg = fp->argv[0] && fp->argv[1] ? fp->argv[1] : "0";

        fuzz_check(ch != NULL, "out of memory");
        ch->fp = fp;
        ch->slot = (unsigned)(arg[0] - '0') % MAX_SLOTS;
        ch->beh = H.slots[ch->slot];
        ch->rx = evbuffer_new();
        ch->pending = json_object_new_array();
        ch->done_ids = json_object_new_array();
        ch->upcall_ids = json_object_new_array();
        ch->next_upcall = 1;
        fp->harness = ch;
}

static void on_signalled(struct fake_process *fp, int sig, void *userdata) {
        struct fchild *ch = fp->harness;

        if (sig == SIGKILL)
                fake_process_exit(fp, CLD_KILLED, SIGKILL);
        else if (sig == SIGTERM && (!ch->beh.ignore_term || H.final))
                fake_process_exit(fp, CLD_KILLED, SIGTERM);
}

static void on_gone(struct fake_process *fp, void *userdata) {
        struct fchild *ch = fp->harness;

        evbuffer_free(ch->rx);
        json_object_put(ch->pending);
        json_object_put(ch->done_ids);
        json_object_put(ch->upcall_ids);
        free(ch);
        fp->harness = NULL;
}

static const struct fake_process_hooks hooks = { .spawned = on_spawned, .signalled = on_signalled, .gone = on_gone };

/* Writes a message to the daemon; true if it arrives as a line of its own, false if it
 * could not be written whole or was glued to garbage written before it. */
static bool child_says(struct fchild *ch, json_object *msg) {
        bool glued = ch->partial;

        if (ch->fp->exited || ch->fp->stdout_fd < 0) {
                json_object_put(msg);
                return false;
        }
        /* At the end a server answers for real: garbage before does not swallow it. */
        if (H.final && glued)
                glued = !write_all(ch->fp->stdout_fd, "\n", 1);
        /* A write cut short leaves half a line too. */
        ch->partial = !write_message(ch->fp->stdout_fd, msg, "a server");
        return !glued && !ch->partial;
}

static json_object *initialize_result(const struct fchild *ch) {
        /* Five in eight speak a version the daemon accepts; the rest fail the handshake. */
        static const char *const versions[] = { "2025-06-18", "2024-11-05", "2025-11-25", "2025-03-26",
                                                "2025-06-18", "1999-01-01", NULL, "" };
        const struct behaviour *b = &ch->beh;
        json_object *r = jobj(), *caps = jobj(), *info = jobj();
        unsigned v = b->version % ARRAY_LEN(versions);

        if (versions[v])
                jset(r, "protocolVersion", jstr(versions[v]));
        else if (b->catalog & 0x01)
                jset(r, "protocolVersion", jint(20250618)); /* else none at all */
        if (b->caps & 0x01) {
                json_object *t = jobj();
                jset(t, "listChanged", json_object_new_boolean(1));
                jset(caps, "tools", t);
        }
        if (b->caps & 0x02)
                jset(caps, "prompts", jobj());
        if (b->caps & 0x04) {
                json_object *res = jobj();
                jset(res, "subscribe", json_object_new_boolean(b->caps & 0x08));
                jset(caps, "resources", res);
        }
        if (b->caps & 0x10)
                jset(caps, "logging", jobj());
        if (b->caps & 0x20)
                jset(caps, "completions", jobj());
        jset(r, "capabilities", caps);
        jset(info, "name", jstr("fake"));
        jset(info, "version", jstr("1"));
        jset(r, "serverInfo", info);
        if (b->catalog & 0x10)
                jset(r, "instructions", jstr("use the fake tools\nwisely"));
        return r;
}

static json_object *named(const char *key, const char *value) {
        json_object *o = jobj();

        jset(o, key, jstr(value));
        return o;
}

/* What a list request is answered with; the variant bits add collisions, bad names,
 * over-long names and malformed items. */
static json_object *catalog_items(const struct fchild *ch, const char *method) {
        unsigned v = ch->beh.catalog;
        json_object *items = json_object_new_array();
        char text[160];

        if (strcmp(method, "tools/list") == 0) {
                json_object *t = named("name", "echo");
                jset(t, "inputSchema", named("type", "object"));
                json_object_array_add(items, t);
                snprintf(text, sizeof text, "t%u", ch->slot);
                json_object_array_add(items, named("name", text));
                if (v & 0x01)
                        json_object_array_add(items, named("name", "echo"));
                if (v & 0x02)
                        json_object_array_add(items, named("name", "bad name/\xc3\xbc"));
                if (v & 0x04) {
                        memset(text, 'n', 130);
                        text[130] = '\0';
                        json_object_array_add(items, named("name", text));
                }
                if (v & 0x08) {
                        json_object_array_add(items, jint(7));
                        json_object_array_add(items, named("name", ""));
                        json_object_array_add(items, named("description", "no name"));
                }
        } else if (strcmp(method, "prompts/list") == 0) {
                json_object_array_add(items, named("name", "greet"));
                if (v & 0x01)
                        json_object_array_add(items, named("name", "echo"));
        } else if (strcmp(method, "resources/list") == 0) {
                json_object_array_add(items, named("uri", "mem://shared"));
                snprintf(text, sizeof text, "mem://%u/r", ch->slot);
                json_object_array_add(items, named("uri", text));
                if (v & 0x08)
                        json_object_array_add(items, named("name", "no uri"));
        } else {
                snprintf(text, sizeof text, "mem://%u/{x}", ch->slot);
                json_object_array_add(items, named("uriTemplate", text));
                if (v & 0x02)
                        json_object_array_add(items, named("uriTemplate", "mem://{any}"));
                if (v & 0x04)
                        json_object_array_add(items, named("uriTemplate", "{all}"));
        }
        return items;
}

static const char *list_key(const char *method) {
        if (strcmp(method, "tools/list") == 0)
                return "tools";
        if (strcmp(method, "prompts/list") == 0)
                return "prompts";
        if (strcmp(method, "resources/list") == 0)
                return "resources";
        return "resourceTemplates";
}

static bool is_list(const char *method) {
        return strcmp(method, "tools/list") == 0 || strcmp(method, "prompts/list") == 0 ||
               strcmp(method, "resources/list") == 0 || strcmp(method, "resources/templates/list") == 0;
}

/* Pages: with bit 0x20 a first page with a cursor, then the items; with 0x40 the cursor
 * never ends (the daemon stops after its page limit). */
static json_object *list_result(struct fchild *ch, const char *method, json_object *params) {
        json_object *r = jobj();
        const char *cursor = str_member(params, "cursor");
        unsigned v = ch->beh.catalog;

        if ((v & 0x40) && strcmp(method, "tools/list") == 0) {
                jset(r, "tools", json_object_new_array());
                jset(r, "nextCursor", jstr("again"));
                return r;
        }
        if ((v & 0x20) && !cursor) {
                jset(r, list_key(method), json_object_new_array());
                jset(r, "nextCursor", jstr("page2"));
                return r;
        }
        jset(r, list_key(method), catalog_items(ch, method));
        return r;
}

static json_object *call_result(void) {
        json_object *r = jobj(), *content = json_object_new_array(), *item = jobj();

        jset(item, "type", jstr("text"));
        jset(item, "text", jstr("ok"));
        json_object_array_add(content, item);
        jset(r, "content", content);
        return r;
}

/* The automatic answer to a request, or NULL to leave it to the script. */
static json_object *auto_answer(struct fchild *ch, const char *method, json_object *params) {
        const struct behaviour *b = &ch->beh;

        if (strcmp(method, "initialize") == 0)
                return b->auto_init || H.final ? initialize_result(ch) : NULL;
        if (is_list(method))
                return b->auto_lists || H.final ? list_result(ch, method, params) : NULL;
        if (strcmp(method, "ping") == 0)
                return b->auto_ping || H.final ? jobj() : NULL;
        return b->auto_calls || H.final ? call_result() : NULL;
}

static void forget_pending(struct fchild *ch, json_object *id) {
        for (size_t i = 0; i < json_object_array_length(ch->pending); i++) {
                json_object *rq = json_object_array_get_idx(ch->pending, i), *rid;
                if (json_object_object_get_ex(rq, "id", &rid) && json_object_equal(rid, id)) {
                        json_object_array_add(ch->done_ids, json_object_get(rid));
                        json_object_array_del_idx(ch->pending, i, 1);
                        return;
                }
        }
}

static void child_got(json_object *msg, void *userdata) {
        struct fchild *ch = userdata;
        json_object *id, *params = NULL, *answer;
        const char *method = str_member(msg, "method");
        bool has_id = json_object_object_get_ex(msg, "id", &id);

        json_object_object_get_ex(msg, "params", &params);
        if (!method)
                return; /* a response to one of its requests to a client */
        if (!has_id) {
                if (strcmp(method, "notifications/cancelled") == 0 && json_object_object_get_ex(params, "requestId", &id)) {
                        fuzz_check(json_object_is_type(id, json_type_int) && json_object_get_int64(id) <= ch->last_id,
                                   "cancelled a request the server never got: %s", json_object_to_json_string(msg));
                        forget_pending(ch, id);
                }
                return;
        }
        fuzz_check(json_object_is_type(id, json_type_int) && json_object_get_int64(id) > ch->last_id,
                   "request ids toward a server increase: %s after %lld", json_object_to_json_string(msg),
                   (long long)ch->last_id);
        ch->last_id = json_object_get_int64(id);
        answer = auto_answer(ch, method, params);
        if (answer && child_says(ch, response(json_object_get(id), answer, NULL))) {
                json_object_array_add(ch->done_ids, json_object_get(id));
                return;
        }
        json_object_array_add(ch->pending, json_object_get(msg));
}

/* Reads what the daemon wrote to a server and answers what it answers on its own. */
static void service_child(struct fchild *ch) {
        struct fake_process *fp = ch->fp;

        if (fp->stdin_fd >= 0 && read_available(fp->stdin_fd, ch->rx)) {
                ch->stdin_eof = true;
                fake_process_close_fd(&fp->stdin_fd);
        }
        for_each_line(ch->rx, "a server", child_got, ch);
        if (H.final) {
                /* Everything still pending is answered now (what does not fit in the pipe
                 * is tried again next round). */
                while (json_object_array_length(ch->pending) > 0) {
                        json_object *rq = json_object_array_get_idx(ch->pending, 0), *id, *params = NULL;
                        const char *method = str_member(rq, "method");
                        json_object_object_get_ex(rq, "id", &id);
                        json_object_object_get_ex(rq, "params", &params);
                        if (!child_says(ch, response(json_object_get(id), auto_answer(ch, method, params), NULL)))
                                break;
                        json_object_array_del_idx(ch->pending, 0, 1);
                }
        }
        /* A server that cannot hear or speak any more, or whose input ended, exits. */
        if (!fp->exited && ((ch->stdin_eof && !ch->beh.stay_on_eof) ||
                            (H.final && (ch->stdin_eof || fp->stdin_fd < 0 || fp->stdout_fd < 0))))
                fake_process_exit(fp, CLD_EXITED, 0);
}

/* ---- clients ---- */

static struct sent_id *find_id(struct fclient *c, const char *text) {
        for (size_t i = 0; i < c->n_ids; i++)
                if (strcmp(c->ids[i].text, text) == 0)
                        return &c->ids[i];
        return NULL;
}

static void remember_id(struct fclient *c, json_object *id) {
        char *text = json_text(id);
        struct sent_id *known = find_id(c, text);
        struct sent_id *ids;

        if (known) {
                known->duplicate = true;
                free(text);
                return;
        }
        ids = realloc(c->ids, (c->n_ids + 1) * sizeof *ids);
        fuzz_check(ids != NULL, "out of memory");
        c->ids = ids;
        c->ids[c->n_ids++] = (struct sent_id){ .text = text };
}

static bool token_known(const struct fclient *c, const char *text) {
        for (size_t i = 0; i < c->n_tokens; i++)
                if (strcmp(c->tokens[i], text) == 0)
                        return true;
        return false;
}

static void remember_token(struct fclient *c, json_object *token) {
        char **tokens;

        if (!json_object_is_type(token, json_type_int) && !json_object_is_type(token, json_type_string))
                return;
        tokens = realloc(c->tokens, (c->n_tokens + 1) * sizeof *tokens);
        fuzz_check(tokens != NULL, "out of memory");
        c->tokens = tokens;
        c->tokens[c->n_tokens++] = json_text(token);
}

/* A list_changed must follow a request for that list (list-changes.c tells a client only of
 * a list it was given, once per first page). Raw bytes may have asked for anything. */
static void check_list_changed(struct fclient *c, const char *method) {
        for (unsigned i = 0; i < ARRAY_LEN(list_notices); i++)
                if (strcmp(method, list_notices[i].notification) == 0) {
                        fuzz_check(c->unreliable || (c->lists_asked & 1u << i), "%s without a list asked for since",
                                   method);
                        c->lists_asked &= ~(1u << i);
                }
}

static void asked_for_list(struct fclient *c, const char *method) {
        for (unsigned i = 0; i < ARRAY_LEN(list_notices); i++)
                for (unsigned j = 0; j < ARRAY_LEN(list_notices[i].methods); j++)
                        if (list_notices[i].methods[j] && strcmp(method, list_notices[i].methods[j]) == 0)
                                c->lists_asked |= 1u << i;
}

static void client_got(json_object *msg, void *userdata) {
        struct fclient *c = userdata;
        json_object *id = NULL, *params, *token;
        const char *method = str_member(msg, "method");
        bool has_id = json_object_object_get_ex(msg, "id", &id);

        if (method && has_id) {
                json_object_array_add(c->upcalls, json_object_get(msg));
                return;
        }
        if (method) {
                check_list_changed(c, method);
                if (strcmp(method, "notifications/progress") == 0 && !c->unreliable) {
                        char *text;
                        fuzz_check(json_object_object_get_ex(msg, "params", &params) &&
                                           json_object_object_get_ex(params, "progressToken", &token),
                                   "progress without a token: %s", json_object_to_json_string(msg));
                        text = json_text(token);
                        fuzz_check(token_known(c, text), "progress under a token this client never sent: %s",
                                   json_object_to_json_string(msg));
                        free(text);
                }
                return;
        }
        fuzz_check(has_id && (json_object_object_get_ex(msg, "result", NULL) != json_object_object_get_ex(msg, "error", NULL)),
                   "neither a call nor a response: %s", json_object_to_json_string(msg));
        if (!id || c->unreliable)
                return; /* id null: an answer to a line that was not a valid request */
        {
                char *text = json_text(id);
                struct sent_id *s = find_id(c, text);

                fuzz_check(s != NULL, "a response to an id this client never sent: %s", json_object_to_json_string(msg));
                s->answers++;
                fuzz_check(s->answers == 1 || s->duplicate, "request %s answered %u times", text, s->answers);
                free(text);
        }
}

static void service_client(struct fclient *c) {
        if (!c->connected || c->closed || c->eof)
                return;
        if (read_available(c->fd, c->rx))
                c->eof = true;
        for_each_line(c->rx, "a client", client_got, c);
}

static void service_all(void) {
        for (size_t i = 0; i < fake_process_count(); i++) {
                struct fake_process *fp = fake_process_at(i);
                if (fp->harness && !fp->exited)
                        service_child(fp->harness);
        }
        for (unsigned k = 0; k < MAX_CLIENTS; k++)
                service_client(&H.clients[k]);
}

static void client_reset(struct fclient *c) {
        if (c->fd >= 0)
                close(c->fd);
        for (size_t i = 0; i < c->n_ids; i++)
                free(c->ids[i].text);
        free(c->ids);
        for (size_t i = 0; i < c->n_tokens; i++)
                free(c->tokens[i]);
        free(c->tokens);
        if (c->rx)
                evbuffer_free(c->rx);
        json_object_put(c->upcalls);
        *c = (struct fclient){ .fd = -1 };
}

/* ---- the loop ---- */

/* One iteration of daemon_run() without blocking, then the harness's servers answer. */
static void iterate(void) {
        fuzz_check(daemon_iterate(&H.d, EVLOOP_NONBLOCK) == 0, "event loop failed");
        service_all();
}

static unsigned count_waits(const struct daemon *d, const struct client *c) {
        const struct list_waiter *w;
        unsigned n = 0;

        TAILQ_FOREACH(w, &d->list_waits.queue, entry)
                n += w->client == c;
        return n;
}

static bool server_known(const struct daemon *d, const struct server *s) {
        for (size_t i = 0; i < d->supervisor.n_servers; i++)
                if (d->supervisor.servers[i] == s)
                        return true;
        return false;
}

/* The cheap bookkeeping invariants, between iterations. */
static void check_books(void) {
        const struct daemon *d = &H.d;
        const struct route *rt;
        const struct client *c;

        for (int st = 0; st < CLIENT_STATE_COUNT; st++)
                TAILQ_FOREACH(c, &d->clients[st], entry) {
                        unsigned routes = 0;
                        TAILQ_FOREACH(rt, &c->routes, by_client) {
                                fuzz_check(rt->client == c, "a route on the wrong client");
                                routes++;
                        }
                        fuzz_check(c->pending == routes + count_waits(d, c),
                                   "client %llu: pending %u, routes %u, list waits %u", (unsigned long long)c->id,
                                   c->pending, routes, count_waits(d, c));
                }
        for (size_t i = 0; i < d->supervisor.n_servers; i++) {
                const struct server *s = d->supervisor.servers[i];
                unsigned n = 0, given_up = 0;
                TAILQ_FOREACH(rt, &d->router.live, by_router) {
                        n += rt->server == s && !rt->abandoned;
                        given_up += rt->server == s && rt->abandoned;
                }
                TAILQ_FOREACH(rt, &d->router.lost, by_router) {
                        n += rt->server == s && !rt->abandoned;
                        given_up += rt->server == s && rt->abandoned;
                }
                fuzz_check(s->in_flight == n, "server %s: in_flight %u, routes %u", s->config->name, s->in_flight, n);
                fuzz_check(s->abandoned == given_up, "server %s: abandoned %u, given-up routes %u", s->config->name,
                           s->abandoned, given_up);
        }
        TAILQ_FOREACH(rt, &d->router.live, by_router)
                fuzz_check(!rt->lost && server_known(d, rt->server), "a live route");
        TAILQ_FOREACH(rt, &d->router.lost, by_router)
                fuzz_check(rt->lost && server_known(d, rt->server), "a lost route");
        for (int k = 0; k < CATALOG_KIND_COUNT; k++)
                for (size_t i = 0; i < d->registry.lists[k].n; i++) {
                        const struct server *s = d->registry.lists[k].entries[i].server;
                        fuzz_check(server_known(d, s) && (s->state == SERVER_READY || s->state == SERVER_UNHEALTHY),
                                   "a registry entry of a server that is not listed");
                }
}

/* ---- ops ---- */

static struct fclient *client_at(unsigned k) {
        return &H.clients[k % MAX_CLIENTS];
}

static bool client_usable(const struct fclient *c) {
        return c->connected && !c->closed && !c->half_closed;
}

static void op_connect(struct fclient *c, bool control) {
        static const struct ucred peer = { .pid = 1, .uid = 0, .gid = 0 };
        int fds[2];

        if (c->connected || H.stopping)
                return;
        fuzz_check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0, "socketpair: %s",
                   strerror(errno));
        client_reset(c);
        c->fd = fds[1];
        c->rx = evbuffer_new();
        c->upcalls = json_object_new_array();
        c->connected = true;
        c->next_id = 1;
        /* As on_accept() does, without the listening socket in between. */
        fuzz_check(client_socket_new(&H.d, fds[0], &peer, control ? LISTEN_CONTROL : LISTEN_MCP) != NULL, "client_new");
}

static void client_sends(struct fclient *c, json_object *msg) {
        if (!write_message(c->fd, msg, "a client"))
                c->unreliable = true;
}

/* A fresh id (integer or string), or now and then one already used. */
static json_object *new_id(struct fclient *c, struct fuzz_input *in) {
        unsigned how = take_choice(in, 8);
        json_object *id;
        char text[32];

        if (how == 7 && c->n_ids > 0) {
                struct sent_id *old = &c->ids[take_choice(in, (unsigned)c->n_ids)];
                id = json_tokener_parse(old->text);
        } else if (how >= 5) {
                snprintf(text, sizeof text, "r%lld", (long long)c->next_id++);
                id = jstr(text);
        } else if (how == 4) {
                id = jint(INT64_MAX - c->next_id++);
        } else {
                id = jint(c->next_id++);
        }
        remember_id(c, id);
        return id;
}

/* Adds _meta.progressToken to params, now and then. Invalid types are answered -32602. */
static void maybe_token(struct fclient *c, struct fuzz_input *in, json_object *params) {
        unsigned how = take_choice(in, 8);
        json_object *meta, *token;
        char text[32];

        if (how < 3)
                return;
        if (how == 7 && c->n_tokens > 0)
                token = json_tokener_parse(c->tokens[take_choice(in, (unsigned)c->n_tokens)]);
        else if (how == 6)
                token = json_object_new_double(1.5);
        else if (how == 5) {
                snprintf(text, sizeof text, "tok%lld", (long long)++H.next_token);
                token = jstr(text);
        } else
                token = jint(how == 4 ? 1 : ++H.next_token); /* 1: every client's favourite */
        remember_token(c, token);
        meta = jobj();
        jset(meta, "progressToken", token);
        jset(params, "_meta", meta);
}

static void send_request(struct fclient *c, struct fuzz_input *in, const char *method, json_object *params) {
        client_sends(c, message(new_id(c, in), method, params));
}

static void op_initialize(struct fclient *c, struct fuzz_input *in) {
        static const char *const versions[] = { "2025-06-18", "2024-11-05", "2025-11-25", "1.0" };
        uint8_t f = take_u8(in);
        json_object *params = jobj(), *caps = jobj();

        if (f & 0x01)
                jset(caps, "sampling", jobj());
        if (f & 0x02)
                jset(caps, "roots", jobj());
        if (f & 0x04)
                jset(caps, "elicitation", jobj());
        if (f & 0x08)
                jset(params, "protocolVersion", jint(3));
        else
                jset(params, "protocolVersion", jstr(versions[f >> 4 & 3]));
        jset(params, "capabilities", caps);
        jset(params, "clientInfo", named("name", "fuzz"));
        send_request(c, in, "initialize", (f & 0xc0) == 0xc0 ? json_object_new_array() : params);
        if ((f & 0xc0) == 0xc0)
                json_object_put(params);
        if (!(f & 0x40))
                client_sends(c, message(NULL, "notifications/initialized", NULL));
}

static void op_list(struct fclient *c, struct fuzz_input *in) {
        static const char *const methods[] = { "tools/list", "prompts/list", "resources/list", "resources/templates/list" };
        uint8_t f = take_u8(in);
        json_object *params = NULL;
        char cursor[32];

        if (f & 0x04) {
                params = jobj();
                if (f & 0x08) {
                        snprintf(cursor, sizeof cursor, "mcpvisor:%u", f >> 5);
                        jset(params, "cursor", jstr(f & 0x10 ? cursor : "bogus"));
                }
        }
        asked_for_list(c, methods[f & 3]);
        send_request(c, in, methods[f & 3], params);
}

/* A name the registry exposes, or a near miss. */
static const char *pick_name(struct fuzz_input *in, enum catalog_kind kind, char *buf, size_t size) {
        const struct registry_list *l = &H.d.registry.lists[kind];
        unsigned how = take_choice(in, 4);

        if (how < 3 && l->n > 0) {
                const struct registry_entry *e = &l->entries[take_choice(in, (unsigned)l->n)];
                snprintf(buf, size, "%s", e->key);
                if (kind == CATALOG_TEMPLATES) /* a URI the template matches */
                        buf[strcspn(buf, "{")] = '\0';
                return buf;
        }
        {
                static const char *const guesses[] = { "s0__echo", "s1__t1", "echo", "a__b__echo", "mem://0/x", "", "s9__x", NULL };
                const char *g = guesses[take_choice(in, ARRAY_LEN(guesses))];
                return g ? g : wide_text();
        }
}

static void op_call(struct fclient *c, struct fuzz_input *in) {
        unsigned what = take_choice(in, 5);
        json_object *params = jobj();
        char name[192];

        switch (what) {
        case 0:
        case 1:
                jset(params, "name", jstr(pick_name(in, CATALOG_TOOLS, name, sizeof name)));
                jset(params, "arguments", named("text", "hi"));
                maybe_token(c, in, params);
                send_request(c, in, "tools/call", params);
                break;
        case 2:
                jset(params, "name", jstr(pick_name(in, CATALOG_PROMPTS, name, sizeof name)));
                maybe_token(c, in, params);
                send_request(c, in, "prompts/get", params);
                break;
        case 3: {
                enum catalog_kind kind = take_u8(in) & 1 ? CATALOG_TEMPLATES : CATALOG_RESOURCES;
                jset(params, "uri", jstr(pick_name(in, kind, name, sizeof name)));
                maybe_token(c, in, params);
                send_request(c, in, "resources/read", params);
                break;
        }
        default: {
                json_object *ref = jobj();
                if (take_u8(in) & 1) {
                        jset(ref, "type", jstr("ref/prompt"));
                        jset(ref, "name", jstr(pick_name(in, CATALOG_PROMPTS, name, sizeof name)));
                } else {
                        jset(ref, "type", jstr("ref/resource"));
                        jset(ref, "uri", jstr(pick_name(in, CATALOG_RESOURCES, name, sizeof name)));
                }
                jset(params, "ref", ref);
                jset(params, "argument", named("name", "x"));
                send_request(c, in, "completion/complete", params);
                break;
        }
        }
}

static void op_cancel(struct fclient *c, struct fuzz_input *in) {
        json_object *params = jobj(), *id;
        struct sent_id *s;
        char *text;

        if (c->n_ids > 0 && take_u8(in) < 224)
                id = json_tokener_parse(c->ids[take_choice(in, (unsigned)c->n_ids)].text);
        else
                id = jint(take_u8(in));
        /* A made-up id may be one of the client's too. */
        text = json_text(id);
        if ((s = find_id(c, text)))
                s->cancelled = true;
        free(text);
        jset(params, "requestId", id);
        if (take_u8(in) & 1)
                jset(params, "reason", jstr("changed my mind"));
        client_sends(c, message(NULL, "notifications/cancelled", params));
}

static void op_misc(struct fclient *c, struct fuzz_input *in) {
        static const char *const levels[] = { "debug", "info", "error", "emergency", "loud" };
        unsigned what = take_choice(in, 10);
        json_object *params = jobj();
        char uri[192];

        switch (what) {
        case 0:
                json_object_put(params);
                send_request(c, in, "ping", NULL);
                break;
        case 1:
                jset(params, "level", jstr(levels[take_choice(in, ARRAY_LEN(levels))]));
                send_request(c, in, "logging/setLevel", params);
                break;
        case 2:
        case 3:
                jset(params, "uri", jstr(pick_name(in, CATALOG_RESOURCES, uri, sizeof uri)));
                send_request(c, in, what == 2 ? "resources/subscribe" : "resources/unsubscribe", params);
                break;
        case 4:
                json_object_put(params);
                send_request(c, in, "server/discover", NULL);
                break;
        case 5:
                maybe_token(c, in, params);
                send_request(c, in, take_u8(in) & 1 ? "x/unknown" : wide_text(), params);
                break;
        case 6:
                client_sends(c, message(NULL, "notifications/x", params));
                break;
        case 7:
                client_sends(c, message(NULL, "notifications/roots/list_changed", params));
                break;
        case 8: {
                /* Progress about a server's request (the token it gave), or made up. */
                size_t n = json_object_array_length(c->upcalls);
                json_object *token = NULL, *rq, *p, *meta;
                if (n > 0) {
                        rq = json_object_array_get_idx(c->upcalls, take_choice(in, (unsigned)n));
                        if (json_object_object_get_ex(rq, "params", &p) && json_object_object_get_ex(p, "_meta", &meta))
                                json_object_object_get_ex(meta, "progressToken", &token);
                }
                jset(params, "progressToken", token ? json_object_get(token) : jint(take_u8(in)));
                jset(params, "progress", jint(1));
                client_sends(c, message(NULL, "notifications/progress", params));
                break;
        }
        default:
                json_object_put(params);
                send_request(c, in, "initialize", jint(1)); /* params of the wrong type */
                break;
        }
}

static void op_control(struct fclient *c, struct fuzz_input *in) {
        static const char *const methods[] = { "status", "start", "stop", "restart", "reload", "ping", "tools/list" };
        const char *method = methods[take_choice(in, ARRAY_LEN(methods))];
        json_object *params = NULL;

        if (strcmp(method, "start") == 0 || strcmp(method, "stop") == 0 || strcmp(method, "restart") == 0) {
                unsigned k = take_choice(in, ARRAY_LEN(server_names) + 1);
                params = jobj();
                jset(params, "name", jstr(k < ARRAY_LEN(server_names) ? server_names[k] : wide_text()));
        }
        if (strcmp(method, "reload") == 0)
                write_config();
        /* On an MCP client "tools/list" is a real request for the list, which a list_changed
         * may follow (check_list_changed()); on a control client it is a method not found. */
        asked_for_list(c, method);
        send_request(c, in, method, params);
}

static void op_raw(struct fclient *c, struct fuzz_input *in) {
        size_t len;
        const uint8_t *bytes = take_bytes(in, 255, &len);

        c->unreliable = true;
        if (len > 0)
                (void)write_all(c->fd, bytes, len);
}

static void op_answer_upcall(struct fclient *c, struct fuzz_input *in) {
        size_t n = json_object_array_length(c->upcalls);
        json_object *rq, *id;
        unsigned how = take_choice(in, 6);

        if (n == 0)
                return;
        rq = json_object_array_get_idx(c->upcalls, take_choice(in, (unsigned)n));
        json_object_object_get_ex(rq, "id", &id);
        switch (how) {
        case 0:
        case 1:
                client_sends(c, response(json_object_get(id), named("role", "assistant"), NULL));
                break;
        case 2:
                client_sends(c, response(json_object_get(id), NULL, error_object(-1, "user declined")));
                break;
        case 3:
                client_sends(c, response(jint(json_object_get_int64(id) + 1000), jobj(), NULL));
                break;
        case 4: /* broken: the server gets an error, the client one under id null */
                client_sends(c, response(json_object_get(id), NULL, jstr("not an object")));
                break;
        default:
                client_sends(c, response(jstr(json_object_get_string(id)), jobj(), NULL)); /* "5" for 5 */
                break;
        }
}

/* The process of the server at index j of the supervisor, if it runs. */
static struct fchild *child_at(unsigned j) {
        const struct supervisor *sv = &H.d.supervisor;
        struct server *s;
        struct fake_process *fp;

        if (sv->n_servers == 0)
                return NULL;
        s = sv->servers[j % sv->n_servers];
        fp = s->run ? fake_process_of_pid(run_main_pid(s->run)) : NULL;
        return fp && !fp->exited ? fp->harness : NULL;
}

static json_object *pending_at(struct fchild *ch, struct fuzz_input *in) {
        size_t n = json_object_array_length(ch->pending);

        return n ? json_object_array_get_idx(ch->pending, take_choice(in, (unsigned)n)) : NULL;
}

static void op_child_answer(struct fchild *ch, struct fuzz_input *in) {
        json_object *rq = pending_at(ch, in), *id, *params = NULL, *answer;
        unsigned how = take_choice(in, 8);
        const char *method;

        if (!rq)
                return;
        json_object_object_get_ex(rq, "id", &id);
        json_object_object_get_ex(rq, "params", &params);
        method = str_member(rq, "method");
        id = json_object_get(id);
        switch (how) {
        case 0:
        case 1:
        case 2:
                answer = response(json_object_get(id), auto_answer(ch, method, params) ?: call_result(), NULL);
                break;
        case 3:
                answer = response(json_object_get(id), NULL, error_object(-32000, "it failed"));
                break;
        case 4:
                answer = response(json_object_get(id), jint(42), NULL);
                break;
        case 5:
                answer = response(json_object_get(id), jobj(), error_object(1, "both"));
                break;
        case 6:
                answer = response(json_object_get(id), NULL, NULL);
                break;
        default: { /* a list answer whatever was asked */
                answer = response(json_object_get(id), list_result(ch, "tools/list", NULL), NULL);
                break;
        }
        }
        /* A malformed response (both or neither of result and error) ends the request
         * with an error; one glued to garbage before it is dropped by the daemon, and the
         * request is still the server's to answer. */
        if (child_says(ch, answer))
                forget_pending(ch, id);
        json_object_put(id);
}

static void op_child_wrong(struct fchild *ch, struct fuzz_input *in) {
        size_t n = json_object_array_length(ch->done_ids);
        unsigned how = take_choice(in, 5);
        json_object *id;
        char text[32];

        switch (how) {
        case 0: /* late, or again */
                if (n == 0)
                        return;
                id = json_object_get(json_object_array_get_idx(ch->done_ids, take_choice(in, (unsigned)n)));
                break;
        case 1:
                snprintf(text, sizeof text, "%lld", (long long)ch->last_id);
                id = jstr(text);
                break;
        case 2:
                id = jint(ch->last_id + 1 + take_u8(in));
                break;
        case 3:
                id = jint(-(int64_t)take_u8(in));
                break;
        default:
                id = json_object_new_double(1.0);
                break;
        }
        child_says(ch, response(id, call_result(), NULL));
}

static void op_child_progress(struct fchild *ch, struct fuzz_input *in) {
        json_object *rq = pending_at(ch, in), *params = jobj(), *token = NULL, *p, *meta;

        if (rq && json_object_object_get_ex(rq, "params", &p) && json_object_object_get_ex(p, "_meta", &meta))
                json_object_object_get_ex(meta, "progressToken", &token);
        if (token && take_u8(in) < 200)
                jset(params, "progressToken", json_object_get(token));
        else if (take_u8(in) & 1)
                jset(params, "progressToken", jint(take_u8(in)));
        else
                jset(params, "progressToken", jstr("1"));
        jset(params, "progress", jint(take_u8(in)));
        jset(params, "total", jint(100));
        child_says(ch, message(NULL, "notifications/progress", params));
}

static void op_child_notify(struct fchild *ch, struct fuzz_input *in) {
        static const char *const lists[] = { "notifications/tools/list_changed", "notifications/prompts/list_changed",
                                             "notifications/resources/list_changed" };
        static const char *const levels[] = { "debug", "error", "emergency", "nonsense" };
        unsigned what = take_choice(in, 7);
        json_object *params = jobj();
        char uri[32];

        switch (what) {
        case 0:
        case 1:
                json_object_put(params);
                child_says(ch, message(NULL, lists[take_choice(in, 3)], NULL));
                return;
        case 2:
                jset(params, "level", jstr(levels[take_choice(in, 4)]));
                if (take_u8(in) & 1)
                        jset(params, "logger", jstr(take_u8(in) & 1 ? "db" : wide_text()));
                jset(params, "data", take_u8(in) & 1 ? jstr("a log line") : named("k", "v"));
                child_says(ch, message(NULL, "notifications/message", params));
                return;
        case 3:
                snprintf(uri, sizeof uri, take_u8(in) & 1 ? "mem://shared" : "mem://%u/r", ch->slot);
                jset(params, "uri", jstr(uri));
                child_says(ch, message(NULL, "notifications/resources/updated", params));
                return;
        case 4: {
                size_t n = json_object_array_length(ch->upcall_ids);
                jset(params, "requestId", n ? json_object_get(json_object_array_get_idx(ch->upcall_ids, take_choice(in, (unsigned)n)))
                                            : jint(take_u8(in)));
                jset(params, "reason", jstr("no longer needed"));
                child_says(ch, message(NULL, "notifications/cancelled", params));
                return;
        }
        case 5:
                child_says(ch, message(NULL, "notifications/x", params));
                return;
        default:
                json_object_put(params);
                child_says(ch, message(NULL, "notifications/message", jint(1)));
                return;
        }
}

static void op_child_upcall(struct fchild *ch, struct fuzz_input *in) {
        static const char *const methods[] = { "sampling/createMessage", "roots/list", "elicitation/create", "ping", "x/custom", NULL };
        const char *method = methods[take_choice(in, ARRAY_LEN(methods))];
        unsigned how = take_choice(in, 4);
        json_object *params = jobj(), *id;
        char text[32];

        if (!method)
                method = wide_text();
        if (how == 0) {
                snprintf(text, sizeof text, "u%lld", (long long)ch->next_upcall++);
                id = jstr(text);
        } else if (how == 1 && json_object_array_length(ch->upcall_ids) > 0)
                id = json_object_get(json_object_array_get_idx(ch->upcall_ids, 0));
        else
                id = jint(ch->next_upcall++);
        if (take_u8(in) & 1) {
                json_object *meta = jobj();
                jset(meta, "progressToken", take_u8(in) & 1 ? jstr("up") : jint(ch->next_upcall));
                jset(params, "_meta", meta);
        }
        json_object_array_add(ch->upcall_ids, json_object_get(id));
        child_says(ch, message(id, method, params));
}

static void op_child_bytes(struct fchild *ch, struct fuzz_input *in, bool to_stderr) {
        size_t len;
        const uint8_t *bytes = take_bytes(in, 255, &len);
        int fd = to_stderr ? ch->fp->stderr_fd : ch->fp->stdout_fd;

        /* A stderr line the daemon quotes (cut) in what it tells clients. */
        if (to_stderr && len == 1 && fd >= 0) {
                (void)write_all(fd, wide_text(), strlen(wide_text()));
                (void)write_all(fd, "\n", 1);
                return;
        }
        if (fd >= 0 && len > 0 && write_all(fd, bytes, len) && !to_stderr)
                ch->partial = bytes[len - 1] != '\n';
}

static void op_child_exit(struct fchild *ch, struct fuzz_input *in) {
        static const int ends[][2] = { { CLD_EXITED, 0 }, { CLD_EXITED, 1 }, { CLD_KILLED, SIGKILL }, { CLD_DUMPED, SIGSEGV } };
        unsigned how = take_choice(in, 4);

        fake_process_exit(ch->fp, ends[how][0], ends[how][1]);
}

static void op_child_behaviour(struct fchild *ch, struct fuzz_input *in) {
        switch (take_choice(in, 5)) {
        case 0:
                ch->beh.auto_calls = !ch->beh.auto_calls;
                break;
        case 1:
                ch->beh.auto_lists = !ch->beh.auto_lists;
                break;
        case 2:
                ch->beh.auto_ping = !ch->beh.auto_ping;
                break;
        case 3:
                ch->beh.ignore_term = !ch->beh.ignore_term;
                break;
        default:
                ch->beh.catalog ^= 1u << take_choice(in, 8); /* lists differ from now on */
                break;
        }
}

/* The pending timers that stand for time passing: the deadline of a server's state, a
 * health check, a request's requestTimeout or child-side timeout, a list wait, the window
 * of list_changed notifications, and (with with_stop) the shutdown deadline. */
static unsigned pending_timers(struct event **timers, unsigned max, bool with_stop) {
        struct daemon *d = &H.d;
        const struct route *rt;
        const struct list_waiter *w;
        unsigned n = 0;

#define ADD_TIMER(ev)                                                                              \
        do {                                                                                       \
                if ((ev) && evtimer_pending((ev), NULL) && n < max)                               \
                        timers[n++] = (ev);                                                        \
        } while (0)
        for (size_t i = 0; i < d->supervisor.n_servers; i++) {
                struct server *s = d->supervisor.servers[i];
                const struct child_request *rq;
                ADD_TIMER(s->timer);
                ADD_TIMER(s->health.timer);
                if (server_child(s))
                        TAILQ_FOREACH(rq, &server_child(s)->pending, entry)
                                ADD_TIMER(rq->timer);
        }
        TAILQ_FOREACH(rt, &d->router.live, by_router)
                ADD_TIMER(rt->timer);
        TAILQ_FOREACH(w, &d->list_waits.queue, entry)
                ADD_TIMER(w->timer);
        ADD_TIMER(d->list_changes.timer);
        if (with_stop)
                ADD_TIMER(d->stop_deadline);
#undef ADD_TIMER
        return n;
}

/* Expires one pending timer, as if its time had come. */
static void op_expire(struct fuzz_input *in) {
        struct event *timers[128];
        unsigned n = pending_timers(timers, ARRAY_LEN(timers), true), pick;

        if (n == 0)
                return;
        pick = take_choice(in, n);
        if (timers[pick] == H.d.stop_deadline)
                H.stop_deadline_fired = true;
        event_active(timers[pick], EV_TIMEOUT, 1);
}

/* Teardown: time passes for everything that waits on a deadline (not the shutdown's). */
static void expire_all_timers(void) {
        struct event *timers[128];
        unsigned n = pending_timers(timers, ARRAY_LEN(timers), false);

        for (unsigned i = 0; i < n; i++)
                event_active(timers[i], EV_TIMEOUT, 1);
}

static void op_reload(struct fuzz_input *in) {
        struct server_spec *s = &H.spec.servers[take_choice(in, MAX_SPECS)];
        switch (take_choice(in, 9)) {
        case 0:
                s->present = !s->present; /* removed, or added */
                break;
        case 1:
                s->generation++; /* changed: restarts with the new settings */
                break;
        case 2:
                s->disabled = !s->disabled;
                break;
        case 3:
                s->request_timeout = !s->request_timeout;
                break;
        case 4:
                H.spec.separator++;
                break;
        case 5:
                H.spec.broken = true; /* refused: nothing changes */
                break;
        case 6:
                s->prefix = (s->prefix + 1) % 3;
                break;
        case 7:
                s->roots = (s->roots + 1) % 3;
                break;
        default:
                break; /* the same file: nothing changes */
        }
        write_config();
        H.spec.broken = false;
        daemon_reload(&H.d, "fuzz", NULL, NULL);
}

enum op {
        OP_CONNECT, OP_CONNECT_CONTROL, OP_INITIALIZE, OP_LIST, OP_CALL, OP_CALL2, OP_CANCEL, OP_MISC, OP_CONTROL,
        OP_RAW, OP_ANSWER_UPCALL, OP_HALF_CLOSE, OP_CLOSE,
        OP_CHILD_ANSWER, OP_CHILD_ANSWER2, OP_CHILD_WRONG, OP_CHILD_PROGRESS, OP_CHILD_NOTIFY, OP_CHILD_UPCALL,
        OP_CHILD_GARBAGE, OP_CHILD_STDERR, OP_CHILD_CLOSE_STDOUT, OP_CHILD_STOP_READING, OP_CHILD_EXIT,
        OP_CHILD_BEHAVIOUR,
        OP_EXPIRE, OP_ITERATE, OP_FAIL_SPAWN, OP_RELOAD, OP_STOP,
        OP_COUNT
};

static void run_client_op(enum op op, struct fclient *c, struct fuzz_input *in) {
        if (op == OP_CONNECT || op == OP_CONNECT_CONTROL) {
                op_connect(c, op == OP_CONNECT_CONTROL);
                return;
        }
        if (!client_usable(c))
                return;
        switch (op) {
        case OP_INITIALIZE:
                op_initialize(c, in);
                break;
        case OP_LIST:
                op_list(c, in);
                break;
        case OP_CALL:
        case OP_CALL2:
                op_call(c, in);
                break;
        case OP_CANCEL:
                op_cancel(c, in);
                break;
        case OP_MISC:
                op_misc(c, in);
                break;
        case OP_CONTROL:
                op_control(c, in);
                break;
        case OP_RAW:
                op_raw(c, in);
                break;
        case OP_ANSWER_UPCALL:
                op_answer_upcall(c, in);
                break;
        case OP_HALF_CLOSE:
                shutdown(c->fd, SHUT_WR);
                c->half_closed = true;
                break;
        default: /* OP_CLOSE */
                close(c->fd);
                c->fd = -1;
                c->closed = true;
                break;
        }
}

static void run_child_op(enum op op, struct fchild *ch, struct fuzz_input *in) {
        switch (op) {
        case OP_CHILD_ANSWER:
        case OP_CHILD_ANSWER2:
                op_child_answer(ch, in);
                break;
        case OP_CHILD_WRONG:
                op_child_wrong(ch, in);
                break;
        case OP_CHILD_PROGRESS:
                op_child_progress(ch, in);
                break;
        case OP_CHILD_NOTIFY:
                op_child_notify(ch, in);
                break;
        case OP_CHILD_UPCALL:
                op_child_upcall(ch, in);
                break;
        case OP_CHILD_GARBAGE:
        case OP_CHILD_STDERR:
                op_child_bytes(ch, in, op == OP_CHILD_STDERR);
                break;
        case OP_CHILD_CLOSE_STDOUT:
                fake_process_close_fd(&ch->fp->stdout_fd);
                break;
        case OP_CHILD_STOP_READING:
                fake_process_close_fd(&ch->fp->stdin_fd);
                break;
        case OP_CHILD_EXIT:
                op_child_exit(ch, in);
                break;
        default: /* OP_CHILD_BEHAVIOUR */
                op_child_behaviour(ch, in);
                break;
        }
}

/* Runs one op; false once the daemon has exited. */
static bool run_op(struct fuzz_input *in) {
        uint8_t b = take_u8(in);
        enum op op = (enum op)((b & 0x1f) % OP_COUNT);
        unsigned target = b >> 5;
        bool iterate_after = true;

        if (H.trace)
                fprintf(stderr, "fuzz: op %d target %u\n", op, target);
        if (op <= OP_CLOSE)
                run_client_op(op, client_at(target), in);
        else if (op <= OP_CHILD_BEHAVIOUR) {
                struct fchild *ch = child_at(target & 3);
                /* Bit 7: several server ops land in one iteration (an answer and an exit). */
                iterate_after = !(target & 4);
                if (ch)
                        run_child_op(op, ch, in);
        } else if (op == OP_EXPIRE)
                op_expire(in);
        else if (op == OP_ITERATE) {
                for (unsigned i = target; i > 0; i--)
                        iterate();
        } else if (op == OP_FAIL_SPAWN)
                fake_process_fail_next_spawn(target & 1 ? -ENOENT : -EAGAIN);
        else if (op == OP_RELOAD)
                op_reload(in);
        else {
                /* A second stop exits at once, as a second SIGTERM does. */
                daemon_stop(&H.d, "fuzz");
                H.stopping = true;
                if (H.d.phase == DAEMON_EXIT)
                        return false;
        }
        if (iterate_after)
                iterate();
        check_books();
        return true;
}

/* ---- setup and teardown ---- */

static void remove_dir(void) {
        if (H.dir[0])
                scratch_remove(H.dir);
}

static void setup_once(void) {
        const char *level = getenv("MCPVISOR_FUZZ_LOG");

        if (H.ready)
                return;
        H.ready = true;
        /* Nothing of a real service manager's may leak in. */
        unsetenv("NOTIFY_SOCKET");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDNAMES");
        unsetenv("WATCHDOG_USEC");
        unsetenv("JOURNAL_STREAM");
        signal(SIGPIPE, SIG_IGN); /* as main.c does */
        fuzz_check(scratch_make("mcpvisor-fuzz", H.dir, sizeof H.dir), "mkdtemp: %s", strerror(errno));
        snprintf(H.config_path, sizeof H.config_path, "%s/mcpvisor.json", H.dir);
        snprintf(H.socket_path, sizeof H.socket_path, "%s/mcp.sock", H.dir);
        snprintf(H.control_path, sizeof H.control_path, "%s/control.sock", H.dir);
        atexit(remove_dir);
        H.log_level = level ? log_level_from_string(level) : LOG_EMERG;
        H.trace = getenv("MCPVISOR_FUZZ_TRACE") != NULL;
        fake_process_set_hooks(&hooks, NULL);
        H.tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
        json_tokener_set_flags(H.tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
}

static void decode_config(struct fuzz_input *in) {
        uint8_t a = take_u8(in), b = take_u8(in), c = take_u8(in), e = take_u8(in);
        unsigned n = 1 + a % MAX_SLOTS;
        unsigned names = (a >> 2) % 3; /* s0 s1 s2 | a a__b echo | E.c-d echo s3 */
        static const unsigned name_sets[3][MAX_SLOTS] = { { 0, 1, 2 }, { 3, 4, 5 }, { 6, 5, 7 } };

        H.spec = (struct config_spec){ .separator = b & 3, .page_size = b >> 2 & 3, .list_wait = b & 0x10,
                                       .small_messages = (b & 0xe0) == 0xe0 };
        for (unsigned i = 0; i < MAX_SPECS; i++) {
                struct server_spec *s = &H.spec.servers[i];
                uint8_t f = (uint8_t)(c >> (2 * (i % 4)) ^ e >> i);
                *s = (struct server_spec){ .present = i < n, .slot = i % MAX_SLOTS,
                                           .name = i < MAX_SLOTS ? name_sets[names][i] : 7, .restart = f & 3,
                                           .prefix = (e >> 4) % 3, .caps = e >> (i % 3), .roots = (f >> 3) % 3, .request_timeout = f & 4,
                                           .zero_delay = (a & 0x40) && i == 0, .health = a & 0x80 };
        }
        for (unsigned i = 0; i < MAX_SLOTS; i++)
                H.slots[i] = decode_behaviour(in);
}

static bool start_daemon(void) {
        struct config_problems problems = { 0 };
        struct config config;
        struct config_source source = { .path = H.config_path, .log_level = H.log_level };
        int r;

        write_config();
        r = config_load(H.config_path, false, &config, &problems);
        for (size_t i = 0; i < problems.count; i++)
                fprintf(stderr, "config: %s: %s\n", problems.items[i].path, problems.items[i].message);
        fuzz_check(r == 0 && problems.errors == 0, "the harness's configuration is valid (%d)", r);
        problems_done(&problems);
        r = daemon_init(&H.d, &config, &source);
        config_done(&config);
        H.daemon_up = true;
        fuzz_check(r == 0, "daemon_init: %s", strerror(-r));
        /* A reload's read in a thread would be over at a time of its own: read at once, and
         * taken on the next loop turn, so that an input replays the same way. */
        config_reader_stay_on_loop(&H.d.reload.reader);
        /* Its 100 ms would pass on its own in a slow run; an op expires it instead. */
        list_changes_set_window(&H.d.list_changes, 3600 * USEC_PER_SEC);
        return true;
}

/* Teardown part 1: every client half-closes and servers answer everything; each
 * half-closed client must get all its answers, then be closed by the daemon. */
static void drain_clients(void) {
        H.final = true;
        for (unsigned k = 0; k < MAX_CLIENTS; k++) {
                struct fclient *c = &H.clients[k];
                if (client_usable(c)) {
                        shutdown(c->fd, SHUT_WR);
                        c->half_closed = true;
                }
        }
        for (unsigned round = 0; round < FINAL_ROUNDS; round++) {
                bool open = false;
                for (unsigned k = 0; k < MAX_CLIENTS; k++)
                        open |= H.clients[k].connected && !H.clients[k].closed && !H.clients[k].eof;
                if (!open)
                        break;
                /* A server stuck starting holds lists back, a call without an answer
                 * waits for its requestTimeout: let their deadlines pass. */
                if (round >= 10 && round % 10 == 0)
                        expire_all_timers();
                iterate();
                check_books();
        }
}

static void check_answers(void) {
        for (unsigned k = 0; k < MAX_CLIENTS; k++) {
                struct fclient *c = &H.clients[k];
                if (!c->connected || c->closed || c->unreliable || H.stop_deadline_fired)
                        continue;
                fuzz_check(c->eof, "client %u half-closed but the daemon never closed it", k);
                for (size_t i = 0; i < c->n_ids; i++) {
                        const struct sent_id *s = &c->ids[i];
                        if (s->duplicate)
                                continue;
                        fuzz_check(s->answers == 1 || (s->cancelled && s->answers == 0),
                                   "client %u: request %s got %u answers%s", k, s->text, s->answers,
                                   s->cancelled ? " (cancelled)" : "");
                }
        }
}

static bool daemon_idle(void) {
        const struct daemon *d = &H.d;

        return d->client_count[CLIENT_ACTIVE] + d->client_count[CLIENT_DRAINING] == 0 && supervisor_idle(&d->supervisor);
}

/* Teardown part 2: the daemon stops; it must get there. */
static void stop_daemon(void) {
        const struct daemon *d = &H.d;
        const struct server_request *rq;

        if (!H.stopping) /* a second stop would exit at once */
                daemon_stop(&H.d, "fuzz teardown");
        for (unsigned round = 0; round < FINAL_ROUNDS && !daemon_idle(); round++) {
                if (round >= 10 && round % 10 == 0)
                        expire_all_timers();
                iterate();
                check_books();
        }
        fuzz_check(daemon_idle(), "the daemon did not stop: %u clients, servers running", d->client_count[CLIENT_ACTIVE] + d->client_count[CLIENT_DRAINING]);
        fuzz_check(TAILQ_EMPTY(&d->router.live) && TAILQ_EMPTY(&d->router.lost), "routes left after the stop");
        fuzz_check(TAILQ_EMPTY(&d->list_waits.queue), "list waits left after the stop");
        TAILQ_FOREACH(rq, &d->server_requests.pending, entry)
                fuzz_check(false, "a server's request to a client left after the stop: %s", rq->method);
        for (size_t i = 0; i < d->supervisor.n_servers; i++)
                fuzz_check(d->supervisor.servers[i]->in_flight == 0, "in_flight left");
}

static void teardown(void) {
        if (H.daemon_up)
                daemon_done(&H.d);
        H.daemon_up = false;
        fuzz_check(fake_process_count() == 0, "%zu fake processes were never freed", fake_process_count());
        for (unsigned k = 0; k < MAX_CLIENTS; k++)
                client_reset(&H.clients[k]);
        fake_process_fail_next_spawn(0);
        H.final = H.stopping = H.stop_deadline_fired = false;
        H.next_token = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { data, size };
        bool running = true;

        setup_once();
        for (unsigned k = 0; k < MAX_CLIENTS; k++)
                H.clients[k] = (struct fclient){ .fd = -1 };
        decode_config(&in);
        start_daemon();
        iterate();
        while (running && !input_empty(&in))
                running = run_op(&in);
        if (running) {
                if (!H.stopping) {
                        drain_clients();
                        check_answers();
                }
                H.final = true;
                stop_daemon();
        }
        teardown();
        return 0;
}
