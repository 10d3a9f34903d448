/* One MCP client of the soak run: it initializes, sends a mix of requests (with progress
 * tokens, some cancelled), answers the servers' requests, and after its lifetime leaves in
 * one of four ways. Every request it sends is tracked to its fate; an answer twice, for an
 * id it never sent, with another request's content, or progress for a token not in flight
 * is an anomaly, and so is any request still owed an answer when the client is done. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "soak.h"

/* Ids and progress tokens carry the client's serial, so that an answer or a progress that
 * reaches the wrong client is caught. Integers are serial * ID_SPAN + seq. */
#define ID_SPAN 10000000LL

enum phase {
        P_CONNECTING,
        P_INITIALIZING,
        P_RUNNING,
        P_DRAINING,    /* leaving gracefully: no more requests, waits for every answer */
        P_HALF_CLOSED, /* shutdown(SHUT_WR) sent: every answer, then the daemon's EOF */
        P_FLUSHING,    /* closes once its output is written */
};

enum leave { L_GRACEFUL, L_HALF_CLOSE, L_CANCEL, L_ABRUPT };

enum kind {
        K_INIT,
        K_ECHO,
        K_ADD,
        K_SLEEP,
        K_FAIL,
        K_LOG,
        K_NOTIFY,
        K_ASK,
        K_CRASH,
        K_UNKNOWN_TOOL,
        K_TOOLS_LIST,
        K_PROMPTS_LIST,
        K_RESOURCES_LIST,
        K_TEMPLATES_LIST,
        K_PING,
        K_PROMPT_GET,
        K_RESOURCE_READ,
        K_SUBSCRIBE,
        K_SET_LEVEL,
        K_COUNT
};

/* Out of 10000; K_INIT is sent once, never drawn. A crash takes a server down for a restart
 * delay, so it stays rare even at hundreds of requests a second. */
static const struct {
        const char *name;
        unsigned weight;
} kinds[K_COUNT] = {
        [K_INIT] = { "initialize", 0 },
        [K_ECHO] = { "echo", 3000 },
        [K_ADD] = { "add", 1200 },
        [K_SLEEP] = { "sleep", 1800 },
        [K_FAIL] = { "fail", 400 },
        [K_LOG] = { "log", 400 },
        [K_NOTIFY] = { "notify", 300 },
        [K_ASK] = { "ask", 250 },
        [K_CRASH] = { "crash", 1 },
        [K_UNKNOWN_TOOL] = { "unknown tool", 130 },
        [K_TOOLS_LIST] = { "tools/list", 500 },
        [K_PROMPTS_LIST] = { "prompts/list", 200 },
        [K_RESOURCES_LIST] = { "resources/list", 200 },
        [K_TEMPLATES_LIST] = { "resources/templates/list", 100 },
        [K_PING] = { "ping", 600 },
        [K_PROMPT_GET] = { "prompts/get", 400 },
        [K_RESOURCE_READ] = { "resources/read", 350 },
        [K_SUBSCRIBE] = { "resources/subscribe", 50 },
        [K_SET_LEVEL] = { "logging/setLevel", 100 },
};

enum req_state { RS_FREE, RS_PENDING, RS_ANSWERED, RS_CANCELLED, RS_CANCELLED_ANSWERED };

enum ask_method { ASK_ROOTS, ASK_SAMPLING, ASK_ELICITATION, ASK_COUNT };

/* A request to the client, as the ask tool makes the server send it; our answer to it holds
 * the marker, which the tool's result must then show. */
static const struct {
        const char *method;
        const char *params;
        const char *marker;
} asks[ASK_COUNT] = {
        [ASK_ROOTS] = { "roots/list", NULL, "\"name\":\"soak\"" },
        [ASK_SAMPLING] = { "sampling/createMessage",
                           "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],"
                           "\"maxTokens\":5}",
                           "\"model\":\"soak\"" },
        [ASK_ELICITATION] = { "elicitation/create",
                              "{\"message\":\"soak?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}",
                              "decline" },
};

