/* Unit tests for access.c: the rules and profiles as the configuration gives them, and the
 * decisions they make. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "access.h"
#include "audit.h"
#include "utf8.h"
#include "config.h"

static struct config cfg;
static struct config_problems probs;

static void setup(void) {
        config_init_defaults(&cfg);
}

static void teardown(void) {
        config_done(&cfg);
        problems_done(&probs);
}

TestSuite(access, .init = setup, .fini = teardown);

/* Parses {"mcpvisor": {settings}, "mcpServers": {}}. */
static int parse_settings(const char *settings) {
        char text[8192];

        config_done(&cfg);
        problems_done(&probs);
        snprintf(text, sizeof text, "{\"mcpvisor\": {%s}, \"mcpServers\": {}}", settings);
        return config_parse(text, strlen(text), &cfg, &probs);
}

static void expect_problem(const char *path, const char *needle) {
        for (size_t i = 0; i < probs.count; i++)
                if (strcmp(probs.items[i].path, path) == 0 && strstr(probs.items[i].message, needle))
                        return;
        cr_assert_fail("no problem at %s containing \"%s\" (first: %s: %s)", path, needle,
                       probs.count ? probs.items[0].path : "-", probs.count ? probs.items[0].message : "-");
}

static const gid_t no_groups[] = { 0 };

static struct access_who who(unsigned uid, unsigned gid, const char *profile) {
        return (struct access_who){ .uid = uid, .gid = gid, .groups = no_groups, .n_groups = 0, .profile = profile };
}

static struct access_decision decide(struct access_who w, enum access_kind kind, const char *server, const char *name) {
        struct access_target t = { kind, server, name };

        return access_decide(&cfg.access, &w, &t);
}

#define ISSUE_RULES                                                                                          \
        "\"access\": {\"default\": \"allow\", \"rules\": ["                                                  \
        "{\"groups\": [2000], \"servers\": [\"prod-db\"], \"action\": \"allow\"},"                           \
        "{\"servers\": [\"prod-db\"], \"action\": \"deny\"},"                                                \
        "{\"users\": [1001], \"tools\": [\"github__create_*\", \"github__merge_*\"], \"action\": \"allow\"}," \
        "{\"tools\": [\"github__create_*\", \"github__merge_*\"], \"action\": \"deny\"}]}"

Test(access, no_access_setting_allows_everything) {
        cr_assert_eq(parse_settings("\"logLevel\": \"info\""), 0);
        cr_assert_eq(decide(who(1000, 1000, NULL), ACCESS_TOOL, "github", "github__create_issue").verdict, ACCESS_ALLOW);
        cr_assert_eq(decide(who(1000, 1000, NULL), ACCESS_SERVER, "prod-db", NULL).by, ACCESS_BY_DEFAULT);
}

Test(access, first_match_wins_as_in_the_issue) {
        struct access_who dba = who(1000, 1000, NULL), bob = who(1002, 1002, NULL), alice = who(1001, 1001, NULL);
        gid_t dba_groups[] = { 27, 2000 };
        struct access_decision d;

        cr_assert_eq(parse_settings(ISSUE_RULES), 0, "%s", probs.count ? probs.items[0].message : "");
        dba.groups = dba_groups;
        dba.n_groups = 2;
        d = decide(dba, ACCESS_TOOL, "prod-db", "prod-db__query");
        cr_assert_eq(d.verdict, ACCESS_ALLOW);
        cr_assert_eq(d.by, 0);
        d = decide(bob, ACCESS_TOOL, "prod-db", "prod-db__query");
        cr_assert_eq(d.verdict, ACCESS_DENY);
        cr_assert_eq(d.by, 1);
        cr_assert_eq(decide(bob, ACCESS_SERVER, "prod-db", NULL).verdict, ACCESS_DENY);
        cr_assert_eq(decide(alice, ACCESS_TOOL, "github", "github__merge_pr").verdict, ACCESS_ALLOW);
        d = decide(bob, ACCESS_TOOL, "github", "github__merge_pr");
        cr_assert_eq(d.verdict, ACCESS_DENY);
        cr_assert_eq(d.by, 3);
        d = decide(bob, ACCESS_TOOL, "github", "github__get_issue");
        cr_assert_eq(d.verdict, ACCESS_ALLOW);
        cr_assert_eq(d.by, ACCESS_BY_DEFAULT);
}

