/* Multi round-trip requests for legacy servers' requests during modern clients' calls;
 * see mrtr.h. */
#include "mrtr.h"
#include "mrtr-server.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client-access.h"
#include "credential.h"
#include "daemon.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "router.h"
#include "server.h"
#include "time-util.h"
#include "upcall.h"

enum round_state {
        ROUND_GATHERING, /* the call's server requests come in, until mrtrSettle of quiet */
        ROUND_PARKED,    /* answered input_required: waiting for the retry */
        ROUND_ENDED,     /* the call ended at the server meanwhile: its answer kept for the retry */
};

struct mrtr_round {
        TAILQ_ENTRY(mrtr_round) entry;
        struct mrtr *owner;
        enum round_state state;
        uint64_t id;                  /* the round a requestState names; new at each re-ask */
        struct client *client;        /* ROUND_GATHERING: whose call */
        json_object *call;            /* ROUND_GATHERING: the call's id, referenced */
        struct server *server;
        struct route *route;          /* ROUND_PARKED: the call */
        json_object *answer;          /* ROUND_ENDED: {"result"} or {"error"}; NULL: its process ended */
        char principal[MRTR_PRINCIPAL_MAX];
        uid_t uid;                    /* its client's user */
        unsigned char request[MRTR_DIGEST_LEN];
        struct server_request *asks[MRTR_ASKS_MAX];
        size_t n_asks;
        struct event *timer;          /* the settle window, then mrtrTimeout */
};

int mrtr_init(struct mrtr *t, struct daemon *d, struct event_base *base, const struct logger *log) {
        _cleanup_free_ char *secret = NULL;
        const char *dir = getenv("CREDENTIALS_DIRECTORY");
        int r;

        *t = (struct mrtr){ .daemon = d, .base = base, .log = log };
        TAILQ_INIT(&t->rounds);
        r = dir ? credential_read(dir, "mrtr-key", &secret) : -ENOENT;
        if (r >= 0) {
                r = mrtr_key_from_secret(&t->key, secret, strlen(secret));
                explicit_bzero(secret, strlen(secret));
                if (r < 0) {
                        log_error(log, "the credential mrtr-key must hold at least %d bytes", MRTR_KEY_LEN);
                        return r;
                }
                log_info(log, "requestState is sealed with the credential mrtr-key");
                return 0;
        }
        if (r != -ENOENT) {
                log_error(log, "cannot read the credential mrtr-key: %s", strerror(-r));
                return r;
        }
        r = mrtr_key_generate(&t->key);
        if (r < 0)
                log_error(log, "cannot make a key for requestState: no randomness");
        return r;
}

static void round_free(struct mrtr_round *round) {
        TAILQ_REMOVE(&round->owner->rounds, round, entry);
        for (size_t i = 0; i < round->n_asks; i++)
                round->asks[i]->round = NULL;
        event_free(round->timer);
        json_object_put(round->call);
        json_object_put(round->answer);
        free(round);
}

void mrtr_done(struct mrtr *t) {
        struct mrtr_round *round;

        while ((round = TAILQ_FIRST(&t->rounds)))
                round_free(round);
        explicit_bzero(&t->key, sizeof t->key);
}

/* The requests the specification lets answer input_required. */
bool mrtr_method_takes_input(const char *method) {
        return strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0 ||
               strcmp(method, "resources/read") == 0;
}

bool mrtr_takes(const struct client *c, const struct server *s, int cap) {
        const struct route *rt = router_sole_route(c, s);

        return cap >= 0 && rt && mrtr_method_takes_input(rt->method) && (rt->client_caps & (1u << cap));
}

/* Whom a requestState is for: the bearer token's user over HTTP, else the peer's uid. */
void mrtr_principal(const struct client *c, char *buf, size_t size) {
        struct client_peer p = client_peer(c);

        if (p.token)
                snprintf(buf, size, "token:%s", p.token);
        else
                snprintf(buf, size, "uid:%u", (unsigned)client_principal(c)->uid);
}

static unsigned rounds_of(const struct mrtr *t, const char *principal) {
        const struct mrtr_round *round;
        unsigned n = 0;

        TAILQ_FOREACH(round, &t->rounds, entry)
                n += strcmp(round->principal, principal) == 0;
        return n;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata);

static struct mrtr_round *gathering(struct mrtr *t, struct client *c, struct server *s, json_object *call) {
        struct mrtr_round *round;