struct request {
        uint8_t state;
        uint8_t kind;
        uint8_t ask;
        bool has_token;
        uint64_t sent_at;
        uint64_t cancel_at; /* 0: not to be cancelled */
};

struct soak_client {
        struct soak *s;
        unsigned serial;
        enum phase phase;
        struct bufferevent *bev;
        struct event *tick;
        bool listed;
        uint64_t leave_at;
        uint64_t deadline;    /* to be initialized, or to be done leaving */
        struct request *reqs; /* by seq; reqs[0] unused */
        unsigned n_reqs, cap;
        unsigned *pending;    /* seqs of RS_PENDING requests */
        unsigned n_pending;
        LIST_ENTRY(soak_client) entry;
};

static void client_destroy(struct soak_client *c);

static json_object *member(json_object *o, const char *key) {
        json_object *v;

        return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* ---- ids and tokens ---- */

static json_object *make_id(const struct soak_client *c, unsigned seq) {
        char text[48];

        if (seq % 2 == 0)
                return json_object_new_int64((int64_t)c->serial * ID_SPAN + seq);
        snprintf(text, sizeof text, "c%u-%u", c->serial, seq);
        return json_object_new_string(text);
}

/* A progress token of ours: strings and integers, not in step with the ids. */
static json_object *make_token(const struct soak_client *c, unsigned seq) {
        char text[48];

        if ((seq / 2) % 2 == 0)
                return json_object_new_int64((int64_t)c->serial * ID_SPAN + seq);
        snprintf(text, sizeof text, "p%u-%u", c->serial, seq);
        return json_object_new_string(text);
}

/* The serial and seq an id or token of ours encodes; false if it is not of that form. */
static bool parse_id(json_object *id, char letter, unsigned *serial, unsigned *seq) {
        if (json_object_is_type(id, json_type_int)) {
                int64_t v = json_object_get_int64(id);
                if (v <= 0)
                        return false;
                *serial = (unsigned)(v / ID_SPAN);
                *seq = (unsigned)(v % ID_SPAN);
                return true;
        }
        if (json_object_is_type(id, json_type_string)) {
                const char *text = json_object_get_string(id);
                int end = 0;
                return text[0] == letter && sscanf(text + 1, "%u-%u%n", serial, seq, &end) == 2 && text[1 + end] == '\0';
        }
        return false;
}

/* ---- sending ---- */

static void send_json(struct soak_client *c, json_object *msg) {
        const char *text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

        bufferevent_write(c->bev, text, strlen(text));
        bufferevent_write(c->bev, "\n", 1);
        json_object_put(msg);
}

static json_object *message(void) {
        json_object *m = json_object_new_object();

        json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
        return m;
}

static const char *pick_server(struct soak_client *c, enum kind kind) {
        struct soak *s = c->s;
        const char *name;

        if (s->solo_owner == c->serial && (kind == K_ASK || soak_chance(s, 0.3)))
                return SOAK_SOLO;
        /* Mostly a server of the config in force; sometimes one that may be gone. */
        do
                name = soak_servers[soak_rand(s) % 4];
        while (!soak_config_has(s->variant, name) && soak_chance(s, 0.9));
        return name;
}

static enum kind pick_kind(struct soak *s) {
        unsigned total = 0, r;

        for (int k = 0; k < K_COUNT; k++)
                total += kinds[k].weight;
        r = (unsigned)(soak_rand(s) % total);
        for (int k = 0; k < K_COUNT; k++) {
                if (r < kinds[k].weight)
                        return (enum kind)k;
                r -= kinds[k].weight;
        }
        return K_ECHO;
}

static unsigned new_request(struct soak_client *c, enum kind kind) {
        if (c->n_reqs + 1 >= c->cap) {
                unsigned cap = c->cap ? c->cap * 2 : 256;
                struct request *bigger = realloc(c->reqs, cap * sizeof *bigger);
                if (!bigger)
                        abort();
                memset(bigger + c->cap, 0, (cap - c->cap) * sizeof *bigger);
                c->reqs = bigger;
                c->cap = cap;
        }
        c->n_reqs++;
        c->reqs[c->n_reqs] = (struct request){ .state = RS_PENDING, .kind = (uint8_t)kind, .sent_at = soak_now_ms() };
        c->pending[c->n_pending++] = c->n_reqs;
        c->s->st.sent++;
        return c->n_reqs;
}

static void remove_pending(struct soak_client *c, unsigned seq) {
        for (unsigned i = 0; i < c->n_pending; i++)
                if (c->pending[i] == seq) {
                        c->pending[i] = c->pending[--c->n_pending];
                        return;
                }
}

static json_object *tool_params(const char *server, const char *tool, json_object *arguments) {
        json_object *p = json_object_new_object();
        char name[96];

        snprintf(name, sizeof name, "%s__%s", server, tool);
        json_object_object_add(p, "name", json_object_new_string(name));
        json_object_object_add(p, "arguments", arguments ? arguments : json_object_new_object());
        return p;
}

static json_object *string_object(const char *key, const char *text) {
        json_object *a = json_object_new_object();

        json_object_object_add(a, key, json_object_new_string(text));
        return a;
}

/* What the echo of request seq must say: no other request's answer can match. */
static void echo_text(const struct soak_client *c, unsigned seq, char *text, size_t size) {
        snprintf(text, size, "soak c%u r%u", c->serial, seq);
}

static json_object *sleep_params(struct soak_client *c, unsigned seq, const char *server) {
        struct soak *s = c->s;
        unsigned ms = 20 + (unsigned)(soak_rand(s) % 1500);
        json_object *args = json_object_new_object(), *p;

        json_object_object_add(args, "ms", json_object_new_int((int)ms));
        p = tool_params(server, "sleep", args);
        if (soak_chance(s, 0.5)) {
                json_object *meta = json_object_new_object();
                json_object_object_add(meta, "progressToken", make_token(c, seq));
                json_object_object_add(p, "_meta", meta);
                c->reqs[seq].has_token = true;
        }
        if (soak_chance(s, 0.25))
                c->reqs[seq].cancel_at = soak_now_ms() + soak_rand(s) % (ms + 100);
        return p;
}

/* The method and params of a request of this kind. */
static const char *build(struct soak_client *c, unsigned seq, enum kind kind, json_object **params) {
        struct soak *s = c->s;
        const char *server = pick_server(c, kind);
        char text[64];
        json_object *a;

        *params = NULL;
        switch (kind) {
        case K_ECHO:
                echo_text(c, seq, text, sizeof text);
                *params = tool_params(server, "echo", string_object("text", text));
                return "tools/call";
        case K_ADD:
                a = json_object_new_object();
                json_object_object_add(a, "a", json_object_new_int64(seq));
                json_object_object_add(a, "b", json_object_new_int64(c->serial));
                *params = tool_params(server, "add", a);
                return "tools/call";
        case K_SLEEP:
                *params = sleep_params(c, seq, server);
                return "tools/call";
        case K_FAIL:
                *params = tool_params(server, "fail", NULL);
                return "tools/call";
        case K_LOG:
                *params = tool_params(server, "log", string_object("text", "soak log line"));
                return "tools/call";
        case K_NOTIFY:
                *params = tool_params(server, "notify", string_object("method", "notifications/soak"));
                return "tools/call";
        case K_ASK:
                c->reqs[seq].ask = (uint8_t)(soak_rand(s) % ASK_COUNT);
                a = string_object("method", asks[c->reqs[seq].ask].method);
                if (asks[c->reqs[seq].ask].params)
                        json_object_object_add(a, "params", json_tokener_parse(asks[c->reqs[seq].ask].params));
                json_object_object_add(a, "cancelAfterMs", json_object_new_int(2000));
                *params = tool_params(server, "ask", a);
                return "tools/call";
        case K_CRASH:
                *params = tool_params(server, "crash", NULL);
                return "tools/call";
        case K_UNKNOWN_TOOL:
                *params = tool_params(server, "no_such_tool", NULL);
                return "tools/call";
        case K_PROMPT_GET:
                snprintf(text, sizeof text, "%s__greeting", server);
                *params = string_object("name", text);
                json_object_object_add(*params, "arguments", string_object("name", "soak"));
                return "prompts/get";
        case K_RESOURCE_READ:
                if (soak_chance(s, 0.5))
                        snprintf(text, sizeof text, "demo://readme");
                else
                        snprintf(text, sizeof text, "demo://item/%u", seq);
                *params = string_object("uri", text);
                return "resources/read";
        case K_SUBSCRIBE:
                snprintf(text, sizeof text, "demo://res/%u", 1 + (unsigned)(soak_rand(s) % 4));
                *params = string_object("uri", text);
                return "resources/subscribe";
        case K_SET_LEVEL:
                *params = string_object("level", soak_chance(s, 0.5) ? "debug" : "warning");
                return "logging/setLevel";
        default:
                return kinds[kind].name;
        }
}

static void send_request(struct soak_client *c, enum kind kind) {
        unsigned seq = new_request(c, kind);
        json_object *m = message(), *params;
        const char *method;

        if (kind == K_INIT) {
                char name[32];

                method = "initialize";
                params = json_tokener_parse("{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"roots\":{},"
                                            "\"sampling\":{},\"elicitation\":{}}}");
                /* The daemon logs it: "initialized by soak-7", to find a client in its log. */
                snprintf(name, sizeof name, "soak-%u", c->serial);
                json_object_object_add(params, "clientInfo", string_object("name", name));
                json_object_object_add(json_object_object_get(params, "clientInfo"), "version",
                                       json_object_new_string("1"));
        } else {
                method = build(c, seq, kind, &params);
        }
        json_object_object_add(m, "id", make_id(c, seq));
        json_object_object_add(m, "method", json_object_new_string(method));
        if (params)
                json_object_object_add(m, "params", params);
        send_json(c, m);
}

static void send_cancel(struct soak_client *c, unsigned seq, const char *reason) {
        json_object *m = message(), *p = json_object_new_object();

        json_object_object_add(p, "requestId", make_id(c, seq));
        json_object_object_add(p, "reason", json_object_new_string(reason));
        json_object_object_add(m, "method", json_object_new_string("notifications/cancelled"));
        json_object_object_add(m, "params", p);
        send_json(c, m);
        c->reqs[seq].state = RS_CANCELLED;
        remove_pending(c, seq);
        c->s->st.cancelled++;
}

static void start_running(struct soak_client *c) {
        json_object *m = message();

        json_object_object_add(m, "method", json_object_new_string("notifications/initialized"));
        send_json(c, m);
        c->phase = P_RUNNING;
        if (c->s->solo_owner == 0)
                c->s->solo_owner = c->serial;
}

/* ---- leaving ---- */

static void count_lost(struct soak_client *c, const char *why) {
        struct soak *s = c->s;
        uint64_t now = soak_now_ms();

        for (unsigned i = 0; i < c->n_pending; i++) {
                const struct request *r = &c->reqs[c->pending[i]];
                s->st.lost++;
                soak_anomaly(s, &s->st.protocol_errors, "client %u: %s r%u (sent %llu ms ago) never answered: %s",
                             c->serial, kinds[r->kind].name, c->pending[i], (unsigned long long)(now - r->sent_at), why);
        }
        c->n_pending = 0;
}

/* Closes once what it wrote has left (a bufferevent freed with output pending drops it).
 * Never frees the client at once: this runs inside the read loop, which still uses it; the
 * next tick does. */
static void close_flushed(struct soak_client *c) {
        c->phase = P_FLUSHING;
        bufferevent_disable(c->bev, EV_READ);
        event_active(c->tick, EV_TIMEOUT, 0);
}

static void maybe_done(struct soak_client *c) {
        if (c->phase == P_DRAINING && c->n_pending == 0)
                close_flushed(c);
}

static void on_read(struct bufferevent *bev, void *userdata);
static void on_event(struct bufferevent *bev, short what, void *userdata);

/* shutdown(SHUT_WR) once the last request has left. */
static void on_written_half_close(struct bufferevent *bev, void *userdata) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
                shutdown(bufferevent_getfd(bev), SHUT_WR);
}

