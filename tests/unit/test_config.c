/* Unit tests for config.c: parsing, validation and problem paths. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "macro.h"
#include "unit-helpers.h"

static struct config cfg;
static struct config_problems probs;

static void setup(void) {
        config_init_defaults(&cfg);
}

static void teardown(void) {
        config_done(&cfg);
        problems_done(&probs);
        tmpdir_remove();
}

TestSuite(config, .init = setup, .fini = teardown);

static int parse(const char *text) {
        config_done(&cfg);
        problems_done(&probs);
        return config_parse(text, strlen(text), &cfg, &probs);
}

/* Exactly one problem, at path, with that severity; returns it. */
static const struct config_problem *only_problem(const char *path, enum problem_severity sev) {
        cr_assert_eq(probs.count, 1, "expected one problem at \"%s\", got %zu (first: %s: %s)", path, probs.count,
                     probs.count ? probs.items[0].path : "-", probs.count ? probs.items[0].message : "-");
        cr_assert_str_eq(probs.items[0].path, path);
        cr_assert_eq(probs.items[0].severity, sev);
        cr_assert_not_null(probs.items[0].message);
        cr_assert_gt(strlen(probs.items[0].message), 0);
        cr_assert_eq(probs.errors, sev == PROBLEM_ERROR ? 1 : 0);
        return &probs.items[0];
}

static void expect_defaults(const struct config *c) {
        cr_assert_null(c->socket_path);
        cr_assert_null(c->control_socket_path);
        cr_assert_eq(c->socket_mode, 0660);
        cr_assert_eq(c->log_level, -1);
        cr_assert_eq(c->max_message_size, 16u * 1024 * 1024);
        cr_assert_eq(c->max_server_message_size, 64u * 1024 * 1024);
        cr_assert_eq(c->client_output_limit, 64u * 1024 * 1024);
        cr_assert_eq(c->server_input_limit, 64u * 1024 * 1024);
        cr_assert_float_eq(c->shutdown_timeout, 10.0, 1e-9);
        cr_assert_eq(c->launcher, LAUNCHER_AUTO);
        cr_assert_null(c->tool_name_separator);
        cr_assert_float_eq(c->list_wait, 5.0, 1e-9);
        cr_assert_eq(c->list_page_size, 500);
}

static char *write_file(const char *name, const char *text) {
        char *path;
        FILE *f;

        cr_assert_geq(asprintf(&path, "%s/%s", tmpdir_make(), name), 0);
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(text, f);
        cr_assert_eq(fclose(f), 0);
        return path;
}

Test(config, init_defaults) {
        struct config c;

        memset(&c, 0x55, sizeof c);
        config_init_defaults(&c);
        expect_defaults(&c);
}

Test(config, empty_object) {
        cr_assert_eq(parse("{}"), 0);
        cr_assert_eq(probs.count, 0);
        cr_assert_eq(probs.errors, 0);
        expect_defaults(&cfg);
}

Test(config, empty_daemon_settings) {
        cr_assert_eq(parse("{\"mcpvisor\":{},\"mcpServers\":{}}\n"), 0);
        cr_assert_eq(probs.count, 0);
        expect_defaults(&cfg);
}

Test(config, claude_desktop_shape) {
        cr_assert_eq(parse("{\n"
                           "  \"mcpServers\": {\n"
                           "    \"fs\": { \"command\": \"npx\", \"args\": [\"-y\", \"server-fs\", \"/tmp\"] }\n"
                           "  }\n"
                           "}\n"), 0);
        cr_assert_eq(probs.count, 0);
        expect_defaults(&cfg);
}

Test(config, all_settings) {
        cr_assert_eq(parse("{\"mcpvisor\":{"
                           "\"socket\":\"/run/m/mcp.sock\","
                           "\"controlSocket\":\"/run/m/control.sock\","
                           "\"socketMode\":\"0600\","
                           "\"logLevel\":\"debug\","
                           "\"maxMessageSize\":1048576,"
                           "\"maxServerMessageSize\":2097152,"
                           "\"clientOutputLimit\":4096,"
                           "\"serverInputLimit\":8388608,"
                           "\"shutdownTimeout\":2.5,"
                           "\"launcher\":\"exec\"}}"), 0);
        cr_assert_eq(probs.count, 0, "%s: %s", probs.count ? probs.items[0].path : "", probs.count ? probs.items[0].message : "");
        cr_assert_str_eq(cfg.socket_path, "/run/m/mcp.sock");
        cr_assert_str_eq(cfg.control_socket_path, "/run/m/control.sock");
        cr_assert_eq(cfg.socket_mode, 0600);
        cr_assert_eq(cfg.log_level, 7);
        cr_assert_eq(cfg.max_message_size, 1048576);
        cr_assert_eq(cfg.max_server_message_size, 2097152);
        cr_assert_eq(cfg.client_output_limit, 4096);
        cr_assert_eq(cfg.server_input_limit, 8388608);
        cr_assert_float_eq(cfg.shutdown_timeout, 2.5, 1e-9);
        cr_assert_eq(cfg.launcher, LAUNCHER_EXEC);
}

