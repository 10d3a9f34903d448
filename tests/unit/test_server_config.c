/* Server entries of "mcpServers", drop-ins, and the JSON paths of their problems. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-helpers.h"
#include "config.h"
#include "macro.h"

TestSuite(server_config, .fini = done);

Test(server_config, claude_desktop_shape_loads_unchanged) {
        cr_assert_eq(parse("{\"mcpServers\":{\"github\":{\"command\":\"npx\",\"args\":[\"-y\",\"@modelcontextprotocol/server-github\"],"
                           "\"env\":{\"GITHUB_TOKEN\":\"t\"}},\"fs\":{\"command\":\"node\",\"args\":[],\"cwd\":\"/srv\",\"disabled\":true}}}"),
                     0);
        cr_assert_eq(P.count, 0, "unexpected problem: %s", P.count ? P.items[0].message : "");
        cr_assert_eq(C.n_servers, 2);
        const struct server_config *g = config_find_server(&C, "github");
        cr_assert_not_null(g);
        cr_assert_str_eq(g->command, "npx");
        cr_assert_str_eq(g->args[0], "-y");
        cr_assert_str_eq(g->args[1], "@modelcontextprotocol/server-github");
        cr_assert_null(g->args[2]);
        cr_assert_eq(g->n_env, 1);
        cr_assert_str_eq(g->env[0].name, "GITHUB_TOKEN");
        cr_assert_str_eq(g->env[0].value, "t");
        cr_assert_not(g->disabled);
        const struct server_config *fs = config_find_server(&C, "fs");
        cr_assert(fs->disabled);
        cr_assert_str_eq(fs->cwd, "/srv");
}

Test(server_config, defaults) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\"}}}"), 0);
        const struct server_config *s = config_find_server(&C, "a");
        cr_assert_eq(s->restart, RESTART_ON_FAILURE);
        cr_assert_float_eq(s->stop_timeout, 3, 1e-9);
        cr_assert_float_eq(s->kill_timeout, 3, 1e-9);
        cr_assert_float_eq(s->health_interval, 30, 1e-9);
        cr_assert_float_eq(s->health_timeout, 5, 1e-9);
        cr_assert_eq(s->health_failures, 3);
        cr_assert_float_eq(s->request_timeout, 0, 1e-9);
        cr_assert_null(s->prefix);
        cr_assert_null(s->args);
        cr_assert_eq(s->client_capabilities, CLIENT_CAPS_ALL, "roots, sampling and elicitation are offered by default");
}

Test(server_config, client_capabilities) {
        cr_assert_eq(parse("{\"mcpServers\":{\"none\":{\"command\":\"x\",\"clientCapabilities\":[]},"
                           "\"two\":{\"command\":\"x\",\"clientCapabilities\":[\"sampling\",\"roots\",\"roots\"]}}}"),
                     0);
        cr_assert_eq(P.count, 0, "unexpected problem: %s", P.count ? P.items[0].message : "");
        cr_assert_eq(config_find_server(&C, "none")->client_capabilities, 0u);
        cr_assert_eq(config_find_server(&C, "two")->client_capabilities,
                     (1u << CLIENT_CAP_SAMPLING) | (1u << CLIENT_CAP_ROOTS));
}

Test(server_config, client_capabilities_bad_values) {
        static const char *const bad[] = { "\"sampling\"", "[\"tools\"]", "[1]", "{}", "[\"Sampling\"]", "null" };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char text[256];

                done();
                snprintf(text, sizeof text,
                         "{\"mcpServers\":{\"s\":{\"command\":\"x\",\"clientCapabilities\":%s},\"ok\":{\"command\":\"y\"}}}",
                         bad[i]);
                cr_assert_eq(parse(text), 0, "%s", text);
                cr_assert_eq(P.errors, 1, "%s: %zu errors", text, P.errors);
                cr_assert_not_null(problem_at("mcpServers.s.clientCapabilities"), "%s: no problem at the key", text);
                cr_assert_null(config_find_server(&C, "s"), "%s: the server must be skipped", text);
                cr_assert_not_null(config_find_server(&C, "ok"));
        }
}

Test(server_config, max_catalog_items) {
        static const char *const bad[] = { "0", "1000001", "-1", "2.5", "\"100\"" };

        cr_assert_eq(parse("{\"mcpServers\":{\"d\":{\"command\":\"x\"},\"big\":{\"command\":\"x\",\"maxCatalogItems\":100000}}}"), 0);
        cr_assert_eq(P.count, 0, "unexpected problem: %s", P.count ? P.items[0].message : "");
        cr_assert_eq(config_find_server(&C, "d")->max_catalog_items, 10000u);
        cr_assert_eq(config_find_server(&C, "big")->max_catalog_items, 100000u);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char text[256];

                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"x\",\"maxCatalogItems\":%s}}}", bad[i]);
                cr_assert_eq(parse(text), 0, "%s", text);
                cr_assert_eq(P.errors, 1, "%s: %zu errors", text, P.errors);
                cr_assert_not_null(problem_at("mcpServers.s.maxCatalogItems"), "%s: no problem at the key", text);
                cr_assert_null(config_find_server(&C, "s"), "%s: the server must be skipped", text);
        }
}

Test(server_config, supervisor_keys) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"restart\":\"never\",\"startTimeout\":12,"
                           "\"stopTimeout\":0.5,\"killTimeout\":1,\"healthInterval\":0,\"healthTimeout\":2,"
                           "\"healthFailures\":5,\"requestTimeout\":600,\"prefix\":\"\",\"type\":\"stdio\"}}}"),
                     0);
        cr_assert_eq(P.count, 0);
        const struct server_config *s = config_find_server(&C, "a");
        cr_assert_eq(s->restart, RESTART_NEVER);
        cr_assert_float_eq(s->start_timeout, 12, 1e-9);
        cr_assert_float_eq(s->stop_timeout, 0.5, 1e-9);
        cr_assert_float_eq(s->health_interval, 0, 1e-9);
        cr_assert_eq(s->health_failures, 5);
        cr_assert_float_eq(s->request_timeout, 600, 1e-9);
        cr_assert_str_eq(s->prefix, "");
}

Test(server_config, restart_throttle_defaults) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\"}}}"), 0);
        const struct server_config *s = config_find_server(&C, "a");
        cr_assert_float_eq(s->restart_delay, 1, 1e-9);
        cr_assert_float_eq(s->restart_delay_max, 60, 1e-9);
        cr_assert_eq(s->start_limit_burst, 5);
        cr_assert_float_eq(s->start_limit_interval, 60, 1e-9);
}

Test(server_config, restart_throttle_keys) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"restartDelay\":0.25,\"restartDelayMax\":120,"
                           "\"startLimitBurst\":10,\"startLimitInterval\":30.5},"
                           "\"b\":{\"command\":\"x\",\"restartDelay\":0,\"restartDelayMax\":0,\"startLimitBurst\":0,"
                           "\"startLimitInterval\":0},"
                           "\"c\":{\"command\":\"x\",\"restartDelay\":3600,\"restartDelayMax\":86400,\"startLimitBurst\":64,"
                           "\"startLimitInterval\":86400}}}"),
                     0);
        cr_assert_eq(P.count, 0, "unexpected problem: %s: %s", P.count ? P.items[0].path : "", P.count ? P.items[0].message : "");
        const struct server_config *a = config_find_server(&C, "a");
        cr_assert_float_eq(a->restart_delay, 0.25, 1e-9);
        cr_assert_float_eq(a->restart_delay_max, 120, 1e-9);
        cr_assert_eq(a->start_limit_burst, 10);
        cr_assert_float_eq(a->start_limit_interval, 30.5, 1e-9);
        const struct server_config *b = config_find_server(&C, "b");
        cr_assert_float_eq(b->restart_delay, 0, 1e-9);
        cr_assert_float_eq(b->restart_delay_max, 0, 1e-9);
        cr_assert_eq(b->start_limit_burst, 0, "0: no start limit");
        cr_assert_float_eq(b->start_limit_interval, 0, 1e-9);
        const struct server_config *c = config_find_server(&C, "c");
        cr_assert_float_eq(c->restart_delay, 3600, 1e-9);
        cr_assert_float_eq(c->restart_delay_max, 86400, 1e-9);
        cr_assert_eq(c->start_limit_burst, 64);
        cr_assert_float_eq(c->start_limit_interval, 86400, 1e-9);
}

/* Each bad value is reported at its path and the server is skipped. */
Test(server_config, restart_throttle_bad_values) {
        static const struct {
                const char *key, *value;
        } bad[] = {
                { "restartDelay", "-1" },          { "restartDelay", "3600.5" },    { "restartDelay", "\"1s\"" },
                { "restartDelay", "null" },        { "restartDelayMax", "-0.1" },   { "restartDelayMax", "86401" },
                { "restartDelayMax", "true" },     { "startLimitBurst", "-1" },     { "startLimitBurst", "65" },
                { "startLimitBurst", "2.5" },      { "startLimitBurst", "\"5\"" }, { "startLimitInterval", "-1" },
                { "startLimitInterval", "86401" }, { "startLimitInterval", "[]" },
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char text[256], path[128];

                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"x\",\"%s\":%s},\"ok\":{\"command\":\"y\"}}}",
                         bad[i].key, bad[i].value);
                snprintf(path, sizeof path, "mcpServers.s.%s", bad[i].key);
                cr_assert_eq(parse(text), 0, "%s", text);
                cr_assert_eq(P.errors, 1, "%s: %zu errors", text, P.errors);
                cr_assert_not_null(problem_at(path), "%s: no problem at %s (first: %s)", text, path,
                                   P.count ? P.items[0].path : "-");
                cr_assert_eq(problem_at(path)->severity, PROBLEM_ERROR);
                cr_assert_null(config_find_server(&C, "s"), "%s: the server must be skipped", text);
                cr_assert_not_null(config_find_server(&C, "ok"));
        }
}

