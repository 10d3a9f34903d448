/* Unit tests for http-config.c: the "http" setting, its addresses, tokens and origins, and
 * maxHttpSessions/httpSessionIdle (issue 18). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "http-config.h"
#include "jwt-check.h"
#include "unit-helpers.h"

static struct config cfg;
static struct config_problems probs;

/* Two credentials in a scratch $CREDENTIALS_DIRECTORY: a good token and a short one. */
static void setup(void) {
        FILE *f;

        config_init_defaults(&cfg);
        tmpdir_make();
        cr_assert_not_null(f = fopen(tmp_path("ci-token"), "w"));
        fputs("0123456789abcdef0123456789abcdef\n", f);
        fclose(f);
        cr_assert_not_null(f = fopen(tmp_path("short"), "w"));
        fputs("tiny", f);
        fclose(f);
        setenv("CREDENTIALS_DIRECTORY", tmp_path(""), 1);
}

static void teardown(void) {
        config_done(&cfg);
        problems_done(&probs);
        tmpdir_remove();
        unsetenv("CREDENTIALS_DIRECTORY");
}

TestSuite(http_config, .init = setup, .fini = teardown);

static int parse(const char *text) {
        config_done(&cfg);
        problems_done(&probs);
        return config_parse(text, strlen(text), &cfg, &probs);
}

/* The first problem is at path: the tests below give one bad input each. */
static void expect_problem(const char *text, const char *path) {
        cr_assert_lt(parse(text), 0, "accepted: %s", text);
        cr_assert_geq(probs.count, 1);
        cr_assert_str_eq(probs.items[0].path, path, "%s: problem at %s (%s)", text, probs.items[0].path,
                         probs.items[0].message);
}

Test(http_config, defaults_listen_nowhere) {
        cr_assert_eq(parse("{\"mcpServers\": {}}"), 0);
        cr_assert_eq(cfg.http.n_listen, 0, "nothing listens on TCP unless configured");
        cr_assert_null(cfg.http.path);
        cr_assert_eq(cfg.max_http_sessions, 1024);
        cr_assert_float_eq(cfg.http_session_idle, 300.0, 1e-9);
}

Test(http_config, full_example) {
        cr_assert_eq(parse("{\"mcpServers\": {}, \"mcpvisor\": {\"http\": {"
                           "\"listen\": [\"127.0.0.1:8765\", \"[::1]:8765\", \"unix:/run/mcpvisor/http.sock\"],"
                           "\"path\": \"/mcp\", \"allowedOrigins\": [\"https://app.example\"],"
                           "\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0, \"groups\": [0]}]},"
                           "\"maxHttpSessions\": 10, \"httpSessionIdle\": 60}}"),
                     0, "%s", probs.count ? probs.items[0].message : "");
        cr_assert_eq(cfg.http.n_listen, 3);
        cr_assert_str_eq(cfg.http.listen[0].host, "127.0.0.1");
        cr_assert_eq(cfg.http.listen[0].port, 8765);
        cr_assert_str_eq(cfg.http.listen[1].host, "::1");
        cr_assert_str_eq(cfg.http.listen[2].path, "/run/mcpvisor/http.sock");
        cr_assert_str_eq(cfg.http.path, "/mcp");
        cr_assert_eq(cfg.http.n_tokens, 1);
        cr_assert_str_eq(cfg.http.tokens[0].secret, "0123456789abcdef0123456789abcdef", "the newline is dropped");
        cr_assert_eq(cfg.http.tokens[0].uid, 0);
        cr_assert_eq(cfg.max_http_sessions, 10);
}

Test(http_config, bad_addresses) {
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": \"127.0.0.1:8765\"}}}", "mcpvisor.http.listen");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [\"localhost:8765\"]}}}", "mcpvisor.http.listen[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [\"127.0.0.1\"]}}}", "mcpvisor.http.listen[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [\"127.0.0.1:0\"]}}}", "mcpvisor.http.listen[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [\"127.0.0.1:65536\"]}}}", "mcpvisor.http.listen[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [\"::1:8765\"]}}}", "mcpvisor.http.listen[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [\"unix:relative.sock\"]}}}", "mcpvisor.http.listen[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [8765]}}}", "mcpvisor.http.listen[0]");
}

