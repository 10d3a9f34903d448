/* JSON-RPC 2.0 parsing and building; see jsonrpc.h. */
#include "jsonrpc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "utf8.h"

int jsonrpc_parser_init(struct jsonrpc_parser *p) {
        p->tok = json_tokener_new_ex(JSONRPC_MAX_DEPTH);
        if (!p->tok)
                return -ENOMEM;
        json_tokener_set_flags(p->tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        return 0;
}

void jsonrpc_parser_done(struct jsonrpc_parser *p) {
        if (p->tok)
                json_tokener_free(p->tok);
        p->tok = NULL;
}

void jsonrpc_msg_done(struct jsonrpc_msg *m) {
        json_object_put(m->root);
        *m = (struct jsonrpc_msg){ .kind = JSONRPC_INVALID };
}

bool jsonrpc_id_valid(json_object *id) {
        if (json_object_is_type(id, json_type_string))
                return true;
        if (!json_object_is_type(id, json_type_int))
                return false;
        /* json-c parses an integer beyond 64 bits as the nearest bound, so an answer under it
         * would carry another id: the bounds are refused, as they cannot be told apart. */
        return json_object_get_int64(id) != INT64_MIN && json_object_get_uint64(id) != UINT64_MAX;
}

/* splitmix64's finaliser: every input bit reaches every output bit. */
static uint64_t mix64(uint64_t h) {
        h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
        h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
        return h ^ (h >> 31);
}

uint64_t jsonrpc_id_hash(json_object *id, uint64_t seed) {
        uint64_t h = mix64(seed);

        if (json_object_is_type(id, json_type_string)) {
                const unsigned char *p = (const unsigned char *)json_object_get_string(id);
                size_t len = (size_t)json_object_get_string_len(id);

                h ^= 0xCBF29CE484222325ull; /* FNV-1a, from a basis that integers never take */
                for (size_t i = 0; i < len; i++)
                        h = (h ^ p[i]) * 0x100000001B3ull;
                return mix64(h ^ len);
        }
        /* json-c keeps an integer as int64 or uint64; the value decides, not the storage. */
        int64_t v = json_object_get_int64(id);
        return mix64(h + (v < 0 ? (uint64_t)v : json_object_get_uint64(id)));
}

bool jsonrpc_is_broken_response(const struct jsonrpc_msg *m) {
        return m->kind == JSONRPC_INVALID && m->id && !json_object_object_get_ex(m->root, "method", NULL);
}

static bool only_whitespace(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
                        return false;
        return true;
}

/* Parses one JSON value filling the whole line. json-c returns the JSON null as a NULL
 * object, so success is reported separately. */
static bool parse_json(struct jsonrpc_parser *p, const char *line, size_t len, json_object **ret) {
        json_object *obj;
        size_t end;

        json_tokener_reset(p->tok);
        obj = json_tokener_parse_ex(p->tok, line, (int)len);
        end = json_tokener_get_parse_end(p->tok);
        if (!obj && json_tokener_get_error(p->tok) == json_tokener_continue) {
                /* A bare number or literal is complete only once something follows it. */
                obj = json_tokener_parse_ex(p->tok, " ", 1);
                end = len;
        }
        if (json_tokener_get_error(p->tok) != json_tokener_success ||
            (end < len && !only_whitespace(line + end, len - end))) {
                json_object_put(obj); /* not JSON, or trailing bytes after the value */
                return false;
        }
        *ret = obj;
        return true;
}

static enum jsonrpc_kind invalid(struct jsonrpc_msg *m, int code, const char *message) {
        m->kind = JSONRPC_INVALID;
        m->error_code = code;
        m->error_message = message;
        return m->kind;
}

static enum jsonrpc_kind classify_call(struct jsonrpc_msg *m, json_object *method, json_object *id,
                                       bool has_id) {
        if (!json_object_is_type(method, json_type_string))
                return invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: \"method\" must be a string");
        m->method = json_object_get_string(method);
        /* A params value of the wrong type is left to the method: it answers -32602. */
        if (!has_id) {
                m->kind = JSONRPC_NOTIFICATION;
                return m->kind;
        }
        m->kind = JSONRPC_REQUEST;
        return m->kind;
}

static enum jsonrpc_kind classify_response(struct jsonrpc_msg *m, bool has_result, bool has_error) {
        if (has_result == has_error)
                return invalid(m, JSONRPC_INVALID_REQUEST,
                               "Invalid Request: a response carries exactly one of \"result\" and \"error\"");
        if (has_error && !json_object_is_type(m->error, json_type_object))
                return invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: \"error\" must be an object");
        m->kind = JSONRPC_RESPONSE;
        return m->kind;
}

