/* Entries of servers reached by URL (remote-config.c): every key, and every bad input at
 * its JSON path. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config.h"

static struct config C;
static struct config_problems P;

static int parse(const char *text) {
        memset(&P, 0, sizeof P);
        config_init_defaults(&C);
        return config_parse(text, strlen(text), &C, &P);
}

static void done(void) {
        config_done(&C);
        problems_done(&P);
}

static const struct config_problem *problem_at(const char *path) {
        for (size_t i = 0; i < P.count; i++)
                if (strcmp(P.items[i].path, path) == 0)
                        return &P.items[i];
        return NULL;
}

/* One entry "a" holding members; the problem expected at mcpServers.a.KEY with words. */
static void expect_refused(const char *members, const char *key, const char *words) {
        char text[1024], path[128];

        done();
        snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{%s}}}", members);
        cr_assert_eq(parse(text), 0, "%s", members);
        snprintf(path, sizeof path, "mcpServers.a%s%s", *key ? "." : "", key);
        cr_assert_not_null(problem_at(path), "%s: no problem at %s (%zu problems, first at %s: %s)", members, path, P.count,
                           P.count ? P.items[0].path : "-", P.count ? P.items[0].message : "-");
        cr_assert(strstr(problem_at(path)->message, words), "%s: %s", members, problem_at(path)->message);
        cr_assert_null(config_find_server(&C, "a"), "%s: the server is skipped", members);
}

TestSuite(remote_config, .fini = done);

Test(remote_config, agents_shape_loads) {
        cr_assert_eq(parse("{\"mcpServers\":{\"github\":{\"url\":\"https://api.example.com/mcp\",\"headers\":{"
                           "\"Authorization\":{\"credential\":\"github-token\",\"format\":\"Bearer %s\"},"
                           "\"X-Team\":\"core\",\"X-Key\":{\"credential\":\"key\"}}}}}"),
                     0);
        cr_assert_eq(P.count, 0, "%s", P.count ? P.items[0].message : "");
        const struct server_config *g = config_find_server(&C, "github");
        cr_assert_not_null(g);
        cr_assert_str_eq(g->remote.url, "https://api.example.com/mcp");
        cr_assert_eq(g->remote.type, REMOTE_NONE, "no type: Streamable HTTP, then legacy SSE");
        cr_assert_null(g->command);
        cr_assert_eq(g->remote.n_headers, 3);
        cr_assert_str_eq(g->remote.headers[0].name, "Authorization");
        cr_assert_str_eq(g->remote.headers[0].credential, "github-token");
        cr_assert_str_eq(g->remote.headers[0].format, "Bearer %s");
        cr_assert_null(g->remote.headers[0].value);
        cr_assert_str_eq(g->remote.headers[1].value, "core");
        cr_assert_null(g->remote.headers[2].format);
        cr_assert_eq(g->remote.connect_timeout, REMOTE_DEFAULT_CONNECT_TIMEOUT);
        cr_assert_eq(g->remote.max_connections, 8);
        cr_assert_not(g->remote.insecure);
}

Test(remote_config, types_as_clients_write_them) {
        static const struct {
                const char *name;
                int type;
        } cases[] = { { "http", REMOTE_STREAMABLE_HTTP }, { "streamable-http", REMOTE_STREAMABLE_HTTP },
                      { "streamableHttp", REMOTE_STREAMABLE_HTTP }, { "sse", REMOTE_SSE } };
        char text[256];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{\"type\":\"%s\",\"url\":\"http://127.0.0.1:8080/mcp\"}}}",
                         cases[i].name);
                cr_assert_eq(parse(text), 0);
                cr_assert_eq(P.count, 0, "%s: %s", cases[i].name, P.count ? P.items[0].message : "");
                cr_assert_eq(config_find_server(&C, "a")->remote.type, cases[i].type, "%s", cases[i].name);
        }
}

Test(remote_config, connection_keys) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"url\":\"https://localhost:8443/mcp\",\"proxy\":\"http://proxy:3128\","
                           "\"caFile\":\"/etc/ssl/test-ca.pem\",\"insecure\":true,\"connectTimeout\":2.5,\"maxConnections\":2}}}"),
                     0);
        cr_assert_eq(P.count, 0, "%s", P.count ? P.items[0].message : "");
        const struct server_config *a = config_find_server(&C, "a");
        cr_assert_str_eq(a->remote.proxy, "http://proxy:3128");
        cr_assert_str_eq(a->remote.ca_file, "/etc/ssl/test-ca.pem");
        cr_assert(a->remote.insecure);
        cr_assert_eq(a->remote.connect_timeout, 2.5);
        cr_assert_eq(a->remote.max_connections, 2);
}

Test(remote_config, insecure_only_on_loopback) {
        static const char *const loopback[] = { "https://localhost/mcp", "https://127.0.0.1:9/mcp", "https://[::1]:9/x",
                                                "https://user@127.0.0.2/mcp", "https://LOCALHOST" };
        char text[256];

        for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++) {
                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{\"url\":\"%s\",\"insecure\":true}}}", loopback[i]);
                cr_assert_eq(parse(text), 0);
                cr_assert_eq(P.count, 0, "%s: %s", loopback[i], P.count ? P.items[0].message : "");
        }
        expect_refused("\"url\":\"https://example.com/mcp\",\"insecure\":true", "insecure", "caFile");
        expect_refused("\"url\":\"https://127.0.0.1.example.com/mcp\",\"insecure\":true", "insecure", "loopback");
        expect_refused("\"url\":\"https://localhost@example.com/mcp\",\"insecure\":true", "insecure", "loopback");
}

