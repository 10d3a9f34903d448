/* mcpvisorctl reload: the daemon answers once the reload is done, with what changed, or with
 * the problems of a configuration it refused (then nothing changed). This is what the unit's
 * ExecReload= runs, so a refused configuration must fail the command. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl-connection.h"
#include "ctl-status.h"
#include "ctl.h"
#include "time-util.h"

/* The daemon answers when the servers concerned are stopped or started. */
#define DEFAULT_TIMEOUT_USEC (60 * USEC_PER_SEC)

static json_object *array_of(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
                return NULL;
        return v;
}

/* "added: a, b" or "added: none". */
static void print_names(const char *label, json_object *names) {
        size_t n = names ? json_object_array_length(names) : 0;

        printf("%s: ", label);
        for (size_t i = 0; i < n; i++)
                printf("%s%s", i ? ", " : "", json_object_get_string(json_object_array_get_idx(names, i)));
        printf("%s", n ? "" : "none");
}

/* "added: x; removed: y; changed: z; unchanged: 3": the unchanged ones only counted; then
 * the daemon settings that wait for a restart, if any. */
static int print_summary(json_object *result) {
        json_object *unchanged = array_of(result, "unchanged");

        print_names("added", array_of(result, "added"));
        printf("; ");
        print_names("removed", array_of(result, "removed"));
        printf("; ");
        print_names("changed", array_of(result, "changed"));
        printf("; unchanged: %zu", unchanged ? json_object_array_length(unchanged) : 0);
        if (array_of(result, "restartNeeded") && json_object_array_length(array_of(result, "restartNeeded")) > 0)
                print_names("; waiting for a restart of mcpvisord", array_of(result, "restartNeeded"));
        printf("\n");
        return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

/* The daemon's message, then each problem as "PATH: MESSAGE" (warnings say so). */
static int print_problems(json_object *error) {
        json_object *data = NULL, *problems;

        ctl_print_daemon_error(error);
        json_object_object_get_ex(error, "data", &data);
        problems = array_of(data, "problems");
        for (size_t i = 0; problems && i < json_object_array_length(problems); i++) {
                json_object *p = json_object_array_get_idx(problems, i);
                const char *file = ctl_json_str(p, "file"), *path = ctl_json_str(p, "path");
                const char *severity = ctl_json_str(p, "severity");

                fprintf(stderr, "%s%s%s%s%s%s\n", file ? file : "", file ? ": " : "", path && *path ? path : "(config)",
                        ": ", severity && strcmp(severity, "warning") == 0 ? "warning: " : "",
                        ctl_json_str(p, "message") ?: "?");
        }
        return CTL_EXIT_FAILURE;
}

static int run_reload(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *result = NULL, *error = NULL;

        if (ctl_call_once(ctl, "reload", NULL, &result, &error) < 0)
                return CTL_EXIT_FAILURE;
        return error ? print_problems(error) : print_summary(result);
}

const struct ctl_command ctl_cmd_reload = {
        .name = "reload",
        .synopsis = "",
        .summary = "reload the configuration (exit 1: invalid)",
        .min_args = 0,
        .max_args = 0,
        .options = CTL_OPT_TIMEOUT,
        .default_timeout_usec = DEFAULT_TIMEOUT_USEC,
        .run = run_reload,
};
