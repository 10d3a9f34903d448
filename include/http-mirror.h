/* The modern era's HTTP request headers that mirror its body (2026-07-28, Streamable HTTP
 * "Server Validation"): MCP-Protocol-Version the _meta's version, Mcp-Method the method,
 * Mcp-Name the name (tools/call, prompts/get) or URI (resources/read), so that what routes
 * on the headers (a load balancer) and what acts on the body (the daemon) never differ. A
 * pure function of the headers and the parsed body, for http-front.c and the unit tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct jsonrpc_msg;

struct http_mirror {
        const char *protocol_version; /* MCP-Protocol-Version; NULL: absent */
        const char *method;           /* Mcp-Method */
        const char *name;             /* Mcp-Name, maybe in the =?base64?...?= form */
};

/* 0 when h matches request m (its _meta's version a string), else -EINVAL with why (the
 * HeaderMismatch error's message, which quotes no value) written to why. */
int http_mirror_check(const struct http_mirror *h, const struct jsonrpc_msg *m, char *why, size_t size);
/* Decodes an Mcp-Name or Mcp-Param-* value: the =?base64?B64?= form to its bytes (NUL
 * added), anything else copied. -EINVAL: not valid base64, or a NUL inside, or too long
 * for size. */
int http_mirror_decode(const char *value, char *ret, size_t size);

/* The HTTP status a modern request's answer (its JSON text, len bytes) goes with when sent
 * whole: 404 for -32601 (the specification: a method the server does not implement), 400
 * for the errors of its _meta and headers (-32020, -32021, -32022), else 200; the reason
 * phrase in *ret_reason. */
int http_mirror_answer_status(const char *json, size_t len, const char **ret_reason);
