/* mcpvisorctl's side of a daemon socket: connecting with errors that say what to do, and
 * JSON-RPC requests on the control socket, one line each way, each within a deadline. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

static inline void json_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_putp)

enum ctl_socket_kind {
        CTL_SOCKET_MCP,
        CTL_SOCKET_CONTROL,
};

/* Connects a blocking stream socket to path, waiting at most timeout_usec while the daemon's
 * accept queue is full. Returns the fd (SOCK_CLOEXEC), or a negative errno after printing an
 * error that says what to do. */
int ctl_socket_connect(const char *path, enum ctl_socket_kind kind, uint64_t timeout_usec);

struct ctl_conn {
        int fd;                   /* non-blocking once connected */
        const char *path;         /* for messages; borrowed */
        char *buf;                /* bytes received and not yet taken as a line */
        size_t len, cap;
        int64_t last_id;
};

/* Connects to the control socket at path; see ctl_socket_connect(). */
int ctl_conn_open(struct ctl_conn *c, const char *path, uint64_t timeout_usec);
void ctl_conn_done(struct ctl_conn *c);

/* Sends request method with params (borrowed; NULL: none) and waits up to timeout_usec for
 * its answer. Returns 0 with exactly one of *ret_result and *ret_error set (owned by the
 * caller): the daemon answered. Returns a negative errno after printing what went wrong
 * (no answer in time, connection closed, garbage). Notifications and answers to other ids
 * are skipped; an error answer with a null id (the daemon refusing the connection) counts. */
int ctl_call(struct ctl_conn *c, const char *method, json_object *params, uint64_t timeout_usec,
             json_object **ret_result, json_object **ret_error);

/* ctl_call() on a connection of its own to the control socket ctl names, within ctl's
 * timeout, closed before returning: a command's one request. A negative errno after
 * printing what went wrong (no socket, no connection, no answer). */
struct ctl;
int ctl_call_once(struct ctl *ctl, const char *method, json_object *params, json_object **ret_result,
                  json_object **ret_error);

/* Prints a daemon error object as "mcpvisorctl: MESSAGE"; returns CTL_EXIT_FAILURE. */
int ctl_print_daemon_error(json_object *error);

/* Prints an answer as --json shows it (pretty, slashes as they are) and a newline to stdout.
 * Returns 0, or -ENOMEM/-EIO. */
int ctl_print_json(json_object *answer);

/* Ends a command's output: r (from printing) and stdout's flush decide. Says "cannot print
 * the WHAT" on failure. Returns CTL_EXIT_OK or CTL_EXIT_FAILURE. */
int ctl_print_finish(int r, const char *what);
