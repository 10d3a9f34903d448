/* One bounded HTTP exchange of a sign-in through the curl loop; see oauth-fetch.h. */
#include "oauth-fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curl-loop.h"
#include "macro.h"
#include "remote-config.h"

struct oauth_fetch {
        struct curl_loop *loop;
        CURL *easy;
        struct curl_slist *headers;
        char *body_out;               /* what is POSTed (a secret may be in it: wiped) */
        char *in;                     /* the answer's body */
        size_t in_len;
        bool too_big;
        bool active;                  /* in the curl loop */
        char curl_error[CURL_ERROR_SIZE];
        char *challenge;              /* WWW-Authenticate, the first */
        oauth_fetch_done_fn done;
        void *userdata;
};

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
        struct oauth_fetch *f = userdata;
        size_t len = size * n;
        char *grown;

        if (f->in_len + len > OAUTH_FETCH_BODY_MAX) {
                f->too_big = true;
                return 0; /* curl ends the transfer */
        }
        grown = realloc(f->in, f->in_len + len + 1);
        if (!grown)
                return 0;
        f->in = grown;
        memcpy(f->in + f->in_len, data, len);
        f->in_len += len;
        f->in[f->in_len] = '\0';
        return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata) {
        struct oauth_fetch *f = userdata;
        size_t len = size * n, name = sizeof "WWW-Authenticate:" - 1;

        if (!f->challenge && len > name && len - name < 2048 && strncasecmp(data, "WWW-Authenticate:", name) == 0) {
                f->challenge = strndup(data + name, len - name);
                if (f->challenge)
                        f->challenge[strcspn(f->challenge, "\r\n")] = '\0';
        }
        return len;
}

const char *oauth_fetch_challenge(const struct oauth_fetch *f) {
        return f->challenge;
}

static void on_done(CURL *easy, CURLcode result, void *userdata) {
        struct oauth_fetch *f = userdata;
        long status = 0;
        const char *error = NULL;

        f->active = false;
        if (result == CURLE_OK)
                curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        else
                error = f->too_big ? "the answer was too large" : curl_easy_strerror(result);
        f->done(f, status, f->in ? f->in : "", f->in_len, error, f->userdata);
}

static void wipe(char *s) {
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
}

void oauth_fetch_free(struct oauth_fetch *f) {
        if (!f)
                return;
        if (f->active)
                curl_loop_remove(f->loop, f->easy);
        if (f->easy)
                curl_easy_cleanup(f->easy);
        curl_slist_free_all(f->headers);
        wipe(f->body_out);
        free(f->challenge);
        if (f->in)
                explicit_bzero(f->in, f->in_len); /* a token answer */
        free(f->in);
        free(f);
}

static bool add_header(struct oauth_fetch *f, const char *line) {
        struct curl_slist *next = curl_slist_append(f->headers, line);

        if (!next)
                return false;
        f->headers = next;
        return true;
}

int oauth_fetch_start(struct curl_loop *loop, const struct remote_config *rc, const char *url, enum oauth_body kind,
                      const char *body, oauth_fetch_done_fn done, void *userdata, struct oauth_fetch **ret) {
        return oauth_fetch_request(loop, rc, &(struct oauth_request){ .url = url, .kind = kind, .body = body }, done, userdata,
                                   ret);
}

static bool add_authorization(struct oauth_fetch *f, const char *value) {
        char *line = NULL;
        bool ok;

        if (asprintf(&line, "Authorization: %s", value) < 0)
                return false;
        ok = add_header(f, line);
        wipe(line);
        return ok;
}

int oauth_fetch_request(struct curl_loop *loop, const struct remote_config *rc, const struct oauth_request *req,
                        oauth_fetch_done_fn done, void *userdata, struct oauth_fetch **ret) {
        struct oauth_fetch *f = calloc(1, sizeof *f);
        const char *url = req->url, *body = req->body;
        enum oauth_body kind = req->kind;
        CURL *e;

        if (!f)
                return -ENOMEM;
        *f = (struct oauth_fetch){ .loop = loop, .done = done, .userdata = userdata };
        f->easy = e = curl_easy_init();
        if (!e || !add_header(f, req->mcp ? "Accept: application/json, text/event-stream" : "Accept: application/json") ||
            (req->authorization && !add_authorization(f, req->authorization)) ||
            (kind == OAUTH_BODY_FORM && !add_header(f, "Content-Type: application/x-www-form-urlencoded")) ||
            (kind == OAUTH_BODY_JSON && !add_header(f, "Content-Type: application/json")) ||
            (kind != OAUTH_BODY_NONE && !(f->body_out = strdup(body)))) {
                oauth_fetch_free(f);
                return -ENOMEM;
        }
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, f->headers);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(rc->connect_timeout * 1000));
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)OAUTH_FETCH_TIMEOUT_MS);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, curl_loop_open_socket);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, f->curl_error);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, f);
        if (rc->proxy)
                curl_easy_setopt(e, CURLOPT_PROXY, rc->proxy);
        if (rc->ca_file)
                curl_easy_setopt(e, CURLOPT_CAINFO, rc->ca_file);
        if (rc->insecure && remote_url_loopback(url)) {
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (f->body_out) {
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, f->body_out);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(f->body_out));
        }
        if (curl_loop_add(loop, e, on_done, f) < 0) {
                oauth_fetch_free(f);
                return -ENOMEM;
        }
        f->active = true;
        *ret = f;
        return 0;
}
