/* The requestState of a multi round-trip request (MCP 2026-07-28) that the daemon makes for a
 * legacy server's requests, or wraps around a modern server's own (mrtr-server.h): sealed with AES-256-GCM under a key of the daemon's (made at
 * start, or the credential "mrtr-key" shared by several daemons), so that a client can
 * neither read nor change it. It binds who may present it (the principal), which request
 * it continues (the method and a digest of its params), the round it answers and when it
 * lapses; the round itself stays in the daemon's memory, which makes it single-use. A modern
 * server's state travels inside the seal instead, with the server's name: nothing of it
 * stays in the daemon, and the client can neither read it nor hand the server another. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define MRTR_KEY_LEN 32
#define MRTR_DIGEST_LEN 32
#define MRTR_PRINCIPAL_MAX 160
#define MRTR_SERVER_MAX 256     /* a server's name, with its NUL */

struct mrtr_key {
        unsigned char bytes[MRTR_KEY_LEN];
};

struct mrtr_claims {
        char principal[MRTR_PRINCIPAL_MAX];     /* "uid:1000", "token:alice" */
        unsigned char request[MRTR_DIGEST_LEN]; /* mrtr_request_digest() */
        uint64_t round;                         /* the parked round it answers */
        uint64_t expires;                       /* seconds since the epoch */
        /* A modern server's round (round 0): whose it is and the server's own requestState
         * (NULL: it gave none). Borrowed. */
        const char *server;
        const char *server_state;
};

/* What an opened state holds beyond its checks. */
struct mrtr_opened {
        uint64_t round;
        char server[MRTR_SERVER_MAX];  /* a modern server's round: its name; "" for one of the daemon's own */
        char *server_state;            /* malloc'd; NULL when the server gave none */
};

enum mrtr_open_result {
        MRTR_OPEN_OK,
        MRTR_OPEN_FORGED,        /* not ours: malformed, tampered, or sealed under another key */
        MRTR_OPEN_EXPIRED,
        MRTR_OPEN_FOREIGN,       /* another principal's */
        MRTR_OPEN_OTHER_REQUEST, /* made for another request */
};

/* A fresh random key; -EIO when the system has no randomness to give. */
int mrtr_key_generate(struct mrtr_key *k);
/* The key a credential's text stands for (any length of at least 32 bytes: its SHA-256),
 * -EINVAL when shorter. */
int mrtr_key_from_secret(struct mrtr_key *k, const void *secret, size_t len);

/* SHA-256 of the method and the request's params with its _meta, inputResponses and
 * requestState left out, members in sorted order at every depth: the retry of a request
 * digests as the request did. */
void mrtr_request_digest(const char *method, json_object *params, unsigned char ret[MRTR_DIGEST_LEN]);

/* The sealed text (base64url, no padding), malloc'd; NULL when out of memory (or a
 * principal or server name too long). */
char *mrtr_seal(const struct mrtr_key *k, const struct mrtr_claims *claims);
/* Opens text and checks it against who presents it, for which request, at time now; the
 * round in *ret_round on MRTR_OPEN_OK. */
enum mrtr_open_result mrtr_open(const struct mrtr_key *k, const char *text, const char *principal,
                                const unsigned char request[MRTR_DIGEST_LEN], uint64_t now, uint64_t *ret_round);
/* mrtr_open() telling all the state holds (ret->server_state is the caller's to free, set
 * on MRTR_OPEN_OK only). */
enum mrtr_open_result mrtr_open_full(const struct mrtr_key *k, const char *text, const char *principal,
                                     const unsigned char request[MRTR_DIGEST_LEN], uint64_t now, struct mrtr_opened *ret);
const char *mrtr_open_result_to_string(enum mrtr_open_result r);