        TAILQ_FOREACH(round, &t->rounds, entry)
                if (round->state == ROUND_GATHERING && round->client == c && round->server == s &&
                    json_object_equal(round->call, call))
                        return round;
        return NULL;
}

int mrtr_gather(struct mrtr *t, struct client *c, struct server *s, struct server_request *rq) {
        const struct route *rt = router_sole_route(c, s);
        struct timeval settle = timeval_from_seconds(daemon_config(t->daemon)->mrtr_settle);
        struct mrtr_round *round;
        char principal[MRTR_PRINCIPAL_MAX];

        if (!rt)
                return -ENOENT;
        round = gathering(t, c, s, rt->client_id);
        if (!round) {
                mrtr_principal(c, principal, sizeof principal);
                if (rounds_of(t, principal) >= MRTR_ROUNDS_PER_PRINCIPAL)
                        return -EBUSY;
                round = calloc(1, sizeof *round);
                if (!round)
                        return -ENOMEM;
                *round = (struct mrtr_round){ .owner = t, .state = ROUND_GATHERING, .id = ++t->next_round, .client = c,
                                              .call = json_object_get(rt->client_id), .server = s,
                                              .uid = client_principal(c)->uid };
                memcpy(round->principal, principal, sizeof principal);
                memcpy(round->request, rt->digest, sizeof round->request);
                round->timer = evtimer_new(t->base, on_timer, round);
                if (!round->timer) {
                        json_object_put(round->call);
                        free(round);
                        return -ENOMEM;
                }
                TAILQ_INSERT_TAIL(&t->rounds, round, entry);
        }
        if (round->n_asks == MRTR_ASKS_MAX)
                return -EBUSY;
        round->asks[round->n_asks++] = rq;
        rq->round = round;
        /* The settle window counts from the last request: one more may follow it. */
        evtimer_add(round->timer, &settle);
        return 0;
}

static void ask_key(const struct server_request *rq, char *buf, size_t size) {
        snprintf(buf, size, "input-%" PRId64, rq->id);
}

/* The input_required result asking the round's requests, under a fresh seal; NULL when out
 * of memory. */
static json_object *input_required(struct mrtr_round *round) {
        struct mrtr_claims claims = { .round = round->id };
        json_object *result, *requests;
        _cleanup_free_ char *state = NULL;
        char key[32];

        memcpy(claims.principal, round->principal, sizeof claims.principal);
        memcpy(claims.request, round->request, sizeof claims.request);
        claims.expires = realtime_usec() / 1000000 + (uint64_t)(daemon_config(round->owner->daemon)->mrtr_timeout + 0.999);
        state = mrtr_seal(&round->owner->key, &claims);
        if (!state)
                return NULL;
        result = json_object_new_object();
        requests = json_object_new_object();
        for (size_t i = 0; i < round->n_asks; i++) {
                json_object *ask = json_object_new_object();

                json_object_object_add(ask, "method", json_object_new_string(round->asks[i]->method));
                if (round->asks[i]->params)
                        json_object_object_add(ask, "params", json_object_get(round->asks[i]->params));
                ask_key(round->asks[i], key, sizeof key);
                json_object_object_add(requests, key, ask);
        }
        json_object_object_add(result, "resultType", json_object_new_string("input_required"));
        json_object_object_add(result, "inputRequests", requests);
        json_object_object_add(result, "requestState", json_object_new_string(state));
        return result;
}

static void arm_expiry(struct mrtr_round *round) {
        struct timeval tv = timeval_from_seconds(daemon_config(round->owner->daemon)->mrtr_timeout);

        evtimer_add(round->timer, &tv);
}

/* Every request of the round answered with an error saying why; the round forgets them. */
static void fail_asks(struct mrtr_round *round, const char *why) {
        struct server_requests *q = daemon_server_requests(round->owner->daemon);

        while (round->n_asks > 0)
                server_requests_settle(q, round->asks[--round->n_asks], NULL, why);
}

/* The settle window has passed: the call is answered input_required with what its server
 * asked meanwhile, and parked. */
