/* mcpvisor-demo-server: a small stdio MCP server, with two parts to play.
 *
 * Run plainly, it is the demo server of the README quick start: a few tools, a prompt and a
 * resource, enough to watch mcpvisor at work. Given the misbehaviour options (see --help), it
 * is the fault-injection server of the integration tests: it crashes, hangs, floods stderr,
 * leaves grandchildren behind, ... on command.
 *
 * It also plays the server side of requests to the client ("upcalls"), for the tests of a
 * gateway that must route them back to the right client:
 *   - tool "ask" {method, params?, cancelAfterMs?, afterMs?} sends request METHOD to the
 *     client with the string id "ask-N" (N counting from 1) and answers the tools/call once
 *     the client answers: the JSON text of its result, or an isError result "error CODE:
 *     MESSAGE". With cancelAfterMs and no answer by then, it sends notifications/cancelled
 *     for "ask-N" and answers "gave up". A cancelled tools/call forgets its ask, unless
 *     afterMs was given: then the request is sent afterMs later, and the call goes on
 *     whatever the client does, as a server that does not stop work on a cancel may.
 *     With "also": [{method, params?, afterMs?}...] those requests go out at the same time
 *     (one with afterMs that much later), and with
 *     "then": [{method, params?}...] each goes out once the ones before are answered (one
 *     round after another); the call is then answered with the JSON array of every answer's
 *     result (or error), in the order they came.
 *     Under --discover modern it sends no request: it answers input_required (MCP
 *     2026-07-28) with the same requests as inputRequests (keys "rN-I": round N, request
 *     I), one round for the first and "also", one for each of "then", and the answers so
 *     far in its requestState (plain JSON, logged as "requestState STATE"); the retry
 *     missing an answer is asked that round again; the last round's retry is answered as
 *     above.
 *   - tool "notify" {method, params?} sends that notification to the client.
 *   - tool "client_capabilities" answers the JSON text of initialize's params.capabilities.
 *   - tool "echo" given "raw" instead of "text" answers with RAW as the members of its
 *     response after "jsonrpc" and "id", byte for byte: what the daemon passes on as written.
 *     Given "rawHex", the same with RAW's bytes in hex, for bytes a client cannot send in
 *     JSON (invalid UTF-8).
 *   - tool "echo" given "bytes" N instead of "text" answers a text of N 'x's, for the tests
 *     of a server's line limit; with "idLast": true its id comes after the result, as the
 *     TypeScript SDK writes it; with "unterminated": true it writes N 'x's and no newline,
 *     and never answers.
 *   - --ask-at-start METHOD sends request METHOD, id "start-1", right after initialized.
 *   - --discover MODE plays a server of either era at the modern era's probe (server/discover,
 *     before initialize): "modern" answers it and is a modern (2026-07-28) server only: no
 *     initialize or ping, every request refused (-32602) unless its params._meta names the
 *     version and the client's capabilities, every result typed "complete"; the legacy
 *     ones answer it -32602 ("invalid-params"), never ("silent"), or exit on it ("exit");
 *     without the option it is -32601 as for any unknown method.
 *   - subscriptions/listen (a modern server's only way to notify): acknowledged with what it
 *     honours (toolsListChanged, and resourceSubscriptions with --subscribe), then its list
 *     changes and resource updates carry its id; "listen ID opened FILTER" and "listen ID
 *     cancelled" on stderr; --refuse-listen answers it -32601, --listen-ends-after-ms MS ends
 *     each with a result MS after it opened ("listen ID ended"), or with an error with
 *     --listen-ends-with-error.
 *   - --follow-roots sends roots/list, id "roots-N", on each notifications/roots/list_changed,
 *     as servers that keep their client's roots do (server-filesystem).
 *   - A legacy one (not --discover modern) says "legacy server got _meta KEY on METHOD" for
 *     each io.modelcontextprotocol/ member of a request's _meta (server/discover's aside).
 * Stderr says what happened, one line each: "asked METHOD as ID", "answer to ID: RESPONSE",
 * "cancelled request ID" (with ", forgetting ASK" or ", going on with ASK" for an ask's call),
 * "unexpected answer RESPONSE" (an id we are not waiting for), "gave up on ID",
 * "progress PARAMS" (notifications/progress from the client; " for no pending ask" is added
 * when its token is none of a pending ask's params._meta.progressToken),
 * "notification METHOD PARAMS" (any other notification we do not handle) and
 * "unknown request METHOD" (before the -32601 answer).
 *
 * Transport: one JSON-RPC 2.0 message per line on stdin, one per line on stdout, logs on
 * stderr. Single-threaded: one poll() loop serves stdin and the timers of pending work (sleep
 * calls, asks that give up, the late tool list change, resource updates, an endless stderr
 * flood), so a long call or an unanswered ask never keeps a cancellation or an answer from
 * being read. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <json-c/json.h>

#define MODERN_PROTOCOL_VERSION "2026-07-28"

#define SERVER_NAME "mcpvisor-demo-server"
#define LATEST_PROTOCOL_VERSION "2025-11-25"
#define DEFAULT_INSTRUCTIONS "A demo server for mcpvisor: try the echo, add and sleep tools."

#define MAX_JOBS 64
#define MAX_ASKS 64
#define PROGRESS_INTERVAL_MS 100
#define READ_CHUNK 65536
#define FLOOD_BATCH 256
#define MAX_SYNTHETIC 1000000
#define MAX_SUBSCRIPTIONS 64
#define UPDATE_INTERVAL_MS 200

/* JSON-RPC and MCP error codes. */
#define ERR_PARSE -32700
#define ERR_INVALID_REQUEST -32600
#define ERR_METHOD_NOT_FOUND -32601
#define ERR_INVALID_PARAMS -32602
#define ERR_SERVER -32000
#define ERR_RESOURCE_NOT_FOUND -32002

static const char *const supported_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

/* MCP logging levels, least severe first. */
static const char *const log_levels[] = { "debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency" };

/* Command line; -1 means "not given" where 0 is a meaningful value. */
static int arg_exit_at_start = -1;
static int arg_exit_during_init = -1;
static bool arg_never_answer;
static long arg_slow_start_ms;
static long arg_ping_fail_after = -1;
static long arg_exit_after = -1;
static int arg_exit_code = 1;
static bool arg_ignore_stdin_eof;
static bool arg_ignore_sigterm;
static bool arg_grandchild_setsid;
static bool arg_grandchild_same_group;
static bool arg_grandchild_tree;
static bool arg_linger;
static const char *arg_linger_child_pidfile;
static const char *arg_grandchild_pidfile;
static const char *arg_pidfile;
static bool arg_garbage;
static bool arg_close_stdout;
static long arg_flood_stderr = -1;
static const char *arg_stderr;
static long arg_long_stderr_line = -1;
static const char *arg_protocol_version;
static const char *arg_discover;
static bool arg_no_tools, arg_no_prompts, arg_no_resources;
static unsigned arg_tools, arg_prompts, arg_resources;
static bool arg_probe_tools;
static unsigned arg_page_size;
static const char *arg_instructions = DEFAULT_INSTRUCTIONS;
static long arg_list_changed_after_ms = -1;
static bool arg_subscribe;
static bool arg_refuse_listen;
static long arg_listen_ends_after_ms = -1;
static bool arg_listen_ends_with_error;
static const char *arg_ask_at_start;
static bool arg_follow_roots;

/* A tools/call of "sleep" in progress. id == NULL marks a free slot. */
struct job {
        json_object *id;
        json_object *progress_token; /* NULL: the caller asked for no progress */
        uint64_t ms;
        uint64_t start;
        uint64_t next_progress;
};

static struct job jobs[MAX_JOBS];

/* A request of ours to the client, waiting for its answer: an "ask" tool call's, or the one
 * of --ask-at-start. request_id == NULL marks a free slot. */
struct ask {
        char *request_id;            /* "ask-N", "start-1" */
        json_object *call_id;        /* the tools/call to answer; NULL: none (--ask-at-start) */
        json_object *progress_token; /* the request's params._meta.progressToken; NULL: none */
        uint64_t give_up_at;         /* UINT64_MAX: waits for ever */
        json_object *group;          /* "also"/"then": {"waiting", "answers", "then"}, shared; NULL: none */
        char *method;                /* afterMs: not sent yet, sent at send_at with params */
        json_object *params;
        uint64_t send_at;
};

static struct ask asks[MAX_ASKS];
static unsigned long n_asks; /* "ask" calls so far: the N of "ask-N" */
static bool asked_at_start;
static unsigned long n_roots_asks; /* --follow-roots: the N of "roots-N" */
static json_object *client_capabilities; /* initialize's params.capabilities; NULL: none seen */

/* A resources/subscribe in force (--subscribe). uri == NULL marks a free slot. */
struct subscription {
        char *uri;
        uint64_t next_update;
};

static struct subscription subscriptions[MAX_SUBSCRIPTIONS];

/* An open subscriptions/listen (modern). id == NULL marks a free slot. */
#define MAX_LISTENS 16
struct listen {
        json_object *id;
        bool tools;
        json_object *uris;      /* the resourceSubscriptions honoured: an array */
        uint64_t end_at;        /* --listen-ends-after-ms; 0 never */
};

static struct listen listens[MAX_LISTENS];
static bool listen_fan_out(const char *method, json_object *params);
static struct subscription *subscribe_uri(const char *uri);

/* Bytes read from stdin, not yet consumed as lines. */
static struct {
        char *data;
        size_t len, size;
        size_t scanned; /* no newline in data[0..scanned) */
} input;

static json_tokener *tokener;
static bool stdin_open = true;
static bool stdout_closed;
static long n_answered;
static long n_pings;
static unsigned min_log_level; /* index into log_levels, set by logging/setLevel */
static int64_t list_changed_at = -1;
static bool list_changed_armed;
static bool late_tool_added;
static uint64_t flood_counter;

/* ---- small helpers ---- */

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t)k;
        }
        return 0;
}

