/* The sign-in's pure parts: PKCE (RFC 7636's vector), the authorization URL, the
 * well-known URLs, what metadata, registration and token answers are refused, the sealed
 * token file (round trip, and every tampering refused), and the configuration's keys. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-helpers.h"
#include "config.h"
#include "oauth-metadata.h"
#include "oauth-seal.h"
#include "oauth-signin.h"
#include "oauth-text.h"

TestSuite(oauth, .fini = done);

/* RFC 7636, appendix B. */
Test(oauth, pkce_s256_vector) {
        char *challenge = NULL;

        cr_assert_eq(oauth_pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", &challenge), 0);
        cr_assert_str_eq(challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        free(challenge);
}

Test(oauth, verifier_is_43_unreserved_characters) {
        char *a = NULL, *b = NULL;

        cr_assert_eq(oauth_random_text(32, &a), 0);
        cr_assert_eq(oauth_random_text(32, &b), 0);
        cr_assert_eq(strlen(a), 43);
        cr_assert_eq(strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), 43);
        cr_assert_str_neq(a, b);
        free(a);
        free(b);
}

Test(oauth, authorization_url) {
        char *url = oauth_authorization_url("https://as.example/authorize", "client 1", "http://127.0.0.1:5000/callback",
                                            "E9Mel", "st&te", "https://mcp.example/mcp", "mcp read");

        cr_assert_str_eq(url, "https://as.example/authorize?response_type=code&client_id=client%201"
                              "&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&code_challenge=E9Mel"
                              "&code_challenge_method=S256&state=st%26te&resource=https%3A%2F%2Fmcp.example%2Fmcp"
                              "&scope=mcp%20read");
        free(url);
        /* an endpoint with a query of its own keeps it */
        url = oauth_authorization_url("https://as.example/a?tenant=x", "c", "http://127.0.0.1:1/callback", "x", "s",
                                      "https://m/", NULL);
        cr_assert_not_null(strstr(url, "/a?tenant=x&response_type=code&"));
        cr_assert_null(strstr(url, "scope="));
        free(url);
}

/* A form body: fields in order, a NULL value left out, every byte but the unreserved encoded. */
Test(oauth, form_body) {
        char *body = oauth_form(NULL, (const struct oauth_field[]){ { "grant_type", "refresh_token" },
                                                                    { "client_secret", NULL },
                                                                    { "refresh_token", "a+b/c=d&e f~" },
                                                                    { "client_id", "c" },
                                                                    { NULL, NULL } });

        cr_assert_str_eq(body, "grant_type=refresh_token&refresh_token=a%2Bb%2Fc%3Dd%26e%20f~&client_id=c");
        free(body);
        body = oauth_form(NULL, (const struct oauth_field[]){ { "only", NULL }, { NULL, NULL } });
        cr_assert_str_eq(body, "");
        free(body);
}

Test(oauth, well_known_urls) {
        char **v = NULL;

        cr_assert_eq(oauth_resource_metadata_urls("https://mcp.example/api/mcp?x=1", &v), 0);
        cr_assert_str_eq(v[0], "https://mcp.example/.well-known/oauth-protected-resource/api/mcp");
        cr_assert_str_eq(v[1], "https://mcp.example/.well-known/oauth-protected-resource");
        cr_assert_null(v[2]);
        oauth_strv_free(v);
        cr_assert_eq(oauth_server_metadata_urls("https://auth.example/tenant1", &v), 0);
        cr_assert_str_eq(v[0], "https://auth.example/.well-known/oauth-authorization-server/tenant1");
        cr_assert_str_eq(v[1], "https://auth.example/.well-known/openid-configuration/tenant1");
        cr_assert_str_eq(v[2], "https://auth.example/tenant1/.well-known/openid-configuration");
        cr_assert_null(v[3]);
        oauth_strv_free(v);
        cr_assert_eq(oauth_server_metadata_urls("https://auth.example", &v), 0);
        cr_assert_str_eq(v[0], "https://auth.example/.well-known/oauth-authorization-server");
        cr_assert_str_eq(v[1], "https://auth.example/.well-known/openid-configuration");
        cr_assert_null(v[2]);
        oauth_strv_free(v);
        /* plain http only on loopback */
        cr_assert_eq(oauth_resource_metadata_urls("http://mcp.example/mcp", &v), -EINVAL);
        cr_assert_eq(oauth_resource_metadata_urls("http://127.0.0.1:8080/mcp", &v), 0);
        oauth_strv_free(v);
}

Test(oauth, resource_metadata_refusals) {
        char *issuer = NULL, *scopes = NULL, *resource = NULL;
        const char *why = NULL;

        cr_assert_eq(oauth_parse_resource_metadata("{\"resource\":\"https://m/mcp\",\"authorization_servers\":"
                                                   "[\"https://as\"],\"scopes_supported\":[\"a\",\"b\"]}",
                                                   "https://m/mcp", &issuer, &scopes, &resource, &why),
                     0);
        cr_assert_str_eq(issuer, "https://as");
        cr_assert_str_eq(scopes, "a b");
        cr_assert_str_eq(resource, "https://m/mcp");
        free(issuer);
        free(scopes);
        free(resource);
        /* a resource that covers the URL: its origin, or a path above it; its text is kept */
        static const char *const covering[] = { "https://m", "https://m/", "https://m/api" };
        for (size_t i = 0; i < sizeof covering / sizeof covering[0]; i++) {
                char body[256];

                snprintf(body, sizeof body, "{\"resource\":\"%s\",\"authorization_servers\":[\"https://as\"]}", covering[i]);
                cr_assert_eq(oauth_parse_resource_metadata(body, "https://m/api/mcp", &issuer, &scopes, &resource, &why), 0,
                             "%s", covering[i]);
                cr_assert_str_eq(resource, covering[i]);
                free(issuer);
                free(scopes);
                free(resource);
        }
        static const char *const bad[] = {
                "[]",
                "{\"resource\":\"https://other/mcp\",\"authorization_servers\":[\"https://as\"]}",
                "{\"resource\":\"https://m/mcp\"}",
                "{\"resource\":\"https://m/mcp\",\"authorization_servers\":[]}",
                "{\"resource\":\"https://m/mcp\",\"authorization_servers\":[\"http://as.example\"]}",
                "{\"resource\":\"https://m/mcp\",\"authorization_servers\":[\"javascript:alert(1)\"]}",
                /* another origin, a sibling path, a longer name */
                "{\"resource\":\"https://evil\",\"authorization_servers\":[\"https://as\"]}",
                "{\"resource\":\"https://m/other\",\"authorization_servers\":[\"https://as\"]}",
                "{\"resource\":\"https://m/mc\",\"authorization_servers\":[\"https://as\"]}",
                "{\"resource\":\"https://m.evil\",\"authorization_servers\":[\"https://as\"]}",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                why = NULL;
                cr_expect_eq(oauth_parse_resource_metadata(bad[i], "https://m/mcp", &issuer, &scopes, &resource, &why), -EBADMSG, "%s",
                             bad[i]);
                cr_expect_not_null(why);
        }
}

#define META(members)                                                                                           \
        "{\"issuer\":\"https://as\",\"authorization_endpoint\":\"https://as/auth\",\"token_endpoint\":"        \
        "\"https://as/token\",\"code_challenge_methods_supported\":[\"S256\"]" members "}"

Test(oauth, server_metadata_refusals) {
        struct oauth_server_meta m;
        const char *why = NULL;

        cr_assert_eq(oauth_parse_server_metadata(META(",\"registration_endpoint\":\"https://as/reg\","
                                                      "\"authorization_response_iss_parameter_supported\":true"),
                                                 "https://as", &m, &why),
                     0);
        cr_assert_str_eq(m.token_endpoint, "https://as/token");
        cr_assert_str_eq(m.registration_endpoint, "https://as/reg");
        cr_assert(m.iss_parameter);
        oauth_server_meta_done(&m);
        static const char *const bad[] = {
                /* another issuer: a mix-up */
                "{\"issuer\":\"https://evil\",\"authorization_endpoint\":\"https://as/auth\",\"token_endpoint\":"
                "\"https://as/token\",\"code_challenge_methods_supported\":[\"S256\"]}",
                /* no S256 */
                "{\"issuer\":\"https://as\",\"authorization_endpoint\":\"https://as/auth\",\"token_endpoint\":"
                "\"https://as/token\",\"code_challenge_methods_supported\":[\"plain\"]}",
                "{\"issuer\":\"https://as\",\"authorization_endpoint\":\"https://as/auth\",\"token_endpoint\":"
                "\"https://as/token\"}",
                /* a token endpoint in clear over the network */
                "{\"issuer\":\"https://as\",\"authorization_endpoint\":\"https://as/auth\",\"token_endpoint\":"
                "\"http://as.example/token\",\"code_challenge_methods_supported\":[\"S256\"]}",
                /* none */
                "{\"issuer\":\"https://as\",\"authorization_endpoint\":\"https://as/auth\","
                "\"code_challenge_methods_supported\":[\"S256\"]}",
                "not json",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                why = NULL;
                cr_expect_eq(oauth_parse_server_metadata(bad[i], "https://as", &m, &why), -EBADMSG, "%s", bad[i]);
                cr_expect_not_null(why);
        }
}

Test(oauth, token_answers) {
        struct oauth_grant g = { 0 };
        const char *why = NULL;
        char code[64];

        cr_assert_eq(oauth_parse_token_answer("{\"access_token\":\"a.b.c\",\"token_type\":\"bearer\",\"expires_in\":60,"
                                              "\"refresh_token\":\"r1\"}",
                                              1000, &g, &why),
                     0);
        cr_assert_str_eq(g.access_token, "a.b.c");
        cr_assert_str_eq(g.refresh_token, "r1");
        cr_assert_eq(g.expires_at, 1060);
        /* a refresh that rotates nothing keeps the refresh token */
        cr_assert_eq(oauth_parse_token_answer("{\"access_token\":\"d.e.f\",\"token_type\":\"Bearer\"}", 2000, &g, &why), 0);
        cr_assert_str_eq(g.refresh_token, "r1");
        cr_assert_eq(g.expires_at, 0);
        /* a token that would break the header line, another type, none */
        cr_assert_eq(oauth_parse_token_answer("{\"access_token\":\"a\\r\\nX: y\",\"token_type\":\"Bearer\"}", 0, &g, &why),
                     -EBADMSG);
        cr_assert_eq(oauth_parse_token_answer("{\"access_token\":\"a\",\"token_type\":\"mac\"}", 0, &g, &why), -EBADMSG);
        cr_assert_eq(oauth_parse_token_answer("{\"token_type\":\"Bearer\"}", 0, &g, &why), -EBADMSG);
        cr_assert_str_eq(g.access_token, "d.e.f", "a refused answer changes nothing");
        oauth_grant_done(&g);
        cr_assert_str_eq(oauth_error_code("{\"error\":\"invalid_grant\",\"error_description\":\"x\"}", code, sizeof code),
                         "invalid_grant");
        cr_assert_null(oauth_error_code("{\"error\":\"<script>\"}", code, sizeof code));
}

static const uint8_t key[OAUTH_KEY_SIZE] = "0123456789abcdef0123456789abcde";

Test(oauth, sealed_round_trip_and_tampering) {
        const char *text = "{\"access_token\":\"secret\"}";
        uint8_t *sealed = NULL;
        uint8_t other[OAUTH_KEY_SIZE];
        size_t len = 0;
        char *plain = NULL;

        cr_assert_eq(oauth_seal(key, "mcpvisor token/a/-1", text, strlen(text), &sealed, &len), 0);
        cr_assert_null(memmem(sealed, len, "secret", 6), "in clear");
        cr_assert_eq(oauth_unseal(key, "mcpvisor token/a/-1", sealed, len, &plain), 0);
        cr_assert_str_eq(plain, text);
        free(plain);
        /* another server's or user's name */
        cr_assert_eq(oauth_unseal(key, "mcpvisor token/b/-1", sealed, len, &plain), -EBADMSG);
        cr_assert_eq(oauth_unseal(key, "mcpvisor token/a/1000", sealed, len, &plain), -EBADMSG);
        /* another key */
        memcpy(other, key, sizeof other);
        other[0] ^= 1;
        cr_assert_eq(oauth_unseal(other, "mcpvisor token/a/-1", sealed, len, &plain), -EBADMSG);
        /* every byte flipped in turn, and cut short */
        for (size_t i = 0; i < len; i++) {
                sealed[i] ^= 0x40;
                cr_assert_eq(oauth_unseal(key, "mcpvisor token/a/-1", sealed, len, &plain), -EBADMSG, "byte %zu", i);
                sealed[i] ^= 0x40;
        }
        cr_assert_eq(oauth_unseal(key, "mcpvisor token/a/-1", sealed, len - 1, &plain), -EBADMSG);
        cr_assert_eq(oauth_unseal(key, "mcpvisor token/a/-1", sealed, 10, &plain), -EBADMSG);
        free(sealed);
}

Test(oauth, file_written_atomically_0600) {
        char dir[] = "/tmp/mcpvisor-oauth-unit-XXXXXX", path[64];
        uint8_t *back = NULL;
        size_t len = 0;
        struct stat st;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/t", dir);
        umask(0);
        cr_assert_eq(oauth_file_write(path, (const uint8_t *)"abc", 3), 0);
        cr_assert_eq(oauth_file_write(path, (const uint8_t *)"defg", 4), 0);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0600);
        cr_assert_eq(oauth_file_read(path, &back, &len), 0);
        cr_assert_eq(len, 4);
        cr_assert_eq(memcmp(back, "defg", 4), 0);
        free(back);
        unlink(path);
        cr_assert_eq(oauth_file_read(path, &back, &len), -ENOENT);
        rmdir(dir);
}