Test(server_config, credential_env) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"T\":{\"credential\":\"gh-token\"}}}}}"), 0);
        const struct server_config *s = config_find_server(&C, "a");
        cr_assert_str_eq(s->env[0].credential, "gh-token");
        cr_assert_null(s->env[0].value);
}

/* A wrong entry is reported with its path and skipped; the others stay. */
Test(server_config, bad_entries_skipped_with_paths) {
        cr_assert_eq(parse("{\"mcpServers\":{"
                           "\"github\":{\"command\":\"npx\",\"args\":[\"-y\",5]},"
                           "\"nocmd\":{\"args\":[]},"
                           "\"r\":{\"command\":\"x\",\"restart\":\"sometimes\"},"
                           "\"h\":{\"command\":\"x\",\"healthFailures\":2.5},"
                           "\"e\":{\"command\":\"x\",\"env\":{\"1X\":\"a\"}},"
                           "\"c\":{\"command\":\"x\",\"env\":{\"T\":{\"credential\":\"../x\"}}},"
                           "\"v\":{\"command\":\"x\",\"env\":[\"A=b\"]},"
                           "\"w\":{\"command\":\"x\",\"cwd\":\"relative\"},"
                           "\"u\":{\"url\":\"gopher://example.invalid/mcp\"},"
                           "\"t\":{\"command\":\"x\",\"type\":\"sse\"},"
                           "\"bad name\":{\"command\":\"x\"},"
                           "\"n\":5,"
                           "\"k\":{\"command\":\"x\",\"colour\":1},"
                           "\"good\":{\"command\":\"x\"}}}"),
                     0, "server errors must not stop the daemon");
        cr_assert_eq(C.n_servers, 1);
        cr_assert_not_null(config_find_server(&C, "good"));
        cr_assert_not_null(problem_at("mcpServers.github.args[1]"));
        cr_assert_str_eq(problem_at("mcpServers.github.args[1]")->message, "expected a string");
        cr_assert_not_null(problem_at("mcpServers.nocmd.command"));
        cr_assert_not_null(problem_at("mcpServers.r.restart"));
        cr_assert_not_null(problem_at("mcpServers.h.healthFailures"));
        cr_assert_not_null(problem_at("mcpServers.e.env.1X"));
        cr_assert_not_null(problem_at("mcpServers.c.env.T"));
        cr_assert_not_null(problem_at("mcpServers.v.env"));
        cr_assert_str_eq(problem_at("mcpServers.v.env")->message, "expected an object of NAME: value");
        cr_assert_not_null(problem_at("mcpServers.w.cwd"));
        cr_assert_not_null(problem_at("mcpServers.u.url"));
        cr_assert_not_null(problem_at("mcpServers.t.type"));
        cr_assert_not_null(problem_at("mcpServers.bad name"));
        cr_assert_not_null(problem_at("mcpServers.n"));
        cr_assert_eq(problem_at("mcpServers.k.colour")->severity, PROBLEM_ERROR);
        cr_assert_eq(P.errors, 13);
        cr_assert_eq(P.count, 13);
}

/* json-c keeps "\u0000" inside a string; C's strings end there, so the server used to run
 * with the value cut short ("secret\u0000tail" as "secret"), silently. */
Test(server_config, nul_in_strings_refused) {
        static const struct {
                const char *entry, *path;
        } cases[] = {
                { "\"command\":\"cat\\u0000 -n\"", "mcpServers.s.command" },
                { "\"command\":\"cat\",\"args\":[\"-u\",\"a\\u0000b\"]", "mcpServers.s.args[1]" },
                { "\"command\":\"cat\",\"env\":{\"T\":\"secret\\u0000tail\"}", "mcpServers.s.env.T" },
                { "\"command\":\"cat\",\"env\":{\"T\":\"\\u0000\"}", "mcpServers.s.env.T" },
                { "\"command\":\"cat\",\"env\":{\"T\":{\"credential\":\"gh\\u0000x\"}}", "mcpServers.s.env.T.credential" },
                { "\"command\":\"cat\",\"cwd\":\"/srv\\u0000/x\"", "mcpServers.s.cwd" },
                { "\"command\":\"cat\",\"restart\":\"always\\u0000\"", "mcpServers.s.restart" },
        };
        char json[512];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                snprintf(json, sizeof json, "{\"mcpServers\":{\"s\":{%s},\"good\":{\"command\":\"x\"}}}", cases[i].entry);
                cr_assert_eq(parse(json), 0, "%s", json);
                cr_assert_null(config_find_server(&C, "s"), "%s: loaded", json);
                cr_assert_not_null(config_find_server(&C, "good"));
                cr_assert_eq(P.count, 1, "%s: %zu problems, first %s: %s", json, P.count, P.items[0].path,
                             P.items[0].message);
                cr_assert_str_eq(P.items[0].path, cases[i].path, "%s", json);
                cr_assert_str_eq(P.items[0].message,
                                 "contains a NUL character (\\u0000): it would cut the string short there", "%s", json);
                done();
        }
        /* a daemon setting too */
        cr_assert_eq(parse("{\"mcpvisor\":{\"socket\":\"/run/a\\u0000b\"}}"), -EINVAL);
        cr_assert_not_null(problem_at("mcpvisor.socket"));
}

/* A misspelt key used to be a warning: the server ran without its arguments. */
Test(server_config, unknown_keys_are_errors_with_a_suggestion) {
        static const struct {
                const char *key, *suggestion;
        } typos[] = {
                { "arg", "args" },          { "agrs", "args" },     { "comand", "command" },
                { "Env", "env" },           { "disable", "disabled" }, { "startTimout", "startTimeout" },
                { "restartDelayMaxx", "restartDelayMax" }, { "clientCapabilites", "clientCapabilities" },
                { "healthintervall", "healthInterval" },
        };
        char text[256], path[64], message[128];

        for (size_t i = 0; i < sizeof typos / sizeof typos[0]; i++) {
                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"%s\":[]},\"b\":{\"command\":\"y\"}}}",
                         typos[i].key);
                cr_assert_eq(parse(text), 0, "%s: an entry's error only skips that server", typos[i].key);
                snprintf(path, sizeof path, "mcpServers.a.%s", typos[i].key);
                snprintf(message, sizeof message, "unknown key; did you mean \"%s\"?", typos[i].suggestion);
                cr_assert_eq(P.count, 1, "%s: %zu problems", typos[i].key, P.count);
                cr_assert_not_null(problem_at(path), "%s: at %s", typos[i].key, P.items[0].path);
                cr_assert_str_eq(problem_at(path)->message, message);
                cr_assert_eq(problem_at(path)->severity, PROBLEM_ERROR);
                cr_assert_null(config_find_server(&C, "a"), "%s: the server ran anyway", typos[i].key);
                cr_assert_not_null(config_find_server(&C, "b"));
        }
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"frobnicate\":1}}}"), 0);
        cr_assert_str_eq(problem_at("mcpServers.a.frobnicate")->message, "unknown key (the keys are listed in mcpvisor.json(5))");
}