static void sleep_ms(long ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* Written to PATH.tmp and renamed, so a reader never sees a partial pid. */
static int write_pidfile(const char *path, pid_t pid) {
        char tmp[PATH_MAX];
        int fd, r = 0;

        if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (dprintf(fd, "%d\n", (int)pid) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
        return r;
}

static const char *get_string(json_object *obj, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static json_object *get_number(json_object *obj, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(obj, key, &v) ||
            (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)))
                return NULL;
        return v;
}

/* "PREFIX<k>" with 1 <= k <= max, written without leading zeros: k, else 0. */
static unsigned synthetic_index(const char *name, const char *prefix, unsigned max) {
        size_t n = strlen(prefix);
        unsigned long k;
        char *end;

        if (!name || strncmp(name, prefix, n) != 0 || name[n] < '1' || name[n] > '9')
                return 0;
        errno = 0;
        k = strtoul(name + n, &end, 10);
        if (errno != 0 || *end != '\0' || k > max)
                return 0;
        return (unsigned)k;
}

static json_object *text_result(const char *text, bool is_error) {
        json_object *item = json_object_new_object(), *content = json_object_new_array(),
                    *result = json_object_new_object();

        json_object_object_add(item, "type", json_object_new_string("text"));
        json_object_object_add(item, "text", json_object_new_string(text));
        json_object_array_add(content, item);
        json_object_object_add(result, "content", content);
        if (is_error)
                json_object_object_add(result, "isError", json_object_new_boolean(true));
        return result;
}

/* ---- output ---- */

static void write_line(const char *s, size_t len) {
        char *buf;
        int r;

        if (stdout_closed)
                return;
        buf = malloc(len + 1);
        if (!buf) {
                fprintf(stderr, "out of memory\n");
                exit(EXIT_FAILURE);
        }
        memcpy(buf, s, len);
        buf[len] = '\n';
        r = write_all(STDOUT_FILENO, buf, len + 1);
        free(buf);
        if (r < 0) {
                /* Nobody is listening any more: nothing left to serve. */
                fprintf(stderr, "writing to stdout: %s\n", strerror(-r));
                exit(EXIT_FAILURE);
        }
}

/* Takes ownership of m. */
static void send_message(json_object *m) {
        size_t len;
        const char *s = json_object_to_json_string_length(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                          &len);

        write_line(s, len);
        json_object_put(m);
}

/* Counts towards --exit-after; only answers to real requests do, not parse errors. */
static void answered(json_object *id) {
        if (!id || arg_exit_after < 0 || ++n_answered < arg_exit_after)
                return;
        fprintf(stderr, "exiting after %ld requests\n", n_answered);
        exit(arg_exit_code);
}

static json_object *new_message(json_object *id) {
        json_object *m = json_object_new_object();

        json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(m, "id", json_object_get(id));
        if (arg_garbage) {
                static const char garbage[] = "this is not json";
                write_line(garbage, sizeof(garbage) - 1);
        }
        return m;
}

static bool discover_mode(const char *mode) {
        return arg_discover && strcmp(arg_discover, mode) == 0;
}

/* Takes ownership of result. */
static void send_result(json_object *id, json_object *result) {
        json_object *m = new_message(id);

        if (discover_mode("modern") && json_object_is_type(result, json_type_object) &&
            !json_object_object_get_ex(result, "resultType", NULL))
                json_object_object_add(result, "resultType", json_object_new_string("complete"));
        json_object_object_add(m, "result", result);
        send_message(m);
        answered(id);
}

static void send_error_data(json_object *id, int code, const char *message, json_object *data) {
        json_object *m = new_message(id), *e = json_object_new_object();

        json_object_object_add(e, "code", json_object_new_int(code));
        json_object_object_add(e, "message", json_object_new_string(message));
        if (data)
                json_object_object_add(e, "data", data);
        json_object_object_add(m, "error", e);
        send_message(m);
        answered(id);
}

static void send_error(json_object *id, int code, const char *message) {
        send_error_data(id, code, message, NULL);
}

/* Takes ownership of params, which may be NULL. */
static void send_notification(const char *method, json_object *params) {
        json_object *m;

        if (listen_fan_out(method, params))
                return;
        m = json_object_new_object();

        json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(m, "method", json_object_new_string(method));
        if (params)
                json_object_object_add(m, "params", params);
        send_message(m);
}

/* A request of ours to the client. Takes ownership of params, which may be NULL. */
static void send_request(const char *id, const char *method, json_object *params) {
        json_object *m = json_object_new_object();

        json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(m, "id", json_object_new_string(id));
        json_object_object_add(m, "method", json_object_new_string(method));
        if (params)
                json_object_object_add(m, "params", params);
        send_message(m);
}

/* ---- stderr ---- */

/* Compact JSON text of o for a log line ("null" for NULL); valid until o changes. */
static const char *log_json(json_object *o) {
        return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static void flood_lines(uint64_t n) {
        char buf[FLOOD_BATCH * 40];

        /* Batched, so the flood is limited by the reader, not by our syscalls. */
        while (n > 0) {
                size_t len = 0;

                for (unsigned i = 0; i < FLOOD_BATCH && n > 0; i++, n--)
                        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "flood line %" PRIu64 "\n",
                                                ++flood_counter);
                (void)write_all(STDERR_FILENO, buf, len);
        }
}

static void write_long_line(uint64_t bytes) {
        char buf[READ_CHUNK];

        memset(buf, 'x', sizeof(buf));
        while (bytes > 0) {
                size_t n = bytes < sizeof(buf) ? (size_t)bytes : sizeof(buf);

                (void)write_all(STDERR_FILENO, buf, n);
                bytes -= n;
        }
        (void)write_all(STDERR_FILENO, "\n", 1);
}

/* ---- catalogue: tools, prompts, resources ---- */

typedef void (*tool_fn)(json_object *id, json_object *params, json_object *args);

struct tool {
        const char *name;
        const char *description;
        const char *schema; /* inputSchema, as JSON text */
        tool_fn call;
};

#define SCHEMA_TEXT \
        "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"," \
        "\"description\":\"The text\"}},\"required\":[\"text\"]}"
#define SCHEMA_NONE "{\"type\":\"object\",\"properties\":{}}"

static void answer_raw(json_object *id, const char *raw) {
        char *line;
        int n = asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%s,%s}", json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN),
                         raw);

        if (n < 0) {
                fprintf(stderr, "out of memory\n");
                exit(EXIT_FAILURE);
        }
        write_line(line, (size_t)n);
        free(line);
        answered(id);
}

/* N 'x's: a large answer built by the server from a small request. */
static void answer_bytes(json_object *id, json_object *args, size_t n) {
        json_object *v;
        char *text = malloc(n + 1), *line = NULL;
        int len = 0;

        if (!text) {
                fprintf(stderr, "out of memory\n");
                exit(EXIT_FAILURE);
        }
        memset(text, 'x', n);
        text[n] = '\0';
        if (json_object_object_get_ex(args, "unterminated", &v) && json_object_get_boolean(v)) {
                if (write_all(STDOUT_FILENO, text, n) < 0)
                        exit(EXIT_FAILURE);
        } else if (json_object_object_get_ex(args, "idLast", &v) && json_object_get_boolean(v)) {
                len = asprintf(&line, "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]},\"jsonrpc\":\"2.0\",\"id\":%s}",
                               text, json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN));
                if (len < 0)
                        exit(EXIT_FAILURE);
                write_line(line, (size_t)len);
                answered(id);
        } else
                send_result(id, text_result(text, false));
        free(line);
        free(text);
}

/* "rawHex": RAW in hex, two digits a byte. */
static void answer_raw_hex(json_object *id, const char *hex) {
        size_t len = strlen(hex) / 2;
        char *raw = calloc(len + 1, 1);
        unsigned byte;

        if (!raw) {
                fprintf(stderr, "out of memory\n");
                exit(EXIT_FAILURE);
        }
        for (size_t i = 0; i < len && sscanf(hex + 2 * i, "%2x", &byte) == 1; i++)
                raw[i] = (char)byte;
        answer_raw(id, raw);
        free(raw);
}

static void tool_echo(json_object *id, json_object *params, json_object *args) {
        const char *text = get_string(args, "text");
        json_object *bytes = get_number(args, "bytes");

        if (get_string(args, "rawHex")) {
                answer_raw_hex(id, get_string(args, "rawHex"));
                return;
        }
        if (bytes && json_object_get_int64(bytes) >= 0) {
                answer_bytes(id, args, (size_t)json_object_get_int64(bytes));
                return;
        }
        if (get_string(args, "raw")) {
                answer_raw(id, get_string(args, "raw"));
                return;
        }
        if (!text) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'text' (string) is required");
                return;
        }
        send_result(id, text_result(text, false));
}

static void tool_add(json_object *id, json_object *params, json_object *args) {
        json_object *a = get_number(args, "a"), *b = get_number(args, "b");
        int64_t ia, ib, sum;
        char text[64];

        if (!a || !b) {
                send_error(id, ERR_INVALID_PARAMS, "arguments 'a' and 'b' (numbers) are required");
                return;
        }
        ia = json_object_get_int64(a);
        ib = json_object_get_int64(b);
        /* Integers stay exact; anything else, or an overflow, is summed as doubles. */
        if (json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int) &&
            !__builtin_add_overflow(ia, ib, &sum))
                snprintf(text, sizeof(text), "%" PRId64, sum);
        else
                snprintf(text, sizeof(text), "%.17g", json_object_get_double(a) + json_object_get_double(b));
        send_result(id, text_result(text, false));
}

static struct job *job_new(void) {
        for (size_t i = 0; i < MAX_JOBS; i++)
                if (!jobs[i].id)
                        return &jobs[i];
        return NULL;
}

static void job_free(struct job *j) {
        json_object_put(j->id);
        json_object_put(j->progress_token);
        *j = (struct job){};
}

/* Not a sleep(): the job finishes in the main loop, which meanwhile reads cancellations. */
static void tool_sleep(json_object *id, json_object *params, json_object *args) {
        json_object *ms = get_number(args, "ms"), *meta, *token;
        struct job *j;

        if (!ms || json_object_get_double(ms) < 0) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'ms' (non-negative number) is required");
                return;
        }
        j = job_new();
        if (!j) {
                send_error(id, ERR_SERVER, "too many calls in progress");
                return;
        }
        *j = (struct job){
                .id = json_object_get(id),
                .ms = (uint64_t)json_object_get_int64(ms),
                .start = now_ms(),
        };
        j->next_progress = j->start + PROGRESS_INTERVAL_MS;
        if (json_object_object_get_ex(params, "_meta", &meta) && json_object_object_get_ex(meta, "progressToken", &token))
                j->progress_token = json_object_get(token);
}

static void tool_fail(json_object *id, json_object *params, json_object *args) {
        send_error(id, ERR_SERVER, "failed on purpose");
}

static void tool_crash(json_object *id, json_object *params, json_object *args) {
        fprintf(stderr, "crashing on purpose\n");
        exit(3);
}

static void tool_log(json_object *id, json_object *params, json_object *args) {
        const char *text = get_string(args, "text");
        json_object *p;

        if (!text) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'text' (string) is required");
                return;
        }
        fprintf(stderr, "%s\n", text);
        /* with "count": that many messages, "TEXT N" (a flood) */
        for (int64_t i = 1, n = json_object_object_get_ex(args, "count", &p) ? json_object_get_int64(p) : 0;
             min_log_level <= 1 /* info */ && i <= (n > 0 ? n : 1); i++) {
                char numbered[512];

                snprintf(numbered, sizeof numbered, "%s %" PRId64, text, i);
                p = json_object_new_object();
                json_object_object_add(p, "level", json_object_new_string("info"));
                json_object_object_add(p, "logger", json_object_new_string("demo"));
                json_object_object_add(p, "data", json_object_new_string(n > 0 ? numbered : text));
                send_notification("notifications/message", p);
        }
        /* with "bytes": a result of that many 'x's after the messages (a large answer on a
         * stream the messages started) */
        p = get_number(args, "bytes");
        if (p && json_object_get_int64(p) >= 0)
                answer_bytes(id, args, (size_t)json_object_get_int64(p));
        else
                send_result(id, text_result("logged", false));
}

static void tool_env(json_object *id, json_object *params, json_object *args) {
        const char *name = get_string(args, "name"), *value;
        char text[512];

        if (!name) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'name' (string) is required");
                return;
        }
        value = getenv(name);
        if (!value) {
                /* A tool-level failure, which MCP reports in the result, not as a protocol error. */
                snprintf(text, sizeof(text), "environment variable %s is not set", name);
                send_result(id, text_result(text, true));
                return;
        }
        send_result(id, text_result(value, false));
}

static struct ask *ask_new(void) {
        for (size_t i = 0; i < MAX_ASKS; i++)
                if (!asks[i].request_id)
                        return &asks[i];
        return NULL;
}

static void ask_free(struct ask *a) {
        free(a->request_id);
        free(a->method);
        json_object_put(a->params);
        json_object_put(a->call_id);
        json_object_put(a->progress_token);
        json_object_put(a->group);
        *a = (struct ask){};
}

static struct ask *find_ask(json_object *id) {
        if (!json_object_is_type(id, json_type_string))
                return NULL;
        for (size_t i = 0; i < MAX_ASKS; i++)
                if (asks[i].request_id && strcmp(asks[i].request_id, json_object_get_string(id)) == 0)
                        return &asks[i];
        return NULL;
}

static void ask_send(struct ask *a, const char *method, json_object *params) {
        json_object *meta, *token;

        if (json_object_object_get_ex(params, "_meta", &meta) && json_object_object_get_ex(meta, "progressToken", &token))
                a->progress_token = json_object_get(token);
        fprintf(stderr, "asked %s as %s\n", method, a->request_id);
        send_request(a->request_id, method, params);
}

/* Sends request method (params may be NULL) as request_id after after_ms (0: now) and
 * waits for its answer, which answers the tools/call call_id (may be NULL); gives up
 * cancel_after_ms after sending (< 0: never). Returns false when too many asks are
 * pending. Takes ownership of params. */
static bool ask(const char *request_id, json_object *call_id, const char *method, json_object *params,
                int64_t cancel_after_ms, uint64_t after_ms) {
        struct ask *a = ask_new();
        uint64_t send_at = now_ms() + after_ms;

        if (!a) {
                json_object_put(params);
                return false;
        }
        *a = (struct ask){
                .request_id = strdup(request_id),
                .call_id = json_object_get(call_id),
                .give_up_at = cancel_after_ms >= 0 ? send_at + (uint64_t)cancel_after_ms : UINT64_MAX,
        };
        if (after_ms > 0) {
                a->method = strdup(method);
                a->params = params;
                a->send_at = send_at;
        }
        if (!a->request_id || (after_ms > 0 && !a->method)) {
                fprintf(stderr, "out of memory\n");
                exit(EXIT_FAILURE);
        }
        if (after_ms == 0)
                ask_send(a, method, params);
        return true;
}

/* Answers an ask's tools/call with the client's response m. */
static void answer_ask(json_object *call_id, json_object *m) {
        json_object *result, *error, *code = NULL;
        const char *message = NULL;
        char text[4096];

        if (json_object_object_get_ex(m, "result", &result)) {
                send_result(call_id, text_result(json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN), false));
                return;
        }
        if (json_object_object_get_ex(m, "error", &error)) {
                json_object_object_get_ex(error, "code", &code);
                message = get_string(error, "message");
        }
        snprintf(text, sizeof(text), "error %" PRId64 ": %s", json_object_get_int64(code), message ? message : "");
        send_result(call_id, text_result(text, true));
}

