/* mcpvisor-bench-server: the fastest MCP server we can reasonably write, so that the
 * benchmark measures the daemon and not its child.
 *
 * It answers initialize, ping, tools/list (five tools, and N more with --tools N, "t0000" on,
 * which a call finds unknown: a large registry for the access rules to decide on) and tools/call:
 *   - "echo" {text}: the text back, copied as raw JSON string content (no decoding);
 *   - "blob" {bytes}: a text of that many 'x', for the large-result measurement;
 *   - "hold" {}: never answered, for calls in flight until cancelled (bench-cancel.c);
 *   - "notify" {count}: that many notifications (a method of its own, which the daemon
 *     sends to the one client with calls in flight), then an empty text (bench-notify.c);
 *   - "ask" {}: an elicitation/create of its own (the legacy way to ask the user), the call
 *     answered with the answer's action once the response comes (bench-modern.c: a modern
 *     client's call through the daemon's multi round-trip bridge).
 * Notifications and other responses are ignored; other requests get -32601, server/discover
 * too (a legacy server).
 *
 * No JSON library: a request is scanned in place for the few members it needs (a small
 * skipper walks the top level of an object, so a nested "id" is never mistaken for the
 * request's). Replies to every complete line of one read() are written with one write(),
 * the way a server that keeps up with its input would. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (256 * 1024)
#define MAX_BLOB_BYTES (64u * 1024 * 1024)
#define MAX_ASKS 4096 /* calls of "ask" waiting for their answer */

struct span {
        const char *p;
        size_t len;
};

struct outbuf {
        char *data;
        size_t len, cap;
};

static void die(const char *what) {
        fprintf(stderr, "mcpvisor-bench-server: %s: %s\n", what, strerror(errno));
        exit(1);
}

static void out_reserve(struct outbuf *o, size_t more) {
        if (o->len + more <= o->cap)
                return;
        size_t cap = o->cap ? o->cap : 65536;
        while (cap < o->len + more)
                cap *= 2;
        o->data = realloc(o->data, cap);
        if (!o->data)
                die("realloc");
        o->cap = cap;
}

static void out_add(struct outbuf *o, const char *p, size_t len) {
        out_reserve(o, len);
        memcpy(o->data + o->len, p, len);
        o->len += len;
}

static void out_str(struct outbuf *o, const char *s) {
        out_add(o, s, strlen(s));
}

static void out_span(struct outbuf *o, struct span s) {
        out_add(o, s.p, s.len);
}