/* Gemini CLI's filter keys are ours: globs on the server's own names. */
Test(server_config, filter_keys) {
        const struct server_config *s;

        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"includeTools\":[\"get_*\",\"list_*\"],"
                           "\"excludeTools\":[\"get_secret\"],\"includePrompts\":[\"p*\"],\"excludePrompts\":[\"pq\"]}}}"),
                     0);
        cr_assert_eq(P.count, 0, "%s", P.count ? P.items[0].message : "");
        s = config_find_server(&C, "a");
        cr_assert_not_null(s);
        cr_assert_str_eq(s->filter.include[CATALOG_TOOLS][1], "list_*");
        cr_assert(item_filter_offers(&s->filter, CATALOG_TOOLS, "get_issue"));
        cr_assert_not(item_filter_offers(&s->filter, CATALOG_TOOLS, "get_secret"), "exclude wins");
        cr_assert_not(item_filter_offers(&s->filter, CATALOG_TOOLS, "delete"));
        cr_assert(item_filter_offers(&s->filter, CATALOG_PROMPTS, "pa"));
        cr_assert_not(item_filter_offers(&s->filter, CATALOG_PROMPTS, "pq"));
        cr_assert(item_filter_offers(&s->filter, CATALOG_RESOURCES, "file:///x"));
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\"}}}"), 0);
        cr_assert(item_filter_offers(&config_find_server(&C, "a")->filter, CATALOG_TOOLS, "anything"));
}

/* Each bad filter is an error at its JSON path, and the server does not run. */
Test(server_config, filter_key_errors) {
        static const struct {
                const char *entry, *path, *message;
        } cases[] = {
                { "\"includeTools\":\"get_*\"", "mcpServers.a.includeTools", "expected an array of strings" },
                { "\"excludeTools\":[\"rm\",3]", "mcpServers.a.excludeTools[1]", "expected a string" },
                { "\"includeTools\":{\"get\":true}", "mcpServers.a.includeTools", "expected an array of strings" },
        };
        char text[256];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{\"command\":\"x\",%s}}}", cases[i].entry);
                cr_assert_eq(parse(text), 0, "%s", text);
                cr_assert_not_null(problem_at(cases[i].path), "%s: at %s", text, P.count ? P.items[0].path : "(none)");
                cr_assert_str_eq(problem_at(cases[i].path)->message, cases[i].message);
                cr_assert_eq(problem_at(cases[i].path)->severity, PROBLEM_ERROR);
                cr_assert_null(config_find_server(&C, "a"), "%s: the server ran anyway", text);
        }
}

/* Lists as Gemini CLI reads them: an empty exclude list excludes nothing, silently; an
 * empty include list offers nothing of its kind, and an empty pattern matches no name,
 * both warned about. None of them keeps the server from running. */
Test(server_config, empty_filter_lists) {
        static const struct {
                const char *entry, *path; /* path: the warning's, or NULL for none */
                bool tool_offered;
        } cases[] = {
                { "\"excludeTools\":[]", NULL, true },
                { "\"excludePrompts\":[]", NULL, true },
                { "\"excludeTools\":[],\"excludePrompts\":[]", NULL, true },
                { "\"includeTools\":[]", "mcpServers.a.includeTools", false },
                { "\"includePrompts\":[]", "mcpServers.a.includePrompts", true },
                { "\"excludeTools\":[\"rm\",\"\"]", "mcpServers.a.excludeTools[1]", true },
                { "\"includeTools\":[\"\"]", "mcpServers.a.includeTools[0]", false },
        };
        char text[256];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const struct server_config *s;

                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{\"command\":\"x\",%s}}}", cases[i].entry);
                cr_assert_eq(parse(text), 0, "%s", text);
                cr_assert_eq(P.errors, 0, "%s: %s", text, P.count ? P.items[0].message : "");
                cr_assert_eq(P.count, cases[i].path ? 1 : 0, "%s: %s", text, P.count ? P.items[0].message : "");
                if (cases[i].path) {
                        cr_assert_not_null(problem_at(cases[i].path), "%s: at %s", text, P.items[0].path);
                        cr_assert_eq(problem_at(cases[i].path)->severity, PROBLEM_WARNING);
                }
                s = config_find_server(&C, "a");
                cr_assert_not_null(s, "%s: the server is skipped", text);
                cr_assert_eq(item_filter_offers(&s->filter, CATALOG_TOOLS, "echo"), cases[i].tool_offered, "%s", text);
        }
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"includePrompts\":[]}}}"), 0);
        cr_assert_str_eq(P.items[0].message, "empty: the server offers no prompts (leave the key out to offer every one, "
                                             "or set \"disabled\")");
        cr_assert_not(item_filter_offers(&config_find_server(&C, "a")->filter, CATALOG_PROMPTS, "greet"));
}

/* What other clients' entries carry: each loads, warns what it loses, or is refused. */
Test(server_config, other_clients_keys) {
        static const char *const warned[] = { "autoApprove", "alwaysAllow", "trust", "timeout", "disabledTools",
                                              "watchPaths", "dev" };
        char text[256], path[64];

        for (size_t i = 0; i < sizeof warned / sizeof warned[0]; i++) {
                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"%s\":[\"t\"]}}}", warned[i]);
                cr_assert_eq(parse(text), 0);
                snprintf(path, sizeof path, "mcpServers.a.%s", warned[i]);
                cr_assert_eq(P.count, 1, "%s", warned[i]);
                cr_assert_not_null(problem_at(path), "%s: at %s", warned[i], P.items[0].path);
                cr_assert_eq(problem_at(path)->severity, PROBLEM_WARNING, "%s", warned[i]);
                cr_assert_not_null(config_find_server(&C, "a"), "%s: the server still runs", warned[i]);
        }
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"disabledTools\":[\"rm\"]}}}"), 0);
        cr_assert(strstr(P.items[0].message, "\"excludeTools\""), "%s", P.items[0].message);
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"timeout\":60}}}"), 0);
        cr_assert(strstr(P.items[0].message, "requestTimeout"), "%s", P.items[0].message);

        /* a comment, and the transport that is ours */
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"type\":\"stdio\",\"command\":\"x\",\"description\":\"files\"}}}"), 0);
        cr_assert_eq(P.count, 0, "%s", P.count ? P.items[0].message : "");

        /* refused: what the server needs would be lost, or a key of theirs for what is ours */
        done();
        cr_assert_eq(parse("{\"servers\":{\"a\":{\"type\":\"stdio\",\"command\":\"x\",\"envFile\":\"/srv/.env\"},"
                           "\"g\":{\"httpUrl\":\"https://example.invalid/mcp\"},"
                           "\"w\":{\"serverUrl\":\"https://example.invalid/sse\"},"
                           "\"s\":{\"type\":\"streamable-http\",\"command\":\"x\"}}}"),
                     0);
        cr_assert(strstr(problem_at("servers.a.envFile")->message, "\"env\""), "%s", problem_at("servers.a.envFile")->message);
        cr_assert(strstr(problem_at("servers.g.httpUrl")->message, "\"url\""));
        cr_assert_not_null(problem_at("servers.w.serverUrl"));
        cr_assert(strstr(problem_at("servers.s.type")->message, "only for a server reached by URL"));
        cr_assert_eq(P.errors, 4);
        cr_assert_eq(C.n_servers, 0);
}

/* Other clients expand ${...}; mcpvisor passes it on as it is. */
Test(server_config, unexpanded_variables_warn) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"${HOME}/bin/x\",\"args\":[\"ok\",\"${workspaceFolder}\"],"
                           "\"env\":{\"T\":\"${input:token}\",\"U\":\"$plain\",\"C\":{\"credential\":\"c\"}},"
                           "\"cwd\":\"/srv/${USER}\"}}}"),
                     0);
        cr_assert_eq(P.errors, 0);
        cr_assert_eq(P.count, 4);
        cr_assert_eq(problem_at("mcpServers.a.command")->severity, PROBLEM_WARNING);
        cr_assert_not_null(problem_at("mcpServers.a.args[1]"));
        cr_assert_not_null(problem_at("mcpServers.a.env.T"));
        cr_assert_not_null(problem_at("mcpServers.a.cwd"));
        cr_assert_not_null(config_find_server(&C, "a"));
}

Test(server_config, origin_is_kept) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a.b\":{\"command\":\"x\"}}}"), 0);
        cr_assert_str_eq(C.servers[0].json_path, "mcpServers.a.b");
        cr_assert_null(C.servers[0].file, "parsed from text");
}