Test(config, log_level_forms) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"logLevel\":\"warn\"}}"), 0);
        cr_assert_eq(cfg.log_level, 4);
        cr_assert_eq(parse("{\"mcpvisor\":{\"logLevel\":\"3\"}}"), 0);
        cr_assert_eq(cfg.log_level, 3);
        cr_assert_eq(parse("{\"mcpvisor\":{\"logLevel\":\"NOTICE\"}}"), 0);
        cr_assert_eq(cfg.log_level, 5);
}

Test(config, socket_mode_forms) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"socketMode\":\"660\"}}"), 0);
        cr_assert_eq(cfg.socket_mode, 0660);
        cr_assert_eq(parse("{\"mcpvisor\":{\"socketMode\":\"0777\"}}"), 0);
        cr_assert_eq(cfg.socket_mode, 0777);
        cr_assert_eq(parse("{\"mcpvisor\":{\"socketMode\":\"0\"}}"), 0);
        cr_assert_eq(cfg.socket_mode, 0);
}

Test(config, range_boundaries) {
        static const struct { const char *json; size_t max_message, output_limit; double timeout; } ok[] = {
                { "{\"mcpvisor\":{\"maxMessageSize\":1024}}", 1024, CONFIG_DEFAULT_OUTPUT_LIMIT, 10 },
                { "{\"mcpvisor\":{\"maxMessageSize\":1073741824}}", 1u << 30, CONFIG_DEFAULT_OUTPUT_LIMIT, 10 },
                { "{\"mcpvisor\":{\"maxMessageSize\":2048.0}}", 2048, CONFIG_DEFAULT_OUTPUT_LIMIT, 10 },
                { "{\"mcpvisor\":{\"clientOutputLimit\":1073741824}}", CONFIG_DEFAULT_MAX_MESSAGE, 1u << 30, 10 },
                { "{\"mcpvisor\":{\"shutdownTimeout\":0.1}}", CONFIG_DEFAULT_MAX_MESSAGE, CONFIG_DEFAULT_OUTPUT_LIMIT, 0.1 },
                { "{\"mcpvisor\":{\"shutdownTimeout\":3600}}", CONFIG_DEFAULT_MAX_MESSAGE, CONFIG_DEFAULT_OUTPUT_LIMIT, 3600 },
                { "{\"mcpvisor\":{\"shutdownTimeout\":1}}", CONFIG_DEFAULT_MAX_MESSAGE, CONFIG_DEFAULT_OUTPUT_LIMIT, 1 },
        };

        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
                cr_assert_eq(parse(ok[i].json), 0, "%s", ok[i].json);
                cr_assert_eq(probs.count, 0, "%s", ok[i].json);
                cr_assert_eq(cfg.max_message_size, ok[i].max_message, "%s", ok[i].json);
                cr_assert_eq(cfg.client_output_limit, ok[i].output_limit, "%s", ok[i].json);
                cr_assert_float_eq(cfg.shutdown_timeout, ok[i].timeout, 1e-9, "%s", ok[i].json);
        }
}