static enum jsonrpc_kind classify(struct jsonrpc_msg *m) {
        json_object *root = m->root, *version, *method, *id;
        bool has_id, has_method, has_result, has_error;

        if (json_object_is_type(root, json_type_array))
                return invalid(m, JSONRPC_INVALID_REQUEST,
                               "Invalid Request: JSON-RPC batches are not supported; send one message per line");
        if (!json_object_is_type(root, json_type_object))
                return invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object");

        has_id = json_object_object_get_ex(root, "id", &id);
        if (has_id && !jsonrpc_id_valid(id))
                return invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: \"id\" must be a string or an integer that fits in 64 bits");
        m->id = has_id ? id : NULL;

        if (!json_object_object_get_ex(root, "jsonrpc", &version) ||
            !json_object_is_type(version, json_type_string) ||
            strcmp(json_object_get_string(version), "2.0") != 0)
                return invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");

        has_method = json_object_object_get_ex(root, "method", &method);
        has_result = json_object_object_get_ex(root, "result", &m->result);
        has_error = json_object_object_get_ex(root, "error", &m->error);
        json_object_object_get_ex(root, "params", &m->params);

        if (has_method)
                return classify_call(m, method, id, has_id);
        if (has_id && (has_result || has_error))
                return classify_response(m, has_result, has_error);
        return invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response");
}

enum jsonrpc_kind jsonrpc_parse(struct jsonrpc_parser *p, const char *line, size_t len, struct jsonrpc_msg *ret) {
        *ret = (struct jsonrpc_msg){ 0 };
        if (!parse_json(p, line, len, &ret->root))
                return invalid(ret, JSONRPC_PARSE_ERROR, "Parse error: the line is not valid JSON (UTF-8)");
        /* json-c lets through overlong forms, surrogates and code points beyond U+10FFFF as
         * bytes, and turns a lone surrogate escape into U+FFFD: passed on, the first crash a
         * strict peer and the second changes the text. The daemon's own check refuses both;
         * the tree is kept only so that a refused answer can end the request it answers. */
        if (!json_scan_valid(line, len, JSONRPC_MAX_DEPTH)) {
                ret->refused_text = true;
                return invalid(ret, JSONRPC_PARSE_ERROR,
                               "Parse error: the line is not valid UTF-8 or has an unpaired surrogate escape");
        }
        return classify(ret);
}

json_object *jsonrpc_answer_id(const struct jsonrpc_msg *m) {
        json_object *id;

        if (!m->refused_text)
                return m->id;
        /* a request's id is of the sender's numbering, not an answer's */
        if (!json_object_is_type(m->root, json_type_object) || json_object_object_get_ex(m->root, "method", NULL) ||
            !json_object_object_get_ex(m->root, "id", &id) || !jsonrpc_id_valid(id))
                return NULL;
        return id;
}

static json_object *envelope(json_object *id) {
        json_object *msg = json_object_new_object();

        json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(msg, "id", id ? json_object_get(id) : NULL);
        return msg;
}

json_object *jsonrpc_result(json_object *id, json_object *result) {
        json_object *msg = envelope(id);

        json_object_object_add(msg, "result", result ? result : json_object_new_object());
        return msg;
}

json_object *jsonrpc_text(const char *s) {
        size_t len = strlen(s);
        json_object *o;
        char *copy;

        if (utf8_valid(s, len))
                return json_object_new_string_len(s, (int)len);
        copy = strdup(s);
        if (!copy)
                return json_object_new_string("(out of memory)");
        o = json_object_new_string(utf8_mend(copy));
        free(copy);
        return o;
}

json_object *jsonrpc_error(json_object *id, int code, const char *message, json_object *data) {
        json_object *msg = envelope(id), *err = json_object_new_object();

        json_object_object_add(err, "code", json_object_new_int(code));
        json_object_object_add(err, "message", jsonrpc_text(message));
        if (data)
                json_object_object_add(err, "data", data);
        json_object_object_add(msg, "error", err);
        return msg;
}

json_object *jsonrpc_error_object(json_object *id, json_object *error) {
        json_object *msg = envelope(id);

        json_object_object_add(msg, "error", error);
        return msg;
}

static json_object *with_method(json_object *msg, const char *method, json_object *params) {
        json_object_object_add(msg, "method", json_object_new_string(method));
        if (params)
                json_object_object_add(msg, "params", params);
        return msg;
}

json_object *jsonrpc_request(int64_t id, const char *method, json_object *params) {
        json_object *msg = json_object_new_object();

        json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(msg, "id", json_object_new_int64(id));
        return with_method(msg, method, params);
}