static void leave_graceful(struct soak_client *c) {
        c->s->st.leaves_graceful++;
        c->phase = P_DRAINING;
        maybe_done(c);
}

/* The daemon must answer everything still in flight, then close its side. */
static void leave_half_close(struct soak_client *c) {
        c->s->st.leaves_half_close++;
        c->phase = P_HALF_CLOSED;
        bufferevent_setcb(c->bev, on_read, on_written_half_close, on_event, c);
        on_written_half_close(c->bev, c);
}

static void leave_cancel(struct soak_client *c) {
        c->s->st.leaves_cancel++;
        while (c->n_pending > 0)
                send_cancel(c, c->pending[0], "soak client leaving");
        close_flushed(c);
}

/* Frees c. */
static void leave_abrupt(struct soak_client *c) {
        c->s->st.leaves_abrupt++;
        c->s->st.abandoned += c->n_pending;
        c->n_pending = 0;
        client_destroy(c);
}

static void start_leaving(struct soak_client *c, const char *how) {
        struct soak *s = c->s;

        c->deadline = soak_now_ms() + (uint64_t)(s->opt.drain_timeout_s * 1000);
        if (s->opt.verbose)
                fprintf(stderr, "soak: %.3f s: soak-%u leaves (%s) with %u requests in flight\n",
                        (double)(soak_now_ms() - s->start_ms) / 1000, c->serial, how, c->n_pending);
}