Test(config, invalid_settings) {
        static const struct { const char *key, *value, *hint; } bad[] = {
                { "socket", "\"relative/mcp.sock\"", "absolute" },
                { "socket", "\"\"", "absolute" },
                { "socket", "5", "absolute" },
                { "socket", "null", "absolute" },
                { "controlSocket", "\"control.sock\"", "absolute" },
                { "controlSocket", "[\"/a\"]", "absolute" },
                { "socketMode", "\"660x\"", "octal" },
                { "socketMode", "\"0688\"", "octal" },
                { "socketMode", "\"9\"", "octal" },
                { "socketMode", "\"\"", "octal" },
                { "socketMode", "\"-1\"", "octal" },
                { "socketMode", "\"01000\"", "octal" },
                { "socketMode", "660", "octal" },
                { "socketMode", "null", "octal" },
                { "logLevel", "\"loud\"", "debug" },
                { "logLevel", "\"\"", "debug" },
                { "logLevel", "7", "debug" },
                { "maxMessageSize", "1023", "bytes" },
                { "maxMessageSize", "1073741825", "bytes" },
                { "maxMessageSize", "-1", "bytes" },
                { "maxMessageSize", "\"1024\"", "bytes" },
                { "maxMessageSize", "true", "bytes" },
                { "maxMessageSize", "1e300", "bytes" },
                { "maxMessageSize", "2048.5", "whole" },
                { "maxServerMessageSize", "1023", "bytes" },
                { "maxServerMessageSize", "1073741825", "bytes" },
                { "maxServerMessageSize", "\"64M\"", "bytes" },
                { "clientOutputLimit", "4095", "bytes" },
                { "clientOutputLimit", "0", "bytes" },
                { "clientOutputLimit", "{}", "bytes" },
                { "serverInputLimit", "4095", "bytes" },
                { "serverInputLimit", "0", "bytes" },
                { "serverInputLimit", "1073741825", "bytes" },
                { "serverInputLimit", "\"64M\"", "bytes" },
                { "shutdownTimeout", "0", "seconds" },
                { "shutdownTimeout", "0.09", "seconds" },
                { "shutdownTimeout", "-1", "seconds" },
                { "shutdownTimeout", "3600.5", "seconds" },
                { "shutdownTimeout", "\"10\"", "seconds" },
                { "shutdownTimeout", "null", "seconds" },
                { "launcher", "\"docker\"", "\"auto\", \"systemd\", \"exec\"" },
                { "launcher", "\"Systemd\"", "\"auto\", \"systemd\", \"exec\"" },
                { "launcher", "true", "\"auto\", \"systemd\", \"exec\"" },
                { "launcher", "null", "\"auto\", \"systemd\", \"exec\"" },
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char json[256], path[64];
                const struct config_problem *pr;

                snprintf(json, sizeof json, "{\"mcpvisor\":{\"%s\":%s}}", bad[i].key, bad[i].value);
                snprintf(path, sizeof path, "mcpvisor.%s", bad[i].key);
                cr_assert_eq(parse(json), -EINVAL, "%s must be rejected", json);
                pr = only_problem(path, PROBLEM_ERROR);
                cr_assert_not_null(strstr(pr->message, bad[i].hint), "%s: message \"%s\" lacks \"%s\"", json,
                                   pr->message, bad[i].hint);
        }
}

Test(config, range_in_message) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"maxMessageSize\":1}}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcpvisor.maxMessageSize", PROBLEM_ERROR)->message,
                         "expected a whole number from 1024 to 1073741824 (bytes)");
        cr_assert_eq(parse("{\"mcpvisor\":{\"shutdownTimeout\":0}}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcpvisor.shutdownTimeout", PROBLEM_ERROR)->message,
                         "expected a number from 0.1 to 3600 (seconds)");
}

Test(config, all_problems_collected) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"socket\":\"x\",\"socketMode\":\"rw\",\"bogus\":1,\"logLevel\":\"info\"},"
                           "\"mcpServers\":5}"), -EINVAL);
        cr_assert_eq(probs.count, 4);
        cr_assert_eq(probs.errors, 4);
        cr_assert_str_eq(probs.items[0].path, "mcpvisor.socket");
        cr_assert_str_eq(probs.items[1].path, "mcpvisor.socketMode");
        cr_assert_str_eq(probs.items[2].path, "mcpvisor.bogus");
        cr_assert_str_eq(probs.items[3].path, "mcpServers");
}

/* A misspelt daemon setting would leave its default in place without a word. */
Test(config, unknown_daemon_key_is_an_error) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"sockets\":\"/x\",\"logLevel\":\"err\"}}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcpvisor.sockets", PROBLEM_ERROR)->message,
                         "unknown key; did you mean \"socket\"?");
        cr_assert_eq(parse("{\"mcpvisor\":{\"logLevle\":\"debug\"}}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcpvisor.logLevle", PROBLEM_ERROR)->message,
                         "unknown key; did you mean \"logLevel\"?");
        cr_assert_eq(parse("{\"mcpvisor\":{\"colour\":1}}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcpvisor.colour", PROBLEM_ERROR)->message,
                         "unknown key (the keys are listed in mcpvisor.json(5))");
}

/* "mcpservers" used to load as a configuration without servers, and pass the check. */
Test(config, unknown_top_level_key_is_an_error) {
        cr_assert_eq(parse("{\"mcpservers\":{\"fs\":{\"command\":\"cat\"}}}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcpservers", PROBLEM_ERROR)->message, "unknown key; did you mean \"mcpServers\"?");
        cr_assert_eq(parse("{\"mcp_servers\":{}}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcp_servers", PROBLEM_ERROR)->message, "unknown key; did you mean \"mcpServers\"?");
        cr_assert_eq(parse("{\"tools\":[],\"mcpServers\":{}}"), -EINVAL);
        only_problem("tools", PROBLEM_ERROR);
}

/* Claude Desktop's own setting beside its servers: the file loads as it is. */
Test(config, claude_desktop_setting_warns) {
        cr_assert_eq(parse("{\"globalShortcut\":\"Ctrl+Space\",\"mcpServers\":{}}"), 0);
        only_problem("globalShortcut", PROBLEM_WARNING);
        expect_defaults(&cfg);
}