Test(server_config, name_rules) {
        char long_name[SERVER_NAME_MAX + 2];

        cr_assert(server_name_valid("github"));
        cr_assert(server_name_valid("brave-search.v2_x"));
        cr_assert_not(server_name_valid(""));
        cr_assert_not(server_name_valid("a b"));
        cr_assert_not(server_name_valid("a/b"));
        memset(long_name, 'a', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = '\0';
        cr_assert_not(server_name_valid(long_name));
        long_name[SERVER_NAME_MAX] = '\0';
        cr_assert(server_name_valid(long_name));
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(text, f);
        fclose(f);
}

Test(server_config, dropins_merge_in_name_order) {
        char dir[] = "/tmp/mcpvisor-dropin-XXXXXX", path[256], d[256], f[300];

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/mcpvisor.json", dir);
        snprintf(d, sizeof d, "%s/mcpvisor.d", dir);
        mkdir(d, 0755);
        write_file(path, "{\"mcpServers\":{\"a\":{\"command\":\"main-a\"},\"b\":{\"command\":\"main-b\"}},"
                         "\"mcpvisor\":{\"logLevel\":\"info\"}}");
        snprintf(f, sizeof f, "%s/20-late.json", d);
        write_file(f, "{\"mcpServers\":{\"a\":{\"command\":\"late-a\"}}}");
        snprintf(f, sizeof f, "%s/10-early.json", d);
        write_file(f, "{\"mcpServers\":{\"a\":{\"command\":\"early-a\"},\"c\":{\"command\":\"c\"}},"
                      "\"mcpvisor\":{\"logLevel\":\"debug\"}}");
        snprintf(f, sizeof f, "%s/30-broken.json", d);
        write_file(f, "{\"mcpServers\":{\"b\":{\"command\":5}}}");
        snprintf(f, sizeof f, "%s/notes.txt", d);
        write_file(f, "not json, not read");

        memset(&P, 0, sizeof P);
        cr_assert_eq(config_load(path, false, &C, &P), 0);
        cr_assert_str_eq(config_find_server(&C, "a")->command, "late-a");
        cr_assert_str_eq(config_find_server(&C, "c")->command, "c");
        cr_assert_null(config_find_server(&C, "b"), "a broken override must not keep the old entry");
        cr_assert_eq(C.log_level, 7);
        cr_assert_eq(P.errors, 1);
        cr_assert(strstr(P.items[0].file, "30-broken.json"), "problem file: %s", P.items[0].file);
        cr_assert_str_eq(P.items[0].path, "mcpServers.b.command");
        cr_assert(strstr(config_find_server(&C, "a")->file, "20-late.json"), "where a was read last");
        cr_assert_str_eq(config_find_server(&C, "c")->json_path, "mcpServers.c");
}

/* Many servers, found by name through the index as it grows, and after a broken override
 * took one out from the middle (the others move down a place). */
Test(server_config, many_servers_found_by_name) {
        char dir[] = "/tmp/mcpvisor-dropin-XXXXXX", path[256], d[256], f[300], name[16];
        FILE *m;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/mcpvisor.json", dir);
        snprintf(d, sizeof d, "%s/mcpvisor.d", dir);
        mkdir(d, 0755);
        m = fopen(path, "w");
        cr_assert_not_null(m);
        fprintf(m, "{\"mcpServers\":{");
        for (int i = 0; i < 300; i++)
                fprintf(m, "%s\"s%03d\":{\"command\":\"c%d\"}", i ? "," : "", i, i);
        fprintf(m, "}}");
        fclose(m);
        snprintf(f, sizeof f, "%s/10-more.json", d);
        write_file(f, "{\"mcpServers\":{\"s150\":{\"command\":5},\"s007\":{\"command\":\"again\"},"
                      "\"z\":{\"command\":\"z\"}}}");
        memset(&P, 0, sizeof P);
        cr_assert_eq(config_load(path, false, &C, &P), 0);
        cr_assert_eq(C.n_servers, 300, "300 - s150 + z");
        for (int i = 0; i < 300; i++) {
                snprintf(name, sizeof name, "s%03d", i);
                if (i == 150) {
                        cr_assert_null(config_find_server(&C, name));
                        continue;
                }
                cr_assert_not_null(config_find_server(&C, name), "%s", name);
                cr_assert_str_eq(config_find_server(&C, name)->name, name);
        }
        cr_assert_str_eq(config_find_server(&C, "s007")->command, "again");
        cr_assert_str_eq(C.servers[150].name, "s151", "the entries keep their order");
        cr_assert_str_eq(C.servers[299].name, "z");
        cr_assert_null(config_find_server(&C, "s300"));
}

Test(server_config, dropins_without_main_file_at_default_path) {
        char dir[] = "/tmp/mcpvisor-dropin-XXXXXX", path[256], d[256], f[300];

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/mcpvisor.json", dir);
        snprintf(d, sizeof d, "%s/mcpvisor.d", dir);
        mkdir(d, 0755);
        snprintf(f, sizeof f, "%s/pkg.json", d);
        write_file(f, "{\"mcpServers\":{\"p\":{\"command\":\"p\"}}}");
        memset(&P, 0, sizeof P);
        cr_assert_eq(config_load(path, true, &C, &P), 0);
        cr_assert_not_null(config_find_server(&C, "p"));
}

/* ---- roots ---- */

static const struct server_config *parse_one(const char *entry) {
        char text[2048];

        done();
        snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"x\"%s%s}}}", entry[0] ? "," : "", entry);
        cr_assert_eq(parse(text), 0, "%s", text);
        cr_assert_eq(P.count, 0, "%s: unexpected problem at %s: %s", text, P.count ? P.items[0].path : "",
                     P.count ? P.items[0].message : "");
        return config_find_server(&C, "s");
}

static void expect_root(const struct server_config *s, size_t i, const char *uri, const char *name) {
        cr_assert_lt(i, s->roots.n);
        cr_assert_str_eq(s->roots.items[i].uri, uri);
        if (name)
                cr_assert_str_eq(s->roots.items[i].name, name);
        else
                cr_assert_null(s->roots.items[i].name, "root %zu has a name: %s", i, s->roots.items[i].name);
}

Test(server_config, roots_forms) {
        const struct server_config *s;

        s = parse_one("\"roots\":[{\"uri\":\"file:///srv/project\",\"name\":\"project\"},\"file://localhost/srv/b\","
                      "{\"uri\":\"/srv/c\"},\"/srv/my dir/100%/caf\xc3\xa9#1?\",\"file:///srv/x%20y/a:b@c!$&'()*+,;=~\"]");
        cr_assert_eq(s->roots.n, 5);
        expect_root(s, 0, "file:///srv/project", "project");
        expect_root(s, 1, "file://localhost/srv/b", NULL);
        expect_root(s, 2, "file:///srv/c", NULL);
        /* a path is percent-encoded: what a URI path cannot hold as it is */
        expect_root(s, 3, "file:///srv/my%20dir/100%25/caf%C3%A9%231%3F", NULL);
        expect_root(s, 4, "file:///srv/x%20y/a:b@c!$&'()*+,;=~", NULL);

        s = parse_one("\"roots\":[]");
        cr_assert_eq(s->roots.n, 0, "an empty list is no roots");
        s = parse_one("");
        cr_assert_eq(s->roots.n, 0, "no roots by default");
        s = parse_one("\"clientCapabilities\":[],\"roots\":[]");
        cr_assert_eq(s->roots.n, 0);
}

/* A server entry's bad value: what it adds to the entry of server "s", where the error is
 * and what it says. */
struct bad_entry {
        const char *entry, *path, *message;
};

/* Each bad value is one error at its JSON path, and only its server is skipped. */
static void expect_bad_entries(const struct bad_entry *bad, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const struct config_problem *q;
                char text[512];

                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"x\",%s},\"ok\":{\"command\":\"y\"}}}",
                         bad[i].entry);
                cr_assert_eq(parse(text), 0, "%s", text);
                cr_assert_eq(P.errors, 1, "%s: %zu errors (first at %s: %s)", text, P.errors, P.count ? P.items[0].path : "-",
                             P.count ? P.items[0].message : "-");
                q = problem_at(bad[i].path);
                cr_assert_not_null(q, "%s: no problem at %s (first: %s)", text, bad[i].path, P.count ? P.items[0].path : "-");
                cr_assert_eq(q->severity, PROBLEM_ERROR);
                cr_assert_not_null(strstr(q->message, bad[i].message), "%s: message \"%s\" does not say \"%s\"", text,
                                   q->message, bad[i].message);
                cr_assert_null(config_find_server(&C, "s"), "%s: the server must be skipped", text);
                cr_assert_not_null(config_find_server(&C, "ok"));
        }
}