static void group_send(json_object *group, json_object *call_id, json_object *request) {
        char request_id[32];

        snprintf(request_id, sizeof(request_id), "ask-%lu", ++n_asks);
        json_object *params = NULL;
        json_object_object_get_ex(request, "params", &params);
        json_object *after = get_number(request, "afterMs");
        if (!ask(request_id, call_id, get_string(request, "method") ? get_string(request, "method") : "ping",
                 json_object_get(params), -1, after && json_object_get_int64(after) > 0 ? (uint64_t)json_object_get_int64(after) : 0)) {
                send_error(call_id, ERR_SERVER, "too many asks pending");
                return;
        }
        json_object *key = json_object_new_string(request_id);
        find_ask(key)->group = json_object_get(group);
        json_object_put(key);
        json_object_object_add(group, "waiting", json_object_new_int(json_object_get_int(json_object_object_get(group, "waiting")) + 1));
}

/* An answer to one of a group's requests: the next round goes out, or the call is answered. */
static void group_answer(json_object *group, json_object *call_id, json_object *m) {
        json_object *answers = json_object_object_get(group, "answers"), *then = json_object_object_get(group, "then");
        json_object *v = json_object_object_get(m, "result");
        int waiting = json_object_get_int(json_object_object_get(group, "waiting")) - 1;

        json_object_array_add(answers, json_object_get(v ? v : json_object_object_get(m, "error")));
        json_object_object_add(group, "waiting", json_object_new_int(waiting));
        if (waiting > 0)
                return;
        if (json_object_array_length(then) > 0) {
                json_object *next = json_object_get(json_object_array_get_idx(then, 0));

                json_object_array_del_idx(then, 0, 1);
                group_send(group, call_id, next);
                json_object_put(next);
                return;
        }
        send_result(call_id, text_result(json_object_to_json_string_ext(answers, JSON_C_TO_STRING_PLAIN), false));
}

/* A response from the client: to one of our asks, or to nothing we wait for. */
static void handle_answer(json_object *m, json_object *id) {
        struct ask *a = find_ask(id);
        json_object *call_id, *group;

        if (!a) {
                fprintf(stderr, "unexpected answer %s\n", log_json(m));
                return;
        }
        fprintf(stderr, "answer to %s: %s\n", a->request_id, log_json(m));
        /* Free the slot first: answering may exit (--exit-after). */
        call_id = json_object_get(a->call_id);
        group = json_object_get(a->group);
        ask_free(a);
        if (group && call_id)
                group_answer(group, call_id, m);
        else if (call_id)
                answer_ask(call_id, m);
        json_object_put(group);
        json_object_put(call_id);
}

/* The rounds of a modern "ask": [method+params, also...] first, then each of "then". */
static json_object *modern_rounds(json_object *args) {
        json_object *rounds = json_object_new_array(), *first = json_object_new_array(), *request = json_object_new_object();
        json_object *v, *also = NULL, *then = NULL;

        json_object_object_add(request, "method", json_object_new_string(get_string(args, "method")));
        if (json_object_object_get_ex(args, "params", &v))
                json_object_object_add(request, "params", json_object_get(v));
        json_object_array_add(first, request);
        json_object_object_get_ex(args, "also", &also);
        json_object_object_get_ex(args, "then", &then);
        for (size_t i = 0; also && i < json_object_array_length(also); i++)
                json_object_array_add(first, json_object_get(json_object_array_get_idx(also, i)));
        json_object_array_add(rounds, first);
        for (size_t i = 0; then && i < json_object_array_length(then); i++) {
                json_object *one = json_object_new_array();

                json_object_array_add(one, json_object_get(json_object_array_get_idx(then, i)));
                json_object_array_add(rounds, one);
        }
        return rounds;
}

/* Answers input_required asking round n of rounds, the state saying what comes next. */
static void ask_round(json_object *id, json_object *rounds, int n, json_object *answers) {
        json_object *result = json_object_new_object(), *requests = json_object_new_object(), *state = json_object_new_object();
        json_object *round = json_object_array_get_idx(rounds, (size_t)n);
        char key[64];

        for (size_t i = 0; i < json_object_array_length(round); i++) {
                snprintf(key, sizeof(key), "r%d-%zu", n, i);
                json_object_object_add(requests, key, json_object_get(json_object_array_get_idx(round, i)));
        }
        json_object_object_add(state, "round", json_object_new_int(n + 1));
        json_object_object_add(state, "answers", json_object_get(answers));
        json_object_object_add(result, "resultType", json_object_new_string("input_required"));
        json_object_object_add(result, "inputRequests", requests);
        json_object_object_add(result, "requestState",
                               json_object_new_string(json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN)));
        json_object_put(state);
        fprintf(stderr, "input_required round %d\n", n);
        send_result(id, result);
}

/* "ask" of a modern server: no request of its own, but input_required results, the
 * answers so far carried in its requestState (plain JSON: a server that trusts its state
 * needs a client, or a gateway, that cannot forge it). */
static void tool_ask_modern(json_object *id, json_object *params, json_object *args) {
        json_object *rounds = modern_rounds(args), *state = NULL, *answers, *responses = NULL, *v;
        const char *text = get_string(params, "requestState");
        int n = 0;
        char key[64];

        json_object_object_get_ex(params, "inputResponses", &responses);
        if (text) {
                fprintf(stderr, "requestState %s\n", text);
                state = json_tokener_parse(text);
                if (!state || !json_object_object_get_ex(state, "round", &v)) {
                        send_error(id, ERR_INVALID_PARAMS, "requestState is not one of mine");
                        json_object_put(state);
                        json_object_put(rounds);
                        return;
                }
                n = json_object_get_int(v);
        }
        answers = state && json_object_object_get_ex(state, "answers", &v) ? json_object_get(v) : json_object_new_array();
        if (n > 0) {
                json_object *round = json_object_array_get_idx(rounds, (size_t)n - 1);
                json_object *got = json_object_new_array();

                for (size_t i = 0; round && i < json_object_array_length(round); i++) {
                        snprintf(key, sizeof(key), "r%d-%zu", n - 1, i);
                        if (!json_object_object_get_ex(responses, key, &v)) {
                                json_object_put(got);
                                got = NULL; /* one missing: asked again */
                                break;
                        }
                        json_object_array_add(got, json_object_get(v));
                }
                if (!got)
                        n--;
                for (size_t i = 0; got && i < json_object_array_length(got); i++)
                        json_object_array_add(answers, json_object_get(json_object_array_get_idx(got, i)));
                json_object_put(got);
        }
        if ((size_t)n < json_object_array_length(rounds))
                ask_round(id, rounds, n, answers);
        else if (json_object_array_length(answers) == 1)
                send_result(id, text_result(json_object_to_json_string_ext(json_object_array_get_idx(answers, 0),
                                                                           JSON_C_TO_STRING_PLAIN), false));
        else
                send_result(id, text_result(json_object_to_json_string_ext(answers, JSON_C_TO_STRING_PLAIN), false));
        json_object_put(answers);
        json_object_put(state);
        json_object_put(rounds);
}

/* Not a blocking wait: the answer comes through the main loop, which meanwhile serves
 * everything else. */
static void tool_ask(json_object *id, json_object *params, json_object *args) {
        const char *method = get_string(args, "method");
        json_object *request_params = NULL, *cancel_after = get_number(args, "cancelAfterMs");
        json_object *after = get_number(args, "afterMs");
        char request_id[32];

        json_object_object_get_ex(args, "params", &request_params);
        if (!method || (request_params && !json_object_is_type(request_params, json_type_object)) ||
            (cancel_after && json_object_get_double(cancel_after) < 0) || (after && json_object_get_double(after) < 0)) {
                send_error(id, ERR_INVALID_PARAMS,
                           "argument 'method' (string) is required; 'params' must be an object and "
                           "'cancelAfterMs' and 'afterMs' non-negative numbers");
                return;
        }
        if (discover_mode("modern")) {
                tool_ask_modern(id, params, args);
                return;
        }
        json_object *also = NULL, *then = NULL;
        json_object_object_get_ex(args, "also", &also);
        json_object_object_get_ex(args, "then", &then);
        if (also || then) {
                json_object *group = json_object_new_object(), *first = json_object_new_object();

                json_object_object_add(group, "waiting", json_object_new_int(0));
                json_object_object_add(group, "answers", json_object_new_array());
                json_object_object_add(group, "then", then ? json_object_get(then) : json_object_new_array());
                json_object_object_add(first, "method", json_object_new_string(method));
                if (request_params)
                        json_object_object_add(first, "params", json_object_get(request_params));
                group_send(group, id, first);
                for (size_t i = 0; also && i < json_object_array_length(also); i++)
                        group_send(group, id, json_object_array_get_idx(also, i));
                json_object_put(first);
                json_object_put(group);
                return;
        }
        snprintf(request_id, sizeof(request_id), "ask-%lu", n_asks + 1);
        if (!ask(request_id, id, method, json_object_get(request_params),
                 cancel_after ? json_object_get_int64(cancel_after) : -1,
                 after ? (uint64_t)json_object_get_int64(after) : 0)) {
                send_error(id, ERR_SERVER, "too many asks pending");
                return;
        }
        n_asks++;
}

static void tool_notify(json_object *id, json_object *params, json_object *args) {
        const char *method = get_string(args, "method");
        json_object *notification_params = NULL;

        json_object_object_get_ex(args, "params", &notification_params);
        if (!method || (notification_params && !json_object_is_type(notification_params, json_type_object))) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'method' (string) is required; 'params' must be an object");
                return;
        }
        send_notification(method, json_object_get(notification_params));
        send_result(id, text_result("sent", false));
}

static void tool_client_capabilities(json_object *id, json_object *params, json_object *args) {
        send_result(id, text_result(json_object_to_json_string_ext(client_capabilities, JSON_C_TO_STRING_PLAIN), false));
}

static void tool_remember(json_object *id, json_object *params, json_object *args) {
        static char *kept;
        const char *text = get_string(args, "text");
        char *answer = NULL;

        if (text) {
                free(kept);
                kept = strdup(text);
        }
        if (asprintf(&answer, "%s %ld", kept ? kept : "", (long)getpid()) < 0) {
                fprintf(stderr, "out of memory\n");
                exit(EXIT_FAILURE);
        }
        send_result(id, text_result(answer, false));
        free(answer);
}

static const struct tool tools[] = {
        { "echo", "Returns its text argument.", SCHEMA_TEXT, tool_echo },
        { "add", "Adds two numbers a and b.",
          "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}},"
          "\"required\":[\"a\",\"b\"]}",
          tool_add },
        { "sleep", "Waits ms milliseconds, reporting progress every 100 ms if asked to; cancellable.",
          "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0,"
          "\"description\":\"How long to wait, in milliseconds\"}},\"required\":[\"ms\"]}",
          tool_sleep },
        { "fail", "Always fails with a JSON-RPC error.", SCHEMA_NONE, tool_fail },
        { "crash", "Makes the server exit with status 3 without answering.", SCHEMA_NONE, tool_crash },
        { "log", "Writes its text argument to stderr and sends it as a log message (count of them, numbered, if given); "
                 "answers \"logged\", or a text of bytes 'x's if given.",
          SCHEMA_TEXT, tool_log },
        { "env", "Returns the value of the environment variable given by name.",
          "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]}",
          tool_env },
        { "ask", "Sends request 'method' (with 'params') to the client and returns its answer; gives up "
                 "after 'cancelAfterMs' if given; with 'afterMs', sends it that much later, even if the call "
                 "was cancelled meanwhile.",
          "{\"type\":\"object\",\"properties\":{\"method\":{\"type\":\"string\"},\"params\":{\"type\":\"object\"},"
          "\"cancelAfterMs\":{\"type\":\"integer\",\"minimum\":0},\"afterMs\":{\"type\":\"integer\",\"minimum\":0},"
          "\"also\":{\"type\":\"array\"},\"then\":{\"type\":\"array\"}},"
          "\"required\":[\"method\"]}",
          tool_ask },
        { "notify", "Sends notification 'method' (with 'params') to the client.",
          "{\"type\":\"object\",\"properties\":{\"method\":{\"type\":\"string\"},\"params\":{\"type\":\"object\"}},"
          "\"required\":[\"method\"]}",
          tool_notify },
        { "client_capabilities", "Returns the capabilities the client declared in initialize.", SCHEMA_NONE,
          tool_client_capabilities },
};


/* --probe-tools: what the server may do where it runs, for the tests of confinement. Each
 * answers "ok ..." or an isError result naming the errno. */
static void probe_result(json_object *id, int r, const char *what, const char *ok_text) {
        char text[512];

        if (r < 0)
                snprintf(text, sizeof(text), "%s: %s", what, strerror(-r));
        else
                snprintf(text, sizeof(text), "ok %s", ok_text);
        send_result(id, text_result(text, r < 0));
}

static void tool_write_file(json_object *id, json_object *params, json_object *args) {
        const char *path = get_string(args, "path"), *text = get_string(args, "text");
        int fd, r = 0;

        if (!path) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'path' (string) is required");
                return;
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || (text && write(fd, text, strlen(text)) < 0))
                r = -errno;
        if (fd >= 0)
                close(fd);
        probe_result(id, r, path, path);
}

