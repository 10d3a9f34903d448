/* Server entries of "mcpServers", drop-ins, and the JSON paths of their problems. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
                           "\"w\":{\"command\":\"x\",\"cwd\":\"relative\"},"
                           "\"u\":{\"url\":\"https://example.invalid/mcp\"},"
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
        cr_assert_not_null(problem_at("mcpServers.w.cwd"));
        cr_assert_not_null(problem_at("mcpServers.u.url"));
        cr_assert_not_null(problem_at("mcpServers.t.type"));
        cr_assert_not_null(problem_at("mcpServers.bad name"));
        cr_assert_not_null(problem_at("mcpServers.n"));
        cr_assert_eq(problem_at("mcpServers.k.colour")->severity, PROBLEM_ERROR);
        cr_assert_eq(P.errors, 12);
        cr_assert_eq(P.count, 12);
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

/* What other clients' entries carry: each loads, warns what it loses, or is refused. */
Test(server_config, other_clients_keys) {
        static const char *const warned[] = { "autoApprove", "alwaysAllow", "trust", "timeout", "includeTools",
                                              "excludeTools", "disabledTools", "watchPaths", "dev" };
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
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"excludeTools\":[\"rm\"]}}}"), 0);
        cr_assert(strstr(P.items[0].message, "not applied yet"), "%s", P.items[0].message);
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"timeout\":60}}}"), 0);
        cr_assert(strstr(P.items[0].message, "requestTimeout"), "%s", P.items[0].message);

        /* a comment, and the transport that is ours */
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"type\":\"stdio\",\"command\":\"x\",\"description\":\"files\"}}}"), 0);
        cr_assert_eq(P.count, 0, "%s", P.count ? P.items[0].message : "");

        /* refused: what the server needs would be lost, or is not a process to run */
        done();
        cr_assert_eq(parse("{\"servers\":{\"a\":{\"type\":\"stdio\",\"command\":\"x\",\"envFile\":\"/srv/.env\"},"
                           "\"g\":{\"httpUrl\":\"https://example.invalid/mcp\"},"
                           "\"w\":{\"serverUrl\":\"https://example.invalid/sse\"},"
                           "\"h\":{\"type\":\"http\",\"url\":\"https://example.invalid/mcp\"},"
                           "\"s\":{\"type\":\"streamable-http\",\"command\":\"x\"}}}"),
                     0);
        cr_assert(strstr(problem_at("servers.a.envFile")->message, "\"env\""), "%s", problem_at("servers.a.envFile")->message);
        cr_assert(strstr(problem_at("servers.g.httpUrl")->message, "remote (URL) servers are not supported"));
        cr_assert_not_null(problem_at("servers.w.serverUrl"));
        cr_assert_not_null(problem_at("servers.h.url"));
        cr_assert_str_eq(problem_at("servers.s.type")->message, "only \"stdio\" servers are supported");
        cr_assert_eq(P.errors, 5);
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
