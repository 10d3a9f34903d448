/* mcpvisorctl clients [--json]: who is connected to the MCP socket, as a table or as the
 * daemon's JSON: each client's id, user, pid, command, the name and version it gave itself,
 * profile, requests in flight, calls so far, since when, how long since it last sent
 * anything, and how it is connected. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl-connection.h"
#include "ctl-format.h"
#include "ctl-status.h"
#include "ctl.h"

static int fetch(struct ctl *ctl, json_object **ret) {
        _cleanup_json_ json_object *result = NULL, *error = NULL;
        json_object *rows;
        int r;

        r = ctl_call_once(ctl, "clients", NULL, &result, &error);
        if (r < 0)
                return r;
        if (error)
                return ctl_print_daemon_error(error), -EREMOTEIO;
        if (!json_object_object_get_ex(result, "clients", &rows) || !json_object_is_type(rows, json_type_array)) {
                fprintf(stderr, CTL_NAME ": the daemon's answer has no clients list: %.200s\n",
                        json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN));
                return -EBADMSG;
        }
        *ret = TAKE_PTR(result);
        return 0;
}

/* A peer chose its command name: control characters shown as \xNN, never sent to the
 * terminal. */
static const char *escaped(const char *text, char *buf, size_t size) {
        size_t n = 0;

        if (!text)
                return "-";
        for (const unsigned char *s = (const unsigned char *)text; *s && n + 5 < size; s++)
                n += (size_t)snprintf(buf + n, size - n, *s < 0x20 || *s == 0x7f || *s == '\\' ? "\\x%02x" : "%c", *s);
        buf[n] = '\0';
        return buf;
}

static const char *user_cell(json_object *row, char *buf, size_t size) {
        const char *user = ctl_json_str(row, "user");
        long long uid = (long long)ctl_json_int(row, "uid", -1);

        if (user)
                snprintf(buf, size, "%s (%lld)", user, uid);
        else
                snprintf(buf, size, "%lld", uid);
        return buf;
}

static const char *since_cell(json_object *row, char *buf, size_t size) {
        time_t at = (time_t)ctl_json_int(row, "connectedAt", -1);
        struct tm tm;

        if (at < 0 || !localtime_r(&at, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                return "-";
        return buf;
}

/* "claude-code 2.1.332": what its initialize said it is (the daemon made it fit to show;
 * escaped again here all the same: it reaches a terminal). */
static const char *client_cell(json_object *row, char *buf, size_t size) {
        const char *name = ctl_json_str(row, "name"), *version = ctl_json_str(row, "version");
        char n[160], v[160];

        if (!name && !version)
                return "-";
        snprintf(buf, size, "%s%s%s", escaped(name, n, sizeof n), version ? " " : "", version ? escaped(version, v, sizeof v) : "");
        return buf;
}

/* "modern 2026-07-28", "legacy 2025-11-25": its era and protocol version; "-" before its
 * first request says. */
static const char *protocol_cell(json_object *row, char *buf, size_t size) {
        const char *era = ctl_json_str(row, "era"), *version = ctl_json_str(row, "protocolVersion");
        char e[32], v[32];

        if (!era || !version)
                return "-";
        snprintf(buf, size, "%s %s", escaped(era, e, sizeof e), escaped(version, v, sizeof v));
        return buf;
}

/* "12s": since it last sent anything; an idle HTTP session says so ("12s idle"). */
static const char *active_cell(json_object *row, char *buf, size_t size) {
        json_object *v, *idle;
        char d[16];

        if (!json_object_object_get_ex(row, "lastActivity", &v) || !v)
                return "-";
        snprintf(buf, size, "%s%s", ctl_format_duration(json_object_get_double(v), d, sizeof d),
                 json_object_object_get_ex(row, "idle", &idle) && json_object_get_boolean(idle) ? " idle" : "");
        return buf;
}

/* How it is connected: "unix", or "http" and where from (an address, or a Unix peer). */
static const char *via_cell(json_object *row, char *buf, size_t size) {
        const char *transport = ctl_json_str(row, "transport"), *remote = ctl_json_str(row, "remote");
        char escaped_remote[160];

        if (!remote)
                return transport ?: "-";
        snprintf(buf, size, "%s %s", transport ?: "-", escaped(remote, escaped_remote, sizeof escaped_remote));
        return buf;
}

static int add_row(struct ctl_table *t, json_object *row) {
        char id[24], via[200], user[300], pid[24], command[80], client[330], inflight[24], calls[24], since[32],
                active[32], protocol[80];
        const char *cells[] = {
                ctl_json_int_cell(row, "id", id, sizeof id),
                user_cell(row, user, sizeof user),
                ctl_json_int_cell(row, "pid", pid, sizeof pid),
                escaped(ctl_json_str(row, "command"), command, sizeof command),
                client_cell(row, client, sizeof client),
                protocol_cell(row, protocol, sizeof protocol),
                ctl_json_str(row, "profile") ?: "-",
                ctl_json_int_cell(row, "inFlight", inflight, sizeof inflight),
                ctl_json_int_cell(row, "calls", calls, sizeof calls),
                since_cell(row, since, sizeof since),
                active_cell(row, active, sizeof active),
                via_cell(row, via, sizeof via),
        };

        return ctl_table_add_row(t, cells, ARRAY_SIZE(cells));
}

static int print_table(json_object *rows) {
        static const char *const header[] = { "ID",        "USER",  "PID",             "COMMAND",     "CLIENT", "PROTOCOL", "PROFILE",
                                              "IN-FLIGHT", "CALLS", "CONNECTED SINCE", "LAST ACTIVE", "VIA" };
        struct ctl_table t;
        int r;

        if (json_object_array_length(rows) == 0) {
                printf("no MCP clients connected\n");
                return 0;
        }
        r = ctl_table_init(&t, header, ARRAY_SIZE(header));
        for (size_t i = 0; r >= 0 && i < json_object_array_length(rows); i++)
                r = add_row(&t, json_object_array_get_idx(rows, i));
        if (r >= 0)
                ctl_table_print(&t, stdout);
        ctl_table_done(&t);
        return r;
}

static int run_clients(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *result = NULL;
        json_object *rows;
        int r;

        if (fetch(ctl, &result) < 0)
                return CTL_EXIT_FAILURE;
        json_object_object_get_ex(result, "clients", &rows);
        r = ctl->json ? ctl_print_json(result) : print_table(rows);
        return ctl_print_finish(r, "clients");
}

const struct ctl_command ctl_cmd_clients = {
        .name = "clients",
        .synopsis = "[--json]",
        .summary = "the MCP clients connected: user, pid, command, client name, calls, last activity",
        .min_args = 0,
        .max_args = 0,
        .options = CTL_OPT_JSON | CTL_OPT_TIMEOUT,
        .run = run_clients,
};