static void settle(struct mrtr_round *round) {
        struct client *c = round->client;
        struct route *rt = router_find(daemon_router(round->owner->daemon), c, round->call);
        json_object *result;

        if (!rt || rt->server != round->server) {
                fail_asks(round, "the call this request served has ended");
                round_free(round);
                return;
        }
        result = input_required(round);
        if (!result) {
                fail_asks(round, "mcpvisor is out of memory");
                round_free(round);
                return;
        }
        log_emit(round->owner->log, LOG_DEBUG, &(struct log_subject){ .server = round->server->config->name, .client = c->id },
                 "%s answered input_required with %zu request(s) of the server (round %" PRIu64 ")", rt->method,
                 round->n_asks, round->id);
        /* Parked before the answer goes: a client of one HTTP request may end with it. */
        for (size_t i = 0; i < round->n_asks; i++)
                server_requests_park(round->asks[i]);
        round->route = rt;
        round->client = NULL;
        json_object_put(round->call);
        round->call = NULL;
        round->state = ROUND_PARKED;
        arm_expiry(round);
        client_send(c, jsonrpc_result(rt->client_id, result));
        router_park(rt, round);
}

/* No retry within mrtrTimeout: the server's requests are answered with an error, the call
 * cancelled at the server. */
static void expire(struct mrtr_round *round) {
        struct route *rt = round->route;

        log_emit(round->owner->log, LOG_INFO, &(struct log_subject){ .server = round->server->config->name },
                 "an input_required round was not retried within mrtrTimeout (%g s): its call is cancelled",
                 daemon_config(round->owner->daemon)->mrtr_timeout);
        /* The call first: a server that sees its request fail might answer the call with
         * that, to no one. */
        round->route = NULL;
        if (rt)
                router_abandon_parked(rt, "its client did not retry within mrtrTimeout");
        fail_asks(round, "the client did not retry the request within mrtrTimeout");
        round_free(round);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct mrtr_round *round = userdata;

        if (round->state == ROUND_GATHERING)
                settle(round);
        else
                expire(round);
}

bool mrtr_parked_by_other(const struct mrtr *t, const struct server *s, uid_t uid) {
        const struct mrtr_round *round;

        TAILQ_FOREACH(round, &t->rounds, entry)
                if (round->state == ROUND_PARKED && round->server == s && round->uid != uid)
                        return true;
        return false;
}

void mrtr_request_gone(struct mrtr_round *round, struct server_request *rq) {
        for (size_t i = 0; i < round->n_asks; i++)
                if (round->asks[i] == rq) {
                        round->asks[i] = round->asks[--round->n_asks];
                        break;
                }
        rq->round = NULL;
        if (round->state == ROUND_GATHERING && round->n_asks == 0)
                round_free(round); /* its client left, or the server took them back */
}

void mrtr_route_answered(struct mrtr_round *round, json_object *result, json_object *error) {
        round->route = NULL;
        round->state = ROUND_ENDED;
        if (result || error) {
                round->answer = json_object_new_object();
                json_object_object_add(round->answer, error ? "error" : "result", json_object_get(error ? error : result));
        }
}

static void reply_invalid(struct client *c, json_object *id, const char *why) {
        char message[200];

        snprintf(message, sizeof message, "Invalid params: requestState %s", why);
        client_reply_error(c, id, JSONRPC_INVALID_PARAMS, message, NULL);
}

static struct mrtr_round *round_by_id(struct mrtr *t, uint64_t id) {
        struct mrtr_round *round;

        TAILQ_FOREACH(round, &t->rounds, entry)
                if (round->id == id && round->state != ROUND_GATHERING)
                        return round;
        return NULL;
}

/* The call ended while parked: the retry gets how. */
static void answer_ended(struct mrtr_round *round, struct client *c, json_object *id) {
        json_object *v;

        if (round->answer && json_object_object_get_ex(round->answer, "error", &v))
                client_send(c, jsonrpc_error_object(id, json_object_get(v)));
        else if (round->answer && json_object_object_get_ex(round->answer, "result", &v))
                client_send(c, jsonrpc_result(id, json_object_get(v)));
        else
                client_reply_error(c, id, JSONRPC_INTERNAL_ERROR, "the server's process ended before the call completed", NULL);
}

/* Each response present answers its server request, which leaves the round; the ones
 * missing stay. */