static void tool_read_file(json_object *id, json_object *params, json_object *args) {
        const char *path = get_string(args, "path");
        char buf[256] = "";
        ssize_t n = -1;
        int fd;

        if (!path) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'path' (string) is required");
                return;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                n = read(fd, buf, sizeof(buf) - 1);
        probe_result(id, fd < 0 || n < 0 ? -errno : 0, path, (buf[n > 0 ? n : 0] = '\0', buf));
        if (fd >= 0)
                close(fd);
}

static void tool_inet(json_object *id, json_object *params, json_object *args) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        probe_result(id, fd < 0 ? -errno : 0, "socket(AF_INET)", "socket(AF_INET)");
        if (fd >= 0)
                close(fd);
}

static void tool_whoami(json_object *id, json_object *params, json_object *args) {
        char text[64];

        snprintf(text, sizeof(text), "uid=%u gid=%u", (unsigned)getuid(), (unsigned)getgid());
        probe_result(id, 0, "", text);
}

/* Who it runs as and where: uid, gid, its supplementary groups and its working directory
 * ("uid=65534 gid=65534 groups=65534 cwd=/"), for the tests of running as another user. */
static void tool_identity(json_object *id, json_object *params, json_object *args) {
        gid_t groups[64];
        int n = getgroups(64, groups);
        char text[PATH_MAX + 512], cwd[PATH_MAX];
        size_t len;

        len = (size_t)snprintf(text, sizeof(text), "uid=%u gid=%u groups=", (unsigned)getuid(), (unsigned)getgid());
        for (int i = 0; i < n && len < sizeof(text) - 16; i++)
                len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%u", i ? "," : "", (unsigned)groups[i]);
        snprintf(text + len, sizeof(text) - len, " cwd=%s", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
        probe_result(id, n < 0 ? -errno : 0, "getgroups", text);
}

/* Touches mb megabytes, a page at a time, and keeps them: past memoryMax, the OOM killer. */
static void tool_alloc(json_object *id, json_object *params, json_object *args) {
        json_object *mb = get_number(args, "mb");
        size_t size = mb ? (size_t)json_object_get_int64(mb) << 20 : 0;
        char *p = size ? malloc(size) : NULL;

        if (p)
                for (size_t i = 0; i < size; i += 4096)
                        p[i] = 1;
        probe_result(id, p ? 0 : -ENOMEM, "malloc", "allocated");
}

/* Forks n children that ignore SIGTERM and sleep until killed, so they keep the cgroup's
 * tasks counted until the manager's SIGKILL; a refused fork (tasksMax: EAGAIN) ends the
 * server with status 1, as a server that cannot start a thread or a child does. */
static void tool_fork(json_object *id, json_object *params, json_object *args) {
        json_object *n = get_number(args, "n");
        int64_t count = n ? json_object_get_int64(n) : 0;

        for (int64_t i = 0; i < count; i++) {
                pid_t pid = fork();

                if (pid < 0) {
                        fprintf(stderr, "fork %" PRId64 " of %" PRId64 ": %s\n", i + 1, count, strerror(errno));
                        exit(1);
                }
                if (pid == 0) {
                        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                        for (int fd = 0; fd < 3 && null >= 0; fd++)
                                dup2(null, fd);
                        signal(SIGTERM, SIG_IGN);
                        for (;;)
                                pause();
                }
        }
        probe_result(id, 0, "fork", "forked");
}

static const struct tool probe_tools[] = {
        { "write_file", "Writes text to path.",
          "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"}},"
          "\"required\":[\"path\"]}",
          tool_write_file },
        { "read_file", "Returns the first 255 bytes of path.",
          "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}",
          tool_read_file },
        { "inet", "Opens an AF_INET socket.", SCHEMA_NONE, tool_inet },
        { "whoami", "Returns the server's uid and gid.", SCHEMA_NONE, tool_whoami },
        { "alloc", "Allocates and touches mb megabytes, and keeps them.",
          "{\"type\":\"object\",\"properties\":{\"mb\":{\"type\":\"integer\"}},\"required\":[\"mb\"]}",
          tool_alloc },
        { "fork", "Forks n children that outlive SIGTERM; a refused fork ends the server (status 1).",
          "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}",
          tool_fork },
        { "identity", "Returns the server's uid, gid, groups and working directory.", SCHEMA_NONE, tool_identity },
        { "remember", "Keeps its text argument if given; returns what it keeps and the server's pid.",
          "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}", tool_remember },
};

static json_object *tool_entry(const char *name, const char *description, const char *schema) {
        json_object *t = json_object_new_object();

        json_object_object_add(t, "name", json_object_new_string(name));
        json_object_object_add(t, "description", json_object_new_string(description));
        json_object_object_add(t, "inputSchema", json_tokener_parse(schema));
        return t;
}

static json_object *all_tools(void) {
        json_object *a = json_object_new_array();
        char name[32], description[64];

        for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
                json_object_array_add(a, tool_entry(tools[i].name, tools[i].description, tools[i].schema));
        for (size_t i = 0; arg_probe_tools && i < sizeof(probe_tools) / sizeof(probe_tools[0]); i++)
                json_object_array_add(a, tool_entry(probe_tools[i].name, probe_tools[i].description, probe_tools[i].schema));
        for (unsigned k = 1; k <= arg_tools; k++) {
                snprintf(name, sizeof(name), "tool_%u", k);
                snprintf(description, sizeof(description), "Synthetic tool %u; returns its text argument.", k);
                json_object_array_add(a, tool_entry(name, description, SCHEMA_TEXT));
        }
        if (late_tool_added)
                json_object_array_add(a, tool_entry("late_tool", "Added after start; returns its text argument.",
                                                    SCHEMA_TEXT));
        return a;
}

static tool_fn find_tool(const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
                if (strcmp(tools[i].name, name) == 0)
                        return tools[i].call;
        for (size_t i = 0; arg_probe_tools && i < sizeof(probe_tools) / sizeof(probe_tools[0]); i++)
                if (strcmp(probe_tools[i].name, name) == 0)
                        return probe_tools[i].call;
        if (synthetic_index(name, "tool_", arg_tools) > 0 || (late_tool_added && strcmp(name, "late_tool") == 0))
                return tool_echo;
        return NULL;
}

static json_object *all_prompts(void) {
        json_object *a = json_object_new_array(), *p, *args, *arg;
        char name[32];

        p = json_object_new_object();
        json_object_object_add(p, "name", json_object_new_string("greeting"));
        json_object_object_add(p, "description", json_object_new_string("Asks for a friendly greeting."));
        arg = json_object_new_object();
        json_object_object_add(arg, "name", json_object_new_string("name"));
        json_object_object_add(arg, "description", json_object_new_string("Who to greet"));
        json_object_object_add(arg, "required", json_object_new_boolean(true));
        args = json_object_new_array();
        json_object_array_add(args, arg);
        json_object_object_add(p, "arguments", args);
        json_object_array_add(a, p);
        for (unsigned k = 1; k <= arg_prompts; k++) {
                snprintf(name, sizeof(name), "prompt_%u", k);
                p = json_object_new_object();
                json_object_object_add(p, "name", json_object_new_string(name));
                json_object_object_add(p, "description", json_object_new_string("A synthetic prompt."));
                json_object_array_add(a, p);
        }
        return a;
}

static json_object *resource_entry(const char *uri, const char *name, const char *description) {
        json_object *r = json_object_new_object();

        json_object_object_add(r, "uri", json_object_new_string(uri));
        json_object_object_add(r, "name", json_object_new_string(name));
        json_object_object_add(r, "description", json_object_new_string(description));
        json_object_object_add(r, "mimeType", json_object_new_string("text/plain"));
        return r;
}

static json_object *all_resources(void) {
        json_object *a = json_object_new_array();
        char uri[64], name[32];

        json_object_array_add(a, resource_entry("demo://readme", "readme", "About this demo server."));
        for (unsigned k = 1; k <= arg_resources; k++) {
                snprintf(uri, sizeof(uri), "demo://res/%u", k);
                snprintf(name, sizeof(name), "res_%u", k);
                json_object_array_add(a, resource_entry(uri, name, "A synthetic resource."));
        }
        return a;
}

static json_object *all_templates(void) {
        json_object *a = json_object_new_array(), *t = json_object_new_object();

        json_object_object_add(t, "uriTemplate", json_object_new_string("demo://item/{id}"));
        json_object_object_add(t, "name", json_object_new_string("item"));
        json_object_object_add(t, "description", json_object_new_string("An item, by id."));
        json_object_object_add(t, "mimeType", json_object_new_string("text/plain"));
        json_object_array_add(a, t);
        return a;
}

/* ---- methods ---- */

/* Answers a list method with one page of all; the cursor is the decimal offset. Takes
 * ownership of all. */
static void send_page(json_object *id, json_object *params, const char *key, json_object *all) {
        size_t n = json_object_array_length(all), from = 0, to;
        const char *cursor = get_string(params, "cursor");
        json_object *page, *result;
        char next[32];

        if (cursor) {
                unsigned long long v;
                char *end;

                errno = 0;
                v = strtoull(cursor, &end, 10);
                if (errno != 0 || end == cursor || *end != '\0' || v > n) {
                        json_object_put(all);
                        send_error(id, ERR_INVALID_PARAMS, "invalid cursor");
                        return;
                }
                from = (size_t)v;
        }
        to = arg_page_size == 0 || n - from <= arg_page_size ? n : from + arg_page_size;
        page = json_object_new_array_ext((int)(to - from));
        for (size_t i = from; i < to; i++)
                json_object_array_add(page, json_object_get(json_object_array_get_idx(all, i)));
        json_object_put(all);

        result = json_object_new_object();
        json_object_object_add(result, key, page);
        if (to < n) {
                snprintf(next, sizeof(next), "%zu", to);
                json_object_object_add(result, "nextCursor", json_object_new_string(next));
        }
        send_result(id, result);
}

static const char *pick_protocol_version(json_object *params) {
        const char *asked = get_string(params, "protocolVersion");

        if (arg_protocol_version)
                return arg_protocol_version;
        for (size_t i = 0; asked && i < sizeof(supported_versions) / sizeof(supported_versions[0]); i++)
                if (strcmp(asked, supported_versions[i]) == 0)
                        return supported_versions[i];
        return LATEST_PROTOCOL_VERSION;
}

/* resources also says whether it takes subscriptions (--subscribe). */
static json_object *capability(bool resources) {
        json_object *c = json_object_new_object();

        if (resources)
                json_object_object_add(c, "subscribe", json_object_new_boolean(arg_subscribe));
        json_object_object_add(c, "listChanged", json_object_new_boolean(true));
        return c;
}

static json_object *server_capabilities(void) {
        json_object *caps = json_object_new_object();

        if (!arg_no_tools)
                json_object_object_add(caps, "tools", capability(false));
        if (!arg_no_prompts)
                json_object_object_add(caps, "prompts", capability(false));
        if (!arg_no_resources)
                json_object_object_add(caps, "resources", capability(true));
        json_object_object_add(caps, "logging", json_object_new_object());
        return caps;
}

static json_object *server_info(void) {
        json_object *info = json_object_new_object();

        json_object_object_add(info, "name", json_object_new_string(SERVER_NAME));
        json_object_object_add(info, "version", json_object_new_string("1"));
        return info;
}

static void method_initialize(json_object *id, json_object *params) {
        json_object *result, *client_caps = NULL;

        if (arg_exit_during_init >= 0) {
                fprintf(stderr, "exiting during initialize with %d\n", arg_exit_during_init);
                exit(arg_exit_during_init);
        }
        if (arg_slow_start_ms > 0)
                sleep_ms(arg_slow_start_ms);
        json_object_object_get_ex(params, "capabilities", &client_caps);
        json_object_put(client_capabilities);
        client_capabilities = json_object_get(client_caps);

        result = json_object_new_object();
        json_object_object_add(result, "protocolVersion", json_object_new_string(pick_protocol_version(params)));
        json_object_object_add(result, "capabilities", server_capabilities());
        json_object_object_add(result, "serverInfo", server_info());
        if (arg_instructions && arg_instructions[0])
                json_object_object_add(result, "instructions", json_object_new_string(arg_instructions));
        send_result(id, result);
}

/* The modern era's description of the server (server/discover). */
static void method_discover(json_object *id, json_object *params) {
        json_object *result = json_object_new_object(), *versions = json_object_new_array(), *meta = json_object_new_object();

        json_object_array_add(versions, json_object_new_string(MODERN_PROTOCOL_VERSION));
        json_object_object_add(result, "supportedVersions", versions);
        json_object_object_add(result, "capabilities", server_capabilities());
        json_object_object_add(meta, "io.modelcontextprotocol/serverInfo", server_info());
        json_object_object_add(result, "_meta", meta);
        if (arg_instructions && arg_instructions[0])
                json_object_object_add(result, "instructions", json_object_new_string(arg_instructions));
        send_result(id, result);
}