int jsonrpc_request_line(int64_t id, const char *method, json_object *params, char head[JSONRPC_REQUEST_HEAD_MAX],
                         struct iovec parts[4]) {
        static const char with_params[] = ",\"params\":", tail[] = "}\n";
        const char *params_text = "";
        size_t params_len = 0;
        int n;

        for (const unsigned char *c = (const unsigned char *)method; *c; c++)
                if (*c < 0x20 || *c == '"' || *c == '\\')
                        return -EINVAL;
        n = snprintf(head, JSONRPC_REQUEST_HEAD_MAX, "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":\"%s\"", id, method);
        if (n < 0 || n >= JSONRPC_REQUEST_HEAD_MAX)
                return -EINVAL;
        if (params) {
                params_text = json_object_to_json_string_length(params, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                                &params_len);
                if (!params_text)
                        return -ENOMEM;
        }
        parts[0] = (struct iovec){ head, (size_t)n };
        parts[1] = (struct iovec){ (void *)with_params, params ? sizeof with_params - 1 : 0 };
        parts[2] = (struct iovec){ (void *)params_text, params_len };
        parts[3] = (struct iovec){ (void *)tail, sizeof tail - 1 };
        return (int)(parts[0].iov_len + parts[1].iov_len + params_len + parts[3].iov_len);
}

json_object *jsonrpc_notification(const char *method, json_object *params) {
        json_object *msg = json_object_new_object();

        json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
        return with_method(msg, method, params);
}

json_object *jsonrpc_copy_with(json_object *o, const char *key, json_object *value) {
        json_object *copy = json_object_new_object();
        bool placed = !key;

        if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, k, v) {
                        bool replace = key && strcmp(k, key) == 0;
                        /* In its place, so the copy reads like the original. */
                        json_object_object_add(copy, k, replace ? value : json_object_get(v));
                        placed |= replace;
                }
        }
        if (!placed)
                json_object_object_add(copy, key, value);
        return copy;
}