Test(http_config, bad_path_and_keys) {
        expect_problem("{\"mcpvisor\": {\"http\": {\"path\": \"mcp\"}}}", "mcpvisor.http.path");
        expect_problem("{\"mcpvisor\": {\"http\": {\"path\": \"/healthz\"}}}", "mcpvisor.http.path");
        expect_problem("{\"mcpvisor\": {\"http\": {\"path\": \"/mcp?x=1\"}}}", "mcpvisor.http.path");
        expect_problem("{\"mcpvisor\": {\"http\": {\"listn\": []}}}", "mcpvisor.http.listn");
        expect_problem("{\"mcpvisor\": {\"http\": []}}", "mcpvisor.http");
        expect_problem("{\"mcpvisor\": {\"http\": {\"allowedOrigins\": \"*\"}}}", "mcpvisor.http.allowedOrigins");
        expect_problem("{\"mcpvisor\": {\"maxHttpSessions\": 0}}", "mcpvisor.maxHttpSessions");
        expect_problem("{\"mcpvisor\": {\"httpSessionIdle\": 0}}", "mcpvisor.httpSessionIdle");
}

Test(http_config, bad_tokens) {
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": \"literal\", \"user\": 0}]}}}",
                       "mcpvisor.http.tokens[0].token");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"missing\"}, \"user\": 0}]}}}",
                       "mcpvisor.http.tokens[0].token");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"short\"}, \"user\": 0}]}}}",
                       "mcpvisor.http.tokens[0].token");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"../ci-token\"}, \"user\": 0}]}}}",
                       "mcpvisor.http.tokens[0].token");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}}]}}}",
                       "mcpvisor.http.tokens[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": \"no-such-user-xyz\"}]}}}",
                       "mcpvisor.http.tokens[0].user");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0, \"groups\": [\"no-such-group-xyz\"]}]}}}",
                       "mcpvisor.http.tokens[0].groups[0]");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0, \"role\": \"x\"}]}}}",
                       "mcpvisor.http.tokens[0].role");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0, \"profile\": \"nope\"}]}}}",
                       "mcpvisor.http.tokens[0].profile");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0},"
                       "{\"token\": {\"credential\": \"ci-token\"}, \"user\": 1}]}}}",
                       "mcpvisor.http.tokens[1]");
}

/* Every copy of a token is told, each against the first, and every bad address, not only
 * the first. */
Test(http_config, each_bad_item_told) {
        cr_assert_lt(parse("{\"mcpvisor\": {\"http\": {\"tokens\": ["
                           "{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0},"
                           "{\"token\": {\"credential\": \"ci-token\"}, \"user\": 1},"
                           "{\"token\": {\"credential\": \"ci-token\"}, \"user\": 2}],"
                           "\"listen\": [\"127.0.0.1:1\", 8765, \"127.0.0.1:2\", \"x\"]}}}"),
                     0);
        cr_assert_eq(probs.count, 4);
        for (size_t i = 0; i < probs.count; i++) {
                static const char *const paths[] = { "mcpvisor.http.tokens[1]", "mcpvisor.http.tokens[2]",
                                                     "mcpvisor.http.listen[1]", "mcpvisor.http.listen[3]" };
                bool found = false;

                for (size_t j = 0; j < probs.count; j++)
                        found |= strcmp(probs.items[j].path, paths[i]) == 0;
                cr_assert(found, "no problem at %s", paths[i]);
        }
        for (size_t j = 0; j < probs.count; j++)
                if (strncmp(probs.items[j].path, "mcpvisor.http.tokens", 20) == 0)
                        cr_assert(strstr(probs.items[j].message, "the same token as mcpvisor.http.tokens[0]"), "%s",
                                  probs.items[j].message);
}

Test(http_config, no_credentials_directory) {
        unsetenv("CREDENTIALS_DIRECTORY");
        expect_problem("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0}]}}}",
                       "mcpvisor.http.tokens[0].token");
}

Test(http_config, token_found_in_constant_time_compare) {
        cr_assert_eq(parse("{\"mcpvisor\": {\"http\": {\"tokens\": [{\"token\": {\"credential\": \"ci-token\"}, \"user\": 0}]}}}"), 0);
        cr_assert_not_null(http_token_find(&cfg.http, "0123456789abcdef0123456789abcdef", 32));
        cr_assert_null(http_token_find(&cfg.http, "0123456789abcdef0123456789abcdeX", 32));
        cr_assert_null(http_token_find(&cfg.http, "0123456789abcdef0123456789abcde", 31), "a prefix is not the token");
        cr_assert_null(http_token_find(&cfg.http, "", 0));
}