static void out_flush(struct outbuf *o) {
        size_t off = 0;

        while (off < o->len) {
                ssize_t n = write(STDOUT_FILENO, o->data + off, o->len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        exit(0); /* nobody reads our stdout any more */
                off += (size_t)n;
        }
        o->len = 0;
}

/* ---- a JSON skipper: enough to find members, never builds anything ---- */

static const char *skip_space(const char *p, const char *end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
                p++;
        return p;
}

/* p at the opening quote; returns past the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end) {
        for (p++; p < end; p++) {
                if (*p == '\\')
                        p++;
                else if (*p == '"')
                        return p + 1;
        }
        return NULL;
}

/* Objects and arrays by depth; strings inside may hold any bracket. */
static const char *skip_compound(const char *p, const char *end) {
        int depth = 0;

        while (p < end) {
                if (*p == '"') {
                        p = skip_string(p, end);
                        if (!p)
                                return NULL;
                        continue;
                }
                if (*p == '{' || *p == '[')
                        depth++;
                else if ((*p == '}' || *p == ']') && --depth == 0)
                        return p + 1;
                p++;
        }
        return NULL;
}

static const char *skip_value(const char *p, const char *end) {
        if (p >= end)
                return NULL;
        if (*p == '"')
                return skip_string(p, end);
        if (*p == '{' || *p == '[')
                return skip_compound(p, end);
        while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
                p++;
        return p;
}

/* The raw text of member key of the object in [obj, end); false if absent or malformed. */
static bool member(struct span obj, const char *key, struct span *ret) {
        const char *p = skip_space(obj.p, obj.p + obj.len), *end = obj.p + obj.len;
        size_t key_len = strlen(key);

        if (p >= end || *p != '{')
                return false;
        for (p = skip_space(p + 1, end); p < end && *p == '"'; p = skip_space(p + 1, end)) {
                const char *k = p + 1, *k_end = skip_string(p, end), *v;
                if (!k_end)
                        return false;
                bool match = (size_t)(k_end - 1 - k) == key_len && memcmp(k, key, key_len) == 0;
                p = skip_space(k_end, end);
                if (p >= end || *p != ':')
                        return false;
                v = skip_space(p + 1, end);
                p = skip_value(v, end);
                if (!p)
                        return false;
                if (match) {
                        *ret = (struct span){ v, (size_t)(p - v) };
                        return true;
                }
                p = skip_space(p, end);
                if (p >= end || *p != ',')
                        return false;
        }
        return false;
}

/* A string member's content between its quotes, still escaped. */
static bool string_member(struct span obj, const char *key, struct span *ret) {
        struct span v;

        if (!member(obj, key, &v) || v.len < 2 || v.p[0] != '"')
                return false;
        *ret = (struct span){ v.p + 1, v.len - 2 };
        return true;
}

static bool span_is(struct span s, const char *text) {
        return s.len == strlen(text) && memcmp(s.p, text, s.len) == 0;
}

/* ---- the MCP side ---- */

struct server {
        struct outbuf out;
        char *tools;    /* the tools/list result */
        char *blob; /* MAX_BLOB_BYTES at most of 'x', made on first use */
        size_t blob_len;
        char *asks[MAX_ASKS]; /* the call's id (its JSON text) for our request "ask-N", N the slot */
};

static void reply_head(struct server *s, struct span id) {
        out_str(&s->out, "{\"jsonrpc\":\"2.0\",\"id\":");
        out_span(&s->out, id);
}

static void reply_result(struct server *s, struct span id, const char *result) {
        reply_head(s, id);
        out_str(&s->out, ",\"result\":");
        out_str(&s->out, result);
        out_str(&s->out, "}\n");
}

static void reply_error(struct server *s, struct span id, int code, const char *message) {
        char text[256];

        reply_head(s, id);
        snprintf(text, sizeof text, ",\"error\":{\"code\":%d,\"message\":\"%s\"}}\n", code, message);
        out_str(&s->out, text);
}

static void initialize(struct server *s, struct span id, struct span params) {
        struct span version = { "2025-11-25", 10 };

        string_member(params, "protocolVersion", &version); /* we speak whatever is asked */
        reply_head(s, id);
        out_str(&s->out, ",\"result\":{\"protocolVersion\":\"");
        out_span(&s->out, version);
        out_str(&s->out, "\",\"capabilities\":{\"tools\":{}},"
                         "\"serverInfo\":{\"name\":\"mcpvisor-bench-server\",\"version\":\"1\"}}}\n");
}

static const char TOOLS[] =
        "{\"tools\":["
        "{\"name\":\"echo\",\"description\":\"Returns its text argument.\",\"inputSchema\":{\"type\":\"object\","
        "\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}},"
        "{\"name\":\"blob\",\"description\":\"Returns a text of the given number of bytes.\",\"inputSchema\":"
        "{\"type\":\"object\",\"properties\":{\"bytes\":{\"type\":\"integer\"}},\"required\":[\"bytes\"]}},"
        "{\"name\":\"hold\",\"description\":\"Never answers.\",\"inputSchema\":{\"type\":\"object\"}},"
        "{\"name\":\"notify\",\"description\":\"Sends count notifications, then answers.\",\"inputSchema\":"
        "{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"}}}},"
        "{\"name\":\"ask\",\"description\":\"Asks the user (elicitation), then answers.\",\"inputSchema\":"
        "{\"type\":\"object\"}}]}";

/* TOOLS with n more tools before its closing "]}". */
static char *tools_list(unsigned n) {
        struct outbuf o = { 0 };

        out_add(&o, TOOLS, sizeof TOOLS - 1 - 2);
        for (unsigned i = 0; i < n; i++) {
                char tool[128];
                snprintf(tool, sizeof tool, ",{\"name\":\"t%04u\",\"description\":\"One of many.\","
                         "\"inputSchema\":{\"type\":\"object\"}}", i);
                out_str(&o, tool);
        }
        out_add(&o, "]}", 3);
        return o.data;
}

static void text_result(struct server *s, struct span id, struct span text) {
        reply_head(s, id);
        out_str(&s->out, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
        out_span(&s->out, text);
        out_str(&s->out, "\"}]}}\n");
}

static void blob(struct server *s, struct span id, struct span args) {
        struct span v;
        unsigned long bytes;

        if (!member(args, "bytes", &v) || (bytes = strtoul(v.p, NULL, 10)) > MAX_BLOB_BYTES) {
                reply_error(s, id, -32602, "blob needs bytes (at most 64 MiB)");
                return;
        }
        if (bytes > s->blob_len) {
                free(s->blob);
                s->blob = malloc(bytes);
                if (!s->blob)
                        die("malloc");
                memset(s->blob, 'x', bytes);
                s->blob_len = bytes;
        }
        text_result(s, id, (struct span){ s->blob, bytes });
}

static void notify(struct server *s, struct span id, struct span args) {
        struct span v;
        unsigned long count = member(args, "count", &v) ? strtoul(v.p, NULL, 10) : 0;

        for (unsigned long i = 0; i < count; i++)
                out_str(&s->out, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/bench/tick\"}\n");
        text_result(s, id, (struct span){ "", 0 });
}

/* An elicitation/create under "ask-N", N a free slot that keeps the call's id. */
static void ask(struct server *s, struct span id) {
        char head[64];
        unsigned n = 0;

        while (n < MAX_ASKS && s->asks[n])
                n++;
        if (n == MAX_ASKS) {
                reply_error(s, id, -32603, "too many asks waiting");
                return;
        }
        s->asks[n] = strndup(id.p, id.len);
        if (!s->asks[n])
                die("strndup");
        snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":\"ask-%u\",", n);
        out_str(&s->out, head);
        out_str(&s->out, "\"method\":\"elicitation/create\",\"params\":{\"message\":\"Go on?\",\"requestedSchema\":"
                         "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}}}}}\n");
}