/* True if it freed c. */
static bool leave_randomly(struct soak_client *c) {
        double r = soak_uniform(c->s);

        if (r < 0.4) {
                start_leaving(c, "graceful");
                leave_graceful(c);
        } else if (r < 0.6) {
                start_leaving(c, "half-close");
                leave_half_close(c);
        } else if (r < 0.8) {
                start_leaving(c, "cancelling");
                leave_cancel(c);
        } else {
                start_leaving(c, "abrupt");
                leave_abrupt(c);
                return true;
        }
        return false;
}

/* ---- what arrives ---- */

static const char *result_text(json_object *result) {
        json_object *content = member(result, "content"), *first, *text;

        if (!json_object_is_type(content, json_type_array) || json_object_array_length(content) < 1)
                return NULL;
        first = json_object_array_get_idx(content, 0);
        text = member(first, "text");
        return json_object_is_type(text, json_type_string) ? json_object_get_string(text) : NULL;
}

static void check_result(struct soak_client *c, unsigned seq, json_object *result) {
        struct soak *s = c->s;
        const struct request *r = &c->reqs[seq];
        const char *text = result_text(result);
        char expected[64];

        if (json_object_get_boolean(member(result, "isError"))) {
                s->st.tool_errors++;
                return;
        }
        /* The ask tool's result is our own answer to its request, as JSON text (or "gave up"
         * when that request got no answer in time). */
        if (r->kind == K_ASK && text && text[0] == '{' && !strstr(text, asks[r->ask].marker))
                soak_anomaly(s, &s->st.wrong_answers, "client %u: ask %s r%u answered %s, not our answer (%s)",
                             c->serial, asks[r->ask].method, seq, text, asks[r->ask].marker);
        if (r->kind == K_ASK && text && text[0] == '{')
                s->st.upcalls_completed++;
        if (r->kind == K_ECHO)
                echo_text(c, seq, expected, sizeof expected);
        else if (r->kind == K_ADD)
                snprintf(expected, sizeof expected, "%llu", (unsigned long long)seq + c->serial);
        else
                return;
        if (!text || strcmp(text, expected) != 0)
                soak_anomaly(s, &s->st.wrong_answers, "client %u: %s r%u answered \"%s\", expected \"%s\"", c->serial,
                             kinds[r->kind].name, seq, text ? text : "(no text)", expected);
}