Test(oauth, grant_json_round_trip) {
        struct oauth_grant g = { .access_token = "a.b", .refresh_token = "r", .expires_at = 5, .lifetime = 60,
                                 .token_endpoint = "https://as/token", .issuer = "https://as", .client_id = "c",
                                 .resource = "https://m/mcp" },
                           back;
        json_object *o = oauth_grant_to_json(&g);

        cr_assert_eq(oauth_grant_from_json(json_object_to_json_string(o), &back), 0);
        cr_assert_str_eq(back.access_token, "a.b");
        cr_assert_str_eq(back.refresh_token, "r");
        cr_assert_eq(back.lifetime, 60);
        cr_assert_null(back.revocation_endpoint);
        oauth_grant_done(&back);
        json_object_put(o);
        cr_assert_eq(oauth_grant_from_json("{\"access_token\":\"a\"}", &back), -EBADMSG);
}

Test(oauth, config_keys) {
        cr_assert_eq(parse("{\"mcpServers\":{\"linear\":{\"url\":\"https://mcp.linear.app/mcp\",\"auth\":\"oauth\","
                           "\"scopes\":[\"read\",\"write\"],\"clientId\":\"abc\",\"clientSecret\":{\"credential\":\"linear-secret\"}}}}"),
                     0);
        cr_assert_eq(P.count, 0, "%s", P.count ? P.items[0].message : "");
        const struct server_config *s = config_find_server(&C, "linear");
        cr_assert_eq(s->remote.auth, REMOTE_AUTH_OAUTH);
        cr_assert_str_eq(s->remote.scopes[1], "write");
        cr_assert_str_eq(s->remote.client_id, "abc");
        cr_assert_str_eq(s->remote.client_secret, "linear-secret");
        done();
        expect_entry_refused("\"url\":\"https://m/mcp\",\"scopes\":[\"a\"]", "scopes", "only with \"auth\": \"oauth\"");
        done();
        expect_entry_refused("\"url\":\"https://m/mcp\",\"auth\":\"oauth\",\"clientSecret\":\"plain\"", "clientSecret",
                             "a secret is never written in the configuration");
        done();
        expect_entry_refused("\"url\":\"https://m/mcp\",\"auth\":\"oauth\",\"clientSecret\":{\"credential\":\"s\"}",
                             "clientSecret", "add \"clientId\"");
        done();
        expect_entry_refused("\"url\":\"https://m/mcp\",\"auth\":\"oauth\",\"headers\":{\"Authorization\":\"Bearer x\"}",
                             "headers.Authorization", "the daemon sends the token it signed in for");
        done();
        expect_entry_refused("\"url\":\"https://m/mcp\",\"auth\":\"oauth\",\"scopes\":[\"a b\"]", "scopes", "a scope is a word");
        done();
        expect_entry_refused("\"command\":\"/bin/true\",\"auth\":\"oauth\"", "auth", "only for a server reached by URL");
        done();
        expect_entry_refused("\"url\":\"https://m/mcp\",\"auth\":\"basic\"", "auth", "expected");
}