/* The response to our "ask-N": the waiting call answered with the answer's action. */
static void asked(struct server *s, struct span id, struct span msg) {
        struct span result, action = { "none", 4 };
        char *end;
        unsigned long n;

        if (id.len < 7 || memcmp(id.p, "\"ask-", 5) != 0 || (n = strtoul(id.p + 5, &end, 10)) >= MAX_ASKS ||
            *end != '"' || !s->asks[n])
                return;
        if (member(msg, "result", &result))
                string_member(result, "action", &action);
        text_result(s, (struct span){ s->asks[n], strlen(s->asks[n]) }, action);
        free(s->asks[n]);
        s->asks[n] = NULL;
}

static void tools_call(struct server *s, struct span id, struct span params) {
        struct span name, args = { "{}", 2 }, text = { "", 0 };

        if (!string_member(params, "name", &name)) {
                reply_error(s, id, -32602, "tools/call needs a name");
                return;
        }
        member(params, "arguments", &args);
        if (span_is(name, "echo")) {
                string_member(args, "text", &text);
                text_result(s, id, text);
        } else if (span_is(name, "blob")) {
                blob(s, id, args);
        } else if (span_is(name, "notify")) {
                notify(s, id, args);
        } else if (span_is(name, "ask")) {
                ask(s, id);
        } else if (span_is(name, "hold")) {
                return; /* never answered: a call that stays in flight until cancelled */
        } else {
                reply_error(s, id, -32602, "unknown tool");
        }
}

static void handle_line(struct server *s, const char *line, size_t len) {
        struct span msg = { line, len }, id, method, params = { "{}", 2 };

        if (member(msg, "id", &id) && !string_member(msg, "method", &method)) {
                asked(s, id, msg);
                return;
        }
        if (!member(msg, "id", &id) || !string_member(msg, "method", &method))
                return; /* a notification: nothing to answer */
        member(msg, "params", &params);
        if (span_is(method, "tools/call"))
                tools_call(s, id, params);
        else if (span_is(method, "ping"))
                reply_result(s, id, "{}");
        else if (span_is(method, "tools/list"))
                reply_result(s, id, s->tools);
        else if (span_is(method, "initialize"))
                initialize(s, id, params);
        else
                reply_error(s, id, -32601, "Method not found");
}

/* --tools N (at most 100000), or 0; exits after the usage otherwise. */
static long parse_args(int argc, char **argv) {
        char *end = NULL;
        long n = 0;

        if (argc == 3 && strcmp(argv[1], "--tools") == 0)
                n = strtol(argv[2], &end, 10);
        if (argc == 1 || (end && end != argv[2] && !*end && n >= 0 && n <= 100000))
                return n;
        fprintf(argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr,
                "usage: %s [--tools N]\nA minimal MCP server on stdio for mcpvisor-bench: tools echo {text}, blob {bytes},\n"
                "hold, notify {count} and ask; with --tools N, N more tools t0000... (at most 100000) that do nothing.\n",
                argv[0]);
        exit(argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2);
}

int main(int argc, char **argv) {
        struct server s = { .tools = tools_list((unsigned)parse_args(argc, argv)) };
        size_t cap = READ_CHUNK, len = 0;
        char *in = malloc(cap);

        if (!in)
                die("malloc");
        for (;;) {
                if (cap - len < READ_CHUNK / 2) {
                        cap *= 2;
                        in = realloc(in, cap);
                        if (!in)
                                die("realloc");
                }
                ssize_t n = read(STDIN_FILENO, in + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return 0; /* stdin closed: the MCP stdio transport's way to stop us */
                size_t start = 0, scan = len;
                len += (size_t)n;
                for (char *nl; (nl = memchr(in + scan, '\n', len - scan)); scan = start) {
                        handle_line(&s, in + start, (size_t)(nl - (in + start)));
                        start = (size_t)(nl - in) + 1;
                }
                memmove(in, in + start, len - start);
                len -= start;
                out_flush(&s.out);
        }
}