/* Each bad root is an error at its JSON path, and the server is skipped. */
Test(server_config, roots_bad_values) {
        static const struct bad_entry bad[] = {
                { "\"roots\":\"file:///srv\"", "mcpServers.s.roots", "expected an array" },
                { "\"roots\":{\"uri\":\"file:///srv\"}", "mcpServers.s.roots", "expected an array" },
                { "\"roots\":[\"file:///a\",5]", "mcpServers.s.roots[1]", "expected a file:// URI" },
                { "\"roots\":[null]", "mcpServers.s.roots[0]", "expected a file:// URI" },
                { "\"roots\":[\"srv/relative\"]", "mcpServers.s.roots[0]", "expected a file:// URI" },
                { "\"roots\":[\"~/project\"]", "mcpServers.s.roots[0]", "expected a file:// URI" },
                { "\"roots\":[\"https://example.com/x\"]", "mcpServers.s.roots[0]", "expected a file:// URI" },
                { "\"roots\":[\"FILE:///srv\"]", "mcpServers.s.roots[0]", "expected a file:// URI" },
                { "\"roots\":[\"file:/srv\"]", "mcpServers.s.roots[0]", "expected a file:// URI" },
                { "\"roots\":[\"file://srv\"]", "mcpServers.s.roots[0]", "expected file:///PATH" },
                { "\"roots\":[\"file://host/srv\"]", "mcpServers.s.roots[0]", "on this host" },
                { "\"roots\":[\"file:///srv/a b\"]", "mcpServers.s.roots[0]", "' ' must be percent-encoded as %20" },
                { "\"roots\":[\"file:///srv/a\\\"b\"]", "mcpServers.s.roots[0]", "'\"' must be percent-encoded as %22" },
                { "\"roots\":[\"file:///srv/caf\xc3\xa9\"]", "mcpServers.s.roots[0]", "byte 0xC3 must be percent-encoded as %C3" },
                { "\"roots\":[\"file:///srv/100%\"]", "mcpServers.s.roots[0]", "'%' must start a percent-encoding" },
                { "\"roots\":[\"file:///srv/%zz\"]", "mcpServers.s.roots[0]", "'%' must start a percent-encoding" },
                { "\"roots\":[\"file:///srv?x=1\"]", "mcpServers.s.roots[0]", "no query" },
                { "\"roots\":[\"file:///srv#top\"]", "mcpServers.s.roots[0]", "fragment" },
                { "\"roots\":[\"/srv/\\u0000x\"]", "mcpServers.s.roots[0]", "NUL" },
                { "\"roots\":[{\"name\":\"n\"}]", "mcpServers.s.roots[0]", "missing \"uri\"" },
                { "\"roots\":[{\"uri\":\"file:///a\",\"name\":5}]", "mcpServers.s.roots[0].name", "expected a string" },
                { "\"roots\":[{\"uri\":\"file:///a\",\"_meta\":{}}]", "mcpServers.s.roots[0]._meta", "unknown key" },
                { "\"roots\":[{\"uri\":\"relative\"}]", "mcpServers.s.roots[0].uri", "expected a file:// URI" },
                { "\"roots\":[\"file:///a\",{\"uri\":\"file:///a\",\"name\":\"again\"}]", "mcpServers.s.roots[1]",
                  "file:///a is a root already" },
                { "\"roots\":[\"file:///my%20dir\",\"/my dir\"]", "mcpServers.s.roots[1]", "is a root already" },
                { "\"clientCapabilities\":[\"sampling\"],\"roots\":[\"/srv\"]", "mcpServers.s.roots",
                  "add \"roots\" to its clientCapabilities" },
        };

        expect_bad_entries(bad, ARRAY_SIZE(bad));
}

/* Two entries "a" and "b" of one document, for comparing them; the names are made the same. */
static void parse_pair(const char *a, const char *b, struct server_config **ra, struct server_config **rb) {
        char text[2048];

        done();
        snprintf(text, sizeof text, "{\"mcpServers\":{\"a\":{\"command\":\"x\"%s},\"b\":{\"command\":\"x\"%s}}}", a, b);
        cr_assert_eq(parse(text), 0, "%s", text);
        cr_assert_eq(P.count, 0, "%s: %s", text, P.count ? P.items[0].message : "");
        *ra = (struct server_config *)config_find_server(&C, "a");
        *rb = (struct server_config *)config_find_server(&C, "b");
        free((*rb)->name);
        (*rb)->name = strdup("a");
}

/* What a reload may change without a restart: roots, from some to others, and filters. */
Test(server_config, changes_live) {
        static const struct {
                const char *a, *b;
                bool equal, live;
        } cases[] = {
                { ",\"roots\":[\"/x\"]", ",\"roots\":[\"/y\"]", false, true },
                { ",\"roots\":[\"/x\"]", ",\"roots\":[\"/x\",\"/y\"]", false, true },
                { ",\"roots\":[\"/x\",\"/y\"]", ",\"roots\":[\"/y\",\"/x\"]", false, true },
                { ",\"roots\":[{\"uri\":\"/x\",\"name\":\"old\"}]", ",\"roots\":[{\"uri\":\"/x\",\"name\":\"new\"}]", false,
                  true },
                { ",\"roots\":[\"/x\"]", ",\"roots\":[\"file:///x\"]", true, false },
                { "", ",\"roots\":[]", true, false },
                /* the first roots, or the last removed: what initialize offered changes */
                { "", ",\"roots\":[\"/x\"]", false, false },
                { ",\"roots\":[\"/x\"]", ",\"roots\":[]", false, false },
                /* anything else changed as well: a restart */
                { ",\"roots\":[\"/x\"]", ",\"roots\":[\"/y\"],\"args\":[\"-v\"]", false, false },
                { ",\"roots\":[\"/x\"]", ",\"roots\":[\"/y\"],\"clientCapabilities\":[\"roots\"]", false, false },
                /* filters: the registry's view, never the process */
                { "", ",\"includeTools\":[\"get_*\"]", false, true },
                { ",\"excludeTools\":[\"rm\"]", ",\"excludeTools\":[\"rm\",\"mv\"]", false, true },
                { ",\"includePrompts\":[\"a\"]", ",\"excludePrompts\":[\"a\"]", false, true },
                { ",\"includeTools\":[\"a\"]", ",\"includePrompts\":[\"a\"]", false, true },
                { ",\"includeTools\":[\"a\"],\"roots\":[\"/x\"]", ",\"roots\":[\"/y\"]", false, true },
                { ",\"includeTools\":[\"a\"]", ",\"includeTools\":[\"a\"]", true, false },
                { "", ",\"includeTools\":[\"a\"],\"roots\":[\"/x\"]", false, false },
                { "", ",\"excludeTools\":[\"a\"],\"args\":[\"-v\"]", false, false },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                struct server_config *a, *b;

                parse_pair(cases[i].a, cases[i].b, &a, &b);
                cr_assert_eq(server_config_equal(a, b), cases[i].equal, "%s vs %s: equal", cases[i].a, cases[i].b);
                cr_assert_eq(server_config_equal(b, a), cases[i].equal, "%s vs %s: equal", cases[i].b, cases[i].a);
                cr_assert_eq(server_config_changes_live(a, b), cases[i].live, "%s -> %s: live", cases[i].a, cases[i].b);
                cr_assert_eq(server_config_changes_live(b, a), cases[i].live, "%s -> %s: live", cases[i].b, cases[i].a);
        }
}

/* roots/list's result, and a move that empties its source. */
Test(server_config, roots_result_and_move) {
        const struct server_config *s = parse_one("\"roots\":[{\"uri\":\"/srv/a\",\"name\":\"A\"},\"/srv/b\"]");
        struct roots moved = {};
        json_object *result = roots_result(&s->roots);

        cr_assert_str_eq(json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                         "{\"roots\":[{\"uri\":\"file:///srv/a\",\"name\":\"A\"},{\"uri\":\"file:///srv/b\"}]}");
        json_object_put(result);
        roots_move(&moved, &((struct server_config *)s)->roots);
        cr_assert_eq(s->roots.n, 0);
        cr_assert_null(s->roots.items);
        cr_assert_eq(moved.n, 2);
        result = roots_result(&s->roots);
        cr_assert_str_eq(json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN), "{\"roots\":[]}");
        json_object_put(result);
        roots_done(&moved);
}

/* ---- launcher and confinement ---- */