/* The legacy ones' answers to server/discover; true when it was answered here (or not at
 * all, on purpose). */
static bool legacy_discover(json_object *id) {
        if (discover_mode("invalid-params")) {
                send_error(id, ERR_INVALID_PARAMS, "Invalid params");
                return true;
        }
        if (discover_mode("silent")) {
                fprintf(stderr, "ignoring server/discover\n");
                return true;
        }
        if (discover_mode("exit")) {
                fprintf(stderr, "exiting on server/discover\n");
                exit(1);
        }
        return false;
}

/* A modern server serves only requests whose _meta carries the modern era's fields (the
 * specification: -32602 otherwise); initialize and ping are no methods of its era. */
static bool modern_request_ok(const char *method, json_object *id, json_object *params) {
        json_object *meta = NULL, *v = NULL, *caps = NULL;

        if (strcmp(method, "initialize") == 0 || strcmp(method, "ping") == 0) {
                fprintf(stderr, "refused %s: not of MCP %s\n", method, MODERN_PROTOCOL_VERSION);
                send_error(id, ERR_METHOD_NOT_FOUND, "Method not found (this server speaks only MCP " MODERN_PROTOCOL_VERSION ")");
                return false;
        }
        if (!json_object_object_get_ex(params, "_meta", &meta) ||
            !json_object_object_get_ex(meta, "io.modelcontextprotocol/protocolVersion", &v) ||
            !json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), MODERN_PROTOCOL_VERSION) != 0 ||
            !json_object_object_get_ex(meta, "io.modelcontextprotocol/clientCapabilities", &caps) ||
            !json_object_is_type(caps, json_type_object)) {
                fprintf(stderr, "refused %s without the modern _meta\n", method);
                send_error(id, ERR_INVALID_PARAMS, "Invalid params: _meta must name protocolVersion " MODERN_PROTOCOL_VERSION
                                                   " and clientCapabilities");
                return false;
        }
        json_object_put(client_capabilities);
        client_capabilities = json_object_get(caps);
        return true;
}

static void method_ping(json_object *id, json_object *params) {
        /* Past the limit the server looks hung to a health check, yet still does its work. */
        if (arg_ping_fail_after >= 0 && n_pings >= arg_ping_fail_after)
                return;
        n_pings++;
        send_result(id, json_object_new_object());
}

static void method_tools_list(json_object *id, json_object *params) {
        send_page(id, params, "tools", all_tools());
        if (arg_close_stdout && !stdout_closed) {
                fprintf(stderr, "closing stdout\n");
                (void)close(STDOUT_FILENO);
                stdout_closed = true;
        }
}

static void method_tools_call(json_object *id, json_object *params) {
        const char *name = get_string(params, "name");
        tool_fn call = find_tool(name);
        json_object *args = NULL;

        if (!call) {
                send_error(id, ERR_INVALID_PARAMS, "unknown tool");
                return;
        }
        json_object_object_get_ex(params, "arguments", &args);
        call(id, params, args);
}

static void method_prompts_list(json_object *id, json_object *params) {
        send_page(id, params, "prompts", all_prompts());
}

static json_object *prompt_result(const char *description, const char *text) {
        json_object *result = json_object_new_object(), *messages = json_object_new_array(),
                    *message = json_object_new_object(), *content = json_object_new_object();

        json_object_object_add(content, "type", json_object_new_string("text"));
        json_object_object_add(content, "text", json_object_new_string(text));
        json_object_object_add(message, "role", json_object_new_string("user"));
        json_object_object_add(message, "content", content);
        json_object_array_add(messages, message);
        json_object_object_add(result, "description", json_object_new_string(description));
        json_object_object_add(result, "messages", messages);
        return result;
}

static void method_prompts_get(json_object *id, json_object *params) {
        const char *name = get_string(params, "name"), *who;
        json_object *args = NULL;
        unsigned k;
        char text[512];

        json_object_object_get_ex(params, "arguments", &args);
        if (name && strcmp(name, "greeting") == 0) {
                who = get_string(args, "name");
                if (!who) {
                        send_error(id, ERR_INVALID_PARAMS, "argument 'name' is required");
                        return;
                }
                snprintf(text, sizeof(text), "Please greet %s warmly.", who);
                send_result(id, prompt_result("A friendly greeting", text));
                return;
        }
        k = synthetic_index(name, "prompt_", arg_prompts);
        if (k == 0) {
                send_error(id, ERR_INVALID_PARAMS, "unknown prompt");
                return;
        }
        snprintf(text, sizeof(text), "This is synthetic prompt %u.", k);
        send_result(id, prompt_result("A synthetic prompt", text));
}

static void method_resources_list(json_object *id, json_object *params) {
        send_page(id, params, "resources", all_resources());
}

static void method_resources_templates_list(json_object *id, json_object *params) {
        send_page(id, params, "resourceTemplates", all_templates());
}

static void send_resource(json_object *id, const char *uri, const char *text) {
        json_object *result = json_object_new_object(), *contents = json_object_new_array(),
                    *c = json_object_new_object();

        json_object_object_add(c, "uri", json_object_new_string(uri));
        json_object_object_add(c, "mimeType", json_object_new_string("text/plain"));
        json_object_object_add(c, "text", json_object_new_string(text));
        json_object_array_add(contents, c);
        json_object_object_add(result, "contents", contents);
        send_result(id, result);
}

static void method_resources_read(json_object *id, json_object *params) {
        static const char readme[] =
                "This is mcpvisor's demo server. Its tools: echo, add, sleep, fail, crash, log, env, ask, notify and "
                "client_capabilities.\n";
        static const char item_prefix[] = "demo://item/";
        const char *uri = get_string(params, "uri");
        json_object *data;
        unsigned k;
        char text[512];

        if (!uri) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'uri' is required");
                return;
        }
        if (strcmp(uri, "demo://readme") == 0) {
                send_resource(id, uri, readme);
                return;
        }
        k = synthetic_index(uri, "demo://res/", arg_resources);
        if (k > 0) {
                snprintf(text, sizeof(text), "This is synthetic resource %u.\n", k);
                send_resource(id, uri, text);
                return;
        }
        if (strncmp(uri, item_prefix, strlen(item_prefix)) == 0 && uri[strlen(item_prefix)] != '\0') {
                snprintf(text, sizeof(text), "This is item %s.\n", uri + strlen(item_prefix));
                send_resource(id, uri, text);
                return;
        }
        data = json_object_new_object();
        json_object_object_add(data, "uri", json_object_new_string(uri));
        send_error_data(id, ERR_RESOURCE_NOT_FOUND, "Resource not found", data);
}

static struct subscription *find_subscription(const char *uri) {
        for (size_t i = 0; i < MAX_SUBSCRIPTIONS; i++)
                if (subscriptions[i].uri && strcmp(subscriptions[i].uri, uri) == 0)
                        return &subscriptions[i];
        return NULL;
}

static void subscription_free(struct subscription *sub) {
        free(sub->uri);
        *sub = (struct subscription){};
}

/* Every subscribe is logged, even a repeated one, so a test can count what reached us. */
static void method_resources_subscribe(json_object *id, json_object *params) {
        const char *uri = get_string(params, "uri");
        struct subscription *sub;

        if (!uri) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'uri' is required");
                return;
        }
        fprintf(stderr, "subscribed %s\n", uri);
        sub = subscribe_uri(uri);
        if (!sub) {
                send_error(id, ERR_SERVER, "too many subscriptions");
                return;
        }
        send_result(id, json_object_new_object());
}

/* uri updated every UPDATE_INTERVAL_MS from now on; NULL when there is no room. */
static struct subscription *subscribe_uri(const char *uri) {
        struct subscription *sub = find_subscription(uri);

        if (!sub) {
                for (size_t i = 0; i < MAX_SUBSCRIPTIONS && !sub; i++)
                        if (!subscriptions[i].uri)
                                sub = &subscriptions[i];
                if (!sub)
                        return NULL;
                sub->uri = strdup(uri);
                if (!sub->uri) {
                        fprintf(stderr, "out of memory\n");
                        exit(EXIT_FAILURE);
                }
        }
        sub->next_update = now_ms() + UPDATE_INTERVAL_MS;
        return sub;
}

static void method_resources_unsubscribe(json_object *id, json_object *params) {
        const char *uri = get_string(params, "uri");
        struct subscription *sub;

        if (!uri) {
                send_error(id, ERR_INVALID_PARAMS, "argument 'uri' is required");
                return;
        }
        fprintf(stderr, "unsubscribed %s\n", uri);
        sub = find_subscription(uri);
        if (sub)
                subscription_free(sub);
        send_result(id, json_object_new_object());
}

/* ---- subscriptions/listen ---- */

static bool listening_to(const struct listen *l, const char *uri) {
        for (size_t i = 0; l->uris && i < json_object_array_length(l->uris); i++)
                if (strcmp(json_object_get_string(json_object_array_get_idx(l->uris, i)), uri) == 0)
                        return true;
        return false;
}

/* A modern server notifies on its listens alone: each that asked for it gets its copy,
 * under its id. True when the modern era took it (even if no listen wanted it). */
static bool listen_fan_out(const char *method, json_object *params) {
        bool tools_changed = strcmp(method, "notifications/tools/list_changed") == 0;
        bool update = strcmp(method, "notifications/resources/updated") == 0;
        const char *uri = update ? get_string(params, "uri") : NULL;

        if (!discover_mode("modern") || (!tools_changed && !update))
                return false;
        for (size_t i = 0; i < MAX_LISTENS; i++) {
                json_object *p, *meta, *m;
                if (!listens[i].id || (tools_changed && !listens[i].tools) || (update && (!uri || !listening_to(&listens[i], uri))))
                        continue;
                p = NULL;
                if (!params || json_object_deep_copy(params, &p, NULL) < 0)
                        p = json_object_new_object();
                meta = json_object_new_object();
                json_object_object_add(meta, "io.modelcontextprotocol/subscriptionId", json_object_get(listens[i].id));
                json_object_object_add(p, "_meta", meta);
                m = json_object_new_object();
                json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
                json_object_object_add(m, "method", json_object_new_string(method));
                json_object_object_add(m, "params", p);
                send_message(m);
        }
        json_object_put(params);
        return true;
}

static void method_subscriptions_listen(json_object *id, json_object *params) {
        json_object *want = NULL, *v, *ack, *honoured, *meta;
        struct listen *l = NULL;

        if (!discover_mode("modern") || arg_refuse_listen) {
                fprintf(stderr, "refused subscriptions/listen\n");
                send_error(id, ERR_METHOD_NOT_FOUND, "Method not found");
                return;
        }
        for (size_t i = 0; i < MAX_LISTENS && !l; i++)
                if (!listens[i].id)
                        l = &listens[i];
        if (!l) {
                send_error(id, ERR_SERVER, "too many listens");
                return;
        }
        json_object_object_get_ex(params, "notifications", &want);
        honoured = json_object_new_object();
        *l = (struct listen){ .id = json_object_get(id), .uris = json_object_new_array(),
                              .end_at = arg_listen_ends_after_ms >= 0 ? now_ms() + (uint64_t)arg_listen_ends_after_ms : 0 };
        if (!arg_no_tools && json_object_object_get_ex(want, "toolsListChanged", &v) && json_object_get_boolean(v)) {
                l->tools = true;
                json_object_object_add(honoured, "toolsListChanged", json_object_new_boolean(true));
        }
        if (arg_subscribe && !arg_no_resources && json_object_object_get_ex(want, "resourceSubscriptions", &v))
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        const char *uri = json_object_get_string(json_object_array_get_idx(v, i));
                        if (uri && subscribe_uri(uri))
                                json_object_array_add(l->uris, json_object_new_string(uri));
                }
        if (json_object_array_length(l->uris) > 0)
                json_object_object_add(honoured, "resourceSubscriptions", json_object_get(l->uris));
        fprintf(stderr, "listen %s opened %s\n", json_object_to_json_string(id), log_json(honoured));
        ack = json_object_new_object();
        meta = json_object_new_object();
        json_object_object_add(meta, "io.modelcontextprotocol/subscriptionId", json_object_get(id));
        json_object_object_add(ack, "_meta", meta);
        json_object_object_add(ack, "notifications", honoured);
        send_notification("notifications/subscriptions/acknowledged", ack);
        /* what initialized arms for a legacy client: a listen is when a modern one hears */
        if (l->tools && arg_list_changed_after_ms >= 0 && !list_changed_armed) {
                list_changed_armed = true;
                list_changed_at = (int64_t)(now_ms() + (uint64_t)arg_list_changed_after_ms);
        }
}