static void on_answer(struct soak_client *c, json_object *msg) {
        struct soak *s = c->s;
        json_object *error = member(msg, "error");
        unsigned serial, seq;
        struct request *r;

        if (!parse_id(member(msg, "id"), 'c', &serial, &seq) || serial != c->serial || seq == 0 || seq > c->n_reqs) {
                soak_anomaly(s, &s->st.unknown_ids, "client %u: an answer for an id it never sent: %s", c->serial,
                             json_object_to_json_string(msg));
                return;
        }
        r = &c->reqs[seq];
        switch (r->state) {
        case RS_PENDING:
                r->state = RS_ANSWERED;
                remove_pending(c, seq);
                if (error) {
                        s->st.errors++;
                        soak_count_error(s, kinds[r->kind].name, json_object_get_int(member(error, "code")),
                                         json_object_get_string(member(error, "message")));
                } else {
                        s->st.results++;
                        check_result(c, seq, member(msg, "result"));
                }
                if (r->kind == K_INIT && c->phase == P_INITIALIZING) {
                        if (!error) {
                                start_running(c);
                                break;
                        }
                        soak_anomaly(s, &s->st.protocol_errors, "client %u: initialize failed: %s", c->serial,
                                     json_object_to_json_string(msg));
                        start_leaving(c, "graceful, initialize failed");
                        c->phase = P_DRAINING;
                }
                break;
        case RS_CANCELLED:
                r->state = RS_CANCELLED_ANSWERED;
                s->st.cancelled_answered++;
                break;
        default:
                soak_anomaly(s, &s->st.duplicates, "client %u: a second answer for %s r%u: %s", c->serial,
                             kinds[r->kind].name, seq, json_object_to_json_string(msg));
        }
        maybe_done(c);
}