Test(server_config, confinement_defaults) {
        const struct server_config *s = parse_one("");

        cr_assert_eq(s->launcher, LAUNCHER_AUTO, "the daemon's default, resolved");
        cr_assert_eq(s->confinement.sandbox, SANDBOX_BASIC);
        cr_assert(s->confinement.network);
        cr_assert_null(s->confinement.read_write_paths);
        cr_assert_null(s->confinement.read_only_paths);
        cr_assert_eq(s->confinement.memory_max, 0);
        cr_assert_eq(s->confinement.tasks_max, 0);
        cr_assert_eq(s->confinement.cpu_quota_usec, 0);
        cr_assert_null(s->confinement.user);
        cr_assert_null(s->confinement.group);
        cr_assert_not(s->confinement.dynamic_user);
        cr_assert_null(s->confinement.state_directory);
        cr_assert_eq(s->confinement.keys, 0);
        cr_assert_null(confinement_first_key(&s->confinement));
}

Test(server_config, confinement_keys) {
        const struct server_config *s;

        s = parse_one("\"launcher\":\"systemd\",\"sandbox\":\"strict\",\"readWritePaths\":[\"/srv/data\",\"/var/tmp/x y\"],"
                      "\"readOnlyPaths\":[\"/srv/ro\"],\"network\":false,\"memoryMax\":\"256M\",\"tasksMax\":64,"
                      "\"cpuQuota\":\"50%\",\"user\":\"mcp-fs\",\"group\":\"_mcp\",\"dynamicUser\":true,"
                      "\"stateDirectory\":true");
        cr_assert_eq(s->launcher, LAUNCHER_SYSTEMD);
        cr_assert_eq(s->confinement.sandbox, SANDBOX_STRICT);
        cr_assert_str_eq(s->confinement.read_write_paths[0], "/srv/data");
        cr_assert_str_eq(s->confinement.read_write_paths[1], "/var/tmp/x y");
        cr_assert_null(s->confinement.read_write_paths[2]);
        cr_assert_str_eq(s->confinement.read_only_paths[0], "/srv/ro");
        cr_assert_not(s->confinement.network);
        cr_assert_eq(s->confinement.memory_max, 256ull << 20);
        cr_assert_eq(s->confinement.tasks_max, 64);
        cr_assert_eq(s->confinement.cpu_quota_usec, 500000, "50%% of a CPU: half a second per second");
        cr_assert_str_eq(s->confinement.user, "mcp-fs");
        cr_assert_str_eq(s->confinement.group, "_mcp");
        cr_assert(s->confinement.dynamic_user);
        cr_assert_str_eq(s->confinement.state_directory, "mcpvisor/servers/s");
        cr_assert_eq(s->confinement.keys, (1u << CONFINEMENT_KEY_COUNT) - 1, "every key recorded");
        cr_assert_str_eq(confinement_first_key(&s->confinement), "sandbox");

        s = parse_one("\"sandbox\":\"none\",\"memoryMax\":1073741824,\"cpuQuota\":\"200%\",\"stateDirectory\":\"mcpvisor/memory\"");
        cr_assert_eq(s->confinement.sandbox, SANDBOX_NONE);
        cr_assert_eq(s->confinement.memory_max, 1ull << 30);
        cr_assert_eq(s->confinement.cpu_quota_usec, 2000000);
        cr_assert_str_eq(s->confinement.state_directory, "mcpvisor/memory");
        cr_assert_eq(s->launcher, LAUNCHER_AUTO);

        s = parse_one("\"sandbox\":\"basic\",\"memoryMax\":\"infinity\",\"cpuQuota\":\"12.5%\",\"stateDirectory\":false,"
                      "\"readWritePaths\":[],\"network\":true,\"launcher\":\"auto\"");
        cr_assert_eq(s->confinement.sandbox, SANDBOX_BASIC);
        cr_assert_eq(s->confinement.memory_max, CONFINEMENT_INFINITY);
        cr_assert_eq(s->confinement.cpu_quota_usec, 125000);
        cr_assert_null(s->confinement.state_directory);
        cr_assert_null(s->confinement.read_write_paths[0]);
        cr_assert(s->confinement.network);
        cr_assert_str_eq(confinement_first_key(&s->confinement), "sandbox");
}

Test(server_config, sizes_and_percentages) {
        static const struct {
                const char *text;
                uint64_t bytes;
        } sizes[] = {
                { "1", 1 }, { "4096", 4096 }, { "512K", 512 << 10 }, { "256M", 256 << 20 }, { "1G", 1ull << 30 },
                { "1.5G", 3ull << 29 }, { "2T", 2ull << 40 }, { "0.5K", 512 }, { "infinity", UINT64_MAX },
        };
        static const char *const bad_sizes[] = { "", "M", "1.G", ".5G", "1g", "1GB", "1 G", "-1", "1P", "+1", "1e3",
                                                 "99999999999999999999", "8388608T", "Infinity" };
        static const struct {
                const char *text;
                uint64_t usec;
        } percents[] = { { "1%", 10000 }, { "50%", 500000 }, { "100%", 1000000 }, { "250%", 2500000 }, { "0.01%", 100 },
                         { "12.5%", 125000 }, { "1000000%", 10000000000ull } };
        static const char *const bad_percents[] = { "", "%", "50", "0%", "0.00%", "-5%", "5.%", "5.123%", "50 %", "1e2%",
                                                    "1000001%", "50%%", "12345678%" };
        uint64_t v;

        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
                cr_assert_eq(confinement_parse_size(sizes[i].text, &v), 0, "%s", sizes[i].text);
                cr_assert_eq(v, sizes[i].bytes, "%s: %" PRIu64, sizes[i].text, v);
        }
        for (size_t i = 0; i < ARRAY_SIZE(bad_sizes); i++)
                cr_assert_lt(confinement_parse_size(bad_sizes[i], &v), 0, "%s", bad_sizes[i]);
        for (size_t i = 0; i < ARRAY_SIZE(percents); i++) {
                cr_assert_eq(confinement_parse_percent(percents[i].text, &v), 0, "%s", percents[i].text);
                cr_assert_eq(v, percents[i].usec, "%s: %" PRIu64, percents[i].text, v);
        }
        for (size_t i = 0; i < ARRAY_SIZE(bad_percents); i++)
                cr_assert_lt(confinement_parse_percent(bad_percents[i], &v), 0, "%s", bad_percents[i]);
}