/* A listen ends: its URIs no other listen holds are no longer updated. */
static void listen_free(struct listen *l) {
        for (size_t i = 0; i < json_object_array_length(l->uris); i++) {
                const char *uri = json_object_get_string(json_object_array_get_idx(l->uris, i));
                bool held = false;
                for (size_t k = 0; k < MAX_LISTENS; k++)
                        held |= &listens[k] != l && listens[k].id && listening_to(&listens[k], uri);
                if (!held && find_subscription(uri))
                        subscription_free(find_subscription(uri));
        }
        json_object_put(l->id);
        json_object_put(l->uris);
        *l = (struct listen){ 0 };
}

/* notifications/cancelled for a listen: true if it named one. */
static bool listen_cancelled(json_object *request_id) {
        for (size_t i = 0; i < MAX_LISTENS; i++)
                if (listens[i].id && json_object_equal(listens[i].id, request_id)) {
                        fprintf(stderr, "listen %s cancelled\n", json_object_to_json_string(request_id));
                        listen_free(&listens[i]);
                        return true;
                }
        return false;
}

/* --listen-ends-after-ms: the server ends a listen gracefully, a result under its id (or,
 * --listen-ends-with-error, an error, as a stream cut short is told). */
static void listen_end(struct listen *l) {
        json_object *result = json_object_new_object(), *meta = json_object_new_object();

        fprintf(stderr, "listen %s ended\n", json_object_to_json_string(l->id));
        if (arg_listen_ends_with_error) {
                json_object_put(result);
                json_object_put(meta);
                send_error(l->id, ERR_SERVER, "listen dropped");
                listen_free(l);
                return;
        }
        json_object_object_add(meta, "io.modelcontextprotocol/subscriptionId", json_object_get(l->id));
        json_object_object_add(result, "resultType", json_object_new_string("complete"));
        json_object_object_add(result, "_meta", meta);
        send_result(l->id, result);
        listen_free(l);
}

static void method_logging_set_level(json_object *id, json_object *params) {
        const char *level = get_string(params, "level");

        for (unsigned i = 0; level && i < sizeof(log_levels) / sizeof(log_levels[0]); i++)
                if (strcmp(level, log_levels[i]) == 0) {
                        fprintf(stderr, "log level %s\n", level);
                        min_log_level = i;
                        send_result(id, json_object_new_object());
                        return;
                }
        send_error(id, ERR_INVALID_PARAMS, "unknown log level");
}

enum capability_kind { CAP_NONE, CAP_TOOLS, CAP_PROMPTS, CAP_RESOURCES, CAP_SUBSCRIBE };

struct method {
        const char *name;
        void (*handler)(json_object *id, json_object *params);
        enum capability_kind cap; /* the --no-* option that turns the method off */
};

static const struct method methods[] = {
        { "initialize", method_initialize, CAP_NONE },
        { "ping", method_ping, CAP_NONE },
        { "tools/list", method_tools_list, CAP_TOOLS },
        { "tools/call", method_tools_call, CAP_TOOLS },
        { "prompts/list", method_prompts_list, CAP_PROMPTS },
        { "prompts/get", method_prompts_get, CAP_PROMPTS },
        { "resources/list", method_resources_list, CAP_RESOURCES },
        { "resources/templates/list", method_resources_templates_list, CAP_RESOURCES },
        { "resources/read", method_resources_read, CAP_RESOURCES },
        { "resources/subscribe", method_resources_subscribe, CAP_SUBSCRIBE },
        { "resources/unsubscribe", method_resources_unsubscribe, CAP_SUBSCRIBE },
        { "logging/setLevel", method_logging_set_level, CAP_NONE },
        { "subscriptions/listen", method_subscriptions_listen, CAP_NONE },
};

static bool capability_off(enum capability_kind cap) {
        return (cap == CAP_TOOLS && arg_no_tools) || (cap == CAP_PROMPTS && arg_no_prompts) ||
               (cap == CAP_RESOURCES && arg_no_resources) ||
               (cap == CAP_SUBSCRIBE && (arg_no_resources || !arg_subscribe));
}

/* A legacy server (every mode but --discover modern) says on stderr which of the modern
 * era's members a request's _meta names: none should reach it but at the probe, where
 * the modern era's own server/discover carries them. */
static void note_modern_meta(const char *method, json_object *params) {
        static const char prefix[] = "io.modelcontextprotocol/";
        json_object *meta;

        if (discover_mode("modern") || strcmp(method, "server/discover") == 0 ||
            !json_object_object_get_ex(params, "_meta", &meta) || !json_object_is_type(meta, json_type_object))
                return;
        json_object_object_foreach(meta, key, value) {
                (void)value;
                if (strncmp(key, prefix, sizeof prefix - 1) == 0)
                        fprintf(stderr, "legacy server got _meta %s on %s\n", key, method);
        }
}

static void handle_request(const char *method, json_object *id, json_object *params) {
        note_modern_meta(method, params);
        if (strcmp(method, "server/discover") == 0 && legacy_discover(id))
                return;
        if (discover_mode("modern") && !modern_request_ok(method, id, params))
                return;
        if (strcmp(method, "server/discover") == 0 && discover_mode("modern")) {
                method_discover(id, params);
                return;
        }
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                if (strcmp(methods[i].name, method) == 0 && !capability_off(methods[i].cap)) {
                        methods[i].handler(id, params);
                        return;
                }
        /* the era's probe, asked of every server at its start, is no news worth a line */
        if (strcmp(method, "server/discover") != 0)
                fprintf(stderr, "unknown request %s\n", method);
        send_error(id, ERR_METHOD_NOT_FOUND, "Method not found");
}

static void notification_initialized(void) {
        if (arg_ask_at_start && !asked_at_start) {
                asked_at_start = true;
                ask("start-1", NULL, arg_ask_at_start, json_object_new_object(), -1, 0);
        }
        if (arg_list_changed_after_ms < 0 || list_changed_armed)
                return;
        list_changed_armed = true;
        list_changed_at = (int64_t)(now_ms() + (uint64_t)arg_list_changed_after_ms);
}

static void notification_cancelled(json_object *params) {
        json_object *request_id;

        if (!json_object_object_get_ex(params, "requestId", &request_id) || listen_cancelled(request_id))
                return;
        for (size_t i = 0; i < MAX_JOBS; i++)
                if (jobs[i].id && json_object_equal(jobs[i].id, request_id)) {
                        fprintf(stderr, "cancelled request %s\n", json_object_to_json_string(request_id));
                        job_free(&jobs[i]);
                }
        /* An ask's call cancelled: its answer, should it still come, is unexpected; an afterMs
         * ask goes on. */
        for (size_t i = 0; i < MAX_ASKS; i++)
                if (asks[i].call_id && asks[i].send_at && json_object_equal(asks[i].call_id, request_id))
                        fprintf(stderr, "cancelled request %s, going on with %s\n", json_object_to_json_string(request_id),
                                asks[i].request_id);
                else if (asks[i].call_id && json_object_equal(asks[i].call_id, request_id)) {
                        fprintf(stderr, "cancelled request %s, forgetting %s\n",
                                json_object_to_json_string(request_id), asks[i].request_id);
                        ask_free(&asks[i]);
                }
}

/* Progress on one of our asks, from the client: logged, nothing more. */
static void notification_progress(json_object *params) {
        json_object *token = NULL;
        bool pending = false;

        json_object_object_get_ex(params, "progressToken", &token);
        for (size_t i = 0; i < MAX_ASKS && token; i++)
                if (asks[i].progress_token && json_object_equal(asks[i].progress_token, token))
                        pending = true;
        fprintf(stderr, "progress %s%s\n", log_json(params), pending ? "" : " for no pending ask");
}

/* --follow-roots: the client says its roots changed; ask for them again. */
static void notification_roots_changed(void) {
        char request_id[32];

        if (!arg_follow_roots)
                return;
        snprintf(request_id, sizeof(request_id), "roots-%lu", ++n_roots_asks);
        if (!ask(request_id, NULL, "roots/list", json_object_new_object(), -1, 0))
                fprintf(stderr, "too many asks pending\n");
}

static void handle_notification(const char *method, json_object *params) {
        if (strcmp(method, "notifications/initialized") == 0)
                notification_initialized();
        else if (strcmp(method, "notifications/cancelled") == 0)
                notification_cancelled(params);
        else if (strcmp(method, "notifications/progress") == 0)
                notification_progress(params);
        else
                /* None of our business, but a test may want to know it came. */
                fprintf(stderr, "notification %s %s\n", method, params ? log_json(params) : "{}");
        if (strcmp(method, "notifications/roots/list_changed") == 0)
                notification_roots_changed();
}

/* ---- input ---- */

static bool only_whitespace(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
                        return false;
        return true;
}

/* One JSON value filling the whole line. json-c returns the JSON null as NULL, hence the
 * separate success flag. */
static bool parse_json(const char *line, size_t len, json_object **ret) {
        json_object *obj;
        size_t end;

        json_tokener_reset(tokener);
        obj = json_tokener_parse_ex(tokener, line, (int)len);
        end = json_tokener_get_parse_end(tokener);
        if (!obj && json_tokener_get_error(tokener) == json_tokener_continue) {
                /* A bare number or literal is complete only once something follows it. */
                obj = json_tokener_parse_ex(tokener, " ", 1);
                end = len;
        }
        if (json_tokener_get_error(tokener) != json_tokener_success ||
            (end < len && !only_whitespace(line + end, len - end))) {
                json_object_put(obj);
                return false;
        }
        *ret = obj;
        return true;
}