Test(http_config, origins) {
        struct http_config none = { 0 };
        char *allowed[] = { "https://app.example", NULL };
        struct http_config some = { .allowed_origins = allowed };

        cr_assert(http_origin_allowed(&none, "http://localhost"));
        cr_assert(http_origin_allowed(&none, "http://localhost:3000"));
        cr_assert(http_origin_allowed(&none, "http://127.0.0.1:8765"));
        cr_assert(http_origin_allowed(&none, "http://[::1]:8765"));
        cr_assert_not(http_origin_allowed(&none, "http://localhost.evil.example"), "DNS rebinding");
        cr_assert_not(http_origin_allowed(&none, "http://localhost:80x"));
        cr_assert_not(http_origin_allowed(&none, "https://evil.example"));
        cr_assert_not(http_origin_allowed(&none, "null"));
        cr_assert(http_origin_allowed(&some, "https://app.example"));
        cr_assert_not(http_origin_allowed(&some, "http://localhost"), "a list replaces the default");
}

Test(http_config, oauth) {
        cr_assert_eq(parse("{\"mcpvisor\": {\"http\": {\"listen\": [\"127.0.0.1:8765\", \"[::1]:9000\", \"unix:/run/x.sock\"],"
                           "\"oauth\": {\"issuer\": \"https://id.example\", \"groupsClaim\": \"groups\","
                           "\"users\": {\"alice@example\": \"root\"}, \"requiredScopes\": [\"mcp\"],"
                           "\"algorithms\": [\"RS256\", \"ES256\"], \"clockSkew\": 30}}}}"),
                     0, "%s", probs.count ? probs.items[0].message : "");
        cr_assert_str_eq(cfg.http.oauth.issuer, "https://id.example");
        cr_assert_str_eq(cfg.http.oauth.audiences[0], "http://127.0.0.1:8765/mcp", "by default the front door's URLs");
        cr_assert_str_eq(cfg.http.oauth.audiences[1], "http://[::1]:9000/mcp");
        cr_assert_null(cfg.http.oauth.audiences[2]);
        cr_assert_null(cfg.http.oauth.user_claim, "sub");
        cr_assert_eq(cfg.http.oauth.algs, JWT_RS256 | JWT_ES256);
        cr_assert_float_eq(cfg.http.oauth.clock_skew, 30, 1e-9);
        cr_assert_str_eq(http_oauth_user_of(&cfg.http.oauth, "alice@example"), "root");
        cr_assert_str_eq(http_oauth_user_of(&cfg.http.oauth, "bob"), "bob");
        cr_assert_str_eq(http_oauth_resource(&cfg.http, "[::1]:9000"), "http://[::1]:9000/mcp", "the URL the client used");
        cr_assert_str_eq(http_oauth_resource(&cfg.http, "evil.example"), "http://127.0.0.1:8765/mcp");
        cr_assert_eq(parse("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"https://id.example\", \"audience\": \"api://mcp\"}}}}"),
                     0);
        cr_assert_str_eq(cfg.http.oauth.audiences[0], "api://mcp");
        cr_assert_eq(cfg.http.oauth.algs, JWT_DEFAULT_ALGS);
        cr_assert_float_eq(cfg.http.oauth.clock_skew, 60, 1e-9);
}

Test(http_config, oauth_refused) {
        expect_problem("{\"mcpvisor\": {\"http\": {\"listen\": [\"127.0.0.1:1\"], \"oauth\": {}}}}", "mcpvisor.http.oauth");
        expect_problem("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"id.example\"}}}}", "mcpvisor.http.oauth.issuer");
        expect_problem("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"https://id.example\"}}}}", "mcpvisor.http.oauth");
        expect_problem("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"https://i\", \"audience\": [], \"x\": 1}}}}",
                       "mcpvisor.http.oauth.audience");
        expect_problem("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"https://i\", \"audience\": \"a\", \"algorithms\": [\"HS256\"]}}}}",
                       "mcpvisor.http.oauth.algorithms");
        cr_assert(strstr(probs.items[0].message, "public keys only"));
        expect_problem("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"https://i\", \"audience\": \"a\", \"algorithms\": [\"none\"]}}}}",
                       "mcpvisor.http.oauth.algorithms");
        expect_problem("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"https://i\", \"audience\": \"a\", \"users\": {\"x\": 1}}}}}",
                       "mcpvisor.http.oauth.users.x");
        expect_problem("{\"mcpvisor\": {\"http\": {\"oauth\": {\"issuer\": \"https://i\", \"audience\": \"a\", \"scopes\": {\"mcp\": \"nope\"}}}}}",
                       "mcpvisor.http.oauth.scopes.mcp");
}
