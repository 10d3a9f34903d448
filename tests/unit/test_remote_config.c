/* Entries of servers reached by URL (remote-config.c): every key, and every bad input at
 * its JSON path, as tables of cases. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-helpers.h"
#include "config.h"

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

/* The URL people are shown leaves out a query or fragment, where a key may be. */
Test(remote_config, shown_url_has_no_query) {
        static const char *const cases[][2] = {
                { "https://host/mcp", "https://host/mcp" },
                { "https://host/mcp?api_key=sekrit", "https://host/mcp?\u2026" },
                { "https://host/mcp#k=sekrit", "https://host/mcp#\u2026" },
                { "https://host/mcp?a=1#b", "https://host/mcp?\u2026" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char *shown = remote_url_shown(cases[i][0]);

                cr_assert_not_null(shown);
                cr_expect_str_eq(shown, cases[i][1]);
                free(shown);
        }
        cr_assert_eq(parse("{\"mcpServers\":{\"k\":{\"url\":\"https://h/mcp?api_key=sekrit\"}}}"), 0);
        cr_assert_str_eq(config_find_server(&C, "k")->remote.shown_url, "https://h/mcp?\u2026");
}

/* Entries that load, and what they load as. */
Test(remote_config, accepted_entries) {
        static const struct {
                const char *members;
                int type;
        } cases[] = {
                /* "type" as clients write it */
                { "\"type\":\"http\",\"url\":\"http://127.0.0.1:8080/mcp\"", REMOTE_STREAMABLE_HTTP },
                { "\"type\":\"streamable-http\",\"url\":\"http://127.0.0.1:8080/mcp\"", REMOTE_STREAMABLE_HTTP },
                { "\"type\":\"streamableHttp\",\"url\":\"http://127.0.0.1:8080/mcp\"", REMOTE_STREAMABLE_HTTP },
                { "\"type\":\"sse\",\"url\":\"http://127.0.0.1:8080/mcp\"", REMOTE_SSE },
                /* insecure on the loopback, however it is written */
                { "\"url\":\"https://localhost/mcp\",\"insecure\":true", REMOTE_NONE },
                { "\"url\":\"https://127.0.0.1:9/mcp\",\"insecure\":true", REMOTE_NONE },
                { "\"url\":\"https://[::1]:9/x\",\"insecure\":true", REMOTE_NONE },
                { "\"url\":\"https://user@127.0.0.2/mcp\",\"insecure\":true", REMOTE_NONE },
                { "\"url\":\"https://LOCALHOST\",\"insecure\":true", REMOTE_NONE },
        };
        char text[256];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{%s}}}", cases[i].members);
                cr_assert_eq(parse(text), 0);
                cr_assert_eq(P.count, 0, "%s: %s", cases[i].members, P.count ? P.items[0].message : "");
                cr_assert_eq(config_find_server(&C, "a")->remote.type, cases[i].type, "%s", cases[i].members);
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

/* Every bad entry: the problem at its key, with words that say what is wrong; the server
 * is skipped. */