int jsonrpc_line(json_object *msg, struct iovec parts[2]) {
        size_t len;
        const char *s = json_object_to_json_string_length(
                msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

        if (!s)
                return -ENOMEM;
        parts[0] = (struct iovec){ (void *)s, len };
        parts[1] = (struct iovec){ (void *)"\n", 1 };
        return (int)(len + 1);
}

/* A key at p with no escapes in it: one with escapes could spell a member the checks
 * below would miss, so such lines take json-c's path. */
static bool take_plain_key(struct json_scan *s, const char **key, size_t *len) {
        const char *start = s->p + 1;

        if (!json_scan_string(s) || memchr(start, '\\', (size_t)(s->p - 1 - start)))
                return false;
        *key = start;
        *len = (size_t)(s->p - 1 - start);
        return true;
}

/* After a member's key: its ':' and value, whose first byte goes to *value. */
static bool take_member_value(struct json_scan *s, const char **value) {
        json_scan_ws(s);
        if (!json_scan_take(s, ':'))
                return false;
        json_scan_ws(s);
        *value = s->p;
        return json_scan_value(s);
}

static bool key_is(const char *key, size_t len, const char *want) {
        return len == strlen(want) && memcmp(key, want, len) == 0;
}

/* A non-negative integer id that fits in 63 bits: the daemon's own ids toward a server. */
static bool parse_our_id(const char *text, size_t len, int64_t *id) {
        int64_t v = 0;

        if (len == 0 || (text[0] == '0' && len > 1))
                return false;
        for (size_t i = 0; i < len; i++) {
                if (text[i] < '0' || text[i] > '9' || v > (INT64_MAX - (text[i] - '0')) / 10)
                        return false;
                v = v * 10 + (text[i] - '0');
        }
        *id = v;
        return true;
}

/* One top-level member; a second "jsonrpc", "id" or "result", or any "error" or
 * "method", is not the plain result this looks for. */
static bool take_result_member(struct json_scan *s, struct jsonrpc_result_text *r, unsigned *seen) {
        const char *key, *value;
        size_t key_len;
        unsigned bit;

        if (!take_plain_key(s, &key, &key_len) || !take_member_value(s, &value))
                return false;
        if (key_is(key, key_len, "error") || key_is(key, key_len, "method"))
                return false;
        bit = key_is(key, key_len, "jsonrpc") ? 1 : key_is(key, key_len, "id") ? 2 : key_is(key, key_len, "result") ? 4 : 0;
        if (*seen & bit)
                return false;
        *seen |= bit;
        if (bit == 1)
                return s->p - value == 5 && memcmp(value, "\"2.0\"", 5) == 0;
        if (bit == 2)
                return parse_our_id(value, (size_t)(s->p - value), &r->id);
        if (bit == 4)
                *r = (struct jsonrpc_result_text){ .id = r->id, .text = value, .len = (size_t)(s->p - value) };
        return true;
}

bool jsonrpc_scan_result(const char *line, size_t len, struct jsonrpc_result_text *ret) {
        struct json_scan s;
        unsigned seen = 0;

        if (!json_scan_open(&s, line, len, JSONRPC_MAX_DEPTH, '{'))
                return false;
        do {
                json_scan_ws(&s);
                if (!take_result_member(&s, ret, &seen))
                        return false;
                json_scan_ws(&s);
        } while (json_scan_take(&s, ','));
        if (!json_scan_take(&s, '}'))
                return false;
        json_scan_ws(&s);
        return s.p == s.end && seen == 7;
}

enum { HEAD_ID = 1, HEAD_OUTCOME = 2 };

/* One member of a response's head; false where the scan ends: at the head's end, with
 * *seen telling what came before, or at what no plain response holds (*seen cleared). */
static bool take_head_member(struct json_scan *s, int64_t *id, unsigned *seen) {
        const char *key, *value;
        size_t key_len;
        bool is_id;

        if (!take_plain_key(s, &key, &key_len))
                return false;
        is_id = key_is(key, key_len, "id");
        if (key_is(key, key_len, "result") || key_is(key, key_len, "error"))
                *seen |= HEAD_OUTCOME; /* a response, even if its value is cut off */
        if (key_is(key, key_len, "method") || (is_id && (*seen & HEAD_ID))) {
                *seen = 0; /* a request's id is the server's own; two ids are no answer */
                return false;
        }
        if (!take_member_value(s, &value) || s->p == s->end)
                return false; /* cut off, a number perhaps in the middle */
        if (is_id && !parse_our_id(value, (size_t)(s->p - value), id)) {
                *seen = 0; /* not an id of ours */
                return false;
        }
        *seen |= is_id ? HEAD_ID : 0;
        json_scan_ws(s);
        return json_scan_take(s, ',');
}

bool jsonrpc_scan_head_id(const char *head, size_t len, int64_t *ret_id) {
        struct json_scan s;
        unsigned seen = 0;
        int64_t id = -1;

        if (!json_scan_open(&s, head, len, JSONRPC_MAX_DEPTH, '{'))
                return false;
        do
                json_scan_ws(&s);
        while (take_head_member(&s, &id, &seen));
        if (seen != (HEAD_ID | HEAD_OUTCOME))
                return false;
        *ret_id = id;
        return true;
}

/* One top-level member of a message the daemon made; false at its end (or at what it
 * cannot be). */
static bool take_request_member(struct json_scan *s, struct jsonrpc_request_head *r) {
        const char *key, *value;
        size_t key_len;

        if (!take_plain_key(s, &key, &key_len) || !take_member_value(s, &value))
                return false;
        if (key_is(key, key_len, "method") && *value == '"')
                *r = (struct jsonrpc_request_head){ .method = value + 1, .method_len = (size_t)(s->p - value) - 2, .id = r->id };
        else if (key_is(key, key_len, "id") && !parse_our_id(value, (size_t)(s->p - value), &r->id))
                r->id = -1;
        json_scan_ws(s);
        return json_scan_take(s, ',');
}

bool jsonrpc_scan_request_head(const char *line, size_t len, struct jsonrpc_request_head *ret) {
        struct json_scan s;

        *ret = (struct jsonrpc_request_head){ .id = -1 };
        if (!json_scan_open(&s, line, len, JSONRPC_MAX_DEPTH, '{'))
                return false;
        do
                json_scan_ws(&s);
        while (!(ret->method && ret->id >= 0) && take_request_member(&s, ret));
        return true;
}

int jsonrpc_result_text_line(json_object *id, const char *result, size_t len, struct iovec parts[5]) {
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", middle[] = ",\"result\":", tail[] = "}\n";
        size_t id_len;
        const char *id_text = json_object_to_json_string_length(id, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                                &id_len);

        if (!id_text)
                return -ENOMEM;
        parts[0] = (struct iovec){ (void *)head, sizeof head - 1 };
        parts[1] = (struct iovec){ (void *)id_text, id_len };
        parts[2] = (struct iovec){ (void *)middle, sizeof middle - 1 };
        parts[3] = (struct iovec){ (void *)result, len };
        parts[4] = (struct iovec){ (void *)tail, sizeof tail - 1 };
        return (int)(sizeof head - 1 + id_len + sizeof middle - 1 + len + sizeof tail - 1);
}