/* Each bad value is an error at its JSON path, and the server is skipped. */
Test(server_config, confinement_bad_values) {
        static const struct bad_entry bad[] = {
                { "\"launcher\":\"docker\"", "mcpServers.s.launcher", "expected one of \"auto\", \"systemd\", \"exec\"" },
                { "\"launcher\":null", "mcpServers.s.launcher", "expected one of" },
                { "\"sandbox\":\"full\"", "mcpServers.s.sandbox", "expected one of \"strict\", \"basic\", \"none\"" },
                { "\"sandbox\":true", "mcpServers.s.sandbox", "expected one of" },
                { "\"readWritePaths\":\"/srv\"", "mcpServers.s.readWritePaths", "expected an array of absolute paths" },
                { "\"readWritePaths\":[\"/srv\",\"data\"]", "mcpServers.s.readWritePaths[1]", "expected an absolute path" },
                { "\"readWritePaths\":[5]", "mcpServers.s.readWritePaths[0]", "expected an absolute path" },
                { "\"readOnlyPaths\":[\"/srv/../etc\"]", "mcpServers.s.readOnlyPaths[0]", "without \".\" or \"..\"" },
                { "\"readOnlyPaths\":[\"/srv/./x\"]", "mcpServers.s.readOnlyPaths[0]", "without \".\" or \"..\"" },
                { "\"readOnlyPaths\":[\"/srv/..\"]", "mcpServers.s.readOnlyPaths[0]", "without" },
                { "\"readOnlyPaths\":[\"/a\\u0000b\"]", "mcpServers.s.readOnlyPaths[0]", "NUL" },
                { "\"network\":\"no\"", "mcpServers.s.network", "expected true or false" },
                { "\"memoryMax\":0", "mcpServers.s.memoryMax", "expected a number of bytes above 0" },
                { "\"memoryMax\":-1", "mcpServers.s.memoryMax", "expected a number of bytes" },
                { "\"memoryMax\":1.5", "mcpServers.s.memoryMax", "expected a number of bytes" },
                { "\"memoryMax\":\"256MB\"", "mcpServers.s.memoryMax", "\"256M\"" },
                { "\"memoryMax\":\"256m\"", "mcpServers.s.memoryMax", "\"256M\"" },
                { "\"memoryMax\":\"0M\"", "mcpServers.s.memoryMax", "above 0" },
                { "\"memoryMax\":\"50%\"", "mcpServers.s.memoryMax", "\"infinity\"" },
                { "\"memoryMax\":null", "mcpServers.s.memoryMax", "expected a number of bytes" },
                { "\"tasksMax\":0", "mcpServers.s.tasksMax", "expected a whole number from 1 to 4194304" },
                { "\"tasksMax\":4194305", "mcpServers.s.tasksMax", "from 1 to 4194304" },
                { "\"tasksMax\":\"64\"", "mcpServers.s.tasksMax", "whole number" },
                { "\"tasksMax\":2.5", "mcpServers.s.tasksMax", "whole number" },
                { "\"cpuQuota\":50", "mcpServers.s.cpuQuota", "such as \"50%\"" },
                { "\"cpuQuota\":\"0%\"", "mcpServers.s.cpuQuota", "above 0%" },
                { "\"cpuQuota\":\"half\"", "mcpServers.s.cpuQuota", "percentage" },
                { "\"user\":\"\"", "mcpServers.s.user", "expected a name" },
                { "\"user\":\"1000\"", "mcpServers.s.user", "starting with a letter" },
                { "\"user\":\"a b\"", "mcpServers.s.user", "expected a name" },
                { "\"user\":\"abcdefghijklmnopqrstuvwxyz0123456\"", "mcpServers.s.user", "1-32" },
                { "\"user\":0", "mcpServers.s.user", "expected a name" },
                { "\"group\":\"-g\"", "mcpServers.s.group", "expected a name" },
                { "\"group\":[\"g\"]", "mcpServers.s.group", "expected a name" },
                { "\"dynamicUser\":1", "mcpServers.s.dynamicUser", "expected true or false" },
                { "\"stateDirectory\":\"/var/lib/x\"", "mcpServers.s.stateDirectory", "relative path" },
                { "\"stateDirectory\":\"\"", "mcpServers.s.stateDirectory", "relative path" },
                { "\"stateDirectory\":\"a/../b\"", "mcpServers.s.stateDirectory", "no \".\" or \"..\"" },
                { "\"stateDirectory\":\"a//b\"", "mcpServers.s.stateDirectory", "relative path" },
                { "\"stateDirectory\":\"a/\"", "mcpServers.s.stateDirectory", "relative path" },
                { "\"stateDirectory\":\"private/x\"", "mcpServers.s.stateDirectory", "not \"private\"" },
                { "\"stateDirectory\":\"a b\"", "mcpServers.s.stateDirectory", "relative path" },
                { "\"stateDirectory\":1", "mcpServers.s.stateDirectory", "expected true, false" },
                { "\"sandbox\":\"strict\",\"launcher\":\"exec\"", "mcpServers.s.sandbox", "needs the systemd launcher" },
        };

        expect_bad_entries(bad, ARRAY_SIZE(bad));
}

/* A name that cannot be a directory's has no default state directory. */
Test(server_config, state_directory_of_odd_names) {
        cr_assert_eq(parse("{\"mcpServers\":{\"..\":{\"command\":\"x\",\"stateDirectory\":true},"
                           "\".npm\":{\"command\":\"x\",\"stateDirectory\":true}}}"),
                     0);
        cr_assert_null(config_find_server(&C, ".."));
        cr_assert_not_null(strstr(problem_at("mcpServers....stateDirectory")->message, "cannot have a directory of its name"));
        cr_assert_str_eq(config_find_server(&C, ".npm")->confinement.state_directory, "mcpvisor/servers/.npm",
                         "below mcpvisor/servers, never on the daemon's own files");
        cr_assert_eq(P.errors, 1);
}

/* The exec launcher cannot confine: each key is refused, whether the server or the daemon
 * chose exec, wherever the daemon's setting is in the file. */
Test(server_config, exec_launcher_refuses_confinement) {
        const struct config_problem *q;

        cr_assert_eq(parse("{\"mcpServers\":{\"s\":{\"command\":\"x\",\"launcher\":\"exec\",\"memoryMax\":\"1G\",\"network\":true},"
                           "\"e\":{\"command\":\"x\",\"launcher\":\"exec\"}}}"),
                     0);
        cr_assert_eq(P.errors, 2, "one per key");
        q = problem_at("mcpServers.s.memoryMax");
        cr_assert_not_null(q);
        cr_assert_str_eq(q->message, "needs the systemd launcher: the exec launcher cannot confine a server, and this server's "
                                     "launcher is \"exec\" (remove the key, or set \"launcher\" to \"auto\" or \"systemd\")");
        cr_assert_not_null(problem_at("mcpServers.s.network"), "even a value that asks for nothing");
        cr_assert_null(config_find_server(&C, "s"));
        cr_assert_eq(config_find_server(&C, "e")->launcher, LAUNCHER_EXEC);

        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"s\":{\"command\":\"x\",\"sandbox\":\"strict\"},\"t\":{\"command\":\"x\"},"
                           "\"u\":{\"command\":\"x\",\"launcher\":\"systemd\",\"sandbox\":\"strict\"},"
                           "\"a\":{\"command\":\"x\",\"launcher\":\"auto\",\"tasksMax\":5}},"
                           "\"mcpvisor\":{\"launcher\":\"exec\"}}"),
                     0, "a server's error does not stop the daemon");
        cr_assert_eq(P.errors, 1);
        q = problem_at("mcpServers.s.sandbox");
        cr_assert_not_null(q);
        cr_assert_not_null(strstr(q->message, "\"exec\" (the daemon's, mcpvisor.launcher)"), "%s", q->message);
        cr_assert_null(config_find_server(&C, "s"));
        cr_assert_eq(config_find_server(&C, "t")->launcher, LAUNCHER_EXEC, "the daemon's default");
        cr_assert_eq(config_find_server(&C, "u")->launcher, LAUNCHER_SYSTEMD);
        cr_assert_eq(config_find_server(&C, "a")->launcher, LAUNCHER_AUTO);
        cr_assert_eq(C.n_servers, 3);
}

/* "sandbox" as the daemon's default: the servers without their own get it (a drop-in may
 * set it); a server's own wins; the exec launcher ignores the daemon's, since no entry gave
 * it, but still refuses an entry's. */
Test(server_config, daemon_sandbox_default) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\"},\"b\":{\"command\":\"x\",\"sandbox\":\"none\"},"
                           "\"c\":{\"command\":\"x\",\"launcher\":\"exec\"}},\"mcpvisor\":{\"sandbox\":\"strict\"}}"),
                     0);
        cr_assert_eq(P.count, 0, "%s: %s", P.count ? P.items[0].path : "", P.count ? P.items[0].message : "");
        cr_assert_eq(C.sandbox, SANDBOX_STRICT);
        cr_assert_eq(config_find_server(&C, "a")->confinement.sandbox, SANDBOX_STRICT);
        cr_assert_null(confinement_first_key(&config_find_server(&C, "a")->confinement), "not the entry's key");
        cr_assert_eq(config_find_server(&C, "b")->confinement.sandbox, SANDBOX_NONE);
        cr_assert_not_null(config_find_server(&C, "c"), "exec runs it: the daemon's sandbox is no key of its entry");

        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\"}}}"), 0);
        cr_assert_eq(C.sandbox, SANDBOX_BASIC);
        cr_assert_eq(config_find_server(&C, "a")->confinement.sandbox, SANDBOX_BASIC, "the default preset");

        done();
        cr_assert_eq(parse("{\"mcpvisor\":{\"sandbox\":\"tight\"}}"), -EINVAL);
        cr_assert_not_null(problem_at("mcpvisor.sandbox"));
        cr_assert_not_null(strstr(problem_at("mcpvisor.sandbox")->message, "\"strict\", \"basic\", \"none\""), "%s",
                           problem_at("mcpvisor.sandbox")->message);
}

/* The daemon's sandbox from a drop-in applies to the main file's servers. */
Test(server_config, daemon_sandbox_from_a_dropin) {
        char dir[] = "/tmp/mcpvisor-dropin-XXXXXX", path[256], d[256], f[300];

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/mcpvisor.json", dir);
        snprintf(d, sizeof d, "%s/mcpvisor.d", dir);
        mkdir(d, 0755);
        write_file(path, "{\"mcpServers\":{\"a\":{\"command\":\"x\"}}}");
        snprintf(f, sizeof f, "%s/10-sandbox.json", d);
        write_file(f, "{\"mcpvisor\":{\"sandbox\":\"none\"}}");
        memset(&P, 0, sizeof P);
        cr_assert_eq(config_load(path, false, &C, &P), 0);
        cr_assert_eq(P.count, 0);
        cr_assert_eq(config_find_server(&C, "a")->confinement.sandbox, SANDBOX_NONE);
}