/* VS Code's mcp.json: "servers" for "mcpServers", and "inputs" it prompts for. */
Test(config, vscode_shape) {
        cr_assert_eq(parse("{\"inputs\":[],\"servers\":{\"fs\":{\"type\":\"stdio\",\"command\":\"npx\","
                           "\"args\":[\"-y\",\"server-fs\"],\"env\":{\"A\":\"b\"},\"cwd\":\"/srv\"}}}"),
                     0);
        cr_assert_eq(probs.count, 0, "%s: %s", probs.count ? probs.items[0].path : "", probs.count ? probs.items[0].message : "");
        cr_assert_eq(cfg.n_servers, 1);
        cr_assert_str_eq(cfg.servers[0].name, "fs");
        cr_assert_str_eq(cfg.servers[0].args[1], "server-fs");
        cr_assert_str_eq(cfg.servers[0].json_path, "servers.fs");

        cr_assert_eq(parse("{\"inputs\":[{\"type\":\"promptString\",\"id\":\"tok\"}],\"servers\":{}}"), 0);
        cr_assert(strstr(only_problem("inputs", PROBLEM_WARNING)->message, "${input:ID} stays as written"), "%s",
                  probs.items[0].message);

        cr_assert_eq(parse("{\"servers\":{\"a\":{\"args\":[]}}}"), 0, "an entry's error only skips it");
        only_problem("servers.a.command", PROBLEM_ERROR);
        cr_assert_eq(parse("{\"servers\":[]}"), -EINVAL);
        only_problem("servers", PROBLEM_ERROR);
}

Test(config, both_server_sections_refused) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\"}},\"servers\":{\"b\":{\"command\":\"y\"}}}"), -EINVAL);
        cr_assert(strstr(only_problem("servers", PROBLEM_ERROR)->message, "keep one"), "%s", probs.items[0].message);
}

/* json-c keeps the last of a repeated name without a word. */
Test(config, repeated_keys) {
        /* a server defined twice: neither runs, the others do */
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"one\"},\"b\":{\"command\":\"b\"},"
                           "\"a\":{\"command\":\"two\"}}}"),
                     0);
        cr_assert_str_eq(only_problem("mcpServers.a", PROBLEM_ERROR)->message, "given 2 times in the same object: keep one");
        cr_assert_eq(cfg.n_servers, 1);
        cr_assert_str_eq(cfg.servers[0].name, "b");

        /* a key repeated inside an entry skips that server */
        cr_assert_eq(parse("{\"servers\":{\"a\":{\"command\":\"x\",\"args\":[\"1\"],\"args\":[],\"args\":[]}}}"), 0);
        cr_assert_str_eq(only_problem("servers.a.args", PROBLEM_ERROR)->message, "given 3 times in the same object: keep one");
        cr_assert_eq(cfg.n_servers, 0);
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"K\":\"1\",\"K\":\"2\"}}}}"), 0);
        only_problem("mcpServers.a.env.K", PROBLEM_ERROR);
        cr_assert_eq(cfg.n_servers, 0);

        /* anywhere else the file is refused */
        cr_assert_eq(parse("{\"mcpvisor\":{\"logLevel\":\"err\",\"logLevel\":\"debug\"}}"), -EINVAL);
        only_problem("mcpvisor.logLevel", PROBLEM_ERROR);
        cr_assert_eq(parse("{\"mcpServers\":{},\"mcpServers\":{\"a\":{\"command\":\"x\"}}}"), -EINVAL);
        only_problem("mcpServers", PROBLEM_ERROR);
        cr_assert_eq(parse("{\"inputs\":[{\"id\":\"a\"},{\"id\":\"a\",\"id\":\"b\"}],\"servers\":{}}"), -EINVAL);
        cr_assert_not_null(strstr(probs.items[0].path, "inputs[1].id"), "%s", probs.items[0].path);
}

/* Names are compared as json-c keys them: escapes decoded. */
Test(config, repeated_keys_through_escapes) {
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"\\u0063ommand\":\"y\"}}}"), 0);
        only_problem("mcpServers.a.command", PROBLEM_ERROR);
        cr_assert_eq(cfg.n_servers, 0);
}

/* json-c reads NaN, Infinity and "1."; JSON and the duplicate finder do not: such a file is
 * refused at that value (it was taken, and a server defined twice after it ran). */
Test(config, what_json_has_not_is_refused) {
        cr_assert_eq(parse("{\"globalShortcut\":NaN,\"mcpServers\":{\"a\":{\"command\":\"one\"},"
                           "\"a\":{\"command\":\"two\"}}}"),
                     -EINVAL);
        cr_assert_eq(probs.errors, 1, "%s", probs.items[0].message);
        cr_assert_str_eq(probs.items[0].message,
                         "not valid JSON at line 1, column 19: NaN, Infinity and numbers ending in '.' are not JSON");
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"timeout\":\n-Infinity}}}"), -EINVAL);
        cr_assert_not_null(strstr(probs.items[0].message, "line 2, column "), "%s", probs.items[0].message);
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"timeout\":60.}}}"), -EINVAL);
        cr_assert_eq(parse("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"timeout\":60.5}}}"), 0);
}