Test(remote_config, refused_entries) {
        static const struct {
                const char *members, *key, *words;
        } cases[] = {
                /* insecure beyond the loopback */
                { "\"url\":\"https://example.com/mcp\",\"insecure\":true", "insecure", "caFile" },
                { "\"url\":\"https://127.0.0.1.example.com/mcp\",\"insecure\":true", "insecure", "loopback" },
                { "\"url\":\"https://localhost@example.com/mcp\",\"insecure\":true", "insecure", "loopback" },
                /* URLs */
                { "\"url\":\"ftp://example.com/mcp\"", "url", "http:// or https://" },
                { "\"url\":\"https:///mcp\"", "url", "with a host" },
                { "\"url\":\"example.com/mcp\"", "url", "http://" },
                { "\"url\":\"https://example.com/a b\"", "url", "http://" },
                { "\"url\":\"https://[::1/mcp\"", "url", "http://" },
                { "\"url\":42", "url", "" },
                /* a program's keys beside url */
                { "\"url\":\"https://example.com/mcp\",\"command\":\"npx\"", "command", "runs no program" },
                { "\"url\":\"https://example.com/mcp\",\"args\":[\"x\"]", "args", "runs no program" },
                { "\"url\":\"https://example.com/mcp\",\"env\":{\"A\":\"b\"}", "env", "runs no program" },
                { "\"url\":\"https://example.com/mcp\",\"cwd\":\"/srv\"", "cwd", "runs no program" },
                { "\"url\":\"https://example.com/mcp\",\"launcher\":\"exec\"", "launcher", "runs no program" },
                { "\"url\":\"https://example.com/mcp\",\"launcher\":\"systemd\",\"memoryMax\":\"1G\"", "launcher",
                  "runs no program" },
                { "\"url\":\"https://example.com/mcp\",\"sandbox\":\"strict\"", "sandbox", "runs no program" },
                { "\"url\":\"https://example.com/mcp\",\"type\":\"stdio\"", "type", "\"http\" or \"sse\"" },
                /* url's keys without it */
                { "\"command\":\"x\",\"type\":\"http\"", "type", "only for a server reached by URL" },
                { "\"command\":\"x\",\"type\":\"sse\"", "type", "only for a server reached by URL" },
                { "\"command\":\"x\",\"headers\":{\"A\":\"b\"}", "headers", "only for a server reached by URL" },
                { "\"command\":\"x\",\"proxy\":\"http://p:1\"", "proxy", "only for a server reached by URL" },
                { "\"command\":\"x\",\"caFile\":\"/ca.pem\"", "caFile", "only for a server reached by URL" },
                { "\"command\":\"x\",\"insecure\":true", "insecure", "only for a server reached by URL" },
                { "\"type\":\"http\"", "type", "only for a server reached by URL" },
                { "\"restart\":\"always\"", "command", "missing" },
                /* bad values */
                { "\"url\":\"https://e.com\",\"type\":\"websocket\"", "type", "\"http\"" },
                { "\"url\":\"https://e.com\",\"type\":1", "type", "\"sse\"" },
                { "\"url\":\"https://e.com\",\"headers\":[]", "headers", "expected an object" },
                { "\"url\":\"https://e.com\",\"headers\":{\"Bad Name\":\"x\"}", "headers.Bad Name", "header name" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":\"a\\r\\nInjected: 1\"}", "headers.X", "no CR or LF" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":\"a\\u0000b\"}", "headers.X", "" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":1}", "headers.X", "credential" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"a/b\"}}", "headers.X", "credential" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"\"}}", "headers.X", "credential" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"format\":\"Bearer %s\"}}", "headers.X", "credential" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"extra\":1}}", "headers.X",
                  "credential" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":\"Bearer\"}}", "headers.X",
                  "one \"%s\"" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":\"%s %s\"}}", "headers.X",
                  "one \"%s\"" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":\"%d\"}}", "headers.X",
                  "one \"%s\"" },
                { "\"url\":\"https://e.com\",\"headers\":{\"X\":{\"credential\":\"t\",\"format\":7}}", "headers.X",
                  "credential" },
                { "\"url\":\"https://e.com\",\"headers\":{\"mcp-session-id\":\"x\"}", "headers.mcp-session-id",
                  "set by mcpvisor" },
                { "\"url\":\"https://e.com\",\"headers\":{\"Accept\":\"x\"}", "headers.Accept", "set by mcpvisor" },
                { "\"url\":\"https://e.com\",\"caFile\":\"relative.pem\"", "caFile", "" },
                { "\"url\":\"https://e.com\",\"connectTimeout\":0", "connectTimeout", "" },
                { "\"url\":\"https://e.com\",\"maxConnections\":0", "maxConnections", "" },
                { "\"url\":\"https://e.com\",\"maxConnections\":100000", "maxConnections", "" },
                { "\"url\":\"https://e.com\",\"insecure\":\"yes\"", "insecure", "" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                expect_entry_refused(cases[i].members, cases[i].key, cases[i].words);
}

/* Any change of the connection is a new one: a reload restarts the server. Each case is
 * the base entry with one key changed (or the same text: no restart). */
Test(remote_config, changes_restart) {
        static const char base[] = "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},"
                                   "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4";
        static const struct {
                const char *members;
                bool restarts;
        } cases[] = {
                { base, false },
                { "\"url\":\"https://localhost/other\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"2\",\"Y\":{\"credential\":\"t\"}},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"u\"}},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\",\"format\":\"B %s\"}},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\"},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},\"type\":\"sse\","
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},"
                  "\"proxy\":\"http://q:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/other.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},\"insecure\":true,"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":3,\"maxConnections\":4", true },
                { "\"url\":\"https://localhost/mcp\",\"headers\":{\"X\":\"1\",\"Y\":{\"credential\":\"t\"}},"
                  "\"proxy\":\"http://p:1\",\"caFile\":\"/ca.pem\",\"connectTimeout\":2,\"maxConnections\":5", true },
        };
        char text[512];
        struct config first;
        struct config_problems q = { 0 };

        snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{%s}}}", base);
        config_init_defaults(&first);
        cr_assert_eq(config_parse(text, strlen(text), &first, &q), 0);
        cr_assert_eq(q.count, 0, "%s", q.count ? q.items[0].message : "");
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{%s}}}", cases[i].members);
                cr_assert_eq(parse(text), 0);
                cr_assert_eq(P.count, 0, "%s: %s", cases[i].members, P.count ? P.items[0].message : "");
                cr_assert_eq(!server_config_equal(config_find_server(&first, "a"), config_find_server(&C, "a")),
                             cases[i].restarts, "%s", cases[i].members);
        }
        config_done(&first);
        problems_done(&q);
}