static void on_progress(struct soak_client *c, json_object *params) {
        struct soak *s = c->s;
        unsigned serial, seq;
        const struct request *r;

        if (!parse_id(member(params, "progressToken"), 'p', &serial, &seq) || serial != c->serial || seq == 0 ||
            seq > c->n_reqs || !c->reqs[seq].has_token) {
                soak_anomaly(s, &s->st.bad_progress, "client %u: progress for a token it never sent: %s", c->serial,
                             json_object_to_json_string(params));
                return;
        }
        r = &c->reqs[seq];
        /* The server writes progress before its answer on one pipe, and the daemon keeps that
         * order; after a cancel the daemon drops both. */
        if (r->state == RS_ANSWERED || r->state == RS_CANCELLED_ANSWERED)
                soak_anomaly(s, &s->st.bad_progress, "client %u: progress for r%u after its answer: %s", c->serial, seq,
                             json_object_to_json_string(params));
        else
                s->st.progress++;
}

static bool can_write(const struct soak_client *c) {
        return c->phase == P_INITIALIZING || c->phase == P_RUNNING || c->phase == P_DRAINING;
}

/* A server's request, routed to us: answer it as an MCP client would. */
static void on_upcall(struct soak_client *c, json_object *msg) {
        const char *method = json_object_get_string(member(msg, "method"));
        json_object *m, *result = NULL;

        if (!can_write(c))
                return; /* the daemon cancels it for us */
        if (strcmp(method, "roots/list") == 0)
                result = json_tokener_parse("{\"roots\":[{\"uri\":\"file:///soak\",\"name\":\"soak\"}]}");
        else if (strcmp(method, "sampling/createMessage") == 0)
                result = json_tokener_parse("{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"soak\"},"
                                            "\"model\":\"soak\",\"stopReason\":\"endTurn\"}");
        else if (strcmp(method, "elicitation/create") == 0)
                result = json_tokener_parse("{\"action\":\"decline\"}");
        else if (strcmp(method, "ping") == 0)
                result = json_object_new_object();
        m = message();
        json_object_object_add(m, "id", json_object_get(member(msg, "id")));
        if (result)
                json_object_object_add(m, "result", result);
        else
                json_object_object_add(m, "error", json_tokener_parse("{\"code\":-32601,\"message\":\"Method not found\"}"));
        send_json(c, m);
        c->s->st.upcalls++;
}