Test(oauth, bearer_challenge) {
        char buf[256];

        cr_assert(oauth_bearer_challenge(" Bearer resource_metadata=\"https://m/.well-known/oauth-protected-resource/mcp\", "
                                         "scope=\"mcp\"",
                                         buf, sizeof buf));
        cr_assert_str_eq(buf, "https://m/.well-known/oauth-protected-resource/mcp");
        cr_assert(oauth_bearer_challenge("bearer error=\"invalid_token\",resource_metadata=http://127.0.0.1:9/x", buf,
                                         sizeof buf));
        cr_assert_str_eq(buf, "http://127.0.0.1:9/x");
        cr_assert(oauth_bearer_challenge("Bearer", buf, sizeof buf));
        cr_assert_str_eq(buf, "");
        /* a metadata URL in clear over the network is not followed */
        cr_assert(oauth_bearer_challenge("Bearer resource_metadata=\"http://evil.example/x\"", buf, sizeof buf));
        cr_assert_str_eq(buf, "");
        cr_assert_not(oauth_bearer_challenge("Basic realm=\"x\"", buf, sizeof buf));
        cr_assert_not(oauth_bearer_challenge("BearerX a=b", buf, sizeof buf));
        cr_assert(oauth_bearer_challenge("Bearer resource_metadata=\"unterminated", buf, sizeof buf));
        cr_assert_str_eq(buf, "");
}