Test(access, a_rule_with_tools_never_decides_a_server_or_a_prompt) {
        cr_assert_eq(parse_settings(ISSUE_RULES), 0);
        cr_assert_eq(decide(who(1002, 1002, NULL), ACCESS_SERVER, "github", NULL).by, ACCESS_BY_DEFAULT);
        cr_assert_eq(decide(who(1002, 1002, NULL), ACCESS_PROMPT, "github", "github__create_pr").by, ACCESS_BY_DEFAULT);
}

Test(access, default_deny_and_root_is_not_exempt) {
        cr_assert_eq(parse_settings("\"access\": {\"default\": \"deny\", \"rules\": [{\"users\": [1000], \"action\": \"allow\"}]}"), 0);
        cr_assert_eq(decide(who(0, 0, NULL), ACCESS_TOOL, "a", "a__b").verdict, ACCESS_DENY);
        cr_assert_eq(decide(who(1000, 1000, NULL), ACCESS_TOOL, "a", "a__b").verdict, ACCESS_ALLOW);
}

Test(access, resources_are_globs_on_uris_across_slashes) {
        cr_assert_eq(parse_settings("\"access\": {\"rules\": [{\"resources\": [\"file:///home/*\"], \"action\": \"deny\"}]}"), 0);
        cr_assert_eq(decide(who(1, 1, NULL), ACCESS_RESOURCE, "fs", "file:///home/alice/.ssh/id").verdict, ACCESS_DENY);
        cr_assert_eq(decide(who(1, 1, NULL), ACCESS_RESOURCE, "fs", "file:///srv/x").verdict, ACCESS_ALLOW);
}

Test(access, supplementary_groups_match) {
        gid_t groups[] = { 5, 2000 };
        struct access_who w = who(1, 1, NULL);

        cr_assert_eq(parse_settings("\"access\": {\"rules\": [{\"groups\": [\"2000\"], \"action\": \"deny\"}]}"), 0);
        cr_assert_eq(decide(w, ACCESS_SERVER, "a", NULL).verdict, ACCESS_ALLOW);
        w.groups = groups;
        w.n_groups = 2;
        cr_assert_eq(decide(w, ACCESS_SERVER, "a", NULL).verdict, ACCESS_DENY);
}

Test(access, names_resolve_on_this_host) {
        cr_assert_eq(parse_settings("\"access\": {\"rules\": [{\"users\": [\"root\"], \"groups\": [\"root\"], \"action\": \"deny\"}]}"), 0);
        cr_assert_eq(decide(who(0, 0, NULL), ACCESS_SERVER, "a", NULL).verdict, ACCESS_DENY);
        cr_assert_eq(decide(who(1, 0, NULL), ACCESS_SERVER, "a", NULL).verdict, ACCESS_ALLOW);
}

#define PROFILES                                                                                              \
        "\"profiles\": {\"research\": {\"servers\": [\"search\", \"memory\"], \"tools\": [\"search__*\", \"memory__read_*\"]}}"

Test(access, a_profile_narrows_to_not_found) {
        cr_assert_eq(parse_settings(PROFILES), 0);
        cr_assert_eq(decide(who(1, 1, "research"), ACCESS_TOOL, "memory", "memory__read_graph").verdict, ACCESS_ALLOW);
        cr_assert_eq(decide(who(1, 1, "research"), ACCESS_TOOL, "memory", "memory__write").verdict, ACCESS_NOT_FOUND);
        cr_assert_eq(decide(who(1, 1, "research"), ACCESS_SERVER, "github", NULL).verdict, ACCESS_NOT_FOUND);
        /* A kind the profile does not name is left as the rules have it. */
        cr_assert_eq(decide(who(1, 1, "research"), ACCESS_PROMPT, "memory", "memory__p").verdict, ACCESS_ALLOW);
        cr_assert_eq(decide(who(1, 1, NULL), ACCESS_TOOL, "memory", "memory__write").verdict, ACCESS_ALLOW);
        cr_assert_eq(decide(who(1, 1, "nope"), ACCESS_TOOL, "memory", "memory__read_graph").verdict, ACCESS_NOT_FOUND);
}