static bool valid_id(json_object *id) {
        return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

static bool is_response(json_object *m) {
        return json_object_object_get_ex(m, "result", NULL) || json_object_object_get_ex(m, "error", NULL);
}

static void handle_message(json_object *m) {
        const char *version = get_string(m, "jsonrpc"), *method = get_string(m, "method");
        json_object *id = NULL, *params = NULL;
        bool has_id = json_object_object_get_ex(m, "id", &id);

        json_object_object_get_ex(m, "params", &params);
        if (!version || strcmp(version, "2.0") != 0)
                send_error(valid_id(id) ? id : NULL, ERR_INVALID_REQUEST, "Invalid Request");
        else if (method && !has_id)
                handle_notification(method, params);
        else if (method && valid_id(id))
                handle_request(method, id, params);
        else if (method || !has_id || !is_response(m))
                send_error(valid_id(id) ? id : NULL, ERR_INVALID_REQUEST, "Invalid Request");
        else
                handle_answer(m, id);
}

static void handle_line(const char *line, size_t len) {
        json_object *m = NULL;

        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (only_whitespace(line, len))
                return;
        if (arg_never_answer)
                return;
        if (len > INT_MAX || !parse_json(line, len, &m)) {
                send_error(NULL, ERR_PARSE, "Parse error");
                return;
        }
        handle_message(m);
        json_object_put(m);
}

static void consume_lines(void) {
        size_t start = 0;
        char *nl;

        while ((nl = memchr(input.data + input.scanned, '\n', input.len - input.scanned))) {
                size_t end = (size_t)(nl - input.data);

                handle_line(input.data + start, end - start);
                start = end + 1;
                input.scanned = start;
        }
        memmove(input.data, input.data + start, input.len - start);
        input.len -= start;
        input.scanned = input.len;
}

static void cleanup(void) {
        for (size_t i = 0; i < MAX_JOBS; i++)
                if (jobs[i].id)
                        job_free(&jobs[i]);
        for (size_t i = 0; i < MAX_SUBSCRIPTIONS; i++)
                if (subscriptions[i].uri)
                        subscription_free(&subscriptions[i]);
        for (size_t i = 0; i < MAX_ASKS; i++)
                if (asks[i].request_id)
                        ask_free(&asks[i]);
        json_object_put(client_capabilities);
        client_capabilities = NULL;
        free(input.data);
        input = (typeof(input)){};
        if (tokener)
                json_tokener_free(tokener);
        tokener = NULL;
}

static void stdin_eof(void) {
        /* A last line without its newline still counts. */
        if (input.len > 0)
                handle_line(input.data, input.len);
        input.len = input.scanned = 0;
        if (!arg_ignore_stdin_eof)
                exit(EXIT_SUCCESS);
        fprintf(stderr, "stdin closed; staying up until signalled\n");
        stdin_open = false;
}

static void read_input(void) {
        ssize_t n;

        if (input.size - input.len < READ_CHUNK) {
                size_t size = input.size * 2 > input.len + READ_CHUNK ? input.size * 2 : input.len + READ_CHUNK;
                char *p = realloc(input.data, size);

                if (!p) {
                        fprintf(stderr, "out of memory\n");
                        exit(EXIT_FAILURE);
                }
                input.data = p;
                input.size = size;
        }
        n = read(STDIN_FILENO, input.data + input.len, input.size - input.len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n < 0)
                fprintf(stderr, "reading stdin: %s\n", strerror(errno));
        if (n <= 0) {
                stdin_eof();
                return;
        }
        input.len += (size_t)n;
        consume_lines();
}

/* ---- timers ---- */

static uint64_t job_deadline(const struct job *j) {
        uint64_t done = j->start + j->ms;

        return j->progress_token && j->next_progress < done ? j->next_progress : done;
}

static void job_progress(struct job *j, uint64_t now) {
        json_object *p = json_object_new_object();

        json_object_object_add(p, "progressToken", json_object_get(j->progress_token));
        json_object_object_add(p, "progress", json_object_new_int64((int64_t)(now - j->start)));
        json_object_object_add(p, "total", json_object_new_int64((int64_t)j->ms));
        send_notification("notifications/progress", p);
        /* From now, not from the last tick: a late loop does not burst to catch up. */
        j->next_progress = now + PROGRESS_INTERVAL_MS;
}

static void job_run(struct job *j, uint64_t now) {
        json_object *id;
        char text[64];

        if (now < j->start + j->ms) {
                if (j->progress_token && now >= j->next_progress)
                        job_progress(j, now);
                return;
        }
        /* Free the slot first: answering may exit (--exit-after). */
        id = json_object_get(j->id);
        snprintf(text, sizeof(text), "slept %" PRIu64 " ms", j->ms);
        job_free(j);
        send_result(id, text_result(text, false));
        json_object_put(id);
}

static void fire_list_changed(void) {
        list_changed_at = -1;
        late_tool_added = true;
        fprintf(stderr, "added late_tool\n");
        if (!arg_no_tools)
                send_notification("notifications/tools/list_changed", NULL);
}

/* notifications/resources/updated for a subscribed URI, every UPDATE_INTERVAL_MS. */
static void send_update(struct subscription *sub, uint64_t now) {
        json_object *p = json_object_new_object();

        json_object_object_add(p, "uri", json_object_new_string(sub->uri));
        send_notification("notifications/resources/updated", p);
        sub->next_update = now + UPDATE_INTERVAL_MS;
}

/* No answer in time: cancel the ask at the client and answer its call ourselves. */
static void give_up(struct ask *a) {
        json_object *p = json_object_new_object(), *call_id;

        fprintf(stderr, "gave up on %s\n", a->request_id);
        json_object_object_add(p, "requestId", json_object_new_string(a->request_id));
        json_object_object_add(p, "reason", json_object_new_string("demo gave up"));
        send_notification("notifications/cancelled", p);
        /* Free the slot first: answering may exit (--exit-after). */
        call_id = json_object_get(a->call_id);
        ask_free(a);
        if (call_id)
                send_result(call_id, text_result("gave up", false));
        json_object_put(call_id);
}

/* An afterMs ask's time has come; from now on it is an ask like any other. */
static void send_delayed(struct ask *a) {
        char *method = a->method;
        json_object *params = a->params;

        a->method = NULL;
        a->params = NULL;
        a->send_at = 0;
        ask_send(a, method, params);
        free(method);
}

static void run_timers(void) {
        uint64_t now = now_ms();

        for (size_t i = 0; i < MAX_JOBS; i++)
                if (jobs[i].id)
                        job_run(&jobs[i], now);
        for (size_t i = 0; i < MAX_ASKS; i++)
                if (asks[i].send_at && now >= asks[i].send_at)
                        send_delayed(&asks[i]);
        for (size_t i = 0; i < MAX_ASKS; i++)
                if (asks[i].request_id && !asks[i].send_at && now >= asks[i].give_up_at)
                        give_up(&asks[i]);
        for (size_t i = 0; i < MAX_SUBSCRIPTIONS; i++)
                if (subscriptions[i].uri && now >= subscriptions[i].next_update)
                        send_update(&subscriptions[i], now);
        if (list_changed_at >= 0 && now >= (uint64_t)list_changed_at)
                fire_list_changed();
        for (size_t i = 0; i < MAX_LISTENS; i++)
                if (listens[i].id && listens[i].end_at && now >= listens[i].end_at)
                        listen_end(&listens[i]);
        if (arg_flood_stderr == 0)
                flood_lines(FLOOD_BATCH);
}

/* Milliseconds until the next timer is due, for poll(): -1 when none is. */
static int next_timeout(void) {
        uint64_t now = now_ms(), next = UINT64_MAX;

        if (arg_flood_stderr == 0)
                return 0;
        for (size_t i = 0; i < MAX_JOBS; i++)
                if (jobs[i].id && job_deadline(&jobs[i]) < next)
                        next = job_deadline(&jobs[i]);
        for (size_t i = 0; i < MAX_SUBSCRIPTIONS; i++)
                if (subscriptions[i].uri && subscriptions[i].next_update < next)
                        next = subscriptions[i].next_update;
        for (size_t i = 0; i < MAX_ASKS; i++)
                if (asks[i].request_id && (asks[i].send_at ? asks[i].send_at : asks[i].give_up_at) < next)
                        next = asks[i].send_at ? asks[i].send_at : asks[i].give_up_at;
        if (list_changed_at >= 0 && (uint64_t)list_changed_at < next)
                next = (uint64_t)list_changed_at;
        for (size_t i = 0; i < MAX_LISTENS; i++)
                if (listens[i].id && listens[i].end_at && listens[i].end_at < next)
                        next = listens[i].end_at;
        if (next == UINT64_MAX)
                return -1;
        if (next <= now)
                return 0;
        return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

static int main_loop(void) {
        for (;;) {
                struct pollfd pfd = { .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN };

                if (poll(&pfd, 1, next_timeout()) < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "poll: %s\n", strerror(errno));
                        return EXIT_FAILURE;
                }
                if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
                        read_input();
                run_timers();
        }
}

/* ---- start-up ---- */

/* Default dispositions and no blocked signal: a leftover that SIGTERM ends. */
static void default_signals(void) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t all;

        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGPIPE, &sa, NULL);
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
}

/* --linger: what --grandchild-tree's grandchild runs, with an empty environment. With
 * --linger-child-pidfile, it first leaves a child of its own in a session of its own. */
static _Noreturn void linger(void) {
        pid_t pid = arg_linger_child_pidfile ? fork() : 1;
        int r;

        default_signals();
        if (pid < 0)
                fprintf(stderr, "linger: fork: %s\n", strerror(errno));
        if (pid == 0 && setsid() >= 0 && (r = write_pidfile(arg_linger_child_pidfile, getpid())) < 0)
                fprintf(stderr, "linger: %s: %s\n", arg_linger_child_pidfile, strerror(-r));
        for (;;)
                pause();
}

/* Sleeps forever, holding nothing but stderr: the leftover a supervisor must clean up.
 * With --grandchild-tree it becomes a --linger of an empty environment (no MCPVISOR_*
 * mark tells whose it is) with a child of its own in yet another session, whose pid goes
 * to the pidfile's path + ".child". */
static _Noreturn void grandchild(int ready_fd) {
        static char child_pidfile[PATH_MAX];
        char *argv[] = { "demo-server", "--linger", "--linger-child-pidfile", child_pidfile, NULL };
        static char *const envp[] = { NULL };
        int null, r;

        default_signals();
        if ((arg_grandchild_setsid || arg_grandchild_tree) && setsid() < 0) {
                fprintf(stderr, "grandchild: setsid: %s\n", strerror(errno));
                _exit(EXIT_FAILURE);
        }
        /* Off the pipes to the supervisor, so their EOF still means the server is gone. */
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0) {
                fprintf(stderr, "grandchild: /dev/null: %s\n", strerror(errno));
                _exit(EXIT_FAILURE);
        }
        if (null > STDERR_FILENO)
                close(null);
        if (arg_grandchild_pidfile && (r = write_pidfile(arg_grandchild_pidfile, getpid())) < 0) {
                fprintf(stderr, "grandchild: %s: %s\n", arg_grandchild_pidfile, strerror(-r));
                _exit(EXIT_FAILURE);
        }
        if (arg_grandchild_tree) {
                if (arg_grandchild_pidfile)
                        snprintf(child_pidfile, sizeof child_pidfile, "%s.child", arg_grandchild_pidfile);
                else
                        argv[2] = NULL;
                execve("/proc/self/exe", argv, envp); /* closes ready_fd: O_CLOEXEC */
                fprintf(stderr, "grandchild: exec: %s\n", strerror(errno));
                _exit(EXIT_FAILURE);
        }
        close(ready_fd);
        linger();
}

/* --grandchild-tree's middle: stays in our group, its own child leaves the session. */
static _Noreturn void middle_child(int ready_fd) {
        pid_t pid = fork();

        if (pid < 0) {
                fprintf(stderr, "middle child: fork: %s\n", strerror(errno));
                _exit(EXIT_FAILURE);
        }
        if (pid == 0)
                grandchild(ready_fd);
        close(ready_fd);
        linger();
}

/* Returns once the grandchild has written its pidfile, so tests can read it at once. */
static int spawn_grandchild(void) {
        int ready[2];
        pid_t pid;
        char c;

        if (pipe2(ready, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                close(ready[0]);
                close(ready[1]);
                return -errno;
        }
        if (pid == 0) {
                close(ready[0]);
                if (arg_grandchild_tree)
                        middle_child(ready[1]);
                grandchild(ready[1]);
        }
        close(ready[1]);
        while (read(ready[0], &c, 1) < 0 && errno == EINTR)
                ;
        close(ready[0]);
        fprintf(stderr, "started grandchild %d\n", (int)pid);
        return 0;
}

static int start(void) {
        int r;

        if (arg_pidfile && (r = write_pidfile(arg_pidfile, getpid())) < 0) {
                fprintf(stderr, "%s: %s\n", arg_pidfile, strerror(-r));
                return r;
        }
        /* before --stderr's text, so that a test can make that text the last words */
        if (arg_exit_at_start >= 0)
                fprintf(stderr, "exiting at start with %d\n", arg_exit_at_start);
        if (arg_stderr)
                fprintf(stderr, "%s\n", arg_stderr);
        if (arg_long_stderr_line >= 0)
                write_long_line((uint64_t)arg_long_stderr_line);
        if (arg_flood_stderr > 0)
                flood_lines((uint64_t)arg_flood_stderr);
        if ((arg_grandchild_setsid || arg_grandchild_same_group || arg_grandchild_tree) &&
            (r = spawn_grandchild()) < 0) {
                fprintf(stderr, "fork: %s\n", strerror(-r));
                return r;
        }
        /* After the fork: the grandchild keeps the default disposition. */
        if (arg_ignore_sigterm)
                signal(SIGTERM, SIG_IGN);
        if (arg_exit_at_start >= 0)
                exit(arg_exit_at_start);
        return 0;
}

/* ---- command line ---- */

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "A stdio MCP server: mcpvisor's demo server, and on command a misbehaving one for its tests.\n\n"
               "Catalogue:\n"
               "  --tools N                  Add tools tool_1..tool_N (each like echo)\n"
               "  --probe-tools              Add write_file {path, text?}, read_file {path}, inet,\n"
               "                             whoami, alloc {mb}, fork {n} and identity: what the server may\n"
               "                             do where it runs, and as whom (confinement tests); and\n"
               "                             remember {text?}, which keeps TEXT and answers what it\n"
               "                             keeps and its pid (instances)\n"
               "  --prompts N                Add prompts prompt_1..prompt_N\n"
               "  --resources N              Add resources demo://res/1..N\n"
               "  --page-size N              Page lists N items at a time (0: one page)\n"
               "  --instructions TEXT        Instructions in the initialize result\n"
               "  --discover MODE            At server/discover: modern (a 2026-07-28 server only),\n"
               "                             invalid-params, silent or exit (legacy servers)\n"
               "  --protocol-version V       Always answer initialize with version V\n"
               "  --no-tools / --no-prompts / --no-resources\n"
               "                             Leave that capability out\n"
               "  --list-changed-after-ms MS Add late_tool and announce it MS after initialized\n"
               "  --subscribe                Support resources/subscribe: send\n"
               "                             notifications/resources/updated every 200 ms\n"
               "                             for each subscribed URI until unsubscribed\n"
               "  --refuse-listen            Answer subscriptions/listen -32601 (modern)\n"
               "  --listen-ends-after-ms MS  End each subscriptions/listen with a result MS after\n"
               "                             it opened (modern)\n"
               "  --listen-ends-with-error   ...with an error instead (a stream cut short)\n\n"
               "Requests to the client:\n"
               "  tool ask {method, params?, cancelAfterMs?, afterMs?}\n"
               "                             Send request METHOD to the client as \"ask-N\" and\n"
               "                             return its answer's result as JSON text, or an\n"
               "                             isError result \"error CODE: MESSAGE\"; past\n"
               "                             cancelAfterMs, cancel it and return \"gave up\";\n"
               "                             with afterMs, send it that much later, even if\n"
               "                             the call was cancelled meanwhile\n"
               "  tool notify {method, params?}\n"
               "                             Send notification METHOD to the client\n"
               "  tool client_capabilities   Return initialize's params.capabilities as JSON text\n"
               "  --ask-at-start METHOD      Send request METHOD as \"start-1\" after initialized\n"
               "  --follow-roots             Send roots/list as \"roots-N\" on each\n"
               "                             notifications/roots/list_changed\n"
               "  On stderr: \"asked METHOD as ID\", \"answer to ID: RESPONSE\",\n"
               "  \"unexpected answer RESPONSE\", \"gave up on ID\", \"progress PARAMS\" (with\n"
               "  \" for no pending ask\" if no ask has its token), \"notification METHOD PARAMS\"\n"
               "  for other notifications, \"unknown request METHOD\" before each -32601\n\n"
               "Misbehaviour:\n"
               "  --exit-at-start CODE       Exit with CODE once the other start-up actions are done\n"
               "  --exit-during-init CODE    Exit with CODE on initialize, without answering\n"
               "  --slow-start MS            Wait MS before answering initialize\n"
               "  --never-answer             Read everything, answer nothing\n"
               "  --ping-fail-after N        Answer only the first N pings\n"
               "  --exit-after N             Exit after answering N requests...\n"
               "  --exit-code C              ...with status C (default 1)\n"
               "  --ignore-stdin-eof         Stay up after stdin closes\n"
               "  --ignore-sigterm           Ignore SIGTERM\n"
               "  --grandchild-setsid        Leave a sleeping child in a session of its own\n"
               "  --grandchild-same-group    Leave a sleeping child in our process group\n"
               "  --grandchild-tree          Leave a child in our process group whose own child\n"
               "                             leaves the session and clears its environment\n"
               "                             (which leaves a child in a session of its own)\n"
               "  --grandchild-pidfile PATH  The child (with --grandchild-tree, the grandchild)\n"
               "                             writes its pid to PATH (its own child to PATH.child)\n"
               "  --linger                   Do nothing until a signal ends us\n"
               "  --linger-child-pidfile PATH  With --linger: first leave a child in a session\n"
               "                             of its own, which writes its pid to PATH\n"
               "  --pidfile PATH             Write our pid to PATH\n"
               "  --garbage                  Write a non-JSON line before every answer\n"
               "  --close-stdout             Close stdout after the first tools/list answer\n"
               "  --flood-stderr N           Write N lines to stderr at start (0: forever)\n"
               "  --stderr TEXT              Write TEXT to stderr at start\n"
               "  --long-stderr-line BYTES   Write one stderr line of BYTES bytes at start\n"
               "  --help                     Show this help\n",
               program_invocation_short_name);
}