static void on_message(struct soak_client *c, const char *line) {
        struct soak *s = c->s;
        json_object *msg = json_tokener_parse(line), *method;

        if (!json_object_is_type(msg, json_type_object)) {
                soak_anomaly(s, &s->st.protocol_errors, "client %u: a line that is not a JSON object: %.200s", c->serial,
                             line);
                json_object_put(msg);
                return;
        }
        method = member(msg, "method");
        if (method && member(msg, "id"))
                on_upcall(c, msg);
        else if (method && strcmp(json_object_get_string(method), "notifications/progress") == 0)
                on_progress(c, member(msg, "params"));
        else if (method)
                s->st.notifications++;
        else
                on_answer(c, msg);
        json_object_put(msg);
}

static void on_read(struct bufferevent *bev, void *userdata) {
        struct soak_client *c = userdata;
        struct evbuffer *in = bufferevent_get_input(bev);
        char *line;

        while (c->phase != P_FLUSHING && (line = evbuffer_readln(in, NULL, EVBUFFER_EOL_LF))) {
                on_message(c, line);
                free(line);
        }
}

static void on_event(struct bufferevent *bev, short what, void *userdata) {
        struct soak_client *c = userdata;
        struct soak *s = c->s;

        if (c->phase == P_FLUSHING)
                return; /* done with it; the next tick frees it */
        if (what & BEV_EVENT_CONNECTED) {
                if (c->phase == P_CONNECTING) {
                        c->phase = P_INITIALIZING;
                        send_request(c, K_INIT);
                }
                return;
        }
        if (what & BEV_EVENT_EOF) {
                on_read(bev, c);
                if (c->phase == P_FLUSHING)
                        return;
                if (c->phase != P_HALF_CLOSED)
                        soak_anomaly(s, &s->st.protocol_errors, "client %u: the daemon closed the connection", c->serial);
                count_lost(c, c->phase == P_HALF_CLOSED ? "the daemon closed after the half-close" : "connection closed");
                client_destroy(c);
                return;
        }
        if (what & BEV_EVENT_ERROR) {
                soak_anomaly(s, &s->st.protocol_errors, "client %u: connection error: %s", c->serial,
                             strerror(EVUTIL_SOCKET_ERROR()));
                count_lost(c, "connection error");
                client_destroy(c);
        }
}

/* ---- the tick: sends, cancels, leaves, deadlines ---- */

static const char *const state_names[] = { "free", "pending", "answered", "cancelled", "cancelled+answered" };

/* A half-closed client owed nothing is still owed the daemon's EOF; say what it had sent,
 * for the reproduction. */
static void report_no_eof(struct soak_client *c) {
        struct soak *s = c->s;
        char text[2048] = "";
        size_t len = 0;

        for (unsigned seq = c->n_reqs > 12 ? c->n_reqs - 11 : 1; seq <= c->n_reqs && len < sizeof text - 100; seq++)
                len += (size_t)snprintf(text + len, sizeof text - len, " r%u %s (%s, %llu ms ago);", seq,
                                        kinds[c->reqs[seq].kind].name, state_names[c->reqs[seq].state],
                                        (unsigned long long)(soak_now_ms() - c->reqs[seq].sent_at));
        soak_anomaly(s, &s->st.protocol_errors,
                     "client %u (soak-%u): no EOF from the daemon %.0f s after its half-close; its last requests:%s",
                     c->serial, c->serial, s->opt.drain_timeout_s, text);
}

static void schedule_tick(struct soak_client *c) {
        double ms = c->s->opt.think_ms * (0.5 + soak_uniform(c->s));
        long usec = (long)(ms * 1000);
        struct timeval tv = { .tv_sec = usec / 1000000, .tv_usec = usec % 1000000 };

        evtimer_add(c->tick, &tv);
}

static void send_due_cancels(struct soak_client *c, uint64_t now) {
        for (unsigned i = 0; i < c->n_pending;) {
                const struct request *r = &c->reqs[c->pending[i]];
                if (r->cancel_at && r->cancel_at <= now)
                        send_cancel(c, c->pending[i], "soak client changed its mind"); /* takes pending[i] out */
                else
                        i++;
        }
}

