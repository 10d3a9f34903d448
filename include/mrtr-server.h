/* Modern servers' multi round-trip requests (MCP 2026-07-28): a modern server's
 * tools/call, prompts/get or resources/read result with resultType "input_required"
 * (inputRequests, requestState), handed here by the router before anything of it reaches
 * the client:
 *   - toward a LEGACY client, each input request becomes an ordinary server request to
 *     the client that made the call (elicitation/create, sampling/createMessage,
 *     roots/list: upcall.c's server_requests_ask(), under ids of ours, related to the call,
 *     the access decision applied to the answers), roots/list of a server with "roots"
 *     configured answered with them; once every one is answered, the call is sent again on
 *     the same route with inputResponses and the server's requestState, over as many
 *     rounds as the server needs (MRTR_SERVER_ROUNDS_MAX at most): the client sees only
 *     the final result. A request the client did not declare the capability for fails the
 *     call with MissingRequiredClientCapability (-32021) naming it; an error the client
 *     answers fails it with that error's words; the call cancelled, timed out or its client
 *     gone withdraws the requests still out (notifications/cancelled to the client);
 *   - toward a MODERN client, it is passed on with the server's requestState wrapped in a
 *     daemon seal (mrtr-seal.h: principal, request, server, expiry), an input request
 *     the call's _meta did not declare the capability for failing it with -32021; the
 *     retry's seal is opened and checked (mrtr_retry(): the spec's -32602 for a forged,
 *     expired, foreign or other request's or server's state) before the server's own
 *     state is handed back to it. Nothing stays in the daemon between the rounds.
 * A legacy server's requests during a modern client's call are mrtr.h's. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MRTR_SERVER_ROUNDS_MAX 16 /* input_required answers to one call of a legacy client */

struct access_ask;
struct client;
struct jsonrpc_msg;
struct mrtr_inputs;
struct mrtr_opened;
struct route;
struct server;

enum mrtr_server_take {
        MRTR_SERVER_PASS,     /* not an input_required result: the router passes it on */
        MRTR_SERVER_ANSWERED, /* the client was answered (input_required passed on): free the route */
        MRTR_SERVER_FAILED,   /* the client was answered an error: free the route */
        MRTR_SERVER_GOES_ON,  /* the route stays: its client is asked, or it was sent again */
};

/* Whether a plain result's text (one valid JSON object) is typed "input_required": a scan,
 * nothing built. */
bool mrtr_server_text_is_input_required(const char *text, size_t len);
/* The result (borrowed) of rt, a call of a client still waiting to a modern server. */
enum mrtr_server_take mrtr_server_result(struct route *rt, json_object *result);

/* A modern client's retry whose state (opened) wraps server opened->server's: checked
 * against s, then sent to s with the server's own requestState in params (consumed). */
void mrtr_server_retry(struct client *c, struct jsonrpc_msg *m, struct server *s, const struct access_ask *ask,
                       json_object *params, const struct mrtr_opened *opened);

/* Hooks of upcall.c: the client answered input request id (m; allowed: the access decision
 * let its answer through), or it went away unanswered (its server's run ended). */
void mrtr_inputs_answered(struct mrtr_inputs *in, int64_t id, const struct jsonrpc_msg *m, bool allowed);
void mrtr_inputs_request_gone(struct mrtr_inputs *in, int64_t id);
/* Of router.c: the round's call ends (cancelled, timed out, its client gone, or freed):
 * its requests still out are withdrawn; the route forgets it. */
void mrtr_inputs_end(struct mrtr_inputs *in, const char *reason);
