/* --only jwt: an identity provider of the bench's own for http.oauth: an RSA key made at
 * start (libcjose), its OpenID metadata and JWKS served on loopback by a thread, and access
 * tokens it signs for the daemon's front door. The daemon fetches the keys once, at its
 * start; every call then presents the same token, as a client does until it refreshes it. */
#include <arpa/inet.h>
#include <cjose/cjose.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct jwt_issuer {
        int fd;
        unsigned port;
        char url[64];
        cjose_jwk_t *key;
        char *jwks;
        pthread_t thread;
};

static void answer(int c, const struct jwt_issuer *is) {
        char req[2048], *body = NULL, *out = NULL;
        ssize_t n = read(c, req, sizeof req - 1);
        int len;

        if (n <= 0)
                return;
        req[n] = '\0';
        if (strncmp(req, "GET /.well-known/openid-configuration ", 38) == 0)
                len = asprintf(&body, "{\"issuer\":\"%s\",\"jwks_uri\":\"%s/jwks\"}", is->url, is->url);
        else if (strncmp(req, "GET /jwks ", 10) == 0)
                len = asprintf(&body, "%s", is->jwks);
        else
                len = asprintf(&body, "{}");
        if (len < 0)
                return;
        len = asprintf(&out, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                       strcmp(body, "{}") == 0 ? "404 Not Found" : "200 OK", (int)strlen(body), body);
        if (len > 0 && write(c, out, (size_t)len) < 0) {
                /* the daemon went away: nothing to do */
        }
        free(out);
        free(body);
}

static void *serve(void *arg) {
        struct jwt_issuer *is = arg;

        for (;;) {
                int c = accept4(is->fd, NULL, NULL, SOCK_CLOEXEC);

                if (c < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        return NULL; /* the socket was shut down */
                }
                answer(c, is);
                close(c);
        }
}

struct jwt_issuer *jwt_issuer_start(void) {
        static const uint8_t e[] = { 1, 0, 1 };
        struct jwt_issuer *is = calloc(1, sizeof *is);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof sa;
        cjose_err err;
        char *pub;

        if (!is)
                return NULL;
        is->key = cjose_jwk_create_RSA_random(2048, e, sizeof e, &err);
        if (!is->key || !cjose_jwk_set_kid(is->key, "bench", 5, &err) || !(pub = cjose_jwk_to_json(is->key, false, &err)))
                goto fail;
        if (asprintf(&is->jwks, "{\"keys\":[%s]}", pub) < 0)
                is->jwks = NULL;
        free(pub);
        is->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (!is->jwks || is->fd < 0 || bind(is->fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(is->fd, 16) < 0 ||
            getsockname(is->fd, (struct sockaddr *)&sa, &len) < 0)
                goto fail;
        is->port = ntohs(sa.sin_port);
        snprintf(is->url, sizeof is->url, "http://127.0.0.1:%u", is->port);
        if (pthread_create(&is->thread, NULL, serve, is) != 0)
                goto fail;
        return is;
fail:
        if (is->fd > 0)
                close(is->fd);
        if (is->key)
                cjose_jwk_release(is->key);
        free(is->jwks);
        free(is);
        return NULL;
}

const char *jwt_issuer_url(const struct jwt_issuer *is) {
        return is->url;
}

char *jwt_issuer_token(const struct jwt_issuer *is, const char *audience, const char *sub, unsigned ttl) {
        cjose_err err;
        cjose_header_t *h = cjose_header_new(&err);
        char payload[512];
        const char *compact;
        cjose_jws_t *jws;
        char *out = NULL;

        if (!h)
                return NULL;
        snprintf(payload, sizeof payload, "{\"iss\":\"%s\",\"aud\":\"%s\",\"sub\":\"%s\",\"scope\":\"mcp\",\"exp\":%lld}",
                 is->url, audience, sub, (long long)time(NULL) + ttl);
        if (cjose_header_set(h, CJOSE_HDR_ALG, "RS256", &err) && cjose_header_set(h, CJOSE_HDR_KID, "bench", &err) &&
            (jws = cjose_jws_sign(is->key, h, (const uint8_t *)payload, strlen(payload), &err))) {
                if (cjose_jws_export(jws, &compact, &err))
                        out = strdup(compact);
                cjose_jws_release(jws);
        }
        cjose_header_release(h);
        return out;
}

void jwt_issuer_stop(struct jwt_issuer *is) {
        if (!is)
                return;
        shutdown(is->fd, SHUT_RDWR);
        pthread_join(is->thread, NULL);
        close(is->fd);
        cjose_jwk_release(is->key);
        free(is->jwks);
        free(is);
}