Test(oauth, client_credentials_and_challenge_scope) {
        char *basic = NULL, scope[128];

        /* RFC 6749 2.3.1: form-encoded, then base64 of "id:secret" */
        cr_assert_eq(oauth_basic_credentials("my client", "s:cret", &basic), 0);
        cr_assert_str_eq(basic, "Basic bXklMjBjbGllbnQ6cyUzQWNyZXQ=");
        free(basic);
        oauth_challenge_scope("Bearer error=\"insufficient_scope\", scope=\"files:read files:write\"", scope, sizeof scope);
        cr_assert_str_eq(scope, "files:read files:write");
        oauth_challenge_scope("Bearer realm=\"x\"", scope, sizeof scope);
        cr_assert_str_eq(scope, "");
}

/* A 403's step-up challenge (RFC 6750 section 3.1): its error and scope read, and a scope
 * holding what is no scope character (it may reach a client's error) dropped. */
Test(oauth, step_up_challenge) {
        char error[64], scope[128];
        const char *v = "Bearer error=\"insufficient_scope\", scope=\"mcp:write\", "
                        "resource_metadata=\"https://m/.well-known/oauth-protected-resource/mcp\"";

        oauth_challenge_error(v, error, sizeof error);
        cr_assert_str_eq(error, "insufficient_scope");
        oauth_challenge_scope(v, scope, sizeof scope);
        cr_assert_str_eq(scope, "mcp:write");
        oauth_challenge_error("Bearer scope=\"a\"", error, sizeof error);
        cr_assert_str_eq(error, "");
        oauth_challenge_scope("Bearer error=\"insufficient_scope\", scope=\"a\x01" "b\"", scope, sizeof scope);
        cr_assert_str_eq(scope, "");
        oauth_challenge_scope("Bearer error=\"insufficient_scope\", scope=\"caf\xc3\xa9\"", scope, sizeof scope);
        cr_assert_str_eq(scope, "");
}

