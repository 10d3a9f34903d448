/* mcpvisorctl access --user NAME [--profile P] [--json]: what that user would see through the
 * daemon's MCP socket, as the daemon's access policy decides it (its "access" control
 * method): each configured server and each tool, prompt, resource and template listed now,
 * with allow, deny or not found and what decided it: the rule's number, "default" or
 * "profile". An unknown user or profile is the daemon's error, and exit status 1. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl-connection.h"
#include "ctl-format.h"
#include "ctl-status.h"
#include "ctl.h"
#include "macro.h"

/* A rule's number, "default" or "profile", as the daemon gives it. */
static const char *rule_cell(json_object *row, char *buf, size_t size) {
        json_object *v;

        if (!json_object_object_get_ex(row, "rule", &v))
                return "-";
        if (json_object_is_type(v, json_type_int))
                snprintf(buf, size, "%" PRId64, json_object_get_int64(v));
        else
                snprintf(buf, size, "%s", json_object_get_string(v));
        return buf;
}

static int add_row(struct ctl_table *t, const char *kind, json_object *row) {
        const char *through = ctl_json_str(row, "throughItem"), *server = ctl_json_str(row, "server");
        char rule[32], note[600];
        const char *cells[] = { kind, ctl_json_str(row, "name") ?: "?", server ? server : "-",
                                ctl_json_str(row, "verdict") ?: "?", rule_cell(row, rule, sizeof rule) };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(cells); i++)
                r = ctl_table_add(t, cells[i]);
        if (r >= 0 && through) {
                snprintf(note, sizeof note, "  denied as a whole; visible because %s is allowed\n", through);
                r = ctl_table_note(t, note);
        }
        return r;
}

static void print_who(json_object *result) {
        json_object *groups = NULL;

        json_object_object_get_ex(result, "groups", &groups);
        printf("user %s (uid %" PRId64 ", gid %" PRId64 ", groups", ctl_json_str(result, "user") ?: "?",
               ctl_json_int(result, "uid", -1), ctl_json_int(result, "gid", -1));
        for (size_t i = 0; groups && i < json_object_array_length(groups); i++)
                printf("%s%" PRId64, i ? "," : " ", json_object_get_int64(json_object_array_get_idx(groups, i)));
        printf("), profile %s; %" PRId64 " rule%s, default %s\n", ctl_json_str(result, "profile") ?: "none",
               ctl_json_int(result, "rules", 0), ctl_json_int(result, "rules", 0) == 1 ? "" : "s",
               ctl_json_str(result, "default") ?: "?");
}

static int print_table(json_object *result) {
        static const char *const header[] = { "KIND", "NAME", "SERVER", "VERDICT", "RULE" };
        static const struct {
                const char *key, *kind;
        } lists[] = { { "servers", "server" }, { "tools", "tool" }, { "prompts", "prompt" },
                      { "resources", "resource" }, { "resourceTemplates", "template" } };
        struct ctl_table t;
        int r;

        print_who(result);
        r = ctl_table_init(&t, header, ARRAY_SIZE(header));
        for (size_t k = 0; r >= 0 && k < ARRAY_SIZE(lists); k++) {
                json_object *rows = NULL;

                json_object_object_get_ex(result, lists[k].key, &rows);
                for (size_t i = 0; r >= 0 && rows && i < json_object_array_length(rows); i++)
                        r = add_row(&t, lists[k].kind, json_object_array_get_idx(rows, i));
        }
        if (r >= 0)
                ctl_table_print(&t, stdout);
        ctl_table_done(&t);
        return r;
}

static int run_access(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *result = NULL, *error = NULL, *params = NULL;
        int r;

        (void)argc;
        (void)argv;
        if (!ctl->access_user) {
                fprintf(stderr, CTL_NAME ": access needs --user NAME (a user name or uid)\n");
                return CTL_EXIT_USAGE;
        }
        params = json_object_new_object();
        json_object_object_add(params, "user", json_object_new_string(ctl->access_user));
        if (ctl->profile)
                json_object_object_add(params, "profile", json_object_new_string(ctl->profile));
        if (ctl_call_once(ctl, "access", params, &result, &error) < 0)
                return CTL_EXIT_FAILURE;
        if (error)
                return ctl_print_daemon_error(error);
        r = ctl->json ? ctl_print_json(result) : print_table(result);
        return ctl_print_finish(r, "answer");
}

const struct ctl_command ctl_cmd_access = {
        .name = "access",
        .synopsis = "--user NAME [--profile P] [--json]",
        .summary = "what a user would see and call, and the rule that decides",
        .min_args = 0,
        .max_args = 0,
        .options = CTL_OPT_JSON | CTL_OPT_TIMEOUT | CTL_OPT_ACCESS_USER | CTL_OPT_PROFILE,
        .run = run_access,
};