/* A drop-in's launcher applies to the main file's servers too. */
Test(server_config, daemon_launcher_from_a_dropin) {
        char dir[] = "/tmp/mcpvisor-dropin-XXXXXX", path[256], d[256], f[300];

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/mcpvisor.json", dir);
        snprintf(d, sizeof d, "%s/mcpvisor.d", dir);
        mkdir(d, 0755);
        write_file(path, "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"cpuQuota\":\"50%\"},\"b\":{\"command\":\"x\"}}}");
        snprintf(f, sizeof f, "%s/10-exec.json", d);
        write_file(f, "{\"mcpvisor\":{\"launcher\":\"exec\"}}");
        memset(&P, 0, sizeof P);
        cr_assert_eq(config_load(path, false, &C, &P), 0);
        cr_assert_null(config_find_server(&C, "a"));
        cr_assert_eq(config_find_server(&C, "b")->launcher, LAUNCHER_EXEC);
        cr_assert_eq(P.errors, 1);
        cr_assert_str_eq(P.items[0].path, "mcpServers.a.cpuQuota");
        cr_assert_str_eq(P.items[0].file, path, "named in the file the server was read from");
}

/* What a start checks once it knows the launcher and the manager. */
Test(server_config, run_time_checks) {
        const struct server_config *s;
        char *error = NULL;

        s = parse_one("\"memoryMax\":\"1G\"");
        cr_assert_eq(server_config_check_launcher(s, LAUNCHER_SYSTEMD, &error), 0);
        cr_assert_eq(server_config_check_launcher(s, LAUNCHER_EXEC, &error), -EINVAL);
        cr_assert_str_eq(error, "memoryMax needs the systemd launcher, but this server is run by the exec launcher");
        free(error);
        error = NULL;
        cr_assert_eq(confinement_check_manager(&s->confinement, MANAGER_USER, &error), 0, "limits work under a user manager");
        s = parse_one("");
        cr_assert_eq(server_config_check_launcher(s, LAUNCHER_EXEC, &error), 0, "nothing to confine");

        s = parse_one("\"group\":\"mcp\"");
        cr_assert_eq(confinement_check_manager(&s->confinement, MANAGER_SYSTEM, &error), 0);
        cr_assert_eq(confinement_check_manager(&s->confinement, MANAGER_USER, &error), -EPERM);
        cr_assert_not_null(strstr(error, "group needs the system service manager"), "%s", error);
        free(error);
        error = NULL;
        s = parse_one("\"dynamicUser\":true");
        cr_assert_eq(confinement_check_manager(&s->confinement, MANAGER_USER, &error), -EPERM);
        cr_assert_not_null(strstr(error, "dynamicUser"), "%s", error);
        free(error);
        error = NULL;
        s = parse_one("\"user\":\"nobody\",\"dynamicUser\":false");
        cr_assert_eq(confinement_check_manager(&s->confinement, MANAGER_USER, &error), -EPERM);
        cr_assert_not_null(strstr(error, "user needs"), "%s", error);
        free(error);
}

/* A change of launcher or confinement needs a new unit: never live. */
Test(server_config, confinement_changes_restart) {
        static const struct {
                const char *a, *b;
                bool equal;
        } cases[] = {
                { "", ",\"sandbox\":\"basic\"", true },
                { "", ",\"network\":true", true },
                { "", ",\"launcher\":\"auto\"", true },
                { "", ",\"stateDirectory\":false", true },
                { ",\"stateDirectory\":true", ",\"stateDirectory\":\"mcpvisor/servers/a\"", true },
                { ",\"memoryMax\":\"1G\"", ",\"memoryMax\":1073741824", true },
                { "", ",\"sandbox\":\"strict\"", false },
                { "", ",\"launcher\":\"exec\"", false },
                { "", ",\"launcher\":\"systemd\"", false },
                { "", ",\"network\":false", false },
                { ",\"memoryMax\":\"1G\"", ",\"memoryMax\":\"2G\"", false },
                { "", ",\"tasksMax\":10", false },
                { ",\"cpuQuota\":\"50%\"", ",\"cpuQuota\":\"50.01%\"", false },
                { "", ",\"user\":\"nobody\"", false },
                { ",\"group\":\"a\"", ",\"group\":\"b\"", false },
                { "", ",\"dynamicUser\":true", false },
                { ",\"readWritePaths\":[\"/a\"]", ",\"readWritePaths\":[\"/a\",\"/b\"]", false },
                { ",\"readOnlyPaths\":[\"/a\"]", ",\"readWritePaths\":[\"/a\"]", false },
                { "", ",\"stateDirectory\":true", false },
                /* with a change of filters too: still a restart */
                { "", ",\"memoryMax\":\"1G\",\"includeTools\":[\"a\"]", false },
        };

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct server_config *a, *b;

                parse_pair(cases[i].a, cases[i].b, &a, &b);
                cr_assert_eq(server_config_equal(a, b), cases[i].equal, "%s vs %s: equal", cases[i].a, cases[i].b);
                cr_assert_eq(server_config_equal(b, a), cases[i].equal, "%s vs %s: equal", cases[i].b, cases[i].a);
                cr_assert_not(server_config_changes_live(a, b), "%s -> %s: live", cases[i].a, cases[i].b);
                cr_assert_not(server_config_changes_live(b, a), "%s -> %s: live", cases[i].b, cases[i].a);
        }
}

Test(server_config, instances) {
        cr_assert_eq(parse("{\"mcpServers\":{\"d\":{\"command\":\"x\"},"
                           "\"u\":{\"command\":\"x\",\"instances\":\"per-user\",\"instanceIdle\":60},"
                           "\"c\":{\"command\":\"x\",\"instances\":\"per-client\",\"maxInstances\":8,\"spareInstances\":2},"
                           "\"r\":{\"url\":\"http://127.0.0.1:1/mcp\",\"instances\":\"per-client\"}}}"),
                     0);
        cr_assert_eq(P.count, 0, "unexpected problem: %s", P.count ? P.items[0].message : "");
        const struct server_config *d = config_find_server(&C, "d"), *u = config_find_server(&C, "u"),
                                   *c = config_find_server(&C, "c"), *r = config_find_server(&C, "r");
        cr_assert_eq(d->instances, INSTANCES_SHARED);
        cr_assert_float_eq(d->instance_idle, 300, 1e-9);
        cr_assert_eq(d->max_instances, 64u);
        cr_assert_eq(d->spare_instances, 0u);
        cr_assert_eq(u->instances, INSTANCES_PER_USER);
        cr_assert_float_eq(u->instance_idle, 60, 1e-9);
        cr_assert_eq(c->instances, INSTANCES_PER_CLIENT);
        cr_assert_eq(c->max_instances, 8u);
        cr_assert_eq(c->spare_instances, 2u);
        cr_assert_eq(r->instances, INSTANCES_PER_CLIENT);
        cr_assert_not(server_config_equal(c, d));
}

Test(server_config, instances_bad_values) {
        static const struct {
                const char *entry, *key;
        } bad[] = {
                { "\"instances\":\"per-session\"", "instances" },
                { "\"instances\":true", "instances" },
                { "\"instances\":\"per-client\",\"maxInstances\":0", "maxInstances" },
                { "\"instances\":\"per-client\",\"maxInstances\":4097", "maxInstances" },
                { "\"instances\":\"per-client\",\"instanceIdle\":-1", "instanceIdle" },
                { "\"instances\":\"per-client\",\"maxInstances\":2,\"spareInstances\":3", "spareInstances" },
                { "\"spareInstances\":1", "spareInstances" },
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char text[256], path[64];

                done();
                snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"x\",%s},\"ok\":{\"command\":\"y\"}}}",
                         bad[i].entry);
                snprintf(path, sizeof path, "mcpServers.s.%s", bad[i].key);
                cr_assert_eq(parse(text), 0, "%s", text);
                cr_assert_eq(P.errors, 1, "%s: %zu errors", text, P.errors);
                cr_assert_not_null(problem_at(path), "%s: no problem at %s", text, path);
                cr_assert_null(config_find_server(&C, "s"), "%s: the server must be skipped", text);
                cr_assert_not_null(config_find_server(&C, "ok"));
        }
}

Test(server_config, shared_settings_outlive_a_reference) {
        cr_assert_eq(parse("{\"mcpServers\":{\"c\":{\"command\":\"x\",\"instances\":\"per-client\"}}}"), 0);
        struct server_config *c = server_config_take(&C.servers[0]);
        cr_assert_eq(server_config_ref(c), c);
        server_config_free(c);
        cr_assert_str_eq(c->command, "x", "one reference is left");
        server_config_free(c);
}
