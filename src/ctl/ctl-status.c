/* mcpvisorctl status [--json] [NAME...]: the daemon and its servers, as a table or as the
 * daemon's JSON; the table is followed by the last stderr lines of each server named. Exit status 3 when an enabled server shown is not ready, so that scripts can
 * ask "is everything up?" the way they ask systemctl is-active. */
#include "ctl-status.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl-format.h"
#include "ctl-logs.h"
#include "ctl.h"

const char *ctl_json_str(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

/* o's member key when it is a number, integer or not; NULL otherwise. */
static json_object *json_number(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) ||
            !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
                return NULL;
        return v;
}

int64_t ctl_json_int(json_object *o, const char *key, int64_t def) {
        json_object *v = json_number(o, key);

        return v ? json_object_get_int64(v) : def;
}

double ctl_json_double(json_object *o, const char *key, double def) {
        json_object *v = json_number(o, key);

        return v ? json_object_get_double(v) : def;
}

static json_object *servers_of(json_object *status) {
        json_object *v;

        if (!json_object_object_get_ex(status, "servers", &v) || !json_object_is_type(v, json_type_array))
                return NULL;
        return v;
}

int ctl_status_fetch(struct ctl_conn *c, uint64_t timeout_usec, json_object **ret_status) {
        _cleanup_json_ json_object *result = NULL, *error = NULL;
        int r = ctl_call(c, "status", NULL, timeout_usec, &result, &error);

        if (r < 0)
                return r;
        if (error) {
                ctl_print_daemon_error(error);
                return -EREMOTEIO;
        }
        if (!json_object_is_type(result, json_type_object) || !servers_of(result)) {
                fprintf(stderr, CTL_NAME ": the daemon's status has no servers list: %.200s\n",
                        json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN));
                return -EBADMSG;
        }
        *ret_status = TAKE_PTR(result);
        return 0;
}

static enum ctl_log_target log_target(json_object *log) {
        const char *target = ctl_json_str(log, "target");

        if (target && strcmp(target, "journal") == 0)
                return CTL_LOG_JOURNAL;
        if (target && strcmp(target, "stderr") == 0)
                return CTL_LOG_STDERR;
        return CTL_LOG_UNKNOWN; /* a daemon older than "log" */
}

void ctl_status_notes(json_object *status, json_object *s, struct ctl_server_notes *ret) {
        json_object *daemon = NULL, *log = NULL, *why = NULL, *err = NULL, *own = NULL;

        json_object_object_get_ex(status, "daemon", &daemon);
        json_object_object_get_ex(daemon, "log", &log);
        json_object_object_get_ex(s, "why", &why);
        json_object_object_get_ex(s, "lastStderr", &err);
        *ret = (struct ctl_server_notes){
                .name = ctl_json_str(s, "name") ?: "?",
                .state = ctl_json_str(s, "state"),
                .cause = ctl_json_str(s, "cause"),
                .why = ctl_json_str(why, "text"),
                .since = ctl_json_double(s, "since", -1),
                .stderr_line = ctl_json_str(err, "line"),
                .stderr_since = ctl_json_double(err, "since", -1),
                .log = log_target(log),
                .log_stderr = ctl_json_str(log, "stderr"),
                /* absent from a daemon older than "stderr": it has one */
                .no_stderr = json_object_object_get_ex(s, "stderr", &own) && json_object_is_type(own, json_type_boolean) &&
                             !json_object_get_boolean(own),
        };
}

void ctl_status_print_notes(json_object *status, json_object *s, FILE *out) {
        struct ctl_server_notes n;

        ctl_status_notes(status, s, &n);
        ctl_format_notes(&n, "  ", out);
}

json_object *ctl_status_server(json_object *status, const char *name) {
        json_object *servers = servers_of(status);

        for (size_t i = 0; servers && i < json_object_array_length(servers); i++) {
                json_object *s = json_object_array_get_idx(servers, i);
                const char *n = ctl_json_str(s, "name");

                if (n && strcmp(n, name) == 0)
                        return s;
        }
        return NULL;
}