static long parse_number(const char *option, const char *s, long min, long max) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
                fprintf(stderr, "--%s: expected a number from %ld to %ld, got '%s'\n", option, min, max, s);
                exit(2);
        }
        return v;
}

enum {
        OPT_EXIT_AT_START = 0x100,
        OPT_EXIT_DURING_INIT,
        OPT_NEVER_ANSWER,
        OPT_SLOW_START,
        OPT_PING_FAIL_AFTER,
        OPT_EXIT_AFTER,
        OPT_EXIT_CODE,
        OPT_IGNORE_STDIN_EOF,
        OPT_IGNORE_SIGTERM,
        OPT_GRANDCHILD_SETSID,
        OPT_GRANDCHILD_SAME_GROUP,
        OPT_GRANDCHILD_PIDFILE,
        OPT_GRANDCHILD_TREE,
        OPT_LINGER,
        OPT_LINGER_CHILD_PIDFILE,
        OPT_PIDFILE,
        OPT_GARBAGE,
        OPT_CLOSE_STDOUT,
        OPT_FLOOD_STDERR,
        OPT_STDERR,
        OPT_LONG_STDERR_LINE,
        OPT_PROTOCOL_VERSION,
        OPT_NO_TOOLS,
        OPT_NO_PROMPTS,
        OPT_NO_RESOURCES,
        OPT_TOOLS,
        OPT_PROBE_TOOLS,
        OPT_PROMPTS,
        OPT_RESOURCES,
        OPT_PAGE_SIZE,
        OPT_INSTRUCTIONS,
        OPT_LIST_CHANGED_AFTER_MS,
        OPT_SUBSCRIBE,
        OPT_ASK_AT_START,
        OPT_FOLLOW_ROOTS,
        OPT_DISCOVER,
        OPT_REFUSE_LISTEN,
        OPT_LISTEN_ENDS_AFTER_MS,
        OPT_LISTEN_ENDS_WITH_ERROR,
};

static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "exit-at-start", required_argument, NULL, OPT_EXIT_AT_START },
        { "exit-during-init", required_argument, NULL, OPT_EXIT_DURING_INIT },
        { "never-answer", no_argument, NULL, OPT_NEVER_ANSWER },
        { "slow-start", required_argument, NULL, OPT_SLOW_START },
        { "ping-fail-after", required_argument, NULL, OPT_PING_FAIL_AFTER },
        { "exit-after", required_argument, NULL, OPT_EXIT_AFTER },
        { "exit-code", required_argument, NULL, OPT_EXIT_CODE },
        { "ignore-stdin-eof", no_argument, NULL, OPT_IGNORE_STDIN_EOF },
        { "ignore-sigterm", no_argument, NULL, OPT_IGNORE_SIGTERM },
        { "grandchild-setsid", no_argument, NULL, OPT_GRANDCHILD_SETSID },
        { "grandchild-same-group", no_argument, NULL, OPT_GRANDCHILD_SAME_GROUP },
        { "grandchild-pidfile", required_argument, NULL, OPT_GRANDCHILD_PIDFILE },
        { "grandchild-tree", no_argument, NULL, OPT_GRANDCHILD_TREE },
        { "linger", no_argument, NULL, OPT_LINGER },
        { "linger-child-pidfile", required_argument, NULL, OPT_LINGER_CHILD_PIDFILE },
        { "pidfile", required_argument, NULL, OPT_PIDFILE },
        { "garbage", no_argument, NULL, OPT_GARBAGE },
        { "close-stdout", no_argument, NULL, OPT_CLOSE_STDOUT },
        { "flood-stderr", required_argument, NULL, OPT_FLOOD_STDERR },
        { "stderr", required_argument, NULL, OPT_STDERR },
        { "long-stderr-line", required_argument, NULL, OPT_LONG_STDERR_LINE },
        { "protocol-version", required_argument, NULL, OPT_PROTOCOL_VERSION },
        { "no-tools", no_argument, NULL, OPT_NO_TOOLS },
        { "no-prompts", no_argument, NULL, OPT_NO_PROMPTS },
        { "no-resources", no_argument, NULL, OPT_NO_RESOURCES },
        { "tools", required_argument, NULL, OPT_TOOLS },
        { "probe-tools", no_argument, NULL, OPT_PROBE_TOOLS },
        { "prompts", required_argument, NULL, OPT_PROMPTS },
        { "resources", required_argument, NULL, OPT_RESOURCES },
        { "page-size", required_argument, NULL, OPT_PAGE_SIZE },
        { "instructions", required_argument, NULL, OPT_INSTRUCTIONS },
        { "list-changed-after-ms", required_argument, NULL, OPT_LIST_CHANGED_AFTER_MS },
        { "subscribe", no_argument, NULL, OPT_SUBSCRIBE },
        { "ask-at-start", required_argument, NULL, OPT_ASK_AT_START },
        { "follow-roots", no_argument, NULL, OPT_FOLLOW_ROOTS },
        { "discover", required_argument, NULL, OPT_DISCOVER },
        { "refuse-listen", no_argument, NULL, OPT_REFUSE_LISTEN },
        { "listen-ends-after-ms", required_argument, NULL, OPT_LISTEN_ENDS_AFTER_MS },
        { "listen-ends-with-error", no_argument, NULL, OPT_LISTEN_ENDS_WITH_ERROR },
        {}
};

/* Options that take a number; the rest are flags and strings. */
static void set_number_option(int c, const char *name, const char *s) {
        switch (c) {
        case OPT_EXIT_AT_START: arg_exit_at_start = (int)parse_number(name, s, 0, 255); break;
        case OPT_EXIT_DURING_INIT: arg_exit_during_init = (int)parse_number(name, s, 0, 255); break;
        case OPT_EXIT_CODE: arg_exit_code = (int)parse_number(name, s, 0, 255); break;
        case OPT_SLOW_START: arg_slow_start_ms = parse_number(name, s, 0, INT_MAX); break;
        case OPT_PING_FAIL_AFTER: arg_ping_fail_after = parse_number(name, s, 0, LONG_MAX); break;
        case OPT_EXIT_AFTER: arg_exit_after = parse_number(name, s, 1, LONG_MAX); break;
        case OPT_FLOOD_STDERR: arg_flood_stderr = parse_number(name, s, 0, LONG_MAX); break;
        case OPT_LISTEN_ENDS_AFTER_MS: arg_listen_ends_after_ms = parse_number(name, s, 0, INT_MAX); break;
        case OPT_LONG_STDERR_LINE: arg_long_stderr_line = parse_number(name, s, 0, LONG_MAX); break;
        case OPT_TOOLS: arg_tools = (unsigned)parse_number(name, s, 0, MAX_SYNTHETIC); break;
        case OPT_PROBE_TOOLS: arg_probe_tools = true; break;
        case OPT_PROMPTS: arg_prompts = (unsigned)parse_number(name, s, 0, MAX_SYNTHETIC); break;
        case OPT_RESOURCES: arg_resources = (unsigned)parse_number(name, s, 0, MAX_SYNTHETIC); break;
        case OPT_PAGE_SIZE: arg_page_size = (unsigned)parse_number(name, s, 0, MAX_SYNTHETIC); break;
        case OPT_LIST_CHANGED_AFTER_MS: arg_list_changed_after_ms = parse_number(name, s, 0, INT_MAX); break;
        }
}

static void parse_argv(int argc, char *argv[]) {
        int c, option_index;

        while ((c = getopt_long(argc, argv, "h", options, &option_index)) >= 0) {
                switch (c) {
                case 'h': help(); exit(EXIT_SUCCESS);
                case OPT_NEVER_ANSWER: arg_never_answer = true; break;
                case OPT_IGNORE_STDIN_EOF: arg_ignore_stdin_eof = true; break;
                case OPT_IGNORE_SIGTERM: arg_ignore_sigterm = true; break;
                case OPT_GRANDCHILD_SETSID: arg_grandchild_setsid = true; break;
                case OPT_GRANDCHILD_SAME_GROUP: arg_grandchild_same_group = true; break;
                case OPT_GRANDCHILD_PIDFILE: arg_grandchild_pidfile = optarg; break;
                case OPT_GRANDCHILD_TREE: arg_grandchild_tree = true; break;
                case OPT_LINGER: arg_linger = true; break;
                case OPT_LINGER_CHILD_PIDFILE: arg_linger_child_pidfile = optarg; break;
                case OPT_PIDFILE: arg_pidfile = optarg; break;
                case OPT_GARBAGE: arg_garbage = true; break;
                case OPT_CLOSE_STDOUT: arg_close_stdout = true; break;
                case OPT_STDERR: arg_stderr = optarg; break;
                case OPT_PROTOCOL_VERSION: arg_protocol_version = optarg; break;
                case OPT_NO_TOOLS: arg_no_tools = true; break;
                case OPT_NO_PROMPTS: arg_no_prompts = true; break;
                case OPT_NO_RESOURCES: arg_no_resources = true; break;
                case OPT_INSTRUCTIONS: arg_instructions = optarg; break;
                case OPT_SUBSCRIBE: arg_subscribe = true; break;
                case OPT_ASK_AT_START: arg_ask_at_start = optarg; break;
                case OPT_FOLLOW_ROOTS: arg_follow_roots = true; break;
                case OPT_DISCOVER: arg_discover = optarg; break;
                case OPT_REFUSE_LISTEN: arg_refuse_listen = true; break;
                case OPT_LISTEN_ENDS_WITH_ERROR: arg_listen_ends_with_error = true; break;
                case '?': exit(2);
                default: set_number_option(c, options[option_index].name, optarg); break;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
                exit(2);
        }
        if (arg_grandchild_setsid + arg_grandchild_same_group + arg_grandchild_tree > 1) {
                fprintf(stderr, "--grandchild-setsid, --grandchild-same-group and --grandchild-tree exclude each other\n");
                exit(2);
        }
        if (arg_grandchild_pidfile && !arg_grandchild_setsid && !arg_grandchild_same_group && !arg_grandchild_tree) {
                fprintf(stderr, "--grandchild-pidfile needs --grandchild-setsid, --grandchild-same-group or "
                        "--grandchild-tree\n");
                exit(2);
        }
}

int main(int argc, char *argv[]) {
        parse_argv(argc, argv);
        if (arg_linger)
                linger();
        if (start() < 0)
                return EXIT_FAILURE;
        /* MCP tool schemas nest deeply; json-c's default depth of 32 is too shallow. */
        tokener = json_tokener_new_ex(512);
        if (!tokener) {
                fprintf(stderr, "out of memory\n");
                return EXIT_FAILURE;
        }
        atexit(cleanup);
        return main_loop();
}