Test(config, daemon_settings_not_object) {
        cr_assert_eq(parse("{\"mcpvisor\":[]}"), -EINVAL);
        only_problem("mcpvisor", PROBLEM_ERROR);
        cr_assert_eq(parse("{\"mcpvisor\":null}"), -EINVAL);
        only_problem("mcpvisor", PROBLEM_ERROR);
}

Test(config, servers_not_object) {
        cr_assert_eq(parse("{\"mcpServers\":[]}"), -EINVAL);
        cr_assert_str_eq(only_problem("mcpServers", PROBLEM_ERROR)->message, "expected an object of servers");
        cr_assert_eq(parse("{\"mcpServers\":\"fs\"}"), -EINVAL);
        only_problem("mcpServers", PROBLEM_ERROR);
}

Test(config, top_level_not_object) {
        static const char *const docs[] = { "[]", "[{}]\n", "\"x\"", "5\n", "true\n" };

        for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
                cr_assert_eq(parse(docs[i]), -EINVAL, "%s", docs[i]);
                cr_assert_str_eq(only_problem("", PROBLEM_ERROR)->message, "expected a JSON object at the top level",
                                 "for %s", docs[i]);
        }
}

/* Regression test; it was a bug in src/config.c:163: json-c returns the JSON null as a NULL object with success, so
 * a document "null" is reported as "not valid JSON at line 2, column 1: success". */
Test(config, top_level_null) {
        cr_assert_eq(parse("null\n"), -EINVAL);
        cr_assert_str_eq(only_problem("", PROBLEM_ERROR)->message, "expected a JSON object at the top level");
}

Test(config, invalid_json_position) {
        cr_assert_eq(parse("{\n  \"mcpvisor\": ,\n}\n"), -EINVAL);
        cr_assert_str_eq(only_problem("", PROBLEM_ERROR)->message,
                         "not valid JSON at line 2, column 15: unexpected character");
}

Test(config, invalid_json_first_line) {
        cr_assert_eq(parse("{\"a\":1} x"), -EINVAL);
        cr_assert_not_null(strstr(only_problem("", PROBLEM_ERROR)->message, "line 1, column 9"));
}

/* json-c takes a NUL byte for the end of the text: what follows must not be passed over. */
Test(config, nul_after_the_object) {
        static const char text[] = "{\"mcpServers\": {}}\n\0\0{\"x\": 1}";

        config_done(&cfg);
        problems_done(&probs);
        cr_assert_eq(config_parse(text, sizeof text - 1, &cfg, &probs), -EINVAL);
        cr_assert_str_eq(only_problem("", PROBLEM_ERROR)->message,
                         "not valid JSON at line 2, column 1: a NUL byte after the top-level object");
}

Test(config, truncated_json) {
        cr_assert_eq(parse("{\"mcpvisor\": {\n"), -EINVAL);
        cr_assert_str_eq(only_problem("", PROBLEM_ERROR)->message,
                         "not valid JSON at line 2, column 1: unexpected end of file");
        cr_assert_eq(parse(""), -EINVAL);
        cr_assert_not_null(strstr(only_problem("", PROBLEM_ERROR)->message, "line 1, column 1"));
}

Test(config, invalid_utf8) {
        cr_assert_eq(parse("{\"mcpServers\":{\"f\xff\":{}}}"), -EINVAL);
        cr_assert_not_null(strstr(only_problem("", PROBLEM_ERROR)->message, "not valid JSON"));
}

Test(config, error_leaves_result_alone) {
        struct config c;
        static const char text[] = "{\"mcpvisor\":{\"socketMode\":\"x\"}}";

        config_init_defaults(&c);
        c.socket_mode = 0123;
        cr_assert_eq(config_parse(text, sizeof text - 1, &c, &probs), -EINVAL);
        cr_assert_eq(c.socket_mode, 0123);
}

Test(config, problems_add) {
        struct config_problems p = { 0 };

        problems_add(&p, PROBLEM_WARNING, "a.b", "value %d", 5);
        problems_add(&p, PROBLEM_ERROR, NULL, "%s", "whole file");
        cr_assert_eq(p.count, 2);
        cr_assert_eq(p.errors, 1);
        cr_assert_str_eq(p.items[0].path, "a.b");
        cr_assert_str_eq(p.items[0].message, "value 5");
        cr_assert_str_eq(p.items[1].path, "");
        cr_assert_str_eq(p.items[1].message, "whole file");
        problems_done(&p);
        cr_assert_eq(p.count, 0);
        cr_assert_eq(p.errors, 0);
        cr_assert_null(p.items);
}