void ctl_status_print_unknown(json_object *status, const char *name) {
        json_object *servers = servers_of(status);
        size_t n = servers ? json_object_array_length(servers) : 0;

        fprintf(stderr, CTL_NAME ": unknown server '%s'; configured: ", name);
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", ctl_json_str(json_object_array_get_idx(servers, i), "name"));
        fprintf(stderr, "%s\n", n ? "" : "none");
}

/* Whether name is a server run as instances (status.instanced), which may have none now. */
static bool is_instanced(json_object *status, const char *name) {
        json_object *rows = NULL;

        if (!json_object_object_get_ex(status, "instanced", &rows) || !json_object_is_type(rows, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(rows); i++)
                if (strcmp(ctl_json_str(json_object_array_get_idx(rows, i), "name") ?: "", name) == 0)
                        return true;
        return false;
}

/* status.servers reduced to the names asked for (all of them when none is), in config
 * order. NULL after printing the first unknown name. */
static json_object *select_servers(json_object *status, int argc, char **argv) {
        json_object *servers = servers_of(status), *picked = json_object_new_array();

        if (!picked) {
                fprintf(stderr, CTL_NAME ": out of memory\n");
                return NULL;
        }
        for (int i = 0; i < argc; i++)
                if (!ctl_status_server(status, argv[i]) && !is_instanced(status, argv[i])) {
                        ctl_status_print_unknown(status, argv[i]);
                        json_object_put(picked);
                        return NULL;
                }
        for (size_t i = 0; i < json_object_array_length(servers); i++) {
                json_object *s = json_object_array_get_idx(servers, i);
                bool wanted = argc == 0;

                for (int j = 0; j < argc && !wanted; j++)
                        wanted = strcmp(ctl_json_str(s, "name") ?: "", argv[j]) == 0;
                if (wanted)
                        json_object_array_add(picked, json_object_get(s));
        }
        return picked;
}

static bool flag(json_object *s, const char *key) {
        json_object *v;

        return json_object_object_get_ex(s, key, &v) && json_object_get_boolean(v);
}

/* Ready, or not meant to run: disabled, or removed by a reload and on its way out. */
static bool server_is_fine(json_object *s) {
        const char *state = ctl_json_str(s, "state");

        if (flag(s, "disabled") || flag(s, "removed"))
                return true;
        return state && strcmp(state, "ready") == 0;
}

/* The HTTP front door's addresses, when it listens anywhere. */
static void print_http_line(json_object *daemon) {
        json_object *http = NULL;
        size_t n;

        json_object_object_get_ex(daemon, "http", &http);
        n = json_object_is_type(http, json_type_array) ? json_object_array_length(http) : 0;
        if (n == 0)
                return;
        printf("HTTP on");
        for (size_t i = 0; i < n; i++)
                printf("%s %s", i ? "," : "", json_object_get_string(json_object_array_get_idx(http, i)));
        printf(", %lld session%s\n", (long long)ctl_json_int(daemon, "httpSessions", 0),
               ctl_json_int(daemon, "httpSessions", 0) == 1 ? "" : "s");
}

static void print_daemon_line(json_object *status) {
        json_object *d = NULL;
        char up[16];
        int64_t clients;

        json_object_object_get_ex(status, "daemon", &d);
        clients = ctl_json_int(d, "clients", -1);
        printf("mcpvisord %s, pid %lld, up %s, %lld client%s, config %s\n", ctl_json_str(d, "version") ?: "?",
               (long long)ctl_json_int(d, "pid", 0), ctl_format_duration(ctl_json_double(d, "uptime", -1), up, sizeof up),
               (long long)clients, clients == 1 ? "" : "s", ctl_json_str(d, "config") ?: "-");
        print_http_line(d);
}

const char *ctl_json_int_cell(json_object *s, const char *key, char *buf, size_t size) {
        int64_t v = ctl_json_int(s, key, -1);

        if (v < 0)
                return "-";
        snprintf(buf, size, "%lld", (long long)v);
        return buf;
}

/* A disabled server's "stopped" says more as "disabled"; a server a reload removed says so
 * while it stops. */
static const char *state_cell(json_object *s, char *buf, size_t size) {
        const char *state = ctl_json_str(s, "state") ?: "?";

        if (strcmp(state, "stopped") == 0 && flag(s, "disabled"))
                return "disabled";
        if (flag(s, "removed")) {
                snprintf(buf, size, "%s (removed)", state);
                return buf;
        }
        return state;
}

/* Under a server that is not fine: why, its last stderr line, where its log is. */
static int add_notes(struct ctl_table *t, json_object *status, json_object *s) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);

        if (!out)
                return -ENOMEM;
        ctl_status_print_notes(status, s, out);
        if (fclose(out) != 0)
                return -ENOMEM;
        return ctl_table_note(t, text);
}

