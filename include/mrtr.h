/* Legacy servers behind modern clients: multi round-trip requests (MCP 2026-07-28). A
 * modern client takes no requests from servers; a legacy server's elicitation/create,
 * sampling/createMessage or roots/list during a modern client's tools/call, prompts/get or
 * resources/read whose _meta declared the capability becomes that call's result instead:
 *   - the requests the server opens for the call are gathered into one round, each under a
 *     key of ours, until the server has been quiet for mrtrSettle after the last of them (a
 *     server opens the requests it needs at once; the round is whole when no more come):
 *     the call is answered resultType "input_required" with them and a requestState
 *     (mrtr-seal.h) binding the principal, the request and the round;
 *   - the call goes on at the server, parked: its client is owed nothing more under the
 *     first id (an HTTP request ends there);
 *   - the retry (same method and params, inputResponses, requestState) is checked (the
 *     spec's -32602 for a forged, expired, foreign or other request's state, or a round
 *     already used or ended), each response answers its parked server request, and the
 *     retry takes the call over: its result, or the server's next requests (another
 *     round), go to it. A response missing for a key is asked again, in a new round;
 *   - a round not retried within mrtrTimeout has its server requests answered with an
 *     error and its call cancelled at the server; each principal holds at most
 *     MRTR_ROUNDS_PER_PRINCIPAL parked rounds, past which a server's request is refused.
 * The round lives in this daemon: a retry must reach it (one daemon, or affinity). */
#pragma once

#include <json-c/json.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "mrtr-seal.h"

#define MRTR_ROUNDS_PER_PRINCIPAL 32
#define MRTR_ASKS_MAX 16 /* a server's requests in one round */

struct client;
struct daemon;
struct event_base;
struct jsonrpc_msg;
struct logger;
struct route;
struct server;
struct server_request;
struct access_ask;
struct mrtr_round;

struct mrtr {
        struct daemon *daemon;
        struct event_base *base;
        const struct logger *log;
        struct mrtr_key key;
        TAILQ_HEAD(, mrtr_round) rounds;
        uint64_t next_round;
};

/* The key: the credential "mrtr-key" when $CREDENTIALS_DIRECTORY has one (several daemons
 * behind one URL share it), else a random one for this daemon's life. */
int mrtr_init(struct mrtr *t, struct daemon *d, struct event_base *base, const struct logger *log);
void mrtr_done(struct mrtr *t);

/* tools/call, prompts/get and resources/read: the requests that may answer input_required. */
bool mrtr_method_takes_input(const char *method);
/* Whether a request made during c's call to s goes into a round: c is modern and its call
 * (the one in flight there) declared capability cap and may take input_required. */
bool mrtr_takes(const struct client *c, const struct server *s, int cap);
/* Server request rq (of c's call to s) joins the call's round. -EBUSY: too many parked
 * rounds for the principal; -ENOMEM. The caller then refuses the server's request. */
int mrtr_gather(struct mrtr *t, struct client *c, struct server *s, struct server_request *rq);
/* A modern client's request to s carrying a requestState: a retry, of a round of the
 * daemon's or (the state says) of a modern server's own (mrtr-server.h), which then gets
 * params (consumed: the request as it goes to s). Answers c itself. */
void mrtr_retry(struct mrtr *t, struct client *c, struct jsonrpc_msg *m, struct server *s, const struct access_ask *ask,
                json_object *params);
/* Whom c's requestStates are for ("uid:1000", "token:alice"), into buf. */
void mrtr_principal(const struct client *c, char *buf, size_t size);

/* Whether a call to s of a user other than uid is parked, waiting for its retry: it goes on
 * at the server, which may ask more for it, and a request does not say which call it
 * serves (upcall.c). Walks the rounds: a server's own requests are rare. */
bool mrtr_parked_by_other(const struct mrtr *t, const struct server *s, uid_t uid);
/* Hooks: a parked server request freed by its server (cancelled, or the server ended). */
void mrtr_request_gone(struct mrtr_round *round, struct server_request *rq);
/* The parked call ended at the server: its result or error (both NULL: its process ended),
 * kept for the retry. */
void mrtr_route_answered(struct mrtr_round *round, json_object *result, json_object *error);

/* requestStates of the daemon's own, for no round: a call answered input_required by the
 * daemon itself (the sign-in link, signin-elicit.h), sealed as a round's are (principal,
 * request, expiry) with round set to what it is for. */
#define MRTR_ROUND_SIGNIN UINT64_MAX
/* The sealed state for c's request m; NULL when out of memory. */
char *mrtr_seal_own(struct mrtr *t, struct client *c, struct jsonrpc_msg *m, uint64_t round);
/* Whether m's requestState is one of those, sealed for c, m and round, not expired. */
bool mrtr_state_is_own(struct mrtr *t, struct client *c, struct jsonrpc_msg *m, uint64_t round);
