/* JSON-RPC 2.0 message classification and construction (no I/O).
 * A line becomes a request, a notification, a response, or an invalid message that
 * carries the error to answer with. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>


/* How deep a message may nest, for json-c and the scanner (json-scan.h): MCP tool schemas
 * nest deeply, and json-c's default depth of 32 is too shallow. */
#define JSONRPC_MAX_DEPTH 512

enum {
        JSONRPC_PARSE_ERROR = -32700,
        JSONRPC_INVALID_REQUEST = -32600,
        JSONRPC_METHOD_NOT_FOUND = -32601,
        JSONRPC_INVALID_PARAMS = -32602,
        JSONRPC_INTERNAL_ERROR = -32603,
};

enum jsonrpc_kind {
        JSONRPC_REQUEST,
        JSONRPC_NOTIFICATION,
        JSONRPC_RESPONSE,
        JSONRPC_INVALID,
};

struct jsonrpc_msg {
        enum jsonrpc_kind kind;
        json_object *root;     /* owned; the whole message, unknown fields included */
        json_object *id;       /* borrowed from root; NULL for notifications and when unknown */
        const char *method;    /* borrowed; requests and notifications */
        json_object *params;   /* borrowed; may be NULL */
        json_object *result;   /* borrowed; responses */
        json_object *error;    /* borrowed; error responses */
        int error_code;        /* JSONRPC_INVALID: the code to answer with */
        const char *error_message; /* JSONRPC_INVALID: static text */
        bool refused_text;     /* JSON to json-c, refused by the strict check (json-scan.h) */
};

struct jsonrpc_parser {
        json_tokener *tok;
};

int jsonrpc_parser_init(struct jsonrpc_parser *p);
void jsonrpc_parser_done(struct jsonrpc_parser *p);

/* Classifies one line. Always fills ret; release it with jsonrpc_msg_done(). A line that
 * is not strict JSON text (json-scan.h: UTF-8 of RFC 3629, surrogate escapes in pairs) is a
 * parse error, with no id, even where json-c reads it. */
enum jsonrpc_kind jsonrpc_parse(struct jsonrpc_parser *p, const char *line, size_t len,
                                struct jsonrpc_msg *ret);
void jsonrpc_msg_done(struct jsonrpc_msg *m);
/* The id under which m answers one of the receiver's requests: m->id, or, for an answer (no
 * "method") refused for its text, the id json-c read there (NULL if none). That text cannot
 * be trusted: the id serves to end a request of the receiver's own numbering, never to
 * answer under it. */
json_object *jsonrpc_answer_id(const struct jsonrpc_msg *m);

/* True for ids the spec allows: a string or an integer that fits in 64 bits. */
bool jsonrpc_id_valid(json_object *id);

/* A hash of a valid id, mixed with seed, for lookups by a peer's id: ids that
 * json_object_equal() finds equal hash alike (an integer by its value, however json-c
 * stores it; a string by all its bytes), and a string apart from the integer it spells. */
uint64_t jsonrpc_id_hash(json_object *id, uint64_t seed);

/* An invalid message meant as an answer: it has a valid id and no "method". Its id is of
 * the receiver's own numbering, so it is never answered under that id. */
bool jsonrpc_is_broken_response(const struct jsonrpc_msg *m);

/* Builders. id is borrowed (a new reference is taken); result/data are consumed. */
json_object *jsonrpc_result(json_object *id, json_object *result);
json_object *jsonrpc_error(json_object *id, int code, const char *message, json_object *data);
/* A JSON string of text the daemon made, mended to valid UTF-8 (utf8.h) if it is not. */
json_object *jsonrpc_text(const char *s);
/* An error response carrying an error object as it is (consumed): a server's, passed on. */
json_object *jsonrpc_error_object(json_object *id, json_object *error);
/* params is consumed and may be NULL. */
json_object *jsonrpc_request(int64_t id, const char *method, json_object *params);

/* The same request as one line in four parts, written from its parts rather than from an
 * envelope object built and freed for each call: head (filled here) holds all up to the
 * params, the params' compact JSON is owned by params. -EINVAL for a method that is not
 * plain text (quotes, backslashes, control bytes, or too long for head): build the
 * envelope then. Returns the line's length or a negative errno. */
#define JSONRPC_REQUEST_HEAD_MAX 128
int jsonrpc_request_line(int64_t id, const char *method, json_object *params, char head[JSONRPC_REQUEST_HEAD_MAX],
                         struct iovec parts[4]);
json_object *jsonrpc_notification(const char *method, json_object *params);

/* A shallow copy of object o (members referenced, not copied) with key set to value
 * (consumed), in its place if o has it; key NULL: a plain copy. Forwarding rewrites one member this way without
 * touching the message it came from. A non-object o gives an empty object. */
json_object *jsonrpc_copy_with(json_object *o, const char *key, json_object *value);

/* msg as one line in two parts: its compact JSON (owned by msg, valid while it is
 * unchanged) and '\n'. Returns the line's length or -ENOMEM. */
int jsonrpc_line(json_object *msg, struct iovec parts[2]);

/* A server's plain result, {"jsonrpc":"2.0","id":N,"result":VALUE} with N a non-negative
 * integer and members in any order, checked (json-scan.h) but not parsed: VALUE can then
 * be passed on as the bytes the server wrote. */
struct jsonrpc_result_text {
        int64_t id;
        const char *text;       /* VALUE, within the line */
        size_t len;
};

/* True if line is such a result; anything else (errors, requests, escaped or repeated
 * members, text json-c might read otherwise) is false, and goes to jsonrpc_parse(). */
bool jsonrpc_scan_result(const char *line, size_t len, struct jsonrpc_result_text *ret);
/* The id of a response from the first len bytes of a line too long to read whole: true
 * when they show, at the top level, a non-negative integer "id" (as in
 * jsonrpc_scan_result), a "result" or "error" member (whole or cut off by the head's end)
 * and no "method". A response that writes its id after its result cannot be told. */
bool jsonrpc_scan_head_id(const char *head, size_t len, int64_t *ret_id);
/* The "method" and "id" of a message the daemon made (a request to a server carries its
 * daemon-chosen id, as in jsonrpc_scan_result), read from its top-level members until both
 * are known: the head of a large request is enough. */
struct jsonrpc_request_head {
        const char *method;     /* within the line, without its quotes; NULL: none */
        size_t method_len;
        int64_t id;             /* -1: none, or not one of ours */
};
/* False when the line does not start as an object of plain members. */
bool jsonrpc_scan_request_head(const char *line, size_t len, struct jsonrpc_request_head *ret);
/* A result response under id whose result is the JSON text result (valid, without
 * newlines), as one line in five parts that point into id's text and result. Returns the
 * line's length or -ENOMEM. */
int jsonrpc_result_text_line(json_object *id, const char *result, size_t len, struct iovec parts[5]);
