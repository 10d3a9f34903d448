/* mcpvisorctl start|stop|restart NAME: asks the daemon for the action, which only begins it,
 * then (unless --no-wait) asks for the status every 100 ms until the server settles, and
 * says where it ended up. The exit status says whether that is where it was sent. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl-connection.h"
#include "ctl-format.h"
#include "ctl-status.h"
#include "ctl.h"
#include "time-util.h"

#define REQUEST_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define DEFAULT_WAIT_USEC (60 * USEC_PER_SEC)
#define POLL_INTERVAL_USEC (100 * 1000)

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* The states a server stays in until something happens to it; the others pass by themselves
 * (unhealthy ends in ready or in a restart). */
static bool is_settled(const char *state) {
        static const char *const settled[] = { "ready", "failed", "stopped", "backoff" };

        for (size_t i = 0; state && i < ARRAY_SIZE(settled); i++)
                if (strcmp(state, settled[i]) == 0)
                        return true;
        return false;
}

/* "github: ready (12 tools)", "github: stopped", or on stderr where it went instead, why,
 * its last stderr line and where its log is:
 *   github: failed
 *     why: exit status 1 before it was ready
 *     stderr 0s ago: GITHUB_PERSONAL_ACCESS_TOKEN not set
 *     log: journalctl -t github (its stderr), ... */
static int report(json_object *status, const char *name, json_object *s, const char *goal) {
        const char *state = ctl_json_str(s, "state") ?: "?";
        int64_t tools = ctl_json_int(s, "tools", 0);

        if (strcmp(state, goal) != 0) {
                fprintf(stderr, "%s: %s\n", name, state);
                ctl_status_print_notes(status, s, stderr);
                return CTL_EXIT_FAILURE;
        }
        if (strcmp(state, "ready") == 0)
                printf("%s: ready (%lld tool%s)\n", name, (long long)tools, tools == 1 ? "" : "s");
        else
                printf("%s: %s\n", name, state);
        return CTL_EXIT_OK;
}

static void pause_until_next_poll(uint64_t deadline) {
        uint64_t now = now_usec();
        uint64_t wait = now >= deadline ? 0 : MIN(POLL_INTERVAL_USEC, deadline - now);

        /* a signal that interrupts the pause only makes the next poll come sooner */
        (void)poll(NULL, 0, (int)((wait + 999) / 1000));
}

/* Polls until the server settles or the deadline passes; then reports. */
static int wait_settled(struct ctl *ctl, struct ctl_conn *c, const char *name, const char *goal) {
        uint64_t request_timeout = MIN(REQUEST_TIMEOUT_USEC, ctl->timeout_usec);
        uint64_t deadline = now_usec() + ctl->timeout_usec;
        char t[32];

        for (;;) {
                _cleanup_json_ json_object *status = NULL;
                json_object *s;

                if (ctl_status_fetch(c, request_timeout, &status) < 0)
                        return CTL_EXIT_FAILURE;
                s = ctl_status_server(status, name);
                if (!s) {
                        fprintf(stderr, CTL_NAME ": %s is no longer configured (a reload removed it?)\n", name);
                        return CTL_EXIT_FAILURE;
                }
                if (is_settled(ctl_json_str(s, "state")))
                        return report(status, name, s, goal);
                if (now_usec() >= deadline) {
                        fprintf(stderr, CTL_NAME ": %s did not settle within %s: still %s\n", name,
                                ctl_format_timeout(ctl->timeout_usec, t, sizeof t), ctl_json_str(s, "state") ?: "?");
                        ctl_status_print_notes(status, s, stderr);
                        return CTL_EXIT_FAILURE;
                }
                pause_until_next_poll(deadline);
        }
}

/* "github: 3 instances stopped"; naming an owner that has none fails. */
static int report_instances(json_object *result, const char *name, bool one_owner) {
        int64_t n = ctl_json_int(result, "stopped", 0);

        if (one_owner && n == 0) {
                fprintf(stderr, "%s: no such instance\n", name);
                return CTL_EXIT_FAILURE;
        }
        printf("%s: %lld instance%s stopped\n", name, (long long)n, n == 1 ? "" : "s");
        return CTL_EXIT_OK;
}

static int run_action(struct ctl *ctl, const char *verb, const char *name, const char *goal) {
        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL, *error = NULL;
        uint64_t request_timeout = ctl->no_wait ? ctl->timeout_usec : MIN(REQUEST_TIMEOUT_USEC, ctl->timeout_usec);
        const char *path = ctl_control_path(ctl);
        struct ctl_conn c;
        int r;

        if (!path)
                return CTL_EXIT_FAILURE;
        if (!params || json_object_object_add(params, "name", json_object_new_string(name)) < 0 ||
            (ctl->access_user && json_object_object_add(params, "user", json_object_new_string(ctl->access_user)) < 0) ||
            (ctl->client_id && json_object_object_add(params, "client", json_object_new_string(ctl->client_id)) < 0)) {
                fprintf(stderr, CTL_NAME ": out of memory\n");
                return CTL_EXIT_FAILURE;
        }
        if (ctl_conn_open(&c, path, request_timeout) < 0)
                return CTL_EXIT_FAILURE;
        r = ctl_call(&c, verb, params, request_timeout, &result, &error);
        if (r < 0)
                r = CTL_EXIT_FAILURE;
        else if (error)
                r = ctl_print_daemon_error(error); /* an unknown name: the daemon lists the configured ones */
        else if (json_object_object_get_ex(result, "stopped", NULL)) /* a server run as instances */
                r = report_instances(result, name, ctl->access_user || ctl->client_id);
        else if (ctl->no_wait)
                r = CTL_EXIT_OK;
        else
                r = wait_settled(ctl, &c, name, goal);
        ctl_conn_done(&c);
        return r;
}

static int run_start(struct ctl *ctl, int argc, char **argv) {
        return run_action(ctl, "start", argv[0], "ready");
}

static int run_stop(struct ctl *ctl, int argc, char **argv) {
        return run_action(ctl, "stop", argv[0], "stopped");
}

static int run_restart(struct ctl *ctl, int argc, char **argv) {
        return run_action(ctl, "restart", argv[0], "ready");
}

/* The three share their shape; stop also takes the owner whose instances it stops. */
#define ACTION(verb, more_synopsis, more_options, what)                         \
        {                                                                       \
                .name = #verb,                                                  \
                .synopsis = "[--no-wait] NAME" more_synopsis,                   \
                .summary = what,                                                \
                .min_args = 1,                                                  \
                .max_args = 1,                                                  \
                .options = CTL_OPT_NO_WAIT | CTL_OPT_TIMEOUT | (more_options),  \
                .default_timeout_usec = DEFAULT_WAIT_USEC,                      \
                .run = run_##verb,                                              \
        }

const struct ctl_command ctl_cmd_start = ACTION(start, "", 0, "start a server, wait until it is ready");
const struct ctl_command ctl_cmd_stop = ACTION(stop, " [--user U | --client ID]", CTL_OPT_ACCESS_USER | CTL_OPT_CLIENT,
                                               "stop a server (or its instances), wait until it has stopped");
const struct ctl_command ctl_cmd_restart = ACTION(restart, "", 0, "restart a server, wait until it is ready");