/* SEP-2350: a step-up asks for what was asked before and what is challenged, each once, in
 * that order; a challenge already covered asks for nothing new. */
Test(oauth, scope_union_and_cover) {
        char *u;

        u = oauth_scope_union("mcp:basic", "mcp:write");
        cr_assert_str_eq(u, "mcp:basic mcp:write");
        free(u);
        u = oauth_scope_union("a b", "b c a d");
        cr_assert_str_eq(u, "a b c d");
        free(u);
        u = oauth_scope_union("a  a b", NULL);
        cr_assert_str_eq(u, "a b");
        free(u);
        u = oauth_scope_union(NULL, "x");
        cr_assert_str_eq(u, "x");
        free(u);
        cr_assert_null(oauth_scope_union(NULL, " "));
        /* a word is whole: "mcp" is not "mcp:write" */
        u = oauth_scope_union("mcp:write", "mcp");
        cr_assert_str_eq(u, "mcp:write mcp");
        free(u);
        cr_assert(oauth_scope_covers("mcp:basic mcp:write", "mcp:write"));
        cr_assert(oauth_scope_covers("a b", "b a"));
        cr_assert(oauth_scope_covers("a", ""));
        cr_assert_not(oauth_scope_covers("mcp:write", "mcp"));
        cr_assert_not(oauth_scope_covers(NULL, "a"));
        cr_assert_not(oauth_scope_covers("a b", "a c"));
}

/* A token is its authorization server's (SEP-2352): whether the resource's metadata still
 * names that server, a trailing slash aside. */