static void on_tick(evutil_socket_t fd, short what, void *userdata) {
        struct soak_client *c = userdata;
        struct soak *s = c->s;
        uint64_t now = soak_now_ms();

        if (c->phase == P_FLUSHING && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
                client_destroy(c);
                return;
        }
        if (c->phase == P_RUNNING) {
                send_due_cancels(c, now);
                if (now >= c->leave_at) {
                        if (leave_randomly(c))
                                return;
                } else if (c->n_pending < s->opt.max_in_flight) {
                        /* The solo client asks more: its asks are the ones that can succeed. */
                        send_request(c, s->solo_owner == c->serial && soak_chance(s, 0.1) ? K_ASK : pick_kind(s));
                }
        } else if (c->deadline && now >= c->deadline) {
                if (c->phase == P_HALF_CLOSED)
                        report_no_eof(c);
                count_lost(c, c->phase == P_HALF_CLOSED ? "no EOF from the daemon after the half-close"
                                                        : "the client's deadline passed");
                client_destroy(c);
                return;
        }
        schedule_tick(c);
}

/* ---- the client's life ---- */

int soak_client_start(struct soak *s) {
        struct soak_client *c = calloc(1, sizeof *c);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        if (!c)
                return -ENOMEM;
        c->s = s;
        c->serial = ++s->next_serial;
        c->pending = calloc(s->opt.max_in_flight + 1, sizeof *c->pending);
        c->bev = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
        c->tick = evtimer_new(s->base, on_tick, c);
        if (!c->pending || !c->bev || !c->tick) {
                client_destroy(c);
                return -ENOMEM;
        }
        LIST_INSERT_HEAD(&s->clients, c, entry);
        c->listed = true;
        s->live++;
        s->st.connects++;
        c->leave_at = soak_now_ms() + 1000 + (uint64_t)(soak_uniform(s) * (s->opt.client_life_s - 1) * 1000);
        c->deadline = soak_now_ms() + (uint64_t)(s->opt.drain_timeout_s * 1000); /* to connect and initialize */
        bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
        memcpy(sa.sun_path, s->d.sock, strlen(s->d.sock) + 1); /* fits: soak_daemon_start checked */
        schedule_tick(c);
        if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&sa, sizeof sa) < 0) {
                soak_anomaly(s, &s->st.protocol_errors, "client %u: cannot connect to %s", c->serial, s->d.sock);
                client_destroy(c);
                return -ECONNREFUSED;
        }
        return 0;
}

static void client_end(struct soak_client *c) {
        if (c->phase == P_RUNNING && soak_chance(c->s, 0.5)) {
                start_leaving(c, "half-close, at the end");
                leave_half_close(c);
        } else if (c->phase == P_RUNNING || c->phase == P_CONNECTING || c->phase == P_INITIALIZING) {
                /* Before initialized: waits for initialize's answer, then closes. */
                start_leaving(c, "graceful, at the end");
                leave_graceful(c);
        }
}

void soak_clients_end(struct soak *s) {
        struct soak_client *c;

        LIST_FOREACH(c, &s->clients, entry)
                client_end(c); /* frees nothing: a client that is done closes on its next tick */
}

void soak_clients_abort(struct soak *s) {
        while (!LIST_EMPTY(&s->clients)) {
                struct soak_client *c = LIST_FIRST(&s->clients);
                count_lost(c, "the run's hard deadline passed");
                client_destroy(c);
        }
}

static void client_destroy(struct soak_client *c) {
        struct soak *s = c->s;

        if (c->tick)
                event_free(c->tick);
        if (c->bev)
                bufferevent_free(c->bev);
        if (c->listed) {
                LIST_REMOVE(c, entry);
                s->live--;
        }
        if (s->solo_owner == c->serial)
                s->solo_owner = 0;
        free(c->reqs);
        free(c->pending);
        free(c);
        soak_client_gone(s);
}