Test(config, config_done_resets) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"socket\":\"/a\",\"socketMode\":\"0600\"}}"), 0);
        config_done(&cfg);
        expect_defaults(&cfg);
}

/* config_load */

Test(config, load_missing_ok) {
        char *path;

        cr_assert_geq(asprintf(&path, "%s/absent.json", tmpdir_make()), 0);
        cfg.socket_mode = 0111;
        cr_assert_eq(config_load(path, true, &cfg, &probs), 0);
        cr_assert(strstr(only_problem("", PROBLEM_WARNING)->message, "does not exist"), "said once, at each load");
        cr_assert_str_eq(probs.items[0].file, path);
        expect_defaults(&cfg);
        free(path);
}

Test(config, load_missing_not_ok) {
        char *path;

        cr_assert_geq(asprintf(&path, "%s/absent.json", tmpdir_make()), 0);
        cr_assert_eq(config_load(path, false, &cfg, &probs), -ENOENT);
        cr_assert_str_eq(probs.file, path);
        cr_assert_not_null(strstr(only_problem("", PROBLEM_ERROR)->message, "No such file"));
        cr_assert_not_null(strstr(probs.items[0].message, "{\"mcpServers\": {}}"), "how to create it");
        free(path);
}

Test(config, load_file) {
        char *path = write_file("mcpvisor.json", "{\n  \"mcpvisor\": { \"socket\": \"/run/x.sock\", \"logLevel\": \"info\" },\n"
                                                 "  \"mcpServers\": {}\n}\n");

        cr_assert_eq(config_load(path, false, &cfg, &probs), 0);
        cr_assert_eq(probs.count, 0);
        cr_assert_str_eq(probs.file, path);
        cr_assert_str_eq(cfg.socket_path, "/run/x.sock");
        cr_assert_eq(cfg.log_level, 6);
        free(path);
}

Test(config, load_invalid_file) {
        char *path = write_file("bad.json", "{\n\"mcpvisor\": {\"shutdownTimeout\": -3}\n}\n");

        cr_assert_eq(config_load(path, true, &cfg, &probs), -EINVAL);
        only_problem("mcpvisor.shutdownTimeout", PROBLEM_ERROR);
        free(path);
}

Test(config, load_empty_file) {
        char *path = write_file("empty.json", "");

        cr_assert_eq(config_load(path, true, &cfg, &probs), -EINVAL, "an empty file is not a missing file");
        only_problem("", PROBLEM_ERROR);
        free(path);
}

Test(config, load_directory) {
        cr_assert_lt(config_load(tmpdir_make(), true, &cfg, &probs), 0);
        cr_assert_str_eq(only_problem("", PROBLEM_ERROR)->message, "cannot read the file: it is a directory; only regular files are read");
}

/* A FIFO (no writer) was opened blocking: the load waited for ever. */
Test(config, load_fifo_refused, .timeout = 10) {
        char *path, *dropin;

        path = write_file("mcpvisor.json", "{}");
        cr_assert_geq(asprintf(&dropin, "%s/mcpvisor.d", tmpdir_make()), 0);
        cr_assert_eq(mkdir(dropin, 0755), 0);
        free(dropin);
        cr_assert_geq(asprintf(&dropin, "%s/mcpvisor.d/pipe.json", tmpdir_make()), 0);
        cr_assert_eq(mkfifo(dropin, 0644), 0);
        cr_assert_lt(config_load(path, false, &cfg, &probs), 0);
        cr_assert_str_eq(only_problem("", PROBLEM_ERROR)->message,
                         "cannot read the file: it is a FIFO; only regular files are read");
        cr_assert_str_eq(probs.items[0].file, dropin);
        problems_done(&probs);
        cr_assert_lt(config_load(dropin, false, &cfg, &probs), 0, "the main file too");
        only_problem("", PROBLEM_ERROR);
        free(dropin);
        free(path);
}

/* toolNameSeparator, listWait, listPageSize */

Test(config, routing_defaults) {
        cr_assert_eq(parse("{\"mcpvisor\":{}}"), 0);
        cr_assert_null(cfg.tool_name_separator, "NULL means the default \"__\"");
        cr_assert_float_eq(cfg.list_wait, CONFIG_DEFAULT_LIST_WAIT, 1e-9);
        cr_assert_float_eq(cfg.list_wait, 5.0, 1e-9);
        cr_assert_eq(cfg.list_page_size, CONFIG_DEFAULT_LIST_PAGE_SIZE);
        cr_assert_eq(cfg.list_page_size, 500);
}