Test(oauth, issuer_binding) {
        const char *meta = "{\"resource\":\"https://m/mcp\",\"authorization_servers\":[\"https://as2\",\"https://as3/\"]}";

        cr_assert_eq(oauth_metadata_names_issuer(meta, "https://as2"), 1);
        cr_assert_eq(oauth_metadata_names_issuer(meta, "https://as2/"), 1);
        cr_assert_eq(oauth_metadata_names_issuer(meta, "https://as3"), 1);
        cr_assert_eq(oauth_metadata_names_issuer(meta, "https://as1"), 0);
        cr_assert_eq(oauth_metadata_names_issuer(meta, "https://as"), 0);
        cr_assert_eq(oauth_metadata_names_issuer("{\"resource\":\"https://m/mcp\"}", "https://as1"), -EBADMSG);
        cr_assert_eq(oauth_metadata_names_issuer("not json", "https://as1"), -EBADMSG);
}

/* The Client ID Metadata Document: its client_id the URL it is published at, a public
 * native client on the loopback redirect; the server's metadata says whether it takes one. */
Test(oauth, client_id_metadata_document) {
        json_object *o = oauth_client_metadata("https://example.org/mcpvisor.json", "http://127.0.0.1/callback", NULL), *v;
        struct oauth_server_meta m;
        const char *why = NULL;

        cr_assert(json_object_object_get_ex(o, "client_id", &v));
        cr_assert_str_eq(json_object_get_string(v), "https://example.org/mcpvisor.json");
        cr_assert(json_object_object_get_ex(o, "redirect_uris", &v));
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, 0)), "http://127.0.0.1/callback");
        cr_assert(json_object_object_get_ex(o, "token_endpoint_auth_method", &v));
        cr_assert_str_eq(json_object_get_string(v), "none");
        cr_assert(json_object_object_get_ex(o, "client_name", &v));
        cr_assert(json_object_object_get_ex(o, "grant_types", &v));
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, 1)), "refresh_token");
        cr_assert_not(json_object_object_get_ex(o, "scope", &v));
        json_object_put(o);
        /* a registration's request: no client_id, the scope asked */
        o = oauth_client_metadata(NULL, "http://127.0.0.1:4321/callback", "a b");
        cr_assert_not(json_object_object_get_ex(o, "client_id", &v));
        cr_assert(json_object_object_get_ex(o, "scope", &v));
        json_object_put(o);
        cr_assert_eq(oauth_parse_server_metadata("{\"issuer\":\"https://as\",\"authorization_endpoint\":\"https://as/auth\","
                                                 "\"token_endpoint\":\"https://as/token\",\"code_challenge_methods_supported\":"
                                                 "[\"S256\"],\"client_id_metadata_document_supported\":true}",
                                                 "https://as", &m, &why),
                     0);
        cr_assert(m.client_id_documents);
        oauth_server_meta_done(&m);
}

Test(oauth, client_metadata_url_config) {
        cr_assert_eq(parse("{\"mcpServers\":{\"n\":{\"url\":\"https://m/mcp\",\"auth\":\"oauth\","
                           "\"clientMetadataUrl\":\"https://example.org/mcp/client.json\"}}}"),
                     0);
        cr_assert_eq(P.count, 0, "%s", P.count ? P.items[0].message : "");
        cr_assert_str_eq(config_find_server(&C, "n")->remote.client_metadata_url, "https://example.org/mcp/client.json");
        done();
        static const char *const bad[] = { "http://example.org/c.json", "https://example.org/c.json#x", "https://example.org",
                                           "https://example.org/", "https:///c.json", "ftp://example.org/c.json" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char members[256];

                snprintf(members, sizeof members, "\"url\":\"https://m/mcp\",\"auth\":\"oauth\",\"clientMetadataUrl\":\"%s\"",
                         bad[i]);
                expect_entry_refused(members, "clientMetadataUrl", "expected an https:// URL with a path and no fragment");
                done();
        }
        expect_entry_refused("\"url\":\"https://m/mcp\",\"clientMetadataUrl\":\"https://example.org/c.json\"", "clientMetadataUrl",
                             "only with \"auth\": \"oauth\"");
}

/* SEP-2352: a configured client that was the one at the authorization server the server
 * left is not presented to another one; another client id, or the same server, is. */
Test(oauth, client_bound_to_its_issuer) {
        cr_assert(oauth_client_bound_elsewhere("c1", "https://as1", "c1", "https://as2"));
        cr_assert_not(oauth_client_bound_elsewhere("c1", "https://as1", "c1", "https://as1/"));
        cr_assert_not(oauth_client_bound_elsewhere("c2", "https://as1", "c1", "https://as2"));
        cr_assert_not(oauth_client_bound_elsewhere("c1", NULL, NULL, "https://as2"));
        cr_assert_not(oauth_client_bound_elsewhere(NULL, "https://as1", "c1", "https://as2"));
}