Test(remote_config, bad_urls) {
        expect_refused("\"url\":\"ftp://example.com/mcp\"", "url", "http:// or https://");
        expect_refused("\"url\":\"https:///mcp\"", "url", "with a host");
        expect_refused("\"url\":\"example.com/mcp\"", "url", "http://");
        expect_refused("\"url\":\"https://example.com/a b\"", "url", "http://");
        expect_refused("\"url\":\"https://[::1/mcp\"", "url", "http://");
        expect_refused("\"url\":42", "url", "");
}

Test(remote_config, program_keys_refused_with_url) {
        expect_refused("\"url\":\"https://example.com/mcp\",\"command\":\"npx\"", "command", "runs no program");
        expect_refused("\"url\":\"https://example.com/mcp\",\"args\":[\"x\"]", "args", "runs no program");
        expect_refused("\"url\":\"https://example.com/mcp\",\"env\":{\"A\":\"b\"}", "env", "runs no program");
        expect_refused("\"url\":\"https://example.com/mcp\",\"cwd\":\"/srv\"", "cwd", "runs no program");
        expect_refused("\"url\":\"https://example.com/mcp\",\"launcher\":\"exec\"", "launcher", "runs no program");
        expect_refused("\"url\":\"https://example.com/mcp\",\"launcher\":\"systemd\",\"memoryMax\":\"1G\"", "launcher",
                       "runs no program");
        expect_refused("\"url\":\"https://example.com/mcp\",\"sandbox\":\"strict\"", "sandbox", "runs no program");
        expect_refused("\"url\":\"https://example.com/mcp\",\"type\":\"stdio\"", "type", "\"http\" or \"sse\"");
}

Test(remote_config, remote_keys_refused_without_url) {
        expect_refused("\"command\":\"x\",\"type\":\"http\"", "type", "only for a server reached by URL");
        expect_refused("\"command\":\"x\",\"type\":\"sse\"", "type", "only for a server reached by URL");
        expect_refused("\"command\":\"x\",\"headers\":{\"A\":\"b\"}", "headers", "only for a server reached by URL");
        expect_refused("\"command\":\"x\",\"proxy\":\"http://p:1\"", "proxy", "only for a server reached by URL");
        expect_refused("\"command\":\"x\",\"caFile\":\"/ca.pem\"", "caFile", "only for a server reached by URL");
        expect_refused("\"command\":\"x\",\"insecure\":true", "insecure", "only for a server reached by URL");
        expect_refused("\"type\":\"http\"", "type", "only for a server reached by URL");
        expect_refused("\"restart\":\"always\"", "command", "missing");
}

Test(remote_config, bad_values) {
        expect_refused("\"url\":\"https://e.com\",\"type\":\"websocket\"", "type", "\"http\"");
        expect_refused("\"url\":\"https://e.com\",\"type\":1", "type", "\"sse\"");
        expect_refused("\"url\":\"https://e.com\",\"headers\":[]", "headers", "expected an object");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"Bad Name\":\"x\"}", "headers.Bad Name", "header name");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":\"a\\r\\nInjected: 1\"}", "headers.X", "no CR or LF");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":\"a\\u0000b\"}", "headers.X", "");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":1}", "headers.X", "credential");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"a/b\"}}", "headers.X", "credential");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"\"}}", "headers.X", "credential");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"format\":\"Bearer %s\"}}", "headers.X", "credential");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"extra\":1}}", "headers.X",
                       "credential");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":\"Bearer\"}}",
                       "headers.X", "one \"%s\"");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":\"%s %s\"}}",
                       "headers.X", "one \"%s\"");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":\"%d\"}}", "headers.X",
                       "one \"%s\"");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":7}}", "headers.X",
                       "credential");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"mcp-session-id\":\"x\"}", "headers.mcp-session-id",
                       "set by mcpvisor");
        expect_refused("\"url\":\"https://e.com\",\"headers\":{\"Accept\":\"x\"}", "headers.Accept", "set by mcpvisor");
        expect_refused("\"url\":\"https://e.com\",\"caFile\":\"relative.pem\"", "caFile", "");
        expect_refused("\"url\":\"https://e.com\",\"connectTimeout\":0", "connectTimeout", "");
        expect_refused("\"url\":\"https://e.com\",\"maxConnections\":0", "maxConnections", "");
        expect_refused("\"url\":\"https://e.com\",\"maxConnections\":100000", "maxConnections", "");
        expect_refused("\"url\":\"https://e.com\",\"insecure\":\"yes\"", "insecure", "");
}

/* A changed URL or header is a new connection: a reload restarts the server. */
Test(remote_config, changes_restart) {
        struct config_problems q = { 0 };
        struct config other;

        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"url\":\"https://e.com/mcp\",\"headers\":{\"X\":\"1\"}}}}"), 0);
        config_init_defaults(&other);
        cr_assert_eq(config_parse("{\"mcpServers\":{\"a\":{\"url\":\"https://e.com/mcp\",\"headers\":{\"X\":\"2\"}}}}",
                                  strlen("{\"mcpServers\":{\"a\":{\"url\":\"https://e.com/mcp\",\"headers\":{\"X\":\"2\"}}}}"),
                                  &other, &q),
                     0);
        cr_assert_not(server_config_equal(config_find_server(&C, "a"), config_find_server(&other, "a")));
        cr_assert(server_config_equal(config_find_server(&C, "a"), config_find_server(&C, "a")));
        config_done(&other);
        problems_done(&q);
}