Test(config, routing_settings) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"toolNameSeparator\":\".\",\"listWait\":2.5,\"listPageSize\":100}}"), 0);
        cr_assert_eq(probs.count, 0, "%s: %s", probs.count ? probs.items[0].path : "", probs.count ? probs.items[0].message : "");
        cr_assert_str_eq(cfg.tool_name_separator, ".");
        cr_assert_float_eq(cfg.list_wait, 2.5, 1e-9);
        cr_assert_eq(cfg.list_page_size, 100);
}

Test(config, separator_valid_values) {
        static const char *const ok[] = { "__", "_", ".", "-", "x", "--", "a.B-_9", "12345678", "________" };

        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
                char json[128];

                snprintf(json, sizeof json, "{\"mcpvisor\":{\"toolNameSeparator\":\"%s\"}}", ok[i]);
                cr_assert_eq(parse(json), 0, "%s", json);
                cr_assert_eq(probs.count, 0, "%s", json);
                cr_assert_str_eq(cfg.tool_name_separator, ok[i]);
        }
}

Test(config, separator_invalid_values) {
        static const char *const bad[] = {
                "\"\"", "\"123456789\"", "\"/\"", "\" \"", "\"::\"", "\"a b\"", "\"\\u00b7\"", "\"\\t\"",
                "5", "null", "true", "[\"_\"]", "{}",
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char json[128];
                const struct config_problem *pr;

                snprintf(json, sizeof json, "{\"mcpvisor\":{\"toolNameSeparator\":%s}}", bad[i]);
                cr_assert_eq(parse(json), -EINVAL, "%s must be rejected", json);
                pr = only_problem("mcpvisor.toolNameSeparator", PROBLEM_ERROR);
                cr_assert_not_null(strstr(pr->message, "1-8"), "%s: \"%s\"", json, pr->message);
        }
}

Test(config, separator_error_leaves_result_alone) {
        struct config c;
        static const char text[] = "{\"mcpvisor\":{\"toolNameSeparator\":\"/\"}}";

        config_init_defaults(&c);
        cr_assert_eq(config_parse(text, sizeof text - 1, &c, &probs), -EINVAL);
        cr_assert_null(c.tool_name_separator);
        config_done(&c);
}

Test(config, list_wait_range) {
        static const double ok[] = { 0, 0.001, 0.5, 5, 599.9, 600 };
        static const char *const bad[] = { "-0.001", "-1", "600.001", "601", "1e9", "\"5\"", "null", "true", "[]" };

        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
                char json[128];

                snprintf(json, sizeof json, "{\"mcpvisor\":{\"listWait\":%g}}", ok[i]);
                cr_assert_eq(parse(json), 0, "%s", json);
                cr_assert_eq(probs.count, 0, "%s", json);
                cr_assert_float_eq(cfg.list_wait, ok[i], 1e-9, "%s", json);
        }
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char json[128];
                const struct config_problem *pr;

                snprintf(json, sizeof json, "{\"mcpvisor\":{\"listWait\":%s}}", bad[i]);
                cr_assert_eq(parse(json), -EINVAL, "%s must be rejected", json);
                pr = only_problem("mcpvisor.listWait", PROBLEM_ERROR);
                cr_assert_str_eq(pr->message, "expected a number from 0 to 600 (seconds)", "%s", json);
        }
}

struct count_case {
        const char *json;
        unsigned want;
};

/* A whole-number daemon setting: each of ok is read into *field (a member of cfg), each of
 * bad is refused at its JSON path with a message that holds hint. */
static void expect_count_setting(const char *key, const unsigned *field, const struct count_case *ok, size_t n_ok,
                                 const char *const *bad, size_t n_bad, const char *hint) {
        char json[128], path[64];

        snprintf(path, sizeof path, "mcpvisor.%s", key);
        for (size_t i = 0; i < n_ok; i++) {
                snprintf(json, sizeof json, "{\"mcpvisor\":{\"%s\":%s}}", key, ok[i].json);
                cr_assert_eq(parse(json), 0, "%s", json);
                cr_assert_eq(probs.count, 0, "%s", json);
                cr_assert_eq(*field, ok[i].want, "%s", json);
        }
        for (size_t i = 0; i < n_bad; i++) {
                const struct config_problem *pr;

                snprintf(json, sizeof json, "{\"mcpvisor\":{\"%s\":%s}}", key, bad[i]);
                cr_assert_eq(parse(json), -EINVAL, "%s must be rejected", json);
                pr = only_problem(path, PROBLEM_ERROR);
                cr_assert_not_null(strstr(pr->message, hint), "%s: \"%s\"", json, pr->message);
        }
}

Test(config, list_page_size_range) {
        static const struct count_case ok[] = {
                { "0", 0 }, { "1", 1 }, { "500", 500 }, { "999999", 999999 }, { "1000000", 1000000 }, { "20.0", 20 },
        };
        static const char *const bad[] = { "-1", "1000001", "4294967296", "2.5", "0.1", "\"500\"", "null", "false", "1e300" };

        expect_count_setting("listPageSize", &cfg.list_page_size, ok, ARRAY_SIZE(ok), bad, ARRAY_SIZE(bad),
                             "whole number from 0");
}