/* "12.3M", "812K", "1.2G" for a number of bytes; "-" when the daemon did not know it. */
static const char *bytes_cell(json_object *s, const char *key, char *buf, size_t size) {
        static const char units[] = "KMGT";
        json_object *v;
        double n;
        int u = -1;

        if (!json_object_object_get_ex(s, key, &v) || !json_object_is_type(v, json_type_int))
                return "-";
        n = (double)json_object_get_int64(v);
        while (u < 3 && n >= 1024.0) {
                n /= 1024.0;
                u++;
        }
        if (u < 0)
                snprintf(buf, size, "%.0fB", n);
        else
                snprintf(buf, size, n < 10 ? "%.1f%c" : "%.0f%c", n, units[u]);
        return buf;
}

/* CPU time as "0.42s", "3m12s". */
static const char *cpu_cell(json_object *s, char *buf, size_t size) {
        json_object *v;
        double sec;

        if (!json_object_object_get_ex(s, "cpuUsec", &v) || !json_object_is_type(v, json_type_int))
                return "-";
        sec = (double)json_object_get_int64(v) / 1e6;
        if (sec < 60)
                snprintf(buf, size, "%.2fs", sec);
        else
                ctl_format_duration(sec, buf, size);
        return buf;
}

/* A server's name; an instance's with its owner: "browser (client 17)". */
static const char *name_cell(json_object *s, char *buf, size_t size) {
        const char *name = ctl_json_str(s, "name") ?: "?", *owner = ctl_json_str(s, "owner");

        if (!owner)
                return name;
        snprintf(buf, size, "%s (%s)", name, owner);
        return buf;
}

/* "modern 2026-07-28", "legacy 2025-11-25": the era and version its last start spoke;
 * "-" before any (or from a daemon that does not say). */
static const char *protocol_cell(json_object *s, char *buf, size_t size) {
        const char *era = ctl_json_str(s, "era"), *version = ctl_json_str(s, "protocolVersion");

        if (!era || !version)
                return "-";
        snprintf(buf, size, "%.16s %.31s", era, version);
        return buf;
}

static int add_row(struct ctl_table *t, json_object *status, json_object *s) {
        char protocol[64], state[48], pid[24], up[16], restarts[24], tools[24], inflight[24], memory[16], peak[16], cpu[24], tasks[24];
        char name[256];
        const char *cells[] = {
                name_cell(s, name, sizeof name),
                state_cell(s, state, sizeof state),
                /* a server reached by URL has no process: where it is */
                ctl_json_str(s, "url") ?: ctl_json_int_cell(s, "pid", pid, sizeof pid),
                ctl_format_duration(ctl_json_double(s, "uptime", -1), up, sizeof up),
                ctl_json_int_cell(s, "restarts", restarts, sizeof restarts),
                ctl_json_str(s, "lastExit") ?: "-",
                ctl_json_int_cell(s, "tools", tools, sizeof tools),
                ctl_json_int_cell(s, "inFlight", inflight, sizeof inflight),
                /* systemd's unit says which launcher too */
                ctl_json_str(s, "unit") ?: ctl_json_str(s, "launcher") ?: "-",
                bytes_cell(s, "memory", memory, sizeof memory),
                bytes_cell(s, "memoryPeak", peak, sizeof peak),
                cpu_cell(s, cpu, sizeof cpu),
                ctl_json_int_cell(s, "tasks", tasks, sizeof tasks),
                protocol_cell(s, protocol, sizeof protocol),
        };

        int r = ctl_table_add_row(t, cells, ARRAY_SIZE(cells));

        if (r < 0)
                return r;
        return server_is_fine(s) ? 0 : add_notes(t, status, s);
}