static size_t deliver(struct mrtr_round *round, json_object *responses) {
        struct server_requests *q = daemon_server_requests(round->owner->daemon);
        char key[32];
        json_object *v;
        size_t i = 0;

        while (i < round->n_asks) {
                struct server_request *rq = round->asks[i];

                ask_key(rq, key, sizeof key);
                if (!json_object_object_get_ex(responses, key, &v) || !json_object_is_type(v, json_type_object)) {
                        i++;
                        continue;
                }
                round->asks[i] = round->asks[--round->n_asks];
                server_requests_settle(q, rq, v, NULL);
        }
        return round->n_asks;
}

void mrtr_retry(struct mrtr *t, struct client *c, struct jsonrpc_msg *m, struct server *s, const struct access_ask *ask,
                json_object *params) {
        json_object *state, *responses = NULL, *result;
        unsigned char request[MRTR_DIGEST_LEN];
        char principal[MRTR_PRINCIPAL_MAX];
        struct mrtr_opened opened;
        struct mrtr_round *round;
        enum mrtr_open_result r;
        struct route *rt;

        if (!client_access_pass(c, s, m, ask)) {
                json_object_put(params);
                return;
        }
        json_object_object_get_ex(m->params, "requestState", &state);
        if (!json_object_is_type(state, json_type_string)) {
                json_object_put(params);
                reply_invalid(c, m->id, "must be a string");
                return;
        }
        mrtr_request_digest(m->method, m->params, request);
        mrtr_principal(c, principal, sizeof principal);
        r = mrtr_open_full(&t->key, json_object_get_string(state), principal, request, realtime_usec() / 1000000, &opened);
        if (r != MRTR_OPEN_OK) {
                json_object_put(params);
                client_log(c, LOG_INFO, "refused a retry of %s: its requestState is %s", m->method, mrtr_open_result_to_string(r));
                reply_invalid(c, m->id, mrtr_open_result_to_string(r));
                return;
        }
        if (opened.server[0]) {
                /* A modern server's own round: its state goes back to it (mrtr-server.h). */
                mrtr_server_retry(c, m, s, ask, params, &opened);
                free(opened.server_state);
                return;
        }
        json_object_put(params);
        round = round_by_id(t, opened.round);
        if (!round || round->server != s) {
                client_log(c, LOG_INFO, "refused a retry of %s: its round was retried already or has ended", m->method);
                reply_invalid(c, m->id, "names a round that was retried already or has ended");
                return;
        }
        if (round->state == ROUND_ENDED) {
                answer_ended(round, c, m->id);
                round_free(round);
                return;
        }
        json_object_object_get_ex(m->params, "inputResponses", &responses);
        if (deliver(round, responses) > 0) {
                /* The specification's way with a missing response: asked again, in a new round. */
                round->id = ++t->next_round;
                result = input_required(round);
                if (!result) {
                        client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "mcpvisor is out of memory", NULL);
                        return;
                }
                client_send(c, jsonrpc_result(m->id, result));
                event_del(round->timer);
                arm_expiry(round);
                return;
        }
        if (!client_hold_request(c, m->id))
                return;
        rt = round->route;
        round->route = NULL;
        if (router_resume(rt, c, m->id) < 0) {
                client_request_done(c);
                client_reply_error(c, m->id, JSONRPC_INTERNAL_ERROR, "mcpvisor is out of memory", NULL);
                round->route = rt;
                return;
        }
        round_free(round);
}

char *mrtr_seal_own(struct mrtr *t, struct client *c, struct jsonrpc_msg *m, uint64_t round) {
        struct mrtr_claims claims = { .round = round };

        mrtr_principal(c, claims.principal, sizeof claims.principal);
        mrtr_request_digest(m->method, m->params, claims.request);
        claims.expires = realtime_usec() / 1000000 + (uint64_t)(daemon_config(t->daemon)->mrtr_timeout + 0.999);
        return mrtr_seal(&t->key, &claims);
}

bool mrtr_state_is_own(struct mrtr *t, struct client *c, struct jsonrpc_msg *m, uint64_t round) {
        unsigned char request[MRTR_DIGEST_LEN];
        char principal[MRTR_PRINCIPAL_MAX];
        json_object *state;
        uint64_t id = 0;

        if (!json_object_object_get_ex(m->params, "requestState", &state) || !json_object_is_type(state, json_type_string))
                return false;
        mrtr_request_digest(m->method, m->params, request);
        mrtr_principal(c, principal, sizeof principal);
        return mrtr_open(&t->key, json_object_get_string(state), principal, request, realtime_usec() / 1000000, &id) ==
                       MRTR_OPEN_OK &&
               id == round;
}