Test(config, max_in_flight_range) {
        static const struct count_case ok[] = { { "1", 1 }, { "8", 8 }, { "1000000", 1000000 }, { "64.0", 64 } };
        static const char *const bad[] = { "0", "-1", "1000001", "2.5", "\"8\"", "null", "true", "1e300" };

        cr_assert_eq(parse("{\"mcpvisor\":{}}"), 0);
        cr_assert_eq(cfg.max_in_flight, CONFIG_DEFAULT_MAX_IN_FLIGHT);
        cr_assert_eq(cfg.max_in_flight, 1024);
        expect_count_setting("maxInFlight", &cfg.max_in_flight, ok, ARRAY_SIZE(ok), bad, ARRAY_SIZE(bad),
                             "whole number from 1 to 1000000");
}

Test(config, max_clients_per_user_range) {
        static const struct count_case ok[] = { { "0", 0 }, { "1", 1 }, { "3", 3 }, { "1000000", 1000000 } };
        static const char *const bad[] = { "-1", "1000001", "2.5", "\"3\"", "null", "true" };

        cr_assert_eq(parse("{\"mcpvisor\":{}}"), 0);
        cr_assert_eq(cfg.max_clients_per_user, CONFIG_DEFAULT_MAX_CLIENTS_PER_USER);
        cr_assert_eq(cfg.max_clients_per_user, 256);
        expect_count_setting("maxClientsPerUser", &cfg.max_clients_per_user, ok, ARRAY_SIZE(ok), bad, ARRAY_SIZE(bad),
                             "whole number from 0 to 1000000");
}

Test(config, routing_problems_collected) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"toolNameSeparator\":\"\",\"listWait\":-1,\"listPageSize\":-1}}"), -EINVAL);
        cr_assert_eq(probs.count, 3);
        cr_assert_eq(probs.errors, 3);
        cr_assert_str_eq(probs.items[0].path, "mcpvisor.toolNameSeparator");
        cr_assert_str_eq(probs.items[1].path, "mcpvisor.listWait");
        cr_assert_str_eq(probs.items[2].path, "mcpvisor.listPageSize");
}

Test(config, separator_dropin_overrides) {
        char *path = write_file("mcpvisor.json", "{\"mcpvisor\":{\"toolNameSeparator\":\".\",\"listPageSize\":7}}");
        char *dir, *dropin;

        cr_assert_geq(asprintf(&dir, "%s/mcpvisor.d", tmpdir_make()), 0);
        cr_assert_eq(mkdir(dir, 0700), 0);
        dropin = write_file("mcpvisor.d/10-routing.json", "{\"mcpvisor\":{\"toolNameSeparator\":\"-\",\"listWait\":0}}");
        cr_assert_eq(config_load(path, false, &cfg, &probs), 0);
        cr_assert_eq(probs.count, 0);
        cr_assert_str_eq(cfg.tool_name_separator, "-", "the later setting wins (and the earlier one is freed)");
        cr_assert_float_eq(cfg.list_wait, 0, 1e-9);
        cr_assert_eq(cfg.list_page_size, 7);
        free(dropin);
        free(dir);
        free(path);
}

Test(config, separator_done_resets) {
        cr_assert_eq(parse("{\"mcpvisor\":{\"toolNameSeparator\":\"--\",\"listWait\":1,\"listPageSize\":1}}"), 0);
        config_done(&cfg);
        expect_defaults(&cfg);
}

static void count_changed(const char *key, const char *note, void *userdata) {
        cr_assert_str_eq(key, "socketMode");
        (*(size_t *)userdata)++;
}

/* The table of settings a reload cannot apply names settings that exist, and a reload
 * keeps the running value of each that waits whole. */
Test(config, restart_settings_table) {
        struct config running, next;
        size_t n = 0;

        for (const char *key; (key = config_restart_setting_key(n)); n++)
                cr_assert(config_daemon_setting_known(key), "%s is no daemon setting", key);
        cr_assert_geq(n, 4);
        cr_assert_not(config_daemon_setting_known("socketz"));
        n = 0;

        config_init_defaults(&running);
        config_init_defaults(&next);
        running.socket_mode = 0660;
        next.socket_mode = 0600;
        cr_assert_eq(config_keep_restart_settings(&next, &running, count_changed, &n), 1);
        cr_assert_eq(n, 1);
        cr_assert_eq(next.socket_mode, 0660, "the running mode is the one in force");
        n = 0;
        cr_assert_eq(config_keep_restart_settings(&next, &running, count_changed, &n), 0);
        config_done(&running);
        config_done(&next);
}