/* "browser: per-client, 2 instances (at most 64, 1 spare)", a line per server run as instances. */
static void print_instanced(json_object *status) {
        json_object *rows = NULL;

        if (!json_object_object_get_ex(status, "instanced", &rows) || !json_object_is_type(rows, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *p = json_object_array_get_idx(rows, i);
                int64_t n = ctl_json_int(p, "count", 0), spares = ctl_json_int(p, "spareInstances", 0);

                printf("%s: %s, %lld instance%s (at most %lld", ctl_json_str(p, "name") ?: "?",
                       ctl_json_str(p, "instances") ?: "?", (long long)n, n == 1 ? "" : "s",
                       (long long)ctl_json_int(p, "maxInstances", 0));
                if (spares > 0)
                        printf(", %lld spare%s", (long long)spares, spares == 1 ? "" : "s");
                printf(")\n");
        }
}

static int print_table(json_object *status, json_object *servers) {
        static const char *const header[] = { "NAME", "STATE", "PID", "UPTIME", "RESTARTS", "LAST EXIT", "TOOLS", "IN-FLIGHT",
                                              "LAUNCHER", "MEMORY", "PEAK", "CPU", "TASKS", "PROTOCOL" };
        struct ctl_table t;
        int r;

        print_daemon_line(status);
        print_instanced(status);
        if (json_object_array_length(servers) == 0) {
                if (!json_object_object_get_ex(status, "instanced", NULL) ||
                    json_object_array_length(json_object_object_get(status, "instanced")) == 0)
                        printf("no servers configured\n");
                return 0;
        }
        r = ctl_table_init(&t, header, ARRAY_SIZE(header));
        for (size_t i = 0; r >= 0 && i < json_object_array_length(servers); i++)
                r = add_row(&t, status, json_object_array_get_idx(servers, i));
        if (r >= 0)
                ctl_table_print(&t, stdout);
        ctl_table_done(&t);
        return r;
}

static int print_json(json_object *status, json_object *servers, bool filtered) {
        /* The daemon's answer as it is; with names, only their entries. */
        if (filtered && json_object_object_add(status, "servers", json_object_get(servers)) < 0)
                return -ENOMEM;
        return ctl_print_json(status);
}

static int run_status(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *status = NULL, *servers = NULL;
        uint64_t timeout = ctl->timeout_usec;
        const char *path = ctl_control_path(ctl);
        struct ctl_conn c;
        int r;

        if (!path)
                return CTL_EXIT_FAILURE;
        if (ctl_conn_open(&c, path, timeout) < 0)
                return CTL_EXIT_FAILURE;
        r = ctl_status_fetch(&c, timeout, &status);
        if (r < 0 || !(servers = select_servers(status, argc, argv))) {
                ctl_conn_done(&c);
                return CTL_EXIT_FAILURE;
        }
        r = ctl->json ? print_json(status, servers, argc > 0) : print_table(status, servers);
        /* a server asked for by name: what it last said (a daemon that cannot tell says why) */
        for (int i = 0; r >= 0 && !ctl->json && i < argc; i++)
                (void)ctl_logs_print_kept(&c, argv[i], timeout, "  ", stdout);
        ctl_conn_done(&c);
        if (ctl_print_finish(r, "status") != CTL_EXIT_OK)
                return CTL_EXIT_FAILURE;
        for (size_t i = 0; i < json_object_array_length(servers); i++)
                if (!server_is_fine(json_object_array_get_idx(servers, i)))
                        return CTL_EXIT_NOT_READY;
        return CTL_EXIT_OK;
}

const struct ctl_command ctl_cmd_status = {
        .name = "status",
        .synopsis = "[--json] [NAME...]",
        .summary = "the daemon and its servers (exit 3: one not ready)",
        .min_args = 0,
        .max_args = -1,
        .options = CTL_OPT_JSON | CTL_OPT_TIMEOUT,
        .run = run_status,
};