Test(access, a_profile_only_narrows_and_rules_may_match_it) {
        cr_assert_eq(parse_settings(PROFILES ", \"access\": {\"rules\": ["
                                             "{\"profiles\": [\"research\"], \"tools\": [\"search__web\"], \"action\": \"deny\"},"
                                             "{\"servers\": [\"memory\"], \"action\": \"deny\"}]}"), 0);
        cr_assert_eq(decide(who(1, 1, "research"), ACCESS_TOOL, "search", "search__web").verdict, ACCESS_DENY);
        cr_assert_eq(decide(who(1, 1, NULL), ACCESS_TOOL, "search", "search__web").verdict, ACCESS_ALLOW);
        cr_assert_eq(decide(who(1, 1, "research"), ACCESS_TOOL, "memory", "memory__read_graph").verdict, ACCESS_DENY);
}

Test(access, bad_rules_name_their_json_path) {
        cr_assert_lt(parse_settings("\"access\": {\"default\": \"maybe\", \"rules\": ["
                                    "{\"servers\": [\"a\"]},"
                                    "{\"users\": [\"no-such-user-here\"], \"action\": \"deny\"},"
                                    "{\"servers\": [], \"action\": \"deny\"},"
                                    "{\"tool\": [\"x\"], \"action\": \"deny\"},"
                                    "{\"groups\": [-1], \"action\": \"allow\"},"
                                    "{\"profiles\": [\"ghost\"], \"action\": \"allow\"},"
                                    "\"allow\"]}"),
                     0);
        expect_problem("mcpvisor.access.default", "expected one of \"allow\", \"deny\"");
        expect_problem("mcpvisor.access.rules[0]", "missing \"action\"");
        expect_problem("mcpvisor.access.rules[1].users[0]", "no user named \"no-such-user-here\"");
        expect_problem("mcpvisor.access.rules[2]", "\"servers\" is empty");
        expect_problem("mcpvisor.access.rules[3].tool", "tools");
        expect_problem("mcpvisor.access.rules[4].groups[0]", "gid");
        expect_problem("mcpvisor.access.rules[6]", "expected a rule object");
}

/* The lists' own frame (settings_parse_list()): not an array, an empty id list, and every
 * item in error told, not only the first. */
Test(access, bad_lists_name_their_json_path) {
        cr_assert_lt(parse_settings("\"access\": {\"rules\": {\"action\": \"deny\"}}"), 0);
        expect_problem("mcpvisor.access.rules", "expected an array of rules");
        cr_assert_lt(parse_settings("\"access\": {\"rules\": [{\"users\": [], \"action\": \"deny\"},"
                                    "{\"groups\": \"wheel\", \"action\": \"deny\"},"
                                    "{\"users\": [-1, 0, \"no-such-user-here\"], \"action\": \"deny\"}]}"),
                     0);
        expect_problem("mcpvisor.access.rules[0].users", "expected a non-empty array of user names");
        expect_problem("mcpvisor.access.rules[1].groups", "expected a non-empty array of group names");
        expect_problem("mcpvisor.access.rules[2].users[0]", "uid");
        expect_problem("mcpvisor.access.rules[2].users[2]", "no user named");
}

Test(access, a_rule_naming_an_unknown_profile_is_an_error) {
        cr_assert_lt(parse_settings(PROFILES ", \"access\": {\"rules\": [{\"profiles\": [\"ghost\"], \"action\": \"allow\"}]}"), 0);
        expect_problem("mcpvisor.access.rules[0].profiles", "no profile named \"ghost\"");
        cr_assert_eq(parse_settings(PROFILES ", \"access\": {\"rules\": [{\"profiles\": [\"research\"], \"action\": \"allow\"}]}"), 0);
}

Test(access, bad_profiles_name_their_json_path) {
        cr_assert_lt(parse_settings("\"profiles\": {\"bad name\": {}, \"ok\": {\"tools\": \"x\"}, \"x\": 3}"), 0);
        expect_problem("mcpvisor.profiles.bad name", "1-64 characters");
        expect_problem("mcpvisor.profiles.ok.tools", "expected an array of strings");
        expect_problem("mcpvisor.profiles.x", "expected an object");
}

Test(access, verdicts_have_names) {
        cr_assert_str_eq(access_verdict_to_string(ACCESS_NOT_FOUND), "not found");
        cr_assert_str_eq(access_verdict_to_string(ACCESS_DENY), "deny");
}

Test(access, audit_records_name_who_what_and_how_it_ended) {
        struct audit_record r = { .client = 7, .uid = 1000, .pid = 4242, .server = "github", .method = "tools/call",
                                  .target = "github__create_issue", .outcome = AUDIT_DENIED, .duration_usec = 12 };
        struct audit_text t;

        audit_format(&r, &t);
        cr_assert_str_eq(t.message, "audit: uid 1000 pid 4242 tools/call github__create_issue: denied after 12 us");
        cr_assert_str_eq(t.fields[0], "MCPVISOR_UID=1000");
        cr_assert_str_eq(t.fields[1], "MCPVISOR_PEER_PID=4242");
        cr_assert_str_eq(t.fields[3], "MCPVISOR_TOOL=github__create_issue");
        cr_assert_str_eq(t.fields[4], "MCPVISOR_OUTCOME=denied");
        cr_assert_str_eq(t.fields[5], "MCPVISOR_DURATION_USEC=12");
        cr_assert_null(t.fields[6]);
        r.method = "resources/read";
        r.target = "file:///etc/x";
        r.outcome = AUDIT_TIMEOUT;
        audit_format(&r, &t);
        cr_assert_str_eq(t.fields[3], "MCPVISOR_TARGET=file:///etc/x");
        cr_assert_str_eq(t.fields[4], "MCPVISOR_OUTCOME=timeout");
}

/* An HTTP client has no pid: its token's user, its address and its client's name say who. */
Test(access, audit_records_name_an_http_client_by_token_address_and_name) {
        struct audit_record r = { .client = 7, .uid = 1000, .token = "ci", .remote = "192.0.2.1:51234", .client_name = "agent",
                                  .method = "tools/call", .target = "gh__x", .outcome = AUDIT_OK, .duration_usec = 5 };
        struct audit_text t;

        audit_format(&r, &t);
        cr_assert_str_eq(t.message, "audit: uid 1000 token ci from 192.0.2.1:51234 client agent tools/call gh__x: ok after 5 us");
        cr_assert_str_eq(t.fields[1], "MCPVISOR_METHOD=tools/call", "no MCPVISOR_PEER_PID=0");
        cr_assert_str_eq(t.fields[5], "MCPVISOR_TOKEN_USER=ci");
        cr_assert_str_eq(t.fields[6], "MCPVISOR_REMOTE=192.0.2.1:51234");
        cr_assert_str_eq(t.fields[7], "MCPVISOR_CLIENT_NAME=agent");
        cr_assert_null(t.fields[8]);
        r.client_name = "x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                        "x\xff";
        audit_format(&r, &t);
        cr_assert(utf8_valid(t.message, strlen(t.message)), "a client's name cut mid-character: %s", t.message);
        cr_assert(utf8_valid(t.fields[7], strlen(t.fields[7])), "%s", t.fields[7]);
}

Test(access, audit_setting_defaults_to_denied) {
        cr_assert_eq(parse_settings("\"logLevel\": \"info\""), 0);
        cr_assert_eq(cfg.audit, AUDIT_MODE_DENIED);
        cr_assert_eq(parse_settings("\"audit\": \"calls\""), 0);
        cr_assert_eq(cfg.audit, AUDIT_MODE_CALLS);
        cr_assert_lt(parse_settings("\"audit\": \"all\""), 0);
        expect_problem("mcpvisor.audit", "\"off\", \"denied\", \"calls\"");
}

/* A drop-in's "access" replaces the main file's whole, default included. */
Test(access, a_later_access_replaces_the_earlier_whole) {
        json_object *later = json_tokener_parse("{\"rules\": [{\"users\": [6], \"action\": \"deny\"}]}");

        cr_assert_eq(parse_settings("\"access\": {\"default\": \"deny\", \"rules\": [{\"users\": [5], \"action\": \"allow\"}]}"), 0);
        cr_assert_eq(access_parse(later, "x", &cfg.access, &probs), 0);
        json_object_put(later);
        cr_assert_eq(cfg.access.default_action, ACCESS_RULE_ALLOW);
        cr_assert_eq(cfg.access.n_rules, 1);
        cr_assert_eq(decide(who(5, 5, NULL), ACCESS_SERVER, "a", NULL).verdict, ACCESS_ALLOW);
        cr_assert_eq(decide(who(6, 6, NULL), ACCESS_SERVER, "a", NULL).verdict, ACCESS_DENY);
}
